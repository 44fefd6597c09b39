"""segscan: inclusive scan, single pass with decoupled look-back (Merrill
and Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back",
NVIDIA 2016; Futhark's ImpGen/GPU/SegScan/SinglePass.hs) where the target
allows it (Target.lookback), else reduce-then-scan (the same paper,
section 3; the blocks of group.py).

Single pass (lookback_scan_into), for one 32-bit value (packs()): a plain
ParFor zeroes status[0..nb] (nb blocks of G*E elements; status[nb] is the
block counter), then one work-group kernel. Each group takes its block
index b from the counter (an atomic add by work-item 0), so a group only
ever waits on groups that started before it: forward progress wherever
started groups keep running (GPUs; PoCL, where one OS thread runs a group
to completion). The group loads its tile coalesced into local memory and
reduces it (group.tile_up); work-item 0 publishes the aggregate (block 0:
the inclusive prefix) as one 64-bit word, (flag << 32) | bits(value) with
flag X=0 -> A=1 or P=2, by an atomic exchange. Flag and value travel
together because OpenCL 1.2 has no fence across work-groups: NVIDIA spells
mem_fence(CLK_GLOBAL_MEM_FENCE) as membar.cta, and a value stored before
its flag was seen late on an H100 (lost updates). Then the whole group
looks back over windows of G predecessors: work-item l reads block base-l's
word (AtomicLoad, untorn); an order-keeping tree of a (flag, value)
operator over the window gives the combination back to the nearest P, or
says the window is all A (go on further back) or has an X after its
nearest P (read it again). Work-item 0 publishes the inclusive prefix (P),
and the group rescans and writes its tile from the exclusive prefix
(group.tile_down). The input is read once and the output written once (2n
element moves).

Reduce-then-scan (group_scan_into): the input is cut into ng contiguous
blocks, one per group (ng from NumThreads and n, group.group_count, at
least G*E elements a block):
1. a work-group kernel: each group reduces its block to one total (a
   sequential fold per work-item, then the tree of group.tree_reduce:
   strided and coalesced for a commutative operator, contiguous chunks in
   order otherwise), written to totals[b];
2. one group scans the ng totals in place (group.block_scan), so totals[b]
   is the combination of blocks 0..b;
3. a work-group kernel: group b scans its block from the carry-in
   totals[b-1] (the neutral element for b = 0), tile by tile: a tile of
   G*E elements is loaded coalesced into local memory, each work-item scans
   its E consecutive elements, a Hillis-Steele scan over the group gives
   each work-item's prefix, and the tile is written back coalesced.
With one block (small n) only kernel 3 runs. The input is read twice and
the output written once (3n element moves).

Work-group kernels may not fail: inputs whose fused element code can fail
are first computed by a plain ParFor (segred.safe_inputs); an operator that
can fail, array-valued elements and accumulators too large for local memory
are declined (the mc/ algorithm runs).
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import I32, I64, U64

from .. import kir as K
from .. import scalar as S
from ..lower_base import Lowerer
from ..mc.common import all_scalar, check_width
from .common import group_for, group_size, local_alloc
from .group import (ONE, ZERO, block_scan, ceil_div, fold_contiguous, fold_strided,
                    group_count, is_commutative, lambda_op, load_all, local_bytes, new_vars,
                    pack, packs, set_all, tile_down, tile_elems, tile_up, tree_reduce, unpack,
                    when)
from .segred import element_fn, op_can_fail, safe_inputs


def lower_scan(lw: Lowerer, e: ir.Scan, env, stm):
    lam = e.lam
    G = group_size(lw)
    types = list(lam.ret)
    if not all_scalar(types):
        return None
    target = lw.options.target
    lookback = target.lookback and packs(types, target)
    E = tile_elems(G, target.local_mem, local_bytes(types),
                   fixed=2 * G * local_bytes(types) + LOOKBACK_FIXED if lookback else
                   G * local_bytes(types), most=LOOKBACK_E if lookback else 9)
    if E < 1:
        return None
    arrs = [lw.array(a, env) for a in e.arrs]
    if any(a.rank != 1 for a in arrs) or op_can_fail(lw, lam, env):
        return None
    # -- decided: from here on, code is emitted
    n = lw.scalar(e.width, env)
    check_width(lw, n, e.arrs, arrs, stm.loc, "scan")
    neutral = [lw.atom(a, env) for a in e.neutral]
    arrs = safe_inputs(lw, arrs, n)
    outs = [lw.alloc("scan", t, (n,)) for t in types]
    store = lambda j, xs: [lw.emit(K.Store(o.data, j, x)) for o, x in zip(outs, xs)]
    if lookback:
        lookback_scan_into(lw, lambda_op(lw, lam, env), types, neutral, element_fn(lw, arrs),
                           n, E, store)
    else:
        group_scan_into(lw, lambda_op(lw, lam, env), types, neutral, element_fn(lw, arrs), n,
                        is_commutative(e), E, store)
    return outs


# Elements per work-item of a single-pass tile (a large tile amortises the
# look-back), and the local bytes besides the tile and the group scan.
LOOKBACK_E = 15
LOOKBACK_FIXED = 64 + 4 * 256   # the block index, the window's flags
# Block states (the high half of status[b]): nothing published yet, the
# block's aggregate, its inclusive prefix (the low half: the value's bits).
FLAG_X, FLAG_A, FLAG_P = 0, 1, 2


def lookback_scan_into(lw: Lowerer, op, types: list, neutral: list, elem, n: K.Expr,
                       E: int, store) -> None:
    """The single-pass scan (module docstring) at host level: store(j,
    values) is called with the inclusive scan at every j < n. One 32-bit
    value (packs())."""
    G = group_size(lw)
    TE = G * E
    cTE = S.const(TE, I64)
    (t,) = types
    nb = lw.let("nb", ceil_div(n, cTE))
    nb = lw.let("nb", K.Sel(S.b("ge", nb, ONE), nb, ONE))
    status = lw.var("status", K.Ptr(U64))       # nb block states, then the block counter
    lw.emit(K.Alloc(status, S.b("add", nb, ONE)))
    z = lw.var("z", I64)
    lw.emit(K.ParFor(z, S.b("add", nb, ONE), K.Block((K.Store(status, z, S.const(0, U64)),))))

    def publish(b, x, flag):
        """flag and value in one atomic exchange: a reader sees both or neither."""
        lw.emit(K.AtomicUpdate(status, b, lw.var("o", U64), pack(flag, x)))

    cA, cP = S.const(FLAG_A, I32), S.const(FLAG_P, I32)

    def status_op(xs, ys):
        """(flag, value) of an older and a newer block run -> the run's: a
        newer P or X wins (P: the prefix starts there; X: not ready), a newer
        A takes the older flag and combines the values. Associative, with
        identity (A, neutral)."""
        fy_a = S.b("eq", ys[0], cA)
        comb = op(xs[1:], ys[1:])
        return ([K.Sel(fy_a, xs[0], ys[0])]
                + [K.Sel(fy_a, c, y) for c, y in zip(comb, ys[1:])])

    def look_back(b, lid, flagw, win):
        """Every work-item of block b > 0 (after work-item 0 published the
        aggregate): windows of G predecessors, work-item l reading block
        base - l's status word (AtomicLoad; a block before 0 counts as P
        with the neutral element). An order-keeping tree of status_op over
        the window, oldest first, gives P (done: the exclusive prefix is
        found), A (every block of the window has its aggregate: go on with
        the window before it) or X (a block after the nearest P has
        published nothing: read the window again). Returns variables
        holding the exclusive prefix of block b."""
        acc = new_vars(lw, "acc", types, list(neutral))    # blocks base+1 .. b-1
        base = new_vars(lw, "base", [I64], [S.b("sub", b, ONE)])[0]
        done = new_vars(lw, "done", [K.BOOL], [S.const(False, K.BOOL)])[0]
        with lw.block() as step:
            j = lw.let("jb", S.b("sub", base, lid))
            w = new_vars(lw, "w", [U64], [pack(FLAG_P, neutral[0])])[0]
            when(lw, S.b("ge", j, ZERO), lambda: lw.emit(K.AtomicLoad(w, status, j)))
            f, x = unpack(w, t)
            f, x = lw.let("f", f), lw.let("v", x)
            pos = lw.let("pos", S.b("sub", S.const(G - 1, I64), lid))
            tot = tree_reduce(lw, status_op, [flagw] + win, [f, x], pos, G)

            def advance():
                set_all(lw, acc, op(tot[1:], acc))
                lw.emit(K.Set(base, S.b("sub", base, S.const(G, I64))))
                lw.emit(K.Set(done, S.b("eq", tot[0], cP)))
            when(lw, S.b("ne", tot[0], S.const(FLAG_X, I32)), advance)
            lw.emit(K.Barrier())
        lw.emit(K.While(K.Un("not", done), step[0]))
        return acc

    def scan_block(i):
        tile = [local_alloc(lw, "tile", t, TE)]
        tots = [local_alloc(lw, "gsc", t, G)]
        win = [local_alloc(lw, "win", t, G)]
        flagw = local_alloc(lw, "fw", I32, G)
        bid = local_alloc(lw, "bid", I64, 1)
        lid = lw.let("lid", K.LocalId())
        lane0 = S.b("eq", lid, ZERO)

        def take_index():
            old = lw.var("ticket", U64)
            lw.emit(K.AtomicUpdate(status, nb, old, S.b("add", old, S.const(1, U64))))
            lw.emit(K.Store(bid, ZERO, K.Cast(I64, old)))
        when(lw, lane0, take_index)
        lw.emit(K.Barrier())
        b = lw.let("blk", K.Load(bid, ZERO))
        lo = lw.let("lo", S.b("mul", b, cTE))
        end = lw.let("end", S.b("add", lo, cTE))
        hi = lw.let("hi", K.Sel(S.b("lt", end, n), end, n))
        mine = tile_up(lw, op, types, neutral, elem, n, lo, hi, lid, G, E, tile, tots)
        (agg,) = load_all(lw, tots, S.const(G - 1, I64), "agg")
        carry = new_vars(lw, "carry", types, list(neutral))
        first = S.b("eq", b, ZERO)
        when(lw, S.b("and", lane0, first), lambda: publish(b, agg, FLAG_P))

        def later():
            when(lw, lane0, lambda: publish(b, agg, FLAG_A))
            set_all(lw, carry, look_back(b, lid, flagw, win))
            when(lw, lane0, lambda: publish(b, op(carry, [agg])[0], FLAG_P))
        when(lw, K.Un("not", first), later)
        tile_down(lw, op, types, store, lo, hi, carry, lid, G, E, tile, tots, mine)
    group_for(lw, "g", S.b("mul", nb, S.const(G, I64)), scan_block)
    lw.emit(K.Free(status))


def group_scan_into(lw: Lowerer, op, types: list, neutral: list, elem, n: K.Expr,
                    commutative: bool, E: int, store) -> None:
    """The three kernels (module docstring) at host level: store(j, values)
    is called (in kernel 3) with the inclusive scan at every j < n."""
    G = group_size(lw)
    cG = S.const(G, I64)
    ng = group_count(lw, n, G * E)
    T = lw.let("nitems", S.b("mul", ng, cG))
    totals = [lw.var("tot", K.Ptr(t)) for t in types]
    for p in totals:
        lw.emit(K.Alloc(p, ng))
    fold = fold_strided if commutative else fold_contiguous

    def block_bounds(b):
        lo = lw.let("lo", S.b("div", S.b("mul", b, n), ng))
        hi = lw.let("hi", S.b("div", S.b("mul", S.b("add", b, ONE), n), ng))
        return lo, hi

    def reduce_blocks(i):
        locs = [local_alloc(lw, "red", t, G) for t in types]
        lid = lw.let("lid", K.LocalId())
        b = lw.let("grp", K.GroupId())
        lo, hi = block_bounds(b)
        accs = new_vars(lw, "acc", types, list(neutral))
        fold(lw, op, accs, elem, n, lid, cG, lo, hi)
        tot = tree_reduce(lw, op, locs, accs, lid, G)
        when(lw, S.b("eq", lid, ZERO),
             lambda: [lw.emit(K.Store(p, b, x)) for p, x in zip(totals, tot)])

    def scan_totals(i):
        tile = [local_alloc(lw, "tile", t, G * E) for t in types]
        tots = [local_alloc(lw, "gsc", t, G) for t in types]
        lid = lw.let("lid", K.LocalId())
        carry = new_vars(lw, "carry", types, list(neutral))
        block_scan(lw, op, types, neutral, lambda j: load_all(lw, totals, j, "t"), ng,
                   lambda j, xs: [lw.emit(K.Store(p, j, x)) for p, x in zip(totals, xs)],
                   ZERO, ng, carry, lid, G, E, tile, tots)

    with lw.block() as blk:
        group_for(lw, "g", T, reduce_blocks)
        group_for(lw, "g", cG, scan_totals)
    lw.emit(K.If(S.b("gt", ng, ONE), blk[0]))

    def scan_blocks(i):
        tile = [local_alloc(lw, "tile", t, G * E) for t in types]
        tots = [local_alloc(lw, "gsc", t, G) for t in types]
        lid = lw.let("lid", K.LocalId())
        b = lw.let("grp", K.GroupId())
        lo, hi = block_bounds(b)
        first = S.b("gt", b, ZERO)
        prev = lw.let("prev", K.Sel(first, S.b("sub", b, ONE), ZERO))
        carry = new_vars(lw, "carry", types,
                         [K.Sel(first, K.Load(p, prev), x) for p, x in zip(totals, neutral)])
        block_scan(lw, op, types, neutral, elem, n, store, lo, hi, carry, lid, G, E, tile, tots)
    group_for(lw, "g", T, scan_blocks)
    for p in totals:
        lw.emit(K.Free(p))
