"""Scalar types, extremes and the `Array[T]` annotation.

The scalar types ARE numpy's scalar classes, so that a PyShark module run as
Python computes with numpy scalars and gets numpy 2's typing and wraparound
for free. `Array[T]` has to evaluate at run time because modules are imported
as ordinary Python; it gives a small hashable alias that the compiler (and the
wrapper) read back through `.elem` and `.rank`.
"""
from __future__ import annotations

import builtins

import numpy as np

i8 = np.int8
i16 = np.int16
i32 = np.int32
i64 = np.int64
u8 = np.uint8
u16 = np.uint16
u32 = np.uint32
u64 = np.uint64
f32 = np.float32
f64 = np.float64

inf = float("inf")
nan = float("nan")

SCALAR_TYPES = (i8, i16, i32, i64, u8, u16, u32, u64, f32, f64)


def _scalar_class(t):
    """The numpy scalar class for a scalar type (`int` -> i64, `float` -> f64)."""
    if t is builtins.bool or t is np.bool_:
        return np.bool_
    if t is builtins.int:
        return np.int64
    if t is builtins.float:
        return np.float64
    if isinstance(t, type) and issubclass(t, np.generic):
        return t
    raise TypeError(f"not a PyShark scalar type: {t!r}")


def highest(t):
    """The largest value of `t`: iinfo max for ints, +inf for floats, True for bool."""
    cls = _scalar_class(t)
    if cls is np.bool_:
        return np.bool_(True)
    if issubclass(cls, np.integer):
        return cls(np.iinfo(cls).max)
    return cls(np.inf)


def lowest(t):
    """The smallest value of `t`: iinfo min for ints, -inf for floats (the neutral
    element of a max-reduction, like Futhark's f32.lowest), False for bool."""
    cls = _scalar_class(t)
    if cls is np.bool_:
        return np.bool_(False)
    if issubclass(cls, np.integer):
        return cls(np.iinfo(cls).min)
    return cls(-np.inf)


class ArrayAlias:
    """`Array[elem]`: hashable, comparable, and callable as a conversion.

    Calling it, `Array[f32]([1, 2])`, converts a value (nested lists, lists of
    tuples, numpy arrays) to an array of exactly that type.
    """

    __slots__ = ("elem",)

    def __init__(self, elem):
        object.__setattr__(self, "elem", elem)

    def __setattr__(self, name, value):
        raise AttributeError("ArrayAlias is immutable")

    @property
    def rank(self) -> int:
        """Number of array dimensions (nested Array aliases add up)."""
        e = self.elem
        return 1 + (e.rank if isinstance(e, ArrayAlias) else 0)

    @property
    def base(self):
        """The innermost element type (a scalar type, tuple type or record class)."""
        e = self.elem
        return e.base if isinstance(e, ArrayAlias) else e

    def __eq__(self, other):
        return isinstance(other, ArrayAlias) and self.elem == other.elem

    def __hash__(self):
        return hash(("pyshark.Array", self.elem))

    def __repr__(self):
        e = self.elem
        name = e.__name__ if isinstance(e, type) else repr(e)
        return f"Array[{name}]"

    def __call__(self, value):
        from .convert import convert
        return convert(value, self)


class Array:
    """Annotation-only: `Array[T]` is a regular array of T; nest for rank."""

    def __class_getitem__(cls, elem):
        if isinstance(elem, tuple):
            raise TypeError("Array takes one element type: Array[T]")
        return ArrayAlias(elem)

    def __init__(self, *args, **kwargs):
        raise TypeError("Array is an annotation; use ps.array(...) to build an array")
