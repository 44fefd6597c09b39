"""Common subexpression elimination (dominator-scoped value numbering).

Walks each body in order with a table from expression keys (analysis.exp_key:
operator and operand atoms, commutative operators normalised, constants
compared bit for bit) to the names that hold the value. A statement whose key
is in the table is dropped and its names are replaced by the earlier ones.
Nested bodies (branches, loops, lambdas) start from a copy of the enclosing
table, so they reuse values computed outside them, never the other way round.

Which expressions: scalar operators, size, index, slice, transpose and
reshape (pure, deterministic; an index or a division that raises would have
raised at the earlier, dominating occurrence, so reusing its value is exact),
duplicate asserts, and the array constructors replicate, array literals,
rotate and concat -- those only where neither name's storage is updated in
place later (analysis.consumable_names), since merging two fresh arrays
would make an update of one visible through the other. iota is not merged:
it costs nothing to recompute where it is read (lower_arrays._h_iota keeps
it unmaterialised when only SOACs read it), and one iota shared by
consumers far apart (LocVolCalib's grid and its per-row stencils) had to be
an array in memory whose elements the bounds checks know nothing about
(LocVolCalib small on the cpu backend: 0.72 -> 0.60 s). Copies are
never merged (making a fresh array is their point), nor calls, loops,
branches or SOACs (no alpha-equivalence of lambdas).
"""
from __future__ import annotations

from collections import ChainMap

from pyshark.core import ir

from .analysis import consumable_names, exp_key
from .rewrite import map_exp, map_functions

_CSEABLE = frozenset({ir.BinOp, ir.UnOp, ir.Convert, ir.Select, ir.Size, ir.Index,
                      ir.Slice, ir.Transpose, ir.Reshape, ir.Assert,
                      ir.Replicate, ir.ArrayLit, ir.Rotate, ir.Concat})
_FRESH = frozenset({ir.Replicate, ir.ArrayLit, ir.Rotate, ir.Concat})


def cse(program: ir.Program) -> ir.Program:
    """The program with common subexpressions eliminated in every FunDef."""
    return map_functions(program, cse_fun)


def cse_fun(fun: ir.FunDef) -> ir.FunDef:
    walker = _CSE(consumable_names(fun.body))
    body = walker.body(fun.body, ChainMap(), ChainMap())
    if body is fun.body:
        return fun
    return ir.FunDef(fun.name, fun.params, fun.ret, body, fun.loc)


class _CSE:
    def __init__(self, consumable: set[str]):
        self.consumable = consumable

    def body(self, b: ir.Body, table: ChainMap, sub: ChainMap) -> ir.Body:
        def atom(a):
            return sub.get(a.name, a) if a.__class__ is ir.Var else a

        def nested(nb: ir.Body) -> ir.Body:
            return self.body(nb, table.new_child(), sub.new_child())

        out: list[ir.Let] = []
        changed = False
        for stm in b.stms:
            e = map_exp(stm.exp, atom, nested)
            if e is not stm.exp:
                stm = ir.Let(stm.pat, e, stm.loc)
                changed = True
            key = exp_key(e) if e.__class__ in _CSEABLE else None
            if key is not None and e.__class__ in _FRESH \
                    and any(v.name in self.consumable for v in stm.pat):
                key = None
            if key is not None:
                hit = table.get(key)
                if hit is not None:
                    for v, w in zip(stm.pat, hit):
                        sub[v.name] = w
                    changed = True
                    continue
                table[key] = stm.pat
            out.append(stm)
        result = tuple(atom(a) for a in b.result)
        if not changed and all(x is y for x, y in zip(result, b.result)):
            return b
        return ir.Body(tuple(out), result)
