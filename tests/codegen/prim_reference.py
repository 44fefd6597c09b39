"""The NumPy reference of the kernel IR's scalar primitives, shared by the
emitter tests of every backend (cpu, opencl): which primitives each type
has, their NumPy counterparts, and an independent model of scalar.convert's
float -> int rule (gcc's x86-64 cvtt sequences)."""
from __future__ import annotations

import numpy as np

from pyshark.codegen import kir as K
from pyshark.core.types import BOOL, FLOAT_TYPES, I32, I64, INT_TYPES

ALL_TYPES = INT_TYPES + FLOAT_TYPES + (BOOL,)
N = 301          # long enough for the vector loop and its scalar remainder


def bin_ops_for(t):
    """The binary primitives of t (kir.BIN_CLASSES)."""
    return [op for op in K.BIN_CLASSES if K.scalar_class(t) in K.BIN_CLASSES[op]]


def un_ops_for(t):
    """The unary primitives of t (kir.UN_CLASSES)."""
    return [op for op in K.UN_CLASSES if K.scalar_class(t) in K.UN_CLASSES[op]]


def trunc_div(x, y):
    r = np.fmod(x, y)
    with np.errstate(over="ignore"):
        return ((x - r) // y).astype(x.dtype)


NP_BIN = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and,
    "or": np.bitwise_or, "xor": np.bitwise_xor, "shl": np.left_shift, "shr": np.right_shift,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "rem": np.fmod, "pow": np.power,
    "atan2": np.arctan2, "min": np.minimum, "max": np.maximum, "fmin": np.fmin,
    "fmax": np.fmax,
}

NP_UN = {"neg": np.negative, "fabs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log,
         "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan,
         "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
         "cosh": np.cosh, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil,
         "trunc": np.trunc, "rint": np.rint, "isnan": np.isnan}
EXACT_UN = {"neg", "not", "fabs", "sqrt", "floor", "ceil", "trunc", "rint", "isnan"}


def cvtt_model(x: float, to) -> int:
    """scalar.convert's float -> int for out-of-range and NaN inputs, as gcc spells
    C casts on x86-64: cvtt to 32 bits for narrow and i32 targets, to 64 bits
    for i64 and u32, and the 2^63-split sequence for u64; then truncated."""
    def cvtt(x, bits):
        lo, hi = -2.0 ** (bits - 1), 2.0 ** (bits - 1)
        if x != x or not lo <= x < hi:
            return -(2 ** (bits - 1))
        return int(x)
    if to.bits < 32 or to is I32:
        r = cvtt(x, 32)
    elif to.bits == 32 or to is I64:
        r = cvtt(x, 64)
    else:
        r = cvtt(x, 64) if not x >= 2.0 ** 63 else cvtt(x - 2.0 ** 63, 64) ^ -(2 ** 63)
    return int(np.array(r & ((1 << to.bits) - 1), dtype=np.uint64).astype(to.dtype))


def bit_cast_samples(t) -> np.ndarray:
    """Values of a 32/64-bit type for the bit-cast tests: signed zeros, NaN,
    infinity, a subnormal; or integers whose bits are such floats."""
    if t.is_float:
        return np.array([0.0, -0.0, 1.5, -2.5, np.inf, np.nan, 3e38, 1e-45], t.dtype)
    return np.array([0, 1, -1, 0x7FC00001, 0x80000000, 0x3F800000, 12345, 7],
                    np.int64).astype(t.dtype)
