"""Allocation expansion: the per-iteration buffers of a ParFor body become
slices of one block allocated before the loop, so that the body can be a
kernel (OpenCL C has no heap).

    parfor i in 0..n {            c1 = max(c, 1)
      p = alloc(c)          =>    if c1 > LIMIT / max(n, 1): fail MemoryError
      ...                         arena = alloc(c1 * n)
      free(p)                     parfor i in 0..n { p = arena + i * c1; ... }
    }                             free(arena)

This is Futhark's ExpandAllocations for GPU kernels, restricted to what is
plainly safe: an Alloc at the top level of the body whose count reads no
memory and no variable the body declares (so the host can evaluate it before
the loop), whose variable is set nowhere else in the body and is freed at
the top level of the body (so the buffer never outlives its iteration). The
Free goes away with it. When the body uses the buffer only through
Load/Store of the pointer or an alias, copies among them and CopyMem into
or out of it, the blocks are interleaved instead of sliced: p[e] becomes
arena[e * n + i] (Interleave; a CopyMem becomes an element loop), so that neighbouring
work-items touch neighbouring addresses. Other allocations stay, and come
from the work-item heaps of emit_cl.py.

A kir -> kir pass with one decision in it (where memory lives), beside
memory.py's hoist_allocations, which never moves an allocation out of a
ParFor because on a multicore each iteration allocating its own block is
fine; here it is not.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from pyshark.core.types import I64

from .. import kir as K
from ..kir import ALLOC_FAIL_MESSAGE
from ..kir_traverse import (ParForRewriter, has_expr, map_block, map_bodies, map_stm,
                            rewrite_expr, walk_stms)

_LIMIT = (1 << 62)


def _set_count(b: K.Block, name: str) -> int:
    return sum(1 for s in walk_stms(b) if isinstance(s, (K.Set, K.Alloc)) and s.var.name == name)


def alias_class(body: K.Block, a: K.Alloc) -> set:
    """The names that must point at a's block: a's variable and every
    pointer variable all of whose assignments copy a member (`bb = copy_1`,
    and a loop's `nb = bb; bb = nb`). Optimistic, then pruned to a fixpoint,
    then cut to what is reachable from a's variable through the copies, so a
    chain that starts at another allocation never joins."""
    sets: dict = {}
    for s in walk_stms(body):
        if isinstance(s, (K.Set, K.Alloc)) and isinstance(s.var.type, K.Ptr):
            sets.setdefault(s.var.name, []).append(s)
    cls = {n for n, ss in sets.items()
           if n == a.var.name or all(isinstance(t, K.Set) and isinstance(t.value, K.KVar)
                                     for t in ss)}
    changed = True
    while changed:
        changed = False
        for n in list(cls):
            if n != a.var.name and any(t.value.name not in cls for t in sets[n]):
                cls.discard(n)
                changed = True
    reach, todo = {a.var.name}, [a.var.name]
    while todo:
        w = todo.pop()
        for n in cls - reach:
            if any(t.value.name == w for t in sets[n]):
                reach.add(n)
                todo.append(n)
    return reach


def _expandable(body: K.Block, k: int, declared: set) -> Optional[set]:
    """The alias class of the Alloc at body.stms[k] when it can be expanded,
    else None: a count the host can evaluate, its variable set once, and
    exactly one Free of the class, at the top level after it."""
    a = body.stms[k]
    if not isinstance(a, K.Alloc) or isinstance(a.var.type.elem, K.Ptr):
        return None
    if has_expr(a.count, K.Load) or K.expr_vars(a.count) & declared:
        return None
    if _set_count(body, a.var.name) != 1:
        return None
    cls = alias_class(body, a)
    top = [s for s in body.stms[k + 1:] if isinstance(s, K.Free)
           and isinstance(s.ptr, K.KVar) and s.ptr.name in cls]
    every = [s for s in walk_stms(body) if isinstance(s, K.Free)
             and isinstance(s.ptr, K.KVar) and s.ptr.name in cls]
    return cls if len(top) == 1 and len(every) == 1 else None


def direct_only(body: K.Block, cls: set) -> bool:
    """Whether the body uses the pointers of `cls` only as the pointer of
    Load/Store, as one side of a CopyMem, in copies among themselves (and in
    their Alloc and Free): then their elements can be interleaved."""
    def expr_ok(e: K.Expr) -> bool:
        return _expr_ok(e, cls)

    def mine(e) -> bool:
        return isinstance(e, K.KVar) and e.name in cls
    for s in walk_stms(body):
        if isinstance(s, K.Alloc) and s.var.name in cls:
            continue
        if isinstance(s, K.Free) and mine(s.ptr):
            continue
        if isinstance(s, K.Set) and s.var.name in cls:
            continue                    # a copy among the class (alias_class)
        if isinstance(s, K.Store) and mine(s.ptr):
            if not (expr_ok(s.index) and expr_ok(s.value)):
                return False
            continue
        if isinstance(s, K.CopyMem) and (mine(s.dst) != mine(s.src)):
            if not (expr_ok(s.count) and expr_ok(s.src if mine(s.dst) else s.dst)):
                return False
            continue
        if not isinstance(s, _INTERLEAVE_STMS):
            return False
        if not all(expr_ok(e) for e in K.stm_exprs(s)):
            return False
    return True


def _expr_ok(e: K.Expr, cls: set) -> bool:
    """e reads the pointers of `cls` only as a Load's pointer."""
    if isinstance(e, K.KVar):
        return e.name not in cls
    if isinstance(e, K.Load) and isinstance(e.ptr, K.KVar) and e.ptr.name in cls:
        return _expr_ok(e.index, cls)
    return all(_expr_ok(c, cls) for c in K.children(e))


_INTERLEAVE_STMS = (K.Set, K.Store, K.If, K.For, K.While, K.Fail, K.Alloc, K.Free, K.CopyMem)


class Interleave:
    """Element e of work-item i's block of an interleaved pointer lives at
    arena[e * n + i]: consecutive work-items touch consecutive addresses
    (coalesced on a GPU), where slices [i * c, (i + 1) * c) put them c
    elements apart (Futhark expands allocations the same way). `arenas` maps
    every name of a class to its arena; the class's copies, Alloc and Free
    are gone, and a CopyMem into or out of it is an element loop."""

    def __init__(self, arenas: dict, n: K.KVar, i: K.KVar, fresh):
        self.arenas, self.n, self.i, self.fresh = arenas, n, i, fresh

    def _slot(self, e: K.Expr) -> K.Expr:
        return K.Bin("add", K.Bin("mul", e, self.n), self.i)

    def _mine(self, e) -> bool:
        return isinstance(e, K.KVar) and e.name in self.arenas

    def _load(self, e: K.Expr) -> K.Expr:
        if isinstance(e, K.Load) and self._mine(e.ptr):
            return K.Load(self.arenas[e.ptr.name], self._slot(e.index))
        return e

    def expr(self, e: K.Expr) -> K.Expr:
        return rewrite_expr(e, self._load)

    def block(self, b: K.Block) -> K.Block:
        return map_block(b, self.stm)

    def stm(self, s: K.Stm):
        if isinstance(s, K.Store) and self._mine(s.ptr):
            return replace(s, ptr=self.arenas[s.ptr.name], index=self._slot(self.expr(s.index)),
                           value=self.expr(s.value))
        if isinstance(s, (K.Set, K.Alloc)) and s.var.name in self.arenas:
            return []
        if isinstance(s, K.Free) and self._mine(s.ptr):
            return []
        if isinstance(s, K.CopyMem) and (self._mine(s.dst) or self._mine(s.src)):
            e = self.fresh("e", I64)
            src = (K.Load(self.arenas[s.src.name], self._slot(e)) if self._mine(s.src)
                   else K.Load(self.expr(s.src), e))
            st = (K.Store(self.arenas[s.dst.name], self._slot(e), src) if self._mine(s.dst)
                  else K.Store(self.expr(s.dst), e, src))
            return K.For(e, K.KConst(0, I64), self.expr(s.count), K.Block((st,)))
        return map_stm(s, self.expr, self.block)


class _Expander(ParForRewriter):
    def __init__(self, m: K.Module):
        self.m = m
        self.counter = 0

    def var(self, hint: str, t) -> K.KVar:
        self.counter += 1
        return K.KVar(f"{hint}_x{self.counter}", t)

    def parfor(self, p: K.ParFor) -> list:
        declared: set = {p.var.name}
        for s in p.body.stms:
            declared |= K.declared_vars(s)
        stms = p.body.stms
        classes = {k: _expandable(p.body, k, declared) for k in range(len(stms))}
        expand = [k for k, c in classes.items() if c is not None]
        if not expand:
            return [p]
        one = K.KConst(1, I64)
        n, n1 = self.var("n", I64), self.var("n1", I64)
        before: list = [K.Set(n, p.count), K.Set(n1, K.Sel(K.Bin("ge", n, one), n, one))]
        after: list = []
        in_place: dict = {}         # index of an expanded Alloc -> what stands there now
        interleave: dict = {}       # name of an expanded pointer -> its arena (interleaved)
        for k in expand:
            s = stms[k]
            elem = s.var.type.elem
            size = elem.bytes
            c, c1 = self.var("c", I64), self.var("c1", I64)
            arena = self.var("arena", s.var.type)
            too_big = K.Bin("and", K.Bin("ge", n, one),
                            K.Bin("gt", c1, K.Bin("div", K.KConst(_LIMIT // size, I64), n1)))
            before += [
                K.Set(c, s.count),
                K.Set(c1, K.Sel(K.Bin("ge", c, one), c, one)),
                K.If(too_big, K.Block((K.Fail("MemoryError", self.m.message(ALLOC_FAIL_MESSAGE),
                                              (c, K.KConst(size, I64))),))),
                K.Alloc(arena, K.Bin("mul", c1, n), s.zeroed),   # each slice left 0
            ]
            after.append(K.Free(arena))
            if direct_only(p.body, classes[k]):
                interleave.update((name, arena) for name in classes[k])
                in_place[k] = None
            else:
                in_place[k] = K.Set(s.var, K.PtrAdd(arena, K.Bin("mul", p.var, c1)))
        freed = set().union(*(classes[k] for k in expand))
        body = [in_place.get(k, t) for k, t in enumerate(stms)
                if not (isinstance(t, K.Free) and isinstance(t.ptr, K.KVar)
                        and t.ptr.name in freed)]
        body = K.Block(tuple(t for t in body if t is not None))
        if interleave:
            body = Interleave(interleave, n1, p.var, self.var).block(body)
        return before + [replace(p, count=n, body=body)] + after

    def run(self) -> K.Module:
        return map_bodies(self.m, self.block, messages=self.m.messages)


def expand_allocations(m: K.Module) -> K.Module:
    """`m` with every expandable ParFor allocation expanded (see above); may
    add ALLOC_FAIL_MESSAGE to m.messages (shared with the result)."""
    return _Expander(m).run()


__all__ = ["expand_allocations", "alias_class", "direct_only"]
