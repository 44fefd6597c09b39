"""segscan: inclusive scan with an associative operator (Futhark's
multicore SegScan, three phases).

1. each of T threads reduces its contiguous chunk to a partial;
2. one thread scans the T partials exclusively (chunk offsets);
3. each thread rescans its chunk starting from its offset, writing output.
Small inputs (below par_min) and calls with NumThreads 1 are one sequential
pass, chosen at run time: the phases read the input twice, which on one
thread cost 1.35x NumPy's cumsum at 2^24 i32 (one pass: 0.94x). Scans inside
a parallel loop are one sequential pass.
Array-valued accumulators scan sequentially.
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import I64

from .. import kir as K
from .. import scalar as S
from ..lower_base import Lowerer
from .common import ONE, ZERO, all_scalar, apply_op, check_width, chunk_bounds, elements, n_chunks
from .fold import fold_arrays
from .segred import chunk_partials


def _scan_range(lw: Lowerer, lam, env, arrs, accs, outs, lo, hi) -> None:
    def body(i):
        new = apply_op(lw, lam, env, accs + elements(lw, arrs, i), True)
        for a, v, o in zip(accs, new, outs):
            lw.emit(K.Set(a, v))
            lw.emit(K.Store(o.data, i, a))
    lw.for_range("i", lo, hi, body)


def lower_scan(lw: Lowerer, e: ir.Scan, env, stm):
    n = lw.scalar(e.width, env)
    arrs = [lw.array(a, env) for a in e.arrs]
    check_width(lw, n, e.arrs, arrs, stm.loc, "scan")
    lam = e.lam
    neutral = [lw.atom(a, env) for a in e.neutral]
    if not all_scalar(lam.ret):
        return fold_arrays(lw, lam, env, arrs, neutral, n, stm, scan_outs=True)
    outs = [lw.alloc("scan", t, (n,)) for t in lam.ret]
    if lw.in_par or not lw.options.parallel:
        _scan_all(lw, lam, env, arrs, neutral, outs, n)
        return outs
    # at run time: one sequential pass where the phases would run on one
    # thread (a small input, or NumThreads 1), reading the input once
    alone = S.b("or", S.b("lt", n, S.const(lw.options.par_min, I64)),
                S.b("le", K.NumThreads(), ONE))
    with lw.block() as seq:
        _scan_all(lw, lam, env, arrs, neutral, outs, n)
    with lw.block() as par, lw.temp_scope(free=True):
        _three_phases(lw, lam, env, arrs, neutral, outs, n)
    lw.emit(K.If(alone, seq[0], par[0]))
    return outs


def _scan_all(lw: Lowerer, lam, env, arrs, neutral, outs, n) -> None:
    accs = [lw.var("acc", t) for t in lam.ret]
    for a, v in zip(accs, neutral):
        lw.emit(K.Set(a, v))
    _scan_range(lw, lam, env, arrs, accs, outs, ZERO, n)


def _three_phases(lw: Lowerer, lam, env, arrs, neutral, outs, n) -> None:
    nch = n_chunks(lw, n, lw.options.par_min)
    partials = chunk_partials(lw, lam, env, arrs, neutral, n, nch)     # phase 1
    # phase 2: exclusive scan of the partials, in place
    accs = [lw.var("acc", t) for t in lam.ret]
    for a, v in zip(accs, neutral):
        lw.emit(K.Set(a, v))

    def phase2(c):
        cur = [lw.let("p", K.Load(p.data, c)) for p in partials]
        for p, a in zip(partials, accs):
            lw.emit(K.Store(p.data, c, a))
        new = apply_op(lw, lam, env, accs + cur)
        for a, v in zip(accs, new):
            lw.emit(K.Set(a, v))
    lw.for_range("c", ZERO, nch, phase2)

    def phase3(c):
        lo, hi = chunk_bounds(lw, c, n, nch)
        local = [lw.var("acc", t) for t in lam.ret]
        for a, p in zip(local, partials):
            lw.emit(K.Set(a, K.Load(p.data, c)))
        _scan_range(lw, lam, env, arrs, local, outs, lo, hi)
    lw.par_for("c", nch, phase3)
