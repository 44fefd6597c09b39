"""Arrays of tuples and records, stored as a struct of arrays.

This matches how the compiler stores them (one buffer per field), so that
Python mode and compiled code agree on what an array of pairs is: indexing
gives a tuple (or record instance), slicing gives another TupleArray, and
`unzip` hands back the field arrays. A field is a numpy array or, for a
tuple/record-typed field, a nested TupleArray; all fields share the leading
`rank` dimensions, and a field may have more (an array-valued field).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np


def is_record_class(make) -> bool:
    """True for a NamedTuple class (a record)."""
    return isinstance(make, type) and issubclass(make, tuple) and hasattr(make, "_fields")


def build_tuple(make, values):
    """make(*values) for records, tuple(values) for plain tuples."""
    if make is tuple:
        return tuple(values)
    return make(*values)


def _lead_shape(field, rank):
    return tuple(field.shape[:rank])


def _count_ints(key):
    keys = key if isinstance(key, tuple) else (key,)
    n = 0
    for k in keys:
        if isinstance(k, (builtins.int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            n += 1
        elif isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
            n += 1
    return n


class TupleArray:
    """A regular array (of rank `rank`) whose elements are tuples or records."""

    __slots__ = ("fields", "make", "rank")

    def __init__(self, fields, make=tuple, rank=1):
        fields = tuple(fields)
        if not fields:
            raise ValueError("a TupleArray needs at least one field")
        if rank < 1:
            raise ValueError("a TupleArray has rank >= 1")
        for f in fields:
            if not isinstance(f, (np.ndarray, TupleArray)):
                raise TypeError(f"TupleArray fields are numpy arrays or TupleArrays, not {type(f).__name__}")
        lead = _lead_shape(fields[0], rank)
        if len(lead) != rank:
            raise ValueError("a field has fewer dimensions than the TupleArray's rank")
        for f in fields[1:]:
            if _lead_shape(f, rank) != lead:
                from ..errors import ShapeError
                raise ShapeError(f"TupleArray fields differ in shape: {lead} vs {_lead_shape(f, rank)}")
        if make is not tuple and not is_record_class(make):
            raise TypeError("make is `tuple` or a NamedTuple class")
        if is_record_class(make) and len(make._fields) != len(fields):
            raise ValueError(f"{make.__name__} has {len(make._fields)} fields, got {len(fields)}")
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "make", make)
        object.__setattr__(self, "rank", rank)

    # --- shape -------------------------------------------------------------------
    @property
    def shape(self):
        return _lead_shape(self.fields[0], self.rank)

    @property
    def ndim(self):
        return self.rank

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # --- indexing ------------------------------------------------------------------
    def __getitem__(self, key):
        if isinstance(key, np.ndarray) and key.ndim == 0:
            key = key[()]
        if isinstance(key, (builtins.int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            key = operator.index(key)
        if isinstance(key, tuple) and len(key) > self.rank:
            raise IndexError(f"too many indices for an array of rank {self.rank}")
        parts = [f[key] for f in self.fields]
        new_rank = self.rank - _count_ints(key)
        if isinstance(key, np.ndarray) and key.dtype.kind in "iu":
            new_rank = self.rank - 1 + key.ndim
        if new_rank <= 0:
            return build_tuple(self.make, parts)
        return TupleArray(parts, self.make, new_rank)

    def __setitem__(self, key, value):
        """Owned in-place update: `xs[i] = (a, b)`, or a TupleArray for a slice."""
        if isinstance(value, TupleArray):
            values = value.fields
        elif isinstance(value, tuple):
            values = tuple(value)
        else:
            raise TypeError(f"cannot store a {type(value).__name__} in an array of tuples")
        if len(values) != len(self.fields):
            raise TypeError(f"expected a tuple of {len(self.fields)} fields, got {len(values)}")
        for f, v in zip(self.fields, values):
            f[key] = v

    # --- conversions -----------------------------------------------------------------
    def copy(self):
        return TupleArray([f.copy() for f in self.fields], self.make, self.rank)

    def tolist(self):
        """Nested lists of tuples / record instances (fields converted by .tolist())."""
        return [_plain(x) for x in self]

    @property
    def field_names(self):
        if is_record_class(self.make):
            return tuple(self.make._fields)
        return tuple(f"f{k}" for k in range(len(self.fields)))

    def element_dtype(self):
        """The numpy structured dtype of one element."""
        specs = []
        for name, f in zip(self.field_names, self.fields):
            inner = tuple(f.shape[self.rank:])
            dt = f.dtype if isinstance(f, np.ndarray) else f.element_dtype()
            specs.append((name, dt, inner) if inner else (name, dt))
        return np.dtype(specs)

    def to_structured(self):
        """A numpy structured array: fields f0, f1, ... for tuples, the record's
        names for records; nested tuples/records become nested structured dtypes,
        array-valued fields subarray dtypes."""
        out = np.empty(self.shape, dtype=self.element_dtype())
        for name, f in zip(self.field_names, self.fields):
            out[name] = f.to_structured() if isinstance(f, TupleArray) else f
        return out

    @classmethod
    def from_structured(cls, arr, make=tuple):
        """The inverse of to_structured(); `make` may be a record class (its
        annotated field types give the makes of nested records). A record's
        fields are matched by name (in any order, as the Wrapper does; other
        names are a TypeError), a tuple's by position."""
        arr = np.asarray(arr)
        if arr.dtype.names is None:
            raise TypeError("from_structured needs a numpy structured array")
        if arr.ndim == 0:
            raise ValueError("from_structured needs an array of rank >= 1")
        names = arr.dtype.names
        if is_record_class(make):
            if sorted(names) != sorted(make._fields):
                raise TypeError(f"a structured array with fields {', '.join(names)} is not an "
                                f"array of {make.__name__} (fields {', '.join(make._fields)})")
            names = tuple(make._fields)
        nested = _record_field_makes(make, len(names))
        fields = []
        for name, sub_make in zip(names, nested):
            col = arr[name]
            if col.dtype.names is not None:
                fields.append(cls.from_structured(col, sub_make))
            else:
                fields.append(np.array(col))
        return cls(fields, make, arr.ndim)

    @classmethod
    def from_elements(cls, elements, like=None):
        """An array of tuples/records from a (possibly nested) list of them.

        `like`, an element type such as `tuple[ps.i32, ps.f32]` or a record
        class, fixes the field types and is needed for an empty list.
        """
        from .convert import convert
        from .scalars import Array
        from .build import collect
        if like is not None:
            return convert(list(elements), Array[like])
        result = collect(list(elements))
        if not isinstance(result, TupleArray):
            raise TypeError("from_elements needs tuples or records (pass like= for an empty list)")
        return result

    def __repr__(self):
        make = "tuple" if self.make is tuple else self.make.__name__
        return f"TupleArray(make={make}, rank={self.rank}, shape={self.shape}, fields={list(self.fields)!r})"

    def __eq__(self, other):
        if not isinstance(other, TupleArray):
            return NotImplemented
        if self.make is not other.make or self.rank != other.rank or len(self.fields) != len(other.fields):
            return False
        for a, b in zip(self.fields, other.fields):
            if isinstance(a, TupleArray) or isinstance(b, TupleArray):
                if not (isinstance(a, TupleArray) and a == b):
                    return False
            elif a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                return False
        return True

    __hash__ = None


def _record_field_makes(make, n):
    """The make of each field of a record class, from its annotations (tuple otherwise)."""
    if not is_record_class(make):
        return [tuple] * n
    import typing
    try:
        hints = typing.get_type_hints(make)
    except Exception:
        return [tuple] * n
    out = []
    for name in make._fields:
        t = hints.get(name)
        out.append(t if is_record_class(t) else tuple)
    return out


def _plain(x):
    """x as plain Python values (TupleArray.tolist's elements)."""
    if isinstance(x, TupleArray):
        return x.tolist()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, tuple):
        return build_tuple(type(x) if is_record_class(type(x)) else tuple, [_plain(v) for v in x])
    if isinstance(x, np.generic):
        return x.item()
    return x
