"""The translation context: scopes of surface names, per-function state, and
the `ctx` object handed to ops.py, the prelude lowering and FunV.apply.

Scopes map surface names to Values (or local defs, or markers for names that
are bound only on some paths). A child scope is used for every nested body
(branch, loop body, lambda, comprehension) so that names bound inside do not
leak out; the statement translator decides explicitly what flows out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from ..core import ir
from .builder import Builder, NameGen
from .values import ArrayV, TupleV, Value


@dataclass(frozen=True)
class Unbound:
    """A name that is bound only on some paths: using it is an error."""
    message: str
    hint: Optional[str] = None


@dataclass
class LocalDef:
    """A `def` inside a function: inlined where it is called or passed."""
    node: cst.FunctionDef
    scope: "Scope"          # where it was defined (captures by reference)
    fun: object = None      # the LocalDefFunV (set by funcs.py)


class Scope:
    """Surface names of one body; lookups fall back to the parent.

    `boundary` marks the outermost scope of a function or lambda body:
    assignment checks for captured names stop there (an assignment inside a
    local def makes a new local of that def, as in Python)."""

    def __init__(self, parent: Optional["Scope"] = None, boundary: bool = False):
        self.parent = parent
        self.boundary = boundary
        self.vars: dict[str, object] = {}
        self.captured: dict[str, str] = {}      # name -> local def capturing it

    def child(self, boundary: bool = False) -> "Scope":
        return Scope(self, boundary)

    def lookup(self, name: str):
        s = self
        while s is not None:
            if name in s.vars:
                return s.vars[name]
            s = s.parent
        return None

    def owner(self, name: str) -> Optional["Scope"]:
        s = self
        while s is not None:
            if name in s.vars:
                return s
            s = s.parent
        return None

    def set(self, name: str, value) -> None:
        self.vars[name] = value

    def captured_by(self, name: str) -> Optional[str]:
        """The local def that captured `name`, looking up to the function boundary."""
        s = self
        while s is not None:
            if name in s.vars:
                return s.captured.get(name)
            if s.boundary:
                return None
            s = s.parent
        return None

    def visible(self) -> dict[str, object]:
        """Every visible binding (innermost wins)."""
        out: dict[str, object] = {}
        s = self
        while s is not None:
            for k, v in s.vars.items():
                out.setdefault(k, v)
            s = s.parent
        return out


@dataclass
class Frame:
    """What a `return` means here: the top-level function, or an inlined local def."""
    name: str
    ret_stype: object               # SType or None (unannotated local def)
    def_node: cst.CSTNode
    loop_depth: int = 0
    inline_depth: int = 0


@dataclass
class FunState:
    """State shared by every context of one FunDef."""
    names: NameGen
    fname: str
    param_vars: set = field(default_factory=set)      # core names of parameter arrays
    followers: list = field(default_factory=list)     # stack of lists of cst nodes run later
    inlining: list = field(default_factory=list)      # local defs being inlined (recursion guard)
    falloff: Optional[str] = None                     # the test of an if whose else path falls off


class Ctx:
    """The expression/statement context (see the module docstring)."""

    def __init__(self, env, src, b: Builder, scope: Scope, fs: FunState, frame: Optional[Frame]):
        self.env = env          # the ModuleEnv
        self.src = src
        self.b = b
        self.scope = scope
        self.fs = fs
        self.frame = frame

    def loc(self, node: cst.CSTNode) -> ir.Loc:
        return self.src.loc(node)

    def nested(self) -> "Ctx":
        """A fresh Builder and a child scope: for SOAC lambdas and branches."""
        return Ctx(self.env, self.src, self.b.sub(), self.scope.child(), self.fs, self.frame)

    def with_scope(self, scope: Scope, b: Optional[Builder] = None, frame=None) -> "Ctx":
        return Ctx(self.env, self.src, b if b is not None else self.b, scope, self.fs,
                   frame if frame is not None else self.frame)

    def error(self, node, message: str, hint: Optional[str] = None):
        return self.src.error(node, message, hint)


def view_buffer(buffer: int) -> int:
    """The buffer of a row or slice of an array: an alias that is never owned."""
    return -abs(buffer)


def array_buffers(v) -> set:
    """The storage identities (absolute) of the arrays inside a value."""
    if isinstance(v, ArrayV):
        return {abs(v.buffer)} if v.buffer else set()
    if isinstance(v, TupleV):
        out = set()
        for e in v.elems:
            out |= array_buffers(e)
        return out
    return set()


def disown(v: Value) -> Value:
    """The value with every array marked not owned (module constants, call results)."""
    if isinstance(v, ArrayV):
        return ArrayV(v.stype, v.parts, 0, v.from_list)
    if isinstance(v, TupleV):
        return TupleV(tuple(disown(e) for e in v.elems), v.record)
    return v
