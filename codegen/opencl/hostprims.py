"""The primitives of generated host code (host.py), on numpy scalars.

Host code keeps every kir scalar as a numpy scalar of its exact dtype
(np.int8 ... np.float64, np.bool_) and runs under np.errstate(all="ignore"),
so numpy's scalar arithmetic is the machine arithmetic kir.py names: ints
wrap, floats are IEEE. What numpy does not spell directly is here, with
emit_llvm.py's values where kir.py leaves a case to the lowering (integer
x / 0 = x, x % 0 = 0, MIN / -1 = MIN, x % -1 = 0). The C math library
functions come from the kernel IR's reference interpreter (kir_interp.un_prim
and bin_prim: libm through ctypes, as the CPU backend calls it). Casts are
spelled here: kir_interp.float_to_int converts to i8/i16/u8/u16 through a
64-bit cvtt, where kir.py and emit_llvm.py use a 32-bit one (5e9 -> i16 is 0
on cpu, -3584 in kir_interp).

Generated host modules start with `from pyshark.codegen.opencl.hostprims
import *`.
"""
from __future__ import annotations

import numpy as np

from pyshark.core.types import ScalarType

from ..kir_interp import bin_prim as _bin_prim, un_prim as _un_prim

i8, i16, i32, i64 = np.int8, np.int16, np.int32, np.int64
u8, u16, u32, u64 = np.uint8, np.uint16, np.uint32, np.uint64
f32, f64, b1 = np.float32, np.float64, np.bool_
TYPES = {t.value: t for t in ScalarType}


def fhex(t, text: str):
    """An exact float constant from float.hex() text."""
    return t(float.fromhex(text))


def idiv(x, y):
    """C's truncating x / y on numpy ints; x / 0 = x, MIN / -1 = MIN."""
    yi = int(y)
    if yi == 0:
        return x
    if yi == -1:
        return -x                           # wraps for MIN (errors ignored)
    xi = int(x)
    q = abs(xi) // abs(yi)
    return type(x)(-q if (xi < 0) != (yi < 0) else q)


def irem(x, y):
    """C's x % y (sign of x) on numpy ints; x % 0 = 0, x % -1 = 0."""
    yi = int(y)
    if yi == 0 or yi == -1:
        return type(x)(0)
    xi = int(x)
    q = abs(xi) // abs(yi)
    q = -q if (xi < 0) != (yi < 0) else q
    return type(x)(xi - q * yi)


fmod = np.fmod
fabs, sqrt, floor, ceil, trunc, rint, isnan = (np.fabs, np.sqrt, np.floor, np.ceil, np.trunc,
                                               np.rint, np.isnan)


def libm(op: str, *xs):
    """exp, log, ..., pow, atan2: the C math library's (f32: the `f` one)."""
    return _bin_prim(op, *xs) if len(xs) == 2 else _un_prim(op, xs[0])


def _cvtt(f: float, bits: int) -> int:
    """x86 cvtt to `bits` (32 or 64): truncation toward zero; the integer
    minimum for NaN and out-of-range values."""
    if f != f or not -2.0 ** (bits - 1) <= f < 2.0 ** (bits - 1):
        return -(1 << (bits - 1))
    return int(f)


def cast(x, to: str):
    """kir.Cast(to, x), as emit_llvm.py spells it: float -> int through the
    x86 cvtt model (i8 i16 i32 u8 u16: 32-bit cvtt; i64 u32: 64-bit; u64: the
    2^63 split), then truncated; everything else is numpy's astype."""
    t = TYPES[to]
    if t.is_bool:
        return b1(x != 0)
    if x.dtype.kind == "f" and t.is_int:
        f = float(x)
        if t.bits < 32 or to == "i32":
            r = _cvtt(f, 32)
        elif t.bits == 32 or to == "i64":
            r = _cvtt(f, 64)
        elif f >= 2.0 ** 63:                                    # u64, the upper half
            r = _cvtt(float(x - x.dtype.type(2.0 ** 63)), 64) ^ -(1 << 63)
        else:
            r = _cvtt(f, 64)
        r &= (1 << t.bits) - 1
        if t.is_signed and r >> (t.bits - 1):
            r -= 1 << t.bits
        return t.numpy_type(r)
    return x.astype(t.dtype)


def padd(p, off):
    """A pointer (memory, element offset) moved by `off` elements."""
    return (p[0], p[1] + int(off))


__all__ = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "b1",
           "fhex", "idiv", "irem", "fmod", "fabs", "sqrt", "floor", "ceil", "trunc", "rint",
           "isnan", "libm", "cast", "padd"]
