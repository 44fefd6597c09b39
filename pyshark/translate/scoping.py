"""Python's scoping rules, found syntactically before a body is translated.

- `local_names(fn)`: the names local to a function, lambda or comprehension
  body (Python: parameters and every name assigned anywhere in the body, not
  inside nested scopes). A read of such a name before it is bound is an
  error, never a fall back to a module-level name or builtin.
- `free_names(fn)`: the names a local def reads from enclosing bodies (the
  names it captures).
- `check_no_code_after_return(src, fn)`: statements after a block's final
  `return` (or after an if/else whose every branch returns) never run; they
  are a located error.
"""
from __future__ import annotations

import builtins
from typing import Optional, Union

import libcst as cst

from .context import LocalName

ScopeNode = Union[cst.FunctionDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp,
                  cst.GeneratorExp]
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
BUILTIN_NAMES = frozenset(dir(builtins))


def _target_names(t, out: list) -> None:
    """The names a binding target binds (`a`, `a, (b, c)`, `*rest`)."""
    if isinstance(t, cst.Name):
        out.append(t)
    elif isinstance(t, (cst.Tuple, cst.List)):
        for e in t.elements:
            _target_names(e.value, out)
    elif isinstance(t, cst.StarredElement):
        _target_names(t.value, out)


class _Binder(cst.CSTVisitor):
    """Names bound directly in one body (nested defs, lambdas, classes and
    comprehensions are their own scopes; their names stay out)."""

    def __init__(self):
        self.bound: list[cst.Name] = []

    def visit_Assign(self, node):
        for t in node.targets:
            _target_names(t.target, self.bound)

    def visit_AnnAssign(self, node):
        _target_names(node.target, self.bound)

    def visit_AugAssign(self, node):
        _target_names(node.target, self.bound)

    def visit_For(self, node):
        _target_names(node.target, self.bound)

    def visit_WithItem(self, node):
        if node.asname is not None:
            _target_names(node.asname.name, self.bound)

    def visit_ExceptHandler(self, node):
        if node.name is not None:
            _target_names(node.name.name, self.bound)

    def visit_NamedExpr(self, node):
        _target_names(node.target, self.bound)

    def visit_Del(self, node):
        _target_names(node.target, self.bound)

    def visit_ImportAlias(self, node):
        if node.asname is not None:
            _target_names(node.asname.name, self.bound)
        else:
            n = node.name
            while isinstance(n, cst.Attribute):
                n = n.value
            _target_names(n, self.bound)

    def visit_FunctionDef(self, node):
        self.bound.append(node.name)
        return False

    def visit_ClassDef(self, node):
        self.bound.append(node.name)
        return False

    def visit_Lambda(self, node):
        return False

    def visit_CompFor(self, node):
        return False          # comprehension targets are the comprehension's own

    def visit_Global(self, node):
        return False

    def visit_Nonlocal(self, node):
        return False


def _params(p: cst.Parameters) -> list[cst.Name]:
    out = [q.name for q in list(p.posonly_params) + list(p.params) + list(p.kwonly_params)]
    for q in (p.star_arg, p.star_kwarg):
        if isinstance(q, cst.Param):
            out.append(q.name)
    return out


def _comp_targets(node) -> list[cst.Name]:
    out: list[cst.Name] = []
    comp = node.for_in
    while comp is not None:
        _target_names(comp.target, out)
        comp = comp.inner_for_in
    return out


def local_names(src, node: ScopeNode, env=None) -> dict[str, LocalName]:
    """The names local to a function, lambda or comprehension body, with the
    line of their first binding. `env` (the ModuleEnv) marks the ones that
    shadow a module-level name or builtin."""
    if isinstance(node, cst.FunctionDef):
        names = _params(node.params)
        v = _Binder()
        node.body.visit(v)
        names += v.bound
    elif isinstance(node, cst.Lambda):
        names = _params(node.params)
    else:
        names = _comp_targets(node)
    out: dict[str, LocalName] = {}
    for n in names:
        if n.value in out:
            continue
        shadows = n.value in BUILTIN_NAMES or (env is not None and (
            n.value in env.constants or n.value in env.functions or n.value in env.records
            or n.value in env.aliases))
        out[n.value] = LocalName(src.loc(n).line, shadows)
    return out


class _Reads(cst.CSTVisitor):
    """Names read in one body plus the free names of the scopes nested in it."""

    def __init__(self):
        self.names: set[str] = set()

    def visit_Name(self, node):
        self.names.add(node.value)

    def visit_Attribute(self, node):
        node.value.visit(self)          # `.attr` is not a name
        return False

    def visit_Arg(self, node):
        node.value.visit(self)          # a keyword is not a name
        return False

    def visit_FunctionDef(self, node):
        self.names |= free_names(node)
        return False

    def visit_Lambda(self, node):
        self.names |= free_names(node)
        return False

    def _comp(self, node):
        self.names |= free_names(node)
        return False

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comp


def free_names(node: ScopeNode) -> set[str]:
    """The names a function, lambda or comprehension reads from enclosing scopes."""
    r = _Reads()
    if isinstance(node, cst.FunctionDef):
        node.body.visit(r)
        own = set(n.value for n in _params(node.params))
        v = _Binder()
        node.body.visit(v)
        own |= {n.value for n in v.bound}
    elif isinstance(node, cst.Lambda):
        node.body.visit(r)
        own = {n.value for n in _params(node.params)}
    else:
        for child in node.children:
            if isinstance(child, cst.CompFor):
                _visit_compfor(child, r)
            else:
                child.visit(r)
        own = {n.value for n in _comp_targets(node)}
    return r.names - own


def _visit_compfor(comp: cst.CompFor, r: _Reads) -> None:
    comp.iter.visit(r)
    for c in comp.ifs:
        c.visit(r)
    if comp.inner_for_in is not None:
        _visit_compfor(comp.inner_for_in, r)


# ---------------------------------------------------------------------------
# Code after the final return


def _stmts(block) -> list:
    if isinstance(block, cst.SimpleStatementSuite):
        return list(block.body)
    out = []
    for s in block.body:
        if isinstance(s, cst.SimpleStatementLine):
            out.extend(s.body)
        else:
            out.append(s)
    return out


def _always_returns(st) -> bool:
    """A statement after which nothing in its block runs: a return, or an
    if/elif/else whose every branch ends that way."""
    if isinstance(st, cst.Return):
        return True
    if isinstance(st, cst.If):
        if st.orelse is None or not _block_returns(st.body):
            return False
        if isinstance(st.orelse, cst.If):
            return _always_returns(st.orelse)
        return _block_returns(st.orelse.body)
    return False


def _block_returns(block) -> bool:
    stmts = _stmts(block)
    return bool(stmts) and _always_returns(stmts[-1])


class _Blocks(cst.CSTVisitor):
    def __init__(self):
        self.blocks: list = []

    def visit_IndentedBlock(self, node):
        self.blocks.append(node)

    def visit_SimpleStatementSuite(self, node):
        self.blocks.append(node)


def check_no_code_after_return(src, fn: cst.FunctionDef) -> None:
    """A located error at the first statement that follows a return (or an
    if/else that returns on every path) in the same block, anywhere in fn."""
    v = _Blocks()
    fn.body.visit(v)
    first: Optional[cst.CSTNode] = None
    for block in v.blocks:
        stmts = _stmts(block)
        for a, b in zip(stmts, stmts[1:]):
            if _always_returns(a):
                pos = src.loc(b)
                if first is None or (pos.line, pos.col) < (src.loc(first).line, src.loc(first).col):
                    first = b
                break
    if first is not None:
        raise src.error(first, "statements after the final return never run",
                        hint="remove them, or move them before the return")
