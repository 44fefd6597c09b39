"""Argument conversion and result rebuilding by surface type (SType).

Every backend goes through the same three steps, so results compare equal:
1. `convert_arg`: a user value (Python/numpy scalar, numpy array, nested
   list, structured array, TupleArray, tuple, record) -> a *canonical* value:
   numpy scalars of the exact type, C-contiguous numpy arrays of the exact
   dtype and rank, and tuples (records are tuples of their fields; an array
   of tuples/records is a tuple of per-field arrays, struct of arrays).
2. `flatten_value` / `unflatten_value`: canonical <-> the flat list of core
   values, in `flatten_stype` order (what compiled code and the core
   interpreter take and return); `call_flat` / `FlatCall` is that path
   (flatten, run, unflatten and step 3) for every backend but python.
3. `to_output`: canonical -> what users get back: numpy scalars, n-d numpy
   arrays, tuples, NamedTuple records and structured arrays for arrays of
   tuples/records.
"""
from __future__ import annotations

import collections
import functools
import warnings
from typing import Callable

import numpy as np

from pyshark.core.types import (
    BOOL, F32, F64, ScalarType, SArray, SRecord, SScalar, SType, STuple, stype_base, stype_rank)
from pyshark.errors import InternalCompilerError, ShapeError

from .device_interface import is_device_array, is_device_struct


class Where:
    """Names the value being converted in error messages: parameter 'v.x'."""

    def __init__(self, kind: str, path: str):
        self.kind, self.path = kind, path

    def sub(self, suffix: str) -> "Where":
        return Where(self.kind, self.path + suffix)

    def __str__(self) -> str:
        return f"{self.kind} {self.path!r}"


def _where(w) -> Where:
    return w if isinstance(w, Where) else Where("parameter", str(w))


def _tname(v) -> str:
    if isinstance(v, np.ndarray):
        return f"numpy array of {v.dtype} with rank {v.ndim}"
    if isinstance(v, np.generic):
        return f"numpy.{type(v).__name__}"
    return type(v).__name__


def lift(st: SType, k: int) -> SType:
    """Array^k of st."""
    for _ in range(k):
        st = SArray(st)
    return st


def fields_of(st: STuple | SRecord) -> list[tuple[str, SType]]:
    """(name, type) pairs; tuples use the structured-array names f0, f1, ..."""
    if isinstance(st, SRecord):
        return list(st.fields)
    return [(f"f{i}", t) for i, t in enumerate(st.elems)]


# ---------------------------------------------------------------------------
# Scalars


def _plain(value, where: Where):
    """An ndarray subclass as the plain ndarray it views (np.matrix, np.recarray,
    np.memmap, ...: compiled code sees only the data, so Python mode must too);
    a masked array is refused, since compiled code would ignore its mask; a
    DeviceArray is the numpy array it holds (one copy back from the device)."""
    if is_device_array(value):
        return np.asarray(value)
    if is_device_struct(value):
        return value.get()
    if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
        if isinstance(value, np.ma.MaskedArray):
            raise TypeError(f"{where}: masked arrays are not accepted (compiled code would "
                            f"ignore the mask); pass a plain array, e.g. value.filled(...) "
                            f"or value.compressed()")
        return np.asarray(value)
    return value


def _refuse_masked(value, where: Where) -> None:
    """TypeError if a (nested) list holds a masked array or numpy.ma.masked."""
    if isinstance(value, np.ma.MaskedArray):
        _plain(value, where)
    if isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, (list, tuple, np.ma.MaskedArray)):
                _refuse_masked(item, where)


def _digits(v: int) -> str:
    s = str(v)
    return s if len(s) <= 24 else f"{s[:10]}... ({len(s.lstrip('-'))} digits)"


def _as_float(x, t: ScalarType, where: Where) -> float:
    try:
        return float(x)
    except OverflowError:           # a Python int beyond every float
        raise OverflowError(f"{where}: the integer {_digits(x)} is too large for a float "
                            f"({t})") from None


def convert_scalar(t: ScalarType, v, where, *, lenient: bool = False):
    """A Python/numpy scalar -> numpy scalar of type t, range-checked."""
    where = _where(where)
    v = _plain(v, where)
    if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.names is None:
        v = v[()]
    is_bool = isinstance(v, (bool, np.bool_))
    if t is BOOL:
        if is_bool:
            return np.bool_(v)
        raise TypeError(f"{where}: expected bool, got {_tname(v)}")
    if is_bool:
        raise TypeError(f"{where}: expected {t}, got bool")
    if t.is_int:
        if isinstance(v, (int, np.integer)):
            iv = int(v)
            info = np.iinfo(t.dtype)
            if not info.min <= iv <= info.max:
                raise OverflowError(f"{where}: {iv} does not fit {t} (range {info.min}..{info.max})")
            return t.numpy_type(iv)
        raise TypeError(f"{where}: expected {t}, got {_tname(v)}")
    if isinstance(v, (int, float, np.integer, np.floating)):
        if isinstance(v, int):
            v = _as_float(v, t, where)
        with np.errstate(over="ignore"):
            return t.numpy_type(v)
    raise TypeError(f"{where}: expected {t}, got {_tname(v)}")


# ---------------------------------------------------------------------------
# Arrays of scalars


def _check_range(a: np.ndarray, t: ScalarType, where: Where) -> None:
    if a.size == 0:
        return
    info = np.iinfo(t.dtype)
    lo, hi = int(a.min()), int(a.max())
    if lo < info.min or hi > info.max:
        bad = lo if lo < info.min else hi
        raise OverflowError(f"{where}: element {bad} does not fit {t} (range {info.min}..{info.max})")


def _numpy_cast_ok(src: np.dtype, t: ScalarType, lenient: bool) -> bool:
    """THE casting rule for array arguments (docs/decisions.md, "Argument
    conversion"): numpy's "same_kind" rule, as its ufuncs apply by default
    (integers to any integer or float type, floats to any float type,
    never floats to integers), with bools kept apart as for scalars. Integer
    narrowing is range-checked by the caller; float narrowing rounds."""
    if src.kind == "b" or t is BOOL:
        return False          # bools convert to and from nothing else
    return src.kind in "iuf" and np.can_cast(src, t.dtype, "same_kind")


def _from_ndarray(t: ScalarType, k: int, a: np.ndarray, where: Where, lenient: bool):
    if a.dtype.names is not None:
        raise TypeError(f"{where}: expected an array of {t}, got a structured array")
    if a.ndim != k:
        raise TypeError(f"{where}: expected a rank-{k} array of {t}, got a rank-{a.ndim} array")
    if a.dtype == t.dtype:
        return a if a.flags.c_contiguous else np.ascontiguousarray(a)
    if lenient and a.size == 0 and a.dtype.kind in "biuf":
        return np.zeros(a.shape, t.dtype)     # a result with no values: only its type was unknown
    if not _numpy_cast_ok(a.dtype, t, lenient):
        how = (" (a float array never converts to integers implicitly: truncating must be "
               "explicit)" if a.dtype.kind == "f" and t.is_int else "")
        raise TypeError(f"{where}: expected an array of {t} ({t.dtype}), got an array of "
                        f"{a.dtype}{how}; convert it with .astype(numpy.{t.dtype})")
    if t.is_int and a.dtype.kind in "iu" and not np.can_cast(a.dtype, t.dtype, "safe"):
        _check_range(a, t, where)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(a.astype(t.dtype))


def _pad_empty(a: np.ndarray, k: int) -> np.ndarray:
    """`[]` (or `[[], []]`) for a rank-k parameter: the missing dims are 0."""
    return a.reshape(a.shape + (0,) * (k - a.ndim))


def _from_list(t: ScalarType, k: int, value, where: Where, lenient: bool):
    _refuse_masked(value, where)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = np.array(value)
    except ValueError as exc:
        raise ShapeError(f"{where}: irregular nested list, not a regular rank-{k} array "
                         f"({exc})") from None
    except OverflowError:
        raise OverflowError(f"{where}: an element does not fit {t}") from None
    if a.dtype.names is not None:
        raise TypeError(f"{where}: expected an array of {t}, got a list of structured values")
    if a.size == 0 and a.ndim <= k and a.dtype.kind in "fiub":
        return np.zeros(_pad_empty(a, k).shape, t.dtype)
    if a.ndim != k:
        raise TypeError(f"{where}: expected a rank-{k} array of {t}, got a nested list of rank {a.ndim}")
    kind = a.dtype.kind
    if kind == "O":
        flat = a.ravel().tolist()
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in flat)
        if t.is_int and all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
            raise OverflowError(f"{where}: an element does not fit {t}")
        if t.is_float and numbers:      # Python ints beyond int64 for a float array
            floats = np.array([_as_float(x, t, where) for x in flat], np.float64).reshape(a.shape)
            with np.errstate(over="ignore"):
                return np.ascontiguousarray(floats.astype(t.dtype))
        raise TypeError(f"{where}: expected an array of {t}, got a list with elements of "
                        f"type {', '.join(sorted({type(x).__name__ for x in flat}))}")
    ok = (kind == "b" and t is BOOL) or (kind in "iu" and t is not BOOL) or (kind == "f" and t.is_float)
    if not ok:
        raise TypeError(f"{where}: expected an array of {t}, got a list of {_kind_name(kind)}")
    if t.is_int:
        _check_range(a, t, where)
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(a.astype(t.dtype))


def _kind_name(kind: str) -> str:
    return {"b": "bools", "i": "ints", "u": "ints", "f": "floats", "U": "strings",
            "c": "complex numbers"}.get(kind, "values")


def _scalar_array(t: ScalarType, k: int, value, where: Where, lenient: bool):
    if isinstance(value, np.ndarray):
        return _from_ndarray(t, k, value, where, lenient)
    if isinstance(value, (list, tuple)):
        return _from_list(t, k, value, where, lenient)
    raise TypeError(f"{where}: expected a rank-{k} array of {t}, got {_tname(value)}")


# ---------------------------------------------------------------------------
# Arrays of tuples and records (struct of arrays)


def _is_tuple_array(v) -> bool:
    return type(v).__name__ == "TupleArray" and hasattr(v, "fields")


def _nested_items(value, k: int, where: Where):
    """Shape and row-major items of a regular depth-k nesting of sequences."""
    shape, level = [], [value]
    for _ in range(k):
        n, nxt = None, []
        for item in level:
            if not isinstance(item, (list, tuple, np.ndarray)) or _is_record_like(item):
                raise TypeError(f"{where}: expected a rank-{k} array, got {_tname(item)} "
                                f"at depth {len(shape)}")
            if n is None:
                n = len(item)
            elif len(item) != n:
                raise ShapeError(f"{where}: irregular nested list (rows of lengths {n} "
                                 f"and {len(item)})")
            nxt.extend(item)
        shape.append(n or 0)
        level = nxt
    return tuple(shape), level


def _is_record_like(v) -> bool:
    return isinstance(v, tuple) and hasattr(type(v), "_fields")


def _reshape_tree(tree, shape: tuple[int, ...]):
    """Replaces the leading dimension of every leaf by `shape`."""
    if isinstance(tree, tuple):
        return tuple(_reshape_tree(x, shape) for x in tree)
    return tree.reshape(shape + tree.shape[1:])


def _struct_array(st: SArray, k: int, base, value, where: Where, lenient: bool):
    fields = fields_of(base)
    if isinstance(value, np.ndarray) and value.dtype.names is not None:
        if value.ndim != k:
            raise TypeError(f"{where}: expected a rank-{k} array of {base!r}, got a rank-"
                            f"{value.ndim} structured array")
        order = _field_order(base, value.dtype.names, where, "a structured array")
        return tuple(convert_value(lift(ft, k), value[name], where.sub(f".{fn}"), lenient=lenient)
                     for name, (fn, ft) in zip(order, fields))
    if _is_tuple_array(value):
        if len(value.fields) != len(fields):
            raise TypeError(f"{where}: expected {len(fields)} fields per element ({base!r}), "
                            f"got a TupleArray with {len(value.fields)} fields")
        rank = getattr(value, "rank", k)
        columns = value.fields
        if lenient and rank < k and 0 in value.shape and all(isinstance(f, np.ndarray)
                                                               for f in columns):
            # Python mode's empty map of tuple rows has no row to show the inner
            # dimensions: they are 0, as for an empty array of scalars (_pad_empty)
            columns = [f if f.ndim >= k else
                       np.zeros(f.shape[:rank] + (0,) * (k - rank) + f.shape[rank:], f.dtype)
                       for f in columns]
        elif rank != k:
            raise TypeError(f"{where}: expected a rank-{k} array of {base!r}, got a rank-{rank} TupleArray")
        names = getattr(getattr(value, "make", None), "_fields", None)
        if names is not None:
            by_name = dict(zip(names, columns))
            order = _field_order(base, tuple(names), where, f"a TupleArray of {value.make.__name__}")
            columns = [by_name[name] for name in order]
        return tuple(convert_value(lift(ft, k), f, where.sub(f".{fn}"), lenient=lenient)
                     for f, (fn, ft) in zip(columns, fields))
    if not isinstance(value, (list, tuple)) or _is_record_like(value):
        raise TypeError(f"{where}: expected a rank-{k} array of {base!r} (a structured array "
                        f"or a list of tuples), got {_tname(value)}")
    shape, items = _nested_items(value, k, where)
    rows = [_element_fields(base, item, where) for item in items]
    columns = []
    for i, (fn, ft) in enumerate(fields):
        col = convert_value(SArray(ft), [r[i] for r in rows], where.sub(f".{fn}"), lenient=lenient)
        columns.append(_reshape_tree(col, shape))
    return tuple(columns)


def _element_fields(base, item, where: Where) -> list:
    if isinstance(item, np.void) and item.dtype.names is not None:
        return _field_values(base, item, where)
    if not isinstance(item, (list, tuple)):
        raise TypeError(f"{where}: expected elements of type {base!r} (tuples or lists), "
                        f"got {_tname(item)}")
    return _field_values(base, item, where)


def _field_order(st, names: tuple, where: Where, what: str) -> tuple:
    """The names of a named value (structured array, NamedTuple, ...) to read, in
    the order of st's fields. A record matches by name: the value's names must
    be the record's, in any order. A tuple has no names: by position."""
    if isinstance(st, SRecord):
        if sorted(names) != sorted(st.field_names):
            raise TypeError(f"{where}: expected a {st.name} record with fields "
                            f"{', '.join(st.field_names)} (in any order), got {what} with "
                            f"fields {', '.join(names)}")
        return st.field_names
    if len(names) != len(st.elems):
        raise TypeError(f"{where}: expected {len(st.elems)} values for {st!r}, got {what} "
                        f"with {len(names)} fields")
    return tuple(names)


def _field_values(st, v, where: Where) -> list:
    """The values of a tuple/record value v in st's field order: by name where v
    has names (NamedTuple instances, numpy structured scalars), else by position."""
    if isinstance(v, np.void) and v.dtype.names is not None:
        order = _field_order(st, v.dtype.names, where, "a structured value")
        return [v[name] for name in order]
    n = len(st.field_names) if isinstance(st, SRecord) else len(st.elems)
    if len(v) != n:
        raise TypeError(f"{where}: expected {n} values for {st!r}, got {len(v)}")
    names = getattr(type(v), "_fields", None)
    if isinstance(st, SRecord) and names is not None:
        order = _field_order(st, tuple(names), where, type(v).__name__)
        return [getattr(v, name) for name in order]
    return list(v)


# ---------------------------------------------------------------------------
# Any surface type


def convert_value(st: SType, value, where, *, lenient: bool = False, keep_device: bool = False):
    """A user value -> canonical value of surface type st (see module doc).

    `lenient` is for values produced by Python mode (results): it also
    accepts same-kind numpy casts, range-checked. `keep_device` (a backend
    that takes DeviceArrays): a DeviceArray of exactly the element type and
    rank stays one; otherwise a DeviceArray converts as np.asarray(value).
    """
    where = _where(where)
    if keep_device and is_device_array(value) and not isinstance(st, SScalar):
        return _device_array(st, value, where)      # (a 0-d one for a scalar: read back)
    if keep_device and is_device_struct(value) and value.stype == st:
        return _nest(st, iter(value.leaves))
    value = _plain(value, where)
    if isinstance(st, SScalar):
        return convert_scalar(st.t, value, where, lenient=lenient)
    if isinstance(st, (STuple, SRecord)):
        if not isinstance(value, (tuple, list)) and not (
                isinstance(value, np.void) and value.dtype.names is not None):
            kind = "record" if isinstance(st, SRecord) else "tuple"
            raise TypeError(f"{where}: expected a {kind} {st!r}, got {_tname(value)}")
        value = _field_values(st, value, where)
        if isinstance(st, SRecord):
            return tuple(convert_value(ft, v, where.sub(f".{fn}"), lenient=lenient,
                                       keep_device=keep_device)
                         for (fn, ft), v in zip(st.fields, value))
        return tuple(convert_value(et, v, where.sub(f"[{i}]"), lenient=lenient,
                                   keep_device=keep_device)
                     for i, (et, v) in enumerate(zip(st.elems, value)))
    if isinstance(st, SArray):
        k, base = stype_rank(st), stype_base(st)
        if isinstance(base, SScalar):
            return _scalar_array(base.t, k, value, where, lenient)
        return _struct_array(st, k, base, value, where, lenient)
    raise TypeError(f"not a surface type: {st!r}")


def _device_array(st: SType, value, where: Where):
    """A DeviceArray argument kept on the device: its type must be exact."""
    if isinstance(st, SArray) and isinstance(stype_base(st), SScalar):
        t, k = stype_base(st).t, stype_rank(st)
        if value.dtype == t.dtype and value.ndim == k:
            return value
        raise TypeError(f"{where}: expected a rank-{k} array of {t} ({t.dtype}), got a "
                        f"DeviceArray of {value.dtype} with rank {value.ndim} (DeviceArrays "
                        f"are not converted on the device: convert np.asarray(value))")
    raise TypeError(f"{where}: expected {st!r}, got a DeviceArray")


def convert_arg(st: SType, value, name: str, keep_device: bool = False):
    """One entry argument -> canonical; errors name the parameter."""
    return convert_value(st, value, Where("parameter", name), keep_device=keep_device)


_SLOW = object()


def _fast_converter(st: SType, keep_device: bool = False):
    """A converter for the common, already-canonical cases of one parameter
    (a numpy scalar of the exact type, a Python int in range, a Python float
    for f64, a plain C-contiguous ndarray of the exact dtype and rank, and
    with keep_device a DeviceArray of that dtype and rank); it returns _SLOW
    for anything else, which then takes the full path."""
    if isinstance(st, SScalar):
        t = st.t
        nt = t.numpy_type
        if t.is_int:
            info = np.iinfo(t.dtype)
            lo, hi = int(info.min), int(info.max)
            return lambda v: (v if type(v) is nt else
                              nt(v) if type(v) is int and lo <= v <= hi else _SLOW)
        if t is F64:
            return lambda v: v if type(v) is nt else nt(v) if type(v) is float else _SLOW
        return lambda v: v if type(v) is nt else _SLOW
    if isinstance(st, SArray) and isinstance(stype_base(st), SScalar):
        dt, k = np.dtype(stype_base(st).t.dtype), stype_rank(st)
        ndarray = np.ndarray

        def array(v):
            t = type(v)
            if t is ndarray:
                return (v if (v.dtype is dt or v.dtype == dt) and v.ndim == k
                        and v.flags.c_contiguous else _SLOW)
            if keep_device and getattr(t, "__pyshark_device_array__", False) is True:
                return v if (v.dtype is dt or v.dtype == dt) and len(v.shape) == k else _SLOW
            return _SLOW
        return array
    return lambda v: _SLOW


_FAST: dict = {}


def bind_args(entry, args: tuple, kwargs: dict, keep_device: bool = False) -> list:
    """Matches args/kwargs to an ir.Entry's parameters and converts them.
    `keep_device`: the backend takes DeviceArrays (see convert_value)."""
    params = entry.params
    if not kwargs and len(args) == len(params):
        fast = _FAST.get((id(entry), keep_device))
        if fast is None or fast[0] is not entry:
            fast = _FAST[(id(entry), keep_device)] = (
                entry, [_fast_converter(p.stype, keep_device) for p in params])
        out = [f(v) for f, v in zip(fast[1], args)]
        for o in out:
            if o is _SLOW:
                break
        else:
            return out
        return [convert_arg(p.stype, v, p.name, keep_device) if o is _SLOW else o
                for p, v, o in zip(params, args, out)]
    names = [p.name for p in params]
    sig = f"{entry.name}({', '.join(names)})"
    if len(args) > len(params):
        raise TypeError(f"{sig} takes {len(params)} argument{'s' * (len(params) != 1)}, "
                        f"got {len(args) + len(kwargs)}")
    values = list(args) + [_MISSING] * (len(params) - len(args))
    for key, v in kwargs.items():
        if key not in names:
            raise TypeError(f"{sig} got an unexpected keyword argument {key!r}")
        i = names.index(key)
        if values[i] is not _MISSING:
            raise TypeError(f"{sig} got multiple values for argument {key!r}")
        values[i] = v
    missing = [n for n, v in zip(names, values) if v is _MISSING]
    if missing:
        raise TypeError(f"{sig} takes {len(params)} argument{'s' * (len(params) != 1)}, "
                        f"got {len(params) - len(missing)} (missing {', '.join(missing)})")
    return [convert_arg(p.stype, v, p.name, keep_device) for p, v in zip(params, values)]


_MISSING = object()


# ---------------------------------------------------------------------------
# Canonical <-> flat core values


def _parts(st: SType):
    """The sub-types a canonical tuple of type st holds, or None for a leaf."""
    if isinstance(st, STuple):
        return list(st.elems)
    if isinstance(st, SRecord):
        return list(st.field_types)
    if isinstance(st, SArray):
        base = stype_base(st)
        if isinstance(base, SScalar):
            return None
        k = stype_rank(st)
        return [lift(ft, k) for _, ft in fields_of(base)]
    return None


def flatten_value(st: SType, canon) -> list:
    """Canonical value -> flat core values in flatten_stype order."""
    parts = _parts(st)
    if parts is None:
        return [canon]
    return [x for pt, c in zip(parts, canon) for x in flatten_value(pt, c)]


def unflatten_value(st: SType, flat) -> object:
    """Flat core values (list or iterator) -> canonical value, checking types."""
    it = iter(flat)
    out = _unflatten(st, it)
    if next(it, _MISSING) is not _MISSING:
        raise InternalCompilerError(f"too many flat values for {st!r}")
    return out


def _unflatten(st: SType, it):
    parts = _parts(st)
    if parts is not None:
        return tuple(_unflatten(pt, it) for pt in parts)
    try:
        v = next(it)
    except StopIteration:
        raise InternalCompilerError(f"too few flat values for {st!r}") from None
    if isinstance(st, SScalar):
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = v[()]
        if type(v) is not st.t.numpy_type:
            if isinstance(v, (np.generic, int, float, bool)):
                return st.t.numpy_type(v)
            raise InternalCompilerError(f"backend returned {_tname(v)} for {st!r}")
        return v
    t, k = stype_base(st).t, stype_rank(st)
    if not isinstance(v, np.ndarray) or v.ndim != k or v.dtype != t.dtype:
        raise InternalCompilerError(f"backend returned {_tname(v)} for {st!r}")
    return v


# ---------------------------------------------------------------------------
# The call path of the compiled backends: flatten -> run -> unflatten


class FlatCall:
    """The flatten -> run -> unflatten path of one entry, decided once.

    `flat_params`: every parameter is a scalar or an array of scalars, so the
    canonical arguments are already the flat ones. `scalar_result`: the
    result is one scalar, returned as run gives it when of the exact type.
    Backends that marshal on their own fast path read these two flags and
    call `args` / `output` otherwise."""

    __slots__ = ("entry", "flat_params", "scalar_result", "ret_type")

    def __init__(self, entry):
        self.entry = entry
        self.flat_params = all(_parts(p.stype) is None for p in entry.params)
        self.scalar_result = isinstance(entry.ret, SScalar)
        self.ret_type = entry.ret.t.numpy_type if self.scalar_result else None

    def args(self, canon_args: list) -> list:
        """Canonical arguments -> the flat core arguments."""
        if self.flat_params:
            return canon_args
        return [x for p, a in zip(self.entry.params, canon_args)
                for x in flatten_value(p.stype, a)]

    def output(self, flat_results: list):
        """The flat core results -> the user-facing result."""
        if self.scalar_result and len(flat_results) == 1 \
                and type(flat_results[0]) is self.ret_type:
            return flat_results[0]
        ret = self.entry.ret
        return to_output(ret, unflatten_value(ret, flat_results))

    def __call__(self, canon_args: list, run: Callable[[list], list]):
        return self.output(run(self.args(canon_args)))


def _nest(st: SType, it):
    """The canonical (nested tuple) form of st over flat leaves, unchecked."""
    parts = _parts(st)
    if parts is None:
        return next(it)
    return tuple(_nest(pt, it) for pt in parts)


def call_flat(entry, canon_args: list, run: Callable[[list], list]):
    """Calls `run` (flat core arguments -> flat core results) on an entry's
    canonical arguments and returns its result in the output format."""
    return FlatCall(entry)(canon_args, run)


# ---------------------------------------------------------------------------
# Output format


@functools.lru_cache(maxsize=None)
def record_class(rec: SRecord) -> type:
    """A NamedTuple-like class per record type, for compiled backends."""
    return collections.namedtuple(rec.name, rec.field_names)


RecordClassFor = Callable[[SRecord], type]


def to_output(st: SType, canon, record_class_for: RecordClassFor = record_class):
    """Canonical value -> the user-facing value (the same for every backend)."""
    if isinstance(st, SScalar):
        return canon if type(canon) is st.t.numpy_type else st.t.numpy_type(canon)
    if isinstance(st, STuple):
        return tuple(to_output(e, c, record_class_for) for e, c in zip(st.elems, canon))
    if isinstance(st, SRecord):
        vals = [to_output(ft, c, record_class_for) for ft, c in zip(st.field_types, canon)]
        return record_class_for(st)(*vals)
    base = stype_base(st)
    if isinstance(base, SScalar):
        return canon
    k = stype_rank(st)
    shape = _lead_shape(canon)[:k]
    out = np.empty(shape, dtype=_elem_dtype(base, canon, k))
    _fill(out, base, canon)
    return out


def _lead_shape(tree) -> tuple[int, ...]:
    while isinstance(tree, tuple):
        tree = tree[0]
    return tree.shape


def _elem_dtype(st: SType, tree, k: int) -> np.dtype:
    """The numpy dtype of one element of an Array^k of st held as `tree`."""
    m, base = stype_rank(st), stype_base(st)
    if isinstance(base, SScalar):
        sub = tree.shape[k:]
        return np.dtype((base.t.dtype, sub)) if m else base.t.dtype
    inner = np.dtype([(fn, _elem_dtype(ft, c, k + m))
                      for (fn, ft), c in zip(fields_of(base), tree)])
    return np.dtype((inner, _lead_shape(tree)[k:k + m])) if m else inner


def _fill(view: np.ndarray, base, tree) -> None:
    for (fn, ft), c in zip(fields_of(base), tree):
        fb = stype_base(ft)
        if isinstance(fb, SScalar):
            view[fn] = c
        else:
            _fill(view[fn], fb, c)


def output_from_value(st: SType, value, where="result", *,
                      record_class_for: RecordClassFor = record_class, lenient: bool = True):
    """Any accepted value (Python mode result, JSON expected value) -> output format."""
    where = where if isinstance(where, Where) else Where("value", str(where))
    return to_output(st, convert_value(st, value, where, lenient=lenient), record_class_for)
