"""Converting plain Python values to a declared PyShark type.

Used by `Array[T](value)` and `TupleArray.from_elements(..., like=T)`: nested
lists become numpy arrays of the declared dtype and rank (irregular ->
ShapeError), lists of tuples become TupleArrays, lists become tuples or record
instances, numbers become the declared numpy scalar (a float for f32 rounds).
"""
from __future__ import annotations

import typing

import numpy as np

from ..errors import ShapeError
from .build import _stack_tuple_arrays, empty_from_template, template_of_type
from .scalars import ArrayAlias, _scalar_class
from .tuple_array import TupleArray, is_record_class


def _field_types(t):
    if is_record_class(t):
        hints = typing.get_type_hints(t)
        return [hints[name] for name in t._fields]
    if typing.get_origin(t) is tuple:
        return list(typing.get_args(t))
    return None


def convert(value, t):
    """`value` as a value of PyShark type `t`."""
    if isinstance(t, ArrayAlias):
        return _convert_array(value, t)
    fts = _field_types(t)
    if fts is not None:
        if isinstance(value, dict) and is_record_class(t):
            value = [value[name] for name in t._fields]
        value = list(value)
        if len(value) != len(fts):
            raise TypeError(f"expected {len(fts)} fields for {t!r}, got {len(value)}")
        parts = [convert(v, ft) for v, ft in zip(value, fts)]
        return t(*parts) if is_record_class(t) else tuple(parts)
    cls = _scalar_class(t)
    if isinstance(value, np.generic):
        return value.astype(cls)
    return cls(value)


def _convert_array(value, t: ArrayAlias):
    rank, base = t.rank, t.base
    if isinstance(value, TupleArray):
        if value.rank != rank:
            raise TypeError(f"expected rank {rank}, got rank {value.rank}")
        return value
    if isinstance(value, np.ndarray) and value.dtype.names is not None:
        value = TupleArray.from_structured(value, base if is_record_class(base) else tuple)
        if value.rank != rank:
            raise TypeError(f"expected rank {rank}, got rank {value.rank}")
        return value
    if _field_types(base) is None:
        dt = np.dtype(_scalar_class(base))
        try:
            arr = np.array(value, dtype=dt)
        except ValueError as e:
            if "inhomogeneous" in str(e) or "sequence" in str(e):
                raise ShapeError(f"irregular nested list for {t!r}") from None
            raise
        if arr.size == 0 and arr.ndim < rank:
            arr = arr.reshape(arr.shape + (0,) * (rank - arr.ndim))
        if arr.ndim != rank:
            raise ShapeError(f"expected an array of rank {rank}, got rank {arr.ndim}")
        return arr
    # arrays of tuples / records
    value = list(value)
    if not value:
        return empty_from_template(template_of_type(t.elem), (0,))
    if rank > 1:
        rows = [_convert_array(v, t.elem) for v in value]
        return _stack_tuple_arrays(rows)
    fts = _field_types(base)
    elems = [convert(v, base) for v in value]
    fields = [_convert_array([e[k] for e in elems], ArrayAlias(ft)) for k, ft in enumerate(fts)]
    return TupleArray(fields, base if is_record_class(base) else tuple, 1)
