"""Runs conformance cases through translate -> core interpreter.

JSON arguments become flat numpy values by the entry's parameter types;
flat results are rebuilt into nested lists and compared with the expected
values as conformance/README.md says (ints/bools exactly, floats with the
f32/f64 tolerances, NaN == NaN, empty arrays by rank)."""
from __future__ import annotations

import json
import math

import numpy as np

from pyshark.core.types import (SArray, SRecord, SScalar, STuple, flatten_stype, stype_base,
                                stype_rank)
from pyshark.testing import RAISES, conformance_dir

CONFORMANCE = conformance_dir()


def _leaf_fields(st):
    return st.elems if isinstance(st, STuple) else st.field_types


def flatten_arg(value, st) -> list:
    if isinstance(st, SScalar):
        return [st.t.numpy_type(value)]
    if isinstance(st, (STuple, SRecord)):
        return [a for v, t in zip(value, _leaf_fields(st)) for a in flatten_arg(v, t)]
    rank = stype_rank(st)
    base = stype_base(st)
    if isinstance(base, SScalar):
        try:
            arr = np.array(value, dtype=base.t.dtype)
        except ValueError as exc:          # irregular nested list, as the wrapper says
            from pyshark.errors import ShapeError
            raise ShapeError(str(exc)) from None
        if arr.ndim != rank and arr.size == 0:
            arr = arr.reshape((0,) * rank)
        return [arr]
    out = []
    for j, ft in enumerate(_leaf_fields(base)):
        def pick(v, depth):
            return v[j] if depth == 0 else [pick(x, depth - 1) for x in v]
        sub = pick(value, rank)
        wrapped = ft
        for _ in range(rank):
            wrapped = SArray(wrapped)
        out += flatten_arg(sub, wrapped)
    return out


def rebuild_result(flat: list, st):
    flat = list(flat)
    value, rest = _rebuild(flat, st)
    assert not rest
    return value


def _rebuild(flat, st):
    if isinstance(st, SScalar):
        return flat[0], flat[1:]
    if isinstance(st, (STuple, SRecord)):
        out = []
        for t in _leaf_fields(st):
            v, flat = _rebuild(flat, t)
            out.append(v)
        return out, flat
    n = len(flatten_stype(st))
    parts, flat = flat[:n], flat[n:]
    rank = stype_rank(st)
    base = stype_base(st)
    if isinstance(base, SScalar):
        return np.asarray(parts[0]), flat
    # array of tuples: recombine the fields element by element
    fields = []
    rest = list(parts)
    for ft in _leaf_fields(base):
        wrapped = ft
        for _ in range(rank):
            wrapped = SArray(wrapped)
        k = len(flatten_stype(wrapped))
        v, _ = _rebuild(rest[:k], wrapped)
        rest = rest[k:]
        fields.append(v)

    def combine(fs, depth):
        if depth == 0:
            return list(fs)
        length = len(fs[0]) if len(fs) else 0
        return [combine([f[i] for f in fs], depth - 1) for i in range(length)]
    return combine(fields, rank), flat


def compare(got, want, st, path="result") -> str | None:
    """None when got (rebuilt) matches the JSON expected value."""
    if isinstance(st, SScalar):
        t = st.t
        g = np.asarray(got)
        if g.dtype != t.dtype:
            return f"{path}: dtype {g.dtype}, declared {t.dtype}"
        g = g.item()
        if t.is_float:
            if isinstance(want, float) and math.isnan(want):
                return None if math.isnan(g) else f"{path}: {g} != NaN"
            if math.isinf(want):
                return None if g == want else f"{path}: {g} != {want}"
            rtol, atol = (1e-5, 1e-6) if t.bits == 32 else (1e-12, 1e-12)
            return None if abs(g - want) <= atol + rtol * abs(want) else f"{path}: {g!r} != {want!r}"
        ok = isinstance(want, bool) == t.is_bool and g == want
        return None if ok else f"{path}: {g!r} != {want!r}"
    if isinstance(st, (STuple, SRecord)):
        if len(got) != len(want):
            return f"{path}: {len(got)} fields, want {len(want)}"
        for i, (g, w, t) in enumerate(zip(got, want, _leaf_fields(st))):
            m = compare(g, w, t, f"{path}[{i}]")
            if m:
                return m
        return None
    # arrays
    if isinstance(got, np.ndarray):
        if got.ndim != stype_rank(st):
            return f"{path}: rank {got.ndim}, declared {stype_rank(st)}"
        if got.size == 0 and _is_empty(want):
            return None
        if got.dtype != stype_base(st).t.dtype:
            return f"{path}: dtype {got.dtype}, declared {stype_base(st)}"
        got = list(got)
    if len(got) != len(want):
        return f"{path}: length {len(got)}, want {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        m = compare(g, w, st.elem, f"{path}[{i}]")
        if m:
            return m
    return None


def _is_empty(w) -> bool:
    return isinstance(w, list) and (not w or all(_is_empty(x) for x in w))


def load_cases(module: str) -> list[dict]:
    return json.loads((CONFORMANCE / f"{module}.cases.json").read_text())["cases"]


def run_case(program, case) -> str | None:
    """None if the case passes, else what went wrong."""
    from pyshark.core.interp import run_entry
    entry = program.entries[case["entry"]]
    errors = RAISES
    if "raises" in case:
        try:
            flat = [a for v, p in zip(case["args"], entry.params) for a in flatten_arg(v, p.stype)]
            run_entry(program, case["entry"], flat)
        except errors[case["raises"]]:
            return None
        except Exception as exc:  # noqa: BLE001
            return f"raised {type(exc).__name__}: {exc}, want {case['raises']}"
        return f"did not raise {case['raises']}"
    flat = [a for v, p in zip(case["args"], entry.params) for a in flatten_arg(v, p.stype)]
    with np.errstate(all="ignore"):
        out = run_entry(program, case["entry"], flat)
    got = rebuild_result(out, entry.ret)
    return compare(got, case["expected"], entry.ret)
