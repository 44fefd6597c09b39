"""Emitting core statements: fresh names, lets, nested bodies.

One NameGen per FunDef keeps names unique (SSA) across all nested bodies;
a Builder collects the statements of one Body.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from ..core import ir
from ..core.typeof import exp_types
from ..core.types import Type


class NameGen:
    def __init__(self):
        self.counter = 0

    def fresh(self, hint: str = "t") -> str:
        self.counter += 1
        hint = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "t"
        return f"{hint}_{self.counter}"


class Builder:
    def __init__(self, names: Optional[NameGen] = None):
        self.names = names or NameGen()
        self.stms: list[ir.Let] = []

    def sub(self) -> "Builder":
        """A builder for a nested body (branch, loop, lambda) sharing the names."""
        return Builder(self.names)

    def var(self, t: Type, hint: str = "t") -> ir.Var:
        return ir.Var(self.names.fresh(hint), t)

    def bind(self, exp: ir.Exp, hint: str = "t", loc: Optional[ir.Loc] = None,
             hints: Optional[Sequence[str]] = None) -> tuple[ir.Var, ...]:
        """Emits `let (fresh names) = exp` and returns the names."""
        types = exp_types(exp)
        if hints is None:
            hints = [hint] * len(types)
        pat = tuple(self.var(t, h) for t, h in zip(types, hints))
        self.stms.append(ir.Let(pat, exp, loc))
        return pat

    def bind1(self, exp: ir.Exp, hint: str = "t", loc: Optional[ir.Loc] = None) -> ir.Var:
        pat = self.bind(exp, hint, loc)
        assert len(pat) == 1, f"expected one result from {exp!r}"
        return pat[0]

    def emit(self, exp: ir.Exp, pat: Sequence[ir.Var] = (), loc: Optional[ir.Loc] = None) -> None:
        """Emits a Let with a given pattern (e.g. an Assert with none)."""
        self.stms.append(ir.Let(tuple(pat), exp, loc))

    def body(self, result: Sequence[ir.Atom]) -> ir.Body:
        return ir.Body(tuple(self.stms), tuple(result))
