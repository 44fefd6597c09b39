"""The Wrapper: compile PyShark modules and call their entries from Python.

`Wrapper` (wrapper.py) drives one backend from the registry (registry.py):
"python" (Python mode, the reference) and "core" (a development interpreter
of the core IR) today; the native "cpu" and "opencl" backends join the
registry when they are built. convert.py converts arguments and rebuilds
results by surface type; artifacts.py holds the on-disk cache and the
`pyshark build` layout.
"""
from .device_array import DeviceArray, DeviceStructArray
from .registry import available_backends, known_backends, register_backend
from .wrapper import UnknownEntry, Wrapper, build

__all__ = ["Wrapper", "DeviceArray", "DeviceStructArray", "UnknownEntry", "available_backends", "known_backends",
           "register_backend", "build"]
