"""Work-group building blocks of the gpu/ algorithms (segred, segscan,
filter): sequential per-work-item folds, an order-keeping tree reduction in
local memory, a work-group inclusive scan (Hillis-Steele) and a tiled block
scan of a contiguous range by one group.

Sources: the tree reduction is the interleaved-addressing shape of Harris,
"Optimizing Parallel Reduction in CUDA" (2007), which keeps the order of
the operands; the work-group scan is Hillis and Steele,
"Data parallel algorithms" (CACM 1986), as in Futhark's
ImpGen/GPU/Base.hs (its in-block scan is the same shape); the tiled block
scan (each work-item scans E consecutive elements of a tile staged in local
memory, a group scan of the work-items' totals, then a rescan with the
prefix) is the "reduce-then-scan" block of Merrill and Garland, "Single-pass
Parallel Prefix Scan with Decoupled Look-back" (2016), section 3, and of
CUB's BlockScan (raking over a tile in shared memory).

An operator is `op(xs, ys) -> zs`: lists of kir scalar expressions (one per
component of a tuple), xs before ys in the order of the input. Every piece
here is emitted inside a group ParFor body (codegen/gpu/common.group_for)
and places its barriers in control flow that is uniform across the group;
the local arrays are allocated by the caller at the top of the body
(LocalAlloc must be there).
"""
from __future__ import annotations

from typing import Callable, Optional

from pyshark.core import ir
from pyshark.core.types import I32, I64, U32, U64, ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower_base import Lowerer
from ..mc.common import apply_op

ZERO = S.const(0, I64)
ONE = S.const(1, I64)

Op = Callable[[list, list], list]
Elem = Callable[[K.KVar], list]          # an in-range index -> element values

# Core binary operators whose result does not depend on the operands' order
# (floats included: IEEE + and * are commutative bit for bit; min and max
# are numpy's NaN-propagating ones).
COMMUTATIVE_BINOPS = frozenset({"add", "mul", "min", "max", "band", "bor", "bxor",
                                "land", "lor", "eq", "ne"})


def lambda_op(lw: Lowerer, lam, env) -> Op:
    """A core operator lambda as an Op (its float operations reassociable,
    as LANGUAGE.md allows inside reduce and scan)."""
    return lambda xs, ys: apply_op(lw, lam, env, list(xs) + list(ys), True)


def add_op(xs: list, ys: list) -> list:
    return [S.b("add", x, y) for x, y in zip(xs, ys)]


def is_commutative(e) -> bool:
    """Whether a Reduce/Scan's operator may take its operands in any order:
    the user said reduce_comm, or each result of the lambda is one
    commutative primitive of its two matching parameters (a + b, a * b,
    min, max, & | ^, and/or; on integers and bools also `b if b > a else a`,
    Python's max/min, which on floats is not commutative because of NaN)."""
    if getattr(e, "commutative", False):
        return True
    lam = e.lam
    k = len(lam.ret)
    if len(lam.params) != 2 * k or not lam.body.stms:
        return False
    defs = {}
    for stm in lam.body.stms:
        if len(stm.pat) != 1 or not isinstance(stm.exp, (ir.BinOp, ir.Select)):
            return False
        defs[stm.pat[0].name] = stm.exp
    used = set()
    for c, r in enumerate(lam.body.result):
        a, b = lam.params[c], lam.params[k + c]
        names = _comm_result(defs, r, a, b)
        if names is None:
            return False
        used |= names
    return used == set(defs)


def _var_names(*atoms) -> Optional[list]:
    if not all(isinstance(x, ir.Var) for x in atoms):
        return None
    return sorted(x.name for x in atoms)


def _comm_result(defs: dict, r, a: ir.Var, b: ir.Var) -> Optional[set]:
    """The body variables result r uses when it is a commutative function of
    parameters a and b, else None."""
    if not isinstance(r, ir.Var) or r.name not in defs:
        return None
    pair = sorted((a.name, b.name))
    e = defs[r.name]
    if isinstance(e, ir.BinOp):
        if e.op in COMMUTATIVE_BINOPS and _var_names(e.x, e.y) == pair:
            return {r.name}
        return None
    t = a.type
    if not isinstance(t, ScalarType) or t.is_float:
        return None
    if _var_names(e.x, e.y) != pair or not isinstance(e.cond, ir.Var):
        return None
    c = defs.get(e.cond.name)
    if (isinstance(c, ir.BinOp) and c.op in ("lt", "le", "gt", "ge")
            and _var_names(c.x, c.y) == pair):
        return {r.name, e.cond.name}
    return None


def local_bytes(types) -> int:
    """Bytes of one element of each type (bool: one byte)."""
    return sum(t.dtype.itemsize for t in types)


# ---------------------------------------------------------------------------
# Small emitting helpers


def set_all(lw: Lowerer, vs: list, xs: list) -> None:
    for v, x in zip(vs, xs):
        lw.emit(K.Set(v, x))


def new_vars(lw: Lowerer, hint: str, types, init: list) -> list:
    vs = [lw.var(hint, t) for t in types]
    set_all(lw, vs, init)
    return vs


def when(lw: Lowerer, cond: K.Expr, then: Callable[[], None]) -> None:
    with lw.block() as blk:
        then()
    if blk[0].stms:
        lw.emit(K.If(cond, blk[0]))


def load_all(lw: Lowerer, ptrs: list, i: K.Expr, hint: str = "l") -> list:
    return [lw.let(hint, K.Load(p, i)) for p in ptrs]


def store_all(lw: Lowerer, ptrs: list, i: K.Expr, xs: list) -> None:
    for p, x in zip(ptrs, xs):
        lw.emit(K.Store(p, i, x))


def in_range_index(lw: Lowerer, j: K.Expr, n: K.Expr, elem: Elem) -> list:
    """elem(j) where the algorithm knows 0 <= j < n (the bounds analysis is
    told so, so a fused map's checks against n vanish as in a plain loop)."""
    jv = lw.var("j", I64)
    lw.emit(K.Set(jv, j))
    with lw.loop_facts(jv, ZERO, n):
        return elem(jv)


def udiv(x: K.Expr, y: K.Expr) -> K.Expr:
    """x / y for x >= 0, y >= 1 (truncating = floor)."""
    return S.b("div", x, y)


def ceil_div(x: K.Expr, y: K.Expr) -> K.Expr:
    return S.b("div", S.b("add", x, S.b("sub", y, ONE)), y)


# ---------------------------------------------------------------------------
# Sequential folds of one work-item


def fold_strided(lw: Lowerer, op: Op, accs: list, elem: Elem, n: K.Expr,
                 w: K.Expr, W: K.Expr, lo: K.Expr, hi: K.Expr) -> None:
    """accs = fold of elem(j) for j = lo + w, lo + w + W, ... < hi (0 <= w <
    W, lo <= hi <= n): the coalesced assignment of a commutative operator."""
    cnt = lw.let("cnt", udiv(S.b("add", S.b("sub", S.b("sub", hi, lo), w),
                                  S.b("sub", W, ONE)), W))

    def body(k):
        xs = in_range_index(lw, S.b("add", S.b("add", lo, w), S.b("mul", k, W)), n, elem)
        set_all(lw, accs, op(accs, xs))
    lw.for_range("k", ZERO, cnt, body)


def fold_contiguous(lw: Lowerer, op: Op, accs: list, elem: Elem, n: K.Expr,
                    w: K.Expr, W: K.Expr, lo: K.Expr, hi: K.Expr) -> None:
    """accs = in-order fold of elem(j) over work-item w's contiguous part
    [lo + w*len/W, lo + (w+1)*len/W) of [lo, hi) (order-keeping)."""
    ln = lw.let("len", S.b("sub", hi, lo))
    a = lw.let("a", S.b("add", lo, udiv(S.b("mul", w, ln), W)))
    b = lw.let("b", S.b("add", lo, udiv(S.b("mul", S.b("add", w, ONE), ln), W)))

    def body(j):
        xs = in_range_index(lw, j, n, elem)
        set_all(lw, accs, op(accs, xs))
    lw.for_range("j", a, b, body)


# ---------------------------------------------------------------------------
# Work-group trees and scans over local memory


def tree_reduce(lw: Lowerer, op: Op, locs: list, vals: list, lid: K.Expr, G: int) -> list:
    """The group's combination of every work-item's `vals`, in local-id
    order: the interleaved-addressing tree (pairs (2s*l, 2s*l + s) at
    stride s), which keeps the operands' order, so it serves operators that
    are only associative, and for floats it stays a reassociation of the
    in-order fold (a conformance case sums [1e30, -1e30, 1.0] to 1.0; the
    sequential-addressing tree, pairs (l, l + G/2), would give 0.0).
    Returns variables holding the total in every work-item. Uses
    locs[c][0:G]; ends after a barrier (and the caller must put one before
    it writes locs again)."""
    store_all(lw, locs, lid, vals)
    lw.emit(K.Barrier())
    s = 1
    while s < G:
        def step(s=s):
            a = lw.let("a", S.b("mul", lid, S.const(2 * s, I64)))
            new = op(load_all(lw, locs, a), load_all(lw, locs, S.b("add", a, S.const(s, I64))))
            store_all(lw, locs, a, new)
        when(lw, S.b("lt", lid, S.const(G // (2 * s), I64)), step)
        lw.emit(K.Barrier())
        s *= 2
    types = [K.type_of(v) for v in vals]
    return new_vars(lw, "tot", types, [K.Load(p, ZERO) for p in locs])


def group_scan(lw: Lowerer, op: Op, locs: list, vals: list, lid: K.Expr, G: int) -> list:
    """Inclusive scan of the work-items' `vals` in local-id order
    (Hillis-Steele: log2 G steps, each reads, waits, writes, waits). Leaves
    the scanned values in locs[c][0:G] (so locs[c][G-1] is the total and
    locs[c][l-1] work-item l's exclusive prefix) and returns this
    work-item's inclusive value. Ends after a barrier."""
    types = [K.type_of(v) for v in vals]
    store_all(lw, locs, lid, vals)
    lw.emit(K.Barrier())
    cur = new_vars(lw, "sc", types, list(vals))
    d = 1
    while d < G:
        dd = S.const(d, I64)

        def step():
            prev = load_all(lw, locs, S.b("sub", lid, dd))
            set_all(lw, cur, op(prev, cur))
        when(lw, S.b("ge", lid, dd), step)
        lw.emit(K.Barrier())
        store_all(lw, locs, lid, cur)
        lw.emit(K.Barrier())
        d *= 2
    return cur


def tile_elems(G: int, local_mem: int, bytes_per_elem: int, fixed: int = 0,
               most: int = 9) -> int:
    """Elements per work-item of a tile: the largest E <= `most` (odd, so a
    work-item's consecutive elements sit in different banks) with
    G*E*bytes_per_elem + fixed bytes of local memory; 0 if none fits."""
    e = min(most, (local_mem - fixed) // max(1, G * bytes_per_elem))
    if e > 1 and e % 2 == 0:
        e -= 1
    return max(e, 0)


def block_scan(lw: Lowerer, op: Op, types: list, neutral: list, elem: Elem, n: K.Expr,
               store: Callable[[K.Expr, list], None], lo: K.Expr, hi: K.Expr,
               carry: list, lid: K.Expr, G: int, E: int, tile: list, tots: list) -> list:
    """One group scans the contiguous range [lo, hi) (group-uniform bounds,
    lo <= hi <= n) starting from `carry` (variables, updated): tile after tile
    of G*E elements, each loaded coalesced into `tile` (local, G*E per
    component), each work-item folds its E consecutive elements, a group
    scan of those (in `tots`, local, G per component), each work-item
    rescans its elements from its prefix in local memory, and the tile is
    written back coalesced through store(j, values). Padding past hi is
    the neutral element (never written). Returns `carry`, now the
    combination of carry and every element of the range."""
    TE = G * E
    ntiles = lw.let("ntiles", ceil_div(S.b("sub", hi, lo), S.const(TE, I64)))

    def one_tile(t):
        base = lw.let("base", S.b("add", lo, S.b("mul", t, S.const(TE, I64))))
        mine = tile_up(lw, op, types, neutral, elem, n, base, hi, lid, G, E, tile, tots)
        tile_down(lw, op, types, store, base, hi, carry, lid, G, E, tile, tots, mine)
    lw.for_range("t", ZERO, ntiles, one_tile)
    return carry


def tile_up(lw: Lowerer, op: Op, types: list, neutral: list, elem: Elem, n: K.Expr,
            base: K.Expr, hi: K.Expr, lid: K.Expr, G: int, E: int, tile: list,
            tots: list) -> K.Expr:
    """The first half of one tile of block_scan: the G*E elements from
    `base` (neutral past hi) loaded coalesced into `tile`, each work-item's
    E consecutive ones folded, and a group scan of those into `tots` (so
    tots[c][G-1] is the tile's total). Returns this work-item's first slot
    in the tile (lid * E). Ends after a barrier."""
    cE, cG = S.const(E, I64), S.const(G, I64)

    def load(e):
        slot = lw.let("slot", S.b("add", S.b("mul", e, cG), lid))
        j = lw.let("jt", S.b("add", base, slot))
        xs = new_vars(lw, "x", types, list(neutral))
        when(lw, S.b("lt", j, hi), lambda: set_all(lw, xs, in_range_index(lw, j, n, elem)))
        store_all(lw, tile, slot, xs)
    lw.for_range("e", ZERO, cE, load)
    lw.emit(K.Barrier())
    mine = lw.let("mine", S.b("mul", lid, cE))
    part = new_vars(lw, "part", types, list(neutral))

    def fold(e):
        set_all(lw, part, op(part, load_all(lw, tile, S.b("add", mine, e))))
    lw.for_range("e", ZERO, cE, fold)
    group_scan(lw, op, tots, part, lid, G)
    return mine


def tile_down(lw: Lowerer, op: Op, types: list, store: Callable[[K.Expr, list], None],
              base: K.Expr, hi: K.Expr, carry: list, lid: K.Expr, G: int, E: int,
              tile: list, tots: list, mine: K.Expr) -> None:
    """The second half: each work-item rescans its E elements from its
    prefix (carry, then the work-items before it), carry takes in the tile's
    total, and the tile is written out coalesced through store(j, values)
    at every j < hi. Ends after a barrier."""
    cE, cG = S.const(E, I64), S.const(G, I64)
    pre = new_vars(lw, "pre", types, list(carry))
    when(lw, S.b("gt", lid, ZERO), lambda: set_all(
        lw, pre, op(carry, load_all(lw, tots, S.b("sub", lid, ONE)))))
    set_all(lw, carry, op(carry, load_all(lw, tots, S.const(G - 1, I64))))

    def rescan(e):
        k = lw.let("k", S.b("add", mine, e))
        set_all(lw, pre, op(pre, load_all(lw, tile, k)))
        store_all(lw, tile, k, pre)
    lw.for_range("e", ZERO, cE, rescan)
    lw.emit(K.Barrier())

    def write(e):
        slot = lw.let("slot", S.b("add", S.b("mul", e, cG), lid))
        j = lw.let("jt", S.b("add", base, slot))
        when(lw, S.b("lt", j, hi), lambda: store(j, load_all(lw, tile, slot)))
    lw.for_range("e", ZERO, cE, write)
    lw.emit(K.Barrier())


def group_count(lw: Lowerer, n: K.Expr, per_group: int) -> K.Expr:
    """How many groups a pass over n elements uses: enough to fill the
    device (NumThreads, the device's compute units x 64, times Target.fill
    work-items, 32 by default, in groups of G: 8 groups of 256 per compute
    unit on an H100), no more
    than ceil(n / per_group), at least 1."""
    G = lw.options.target.group_size
    fill = lw.options.target.fill
    most = lw.let("most", S.b("div", S.b("mul", K.NumThreads(), S.const(fill, I64)),
                               S.const(G, I64)))
    most = lw.let("most", K.Sel(S.b("ge", most, ONE), most, ONE))
    want = lw.let("want", ceil_div(n, S.const(per_group, I64)))
    ng = lw.let("ng", K.Sel(S.b("lt", want, most), want, most))
    return lw.let("ng", K.Sel(S.b("ge", ng, ONE), ng, ONE))


# -- one 64-bit word for a 32-bit value and its flag (segscan.py, segred.py)

def packs(types: list, target) -> bool:
    """Whether a block's (flag, value) fits one 64-bit atomic word: one
    32-bit value (and 64-bit atomics). Only then is the single pass used:
    OpenCL 1.2 has no fence across work-groups (NVIDIA spells mem_fence as
    membar.cta), so a value and its flag must travel in one atomic access."""
    return (target.atomics64 and len(types) == 1 and types[0].bits == 32
            and types[0] is not K.BOOL)


def pack(flag: int, x: K.Expr) -> K.Expr:
    """The status word (flag << 32) | bits(x) of a 32-bit value x."""
    bits = x if K.type_of(x) is U32 else K.Cast(U32, x, bits=True)
    return S.b("or", S.const(flag << 32, U64), K.Cast(U64, bits))


def unpack(w: K.Expr, t) -> tuple[K.Expr, K.Expr]:
    """(flag as i32, value as t) of a status word."""
    flag = K.Cast(I32, S.b("shr", w, S.const(32, U64)))
    low = K.Cast(U32, w)
    return flag, (low if t is U32 else K.Cast(t, low, bits=True))
