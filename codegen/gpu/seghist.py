"""seghist on a GPU: reduce_by_index with local-memory sub-histograms and
atomic updates.

The algorithm is Futhark's GPU SegHist (compiler/src/Futhark/CodeGen/
ImpGen/GPU/SegHist.hs), after T. Henriksen, S. Hellfritzsch, P. Sadayappan,
C. Oancea, "Compiling Generalized Histograms for GPU" (SC 2020), in the
shape this kernel IR can express:

- The operator must be one scalar update expressible as an atomic
  read-modify-write: one destination, a 32- or 64-bit element type (64-bit
  only where the target has 64-bit atomics), and a lambda that lowers to
  straight-line code reading nothing but its two arguments (no memory, no
  checks). It becomes the `value` of kir.AtomicUpdate (a compare-and-swap
  loop; an integer `+` is spelled as atomic_add). Anything else (tuple
  values, rows, bool/8/16-bit types, an operator that can fail) is
  declined before anything is emitted, and mc/seghist.py lowers it.
- Local path (bins * element size fits target.local_mem, and at most
  LOCAL_BINS_PER_ITEM bins per work-item of a group): a work-group kernel
  of `ng` groups (enough to fill the device, no more than the input needs)
  where each group keeps R copies of the histogram in local memory
  (Futhark's "multiple sub-histograms per group" against conflicts on few
  bins; work-item l updates copy l % R): initialise them to the neutral
  element, Barrier, every work-item folds elements e = i, i + ng*G, ...
  (coalesced) in with local AtomicUpdates, Barrier, then each work-item
  folds the R copies of its bins and merges them into the result in global
  memory with one AtomicUpdate (skipped when the folded value equals the
  neutral element, so untouched bins cost nothing). When the number of bins
  is only known at run time, a host `if` picks between this kernel (sized
  for the largest histogram that qualifies) and the global path.
- Global path (larger histograms, where conflicts are rare): a plain ParFor,
  one work-item per element, AtomicUpdate on the result in global memory.
- Element code that can fail (a check in a map fused into the indices or
  values) never runs in a work-group kernel (kir.py forbids Fail there):
  the local path first computes such inputs into memory with a plain ParFor
  (which may fail); the global path runs it in its own plain ParFor body.

The result starts as a copy of dest (as in mc/seghist.py: dest_setup; a
dest that is a delayed map, e.g. a replicate, is computed straight into the
result, so nothing is copied then). Python mode folds values into dest in
order; the operator being associative and commutative (LANGUAGE.md), the
order of the atomic updates and of the merge is allowed, floats included
(reduce_by_index may reassociate).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional

from pyshark.core import ir
from pyshark.core.types import BOOL, I64, ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower_base import Delayed, Lowerer
from ..mc.common import apply_op, elements
from ..mc.scatter import dest_setup, in_range
from .common import can_fail, group_for, group_size, local_alloc, trial

LOCAL_BINS_PER_ITEM = 8     # local path: at most this many bins per work-item of a group
SUBHIST_ELEMS = 2048        # R copies of a small histogram: R * bins up to this many ...
MAX_SUBHISTS = 32           # ... and R at most this
GROUPS_PER_THREAD = 32      # groups of the local kernel: at most NumThreads * 32 / G
MAX_OP_NODES = 200          # an operator expression larger than this is declined

ZERO = S.const(0, I64)
ONE = S.const(1, I64)


# -- the operator as one expression --------------------------------------------


def _subst(e: K.Expr, env: dict) -> K.Expr:
    if isinstance(e, K.KVar):
        return env.get(e.name, e)
    if isinstance(e, K.Bin):
        return K.Bin(e.op, _subst(e.x, env), _subst(e.y, env), e.reassoc, e.contract)
    if isinstance(e, K.Un):
        return K.Un(e.op, _subst(e.x, env))
    if isinstance(e, K.Cast):
        return replace(e, x=_subst(e.x, env))
    if isinstance(e, K.Sel):
        return K.Sel(_subst(e.cond, env), _subst(e.x, env), _subst(e.y, env))
    return e


def _size(e: K.Expr) -> int:
    return 1 + sum(_size(c) for c in K.children(e))


def _pure(e: K.Expr) -> bool:
    """No memory, no thread or group ids: safe to evaluate again and again in
    a compare-and-swap loop."""
    if isinstance(e, (K.Load, K.PtrAdd, K.NumThreads, K.LocalId, K.GroupId)):
        return False
    return all(_pure(c) for c in K.children(e))


def operator_expr(lw: Lowerer, lam: ir.Lambda, env, t: ScalarType
                  ) -> Optional[Callable[[K.Expr, K.Expr], K.Expr]]:
    """The operator as a function of (accumulator, value) expressions giving
    one pure expression, or None when its lowering is more than straight-line
    pure Sets (a check, a loop, a memory read). Emits nothing."""
    a, x = lw.var("acc", t), lw.var("val", t)
    try:
        res, blk = trial(lw, lambda: apply_op(lw, lam, env, [a, x], True))
    except Exception:               # anything the trial cannot lower: mc's business
        return None
    if len(res) != 1 or not isinstance(res[0], (K.KVar, K.KConst, K.Bin, K.Un, K.Cast, K.Sel)):
        return None
    inl: dict = {}
    for s in blk.stms:
        if not isinstance(s, K.Set):
            return None
        inl[s.var.name] = _subst(s.value, inl)
    expr = _subst(res[0], inl)
    if K.type_of(expr) != t or not _pure(expr) or _size(expr) > MAX_OP_NODES:
        return None
    local = {s.var.name for s in blk.stms}
    if K.expr_vars(expr) & local:
        return None
    if t.is_int and isinstance(expr, K.Bin) and expr.op == "add" and expr.y == a \
            and a.name not in K.expr_vars(expr.x):
        expr = K.Bin("add", a, expr.x, expr.reassoc)    # old + v: spelled as atomic_add

    def op(acc: K.Expr, val: K.Expr) -> K.Expr:
        return _subst(expr, {a.name: acc, x.name: val})
    return op


# -- host-side integer helpers (constant-folding) ----------------------------------


def const_int(lw: Lowerer, e: K.Expr, depth: int = 0) -> Optional[int]:
    """The value of an i64 expression when the lowering's definitions make it
    a constant (a replicate's length `max(256, 0)`), else None."""
    if depth > 20:
        return None
    if isinstance(e, K.KConst):
        return e.value if isinstance(e.value, (int, bool)) else None
    if isinstance(e, K.KVar):
        d = lw.facts.defs.get(e.name)
        return None if d is None else const_int(lw, d, depth + 1)
    if isinstance(e, K.Sel):
        c = const_int(lw, e.cond, depth + 1)
        return None if c is None else const_int(lw, e.x if c else e.y, depth + 1)
    if isinstance(e, K.Bin):
        x, y = const_int(lw, e.x, depth + 1), const_int(lw, e.y, depth + 1)
        if x is None or y is None:
            return None
        ops = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
               "lt": lambda: x < y, "le": lambda: x <= y, "gt": lambda: x > y,
               "ge": lambda: x >= y, "eq": lambda: x == y, "ne": lambda: x != y,
               "and": lambda: x and y, "or": lambda: x or y}
        return ops[e.op]() if e.op in ops else None
    return None


def _c(v: int) -> K.KConst:
    return S.const(v, I64)


def _min(lw, x, y):
    return lw.let("mn", K.Sel(S.b("lt", x, y), x, y))


def _max(lw, x, y):
    return lw.let("mx", K.Sel(S.b("gt", x, y), x, y))


def _ceil_div(lw, x: K.Expr, d: K.Expr) -> K.Expr:
    """ceil(x / d) for x >= 0, d >= 1."""
    return lw.let("cd", S.b("div", S.b("add", x, S.b("sub", d, ONE)), d))


# -- the algorithm --------------------------------------------------------------


def lower_reduce_by_index(lw: Lowerer, e: ir.ReduceByIndex, env, stm):
    tgt = lw.options.target
    lam = e.lam
    if not lw.options.parallel or len(e.dests) != 1 or len(lam.ret) != 1:
        return None
    t = lam.ret[0]
    if not isinstance(t, ScalarType) or t is BOOL or t.bits not in (32, 64):
        return None
    if t.bits == 64 and not tgt.atomics64:
        return None
    if lw.atom(e.dests[0], env).rank != 1:
        return None
    op = operator_expr(lw, lam, env, t)
    if op is None:
        return None

    n, idxs, vals, dests, m = dest_setup(lw, e, env, stm, "reduce_by_index")
    res = dests[0]
    ne = lw.atom(e.neutral[0], env)
    G = group_size(lw)
    cap = min(tgt.local_mem // (t.bits // 8), LOCAL_BINS_PER_ITEM * G)
    mc = const_int(lw, m)
    ins = [idxs, *vals]

    def global_path():
        def body(i):
            xs = elements(lw, ins, i)
            j, ok = in_range(lw, xs[0], m)
            old = lw.var("old", t)
            lw.emit(K.If(ok, K.Block((K.AtomicUpdate(res.data, j, old, op(old, xs[1])),))))
        lw.par_for("i", n, body)

    if cap < 1 or (mc is not None and not 0 < mc <= cap):
        global_path()
        return dests

    def local_path():
        if mc is not None:
            r = max(1, min(MAX_SUBHISTS, SUBHIST_ELEMS // mc, cap // mc))
            size, R = r * mc, _c(r)
        else:
            size = cap
            R = _max(lw, ONE, _min(lw, _c(MAX_SUBHISTS), S.b("div", _c(cap), m)))
        with lw.temp_scope(free=True):
            _local_kernel(lw, n, m, R, size, ins, res, ne, op, t, G)

    if mc is not None:
        local_path()
        return dests
    with lw.block() as loc:
        local_path()
    with lw.block() as glob:
        global_path()
    fits = S.land(S.b("gt", m, ZERO), S.b("le", m, _c(cap)))
    lw.emit(K.If(fits, loc[0], glob[0]))
    return dests


def _local_kernel(lw: Lowerer, n, m, R, size: int, ins: list, res, ne, op, t, G: int):
    # element code that can fail: compute the delayed inputs into memory first
    probe = lw.var("probe", I64)
    _, code = trial(lw, lambda: elements(lw, ins, probe))
    if can_fail(code):
        delayed = [a for a in ins if isinstance(a, Delayed)]
        outs = [lw.alloc("hin", a.elem, (n,)) for a in delayed]

        def mat(i):
            for o, v in zip(outs, elements(lw, delayed, i)):
                lw.emit(K.Store(o.data, i, v))
        lw.par_for("i", n, mat)
        swap = dict(zip(map(id, delayed), outs))
        ins = [swap.get(id(a), a) for a in ins]

    gs = _c(G)
    per_group = _max(lw, gs, m)
    limit = _max(lw, ONE, lw.let("ngm", S.b("div", S.b("mul", K.NumThreads(),
                                                       _c(GROUPS_PER_THREAD)), gs)))
    ng = _min(lw, limit, _ceil_div(lw, n, per_group))
    total = lw.let("tot", S.b("mul", ng, gs))
    hm = lw.let("hm", S.b("mul", R, m))
    init_k = _ceil_div(lw, hm, gs)
    merge_k = _ceil_div(lw, m, gs)
    elem_k = _ceil_div(lw, n, _max(lw, total, ONE))

    def body(i):
        h = local_alloc(lw, "hist", t, size)
        lid = lw.let("lid", K.LocalId())

        def init(k):
            b = lw.let("b", S.b("add", S.b("mul", k, gs), lid))
            lw.emit(K.If(S.b("lt", b, hm), K.Block((K.Store(h, b, ne),))))
        lw.for_range("k", ZERO, init_k, init)
        lw.emit(K.Barrier())
        sub = lw.let("sub", S.b("mul", S.b("rem", lid, R), m))

        def fold(k):
            el = lw.let("el", S.b("add", S.b("mul", k, total), i))
            with lw.block() as blk:
                xs = elements(lw, ins, el)
                j, ok = in_range(lw, xs[0], m)
                old = lw.var("old", t)
                lw.emit(K.If(ok, K.Block((
                    K.AtomicUpdate(h, S.b("add", sub, j), old, op(old, xs[1])),))))
            lw.emit(K.If(S.b("lt", el, n), blk[0]))
        lw.for_range("k", ZERO, elem_k, fold)
        lw.emit(K.Barrier())

        def merge(k):
            b = lw.let("b", S.b("add", S.b("mul", k, gs), lid))
            with lw.block() as blk:
                acc = lw.var("acc", t)
                lw.emit(K.Set(acc, K.Load(h, b)))

                def copies(r):
                    y = lw.let("y", K.Load(h, S.b("add", S.b("mul", r, m), b)))
                    lw.emit(K.Set(acc, op(acc, y)))
                lw.for_range("r", ONE, R, copies)
                old = lw.var("old", t)
                lw.emit(K.If(S.b("ne", acc, ne), K.Block((
                    K.AtomicUpdate(res.data, b, old, op(old, acc)),))))
            lw.emit(K.If(S.b("lt", b, m), blk[0]))
        lw.for_range("k", ZERO, merge_k, merge)

    group_for(lw, "g", total, body)
