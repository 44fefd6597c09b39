"""The primitives of generated host code (host.py), on numpy scalars.

Host code keeps every kir scalar as a numpy scalar of its exact dtype
(np.int8 ... np.float64, np.bool_); a function that computes with them runs
under np.errstate(all="ignore") (host.py wraps its body: quiet_set/quiet_reset), so numpy's scalar arithmetic is the machine arithmetic kir.py names: ints
wrap, floats are IEEE. What numpy does not spell directly is the kernel IR
reference interpreter's (kir_interp): C's truncating integer division and
remainder (idiv, irem: the precondition of kir.py checked, as there), casts
(kir_interp.cast) and the C math library functions (un_prim and bin_prim:
libm through ctypes, as the CPU backend calls it).

Generated host modules start with `from pyshark.codegen.opencl.hostprims
import *`.
"""
from __future__ import annotations

import numpy as np

from pyshark.core.types import ScalarType

from ..kir_interp import bin_prim as _bin_prim, cast as _kcast, un_prim as _un_prim
from ..kir_interp import int_div as idiv, int_rem as irem

i8, i16, i32, i64 = np.int8, np.int16, np.int32, np.int64
u8, u16, u32, u64 = np.uint8, np.uint16, np.uint32, np.uint64
f32, f64, b1 = np.float32, np.float64, np.bool_
errstate = np.errstate


def _quiet_functions():
    """(set, reset, state): enter and leave np.errstate(all="ignore") for
    the host functions that compute. numpy 2 keeps the error state in a
    context variable; setting it directly costs about a quarter of entering
    np.errstate (0.2 against 0.9 us here), which every call pays. Without
    that variable (another numpy), np.errstate itself."""
    try:
        from numpy._core.umath import _extobj_contextvar, _make_extobj
        return _extobj_contextvar.set, _extobj_contextvar.reset, _make_extobj(all="ignore")
    except (ImportError, AttributeError, TypeError):       # pragma: no cover
        def enter(_state):
            e = np.errstate(all="ignore")
            e.__enter__()
            return e

        def leave(e):
            e.__exit__(None, None, None)
        return enter, leave, None


quiet_set, quiet_reset, QUIET = _quiet_functions()
TYPES = {t.value: t for t in ScalarType}


def fhex(t, text: str):
    """An exact float constant from float.hex() text."""
    return t(float.fromhex(text))


fmod = np.fmod
fabs, sqrt, floor, ceil, trunc, rint, isnan = (np.fabs, np.sqrt, np.floor, np.ceil, np.trunc,
                                               np.rint, np.isnan)
minimum, maximum = np.minimum, np.maximum       # kir's min / max on floats: NaN propagates
fmin, fmax = np.fmin, np.fmax                   # kir's fmin / fmax: NaN passed over


def libm(op: str, *xs):
    """exp, log, ..., pow, atan2: the C math library's (f32: the `f` one)."""
    return _bin_prim(op, *xs) if len(xs) == 2 else _un_prim(op, xs[0])


def cast(x, to: str):
    """kir.Cast(to, x): kir_interp.cast (an out-of-range float -> int gives
    kir_interp.POISON, which scalar.convert's Sel never chooses)."""
    return _kcast(x, TYPES[to])


def bitcast(x, to: str):
    """kir.Cast(to, x, bits=True): the same bits read as a `to`."""
    return x.view(TYPES[to].dtype)


def padd(p, off):
    """A pointer (memory, element offset) moved by `off` elements."""
    return (p[0], p[1] + int(off))


__all__ = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "b1",
           "fhex", "idiv", "irem", "fmod", "fabs", "sqrt", "floor", "ceil", "trunc", "rint",
           "isnan", "minimum", "maximum", "fmin", "fmax", "libm", "cast", "bitcast", "padd", "errstate", "quiet_set", "quiet_reset",
           "QUIET"]
