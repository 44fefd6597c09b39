"""The array expressions and SOACs of core/stand_in.py's abstract evaluation:
each gives the shapes Python mode's prelude gives (so the checks it makes,
such as concat's inner shapes, are Python mode's) and requires the
conditions under which it does not raise."""
from __future__ import annotations

from typing import Optional

from . import ir
from .sizes import Lit, Sym
from .stand_in import EVAL_SCALAR, WIDEN, Arr, Env, StandIn, join, same_value, unknown
from .types import I64, ScalarType


def _index(si: StandIn, e: ir.Index, env):
    a = si.value(e.arr, env)
    for d, i in enumerate(e.idxs):
        si.require(si.in_range(si.value(i, env), a.shape[d], e.wrap_negative))
    k = len(e.idxs)
    if k == len(a.shape):
        return [a.fill]
    return [si.arr(a.shape[k:], a.elem, a.fill)]


def _slice_len(si: StandIn, n, d: ir.SliceDim, env) -> Optional[Sym]:
    """The length of dimension n sliced by d, with Python's clamping."""
    s = si.s
    step = si.value(d.step, env) if d.step is not None else s.i64(1)
    if step is None:
        return None
    si.require(s.bin("ne", step, s.i64(0)))
    if not isinstance(step, Lit) or step.value == 0 or n is None:
        return None
    start = None if d.start is None else si.value(d.start, env)
    stop = None if d.stop is None else si.value(d.stop, env)
    if (d.start is not None and start is None) or (d.stop is not None and stop is None):
        return None
    zero, one = s.i64(0), s.i64(1)
    if step.value > 0:
        lo, hi = zero, n
    else:
        lo, hi = s.i64(-1), s.bin("sub", n, one)

    def clamp(x, default):
        if x is None:
            return default
        wrapped = s.bin("max", s.bin("add", x, n), lo)
        return s.select(s.bin("lt", x, zero), wrapped, s.bin("min", x, hi))
    a = clamp(start, lo if step.value > 0 else hi)
    b = clamp(stop, hi if step.value > 0 else lo)
    span, k = (s.bin("sub", b, a), step) if step.value > 0 else \
        (s.bin("sub", a, b), s.i64(-step.value))
    count = s.bin("floordiv", s.bin("add", span, s.bin("sub", k, one)), k)
    return s.bin("max", count, zero)


def _slice(si: StandIn, e: ir.Slice, env):
    a = si.value(e.arr, env)
    shape = []
    for d, dim in enumerate(e.dims):
        n = a.shape[d]
        if isinstance(dim, ir.SliceDim):
            shape.append(_slice_len(si, n, dim, env))
        else:
            si.require(si.in_range(si.value(dim, env), n, True))
    shape += a.shape[len(e.dims):]
    if not shape:
        return [a.fill]
    return [si.arr(tuple(shape), a.elem, a.fill)]


def _update(si: StandIn, e: ir.Update, env):
    a = si.value(e.arr, env)
    v = si.value(e.value, env)
    for d, i in enumerate(e.idxs):
        si.require(si.in_range(si.value(i, env), a.shape[d], e.wrap_negative))
    k = len(e.idxs)
    if k < len(a.shape):
        si.require(si.same_shape(v, Arr(a.shape[k:], a.elem)))
        v = v.fill
    fill = a.fill if v is a.fill else None
    return [si.arr(a.shape, a.elem, fill)]


def _size(si: StandIn, e: ir.Size, env):
    return [si.value(e.arr, env).shape[e.dim]]


def _arraylit(si: StandIn, e: ir.ArrayLit, env):
    vals = [si.value(a, env) for a in e.elems]
    n = si.s.i64(len(vals))
    t = e.type
    if t.rank == 1:
        fill = vals[0] if vals and all(v is vals[0] for v in vals) else None
        first = vals[0] if vals else si.s.zero(t.elem)
        return [Arr((n,), t.elem, fill, first)]
    if not vals:
        return [si.arr((n,) + (si.s.i64(0),) * (t.rank - 1), t.elem)]
    for v in vals[1:]:
        si.require(si.same_shape(v, vals[0]))
    fill = vals[0].fill if all(v.fill is vals[0].fill for v in vals) else None
    return [si.arr((n,) + vals[0].shape, t.elem, fill)]


def _iota(si: StandIn, e: ir.Iota, env):
    n = si.value(e.n, env)
    n = None if n is None else si.s.nonneg_or_zero(n)
    return [Arr((n,), I64, None, si.s.i64(0))]


def _replicate(si: StandIn, e: ir.Replicate, env):
    n = si.value(e.n, env)
    n = None if n is None else si.s.nonneg_or_zero(n)
    v = si.value(e.value, env)
    if isinstance(v, Arr):
        return [si.arr((n,) + v.shape, v.elem, v.fill)]
    return [si.arr((n,), e.value.type, v)]


def _same(si: StandIn, e, env):
    a = si.value(e.arr, env)
    return [si.arr(a.shape, a.elem, a.fill)]


def _concat(si: StandIn, e: ir.Concat, env):
    parts = [si.value(a, env) for a in e.arrs]
    first = parts[0]
    for p in parts[1:]:            # Python mode compares every part's rows
        si.require(si.same_shape(Arr(p.shape[1:], p.elem), Arr(first.shape[1:], p.elem)))
    n = si.s.i64(0)
    for p in parts:
        n = None if n is None or p.shape[0] is None else si.s.bin("add", n, p.shape[0])
    fill = first.fill if all(p.fill is first.fill for p in parts) else None
    return [si.arr((n,) + first.shape[1:], first.elem, fill)]


def _transpose(si: StandIn, e: ir.Transpose, env):
    a = si.value(e.arr, env)
    return [si.arr((a.shape[1], a.shape[0]) + a.shape[2:], a.elem, a.fill)]


def _reshape(si: StandIn, e: ir.Reshape, env):
    s = si.s
    a = si.value(e.arr, env)
    dims = tuple(si.value(d, env) for d in e.shape)
    for d in dims:
        si.require(None if d is None else s.bin("ge", d, s.i64(0)))
    si.require(si.eq(si.product(dims), si.product(a.shape)))
    return [si.arr(dims, a.elem, a.fill)]


# ---------------------------------------------------------------------------
# SOACs: the function on the first element (what the stand-in or the first
# row gives), widened for accumulators until it stops changing


def _inputs(si: StandIn, e, env, arrs) -> tuple[Optional[Sym], list]:
    w = si.value(e.width, env)
    vals = [si.value(a, env) for a in arrs]
    for v in vals:
        si.require(si.eq(v.shape[0], w))
    return w, vals


def _element(a: Arr, t):
    """What a function mapped over a is given (its first element, or the
    stand-in when a is empty)."""
    if isinstance(t, ScalarType):
        return a.first
    return Arr(a.shape[1:], a.elem, a.first if a.fill is not None else None, a.first)


def _apply(si: StandIn, lam: ir.Lambda, env: Env, args: list) -> tuple[list, Sym]:
    for p, v in zip(lam.params, args):
        env[p.name] = v
    return si.guarded(lam.body, env)


def _if_any(si: StandIn, w, ok: Sym) -> None:
    """The function runs (on the first element) when the width is positive."""
    if w is not None:
        si.require(si.s.or_(si.s.bin("le", w, si.s.i64(0)), ok))


def _map(si: StandIn, e: ir.Map, env):
    s = si.s
    w, arrs = _inputs(si, e, env, e.arrs)
    res, ok = _apply(si, e.lam, env, [_element(a, p.type) for a, p in zip(arrs, e.lam.params)])
    _if_any(si, w, ok)
    some = None if w is None else s.bin("gt", w, s.i64(0))
    empty = iter([si.value(a, env) for a in e.empty_dims]) if e.empty_dims is not None else None
    uniform = all(a.fill is not None for a in arrs)     # every element gives the same
    n = w if e.arrs or w is None else s.nonneg_or_zero(w)
    out = []
    for r, t in zip(res, e.lam.ret):
        if isinstance(t, ScalarType):
            first = None if r is None or some is None else s.select(some, r, s.zero(t))
            out.append(Arr((n,), t, r if uniform else None, first))
            continue
        dims = []
        for d in r.shape:
            alt = next(empty) if empty is not None else (
                None if d is None else s.select(ok, d, s.i64(0)))
            if some is None:
                dims.append(d if d is alt else None)
            elif d is None or alt is None:
                dims.append(alt if some is s.false else d if some is s.true else None)
            else:
                dims.append(s.select(some, d, alt))
        fill = r.fill if uniform else None
        out.append(si.arr((n,) + tuple(dims), t.elem, fill))
    return out


def _fold(si: StandIn, e, env) -> tuple[Optional[Sym], list]:
    """The accumulators of reduce/scan over all elements (joined with the
    neutral elements until stable), and the width."""
    s = si.s
    w, arrs = _inputs(si, e, env, e.arrs)
    acc = [si.value(a, env) for a in e.neutral]
    k = len(acc)
    elems = [_element(a, p.type) for a, p in zip(arrs, e.lam.params[k:])]
    for _ in range(WIDEN):
        res, ok = _apply(si, e.lam, env, acc + elems)
        new = [join(s, a, r) for a, r in zip(acc, res)]
        if all(same_value(a, b) for a, b in zip(new, acc)):
            _if_any(si, w, ok)
            return w, acc
        acc = new
    return w, [unknown(t) for t in e.lam.ret]


def _reduce(si: StandIn, e: ir.Reduce, env):
    w, acc = _fold(si, e, env)
    if isinstance(w, Lit) and w.value <= 0:
        return [si.value(a, env) for a in e.neutral]
    return acc


def _scan(si: StandIn, e: ir.Scan, env):
    w, acc = _fold(si, e, env)
    out = []
    for a, t in zip(acc, e.lam.ret):
        if isinstance(a, Arr):
            out.append(si.arr((w,) + a.shape, a.elem, a.fill))
        else:
            out.append(si.arr((w,), t, a))
    return out


def _filter(si: StandIn, e: ir.Filter, env):
    s = si.s
    w, arrs = _inputs(si, e, env, e.arrs)
    res, ok = _apply(si, e.lam, env, [_element(a, p.type) for a, p in zip(arrs, e.lam.params)])
    _if_any(si, w, ok)
    keep = res[0]
    n = None
    if w is not None and keep is not None and all(a.fill is not None for a in arrs):
        n = s.select(keep, w, s.i64(0))      # every element is the same: all or none
    return [si.arr((n,) + a.shape[1:], a.elem, a.fill) for a in arrs]


def _dests(si: StandIn, e, env):
    _inputs(si, e, env, (e.idxs,) + tuple(e.vals))
    dests = [si.value(d, env) for d in e.dests]
    for d in dests[1:]:
        si.require(si.eq(d.shape[0], dests[0].shape[0]))
    return [Arr(d.shape, d.elem) for d in dests]


EVAL_ARRAYS = {
    ir.Index: _index, ir.Slice: _slice, ir.Update: _update, ir.Size: _size,
    ir.ArrayLit: _arraylit, ir.Iota: _iota, ir.Replicate: _replicate, ir.Copy: _same,
    ir.Concat: _concat, ir.Rotate: _same, ir.Transpose: _transpose, ir.Reshape: _reshape,
    ir.Map: _map, ir.Reduce: _reduce, ir.Scan: _scan, ir.Filter: _filter,
    ir.ReduceByIndex: _dests, ir.Scatter: _dests,
}


class ArrayStandIn(StandIn):
    """The stand-in evaluator with the array rules as well as the scalar
    ones (split over two modules for length, without an import cycle)."""
    RULES = {**EVAL_SCALAR, **EVAL_ARRAYS}
