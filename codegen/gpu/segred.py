"""segred: reduce as a two-stage work-group tree reduction (Futhark's
ImpGen/GPU/SegRed.hs, non-segmented case; the tree is Harris, "Optimizing
Parallel Reduction in CUDA", 2007; see group.py).

Stage 1, a work-group kernel of ng groups of G work-items (ng from
NumThreads and n, group.group_count): each work-item folds many elements
sequentially from the neutral element, the group combines its work-items'
values with a tree in local memory, and work-item 0 writes the group's
partial. Stage 2 (when ng > 1), one group reduces the ng partials the same
way into partials[0]. The host then reads the one result (one Load per
component of the accumulator).

Which elements a work-item folds:
- commutative operator (reduce_comm, or a lambda that is one commutative
  primitive of its parameters: group.is_commutative): strided, work-item g
  of T reads g, g+T, g+2T, ... (coalesced);
- otherwise (reduce is only associative): work-item g folds the g-th of T
  contiguous chunks, in order. This is correct but uncoalesced; Futhark stages chunks through local memory
  (a transposition) to coalesce it -- the next step here.
Either way the tree keeps the local-id order (group.tree_reduce), so an
input of at most T elements is folded by an order-keeping tree, whatever
the operator.

Work-group kernels may not fail: when the fused element code (a Delayed
producer, e.g. a map with a bounds check) can fail, the failing inputs are
first computed into memory by a plain ParFor (lw.materialise), which raises
the error as the mc/ code would; an operator that can fail, array-valued
accumulators and accumulators too large for the target's local memory are
declined (the mc/ algorithm runs).
"""
from __future__ import annotations

from types import SimpleNamespace

from pyshark.core import ir
from pyshark.core.types import I32, I64, U64

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, Delayed, Lowerer
from ..mc.common import all_scalar, apply_op, check_width, elements
from ..usage import free_vars
from .common import can_fail, group_for, group_size, local_alloc, trial
from .group import (ONE, ZERO, fold_contiguous, fold_strided, group_count, in_range_index,
                    is_commutative, lambda_op, local_bytes, new_vars, pack, packs, set_all,
                    tree_reduce, unpack, when)


def op_can_fail(lw: Lowerer, lam, env) -> bool:
    """Whether applying the operator lambda can fail (or allocates)."""
    def gen():
        args = [lw.var("a", t) for t in lam.ret] + [lw.var("b", t) for t in lam.ret]
        return lambda_op(lw, lam, env)(args[:len(lam.ret)], args[len(lam.ret):])
    return can_fail(trial(lw, gen)[1])


def safe_inputs(lw: Lowerer, arrs: list, n: K.Expr) -> list:
    """The inputs, with every Delayed one whose element code can fail (or
    allocate) computed into memory first by a plain ParFor, so that reading
    an element in a work-group kernel cannot fail."""
    out = list(arrs)
    groups: dict = {}
    for k, a in enumerate(arrs):
        if isinstance(a, Delayed):
            groups.setdefault(id(a.group), []).append(k)
    for ks in groups.values():
        d = arrs[ks[0]]
        probe = lw.var("j", I64)
        _, blk = trial(lw, lambda: in_range_index(lw, probe, n, lambda j: elements(lw, [d], j)))
        if not can_fail(blk):
            continue
        # one plain ParFor computes every result of the producer that is used
        mats = {arrs[k].k: lw.alloc("mat", arrs[k].elem, (lw.let("n", d.group.n),))
                for k in ks}

        def body(i):
            vals = d.group.compute(i)
            for r, m in mats.items():
                lw.emit(K.Store(m.data, i, vals[r]))
        lw.par_for("i", d.group.n, body)
        for k in ks:
            out[k] = mats[arrs[k].k]
    return out


def element_fn(lw: Lowerer, arrs: list):
    return lambda j: elements(lw, arrs, j)


def lower_reduce(lw: Lowerer, e: ir.Reduce, env, stm):
    lam = e.lam
    G = group_size(lw)
    if not all_scalar(lam.ret) or local_bytes(lam.ret) * G > lw.options.target.local_mem:
        return None
    arrs = [lw.array(a, env) for a in e.arrs]
    if any(a.rank != 1 for a in arrs) or op_can_fail(lw, lam, env):
        return None
    # -- decided: from here on, code is emitted
    n = lw.scalar(e.width, env)
    check_width(lw, n, e.arrs, arrs, stm.loc, "reduce")
    neutral = [lw.atom(a, env) for a in e.neutral]
    arrs = safe_inputs(lw, arrs, n)
    return group_reduce(lw, lambda_op(lw, lam, env), list(lam.ret), neutral,
                        element_fn(lw, arrs), n, is_commutative(e))


def group_reduce(lw: Lowerer, op, types: list, neutral: list, elem, n: K.Expr,
                 commutative: bool) -> list:
    """The two stages (module docstring) at host level, or the single pass
    where it applies; returns host variables holding the result."""
    if lw.options.target.lookback and packs(types, lw.options.target):
        return one_pass_reduce(lw, op, types, neutral, elem, n, commutative)
    G = group_size(lw)
    cG = S.const(G, I64)
    ng = group_count(lw, n, G)
    T = lw.let("nitems", S.b("mul", ng, cG))
    partials = [lw.var("part", K.Ptr(t)) for t in types]
    for p in partials:
        lw.emit(K.Alloc(p, ng))
    fold = fold_strided if commutative else fold_contiguous

    def stage1(i):
        locs = [local_alloc(lw, "red", t, G) for t in types]
        lid = lw.let("lid", K.LocalId())
        accs = new_vars(lw, "acc", types, list(neutral))
        fold(lw, op, accs, elem, n, i, T, ZERO, n)
        tot = tree_reduce(lw, op, locs, accs, lid, G)
        grp = lw.let("grp", K.GroupId())
        when(lw, S.b("eq", lid, ZERO),
             lambda: [lw.emit(K.Store(p, grp, x)) for p, x in zip(partials, tot)])
    group_for(lw, "g", T, stage1)

    def stage2(i):
        locs = [local_alloc(lw, "red", t, G) for t in types]
        lid = lw.let("lid", K.LocalId())
        accs = new_vars(lw, "acc", types, list(neutral))
        fold(lw, op, accs, lambda j: [lw.let("p", K.Load(p, j)) for p in partials],
             ng, lid, cG, ZERO, ng)
        tot = tree_reduce(lw, op, locs, accs, lid, G)
        when(lw, S.b("eq", lid, ZERO),
             lambda: [lw.emit(K.Store(p, ZERO, x)) for p, x in zip(partials, tot)])
    with lw.block() as blk:
        group_for(lw, "g", cG, stage2)
    lw.emit(K.If(S.b("gt", ng, ONE), blk[0]))
    out = [lw.let("red", K.Load(p, ZERO)) for p in partials]
    for p in partials:
        lw.emit(K.Free(p))
    return out


def one_pass_reduce(lw: Lowerer, op, types: list, neutral: list, elem, n: K.Expr,
                    commutative: bool) -> list:
    """Both stages in one launch, the last group to finish doing stage 2
    (the "last block" reduction of CUDA's threadFenceReduction sample and
    of CUB's single-pass reductions). Each group publishes its partial and
    its "done" flag in one 64-bit word (segscan.pack: OpenCL 1.2 has no
    fence across groups, so what must be seen together travels in one
    atomic access), then takes a ticket; the group with the last ticket
    folds the ng words in the order stage 2 would, reading each with an
    AtomicLoad until its flag shows (it was published before its ticket,
    so the wait is short and never on a group that has not started), and
    sets every word and the ticket counter back to 0. The words live in a
    zeroed Alloc (kir.Alloc.zeroed), which the opencl runtime keeps from
    call to call, so no launch clears them: a sum is one kernel launch. One
    32-bit accumulator (segscan.packs); the same result as two stages."""
    (t,) = types
    G = group_size(lw)
    cG = S.const(G, I64)
    ng = group_count(lw, n, G)
    T = lw.let("nitems", S.b("mul", ng, cG))
    words = lw.var("words", K.Ptr(U64))          # ng (flag, partial) words, then the tickets
    lw.emit(K.Alloc(words, S.b("add", ng, ONE), zeroed=True))
    res = lw.var("res", K.Ptr(t))
    lw.emit(K.Alloc(res, ONE))
    fold = fold_strided if commutative else fold_contiguous
    zero64 = S.const(0, U64)

    def body(i):
        locs = [local_alloc(lw, "red", t, G)]
        last = local_alloc(lw, "last", I32, 1)
        lid = lw.let("lid", K.LocalId())
        lane0 = S.b("eq", lid, ZERO)
        accs = new_vars(lw, "acc", types, list(neutral))
        fold(lw, op, accs, elem, n, i, T, ZERO, n)
        tot = tree_reduce(lw, op, locs, accs, lid, G)

        def publish():
            grp = lw.let("grp", K.GroupId())
            lw.emit(K.AtomicUpdate(words, grp, lw.var("o", U64), pack(1, tot[0])))
            ticket = lw.var("ticket", U64)
            lw.emit(K.AtomicUpdate(words, ng, ticket, S.b("add", ticket, S.const(1, U64))))
            is_last = S.b("eq", ticket, K.Cast(U64, S.b("sub", ng, ONE)))
            lw.emit(K.Store(last, ZERO, K.Sel(is_last, S.const(1, I32), S.const(0, I32))))
        when(lw, lane0, publish)
        lw.emit(K.Barrier())

        def partial(j):
            """Group j's partial, once published; its word back to 0."""
            w = new_vars(lw, "w", [U64], [zero64])[0]
            lw.emit(K.AtomicLoad(w, words, j))
            with lw.block() as wait:
                lw.emit(K.AtomicLoad(w, words, j))
            flag, x = unpack(w, t)
            lw.emit(K.While(S.b("eq", flag, S.const(0, I32)), wait[0]))
            x = lw.let("p", x)
            lw.emit(K.Store(words, j, zero64))
            return [x]

        def stage2():
            accs2 = new_vars(lw, "acc", types, list(neutral))
            fold(lw, op, accs2, partial, ng, lid, cG, ZERO, ng)
            tot2 = tree_reduce(lw, op, locs, accs2, lid, G)
            when(lw, lane0, lambda: [lw.emit(K.Store(res, ZERO, tot2[0])),
                                     lw.emit(K.Store(words, ng, zero64))])
        when(lw, S.b("ne", K.Load(last, ZERO), S.const(0, I32)), stage2)
    group_for(lw, "g", T, body)
    out = [lw.let("red", K.Load(res, ZERO))]
    lw.emit(K.Free(res))
    lw.emit(K.Free(words))
    return out


# ---------------------------------------------------------------------------
# Segmented: a map whose function reduces its rows


def rows_reduced(lw: Lowerer, e: ir.Map, env):
    """What segmented_reduce needs when e is `map(\r... -> reduce(op, ne,
    xs...), X...)` over rank-2 arrays in memory, where xs are the rows r or
    the results of one map of them (and of arrays shared by every row: a
    map-reduce, backprop's sum of products of a weight row and the layer);
    sizes of the rows may come first; scalar results, an operator and a
    map function that cannot fail. Else None."""
    lam = e.lam
    stms = lam.body.stms
    if not stms or not e.arrs:
        return None
    last = stms[-1]
    red = last.exp
    if red.__class__ is not ir.Reduce or not all_scalar(red.lam.ret):
        return None
    result = lam.body.result
    if len(result) != len(last.pat) or any(
            a.__class__ is not ir.Var or a.name != v.name for a, v in zip(result, last.pat)):
        return None
    params = {p.name for p in lam.params}
    local = set(params)
    mp = None
    prefix = []                 # sizes and their checks: run once, on the host
    for s in stms[:-1]:
        if s.exp.__class__ is ir.Map and mp is None and all_scalar(s.exp.lam.ret):
            mp = s
        elif mp is None and s.exp.__class__ in _HOST_PREFIX and (
                s.exp.__class__ is ir.Size or not (free_vars(s.exp) & params)):
            prefix.append(s)
        else:
            return None
        local.update(v.name for v in s.pat)
    if any(a.__class__ is ir.Var and a.name in local for a in red.neutral):
        return None
    if mp is None:
        if any(a.name not in params for a in red.arrs):
            return None
    else:
        made = {v.name for v in mp.pat}
        if {a.name for a in red.arrs} != made or len(red.arrs) != len(made):
            return None
        if free_vars(mp.exp.lam) & local:
            return None
        for a in mp.exp.arrs:
            if a.name in params:
                continue
            v = env.get(a.name)
            if a.name in local or not isinstance(v, Arr) or v.rank != 1:
                return None
    arrs = [lw.array(a, env) for a in e.arrs]
    if any(not isinstance(a, Arr) or a.rank != 2 for a in arrs):
        return None
    G = group_size(lw)
    if local_bytes(red.lam.ret) * G > lw.options.target.local_mem or op_can_fail(lw, red.lam,
                                                                                  env):
        return None
    if mp is not None:
        def gen():
            args = [lw.var("x", p.type) for p in mp.exp.lam.params]
            return apply_op(lw, mp.exp.lam, env, args)
        if can_fail(trial(lw, gen)[1]):
            return None
    return SimpleNamespace(red=red, mp=mp, arrs=arrs, prefix=prefix,
                           by_param={p.name: a for p, a in zip(lam.params, arrs)})


# Statements a segmented reduction's function may run before its map: the
# sizes of its rows (the same for every row of a rank-2 array) and of shared
# arrays, and the checks comparing them, run once on the host for row 0.
_HOST_PREFIX = (ir.Size, ir.BinOp, ir.UnOp, ir.Select, ir.AtomExp, ir.Assert)


def segmented_reduce(lw: Lowerer, e: ir.Map, env, stm):
    """A reduction per row (Futhark's segmented reduction, SegRed with
    segments; the two cases of its "large" and "small" segments): rows of at
    least G elements get a work-group each (coalesced strided reads, a tree
    in local memory, the group-per-segment kernel), shorter rows a
    work-item each folding its row in order. Chosen at run time by the row
    length. A narrow map of long reductions (backprop's 16 sums of 2^20
    products) otherwise ran 16 sequential folds."""
    found = rows_reduced(lw, e, env)
    if found is None:
        return None
    red, mp, by_param = found.red, found.mp, found.by_param
    G = group_size(lw)
    cG = S.const(G, I64)
    types = list(red.lam.ret)
    # -- decided: from here on, code is emitted
    m = lw.scalar(e.width, env)
    arrs = [lw.array(a, env) for a in e.arrs]
    check_width(lw, m, e.arrs, arrs, stm.loc, "map")
    n = arrs[0].shape[1]
    with lw.block() as checks:      # the function's own checks, per element: once if any
        henv = dict(env)
        henv.update({p.name: row for p, row in zip(e.lam.params, elements(lw, arrs, ZERO))})
        for s in found.prefix:
            for v, val in zip(s.pat, lw.lower_exp(s, henv)):
                henv[v.name] = val
        if mp is None:
            check_width(lw, n, red.arrs[1:],
                        [SimpleNamespace(shape=(by_param[a.name].shape[1],))
                         for a in red.arrs[1:]], stm.loc, "reduce")
        else:
            check_width(lw, n, mp.exp.arrs,
                        [SimpleNamespace(shape=(by_param[a.name].shape[1],))
                         if a.name in by_param else lw.array(a, env) for a in mp.exp.arrs],
                        stm.loc, "map")
    lw.emit(K.If(S.b("gt", m, ZERO), checks[0]))
    outs = [lw.alloc("map", t, (m,)) for t in types]
    neutral = [lw.atom(a, env) for a in red.neutral]
    op = lambda_op(lw, red.lam, env)
    fold = fold_strided if is_commutative(red) else fold_contiguous
    if mp is not None:
        order = [next(k for k, v in enumerate(mp.pat) if v.name == a.name) for a in red.arrs]

    def row_elems(r):
        if mp is None:
            rows = elements(lw, [by_param[a.name] for a in red.arrs], r)
            return lambda j: elements(lw, rows, j)
        srcs = [elements(lw, [by_param[a.name]], r)[0] if a.name in by_param
                else lw.array(a, env) for a in mp.exp.arrs]

        def elem(j):
            vals = apply_op(lw, mp.exp.lam, env, elements(lw, srcs, j))
            return [vals[k] for k in order]
        return elem

    def per_group(i):
        locs = [local_alloc(lw, "red", t, G) for t in types]
        lid = lw.let("lid", K.LocalId())
        grp = lw.let("grp", K.GroupId())
        accs = new_vars(lw, "acc", types, list(neutral))
        fold(lw, op, accs, row_elems(grp), n, lid, cG, ZERO, n)
        tot = tree_reduce(lw, op, locs, accs, lid, G)
        when(lw, S.b("eq", lid, ZERO),
             lambda: [lw.emit(K.Store(o.data, grp, x)) for o, x in zip(outs, tot)])

    def per_item(i):
        accs = new_vars(lw, "acc", types, list(neutral))
        elem = row_elems(i)
        lw.for_range("j", ZERO, n, lambda j: set_all(lw, accs, op(accs, elem(j))))
        for o, x in zip(outs, accs):
            lw.emit(K.Store(o.data, i, x))

    with lw.block() as long_rows:
        group_for(lw, "g", S.b("mul", m, cG), per_group)
    with lw.block() as short_rows:
        lw.par_for("i", m, per_item)
    lw.emit(K.If(S.b("ge", n, cG), long_rows[0], short_rows[0]))
    return outs
