"""Generic rewriting of the core IR, shared by the passes in codegen/opt.

The traversal itself is pyshark/core/traverse.py (one table of the fields
of every node class); this module adds what only the passes need:
- `map_exp(e, atom_fn, body_fn)` (traverse's): rebuild one expression,
  applying atom_fn to its operand atoms (never to binders) and body_fn to
  each directly nested Body (branches, loop condition and body, SOAC lambda
  bodies).
- `subst(node, m)`: replace every Var named in m, binders included, anywhere
  inside a node (used to rename whole bodies apart).
- `uses(node)` / `binders(node)` / `free_vars(node)`: names referenced and
  bound inside a node; `use_counts(node)`: how often each name is referenced.
- `NameGen`: fresh names `base_N` that stay unique within a FunDef.

All functions return the input object itself when nothing changes, so
unchanged subtrees are shared rather than copied.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Callable, Iterable

from pyshark.core import ir
from pyshark.core.traverse import (FIELD_NAMES as _FIELDS, binder_vars, free_vars, map_exp,
                                   rebuild as _rebuild, uses, walk_names)

Atom = ir.Atom

# Node classes whose fields are walked (not Var, Const, Loc, types)
_NODES = frozenset(_FIELDS)


def exp_atoms(e: ir.Exp) -> list[Atom]:
    """The operand atoms at e's top level (not inside nested bodies, not binders)."""
    out: list[Atom] = []

    def take(a):
        out.append(a)
        return a
    map_exp(e, take, lambda b: b)
    return out


# ---------------------------------------------------------------------------
# Deep: substitution, uses, binders


def subst(node, m: dict[str, Atom]):
    """node with every Var whose name is in m replaced, binders included."""
    if not m:
        return node
    return _subst(node, m)


def _subst(x, m):
    cls = x.__class__
    if cls is ir.Var:
        return m.get(x.name, x)
    if cls is tuple:
        new = tuple(_subst(y, m) for y in x)
        return x if all(a is b for a, b in zip(x, new)) else new
    if cls in _NODES:
        return _rebuild(x, [_subst(getattr(x, n), m) for n in _FIELDS[cls]])
    return x


def subst_atom(a: Atom, m: dict[str, Atom]) -> Atom:
    return m.get(a.name, a) if a.__class__ is ir.Var else a


def _ignore(_):
    return None


def use_counts(node) -> Counter:
    """How many times each name is referenced inside node (every reference
    counts, unlike traverse.use_counts, which counts mentioning statements)."""
    out: Counter = Counter()

    def add(n):
        out[n] += 1
    walk_names(node, add, _ignore)
    return out


def binders(node) -> set[str]:
    """Names bound anywhere inside node (Let patterns, lambda/loop params, indices)."""
    return {v.name for v in binder_vars(node)}


def body_stms_uses(stms: Iterable[ir.Let]) -> set[str]:
    out: set[str] = set()
    for s in stms:
        walk_names(s.exp, out.add, _ignore)
    return out


# ---------------------------------------------------------------------------
# Fresh names

_SUFFIX = re.compile(r"^(.*)_(\d+)$")


class NameGen:
    """Fresh names `base_N`, N counting up past every numeric suffix already taken."""

    def __init__(self, taken: Iterable[str]):
        self.taken = set(taken)
        top = 0
        for name in self.taken:
            m = _SUFFIX.match(name)
            if m:
                top = max(top, int(m.group(2)))
        self.n = top + 1

    def name(self, old: str) -> str:
        m = _SUFFIX.match(old)
        base = m.group(1) if m else old
        while True:
            cand = f"{base}_{self.n}"
            self.n += 1
            if cand not in self.taken:
                self.taken.add(cand)
                return cand

    def var(self, old: ir.Var) -> ir.Var:
        return ir.Var(self.name(old.name), old.type)


def fundef_names(fun: ir.FunDef) -> set[str]:
    """Every name bound in fun (parameters and everything bound in its body)."""
    return {p.name for p in fun.params} | binders(fun.body)


def map_functions(program: ir.Program, fn: Callable[[ir.FunDef], ir.FunDef]) -> ir.Program:
    """A new Program with fn applied to every FunDef (entries, records kept)."""
    funs = {name: fn(f) for name, f in program.functions.items()}
    return ir.Program(funs, dict(program.entries), dict(program.records), program.filename)


__all__ = ["map_exp", "exp_atoms", "subst", "subst_atom", "uses", "use_counts", "binders",
           "binder_vars", "free_vars", "body_stms_uses", "NameGen", "fundef_names",
           "map_functions"]
