"""PyShark: data-parallel kernels in plain Python.

The same module runs as Python (with `pyshark.prelude`), on every CPU core, or
on a GPU through OpenCL. `@pyshark.jit` compiles one function (and what it
uses) on its first call; `Wrapper` compiles whole modules and invokes their
entries.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import CompileError, ShapeError
from .jit import jit
from .version import __version__

if TYPE_CHECKING:      # what the lazy names below are, for type checkers
    from .wrapper.backend import get_num_threads, set_num_threads
    from .wrapper import (DeviceArray, DeviceStructArray, UnknownEntry, Wrapper,
                          available_backends, known_backends)

__all__ = ["jit", "Wrapper", "DeviceArray", "DeviceStructArray", "CompileError", "ShapeError",
           "UnknownEntry", "available_backends", "known_backends", "set_num_threads",
           "get_num_threads", "__version__"]

# Imported lazily so that `import pyshark.prelude` stays light.
_LAZY = {"Wrapper": "wrapper", "UnknownEntry": "wrapper", "available_backends": "wrapper",
         "known_backends": "wrapper", "DeviceArray": "wrapper.device_array",
         "DeviceStructArray": "wrapper.device_array", "set_num_threads": "wrapper.backend",
         "get_num_threads": "wrapper.backend"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pyshark' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
