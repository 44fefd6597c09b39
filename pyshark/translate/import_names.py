"""Qualified names of unshadowed imported and builtin names, without libcst's
ScopeProvider.

The translator asks, for a Name or an Attribute chain (`ps.map`, `len`,
`np.float32`), which qualified names it may denote (SourceInfo.
qualified_names). libcst's ScopeProvider answers for every node, but it
builds the scopes of the whole module first: 40-55 ms of a conformance
module's cold compile and ~180 ms of LocVolCalib's on the 2-core box, the
largest Python stage after emission. Almost every name the translator asks
about is the root of a module-level import (`ps`, `np`, `math`), a builtin
or a module-level constant, function or record, never bound in an inner
scope. For those the answer is fixed by the module's own statements, so
one walk of Python's own `ast` (C speed) finds them: `ImportNames.lookup`
gives the qualified names for such a node, and None for everything else (a
name bound in a function, lambda, class body or comprehension, imported
twice or both imported and assigned, a relative or star import, an
attribute of a builtin, an expression that is not a dotted name), which
SourceInfo then asks libcst about, as before. tests/translate/
test_import_names.py checks both agree on every expression name of the
corpus.
"""
from __future__ import annotations

import ast
import builtins

import libcst as cst

_BUILTINS = frozenset(dir(builtins))


class ImportNames:
    """The module-level imports of one source text, the names bound only in
    the module's own scope, and every name bound in an inner scope (see the
    module docstring)."""

    def __init__(self, imports: dict[str, str], plain: set[str], module: set[str],
                 bound: set[str]):
        self.imports = imports      # root name -> qualified name it stands for
        self.plain = plain          # roots bound by `import a.b.c` (the path is the name)
        self.module = module        # bound by the module's own statements, not imports
        self.bound = bound          # bound in an inner scope, or ambiguously

    @classmethod
    def of(cls, text: str) -> "ImportNames | None":
        """The table for a module's text; None when Python's parser rejects
        it or it has a star import (libcst answers then)."""
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        imports: dict[str, str] = {}
        plain: set[str] = set()
        bound: set[str] = set()
        seen: set[str] = set()

        def bind_import(name: str, qual: str, is_plain: bool) -> None:
            if name in seen:                    # imported twice: ambiguous
                bound.add(name)
            seen.add(name)
            imports[name] = qual
            if is_plain:
                plain.add(name)
        top = set()
        for st in tree.body:
            if isinstance(st, ast.Import):
                top.add(id(st))
                for a in st.names:
                    if a.asname:
                        bind_import(a.asname, a.name, False)
                    else:
                        bind_import(a.name.split(".")[0], a.name.split(".")[0], True)
            elif isinstance(st, ast.ImportFrom):
                top.add(id(st))
                if any(a.name == "*" for a in st.names):
                    return None
                for a in st.names:
                    if st.level or not st.module:       # relative: libcst answers
                        bound.add(a.asname or a.name)
                    else:
                        bind_import(a.asname or a.name, f"{st.module}.{a.name}", False)
        module: set[str] = set()
        _Bindings(top, module, bound).visit(tree)
        bound |= module & set(imports)          # imported and assigned: ambiguous
        return cls(imports, plain, module - bound, bound)

    def lookup(self, node: cst.CSTNode) -> set[str] | None:
        """The qualified names of a Name or a dotted Attribute chain whose
        root is an unshadowed top-level import or builtin (or bound nowhere:
        no names); None when libcst must answer."""
        parts: list[str] = []
        n = node
        while isinstance(n, cst.Attribute):
            parts.append(n.attr.value)
            n = n.value
        if not isinstance(n, cst.Name):
            return None
        root = n.value
        if root in self.bound:
            return None
        rest = parts[::-1]
        if root in self.module:             # a module-level constant, function, record
            return {".".join([root, *rest])}
        if root in self.imports:
            if root in self.plain:
                return {".".join([root, *rest])}
            return {".".join([self.imports[root], *rest])}
        if root in _BUILTINS:
            # an attribute of a builtin resolves to no module member
            return None if rest else {f"builtins.{root}"}
        return set()


class _Bindings(ast.NodeVisitor):
    """Sorts every binding other than a top-level import by its scope: the
    module's own (`module`), or an inner one, a function's, a lambda's, a
    class body's or a comprehension's (`inner`). Walrus targets,
    global/nonlocal names and imports that are not top-level statements
    always count as inner (libcst answers for them)."""

    def __init__(self, top_imports: set, module: set, inner: set):
        self.top = top_imports
        self.module, self.inner = module, inner
        self.depth = 0

    def bind(self, name: str) -> None:
        (self.inner if self.depth else self.module).add(name)

    def scoped(self, node, name: str | None = None) -> None:
        if name is not None:
            self.bind(name)
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_FunctionDef(self, node):
        for d in node.decorator_list:           # evaluated in the enclosing scope
            self.visit(d)
        self.bind(node.name)
        self.depth += 1
        for child in ast.iter_child_nodes(node):
            if child not in node.decorator_list:
                self.visit(child)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self.scoped(node)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load):
            self.bind(node.id)

    def visit_arg(self, node):
        self.inner.add(node.arg)
        self.generic_visit(node)

    def visit_NamedExpr(self, node):
        self.inner.add(node.target.id)
        self.visit(node.value)

    def visit_Import(self, node):
        if id(node) not in self.top:            # an import under if/try/def: libcst's
            for a in node.names:
                self.inner.add(a.asname or a.name.split(".")[0])

    def visit_ImportFrom(self, node):
        if id(node) not in self.top:
            for a in node.names:
                self.inner.add(a.asname or a.name)

    def visit_ExceptHandler(self, node):
        if node.name:
            self.bind(node.name)
        self.generic_visit(node)

    def visit_Global(self, node):
        self.inner.update(node.names)

    visit_Nonlocal = visit_Global

    def visit_MatchAs(self, node):
        if node.name:
            self.bind(node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node):
        if node.rest:
            self.bind(node.rest)
        self.generic_visit(node)


__all__ = ["ImportNames"]
