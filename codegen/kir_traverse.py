"""Generic traversal of the kernel IR, shared by every kir rewrite and analysis.

`FIELDS` says, for every kernel IR node class (kir.py), what each of its
fields holds (its role): an operand expression, an optional one, a tuple of
them, a variable the statement declares (a binder), a nested Block, or
static data (operator names, types, flags, counts, message numbers). It is
modelled on the core IR's table (pyshark/core/traverse.FIELDS), and
everything below is driven by it, so a new node class needs one entry
there (tests/codegen/test_kir_traverse.py checks that every class has one,
naming its fields, and that every rebuild keeps every field):

- shallow: `children(e)` (an expression's operands), `stm_exprs(s)`,
  `sub_blocks(s)`, `binders(s)`; `map_expr`, `map_stm` rebuild one node with
  a function on its parts, `map_block` one block statement by statement;
  `map_bodies` every function body of a module.
- deep: `walk_stms`, `walk_exprs`, `block_exprs` (pre-order generators),
  `fold_exprs` and `fold_stms` over them, `rewrite_expr` (bottom-up),
  `rewrite_block_exprs` (every expression of a block, binders too),
  `rename_expr`/`rename_block`, and the queries `has_expr`, `expr_vars`,
  `declared_vars`, `free_vars_of_block`, `parfor_captures`,
  `block_can_fail`.

A rebuild goes through the class's constructor with every field in order
(`rebuild`), so no field is ever dropped by hand (Alloc.zeroed was), and a
node whose parts come back identical is returned itself.
"""
from __future__ import annotations

import typing
from functools import reduce
from typing import Callable, Iterator, Optional, Sequence, Union

from . import kir as K

# Field roles
STATIC = "static"       # not part of the IR graph: names, types, flags, counts, numbers
EXPR = "expr"           # one operand expression
OPT_EXPR = "opt_expr"   # an expression or None (ParFor.parallel_if)
EXPRS = "exprs"         # a tuple of expressions (Fail.args)
BINDER = "binder"       # a KVar this statement declares (its target or loop counter)
BINDERS = "binders"     # a tuple of KVars declared here (Function.params)
BLOCK = "block"         # a nested Block
STMS = "stms"           # Block.stms: the statements, in order

_S, _E = STATIC, EXPR

EXPR_CLASSES: tuple[type, ...] = typing.get_args(K.Expr)
STM_CLASSES: tuple[type, ...] = typing.get_args(K.Stm)

#: role of every field, in dataclass field order, of every expression class
EXPR_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    K.KVar: (("name", _S), ("type", _S)),
    K.KConst: (("value", _S), ("type", _S)),
    K.Bin: (("op", _S), ("x", _E), ("y", _E), ("reassoc", _S), ("contract", _S)),
    K.Un: (("op", _S), ("x", _E)),
    K.Cast: (("to", _S), ("x", _E), ("bits", _S)),
    K.Sel: (("cond", _E), ("x", _E), ("y", _E)),
    K.Load: (("ptr", _E), ("index", _E)),
    K.PtrAdd: (("ptr", _E), ("offset", _E)),
    K.NumThreads: (),
    K.LocalId: (),
    K.GroupId: (),
}

#: the same for every statement class
STM_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    K.Set: (("var", BINDER), ("value", _E)),
    K.Store: (("ptr", _E), ("index", _E), ("value", _E), ("nontemporal", _S)),
    K.Alloc: (("var", BINDER), ("count", _E), ("zeroed", _S)),
    K.Free: (("ptr", _E),),
    K.CopyMem: (("dst", _E), ("src", _E), ("count", _E), ("nontemporal", _S)),
    K.Prefetch: (("ptr", _E), ("index", _E)),
    K.If: (("cond", _E), ("then", BLOCK), ("orelse", BLOCK)),
    K.For: (("var", BINDER), ("lo", _E), ("hi", _E), ("body", BLOCK), ("unroll", _S),
              ("independent", _S), ("simd", _S), ("max_trip", _S)),
    K.While: (("cond", _E), ("body", BLOCK)),
    K.Fail: (("kind", _S), ("msg", _S), ("args", EXPRS)),
    K.ParFor: (("var", BINDER), ("count", _E), ("body", BLOCK), ("parallel_if", OPT_EXPR),
               ("group_size", _S)),
    K.Barrier: (),
    K.LocalAlloc: (("var", BINDER), ("count", _S)),
    K.AtomicUpdate: (("ptr", _E), ("index", _E), ("old", BINDER), ("value", _E)),
    K.AtomicLoad: (("var", BINDER), ("ptr", _E), ("index", _E)),
}

#: the same for the other node classes
STRUCT_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    K.Block: (("stms", STMS),),
    K.Function: (("name", _S), ("params", BINDERS), ("body", BLOCK)),
}

FIELDS = {**EXPR_FIELDS, **STM_FIELDS, **STRUCT_FIELDS}
#: field names of every node class, in order (the constructor's arguments)
FIELD_NAMES: dict[type, tuple[str, ...]] = {
    cls: tuple(name for name, _ in roles) for cls, roles in FIELDS.items()}

# per class, the names of the fields of one role (shallow accessors below)
_EXPR_PARTS = {cls: tuple(n for n, r in roles if r in (EXPR, OPT_EXPR, EXPRS))
               for cls, roles in FIELDS.items()}
_BLOCKS = {cls: tuple(n for n, r in roles if r is BLOCK) for cls, roles in FIELDS.items()}
_BINDERS = {cls: tuple(n for n, r in roles if r is BINDER) for cls, roles in FIELDS.items()}


def _identity(x):
    return x


def rebuild(node, values: Sequence):
    """node with its fields replaced by values (all of them, in field
    order), or node itself if every value is the field it replaces."""
    names = FIELD_NAMES[node.__class__]
    for n, v in zip(names, values):
        if getattr(node, n) is not v:
            return node.__class__(*values)
    return node


# ---------------------------------------------------------------------------
# One node, shallow


def children(e: K.Expr) -> tuple[K.Expr, ...]:
    """The operand expressions of an expression, in field order."""
    return tuple(getattr(e, n) for n in _EXPR_PARTS.get(e.__class__, ()))


def map_expr(e: K.Expr, f: Callable[[K.Expr], K.Expr]) -> K.Expr:
    """e rebuilt with f on each of its operand expressions (not deeper)."""
    roles = EXPR_FIELDS[e.__class__]
    if not _EXPR_PARTS[e.__class__]:
        return e
    return rebuild(e, [f(getattr(e, n)) if r is EXPR else getattr(e, n) for n, r in roles])


def stm_exprs(s: K.Stm) -> tuple[K.Expr, ...]:
    """The expressions a statement evaluates itself (not those of its
    sub-blocks), in field order."""
    roles = STM_FIELDS.get(s.__class__)
    if roles is None:
        raise TypeError(f"not a kernel IR statement: {s!r}")
    out: list = []
    for name, role in roles:
        v = getattr(s, name)
        if role is EXPR:
            out.append(v)
        elif role is OPT_EXPR:
            if v is not None:
                out.append(v)
        elif role is EXPRS:
            out.extend(v)
    return tuple(out)


def sub_blocks(s: K.Stm) -> tuple[K.Block, ...]:
    """The blocks nested directly in a statement, in field order."""
    return tuple(getattr(s, n) for n in _BLOCKS.get(s.__class__, ()))


def binders(s: K.Stm) -> tuple[K.KVar, ...]:
    """The variables a statement declares itself (not inside its sub-blocks)."""
    return tuple(getattr(s, n) for n in _BINDERS[s.__class__])


def _map_exprs(v: tuple, f) -> tuple:
    new = tuple([f(a) for a in v])
    return v if all(a is b for a, b in zip(v, new)) else new


def map_stm(s: K.Stm, expr: Optional[Callable[[K.Expr], K.Expr]] = None,
            block: Optional[Callable[[K.Block], K.Block]] = None,
            var: Optional[Callable[[K.KVar], K.KVar]] = None) -> K.Stm:
    """s rebuilt with `expr` on each expression it evaluates itself, `block`
    on each nested block and `var` on each variable it declares (each
    function defaults to leaving its parts alone). Static fields are kept."""
    if expr is None and var is None and not _BLOCKS[s.__class__]:
        return s                        # a rewrite of blocks only, and s has none
    expr = expr or _identity
    block = block or _identity
    var = var or _identity
    vals = []
    for name, role in STM_FIELDS[s.__class__]:
        v = getattr(s, name)
        if role is EXPR:
            v = expr(v)
        elif role is OPT_EXPR:
            v = None if v is None else expr(v)
        elif role is EXPRS:
            v = _map_exprs(v, expr)
        elif role is BLOCK:
            v = block(v)
        elif role is BINDER:
            v = var(v)
        vals.append(v)
    return rebuild(s, vals)


StmResult = Union[K.Stm, Sequence[K.Stm]]


def map_block(b: K.Block, f: Callable[[K.Stm], StmResult]) -> K.Block:
    """b with each statement replaced by f(statement): one statement, or a
    list or tuple of them spliced in its place (b itself when nothing
    changed)."""
    out: list = []
    changed = False
    for s in b.stms:
        r = f(s)
        if isinstance(r, (list, tuple)):
            out.extend(r)
            changed = True
        else:
            out.append(r)
            changed = changed or r is not s
    return K.Block(tuple(out)) if changed else b


def map_bodies(m: K.Module, f: Callable[[K.Block], K.Block],
               messages: Optional[list] = None) -> K.Module:
    """A new module with f on every function's body; its messages are
    `messages` (default: a copy of m's)."""
    fns = [rebuild(fn, [fn.name, fn.params, f(fn.body)]) for fn in m.functions]
    return K.Module(fns, list(m.messages) if messages is None else messages)


# ---------------------------------------------------------------------------
# Deep walks


# The deep walks keep their own stack: a recursive generator (`yield from`)
# hands every item up through one frame per level, so walking a tree of
# depth d costs O(d) per node; the split and interchanged bodies of a
# program like LocVolCalib nest expressions deeply enough that this was
# most of the Python side of a compile (issue 17 item 5).


def walk_stms(block: K.Block) -> Iterator[K.Stm]:
    """Every statement of a block, sub-blocks included, in order (pre-order)."""
    stack = [iter(block.stms)]
    blocks = _BLOCKS
    while stack:
        for s in stack[-1]:
            yield s
            names = blocks.get(s.__class__)
            if names:
                stack.append(iter([t for n in names for t in getattr(s, n).stms]))
                break
        else:
            stack.pop()


def walk_exprs(e: K.Expr) -> Iterator[K.Expr]:
    """e and every expression inside it, pre-order."""
    parts = _EXPR_PARTS
    stack = [e]
    pop, push = stack.pop, stack.extend
    while stack:
        x = pop()
        yield x
        names = parts.get(x.__class__)
        if names:
            push([getattr(x, n) for n in reversed(names)])


def block_exprs(block: K.Block) -> Iterator[K.Expr]:
    """Every expression node evaluated anywhere in a block (each statement's
    expressions and their sub-expressions, sub-blocks included)."""
    for s in walk_stms(block):
        for e in stm_exprs(s):
            yield from walk_exprs(e)


def fold_exprs(e: K.Expr, f: Callable, acc):
    """f(...f(f(acc, e), child)..., last) over walk_exprs(e)."""
    return reduce(f, walk_exprs(e), acc)


def fold_stms(block: K.Block, f: Callable, acc):
    """f(...f(acc, s0)..., sn) over walk_stms(block)."""
    return reduce(f, walk_stms(block), acc)


def rewrite_expr(e: K.Expr, f: Callable[[K.Expr], K.Expr]) -> K.Expr:
    """Bottom-up: f on every node of e, each node's operands rewritten first."""
    return f(map_expr(e, lambda c: rewrite_expr(c, f)))


def rewrite_block_exprs(b: K.Block, f_expr: Callable[[K.Expr], K.Expr],
                        var: Optional[Callable[[K.KVar], K.KVar]] = None) -> K.Block:
    """b with f_expr on every expression of every statement (sub-blocks
    included; f_expr sees each whole expression, not its parts) and `var`
    on every variable a statement declares."""
    def stm(s: K.Stm) -> K.Stm:
        return map_stm(s, f_expr, lambda sb: rewrite_block_exprs(sb, f_expr, var), var)
    return map_block(b, stm)


def has_loop(b: K.Block) -> bool:
    """Whether b contains a sequential loop (For or While), at any depth."""
    return any(isinstance(s, (K.For, K.While)) for s in walk_stms(b))


def has_expr(e: K.Expr, classes) -> bool:
    """Whether e or an expression inside it is an instance of `classes`."""
    return any(isinstance(x, classes) for x in walk_exprs(e))


def expr_vars(e: K.Expr) -> set[str]:
    """Names of the variables an expression reads."""
    out: set = set()
    _add_vars(e, out)
    return out


def _add_vars(e: K.Expr, out: set) -> None:
    parts = _EXPR_PARTS
    kvar = K.KVar
    stack = [e]
    pop = stack.pop
    while stack:
        x = pop()
        cls = x.__class__
        if cls is kvar:
            out.add(x.name)
        else:
            names = parts.get(cls)
            if names:
                stack.extend([getattr(x, n) for n in names])


def block_vars(block: K.Block) -> set[str]:
    """Names of the variables read anywhere in a block (sub-blocks included):
    {x.name for x in block_exprs(block) if x is a KVar}, without the
    generators."""
    out: set = set()
    for s in walk_stms(block):
        for e in stm_exprs(s):
            _add_vars(e, out)
    return out


def declared_vars(s: K.Stm) -> set[str]:
    """Variables a statement declares (Set/Alloc targets, loop counters,
    atomic results), including inside its sub-blocks."""
    out: set[str] = set()
    _add_declared(s, out)
    return out


def _add_declared(s: K.Stm, out: set) -> None:
    cls = s.__class__
    for n in _BINDERS.get(cls, ()):
        out.add(getattr(s, n).name)
    for n in _BLOCKS.get(cls, ()):
        for t in getattr(s, n).stms:
            _add_declared(t, out)


def free_vars_of_block(block: K.Block) -> set[str]:
    """Variables a block reads that it does not declare itself (what a
    ParFor body captures)."""
    declared: set[str] = set()
    for s in block.stms:
        declared |= declared_vars(s)
    return block_vars(block) - declared


def parfor_captures(p: K.ParFor) -> list[K.KVar]:
    """The variables a ParFor body reads and does not declare (its index
    excluded), as KVars sorted by name: what a backend passes to the body
    (emit_parfor.py's outlined function, emit_cl.py's kernel arguments)."""
    seen: dict = {}
    for x in block_exprs(p.body):
        if x.__class__ is K.KVar:
            seen.setdefault(x.name, x)
    return [seen[n] for n in sorted(free_vars_of_block(p.body) - {p.var.name})]


def block_can_fail(block: K.Block) -> bool:
    """Whether a block can stop the entry with an error (a Fail, or an
    Alloc, which fails with MemoryError)."""
    return any(isinstance(s, (K.Fail, K.Alloc)) for s in walk_stms(block))


def rename_expr(e: K.Expr, m: dict) -> K.Expr:
    """e with every variable named in m (name -> KVar) replaced."""
    def one(x: K.Expr) -> K.Expr:
        return m.get(x.name, x) if x.__class__ is K.KVar else x
    return rewrite_expr(e, one)


def rename_block(b: K.Block, m: dict) -> K.Block:
    """b with every variable named in m (name -> KVar) replaced, where it is
    read and where it is declared (Set/Alloc/loop/atomic targets)."""
    return rewrite_block_exprs(b, lambda e: rename_expr(e, m), lambda v: m.get(v.name, v))


def atomic_max_operand(s: K.AtomicUpdate) -> Optional[K.Expr]:
    """x when s is atomic_max(..., x) on a signed integer (x not reading
    old), else None."""
    v, o = s.value, s.old
    if (isinstance(o.type, K.ScalarType) and o.type.is_signed and isinstance(v, K.Sel)
            and isinstance(v.cond, K.Bin) and v.cond.op == "gt" and v.cond.y == o
            and v.y == o and v.x == v.cond.x and o.name not in expr_vars(v.x)):
        return v.x
    return None



class ParForRewriter:
    """The walk of a kir pass that rewrites ParFors: every statement rebuilt
    around its blocks, each ParFor replaced by what `parfor` returns (one
    statement or a list). Subclasses define `parfor`; one walk, where three
    passes (expand, chunk-scratch, tile-steps) each had their own."""

    def parfor(self, p):
        raise NotImplementedError

    def block(self, b: K.Block) -> K.Block:
        return map_block(b, self.stm)

    def stm(self, s: K.Stm):
        if isinstance(s, K.ParFor):
            return self.parfor(s)
        return map_stm(s, block=self.block)

__all__ = [
    "STATIC", "EXPR", "OPT_EXPR", "EXPRS", "BINDER", "BINDERS", "BLOCK", "STMS",
    "EXPR_CLASSES", "STM_CLASSES", "EXPR_FIELDS", "STM_FIELDS", "STRUCT_FIELDS", "FIELDS",
    "FIELD_NAMES", "ParForRewriter", "rebuild", "children", "map_expr", "stm_exprs", "sub_blocks", "binders",
    "map_stm", "map_block", "map_bodies", "walk_stms", "walk_exprs", "block_exprs",
    "fold_exprs", "fold_stms", "rewrite_expr", "rewrite_block_exprs", "has_expr",
    "expr_vars", "block_vars", "declared_vars", "free_vars_of_block", "parfor_captures", "block_can_fail",
    "rename_expr", "rename_block", "atomic_max_operand",
]
