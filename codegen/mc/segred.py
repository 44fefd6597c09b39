"""segred: reduce with an associative operator (Futhark's multicore
SegRed: per-thread chunk partials, then a sequential combine).

Each of T threads folds a contiguous chunk of the input from the neutral
element, in order; the T partials are then folded in order. This is exact
reassociation of the sequential fold, which LANGUAGE.md allows for reduce;
the operator's float + and * carry `reassoc` so LLVM vectorizes the chunk
loops. Inputs below a size threshold, and reductions inside a parallel
loop, are one sequential fold. Array-valued accumulators fold sequentially.
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.traverse import iter_stms
from pyshark.core.types import I64

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, Delayed, Lowerer
from .common import ONE, ZERO, all_scalar, apply_op, check_width, chunk_bounds, elements, n_chunks
from .fold import fold_arrays
from .tile import jam_fold


def fold_range(lw: Lowerer, lam, env, arrs, accs: list, lo, hi, reassoc=True) -> None:
    """accs = fold of lam over elements lo..hi-1 (accs are variables)."""
    if jam_fold(lw, lam, env, arrs, accs, lo, hi, reassoc):
        return

    def body(i):
        new = apply_op(lw, lam, env, accs + elements(lw, arrs, i), reassoc)
        for a, v in zip(accs, new):
            lw.emit(K.Set(a, v))
    lw.for_range("i", lo, hi, body)


def chunk_partials(lw: Lowerer, lam, env, arrs, neutral, n, nch, space=None) -> list:
    """Phase 1 of the multicore reduce and scan: nch arrays of one partial
    per contiguous chunk, each the in-order fold of its chunk from the
    neutral element, computed in parallel (`space`: the chunks tile that
    many elements, and the work of one decides whether the team wakes:
    lower_base.parallel_if)."""
    partials = [lw.alloc("part", t, (nch,)) for t in lam.ret]

    def chunk(c):
        lo, hi = chunk_bounds(lw, c, n, nch)
        local = [lw.var("acc", t) for t in lam.ret]
        for a, v in zip(local, neutral):
            lw.emit(K.Set(a, v))
        fold_range(lw, lam, env, arrs, local, lo, hi)
        for p, a in zip(partials, local):
            lw.emit(K.Store(p.data, c, a))
    lw.par_for("c", nch, chunk, space=space)
    return partials


def elements_loop(arrs) -> bool:
    """Whether computing one element of an input runs a loop: a map fused
    into the reduction whose function reduces, maps or loops over a row
    (`max(ps.map(lambda row: ps.maximum(row), img))`, an image's maximum
    written per row)."""
    for a in arrs:
        src = a.group.source if isinstance(a, Delayed) else None
        if src is not None and any(isinstance(st.exp, ir.SOACS + (ir.Loop,))
                                   for st in iter_stms(src[0].body)):
            return True
    return False


def lower_reduce(lw: Lowerer, e: ir.Reduce, env, stm):
    n = lw.scalar(e.width, env)
    arrs = [lw.array(a, env) for a in e.arrs]
    check_width(lw, n, e.arrs, arrs, stm.loc, "reduce")
    lam = e.lam
    neutral = [lw.atom(a, env) for a in e.neutral]
    if not all_scalar(lam.ret):
        return fold_arrays(lw, lam, env, arrs, neutral, n, stm, scan_outs=None)
    accs = [lw.var("acc", t) for t in lam.ret]
    if lw.in_par or not lw.options.parallel:
        for a, v in zip(accs, neutral):
            lw.emit(K.Set(a, v))
        fold_range(lw, lam, env, arrs, accs, ZERO, n)
        return accs
    if elements_loop(arrs):
        # n counts rows, not work: chunks from two rows on, and the chunks'
        # ParFor wakes the team when n times a row's work pays for it
        # (before, 1024 rows of an image ran on one thread: par_min rows)
        nch = n_chunks(lw, n, 2)
        partials = chunk_partials(lw, lam, env, arrs, neutral, n, nch, space=n)
    else:
        nch = n_chunks(lw, n, lw.options.par_min)
        partials = chunk_partials(lw, lam, env, arrs, neutral, n, nch)
    for a, v in zip(accs, neutral):
        lw.emit(K.Set(a, v))

    def combine(c):
        new = apply_op(lw, lam, env, accs + [lw.let("p", K.Load(p.data, c)) for p in partials])
        for a, v in zip(accs, new):
            lw.emit(K.Set(a, v))
    lw.for_range("c", ZERO, nch, combine)
    return accs
