"""Second-order array combinators, reference semantics.

Each SOAC calls the user function element by element, in order, as plain
Python; exactness, not speed, is the point. Every element is evaluated (no
short-circuit in `all`/`any`), as a parallel backend would. Results are built
with `build.collect`, whose module docstring gives the rule for element types
and for empty results. A weak (Python) neutral element takes the element type
of the array it is combined with, as the compiler types it.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..errors import ShapeError
from .build import (as_array, collect, count_leaves, element_template, empty_from_template,
                    result_template, retype_empty, stand_in_dims, template_from_flat,
                    template_of_value, to_dtype, untyped_empty, _PY_SCALARS)
from .static import site_types
from .tuple_array import TupleArray, build_tuple


def _length(xs):
    return len(xs)


def _check_same_length(arrays, what):
    n = _length(arrays[0])
    for a in arrays[1:]:
        if _length(a) != n:
            raise ShapeError(f"{what}: arrays of lengths {n} and {_length(a)}")
    return n


def _elements(xs):
    """The elements of an array value, in order."""
    if isinstance(xs, range):
        return [np.int64(i) for i in xs]
    return list(xs)


def coerce_weak(value, tpl):
    """A weak (Python) scalar, or tuple of them, given the element type `tpl`."""
    if tpl is None:
        return value
    if tpl.is_tuple:
        if isinstance(value, tuple) and not tpl.inner and len(value) == len(tpl.fields):
            parts = [coerce_weak(v, f) for v, f in zip(value, tpl.fields)]
            return build_tuple(type(value) if type(value) is not tuple else tuple, parts)
        return value
    if isinstance(value, _PY_SCALARS) and not tpl.inner:
        return to_dtype(value, tpl.dtype)
    if isinstance(value, list) and tpl.inner:  # an array literal as ne of a reduction over rows
        arr = as_array(value)
        if isinstance(arr, np.ndarray) and arr.shape == tpl.inner:
            return arr.astype(tpl.dtype)
    return value


def _element_type(xs, kind, lead=0):
    """The element type of xs; for an empty Python list, the compiled program's."""
    tpl = element_template(xs)
    if tpl is None and untyped_empty(xs):
        flat = site_types((kind,), lead=lead)
        if flat is not None:
            tpl = template_from_flat(flat)
    return tpl


def _typed_elements(elems, arrays):
    """The element types of map's inputs, an empty Python list's (one at
    most) from the compiled map's parameters: its stand-in is then zeros
    of 0 inner dimensions, as compiled code's empty comprehension has."""
    missing = [k for k, (t, a) in enumerate(zip(elems, arrays)) if t is None and untyped_empty(a)]
    if len(missing) != 1 or builtins.sum(t is None for t in elems) != 1:
        return elems
    flat = site_types(("Map.params",))
    known = builtins.sum(count_leaves(t) for t in elems if t is not None)
    if flat is None or known >= len(flat):
        return elems
    out, pos = [], 0
    for t in elems:
        n = len(flat) - known if t is None else count_leaves(t)
        out.append(template_from_flat(flat[pos:pos + n]) if t is None else t)
        pos += n
    return out


def map(f, xs, *more):
    """[f(x, y, ...) for x, y, ... in zip(xs, ys, ...)]; ShapeError if lengths differ."""
    arrays = (xs,) + more
    _check_same_length(arrays, "map")
    columns = [_elements(a) for a in arrays]
    results = [f(*args) for args in zip(*columns)]
    if results:
        return collect(results)
    elems = _typed_elements([element_template(a) for a in arrays], arrays)
    tpl = result_template(f, elems, lambda: site_types(("Map",), lead=1))
    return empty_from_template(stand_in_dims(tpl, f, elems), (0,))


def reduce(op, ne, xs):
    """Left fold from ne: op(...op(op(ne, x0), x1)..., xn-1). op must be associative
    with neutral element ne (a backend may regroup); empty input gives ne."""
    acc = coerce_weak(ne, _element_type(xs, "Reduce"))
    for x in _elements(xs):
        acc = op(acc, x)
    return acc


def reduce_comm(op, ne, xs):
    """reduce for an operator that is also commutative; the same left fold."""
    return reduce(op, ne, xs)


def scan(op, ne, xs):
    """Inclusive scan: result[i] = reduce(op, ne, xs[:i+1])."""
    acc = coerce_weak(ne, _element_type(xs, "Scan", lead=1))
    results = []
    for x in _elements(xs):
        acc = op(acc, x)
        results.append(acc)
    if results:
        return collect(results)
    tpl = template_of_value(acc)
    if tpl is None or not tpl.fully_typed():
        tpl = result_template(op, [template_of_value(acc), element_template(xs)],
                              lambda: site_types(("Scan",), lead=1))
    return empty_from_template(tpl, (0,))


def _mask(p, arr):
    return np.array([builtins.bool(p(x)) for x in _elements(arr)], dtype=np.bool_)


def filter(p, xs):
    """The elements x of xs with p(x), in order."""
    arr = as_array(xs)
    out = arr[_mask(p, arr)]
    if untyped_empty(xs):
        out = retype_empty(out, site_types(("Filter",)))
    return out


def partition(p, xs):
    """(filter(p, xs), the rest), both in their original order."""
    arr = as_array(xs)
    m = _mask(p, arr)
    yes, no = arr[m], arr[~m]
    if untyped_empty(xs):     # the lowering filters (flags, xs): drop the flags
        flat = site_types(("Filter",), drop=1)
        yes, no = retype_empty(yes, flat), retype_empty(no, flat)
    return yes, no


def _in_range(i, n):
    return 0 <= i < n


def reduce_by_index(dest, op, ne, idxs, vals):
    """A copy of dest with dest[i] = op(dest[i], v) for each (i, v) in order;
    an index i counts only if 0 <= i < len(dest) (negative ones are ignored)."""
    if _length(idxs) != _length(vals):
        raise ShapeError(f"reduce_by_index: {_length(idxs)} indices but {_length(vals)} values")
    out = as_array(dest).copy()
    n = len(out)
    for i, v in zip(_elements(idxs), _elements(vals)):
        if _in_range(i, n):
            i = int(i)
            out[i] = op(out[i], v)
    return out


def scatter(dest, idxs, vals):
    """A copy of dest with dest[i] = v for each (i, v) in order; indices outside
    0 <= i < len(dest) (negative ones too) are ignored."""
    if _length(idxs) != _length(vals):
        raise ShapeError(f"scatter: {_length(idxs)} indices but {_length(vals)} values")
    out = as_array(dest).copy()
    n = len(out)
    for i, v in zip(_elements(idxs), _elements(vals)):
        if _in_range(i, n):
            out[int(i)] = v
    return out


def all(p, xs):
    """True when p holds for every element (p is evaluated on all of them)."""
    results = [builtins.bool(p(x)) for x in _elements(xs)]
    return builtins.all(results)


def any(p, xs):
    """True when p holds for some element (p is evaluated on all of them)."""
    results = [builtins.bool(p(x)) for x in _elements(xs)]
    return builtins.any(results)


def foldl(f, acc, xs):
    """Sequential left fold: acc = f(acc, x) for x from first to last."""
    for x in _elements(xs):
        acc = f(acc, x)
    return acc


def foldr(f, acc, xs):
    """Sequential right fold: acc = f(x, acc) for x from last to first."""
    for x in reversed(_elements(xs)):
        acc = f(x, acc)
    return acc


def tabulate(n, f):
    """[f(i) for i in range(n)], i as i64."""
    n = int(n)
    if n < 0:
        raise ShapeError(f"tabulate: negative size {n}")
    results = [f(np.int64(i)) for i in range(n)]
    if results:
        return collect(results)
    index = [value_template_i64()]
    tpl = result_template(f, index, lambda: site_types(("Map",), lead=1))
    return empty_from_template(stand_in_dims(tpl, f, index), (0,))


def tabulate_2d(n, m, f):
    """[[f(i, j) for j in range(m)] for i in range(n)], i and j as i64."""
    n, m = int(n), int(m)
    if n < 0 or m < 0:
        raise ShapeError(f"tabulate_2d: negative size ({n}, {m})")
    results = [f(np.int64(i), np.int64(j)) for i in range(n) for j in range(m)]
    if results:
        return _reshape_lead(collect(results), n, m)
    index = [value_template_i64(), value_template_i64()]
    tpl = result_template(f, index, lambda: site_types(("Map", "Reshape"), lead=2))
    return empty_from_template(stand_in_dims(tpl, f, index), (n, m))


def value_template_i64():
    return template_of_value(np.int64(0))


def _reshape_lead(arr, n, m):
    """Split the first axis of arr into (n, m)."""
    if isinstance(arr, TupleArray):
        return TupleArray([_reshape_lead(f, n, m) for f in arr.fields], arr.make, arr.rank + 1)
    return arr.reshape((n, m) + arr.shape[1:])


__all__ = ["map", "reduce", "reduce_comm", "scan", "filter", "partition", "reduce_by_index",
           "scatter", "all", "any", "foldl", "foldr", "tabulate", "tabulate_2d"]
