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


def _hoist_from_loop(loop, outer_assigned_before: set) -> tuple[list, K.Stm, list]:
    """(allocations to put before the loop, the loop, frees after it)."""
    body = loop.body
    changed = body.stms
    assigned = _assigned(body)
    if isinstance(loop, K.For):
        assigned.add(loop.var.name)
    top_frees = {s.ptr.name for s in changed
                 if isinstance(s, K.Free) and isinstance(s.ptr, K.KVar)}
    before, keep = [], []
    moved: set[str] = set()
    for s in changed:
        if (isinstance(s, K.Alloc) and s.var.name in top_frees
                and not (K.expr_vars(s.count) & assigned)
                and sum(1 for t in changed if isinstance(t, (K.Alloc, K.Set))
                        and getattr(t, "var", None) is not None
                        and t.var.name == s.var.name) == 1
                and not _reassigned_inside(body, s.var.name, s)):
            before.append(s)
            moved.add(s.var.name)
            continue
        keep.append(s)
    if not moved:
        return [], loop, []
    keep = [s for s in keep if not (isinstance(s, K.Free) and isinstance(s.ptr, K.KVar)
                                    and s.ptr.name in moved)]
    after = [K.Free(a.var) for a in before]
    new_body = K.Block(tuple(keep))
    if isinstance(loop, K.For):
        loop = K.For(loop.var, loop.lo, loop.hi, new_body)
    else:
        loop = K.While(loop.cond, new_body)
    return before, loop, after


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
            out.append(K.ParFor(s.var, s.count, _block(s.body, True), s.parallel_if))
        elif isinstance(s, (K.For, K.While)):
            inner = _block(s.body, in_par)
            loop = (K.For(s.var, s.lo, s.hi, inner) if isinstance(s, K.For)
                    else K.While(s.cond, inner))
            before, loop, after = _hoist_from_loop(loop, set())
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
