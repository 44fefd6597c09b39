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

from . import kir as K


def _assigned(b: K.Block) -> set[str]:
    out: set[str] = set()
    for s in b.stms:
        out |= K.declared_vars(s)
    return out


def _has_load(e: K.Expr) -> bool:
    return isinstance(e, K.Load) or any(_has_load(c) for c in K.children(e))


def _hoist_from_loop(loop) -> tuple[list, K.Stm, list]:
    """(statements to put before the loop, the loop, frees after it)."""
    body = loop.body
    stms = body.stms
    assigned = _assigned(body)
    if isinstance(loop, K.For):
        assigned.add(loop.var.name)
    set_count: dict[str, int] = {}

    def count_sets(b):
        for t in b.stms:
            if isinstance(t, (K.Set, K.Alloc)):
                set_count[t.var.name] = set_count.get(t.var.name, 0) + 1
            for sb in K.sub_blocks(t):
                count_sets(sb)
    count_sets(body)
    top_sets: dict[str, K.Set] = {}     # filled in order: a size may only use
                                        # definitions that come before its Alloc
    memo: dict[str, bool] = {}

    def invariant(name: str) -> bool:
        """Set once at the top of the body from loop-invariant values (no
        memory reads): the same value in every iteration."""
        if name not in assigned:
            return True
        if name in memo:
            return memo[name]
        memo[name] = False
        t = top_sets.get(name)
        ok = (t is not None and not _has_load(t.value)
              and all(invariant(v) for v in K.expr_vars(t.value)))
        memo[name] = ok
        return ok

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
    new_body = K.Block(tuple(keep))
    if isinstance(loop, K.For):
        loop = K.For(loop.var, loop.lo, loop.hi, new_body, loop.unroll)
    else:
        loop = K.While(loop.cond, new_body)
    return order + before, loop, after


def _defs_needed(e: K.Expr, assigned: set, top_sets: dict) -> list[str]:
    """Body variables an invariant expression reads, definitions first."""
    out: list[str] = []

    def visit(name):
        if name not in assigned or name in out:
            return
        for v in K.expr_vars(top_sets[name].value):
            visit(v)
        out.append(name)
    for v in K.expr_vars(e):
        visit(v)
    return out


def _reassigned_inside(b: K.Block, name: str, alloc) -> bool:
    """Is `name` set anywhere in b other than by `alloc` (at the top)?"""
    def walk(blk, top):
        for s in blk.stms:
            if s is alloc and top:
                continue
            if isinstance(s, (K.Set, K.Alloc)) and s.var.name == name:
                return True
            for sb in K.sub_blocks(s):
                if walk(sb, False):
                    return True
        return False
    return walk(b, True)


def _block(b: K.Block, in_par: bool) -> K.Block:
    out: list = []
    for s in b.stms:
        if isinstance(s, K.If):
            out.append(K.If(s.cond, _block(s.then, in_par), _block(s.orelse, in_par)))
        elif isinstance(s, K.ParFor):
            out.append(K.ParFor(s.var, s.count, _block(s.body, True), s.parallel_if, s.group_size))
        elif isinstance(s, (K.For, K.While)):
            inner = _block(s.body, in_par)
            loop = (K.For(s.var, s.lo, s.hi, inner, s.unroll) if isinstance(s, K.For)
                    else K.While(s.cond, inner))
            before, loop, after = _hoist_from_loop(loop)
            out += before
            out.append(loop)
            out += after
        else:
            out.append(s)
    return K.Block(tuple(out))


def hoist_allocations(m: K.Module) -> K.Module:
    """The module with loop-invariant temporaries allocated once per loop."""
    return K.Module([K.Function(f.name, f.params, _block(f.body, False))
                     for f in m.functions], list(m.messages))
