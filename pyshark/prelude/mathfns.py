"""Math functions: numpy ufuncs, so the result has the argument's type.

np.float32 in gives np.float32 out; a Python float is weak and gives float64;
with two arguments a weak one takes the other's type (numpy 2, NEP 50). `abs`
of an integer wraps (abs(i16(-32768)) == -32768); `min`/`max` are
np.minimum/np.maximum, so NaN propagates; `round` is half to even.
(Named mathfns, not math, so that `ps.math` can never be mistaken for the
standard library module.)
"""
from __future__ import annotations

import functools

import numpy as np

def _unary(ufunc, name, doc):
    def fn(x):
        return ufunc(x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _binary(ufunc, name, doc):
    def fn(x, y):
        return ufunc(x, y)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


# Own functions rather than the ufuncs themselves, so that ps.sqrt is not np.sqrt
# (name resolution by binding must never mistake a numpy call for a prelude one).
sqrt = _unary(np.sqrt, "sqrt", "Square root.")
exp = _unary(np.exp, "exp", "e ** x.")
log = _unary(np.log, "log", "Natural logarithm.")
log2 = _unary(np.log2, "log2", "Base-2 logarithm.")
log10 = _unary(np.log10, "log10", "Base-10 logarithm.")
sin = _unary(np.sin, "sin", "Sine.")
cos = _unary(np.cos, "cos", "Cosine.")
tan = _unary(np.tan, "tan", "Tangent.")
asin = _unary(np.arcsin, "asin", "Inverse sine.")
acos = _unary(np.arccos, "acos", "Inverse cosine.")
atan = _unary(np.arctan, "atan", "Inverse tangent.")
atan2 = _binary(np.arctan2, "atan2", "atan2(y, x): the angle of the point (x, y).")
sinh = _unary(np.sinh, "sinh", "Hyperbolic sine.")
cosh = _unary(np.cosh, "cosh", "Hyperbolic cosine.")
tanh = _unary(np.tanh, "tanh", "Hyperbolic tangent.")
pow = _binary(np.power, "pow", "x ** y (integers wrap).")
floor = _unary(np.floor, "floor", "Round toward -inf, keeping the type.")
ceil = _unary(np.ceil, "ceil", "Round toward +inf, keeping the type.")
trunc = _unary(np.trunc, "trunc", "Round toward zero, keeping the type.")
abs = _unary(np.absolute, "abs", "Absolute value (integers wrap: abs(i16(-32768)) == -32768).")
sign = _unary(np.sign, "sign", "-1, 0 or 1 (NaN for NaN) in the argument's type.")
isnan = _unary(np.isnan, "isnan", "True for NaN.")
isinf = _unary(np.isinf, "isinf", "True for +inf or -inf.")


def round(x):
    """Round half to even, keeping the type (np.round)."""
    return np.round(x)


def min(a, b, *more):
    """The smaller argument (np.minimum: NaN propagates)."""
    return functools.reduce(np.minimum, more, np.minimum(a, b))


def max(a, b, *more):
    """The larger argument (np.maximum: NaN propagates)."""
    return functools.reduce(np.maximum, more, np.maximum(a, b))


__all__ = ["sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
           "atan2", "sinh", "cosh", "tanh", "pow", "floor", "ceil", "round", "trunc", "abs",
           "sign", "min", "max", "isnan", "isinf"]
