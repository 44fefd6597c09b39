"""Building arrays from per-element results, and the element type of empty ones.

Rules (the prelude's reference semantics):

* Scalars: the dtype is that of the first result that is a numpy scalar; with
  only Python scalars it is float64 if any is a float, else int64 if any is an
  int, else bool. The other results are converted to it (numpy scalars with
  astype, i.e. C casts), so `lambda x: x if x > 0.0 else 0.0` over f32 gives
  f32, as the compiler does with a weak 0.0.
* numpy arrays (and Python lists, converted first) are stacked; different
  shapes raise ShapeError. The dtype is the first one's.
* Tuples / NamedTuples give a TupleArray of their fields, column by column,
  recursively; arrays of tuples stack into a TupleArray of higher rank.
* Empty results of map, tabulate and tabulate_2d keep their inner
  dimensions (docs/language.md, "Empty results"): those of what the
  function returns for a stand-in argument, the zero element of each mapped
  array (index 0 for tabulate), called once (`stand_in_dims`); 0 where it
  raises.
* Empty results take their element type, in this order, from
  1. the return annotation of a named function (typing.get_type_hints; an
     `Array[...]` return adds dimensions of size 0),
  2. the type the compiled program gives the call's result, when the module
     was translated (entries called through the Wrapper's python backend; see
     static.py). It is exact; when it has several flat values (tuples,
     records) their nesting and record classes come from the probe below
     when it answers with the same number of values, else they form one
     plain tuple,
  3. calling the function on made-up values of the inputs' element types:
     zeros, then ones, then minus ones (signed and float elements), until a
     result holds only typed (numpy) scalars, with any exception meaning "no
     answer" and a bound on the number of executed lines so that a loop that
     never ends on those values cannot hang the probe. A function that fails
     on every made-up value (`lambda i: xs[i + 1] - xs[i]` when `xs` has one
     element) gives no answer, and
  4. float64 of rank 1.
  So a module called directly (without the Wrapper) can only guess in step 3
  and 4; through the Wrapper every empty result has the compiled type.
"""
from __future__ import annotations

import builtins
import sys
import typing
import warnings

import numpy as np

from ..errors import ShapeError
from .scalars import ArrayAlias
from .tuple_array import TupleArray, build_tuple, is_record_class

_PY_SCALARS = (builtins.bool, builtins.int, builtins.float)


class Template:
    """An element type: a scalar dtype with inner dims, or a tuple/record of
    element types with inner dims (an array of tuples as an element)."""

    __slots__ = ("dtype", "make", "fields", "inner", "typed")

    def __init__(self, dtype=None, make=None, fields=None, inner=(), typed=True):
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.make = make
        self.fields = fields
        self.inner = tuple(inner)
        self.typed = typed  # False when learned from a weak Python scalar

    @property
    def is_tuple(self):
        return self.fields is not None

    def with_outer(self, dims):
        return Template(self.dtype, self.make, self.fields, tuple(dims) + self.inner, self.typed)

    def fully_typed(self):
        if self.is_tuple:
            return builtins.all(f.fully_typed() for f in self.fields)
        return self.typed


F64 = Template(np.float64, typed=False)


# --- templates -------------------------------------------------------------------------
def template_of_value(v):
    """The element type of a value, or None."""
    if isinstance(v, np.ndarray):
        if v.dtype.names is not None:
            return template_of_value(TupleArray.from_structured(v))
        return Template(v.dtype, inner=v.shape)
    if isinstance(v, np.generic):
        return Template(v.dtype)
    if isinstance(v, builtins.bool):
        return Template(np.bool_, typed=False)
    if isinstance(v, builtins.int):
        return Template(np.int64, typed=False)
    if isinstance(v, builtins.float):
        return Template(np.float64, typed=False)
    if isinstance(v, TupleArray):
        return Template(make=v.make, fields=[_field_template(f, v.rank) for f in v.fields], inner=v.shape)
    if isinstance(v, tuple):
        make = type(v) if is_record_class(type(v)) else tuple
        fields = [template_of_value(x) for x in v]
        if builtins.any(f is None for f in fields):
            return None
        return Template(make=make, fields=fields)
    if isinstance(v, list):
        try:
            return template_of_value(collect(v))
        except Exception:
            return None
    return None


def _field_template(f, rank):
    if isinstance(f, TupleArray):
        return Template(make=f.make, fields=[_field_template(g, f.rank) for g in f.fields], inner=f.shape[rank:])
    return Template(f.dtype, inner=f.shape[rank:])


def element_template(xs):
    """The element type of an array (numpy, TupleArray or list), or None."""
    if isinstance(xs, np.ndarray):
        if xs.ndim == 0:
            return None
        return Template(xs.dtype, inner=xs.shape[1:])
    if isinstance(xs, TupleArray):
        return Template(make=xs.make, fields=[_field_template(f, xs.rank) for f in xs.fields], inner=xs.shape[1:])
    if isinstance(xs, list) and xs:
        return template_of_value(xs[0])
    return None


def template_of_type(t):
    """The element type an annotation describes, or None (inner sizes unknown: 0)."""
    from .scalars import _scalar_class
    if isinstance(t, ArrayAlias):
        inner = template_of_type(t.elem)
        return None if inner is None else inner.with_outer((0,))
    try:
        return Template(_scalar_class(t))
    except TypeError:
        pass
    if is_record_class(t):
        try:
            hints = typing.get_type_hints(t)
        except Exception:
            return None
        fields = [template_of_type(hints.get(name)) for name in t._fields]
        if builtins.any(f is None for f in fields):
            return None
        return Template(make=t, fields=fields)
    if typing.get_origin(t) is tuple:
        args = typing.get_args(t)
        if not args or Ellipsis in args:
            return None
        fields = [template_of_type(a) for a in args]
        if builtins.any(f is None for f in fields):
            return None
        return Template(make=tuple, fields=fields)
    return None


# --- values from templates ---------------------------------------------------------------
def empty_from_template(tpl, lead):
    """An array of shape `lead` (containing a 0) of elements of type tpl."""
    return filled_from_template(tpl, lead, 0)


def filled_from_template(tpl, lead, value):
    lead = tuple(lead)
    if tpl.is_tuple:
        dims = lead + tpl.inner
        return TupleArray([filled_from_template(f, dims, value) for f in tpl.fields], tpl.make, len(dims))
    return np.full(lead + tpl.inner, value, dtype=tpl.dtype)


def value_from_template(tpl, value=0):
    """One element of type tpl, every scalar in it equal to `value`."""
    if tpl.is_tuple:
        if tpl.inner:
            return filled_from_template(Template(make=tpl.make, fields=tpl.fields), tpl.inner, value)
        return build_tuple(tpl.make, [value_from_template(f, value) for f in tpl.fields])
    if tpl.inner:
        return np.full(tpl.inner, value, dtype=tpl.dtype)
    return tpl.dtype.type(value)


# --- collecting results ----------------------------------------------------------------------
def _is_scalar(v):
    return isinstance(v, (np.generic,) + _PY_SCALARS) or (isinstance(v, np.ndarray) and v.ndim == 0)


def scalar_dtype(items):
    """The dtype rule for a list of scalar results (see the module docstring)."""
    saw_float = saw_int = False
    for v in items:
        if isinstance(v, np.ndarray):
            return v.dtype
        if isinstance(v, np.generic):
            return v.dtype
        if isinstance(v, builtins.bool):
            continue
        if isinstance(v, builtins.int):
            saw_int = True
        elif isinstance(v, builtins.float):
            saw_float = True
    if saw_float:
        return np.dtype(np.float64)
    if saw_int:
        return np.dtype(np.int64)
    return np.dtype(np.bool_)


def to_dtype(v, dt):
    """A scalar as dtype dt: numpy values by C cast (wrapping), Python ones exactly."""
    if isinstance(v, (np.generic, np.ndarray)):
        return np.asarray(v).astype(dt)[()]
    return dt.type(v)


def collect(items, hint=None):
    """One array from a list of per-element results (see the module docstring)."""
    if len(items) == 0:
        return empty_from_template(hint if hint is not None else F64, (0,))
    first = items[0]
    if isinstance(first, tuple):
        return _collect_tuples(items)
    if builtins.any(isinstance(v, TupleArray) for v in items):
        if not builtins.all(isinstance(v, (TupleArray, list)) for v in items):
            raise ShapeError("irregular array: arrays of tuples beside other values")
        return _stack_tuple_arrays([as_array(v) for v in items])
    if builtins.any(isinstance(v, (list, np.ndarray)) and not (isinstance(v, np.ndarray) and v.ndim == 0)
                    for v in items):
        for v in items:
            if _is_scalar(v) or isinstance(v, tuple):
                raise ShapeError("irregular array: arrays beside scalars or tuples")
        arrays = [as_array(v) for v in items]
        if builtins.any(isinstance(a, TupleArray) for a in arrays):
            return _stack_tuple_arrays(arrays)
        return _stack(arrays)
    for v in items:
        if not _is_scalar(v):
            raise TypeError(f"cannot put a {type(v).__name__} in a PyShark array")
    dt = scalar_dtype(items)
    return np.array([to_dtype(v, dt) for v in items], dtype=dt)


def _collect_tuples(items):
    first = items[0]
    make = type(first) if is_record_class(type(first)) else tuple
    n = len(first)
    for v in items:
        if not isinstance(v, tuple) or len(v) != n:
            raise ShapeError("array elements differ: tuples of different lengths, or tuples beside non-tuples")
    columns = [[v[k] for v in items] for k in range(n)]
    return TupleArray([collect(c) for c in columns], make, 1)


def _stack(arrays):
    shape = arrays[0].shape
    for a in arrays[1:]:
        if a.shape != shape:
            raise ShapeError(f"irregular array: rows of shapes {shape} and {a.shape}")
        if not isinstance(a, np.ndarray):
            raise ShapeError("irregular array: arrays of tuples beside arrays of scalars")
    dt = arrays[0].dtype
    return np.stack([a.astype(dt, copy=False) for a in arrays])


def _stack_tuple_arrays(arrays):
    first = arrays[0]
    for a in arrays:
        if not isinstance(a, TupleArray) or a.shape != first.shape or len(a.fields) != len(first.fields):
            raise ShapeError("irregular array of tuples")
    fields = []
    for k in range(len(first.fields)):
        col = [a.fields[k] for a in arrays]
        if isinstance(col[0], TupleArray):
            fields.append(_stack_tuple_arrays(col))
        else:
            fields.append(_stack(col))
    return TupleArray(fields, first.make, first.rank + 1)


def untyped_empty(xs) -> bool:
    """True for a Python list with no element at all (`[]`, `[[], []]`): in Python
    mode an empty comprehension or literal, which has no element type of its own."""
    return isinstance(xs, list) and builtins.all(untyped_empty(x) for x in xs)


def retype_empty(result, flat):
    """An empty array result (ndarray or TupleArray) of the compiled program's
    flat result types [(dtype, rank), ...] (outer dimensions included)."""
    if flat is None or not isinstance(result, (np.ndarray, TupleArray)) or _size(result) != 0:
        return result
    if len(flat) == 1 and isinstance(result, np.ndarray):
        dtype, rank = flat[0]
        shape = result.shape if result.ndim == rank else (0,) * rank
        return np.zeros(shape, dtype)
    if builtins.any(rank < 1 for _, rank in flat):
        return result
    return empty_from_template(template_from_flat([(d, r - 1) for d, r in flat]), (0,))


def _size(arr):
    n = 1
    for d in arr.shape:
        n *= d
    return n


def as_array(xs):
    """A numpy array or TupleArray for an array value (lists are converted)."""
    if isinstance(xs, (np.ndarray, TupleArray)):
        if isinstance(xs, np.ndarray) and xs.dtype.names is not None:
            return TupleArray.from_structured(xs)
        return xs
    if isinstance(xs, (list, range)):
        return collect(list(xs))
    raise TypeError(f"expected an array, got {type(xs).__name__}")


# --- learning the element type of an empty result -------------------------------------------------
class _ProbeBudget(Exception):
    pass


_PROBE_LINES = 20000


def annotation_template(fn):
    """The return type of a named function as a template, or None."""
    if not callable(fn) or getattr(fn, "__name__", "") == "<lambda>":
        return None
    target = getattr(fn, "__wrapped__", fn)
    try:
        hints = typing.get_type_hints(target)
    except Exception:
        return None
    if "return" not in hints:
        return None
    return template_of_type(hints["return"])


class _LineBudget:
    """A trace function that raises _ProbeBudget after _PROBE_LINES lines
    (an object returning itself, not a closure naming itself: no cycle)."""

    def __init__(self):
        self.count = 0

    def __call__(self, frame, event, arg):
        if event == "line":
            self.count += 1
            if self.count > _PROBE_LINES:
                raise _ProbeBudget()
        return self


def _probe(fn, args):
    """fn(*args), or None if it raises or runs too long."""
    local = _LineBudget()

    def global_trace(frame, event, arg):
        return local

    old = sys.gettrace()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                sys.settrace(global_trace)
                try:
                    return template_of_value(fn(*args))
                finally:
                    sys.settrace(old)
    except BaseException as e:  # any failure means "no answer"
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return None


def _probe_values(arg_templates):
    """The made-up values the probe tries: 0, 1, and -1 where every leaf can hold it."""
    values = [0, 1]
    if builtins.all(builtins.all(d.kind in "if" for d in _leaf_dtypes(t)) for t in arg_templates):
        values.append(-1)
    return values


def _leaf_dtypes(tpl):
    if tpl.is_tuple:
        return [d for f in tpl.fields for d in _leaf_dtypes(f)]
    return [tpl.dtype]


def probe_template(fn, arg_templates):
    """The element type fn returns when called on made-up values, or None."""
    if arg_templates is None or not builtins.all(t is not None for t in arg_templates):
        return None
    first = None
    for value in _probe_values(arg_templates):
        got = _probe(fn, [value_from_template(t, value) for t in arg_templates])
        if got is not None and got.fully_typed():
            return got
        if first is None:
            first = got
    return first


def _leaf(dtype, rank):
    return Template(dtype, inner=(0,) * rank)


def count_leaves(tpl):
    """The number of flat (core IR) values of an element of type tpl."""
    return builtins.sum(count_leaves(f) for f in tpl.fields) if tpl.is_tuple else 1


def _retype(tpl, flat):
    """tpl's nesting and record classes with the leaf types taken from `flat` (an iterator)."""
    if tpl.is_tuple:
        return Template(make=tpl.make, fields=[_retype(f, flat) for f in tpl.fields], inner=tpl.inner)
    dtype, rank = next(flat)
    return _leaf(dtype, rank)


def template_from_flat(flat, structure=None):
    """A template from the compiled program's flat element types [(dtype, rank), ...];
    several values take their nesting from `structure` when it has as many leaves."""
    if structure is not None and structure.is_tuple and not structure.inner \
            and count_leaves(structure) == len(flat):
        return _retype(structure, iter(flat))
    if len(flat) == 1:
        return _leaf(*flat[0])
    return Template(make=tuple, fields=[_leaf(*t) for t in flat])


def result_template(fn, arg_templates, static=None):
    """The element type fn returns for elements of the given types (or F64).
    `static` (optional) returns the compiled program's flat element types or None."""
    tpl = annotation_template(fn)
    if tpl is not None:
        return tpl
    flat = static() if static is not None else None
    if flat is not None:
        structure = probe_template(fn, arg_templates) if len(flat) > 1 else None
        return template_from_flat(flat, structure)
    tpl = probe_template(fn, arg_templates)
    return tpl if tpl is not None else F64


# --- the inner dimensions of an empty map's result ----------------------------------------------
def stand_in_dims(tpl, fn, arg_templates):
    """tpl with the inner dimensions of what fn returns for the stand-in
    argument (zeros of arg_templates' types and shapes), called once as
    Python mode runs code: numpy's warnings off, but an integer division by
    zero raising (semantics.py; a bare np.errstate(all="ignore") would make
    it 0). Every inner dimension is 0 where the call raises or an argument's
    type is unknown. The types stay tpl's."""
    if not _has_array(tpl):
        return tpl
    from .semantics import python_semantics
    got = None
    if arg_templates is not None and builtins.all(t is not None for t in arg_templates):
        args = [value_from_template(t, 0) for t in arg_templates]
        try:
            with python_semantics():
                got = template_of_value(fn(*args))
        except Exception:
            got = None
    return _with_dims(tpl, got)


def _has_array(tpl) -> bool:
    if tpl.is_tuple:
        return builtins.bool(tpl.inner) or builtins.any(_has_array(f) for f in tpl.fields)
    return builtins.bool(tpl.inner)


def _with_dims(tpl, got):
    """tpl with got's inner dimensions where got (a template or None) has
    the same structure; 0 elsewhere."""
    if tpl.is_tuple:
        same = got is not None and got.is_tuple and len(got.fields) == len(tpl.fields)
        subs = got.fields if same else [None] * len(tpl.fields)
        return Template(make=tpl.make, fields=[_with_dims(f, g) for f, g in zip(tpl.fields, subs)],
                        inner=_dims(tpl.inner, got.inner if same else None), typed=tpl.typed)
    same = got is not None and not got.is_tuple
    return Template(tpl.dtype, inner=_dims(tpl.inner, got.inner if same else None),
                    typed=tpl.typed)


def _dims(want: tuple, got) -> tuple:
    """got's dimensions for a rank of len(want), padded with 0 (an empty list
    has no inner dimensions); all 0 when got has more."""
    if got is None or len(got) > len(want):
        return (0,) * len(want)
    return tuple(got) + (0,) * (len(want) - len(got))
