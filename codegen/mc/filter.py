"""filter: keeps, in order, the elements whose predicate holds.

Parallel at host level in three phases (the multicore stream compaction of
Futhark's and of Blelloch's "pack"): 1. each of T threads counts what its
contiguous chunk keeps; 2. an exclusive scan of the T counts gives each
chunk's output offset and the exact output length, which is allocated;
3. each thread re-evaluates the predicate over its chunk and writes what it
keeps from its offset on (recomputing a cheap predicate moves fewer bytes
than storing flags). A predicate that reads memory beyond its elements (a
gather: BFS's edge filter `dist[src[e]] == level`) or calls the math
library is not evaluated twice: phase 1 stores it as one byte per element
and phase 3 reads that (session 37: the two predicate passes were 84% of a
BFS on the 2-core Zen 5). Inside a parallel loop, and for small inputs,
one sequential pass writes into an output of the input's length.
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import BOOL, I64

from .. import kir as K
from .. import scalar as S
from ..kir_traverse import block_exprs
from ..lower_base import Arr, Lowerer
from .common import (ONE, ZERO, apply_op, check_width, chunk_bounds, elements, n_chunks,
                     trial)


def _write_kept(lw: Lowerer, outs, elems, pos) -> None:
    for o, x in zip(outs, elems):
        if isinstance(x, Arr):
            rs = lw.row_size(o)
            lw.emit(K.CopyMem(K.PtrAdd(o.data, S.b("mul", pos, rs)), x.data, rs))
        else:
            lw.emit(K.Store(o.data, pos, x))


def _reads_beyond_elements(lw: Lowerer, e, env, arrs) -> bool:
    """Whether the predicate, applied to the elements, loads from memory
    more than the elements themselves do, or calls the math library."""
    i = lw.var("i", I64)
    with lw.allocations_dropped():
        _, elems = trial(lw, lambda: elements(lw, arrs, i))
        _, both = trial(lw, lambda: apply_op(lw, e.lam, env, elements(lw, arrs, i)))

    def loads(blk):
        return sum(1 for x in block_exprs(blk) if isinstance(x, K.Load))
    libm = any(isinstance(x, (K.Bin, K.Un)) and x.op in K.LIBM_PRIMS for x in block_exprs(both))
    return libm or loads(both) > loads(elems)


def _compact(lw: Lowerer, e, env, arrs, outs, lo, hi, pos: K.KVar, flags=None) -> None:
    """Writes the kept elements of lo..hi-1 at pos, pos+1, ... (pos advances);
    with `flags`, the predicate's values stored by the count pass."""
    def body(i):
        elems = elements(lw, arrs, i)
        keep = (apply_op(lw, e.lam, env, elems)[0] if flags is None
                else lw.let("keep", K.Load(flags.data, i)))
        with lw.block() as blk:
            _write_kept(lw, outs, elems, pos)
            lw.emit(K.Set(pos, S.b("add", pos, ONE)))
        lw.emit(K.If(keep, blk[0]))
    lw.for_range("i", lo, hi, body)


def _row_shape(a) -> tuple:
    return tuple(a.shape[1:]) if isinstance(a, Arr) else ()


def lower_filter(lw: Lowerer, e: ir.Filter, env, stm):
    n = lw.scalar(e.width, env)
    arrs = [lw.array(a, env) for a in e.arrs]
    check_width(lw, n, e.arrs, arrs, stm.loc, "filter")
    if lw.in_par or not lw.options.parallel:
        outs = [lw.alloc("filt", a.elem, (n,) + _row_shape(a)) for a in arrs]
        cnt = lw.var("kept", I64)
        lw.emit(K.Set(cnt, ZERO))
        _compact(lw, e, env, arrs, outs, ZERO, n, cnt)
        final = lw.let("nkept", cnt)
        return [Arr(o.base, o.data, (final,) + tuple(o.shape[1:]), o.elem, o.aliases)
                for o in outs]
    nch = n_chunks(lw, n, lw.options.par_min)
    counts = lw.alloc("cnt", I64, (nch,))
    flags = lw.alloc("keep", BOOL, (n,)) if _reads_beyond_elements(lw, e, env, arrs) else None

    def count(c):
        lo, hi = chunk_bounds(lw, c, n, nch)
        k = lw.var("k", I64)
        lw.emit(K.Set(k, ZERO))

        def body(i):
            keep = apply_op(lw, e.lam, env, elements(lw, arrs, i))[0]
            if flags is not None:
                lw.emit(K.Store(flags.data, i, keep))
            lw.emit(K.Set(k, S.b("add", k, K.Cast(I64, keep))))
        lw.for_range("i", lo, hi, body)
        lw.emit(K.Store(counts.data, c, k))
    lw.par_for("c", nch, count)
    total = lw.var("total", I64)
    lw.emit(K.Set(total, ZERO))

    def offsets(c):
        k = lw.let("k", K.Load(counts.data, c))
        lw.emit(K.Store(counts.data, c, total))
        lw.emit(K.Set(total, S.b("add", total, k)))
    lw.for_range("c", ZERO, nch, offsets)
    outs = [lw.alloc("filt", a.elem, (total,) + _row_shape(a)) for a in arrs]

    def write(c):
        lo, hi = chunk_bounds(lw, c, n, nch)
        pos = lw.var("pos", I64)
        lw.emit(K.Set(pos, K.Load(counts.data, c)))
        _compact(lw, e, env, arrs, outs, lo, hi, pos, flags)
    lw.par_for("c", nch, write)
    return outs
