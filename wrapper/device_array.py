"""DeviceArray: an array that stays in an OpenCL device's memory.

`Wrapper(backend="opencl", device_arrays=True)` returns array results as
DeviceArrays, and every entry of an opencl Wrapper takes one as an argument
without a transfer, so chained calls move no data to the host:

    w = Wrapper(backend="opencl", device_arrays=True)
    ...
    ys = w.saxpy(2.0, xs, xs)          # a DeviceArray
    zs = w.saxpy(3.0, ys, ys)          # ys is not copied
    np.asarray(zs), zs.get()           # numpy arrays (one copy back)

Other backends take a DeviceArray too, as the numpy array it holds
(np.asarray, one copy back). An array of records or tuples comes back as a
DeviceStructArray (one DeviceArray per field), taken back the same way. A DeviceArray holds its device block until it
is garbage-collected; then the block returns to the device's memory pool.
Arrays are values: nothing writes into a DeviceArray after it is made.
"""
from __future__ import annotations

import numpy as np


def _host_array(self, dtype=None, copy=None):
    """np.asarray(a): the host copy get() makes, in `dtype` if given."""
    a = np.asarray(self.get())
    return a if dtype is None else a.astype(dtype, copy=False)


def _repr(a, elem) -> str:
    shape = "x".join(str(d) for d in a.shape)
    return f"<{type(a).__name__} {elem}[{shape}] on {a.device.name}>"


class DeviceArray:
    """A C-contiguous n-d array of scalars in device memory (read-only)."""

    __slots__ = ("device", "_mem", "_off", "shape", "dtype", "__weakref__")

    #: lets the wrapper recognise DeviceArrays without importing this module
    __pyshark_device_array__ = True

    def __init__(self, *args, **kwargs):
        raise TypeError("DeviceArrays are made by entries of Wrapper(backend='opencl', "
                        "device_arrays=True)")

    @classmethod
    def _make(cls, device, mem, off: int, shape: tuple, dtype) -> "DeviceArray":
        self = object.__new__(cls)
        self.device, self._mem, self._off = device, mem, int(off)
        self.shape = shape if type(shape) is tuple else tuple(int(d) for d in shape)
        self.dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        return self

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def get(self) -> np.ndarray:
        """A numpy copy (waits for the computation that makes it)."""
        return self.device.read_locked(self._mem, self._off, self.shape, self.dtype,
                                       "copying a DeviceArray to the host")

    __array__ = _host_array

    def __repr__(self) -> str:
        return _repr(self, self.dtype)


def is_device_array(v) -> bool:
    return getattr(type(v), "__pyshark_device_array__", False) is True


class DeviceStructArray:
    """An array of records or tuples (`Array[P]`, `Array[tuple[...]]`) in
    device memory, as the compiled backends hold one: a DeviceArray per
    scalar field (a structure of arrays), read-only like DeviceArray.
    `get()` and `np.asarray(a)` build what a host result would be (a numpy
    structured array for records); entries of an opencl Wrapper take it
    back without a transfer, other backends as the array `get()` gives."""

    __slots__ = ("stype", "leaves", "__weakref__")

    #: lets the wrapper recognise it without importing this module
    __pyshark_device_struct__ = True

    def __init__(self, *args, **kwargs):
        raise TypeError("DeviceStructArrays are made by entries of Wrapper(backend='opencl', "
                        "device_arrays=True)")

    @classmethod
    def _make(cls, stype, leaves) -> "DeviceStructArray":
        self = object.__new__(cls)
        self.stype, self.leaves = stype, tuple(leaves)
        return self

    @property
    def device(self):
        return self.leaves[0].device

    @property
    def shape(self) -> tuple:
        from .convert import stype_rank
        return self.leaves[0].shape[:stype_rank(self.stype)]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def get(self):
        """The host value (waits for the computation that makes it)."""
        from .convert import to_output, unflatten_value
        return to_output(self.stype, unflatten_value(self.stype, [a.get() for a in self.leaves]))

    __array__ = _host_array

    def __repr__(self) -> str:
        return _repr(self, self.stype)


def is_device_struct(v) -> bool:
    return getattr(type(v), "__pyshark_device_struct__", False) is True


__all__ = ["DeviceArray", "DeviceStructArray", "is_device_array", "is_device_struct"]
