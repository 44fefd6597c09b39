"""Walking nested bodies of the core IR (branches, loops, SOAC lambdas).

Passes that only need to see every statement use `iter_stms` instead of
repeating the structure of each expression.
"""
from __future__ import annotations

from typing import Iterator

from . import ir


def sub_bodies(e: ir.Exp) -> list[ir.Body]:
    """The bodies nested directly in an expression, in evaluation order."""
    if isinstance(e, ir.If):
        return [e.then_body, e.else_body]
    if isinstance(e, ir.Loop):
        cond = [e.form.cond] if isinstance(e.form, ir.WhileLoop) else []
        return cond + [e.body]
    lam = getattr(e, "lam", None)
    if isinstance(lam, ir.Lambda):
        return [lam.body]
    return []


def iter_stms(body: ir.Body) -> Iterator[ir.Let]:
    """Every statement of a body and of the bodies nested in it, depth first."""
    for stm in body.stms:
        yield stm
        for sub in sub_bodies(stm.exp):
            yield from iter_stms(sub)
