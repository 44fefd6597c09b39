"""Test-side conversion of JSON case values to declared PyShark types, and comparison.

Deliberately independent of pyshark.prelude.convert (the prelude's own
conversion is cross-checked against it), so the conformance run does not
test the prelude with itself.
"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
import typing

import numpy as np

import pyshark.prelude as ps
from pyshark.errors import ShapeError
from pyshark.testing import RAISES, conformance_dir

CONFORMANCE = conformance_dir()

SCALARS = {int: np.int64, float: np.float64, bool: np.bool_}


def scalar_class(t):
    if t in SCALARS:
        return SCALARS[t]
    if isinstance(t, type) and issubclass(t, np.generic):
        return t
    return None


def is_record(t):
    return isinstance(t, type) and issubclass(t, tuple) and hasattr(t, "_fields")


def field_types(t):
    if is_record(t):
        hints = typing.get_type_hints(t)
        return [hints[f] for f in t._fields]
    if typing.get_origin(t) is tuple:
        return list(typing.get_args(t))
    return None


def _regular_shape(v, rank):
    """The shape of a nested list of `rank` levels, ShapeError if irregular."""
    if rank == 0:
        return ()
    if not isinstance(v, list):
        raise ShapeError("expected a list")
    if not v:
        return (0,) * rank
    inner = [_regular_shape(x, rank - 1) for x in v]
    if any(s != inner[0] for s in inner):
        raise ShapeError("irregular nested list")
    return (len(v),) + inner[0]


def _flat(v, rank):
    if rank == 0:
        return [v]
    return [y for x in v for y in _flat(x, rank - 1)]


def to_value(v, t):
    """A JSON value as a value of declared type t."""
    cls = scalar_class(t)
    if cls is not None:
        return cls(v)
    fts = field_types(t)
    if fts is not None:
        parts = [to_value(x, ft) for x, ft in zip(v, fts, strict=True)]
        return t(*parts) if is_record(t) else tuple(parts)
    assert isinstance(t, ps.ArrayAlias), t
    rank, base = t.rank, t.base
    shape = _regular_shape(v, rank)
    leaves = _flat(v, rank)
    cls = scalar_class(base)
    if cls is not None:
        return np.array(leaves, dtype=cls).reshape(shape)
    # array of tuples/records: one field array per field, of the same shape
    fts = field_types(base)
    elems = [to_value(x, base) for x in leaves]
    fields = [_field_array([e[k] for e in elems], ft, shape) for k, ft in enumerate(fts)]
    return ps.TupleArray(fields, base if is_record(base) else tuple, rank)


def _field_array(column, ft, shape):
    cls = scalar_class(ft)
    if cls is not None:
        return np.array(column, dtype=cls).reshape(shape)
    if isinstance(ft, ps.ArrayAlias):
        inner = ft.rank
        if column:
            return np.stack(column).reshape(shape + column[0].shape)
        return np.zeros(shape + (0,) * inner, dtype=scalar_class(ft.base))
    sub = field_types(ft)
    fields = [_field_array([c[k] for c in column], sft, shape) for k, sft in enumerate(sub)]
    return ps.TupleArray(fields, ft if is_record(ft) else tuple, len(shape))


# --- comparison ---------------------------------------------------------------------------
def tolerance(t):
    return (1e-5, 1e-6) if t is np.float32 else (1e-12, 1e-12)


def _as_list(got):
    if isinstance(got, ps.TupleArray):
        return list(got)
    if isinstance(got, np.ndarray):
        return list(got)
    assert isinstance(got, list), f"expected an array, got {type(got).__name__}"
    return got


def compare(got, want, t, path="result"):
    """Assert that got (a Python-mode result) equals the JSON value want, at type t."""
    cls = scalar_class(t)
    if cls is not None:
        if isinstance(got, np.ndarray):
            assert got.ndim == 0, f"{path}: expected a scalar, got an array"
            got = got[()]
        if isinstance(got, np.generic):
            assert got.dtype == np.dtype(cls), f"{path}: dtype {got.dtype}, declared {np.dtype(cls)}"
        if cls is np.bool_:
            assert isinstance(got, (bool, np.bool_)), f"{path}: {got!r} is not a bool"
            assert bool(got) == want, f"{path}: {got!r} != {want!r}"
        elif issubclass(cls, np.integer):
            assert isinstance(got, (int, np.integer)) and not isinstance(got, (bool, np.bool_)), \
                f"{path}: {got!r} is not an integer"
            assert int(got) == want, f"{path}: {got!r} != {want!r}"
        else:
            g, w = float(got), float(want)
            if math.isnan(w):
                assert math.isnan(g), f"{path}: {g!r} != NaN"
            elif math.isinf(w):
                assert g == w, f"{path}: {g!r} != {w!r}"
            else:
                rtol, atol = tolerance(cls)
                assert abs(g - w) <= atol + rtol * abs(w), f"{path}: {g!r} != {w!r}"
        return
    fts = field_types(t)
    if fts is not None:
        assert isinstance(got, tuple), f"{path}: expected a tuple, got {type(got).__name__}"
        if is_record(t):
            assert type(got) is t, f"{path}: expected a {t.__name__}, got {type(got).__name__}"
        assert len(got) == len(fts) == len(want), f"{path}: tuple lengths differ"
        for k, (g, w, ft) in enumerate(zip(got, want, fts)):
            compare(g, w, ft, f"{path}[{k}]")
        return
    assert isinstance(t, ps.ArrayAlias), t
    if isinstance(got, np.ndarray) and got.size > 0 and scalar_class(t.base) is not None:
        want_dt = np.dtype(scalar_class(t.base))
        assert got.dtype == want_dt, f"{path}: dtype {got.dtype}, declared {want_dt}"
        assert got.ndim == t.rank, f"{path}: rank {got.ndim}, declared {t.rank}"
    items = _as_list(got)
    assert isinstance(want, list)
    assert len(items) == len(want), f"{path}: length {len(items)} != {len(want)}"
    for k, (g, w) in enumerate(zip(items, want)):
        compare(g, w, t.elem, f"{path}[{k}]")


# --- loading -----------------------------------------------------------------------------------
def load_module(name):
    path = CONFORMANCE / f"{name}.py"
    modname = f"pyshark_conformance_{name}"
    if modname in sys.modules:
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod


def load_cases(name):
    with open(CONFORMANCE / f"{name}.cases.json") as fh:
        return json.load(fh)["cases"]


def module_names():
    return sorted(p.stem for p in CONFORMANCE.glob("*.py"))


EXCEPTIONS = RAISES      # the runner's own table: what a case's 'raises' may name


def run_case(mod, case):
    fn = getattr(mod, case["entry"])
    hints = typing.get_type_hints(fn)
    params = [p for p in fn.__code__.co_varnames[:fn.__code__.co_argcount]] \
        if not hasattr(fn, "__wrapped__") else \
        list(fn.__wrapped__.__code__.co_varnames[:fn.__wrapped__.__code__.co_argcount])

    def call():
        args = [to_value(a, hints[p]) for a, p in zip(case["args"], params, strict=True)]
        return fn(*args)

    return call, hints["return"]
