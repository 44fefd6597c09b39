"""seghist: reduce_by_index (a generalised histogram).

result = copy of dest; for each j with idxs[j] in range, result[idxs[j]] =
op(result[idxs[j]], vals[j]) -- op associative and commutative.

Parallel at host level with per-thread sub-histograms (Futhark's multicore
SegHist, "privatized" histograms): each of T threads folds its chunk of
the input into a private histogram initialised to the neutral element, then
a parallel loop over the bins folds the T private values into the result.
Chosen when the T private histograms are small (at most HIST_PRIVATE_MAX
elements in all); larger destinations, rows (2-D histograms) and
histograms inside a parallel loop are one sequential pass. (Atomic updates
for large destinations come with atomics in the kernel IR.)
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import I64, ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, Lowerer
from .common import PAD_BYTES, ZERO, apply_op, chunk_bounds, elements, n_chunks
from .scatter import dest_setup, in_range, store_at

HIST_PRIVATE_MAX = 1 << 22


def _sequential(lw: Lowerer, e, env, stm, n, idxs, vals, dests, m, lo=ZERO, hi=None):
    lam = e.lam

    def body(i):
        xs = elements(lw, [idxs, *vals], i)
        j, ok = in_range(lw, xs[0], m)
        with lw.block() as blk:
            olds = [lw.element(d, j) for d in dests]
            if all(isinstance(t, ScalarType) for t in lam.ret):
                new = apply_op(lw, lam, env, olds + xs[1:], True)
                for d, o, v in zip(dests, olds, new):
                    _store_if_changed(lw, d.data, j, o, v)
            else:
                res = lw.apply(lam.params, lam.body, env, olds + xs[1:], new_frame=True)
                for d, (v, owned) in zip(dests, res):
                    if isinstance(v, Arr):
                        same = None
                        for x, y in zip(v.shape, d.shape[1:]):
                            c = S.b("eq", x, y)
                            same = c if same is None else S.land(same, c)
                        lw.check(same, "ShapeError", "reduce_by_index: the operator "
                                 "returned a row of another shape", stm.loc)
                    store_at(lw, d, j, v)
                    if owned:
                        lw.emit(K.Free(v.base))
        lw.emit(K.If(ok, blk[0]))
    lw.for_range("i", lo, n if hi is None else hi, body)


def lower_reduce_by_index(lw: Lowerer, e: ir.ReduceByIndex, env, stm):
    n, idxs, vals, dests, m = dest_setup(lw, e, env, stm, "reduce_by_index")
    lam = e.lam
    scalar_bins = all(isinstance(t, ScalarType) for t in lam.ret)
    if lw.in_par or not lw.options.parallel or not scalar_bins:
        _sequential(lw, e, env, stm, n, idxs, vals, dests, m)
        return dests
    neutral = [lw.atom(a, env) for a in e.neutral]
    nch0 = n_chunks(lw, n, lw.options.par_min, per_thread=1)     # private copies cost memory
    small = S.b("le", S.b("mul", nch0, m), S.const(HIST_PRIVATE_MAX, I64))
    nch = lw.let("nch", K.Sel(small, nch0, S.const(1, I64)))
    with lw.block() as seq:
        _sequential(lw, e, env, stm, n, idxs, vals, dests, m)
    with lw.block() as par, lw.temp_scope():
        # each private histogram padded (PAD_BYTES): with bins of two
        # threads in one line, every update of those bins moved the line
        # between the cores (2^24 random bins on 2 threads: 3.6-5.3 ms, no
        # faster than one thread's 3.4 ms, or 2.1 ms, as the block fell)
        pad = -(-PAD_BYTES // min(d.elem.bytes for d in dests))
        stride = lw.let("stride", S.b("add", m, S.const(pad, I64)))
        subs = [lw.alloc("sub", d.elem, (lw.let("sz", S.b("mul", nch, stride)),))
                for d in dests]

        def private(c):
            base = lw.let("b", S.b("mul", c, stride))

            def init(i):
                for s, ne in zip(subs, neutral):
                    lw.emit(K.Store(s.data, S.b("add", base, i), ne))
            lw.for_range("i", ZERO, m, init)
            lo, hi = chunk_bounds(lw, c, n, nch)

            def body(i):
                xs = elements(lw, [idxs, *vals], i)
                j, ok = in_range(lw, xs[0], m)
                with lw.block() as blk:
                    at = lw.let("at", S.b("add", base, j))
                    olds = [lw.let("o", K.Load(s.data, at)) for s in subs]
                    new = apply_op(lw, lam, env, olds + xs[1:], True)
                    for s, o, v in zip(subs, olds, new):
                        _store_if_changed(lw, s.data, at, o, v)
                lw.emit(K.If(ok, blk[0]))
            lw.for_range("i", lo, hi, body)
        lw.par_for("c", nch, private)

        def combine(i):
            accs = [lw.var("acc", d.elem) for d in dests]
            for a, d in zip(accs, dests):
                lw.emit(K.Set(a, K.Load(d.data, i)))

            def fold(c):
                at = lw.let("at", S.b("add", S.b("mul", c, stride), i))
                new = apply_op(lw, lam, env, accs + [lw.let("s", K.Load(s.data, at))
                                                     for s in subs], True)
                for a, v in zip(accs, new):
                    lw.emit(K.Set(a, v))
            lw.for_range("c", ZERO, nch, fold)
            for d, a in zip(dests, accs):
                lw.emit(K.Store(d.data, i, a))
        lw.par_for("i", m, combine)
        for s in subs:
            lw.emit(K.Free(s.base))
    lw.emit(K.If(S.b("gt", nch, S.const(1, I64)), par[0], seq[0]))
    return dests


def _store_if_changed(lw: Lowerer, ptr: K.Expr, at: K.Expr, old: K.Expr, v) -> None:
    """ptr[at] = v, where `old` was just loaded from ptr[at]. When v is a
    selection between old and another value (max, min), the store happens
    only when the other value is chosen: a max-histogram then writes a bin
    only when it grows, as `if x > h[b]: h[b] = x` does; the memory is the
    same either way (the skipped store would write back the loaded bits).
    The same for kir's float min / max of old and another value (session
    37: with the store every time, max_histogram ran 8-19% slower)."""
    if isinstance(v, K.KVar) and isinstance(old, K.KVar):
        for s in reversed(lw.emitted()):
            if isinstance(s, K.Set) and s.var == v:
                e = s.value
                keep_old = other = None
                if isinstance(e, K.Sel) and (e.x == old) != (e.y == old):
                    keep_old = e.cond if e.x == old else S.lnot(e.cond)
                    other = e.y if e.x == old else e.x
                elif (isinstance(e, K.Bin) and e.op in ("min", "max")
                      and (e.x == old) != (e.y == old)):
                    # kir's float min / max (NaN propagates; of equal zeros
                    # either): old stays when it is NaN or not beaten
                    other = e.y if e.x == old else e.x
                    keep_old = S.lor(S.b("le" if e.op == "min" else "ge", old, other),
                                     K.Un("isnan", old))
                if keep_old is not None:
                    lw.emit(K.If(S.lnot(keep_old), K.Block((K.Store(ptr, at, other),))))
                    return
                break
    lw.emit(K.Store(ptr, at, v))
