"""Array functions of the prelude, reference semantics in numpy.

All accept numpy arrays, TupleArrays (arrays of tuples/records) and Python
lists (array literals and comprehensions in Python mode). Every result that
is an array is a new array, never a view of an argument, so an owned
in-place update of a result can never change an argument.

Decisions where LANGUAGE.md is silent: a negative count for `iota` or
`replicate` raises ShapeError; `take`/`drop`/`split` counts outside
0..len(xs) raise IndexError; `minimum`/`maximum`/`argmin`/`argmax` of an
empty array raise ShapeError (a ValueError, as Python's min([]) raises).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ..errors import ShapeError
from .build import as_array, collect, retype_empty, untyped_empty
from .static import argument_site, site_types
from .tuple_array import TupleArray


# what the translator emits where a list-valued argument starts: a comprehension
# (Map), an array literal (ArrayLit), a call of a user function (Call)
_LIST_MAKERS = ("Map", "ArrayLit", "Call")


def _argument_typed(arr, xs, k):
    """as_array(xs) for argument k; an empty Python list takes the type the
    compiled program gives the argument expression (ps.array and ps.zip lower
    to no statement of their own)."""
    if untyped_empty(xs):
        return retype_empty(arr, site_types(_LIST_MAKERS, site=argument_site(k)))
    return arr


def _typed(result, xs, kind):
    """result, or, when xs is an empty Python list (no element type in Python
    mode), result with the type the compiled program gives it (static.py)."""
    if untyped_empty(xs):
        return retype_empty(result, site_types((kind,)))
    return result


def _count(n, what):
    n = operator.index(n)
    if n < 0:
        raise ShapeError(f"{what}: negative count {n}")
    return n


def _copy(arr):
    return arr.copy()


def iota(n):
    """[0, 1, ..., n-1] as i64."""
    return np.arange(_count(n, "iota"), dtype=np.int64)


def replicate(n, x):
    """An array of n copies of x (a scalar, an array, a tuple or a record)."""
    n = _count(n, "replicate")
    if isinstance(x, builtins.bool):
        return np.full(n, x, dtype=np.bool_)
    if isinstance(x, builtins.int):
        return np.full(n, x, dtype=np.int64)
    if isinstance(x, builtins.float):
        return np.full(n, x, dtype=np.float64)
    if isinstance(x, np.generic):
        return np.full(n, x, dtype=x.dtype)
    if isinstance(x, tuple):
        return TupleArray([replicate(n, v) for v in x], type(x) if type(x) is not tuple else tuple, 1)
    if untyped_empty(x):
        return _typed(np.broadcast_to(as_array(x), (n,) + as_array(x).shape).copy(), x, "Replicate")
    arr = as_array(x)
    if isinstance(arr, TupleArray):
        return TupleArray([replicate(n, f) for f in arr.fields], arr.make, arr.rank + 1)
    return np.broadcast_to(arr, (n,) + arr.shape).copy()


def length(xs):
    """len(xs) as i64."""
    return np.int64(len(xs))


def _nonempty(xs, what):
    if len(xs) == 0:
        raise IndexError(f"{what} of an empty array")


def head(xs):
    """xs[0]; IndexError when empty."""
    _nonempty(xs, "head")
    return xs[0] if isinstance(xs, list) else as_array(xs)[0]


def last(xs):
    """xs[-1]; IndexError when empty."""
    _nonempty(xs, "last")
    return xs[-1] if isinstance(xs, list) else as_array(xs)[-1]


def tail(xs):
    """xs[1:]; IndexError when empty."""
    _nonempty(xs, "tail")
    return _copy(as_array(xs)[1:])


def init(xs):
    """xs[:-1]; IndexError when empty."""
    _nonempty(xs, "init")
    return _copy(as_array(xs)[:-1])


def _split_count(n, xs, what):
    n = operator.index(n)
    if not 0 <= n <= len(xs):
        raise IndexError(f"{what}: count {n} outside 0..{len(xs)}")
    return n


def take(n, xs):
    """The first n elements (0 <= n <= len(xs), else IndexError)."""
    arr = as_array(xs)
    return _typed(_copy(arr[:_split_count(n, arr, "take")]), xs, "Slice")


def drop(n, xs):
    """All but the first n elements (0 <= n <= len(xs), else IndexError)."""
    arr = as_array(xs)
    return _typed(_copy(arr[_split_count(n, arr, "drop"):]), xs, "Slice")


def split(n, xs):
    """(take(n, xs), drop(n, xs))."""
    return take(n, xs), drop(n, xs)


def reverse(xs):
    """The elements in reverse order."""
    return _typed(_copy(as_array(xs)[::-1]), xs, "Slice")


def _concat_fields(parts):
    first = parts[0]
    if isinstance(first, TupleArray):
        for p in parts:
            if not isinstance(p, TupleArray) or len(p.fields) != len(first.fields) or p.rank != first.rank:
                raise ShapeError("concat: arrays of different element types")
        fields = [_concat_fields([p.fields[k] for p in parts]) for k in range(len(first.fields))]
        return TupleArray(fields, first.make, first.rank)
    for p in parts:
        if not isinstance(p, np.ndarray):
            raise ShapeError("concat: arrays of tuples beside arrays of scalars")
        if p.shape[1:] != first.shape[1:]:
            raise ShapeError(f"concat: inner shapes {first.shape[1:]} and {p.shape[1:]} differ")
    return np.concatenate([p.astype(first.dtype, copy=False) for p in parts])


def concat(xs, *more):
    """xs followed by the other arrays; ShapeError if their inner shapes differ.

    An empty Python list has no element type of its own and takes that of the
    arrays it is combined with.
    """
    given = (xs,) + more
    parts = [as_array(a) for a in given if not (isinstance(a, list) and len(a) == 0)]
    if not parts:
        return retype_empty(as_array([]), site_types(("Concat",)))
    return _concat_fields(parts)


def rotate(r, xs):
    """result[i] == xs[(i + r) % n], i.e. numpy.roll(xs, -r); empty stays empty."""
    arr = as_array(xs)
    n = len(arr)
    if n == 0:
        return _typed(_copy(arr), xs, "Rotate")
    shift = operator.index(r) % n
    return arr[(np.arange(n) + shift) % n]


def _swap01(a):
    if isinstance(a, TupleArray):
        return TupleArray([_swap01(f) for f in a.fields], a.make, a.rank)
    return np.swapaxes(a, 0, 1).copy()


def transpose(xss):
    """Swap the first two axes."""
    arr = as_array(xss)
    if arr.ndim < 2:
        if isinstance(arr, np.ndarray) and arr.size == 0:
            return _typed(np.empty((0, 0), dtype=arr.dtype), xss, "Transpose")
        raise TypeError("transpose needs an array of rank >= 2")
    return _typed(_swap01(arr), xss, "Transpose")


def _reshape_lead(a, k, lead):
    """Replace the first k axes of a by `lead`."""
    if isinstance(a, TupleArray):
        return TupleArray([_reshape_lead(f, k, lead) for f in a.fields], a.make, a.rank - k + len(lead))
    return a.reshape(tuple(lead) + a.shape[k:]).copy()


def flatten(xss):
    """Merge the first two axes."""
    arr = as_array(xss)
    if arr.ndim < 2:
        if isinstance(arr, np.ndarray) and arr.size == 0:
            return _typed(arr.copy(), xss, "Reshape")
        raise TypeError("flatten needs an array of rank >= 2")
    n, m = arr.shape[0], arr.shape[1]
    return _typed(_reshape_lead(arr, 2, (n * m,)), xss, "Reshape")


def unflatten(n, m, xs):
    """xs as an n-by-m array; ShapeError if n < 0, m < 0 or n * m != len(xs)."""
    n, m = operator.index(n), operator.index(m)
    arr = as_array(xs)
    if n < 0 or m < 0 or n * m != len(arr):
        raise ShapeError(f"unflatten: cannot make {n} x {m} from {len(arr)} elements")
    return _typed(_reshape_lead(arr, 1, (n, m)), xs, "Reshape")


def copy(xs):
    """A fresh copy of an array (scalars and tuples are values already)."""
    if isinstance(xs, (np.ndarray, TupleArray, list)):
        return _typed(as_array(xs).copy(), xs, "Copy")
    return xs


def update(xs, i, v):
    """A new array equal to xs except at index i (Python index rules: negative
    counts from the end, out of range raises IndexError); xs is unchanged."""
    out = as_array(xs).copy()
    i = operator.index(i)
    n = len(out)
    if not -n <= i < n:
        raise IndexError(f"update: index {i} out of range for length {n}")
    out[i] = v
    return out


def array(xs):
    """A numpy array (or TupleArray) from a possibly nested list; irregular -> ShapeError."""
    if isinstance(xs, (np.ndarray, TupleArray)):
        return as_array(xs).copy()
    return _argument_typed(collect(list(xs)), xs, 0)


def zip(xs, *more):
    """An array of tuples (x, y, ...); ShapeError if the lengths differ."""
    arrays = [_argument_typed(as_array(a).copy(), a, k) for k, a in enumerate((xs,) + more)]
    n = len(arrays[0])
    for a in arrays[1:]:
        if len(a) != n:
            raise ShapeError(f"zip: arrays of lengths {n} and {len(a)}")
    return TupleArray(arrays, tuple, 1)


def unzip(xs):
    """The field arrays of an array of tuples or records, in field order."""
    arr = as_array(xs)
    if not isinstance(arr, TupleArray):
        raise TypeError("unzip needs an array of tuples or records")
    return tuple(f.copy() for f in arr.fields)


def _numeric(xs, what):
    arr = as_array(xs)
    if isinstance(arr, TupleArray):
        raise TypeError(f"{what} needs an array of numbers, not of tuples")
    return arr


def _numeric_typed(xs, what):
    """_numeric; an empty Python list takes the element type of the compiled
    program's reduction (its Reduce's result is one element)."""
    arr = _numeric(xs, what)
    if untyped_empty(xs):
        flat = site_types(("Reduce",))
        if flat is not None and len(flat) == 1 and flat[0][1] == arr.ndim - 1:
            arr = arr.astype(flat[0][0])
    return arr


def sum(xs):
    """The sum in the element type (integers wrap); 0 for an empty array."""
    arr = _numeric_typed(xs, "sum")
    return np.sum(arr, axis=0, dtype=arr.dtype)


def product(xs):
    """The product in the element type (integers wrap); 1 for an empty array."""
    arr = _numeric_typed(xs, "product")
    return np.prod(arr, axis=0, dtype=arr.dtype)


def _nonempty_numeric(xs, what):
    arr = _numeric(xs, what)
    if len(arr) == 0:
        raise ShapeError(f"{what} of an empty array")
    return arr


def minimum(xs):
    """The smallest element; NaN propagates (np.min)."""
    return np.min(_nonempty_numeric(xs, "minimum"), axis=0)


def maximum(xs):
    """The largest element; NaN propagates (np.max)."""
    return np.max(_nonempty_numeric(xs, "maximum"), axis=0)


def argmin(xs):
    """The index of the smallest element (the first on ties), as i64."""
    return np.int64(np.argmin(_nonempty_numeric(xs, "argmin")))


def argmax(xs):
    """The index of the largest element (the first on ties), as i64."""
    return np.int64(np.argmax(_nonempty_numeric(xs, "argmax")))


__all__ = ["iota", "replicate", "length", "head", "last", "tail", "init", "take", "drop", "split",
           "reverse", "concat", "rotate", "transpose", "flatten", "unflatten", "copy", "update",
           "array", "zip", "unzip", "sum", "product", "minimum", "maximum", "argmin", "argmax"]
