"""Free variables and liveness of the core IR, for the lowering.

Names are unique inside a FunDef (the core IR is in SSA form), so the free
variables of an expression are the names it mentions minus the names it
binds. Both are computed by one generic walk over the dataclass fields, and
memoised per node (bodies are walked many times by the liveness queries).
"""
from __future__ import annotations

import dataclasses

from pyshark.core import ir

_MENTIONS: dict[int, tuple[frozenset, frozenset]] = {}


def _walk(node, used: set, bound: set) -> None:
    if isinstance(node, ir.Var):
        used.add(node.name)
        return
    if isinstance(node, (tuple, list)):
        for x in node:
            _walk(x, used, bound)
        return
    if isinstance(node, ir.Let):
        for v in node.pat:
            bound.add(v.name)
        _walk(node.exp, used, bound)
        return
    if isinstance(node, ir.Lambda):
        for v in node.params:
            bound.add(v.name)
        _walk(node.body, used, bound)
        return
    if isinstance(node, ir.Loop):
        for v in node.params:
            bound.add(v.name)
        if isinstance(node.form, ir.ForLoop):
            bound.add(node.form.index.name)
            _walk(node.form.bound, used, bound)
        else:
            _walk(node.form.cond, used, bound)
        _walk(node.inits, used, bound)
        _walk(node.body, used, bound)
        return
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            if f.name in ("type", "ret", "loc"):
                continue
            _walk(getattr(node, f.name), used, bound)


def free_vars(node) -> frozenset:
    """Names an expression, statement or body reads from its context."""
    key = id(node)
    hit = _MENTIONS.get(key)
    if hit is None or hit[0] is not node:
        used: set = set()
        bound: set = set()
        _walk(node, used, bound)
        hit = (node, frozenset(used - bound))
        _MENTIONS[key] = hit
    return hit[1]


def live_after(body: ir.Body) -> list[frozenset]:
    """live_after(body)[k]: the names read after statement k of the body
    (by later statements, their nested bodies, or the body's result)."""
    live = frozenset(a.name for a in body.result if isinstance(a, ir.Var))
    out = [frozenset()] * len(body.stms)
    for k in range(len(body.stms) - 1, -1, -1):
        out[k] = live
        live = live | free_vars(body.stms[k].exp)
    return out


def use_counts(body: ir.Body) -> dict[str, int]:
    """How often each name is mentioned by the statements and result of a
    body (a mention inside a nested body counts once per mentioning
    statement)."""
    counts: dict[str, int] = {}
    for stm in body.stms:
        for n in free_vars(stm.exp):
            counts[n] = counts.get(n, 0) + 1
    for a in body.result:
        if isinstance(a, ir.Var):
            counts[a.name] = counts.get(a.name, 0) + 1
    return counts
