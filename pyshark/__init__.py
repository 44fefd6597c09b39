"""PyShark: data-parallel kernels in plain Python.

The same module runs as Python (with `pyshark.prelude`), on every CPU core, or
on a GPU through OpenCL. `Wrapper` compiles and invokes a module's entries.
"""
from .errors import CompileError, ShapeError

__version__ = "0.1.0"

__all__ = ["CompileError", "ShapeError", "Wrapper", "DeviceArray", "DeviceStructArray",
           "set_num_threads", "get_num_threads", "__version__"]


def __getattr__(name):
    # Imported lazily so that `import pyshark.prelude` stays light.
    if name == "Wrapper":
        from .wrapper import Wrapper
        return Wrapper
    if name in ("set_num_threads", "get_num_threads"):
        from .wrapper import backend
        return getattr(backend, name)
    if name in ("DeviceArray", "DeviceStructArray"):
        from .wrapper import device_array
        return getattr(device_array, name)
    raise AttributeError(f"module 'pyshark' has no attribute {name!r}")
