"""filter (and partition, which the translator writes as two Filters over
one flags map): stream compaction by a scan of the flags and a scatter
(Blelloch's "pack"; Billeter, Olsson and Assarsson, "Efficient Stream
Compaction on Wide SIMD Many-Core Architectures", HPG 2009: per-block
counts, a scan of the counts, then a per-block compaction through local
memory so that the writes are coalesced).

The input is cut into ng contiguous blocks, one per group (as segscan.py):
1. a work-group kernel: each group counts what its block keeps (strided,
   coalesced, a tree of the counts: group.tree_reduce), counts[b];
2. when ng > 1, one group scans the counts in place (group.block_scan);
   the host reads the total (one Load) and allocates the outputs;
3. a work-group kernel: group b compacts its block from offset
   counts[b-1], tile by tile: a tile of G*E elements and their flags is
   loaded coalesced into local memory, each work-item counts the flags of
   its E consecutive elements, a Hillis-Steele scan of the counts gives its
   position, each work-item moves what it keeps into a compacted tile in
   local memory, and the group writes that out coalesced.
The predicate is evaluated twice (kernels 1 and 3; the flags are not
stored), as mc/filter.py does.

Work-group kernels may not fail: inputs whose fused element code can fail
are computed by a plain ParFor first (segred.safe_inputs), and a predicate
that can fail is evaluated once into a flags array by a plain ParFor (which
raises its error). Rows (inputs of rank > 1) and elements too large for
local memory are declined (the mc/ algorithm runs).
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import BOOL, I64

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, Lowerer
from ..mc.common import apply_op, check_width, elements
from .common import can_fail, group_for, group_size, local_alloc, trial
from .group import (ONE, ZERO, add_op, block_scan, ceil_div, fold_strided, group_count,
                    group_scan, in_range_index, load_all, local_bytes, new_vars, set_all,
                    store_all, tile_elems, tree_reduce, when)
from .segred import safe_inputs


def lower_filter(lw: Lowerer, e: ir.Filter, env, stm):
    G = group_size(lw)
    local_mem = lw.options.target.local_mem
    arrs = [lw.array(a, env) for a in e.arrs]
    if any(a.rank != 1 for a in arrs):
        return None
    types = [a.elem for a in arrs]
    E = tile_elems(G, local_mem, 2 * local_bytes(types) + 1, fixed=G * 8)
    Ec = tile_elems(G, local_mem, 8, fixed=G * 8)
    if E < 1 or Ec < 1:
        return None
    # -- decided: from here on, code is emitted
    n = lw.scalar(e.width, env)
    check_width(lw, n, e.arrs, arrs, stm.loc, "filter")
    arrs = safe_inputs(lw, arrs, n)

    def pred(xs):
        return apply_op(lw, e.lam, env, xs)[0]
    probe = lw.var("j", I64)
    _, blk = trial(lw, lambda: in_range_index(lw, probe, n, lambda j: [pred(elements(lw, arrs, j))]))
    if can_fail(blk):
        flags = lw.alloc("flag", BOOL, (n,))
        lw.par_for("i", n, lambda i: lw.emit(K.Store(flags.data, i, pred(elements(lw, arrs, i)))))

        def item(j):
            return elements(lw, arrs, j), lw.let("keep", K.Load(flags.data, j))
    else:
        def item(j):
            xs = elements(lw, arrs, j)
            return xs, pred(xs)

    cG = S.const(G, I64)
    ng = group_count(lw, n, G * E)
    T = lw.let("nitems", S.b("mul", ng, cG))
    counts = lw.var("counts", K.Ptr(I64))
    lw.emit(K.Alloc(counts, ng))

    def block_bounds(b):
        lo = lw.let("lo", S.b("div", S.b("mul", b, n), ng))
        hi = lw.let("hi", S.b("div", S.b("mul", S.b("add", b, ONE), n), ng))
        return lo, hi

    def count_blocks(i):
        loc = local_alloc(lw, "cnt", I64, G)
        lid = lw.let("lid", K.LocalId())
        b = lw.let("grp", K.GroupId())
        lo, hi = block_bounds(b)
        acc = new_vars(lw, "acc", [I64], [ZERO])
        fold_strided(lw, add_op, acc, lambda j: [K.Cast(I64, item(j)[1])], n, lid, cG, lo, hi)
        tot = tree_reduce(lw, add_op, [loc], acc, lid, G)
        when(lw, S.b("eq", lid, ZERO), lambda: lw.emit(K.Store(counts, b, tot[0])))
    group_for(lw, "g", T, count_blocks)

    def scan_counts(i):
        tile = local_alloc(lw, "tile", I64, G * Ec)
        tots = local_alloc(lw, "gsc", I64, G)
        lid = lw.let("lid", K.LocalId())
        carry = new_vars(lw, "carry", [I64], [ZERO])
        block_scan(lw, add_op, [I64], [ZERO], lambda j: load_all(lw, [counts], j, "c"), ng,
                   lambda j, xs: lw.emit(K.Store(counts, j, xs[0])),
                   ZERO, ng, carry, lid, G, Ec, [tile], [tots])
    with lw.block() as blk:
        group_for(lw, "g", cG, scan_counts)
    lw.emit(K.If(S.b("gt", ng, ONE), blk[0]))
    total = lw.let("total", K.Load(counts, S.b("sub", ng, ONE)))
    outs = [lw.alloc("filt", t, (total,)) for t in types]

    def compact_blocks(i):
        vals = [local_alloc(lw, "tile", t, G * E) for t in types]
        packed = [local_alloc(lw, "pack", t, G * E) for t in types]
        flag = local_alloc(lw, "flag", BOOL, G * E)
        tots = local_alloc(lw, "gsc", I64, G)
        lid = lw.let("lid", K.LocalId())
        b = lw.let("grp", K.GroupId())
        lo, hi = block_bounds(b)
        first = S.b("gt", b, ZERO)
        carry = new_vars(lw, "carry", [I64], [
            K.Sel(first, K.Load(counts, lw.let("prev", K.Sel(first, S.b("sub", b, ONE), ZERO))),
                  ZERO)])[0]
        cE = S.const(E, I64)
        TE = S.const(G * E, I64)
        ntiles = lw.let("ntiles", ceil_div(S.b("sub", hi, lo), TE))

        def one_tile(t):
            base = lw.let("base", S.b("add", lo, S.b("mul", t, TE)))

            def load(k):
                slot = lw.let("slot", S.b("add", S.b("mul", k, cG), lid))
                j = lw.let("jt", S.b("add", base, slot))
                keep = new_vars(lw, "keep", [BOOL], [S.const(False, BOOL)])

                def present():
                    xs, kp = in_range_index(lw, j, n, item)
                    store_all(lw, vals, slot, xs)
                    set_all(lw, keep, [kp])
                when(lw, S.b("lt", j, hi), present)
                lw.emit(K.Store(flag, slot, keep[0]))
            lw.for_range("e", ZERO, cE, load)
            lw.emit(K.Barrier())
            mine = lw.let("mine", S.b("mul", lid, cE))
            cnt = new_vars(lw, "cnt", [I64], [ZERO])
            lw.for_range("e", ZERO, cE, lambda k: set_all(lw, cnt, [S.b(
                "add", cnt[0], K.Cast(I64, K.Load(flag, S.b("add", mine, k))))]))
            incl = group_scan(lw, add_op, [tots], cnt, lid, G)
            pos = new_vars(lw, "pos", [I64], [S.b("sub", incl[0], cnt[0])])[0]
            ttot = lw.let("ttot", K.Load(tots, S.const(G - 1, I64)))

            def move(k):
                src = lw.let("src", S.b("add", mine, k))

                def kept():
                    store_all(lw, packed, pos, load_all(lw, vals, src))
                    lw.emit(K.Set(pos, S.b("add", pos, ONE)))
                when(lw, K.Load(flag, src), kept)
            lw.for_range("e", ZERO, cE, move)
            lw.emit(K.Barrier())

            def write(k):
                slot = lw.let("slot", S.b("add", S.b("mul", k, cG), lid))
                dst = S.b("add", carry, slot)
                when(lw, S.b("lt", slot, ttot), lambda: [
                    lw.emit(K.Store(o.data, dst, x)) for o, x in zip(outs, load_all(lw, packed, slot))])
            lw.for_range("e", ZERO, cE, write)
            lw.emit(K.Set(carry, S.b("add", carry, ttot)))
            lw.emit(K.Barrier())
        lw.for_range("t", ZERO, ntiles, one_tile)
    group_for(lw, "g", T, compact_blocks)
    lw.emit(K.Free(counts))
    return [Arr(o.base, o.data, (total,), o.elem, o.aliases) for o in outs]
