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
from ..kir_traverse import binders, children, stm_exprs, sub_blocks, walk_stms


def _vars(e: K.Expr, out: set) -> None:
    """Adds the names of the variables e reads to out."""
    c = e.__class__
    if c is K.KVar:
        out.add(e.name)
    elif c is not K.KConst:
        for x in children(e):
            _vars(x, out)


def ssa_vars(body: K.Block, params: tuple = ()) -> frozenset:
    """Names of the variables of one function (its body, and its parameters
    or captures by name) that are declared exactly once and read only where
    that declaration dominates. ParFor bodies are functions of their own:
    what a ParFor reads counts as read where it stands (every variable its
    body reads: its captures, and its own variables, which are no variables
    of this function)."""
    count: dict[str, int] = {n: 1 for n in params}
    bad: set[str] = set()

    def reads(exprs, visible):
        names: set = set()
        for e in exprs:
            _vars(e, names)
        bad.update(names - visible)

    def walk(block: K.Block, visible: set):
        visible = set(visible)
        for s in block.stms:
            cls = s.__class__
            if cls is K.ParFor:
                reads([e for t in walk_stms(s.body) for e in stm_exprs(t)] + list(stm_exprs(s)),
                      visible)
                continue
            if cls is K.AtomicUpdate:
                bad.add(s.old.name)           # stored in its compare-and-swap loop
            if cls is K.For:
                reads((s.lo, s.hi), visible)
                count[s.var.name] = count.get(s.var.name, 0) + 1
                walk(s.body, visible | {s.var.name})
                continue
            reads(stm_exprs(s), visible)
            for v in binders(s):
                count[v.name] = count.get(v.name, 0) + 1
                visible.add(v.name)
            for sb in sub_blocks(s):
                walk(sb, visible)
    try:
        walk(body, set(params))
    finally:
        walk = None                     # a recursive closure is a reference cycle
    return frozenset(n for n, c in count.items() if c == 1 and n not in bad)


__all__ = ["ssa_vars"]
