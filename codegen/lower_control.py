"""Lowering rules of control flow (core IR `If` and `Loop`, a "common"
family beside lower_base.py's walk and scopes): both branches of
an If produce their results into shared variables (_merge_if); a Loop
carries its values in variables, arrays with their shapes fixed when the
body keeps them (else re-lowered with shapes that vary, _ShapeVaries), and
the loop owns the carried arrays."""
from __future__ import annotations

from typing import Optional

from pyshark.core import ir
from pyshark.core.types import BOOL, I64, ScalarType

from . import kir as K
from . import scalar as S
from .kir_traverse import walk_stms
from .lower_arrays import versioned_for
from .lower_base import Arr, Delayed, Lowerer, RuleTable, Value, shape_size

def _merge_if(lw: Lowerer, cond: K.Expr, then_fn, else_fn, types, taker=None) -> list:
    """Lowers both branches; each returns [(value, owned)]. Array results are
    uniformly owned (fresh variables the enclosing scope frees) or uniformly
    borrowed (aliases of what the branches returned). A borrowed side is
    copied, unless `taker` (_carried_taker) lets the If take it over: the
    other branch then frees it."""
    with lw.block() as tb:
        tres = then_fn()
    with lw.block() as eb:
        eres = else_fn()
    tstms, estms = list(tb[0].stms), list(eb[0].stms)
    out = []
    for k, t in enumerate(types):
        (tv, town), (ev, eown) = tres[k], eres[k]
        if isinstance(t, ScalarType):
            v = lw.var("if", t)
            tstms.append(K.Set(v, tv))
            estms.append(K.Set(v, ev))
            out.append(v)
            continue
        if town != eown and taker is not None and taker(ev if town else tv):
            kept = (ev if town else tv).base
            (tstms if town else estms).append(K.Free(kept))
            town = eown = True
        if town != eown:
            # make the borrowed side owned by copying it inside its branch
            with lw.emitting_into(tstms if not town else estms), lw.temp_scope():
                if not town:
                    tv, town = lw.copy_arr(tv), True
                else:
                    ev, eown = lw.copy_arr(ev), True
        same_base = (isinstance(tv.base, K.KVar) and isinstance(ev.base, K.KVar)
                     and tv.base.name == ev.base.name)
        if same_base:
            base = tv.base
        else:
            base = lw.var("ifb", tv.base.type if isinstance(tv.base, K.KVar)
                          else K.type_of(tv.base))
            tstms.append(K.Set(base, tv.base))
            estms.append(K.Set(base, ev.base))
        if tv.data is tv.base and ev.data is ev.base:
            data = base                 # both whole blocks: so is the result
        else:
            data = lw.var("ifd", K.Ptr(t.elem))
            tstms.append(K.Set(data, tv.data))
            estms.append(K.Set(data, ev.data))
        shape = []
        for d in range(t.rank):
            sv = lw.var("ifn", I64)
            tstms.append(K.Set(sv, tv.shape[d]))
            estms.append(K.Set(sv, ev.shape[d]))
            shape.append(sv)
        if town:
            lw.own(base)
            aliases = frozenset({base.name})
        else:
            aliases = tv.aliases | ev.aliases | frozenset({base.name})
        out.append(Arr(base, data, tuple(shape), t.elem, aliases))
    lw.emit(K.If(cond, K.Block(tuple(tstms)), K.Block(tuple(estms))))
    return out


def _h_if(lw: Lowerer, e: ir.If, env, stm):
    cond = lw.scalar(e.cond, env)
    live = lw.live
    taker = _carried_taker(lw, env)
    return _merge_if(lw, cond,
                     lambda: lw.lower_body(e.then_body, env, live),
                     lambda: lw.lower_body(e.else_body, env, live), e.ret, taker)


def _carried_taker(lw: Lowerer, env):
    """For an If directly in a loop's body (`if c: x = f(x)`, the other
    branch keeping x): a function that takes over a branch's borrowed
    result when it is a carried array the iteration owns whole and no name
    live after the If sees it (a loop parameter counts as live only where
    the body itself reads it later). The iteration then no longer frees it;
    _merge_if frees it in the branch that replaces it. Without this the
    branch that keeps x copied it in every iteration. None elsewhere."""
    it = lw.iteration_scope()
    if it is None:
        return None
    live = lw.live_after_here()

    def take(v) -> bool:
        if not (isinstance(v, Arr) and isinstance(v.base, K.KVar)
                and v.aliases == frozenset({v.base.name})
                and any(b.name == v.base.name for b in it.owned)):
            return False
        if any(_may_read(env.get(n), v.base) for n in live):
            return False
        it.owned = [b for b in it.owned if b.name != v.base.name]
        return True
    return take


def _may_read(val, base: K.KVar) -> bool:
    """Whether a bound value may read the block of `base` when it is used: an
    array on it, or a value whose reads are not known here (a delayed
    producer, which can_delay lets cross an If, or a transposed view)."""
    if val is None or isinstance(val, K.Expr):
        return False
    if isinstance(val, Arr):
        return val.base == base or base.name in val.aliases
    return True


def _carried(lw: Lowerer, p: ir.Var, shape: Optional[tuple] = None,
             whole: bool = False) -> Value:
    """Loop variables for a loop parameter (an array's shape is fixed when
    `shape` is given; with `whole` its data pointer is its base)."""
    t = p.type
    if isinstance(t, ScalarType):
        return lw.var(p.name, t)
    base = lw.var(p.name + "_b", K.Ptr(t.elem))
    data = base if whole else lw.var(p.name + "_d", K.Ptr(t.elem))
    if shape is None:
        shape = tuple(lw.var(p.name + "_n", I64) for _ in range(t.rank))
    return Arr(base, data, shape, t.elem, frozenset({base.name}))


def assign_stms(lw: Lowerer, dst: Value, src: Value) -> list:
    """The statements that make the variables of `dst` hold `src`."""
    if isinstance(dst, Arr):
        data = [] if dst.data is dst.base else [K.Set(dst.data, src.data)]
        return ([K.Set(dst.base, src.base)] + data
                + [K.Set(a, b) for a, b in zip(dst.shape, src.shape) if a != b])
    return [K.Set(dst, src)]


class _ShapeVaries(Exception):
    """A loop-carried array's shape changes across iterations."""


class _StaysBorrowed(Exception):
    """A loop's borrowed initial array cannot be read in place: the body
    copies it whole, or hands it on as a result."""


class _NotWhole(Exception):
    """A loop-carried array takes a value whose data pointer is not its base
    (a view)."""


def _h_loop(lw: Lowerer, e: ir.Loop, env, stm):
    """A sequential loop. Array parameters are owned by the loop: an initial
    value the loop cannot take over (borrowed, or still live after the loop)
    is copied first; the body frees what it does not carry on.

    Lowered first with three assumptions, each dropped (and the loop
    lowered again) when the body breaks it:
    - `fixed`: each carried array keeps its initial shape (a stencil
      iterated in place; the bounds analysis then knows the sizes);
    - `lazy`: an entry's input as an initial value is read in place, not
      copied (unless the body would copy it anyway);
    - `whole`: every value of a carried array is a whole block (its data
      pointer is its base), so the loop's result can be handed to the
      caller, or kept by an If, as it is."""
    fixed = whole = True
    lazy = _reads_an_input(lw, e, env)
    while True:
        try:
            with lw.ownership_restored_on((_ShapeVaries, _StaysBorrowed, _NotWhole)), \
                    lw.block() as blk:
                vals = _lower_loop(lw, e, env, fixed, lazy, whole)
        except _ShapeVaries:
            fixed = False
            continue
        except _StaysBorrowed:
            lazy = False
            continue
        except _NotWhole:
            whole = False
            continue
        for s in blk[0].stms:
            lw.emit(s)
        return vals


def _reads_an_input(lw: Lowerer, e: ir.Loop, env) -> bool:
    """Whether an initial value of a carried array is an entry's input
    (else `lazy` has nothing to do)."""
    for p, init in zip(e.params, e.inits):
        v = env.get(init.name) if isinstance(init, ir.Var) else None
        if (not isinstance(p.type, ScalarType) and isinstance(v, Arr)
                and isinstance(v.base, K.KVar) and v.base.name in lw.inputs):
            return True
    return False


def _lower_loop(lw: Lowerer, e: ir.Loop, env, fixed_shapes: bool, lazy: bool, whole: bool):
    """The loop's statements; its carried values are returned. With `lazy`,
    a carried array whose initial value is an entry's input starts out
    borrowed instead of copied (copy-on-write by ownership: a flag `own`
    says whether the loop has replaced it by memory of its own; only then
    is the old value freed, and if no iteration ran, it is copied after the
    loop). Iterative stencils read their input in the first step and make
    a new array: the copy was a whole pass over the input for nothing, as
    was the entry's final copy of a result whose data pointer is not its
    base, which `whole` removes."""
    live = lw.live
    inits = []
    owns: dict[int, K.KVar] = {}        # lazy parameter -> its `own` flag
    for k, (p, init) in enumerate(zip(e.params, e.inits)):
        v = lw.atom(init, env)
        if not isinstance(p.type, ScalarType):
            if isinstance(v, Delayed):
                v = lw.materialise(v)
            sc = lw.owned_here(v.base)
            others_live = any(
                isinstance(env.get(n), Arr) and env[n].base == v.base for n in live)
            if (sc is not None and sc is lw.scopes[-1] and not others_live
                    and v.aliases == frozenset({v.base.name})):
                lw.disown(v.base)
                if whole and v.data is not v.base:
                    raise _NotWhole()
            elif lazy and isinstance(v.base, K.KVar) and v.base.name in lw.inputs:
                owns[k] = lw.var("own", BOOL)
                lw.emit(K.Set(owns[k], S.const(False, BOOL)))
            else:
                v = lw.copy_arr(v)
                lw.disown(v.base)
            if fixed_shapes:
                v = Arr(v.base, v.data, tuple(lw.let("n", d) for d in v.shape), v.elem,
                        v.aliases)
        inits.append(v)
    if lazy and not owns:
        raise _StaysBorrowed()          # nothing borrowed: the plain lowering
    carried = [_carried(lw, p, v.shape if fixed_shapes and isinstance(v, Arr) else None, whole)
               for p, v in zip(e.params, inits)]
    for k, (c, v) in enumerate(zip(carried, inits)):
        if k in owns:                   # base = data: never freed while borrowed
            v = Arr(v.data, v.data, v.shape, v.elem, v.aliases)
        for s in assign_stms(lw, c, v):
            lw.emit(s)
    borrowed = {carried[k].base.name: carried[k] for k in owns}
    inner = dict(env)
    for p, c in zip(e.params, carried):
        inner[p.name] = c
    body_live = live | frozenset(p.name for p in e.params)

    def iteration() -> K.Block:
        with lw.block() as blk:
            with lw.temp_scope(owned=[c.base for c in carried
                                      if isinstance(c, Arr) and c.base.name not in borrowed],
                               carried=frozenset(p.name for p in e.params)) as sc:
                res = lw.lower_body(e.body, inner, body_live)
                vals = []
                for (r, owned), c in zip(res, carried):
                    if isinstance(c, Arr) and not owned:
                        if r.base.name not in {x.base.name for x in carried
                                               if isinstance(x, Arr)} or \
                                r.aliases - {r.base.name}:
                            r = lw.copy_arr(r)
                            lw.disown(r.base)
                    if fixed_shapes and isinstance(c, Arr) and tuple(r.shape) != tuple(c.shape):
                        raise _ShapeVaries()
                    if isinstance(c, Arr):
                        if r.aliases & borrowed.keys() or r.base.name in borrowed:
                            raise _StaysBorrowed()
                        if whole and r.data is not r.base:
                            raise _NotWhole()
                    vals.append(r)
                if borrowed and _copies_whole(lw.emitted(), borrowed.values()):
                    raise _StaysBorrowed()
                keep = {r.base.name for r in vals if isinstance(r, Arr)}
                for b in sc.owned:
                    if b.name not in keep:
                        lw.emit(K.Free(b))
                for k, own in owns.items():
                    b = carried[k].base
                    if b.name not in keep:
                        lw.emit(K.If(own, K.Block((K.Free(b),))))
                temps = [lw.var("nx", K.type_of(r)) if not isinstance(r, Arr)
                         else carried_like(lw, r, c.shape if fixed_shapes else None, whole)
                         for r, c in zip(vals, carried)]
                for t, r in zip(temps, vals):
                    for s in assign_stms(lw, t, r):
                        lw.emit(s)
                for c, t in zip(carried, temps):
                    for s in assign_stms(lw, c, t):
                        lw.emit(s)
                for own in owns.values():
                    lw.emit(K.Set(own, S.const(True, BOOL)))
        return blk[0]

    if isinstance(e.form, ir.ForLoop):
        n = lw.scalar(e.form.bound, env)
        i = lw.var("it", I64)
        inner[e.form.index.name] = i
        versioned_for(lw, i, S.const(0, I64), n, iteration)
    else:
        def cond_value() -> K.Expr:
            res = lw.lower_body(e.form.cond, inner, body_live)
            return res[0][0]
        c = lw.var("cond", BOOL)
        lw.emit(K.Set(c, cond_value()))
        body = iteration()
        with lw.block() as cb:
            lw.emit(K.Set(c, cond_value()))
        lw.emit(K.While(c, K.Block(body.stms + cb[0].stms)))
    for k, own in owns.items():         # no iteration replaced it: copied now
        c = carried[k]
        with lw.block() as fb:
            p = lw.var("copy", K.type_of(c.base))
            count = shape_size(c.shape)
            lw.emit(K.Alloc(p, count))
            lw.emit(K.CopyMem(p, c.data, count))
            for s in assign_stms(lw, c, Arr(p, p, c.shape, c.elem, frozenset({p.name}))):
                lw.emit(s)
        lw.emit(K.If(S.lnot(own), fb[0]))
    for c in carried:
        if isinstance(c, Arr):
            lw.own(c.base)
    return list(carried)


def _copies_whole(stms: list, arrs) -> bool:
    """Whether any statement (nested too) copies one of `arrs` from its
    start: the body needs that array as its own, which a borrowed value
    would make it copy in every iteration instead of once."""
    names = {a.data.name for a in arrs} | {a.base.name for a in arrs}
    for s in walk_stms(K.Block(tuple(stms))):
        if isinstance(s, K.CopyMem) and isinstance(s.src, K.KVar) and s.src.name in names:
            return True
    return False


def carried_like(lw: Lowerer, r: Arr, shape: Optional[tuple] = None,
                 whole: bool = False) -> Arr:
    """Fresh variables for an array like `r` (its shape's when `shape` is
    None; with `whole` its data pointer is its base)."""
    base = lw.var("nb", K.type_of(r.base))
    data = base if whole else lw.var("nd", K.type_of(r.data))
    if shape is None:
        shape = tuple(lw.var("nn", I64) for _ in r.shape)
    return Arr(base, data, shape, r.elem, frozenset({base.name}))


HANDLERS = {ir.If: _h_if, ir.Loop: _h_loop}


def register(rules: RuleTable) -> None:
    rules.register_all("common", HANDLERS)
