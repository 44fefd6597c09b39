"""Generic traversal of the core IR, shared by the checker, the passes and the
lowering.

`FIELDS` says, for every IR node class, what each of its fields holds (its
role): an operand atom, a tuple of atoms, slice dimensions, a nested Body or
Lambda, a loop form, binders, or static data (operator names, types, flags).
Everything below is driven by it, so a new expression class needs one entry
there (a test checks that every class of ir.Exp has one, naming its fields):

- `children(e)`: the operand atoms and nested Bodies/Lambdas of e, in
  evaluation order; `sub_bodies(e)`: the nested bodies only.
- `map_exp(e, f_atom, f_body)`: e rebuilt with f_atom on its operand atoms
  and f_body on each nested Body (e itself when nothing changes).
- `walk_names(node, on_use, on_bind)`, `uses(node)`, `binder_vars(node)`:
  deep walks over references and binders.
- `free_vars(node)` (memoised), `live_after(body)`, `use_counts(body)`: the
  liveness queries of the lowering.
- `iter_stms(body)`: every statement, nested ones too.
"""
from __future__ import annotations

import typing
from typing import Callable, Iterator

from . import ir

# Field roles
STATIC = "static"       # not part of the IR graph: names, types, flags, messages
ATOM = "atom"           # one operand Atom (a Var or a Const)
ATOMS = "atoms"         # a tuple of operand Atoms
DIMS = "dims"           # Slice.dims: SliceDims and index Atoms
BODY = "body"           # a nested Body
LAMBDA = "lambda"       # a nested Lambda
FORM = "form"           # Loop.form: a ForLoop or a WhileLoop
BINDER = "binder"       # one Var bound here
BINDERS = "binders"     # a tuple of Vars bound here
NODE = "node"           # Let.exp, Body.stms: walked, not an operand
OPT_ATOM = "opt_atom"   # an Atom or None (SliceDim bounds)
OPT_ATOMS = "opt_atoms"  # a tuple of Atoms or None (Map.empty_dims, Map.row_dims)

_S, _A, _AS = STATIC, ATOM, ATOMS

EXP_CLASSES: tuple[type, ...] = typing.get_args(ir.Exp)

#: role of every field, in dataclass field order, of every expression class
FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    ir.AtomExp: (("atom", _A),),
    ir.BinOp: (("op", _S), ("x", _A), ("y", _A)),
    ir.UnOp: (("op", _S), ("x", _A)),
    ir.Convert: (("to", _S), ("x", _A)),
    ir.Select: (("cond", _A), ("x", _A), ("y", _A)),
    ir.Call: (("fn", _S), ("args", _AS), ("ret", _S)),
    ir.If: (("cond", _A), ("then_body", BODY), ("else_body", BODY), ("ret", _S)),
    ir.Loop: (("params", BINDERS), ("inits", _AS), ("form", FORM), ("body", BODY)),
    ir.Assert: (("cond", _A), ("msg", _S), ("error", _S)),
    ir.Index: (("arr", _A), ("idxs", _AS), ("wrap_negative", _S)),
    ir.Slice: (("arr", _A), ("dims", DIMS)),
    ir.Update: (("arr", _A), ("idxs", _AS), ("value", _A), ("wrap_negative", _S)),
    ir.Size: (("arr", _A), ("dim", _S)),
    ir.ArrayLit: (("elems", _AS), ("type", _S)),
    ir.Iota: (("n", _A),),
    ir.Replicate: (("n", _A), ("value", _A)),
    ir.Copy: (("arr", _A),),
    ir.Concat: (("arrs", _AS),),
    ir.Rotate: (("r", _A), ("arr", _A)),
    ir.Transpose: (("arr", _A),),
    ir.Reshape: (("shape", _AS), ("arr", _A)),
    ir.Map: (("width", _A), ("lam", LAMBDA), ("arrs", _AS), ("empty_dims", OPT_ATOMS),
             ("row_dims", OPT_ATOMS)),
    ir.Reduce: (("width", _A), ("lam", LAMBDA), ("neutral", _AS), ("arrs", _AS),
                ("commutative", _S)),
    ir.Scan: (("width", _A), ("lam", LAMBDA), ("neutral", _AS), ("arrs", _AS)),
    ir.Filter: (("width", _A), ("lam", LAMBDA), ("arrs", _AS)),
    ir.ReduceByIndex: (("width", _A), ("dests", _AS), ("lam", LAMBDA), ("neutral", _AS),
                       ("idxs", _A), ("vals", _AS)),
    ir.Scatter: (("width", _A), ("dests", _AS), ("idxs", _A), ("vals", _AS)),
}

#: the same for the other node classes
STRUCT_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    ir.Body: (("stms", NODE), ("result", _AS)),
    ir.Let: (("pat", BINDERS), ("exp", NODE), ("loc", _S)),
    ir.Lambda: (("params", BINDERS), ("body", BODY), ("ret", _S)),
    ir.SliceDim: (("start", OPT_ATOM), ("stop", OPT_ATOM), ("step", OPT_ATOM)),
    ir.ForLoop: (("index", BINDER), ("bound", _A)),
    ir.WhileLoop: (("cond", BODY),),
    ir.FunDef: (("name", _S), ("params", BINDERS), ("ret", _S), ("body", BODY), ("loc", _S)),
}

ROLES = {**FIELDS, **STRUCT_FIELDS}
#: field names of every node class, in order (the constructor's arguments)
FIELD_NAMES: dict[type, tuple[str, ...]] = {
    cls: tuple(name for name, _ in roles) for cls, roles in ROLES.items()}
# Fields a deep walk visits: (name, is a binder field)
_DEEP = {cls: tuple((n, r in (BINDER, BINDERS)) for n, r in roles if r is not STATIC)
         for cls, roles in ROLES.items()}


def rebuild(node, values: list):
    """node with its fields replaced by values, or node itself if all are identical."""
    names = FIELD_NAMES[node.__class__]
    for n, v in zip(names, values):
        if getattr(node, n) is not v:
            return node.__class__(*values)
    return node


# ---------------------------------------------------------------------------
# One expression, shallow


def children(e: ir.Exp) -> tuple:
    """e's operand atoms and nested Bodies and Lambdas, in evaluation order
    (binders -- loop parameters and the for-loop index -- are not children)."""
    out: list = []
    for name, role in FIELDS[e.__class__]:
        v = getattr(e, name)
        if role is ATOM or role is BODY or role is LAMBDA:
            out.append(v)
        elif role is ATOMS or (role is OPT_ATOMS and v is not None):
            out.extend(v)
        elif role is DIMS:
            for d in v:
                if d.__class__ is ir.SliceDim:
                    out.extend(a for a in (d.start, d.stop, d.step) if a is not None)
                else:
                    out.append(d)
        elif role is FORM:
            out.append(v.bound if v.__class__ is ir.ForLoop else v.cond)
    return tuple(out)


def sub_bodies(e: ir.Exp) -> list[ir.Body]:
    """The bodies nested directly in an expression, in evaluation order."""
    return [c.body if c.__class__ is ir.Lambda else c for c in children(e)
            if c.__class__ is ir.Body or c.__class__ is ir.Lambda]


def _map_atoms(v: tuple, f_atom) -> tuple:
    new = tuple([f_atom(a) for a in v])
    for a, b in zip(v, new):
        if a is not b:
            return new
    return v


def _map_dim(d, f_atom):
    if d.__class__ is ir.SliceDim:
        return rebuild(d, [None if a is None else f_atom(a) for a in (d.start, d.stop, d.step)])
    return f_atom(d)


def map_exp(e: ir.Exp, f_atom: Callable[[ir.Atom], ir.Atom],
            f_body: Callable[[ir.Body], ir.Body]) -> ir.Exp:
    """e rebuilt with f_atom on its operand atoms and f_body on its nested bodies.

    Binders (lambda and loop parameters, the for-loop index) are left alone.
    Bodies are visited in evaluation order (a while condition before the loop
    body); a Loop's bound or condition is visited before its initial values.
    """
    cls = e.__class__
    if cls is ir.Loop:
        form = e.form
        if form.__class__ is ir.ForLoop:
            form = rebuild(form, [form.index, f_atom(form.bound)])
        else:
            form = rebuild(form, [f_body(form.cond)])
        return rebuild(e, [e.params, _map_atoms(e.inits, f_atom), form, f_body(e.body)])
    vals = []
    for name, role in FIELDS[cls]:
        v = getattr(e, name)
        if role is ATOM:
            v = f_atom(v)
        elif role is ATOMS or (role is OPT_ATOMS and v is not None):
            v = _map_atoms(v, f_atom)
        elif role is BODY:
            v = f_body(v)
        elif role is LAMBDA:
            v = rebuild(v, [v.params, f_body(v.body), v.ret])
        elif role is DIMS:
            new = tuple([_map_dim(d, f_atom) for d in v])
            v = v if all(a is b for a, b in zip(v, new)) else new
        vals.append(v)
    return rebuild(e, vals)


# ---------------------------------------------------------------------------
# Deep walks


def walk_names(node, on_use: Callable[[str], object], on_bind: Callable[[ir.Var], object]):
    """Calls on_use(name) for each Var referenced inside node and on_bind(var)
    for each binder (Let patterns, lambda/loop/function parameters, loop
    indices), in field order. node: any IR node, or a tuple/list of them."""
    cls = node.__class__
    if cls is ir.Var:
        on_use(node.name)
    elif cls is tuple or cls is list:
        for x in node:
            walk_names(x, on_use, on_bind)
    else:
        deep = _DEEP.get(cls)
        if deep is None:
            return                  # Const, None, Loc, types
        for name, binds in deep:
            v = getattr(node, name)
            if binds:
                for p in (v if v.__class__ is tuple else (v,)):
                    on_bind(p)
            else:
                walk_names(v, on_use, on_bind)


def _ignore(_):
    return None


def uses(node) -> set[str]:
    """Names referenced (not bound) anywhere inside node."""
    out: set[str] = set()
    walk_names(node, out.add, _ignore)
    return out


def binder_vars(node) -> list[ir.Var]:
    """The Vars bound anywhere inside node, in order."""
    out: list[ir.Var] = []
    walk_names(node, _ignore, out.append)
    return out


def iter_stms(body: ir.Body) -> Iterator[ir.Let]:
    """Every statement of a body and of the bodies nested in it, depth first."""
    for stm in body.stms:
        yield stm
        for sub in sub_bodies(stm.exp):
            yield from iter_stms(sub)


# ---------------------------------------------------------------------------
# Free variables and liveness

_EMPTY: frozenset = frozenset()
_FREE: dict[int, tuple[object, frozenset]] = {}
_FREE_MAX = 1 << 16          # entries kept before the memo starts over


def free_vars(node) -> frozenset:
    """Names an expression, statement, body, lambda or function reads from its
    context (names are unique in a FunDef, so: what it references minus
    what it binds). Memoised per node; tuples and lists of nodes too."""
    cls = node.__class__
    if cls is ir.Var:
        return frozenset((node.name,))
    if cls is tuple or cls is list:
        out: set = set()
        for x in node:
            out |= free_vars(x)
        return frozenset(out)
    if cls not in ROLES:
        return _EMPTY
    key = id(node)
    hit = _FREE.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    fv = _free(node, cls)
    if len(_FREE) >= _FREE_MAX:
        _FREE.clear()
    _FREE[key] = (node, fv)
    return fv


def _free(node, cls) -> frozenset:
    if cls is ir.Body:
        out: set = set()
        bound: set = set()
        for s in node.stms:
            out |= free_vars(s.exp)
            bound.update(v.name for v in s.pat)
        out.update(a.name for a in node.result if a.__class__ is ir.Var)
        return frozenset(out - bound)
    if cls is ir.Let:
        return free_vars(node.exp)
    if cls is ir.Lambda or cls is ir.FunDef:
        return free_vars(node.body) - {p.name for p in node.params}
    if cls is ir.Loop:
        inner = set(free_vars(node.body))
        form = node.form
        if form.__class__ is ir.ForLoop:
            outer = free_vars(node.inits) | free_vars(form.bound)
            inner.discard(form.index.name)
        else:
            outer = free_vars(node.inits)
            inner |= free_vars(form.cond)
        return outer | (inner - {p.name for p in node.params})
    if cls in FIELDS:
        out = set()
        for c in children(node):
            if c.__class__ is ir.Var:
                out.add(c.name)
            elif c.__class__ is not ir.Const:
                out |= free_vars(c)
        return frozenset(out)
    # SliceDim, ForLoop, WhileLoop on their own
    return frozenset(uses(node) - {v.name for v in binder_vars(node)})


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
