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


@dataclass(frozen=True)
class LocalUnbound(Unbound):
    """A name that is local to the function (Python: assigned anywhere in it)
    but not bound where it is read: reading it is an error, and it does not
    fall back to a module-level name or builtin of the same name."""


@dataclass
class LocalDef:
    """A `def` inside a function: inlined where it is called or passed, below
    the use site's scope (late binding, Scope.entry_scope)."""
    node: cst.FunctionDef
    scope: "Scope"          # where it was defined (its body's boundary is the def's home)
    fun: object = None      # the LocalDefFunV (set by funcs.py)


@dataclass(frozen=True)
class LocalName:
    """A name local to a function body: where it is first bound, and whether
    it shadows a module-level name or builtin."""
    line: int
    shadows: bool = False


class Scope:
    """Surface names of one body; lookups fall back to the parent.

    `boundary` marks the outermost scope of a function, lambda or
    comprehension body. A boundary scope knows the names local to that body
    (`local_names`, Python's rule: assigned anywhere in it); a local name that
    is not bound yet reads as a LocalUnbound marker instead of falling back to
    an enclosing or module-level binding. Local defs and lambdas are
    inlined where they are used, in a scope hung below the use site's scope
    (`entry_scope`), so a captured name reads the value it holds there:
    Python's late binding."""

    def __init__(self, parent: Optional["Scope"] = None, boundary: bool = False,
                 local_names: Optional[dict] = None, kind: Optional[str] = None):
        self.parent = parent
        self.boundary = boundary
        self.kind = kind                        # "def" for the body of an inlined local def
        self.vars: dict[str, object] = {}
        self.origins: dict[str, cst.CSTNode] = {}   # name -> the node it was last bound from here
        self.local_names: dict[str, LocalName] = dict(local_names or {})

    def child(self, boundary: bool = False, local_names: Optional[dict] = None,
              kind: Optional[str] = None) -> "Scope":
        return Scope(self, boundary, local_names, kind)

    def lookup(self, name: str):
        """The binding of name: a Value, LocalDef or Unbound marker, or None
        when no enclosing body has such a local (a module-level name)."""
        s = self
        in_def = False           # looked through the body of an inlined local def
        while s is not None:
            if name in s.vars:
                return s.vars[name]
            if s.boundary and name in s.local_names:
                info = s.local_names[name]
                hint = (f"give the local another name to use the module-level '{name}' here"
                        if info.shadows else f"bind '{name}' before this line")
                where = "it is read here before it is bound"
                if in_def:
                    where = ("the local function reading it here is used before it is bound "
                             "(as in Python, a local function sees the value a name holds where "
                             "the function is used)")
                    hint = ((hint + ", or " if info.shadows else "")
                            + f"bind '{name}' before the call that uses the function")
                return LocalUnbound(f"'{name}' is assigned in this function (line {info.line}), so "
                                    f"Python treats it as local throughout: {where}", hint)
            in_def = in_def or s.kind == "def"
            s = s.parent
        return None

    def bound(self, name: str):
        """lookup, with a not-yet-bound local name as None."""
        b = self.lookup(name)
        return None if isinstance(b, LocalUnbound) else b

    def owner(self, name: str) -> Optional["Scope"]:
        s = self
        while s is not None:
            if name in s.vars:
                return s
            s = s.parent
        return None

    def origin(self, name: str) -> Optional[cst.CSTNode]:
        """The node the name's current binding came from (for locating errors)."""
        s = self.owner(name)
        return s.origins.get(name) if s is not None else None

    def set(self, name: str, value, origin: Optional[cst.CSTNode] = None) -> None:
        self.vars[name] = value
        if origin is not None:
            self.origins[name] = origin
        else:
            self.origins.pop(name, None)

    def function_of(self, name: str) -> Optional["Scope"]:
        """The boundary scope of the body in which `name` is a local."""
        s = self
        while s is not None:
            if s.boundary and name in s.local_names:
                return s
            s = s.parent
        return None

    def function_boundary(self) -> Optional["Scope"]:
        """The boundary scope of the body this scope belongs to."""
        s = self
        while s is not None and not s.boundary:
            s = s.parent
        return s

    def entry_scope(self, home: "Scope") -> Optional["Scope"]:
        """The innermost scope, on the chain from here up, that belongs to the
        body whose boundary is `home`: where a local def created in that body
        is inlined when it is used from here. Scopes of bodies nested inside
        `home` (a lambda's parameters, an inlined def's locals) are skipped:
        they are not the def's enclosing scope. None when `home` is not on
        the chain."""
        s = self
        while s is not None:
            b = s.function_boundary()
            if b is None:
                return None
            if b is home:
                return s
            s = b.parent
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


@dataclass
class FunState:
    """State shared by every context of one FunDef."""
    names: NameGen
    fname: str
    param_vars: dict = field(default_factory=dict)    # core names of parameter parts -> parameter
    followers: list = field(default_factory=list)     # stack of lists of cst nodes run later
    inlining: list = field(default_factory=list)      # local defs being inlined (recursion guard)
    falloff: Optional[str] = None                     # the test of an if whose else path falls off
    ret_nodes: dict = field(default_factory=dict)     # id(returned value) -> its return expression
    python_checks: int = 0                            # run-time checks of Python numbers (pynum.py)


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
        return ArrayV(v.stype, v.parts, 0, v.from_list, v.py)
    if isinstance(v, TupleV):
        return TupleV(tuple(disown(e) for e in v.elems), v.record)
    return v
