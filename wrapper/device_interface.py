"""The device-array interface: what a DeviceArray needs from the device
that holds its memory, and how the wrapper tells device arrays from other
values.

It lives apart from device_array.py so that the wrapper imports no runtime
(codegen/opencl/runtime.Device implements `ArrayDevice`; a test checks it)
and convert.py, which only has to recognise device arrays, does not import
device_array.py, which builds results with convert.py.

The other direction, what a runtime reads of a DeviceArray argument, is
its `device` (the runtime takes the array where it is only when that is
itself), `shape`, `dtype`, and `_mem` / `_off`: the block and the element
offset the runtime gave `device_array.device_array` when it made it.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class ArrayDevice(Protocol):
    """A device as its DeviceArrays see it. A block is the runtime's handle
    of one allocation; the wrapper only passes it back. Arrays are values:
    nothing writes into a DeviceArray after it is made, so there is no
    write here."""

    #: names the device in reprs and error messages
    name: str

    def adopt(self, block) -> None:
        """`block` now backs DeviceArrays and outlives the call that made
        it: the device takes it back once the block is garbage-collected
        (arrays may share one block: a result that aliases an input), never
        in the middle of another call."""

    def read_array(self, block, offset: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """A host copy of the C-contiguous `shape` elements of `dtype` at
        element `offset` of `block`. It waits for the work that writes
        them, may be called from any thread, and raises a
        pyshark.errors.DeviceError when the driver fails."""


def is_device_array(v) -> bool:
    """Whether v is a DeviceArray (a marker on its class, so that the test
    needs no import of device_array.py)."""
    return getattr(type(v), "__pyshark_device_array__", False) is True


def is_device_struct(v) -> bool:
    """Whether v is a DeviceStructArray (an array of records or tuples)."""
    return getattr(type(v), "__pyshark_device_struct__", False) is True


__all__ = ["ArrayDevice", "is_device_array", "is_device_struct"]
