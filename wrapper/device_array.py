"""DeviceArray: an array that stays in an OpenCL device's memory.

`Wrapper(backend="opencl", device_arrays=True)` returns array results as
DeviceArrays, and every entry of an opencl Wrapper takes one as an argument
without a transfer, so chained calls move no data to the host:

    w = Wrapper(backend="opencl", device_arrays=True)
    ...
    ys = w.saxpy(2.0, xs, xs)          # a DeviceArray
    zs = w.saxpy(3.0, ys, ys)          # ys is not copied
    np.asarray(zs), zs.get()           # numpy arrays (one copy back)
    s = w.sum(zs)                      # a scalar result: a 0-d DeviceArray
    float(s), s.item(), s.get()        # read back (waits); the call did not

A scalar result is a 0-d DeviceArray, as CuPy's reductions return 0-d
arrays: the call returns without waiting for the device, and float(),
int(), bool(), item(), get() and np.asarray read it. A scalar parameter
takes one too (read back at the call).

Other backends take a DeviceArray too, as the numpy array it holds
(np.asarray, one copy back). An array of records or tuples comes back as a
DeviceStructArray (one DeviceArray per field), taken back the same way. A DeviceArray holds its device block until it
is garbage-collected; then the block returns to the device's memory pool.
Arrays are values: nothing writes into a DeviceArray after it is made.
What a DeviceArray needs of its device is device_interface.ArrayDevice; a
runtime hands out its blocks through `device_array` and builds an entry's
result with `output_keeping_arrays`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from pyshark.core.types import (SRecord, SScalar, SType, STuple, flatten_stype, stype_base,
                                stype_rank)
from pyshark.errors import InternalCompilerError

from .convert import record_class, to_output, unflatten_value
from .device_interface import ArrayDevice, is_device_array, is_device_struct


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
        return self.device.read_array(self._mem, self._off, self.shape, self.dtype)

    __array__ = _host_array

    def item(self):
        """The one element as a Python scalar (waits for it), as numpy's."""
        if self.size != 1:
            raise ValueError("can only convert a DeviceArray of size 1 to a Python scalar")
        return self.get().reshape(-1)[0].item()

    # a 0-d array (an entry's scalar result with device_arrays=True, as
    # CuPy's reductions return) reads as a number, as numpy's 0-d arrays do
    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __bool__(self) -> bool:
        return bool(self._scalar()) if not self.shape else self.shape[0] != 0

    def __index__(self) -> int:
        if self.dtype.kind not in "iub":
            raise TypeError(f"a DeviceArray of {self.dtype} is not an index")
        return int(self._scalar())

    def _scalar(self):
        if self.shape:
            raise TypeError(f"only a 0-d DeviceArray converts to a scalar (shape {self.shape})")
        return self.get()[()]

    def __repr__(self) -> str:
        return _repr(self, self.dtype)


def device_array(device: ArrayDevice, block, offset: int, shape: tuple,
                 dtype: np.dtype) -> DeviceArray:
    """A DeviceArray over element `offset` of a runtime's block (the device
    adopts the block: it comes back when the last array over it dies)."""
    device.adopt(block)
    return DeviceArray._make(device, block, offset, shape, dtype)


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
        return self.leaves[0].shape[:stype_rank(self.stype)]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def get(self):
        """The host value (waits for the computation that makes it)."""
        return to_output(self.stype, unflatten_value(self.stype, [a.get() for a in self.leaves]))

    __array__ = _host_array

    def __repr__(self) -> str:
        return _repr(self, self.stype)


def output_keeping_arrays(st: SType, flat: list, fetch: Callable):
    """An entry's flat results -> the user-facing result, except that arrays
    of scalars stay what the backend gave (DeviceArrays), and an array of
    tuples/records whose leaves are DeviceArrays is a DeviceStructArray of
    them (other leaves are fetched, `fetch(leaf)` -> numpy array, and built
    into a structured array as a host result is)."""
    it = iter(flat)
    out = _keeping(st, it, fetch)
    if next(it, _END) is not _END:
        raise InternalCompilerError(f"too many flat values for {st!r}")
    return out


_END = object()


def _take(it, st: SType):
    v = next(it, _END)
    if v is _END:
        raise InternalCompilerError(f"too few flat values for {st!r}")
    return v


def _keeping(st: SType, it, fetch: Callable):
    if isinstance(st, SScalar):
        return to_output(st, unflatten_value(st, [_take(it, st)]))
    if isinstance(st, STuple):
        return tuple(_keeping(e, it, fetch) for e in st.elems)
    if isinstance(st, SRecord):
        return record_class(st)(*[_keeping(ft, it, fetch) for ft in st.field_types])
    if isinstance(stype_base(st), SScalar):
        return _take(it, st)
    leaves = [_take(it, st) for _ in flatten_stype(st)]
    if all(is_device_array(v) for v in leaves):
        return DeviceStructArray._make(st, leaves)
    return to_output(st, unflatten_value(st, [fetch(v) for v in leaves]))


__all__ = ["DeviceArray", "DeviceStructArray", "device_array", "output_keeping_arrays",
           "is_device_array", "is_device_struct"]
