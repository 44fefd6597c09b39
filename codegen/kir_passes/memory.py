"""Memory passes on the kernel IR.

`hoist_allocations`: a buffer allocated at the top of a loop body with a
loop-invariant size and freed at the end of the same iteration is the same
size every time: allocate it once before the loop, free it once after, and
reuse it in every iteration (loop-invariant allocation hoisting, as
Futhark's memory-block merging and most array compilers do). Inner loops
first, so a temporary of a loop nest climbs as far as its size allows;
never out of a ParFor (its iterations run at once, each needs its own).

Safe because the body frees the buffer itself before the iteration ends:
nothing refers to it afterwards, so the next iteration may have it again.
"""
from __future__ import annotations

from dataclasses import replace

from .. import kir as K
from ..kir_traverse import has_expr, map_block, map_bodies, map_stm, walk_stms


def _assigned(b: K.Block) -> set[str]:
    out: set[str] = set()
    for s in b.stms:
        out |= K.declared_vars(s)
    return out


def hoist_from_loop(loop) -> tuple[list, K.Stm, list]:
    """(statements to put before the loop, the loop, frees after it)."""
    body = loop.body
    stms = body.stms
    assigned = _assigned(body)
    if isinstance(loop, K.For):
        assigned.add(loop.var.name)
    set_count: dict[str, int] = {}
    for t in walk_stms(body):
        if isinstance(t, (K.Set, K.Alloc)):
            set_count[t.var.name] = set_count.get(t.var.name, 0) + 1
    top_sets: dict[str, K.Set] = {}     # filled in order: a size may only use
                                        # definitions that come before its Alloc
    memo: dict[str, bool] = {}

    def invariant(name: str) -> bool:
        return _invariant(name, assigned, top_sets, memo)

    top_frees = {t.ptr.name for t in stms if isinstance(t, K.Free) and isinstance(t.ptr, K.KVar)}
    before, keep, needed = [], [], []
    moved: set[str] = set()
    for t in stms:
        if isinstance(t, K.Set) and set_count.get(t.var.name) == 1:
            top_sets[t.var.name] = t
        if (isinstance(t, K.Alloc) and t.var.name in top_frees
                and set_count.get(t.var.name) == 1
                and all(invariant(v) for v in K.expr_vars(t.count))):
            needed += [v for v in _defs_needed(t.count, assigned, top_sets) if v not in needed]
            before.append(t)
            moved.add(t.var.name)
            continue
        keep.append(t)
    if not moved:
        return [], loop, []
    keep = [t for t in keep if not (isinstance(t, K.Free) and isinstance(t.ptr, K.KVar)
                                    and t.ptr.name in moved)]
    after = [K.Free(a.var) for a in before]
    # the definitions the sizes need are computed once before the loop too
    # (and again inside, where the body uses them: the same value)
    order = [t for t in stms if isinstance(t, K.Set) and t.var.name in needed]
    return order + before, replace(loop, body=K.Block(tuple(keep))), after


def _invariant(name: str, assigned: set, top_sets: dict, memo: dict) -> bool:
    """Set once at the top of the body from loop-invariant values (no
    memory reads): the same value in every iteration. (A function of its
    own, not a recursive closure: that would be a reference cycle.)"""
    if name not in assigned:
        return True
    if name in memo:
        return memo[name]
    memo[name] = False
    t = top_sets.get(name)
    ok = (t is not None and not has_expr(t.value, K.Load)
          and all(_invariant(v, assigned, top_sets, memo) for v in K.expr_vars(t.value)))
    memo[name] = ok
    return ok


def _defs_needed(e: K.Expr, assigned: set, top_sets: dict) -> list[str]:
    """Body variables an invariant expression reads, definitions first."""
    out: list[str] = []
    for v in K.expr_vars(e):
        _visit_def(v, assigned, top_sets, out)
    return out


def _visit_def(name: str, assigned: set, top_sets: dict, out: list) -> None:
    if name not in assigned or name in out:
        return
    for v in K.expr_vars(top_sets[name].value):
        _visit_def(v, assigned, top_sets, out)
    out.append(name)


def _block(b: K.Block) -> K.Block:
    """b with the allocations of its loops hoisted, inner loops first (a
    ParFor is not such a loop: nothing leaves it)."""
    def stm(s: K.Stm):
        inner = map_stm(s, block=_block)
        if isinstance(inner, (K.For, K.While)):
            before, loop, after = hoist_from_loop(inner)
            return before + [loop] + after
        return inner
    return map_block(b, stm)


def hoist_allocations(m: K.Module) -> K.Module:
    """The module with loop-invariant temporaries allocated once per loop."""
    return map_bodies(m, _block)
