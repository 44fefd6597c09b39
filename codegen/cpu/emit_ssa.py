"""Which kernel IR variables the cpu emitter spells as SSA values, not allocas.

A variable declared once in a function (one Set, Alloc or loop counter, or
a parameter), whose every read comes after that declaration in the same
block or in a block nested in it (so the declaration dominates the read),
needs no stack slot: the emitter hands the LLVM value itself to its reads.
Every other variable (declared twice, loop-carried, set in a branch and read
after it, an atomic's old value) keeps its alloca, and mem2reg makes SSA of
it as before. Before this, every variable was an alloca with a store per
declaration and a load per read: half of LocVolCalib's LLVM IR lines were
such round trips, which LLVM parses and SROA/mem2reg removes first thing
("Compile time" in docs/cpu-backend.md).
"""
from __future__ import annotations

from .. import kir as K
from ..kir_traverse import binders, expr_vars, stm_exprs, sub_blocks


def ssa_vars(body: K.Block, params: tuple = ()) -> frozenset:
    """Names of the variables of one function (its body, and its parameters
    or captures by name) that are declared exactly once and read only where
    that declaration dominates. ParFor bodies are functions of their own:
    only the captures a ParFor reads are reads here."""
    count: dict[str, int] = {n: 1 for n in params}
    bad: set[str] = set()

    def reads(names, visible):
        for n in names:
            if n not in visible:
                bad.add(n)

    def declare(v: K.KVar, visible: set):
        count[v.name] = count.get(v.name, 0) + 1
        visible.add(v.name)

    def walk(block: K.Block, visible: set):
        visible = set(visible)
        for s in block.stms:
            cls = s.__class__
            if cls is K.ParFor:
                names = set().union(*(expr_vars(e) for e in stm_exprs(s)))
                reads(names | {v.name for v in K.parfor_captures(s)}, visible)
                count[s.var.name] = count.get(s.var.name, 0) + 1    # its own function's
                continue
            if cls is K.AtomicUpdate:
                bad.add(s.old.name)           # stored in its compare-and-swap loop
            if cls is K.For:
                reads(expr_vars(s.lo) | expr_vars(s.hi), visible)
                count[s.var.name] = count.get(s.var.name, 0) + 1
                walk(s.body, visible | {s.var.name})
                continue
            for e in stm_exprs(s):
                reads(expr_vars(e), visible)
            for v in binders(s):
                declare(v, visible)
            for sb in sub_blocks(s):
                walk(sb, visible)
    walk(body, set(params))
    return frozenset(n for n, c in count.items() if c == 1 and n not in bad)


__all__ = ["ssa_vars"]
