"""Generic rewriting of the core IR, shared by the passes in codegen/opt.

- `map_exp(e, atom_fn, body_fn)`: rebuild one expression, applying atom_fn to
  its operand atoms (never to binders) and body_fn to each directly nested
  Body (branches, loop condition and body, SOAC lambda bodies).
- `subst(node, m)`: replace every Var named in m, binders included, anywhere
  inside a node (used to rename whole bodies apart).
- `uses(node)` / `binders(node)` / `free_vars(node)`: names referenced and
  bound inside a node.
- `NameGen`: fresh names `base_N` that stay unique within a FunDef.

All functions return the input object itself when nothing changes, so
unchanged subtrees are shared rather than copied.
"""
from __future__ import annotations

import dataclasses
import re
import typing
from collections import Counter
from typing import Callable, Iterable

from pyshark.core import ir

Atom = ir.Atom

# Node classes whose fields are walked generically (not Var, Const, Loc, types):
# every expression class of ir.Exp, so a new one is traversed without changes here.
_EXPS = typing.get_args(ir.Exp)
_NODES = frozenset(_EXPS + (ir.Body, ir.Let, ir.Lambda, ir.SliceDim, ir.ForLoop,
                            ir.WhileLoop))
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _NODES}


def _rebuild(node, values: list):
    """node with its fields replaced by values, or node itself if all are identical."""
    names = _FIELDS[node.__class__]
    if all(getattr(node, n) is v for n, v in zip(names, values)):
        return node
    return node.__class__(*values)


# ---------------------------------------------------------------------------
# One expression, shallow


def _map_field(v, atom_fn, body_fn):
    cls = v.__class__
    if cls is ir.Var or cls is ir.Const:
        return atom_fn(v)
    if cls is tuple:
        new = tuple(_map_field(x, atom_fn, body_fn) for x in v)
        return v if all(a is b for a, b in zip(v, new)) else new
    if cls is ir.SliceDim:
        return _rebuild(v, [None if a is None else atom_fn(a)
                            for a in (v.start, v.stop, v.step)])
    if cls is ir.Lambda:
        return _rebuild(v, [v.params, body_fn(v.body), v.ret])
    if cls is ir.Body:
        return body_fn(v)
    return v            # str, int, bool, None, types


def map_exp(e: ir.Exp, atom_fn: Callable[[Atom], Atom],
            body_fn: Callable[[ir.Body], ir.Body]) -> ir.Exp:
    """e rebuilt with atom_fn on its operand atoms and body_fn on its nested bodies.

    Binders (lambda and loop parameters, the for-loop index) are left alone.
    Bodies are visited in evaluation order (a while condition before the loop body).
    """
    cls = e.__class__
    if cls is ir.Loop:
        form = e.form
        if form.__class__ is ir.ForLoop:
            form = _rebuild(form, [form.index, atom_fn(form.bound)])
        else:
            form = _rebuild(form, [body_fn(form.cond)])
        inits = _map_field(e.inits, atom_fn, body_fn)
        return _rebuild(e, [e.params, inits, form, body_fn(e.body)])
    return _rebuild(e, [_map_field(getattr(e, n), atom_fn, body_fn) for n in _FIELDS[cls]])


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


_BINDER_FIELDS = {ir.Let: "pat", ir.Lambda: "params", ir.Loop: "params",
                  ir.ForLoop: "index"}


def _walk(x, on_use, on_bind):
    """Calls on_use(name) for each referenced Var and on_bind(var) for each binder."""
    cls = x.__class__
    if cls is ir.Var:
        on_use(x.name)
    elif cls is tuple:
        for y in x:
            _walk(y, on_use, on_bind)
    elif cls in _NODES:
        bf = _BINDER_FIELDS.get(cls)
        for n in _FIELDS[cls]:
            v = getattr(x, n)
            if n == bf:
                for p in (v if isinstance(v, tuple) else (v,)):
                    on_bind(p)
            else:
                _walk(v, on_use, on_bind)


def uses(node) -> set[str]:
    """Names referenced (not bound) anywhere inside node."""
    out: set[str] = set()
    _walk(node, out.add, lambda n: None)
    return out


def use_counts(node) -> Counter:
    """How many times each name is referenced inside node."""
    out: Counter = Counter()

    def add(n):
        out[n] += 1
    _walk(node, add, lambda n: None)
    return out


def binders(node) -> set[str]:
    """Names bound anywhere inside node (Let patterns, lambda/loop params, indices)."""
    return {v.name for v in binder_vars(node)}


def binder_vars(node) -> list[ir.Var]:
    """The Vars bound anywhere inside node, in order."""
    out: list[ir.Var] = []
    _walk(node, lambda n: None, out.append)
    return out


def free_vars(node) -> set[str]:
    """Names referenced inside node but bound outside it."""
    return uses(node) - binders(node)


def body_stms_uses(stms: Iterable[ir.Let]) -> set[str]:
    out: set[str] = set()
    for s in stms:
        _walk(s.exp, out.add, lambda n: None)
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
