"""Qualified names of unshadowed imported and builtin names, without libcst's
ScopeProvider.

The translator asks, for a Name or an Attribute chain (`ps.map`, `len`,
`np.float32`), which qualified names it may denote (SourceInfo.
qualified_names). libcst's ScopeProvider answers for every node, but it
builds the scopes of the whole module first: 40-55 ms of a conformance
module's cold compile and ~180 ms of LocVolCalib's on the 2-core box, the
largest Python stage after emission. Almost every name the translator asks
about is the root of a module-level import (`ps`, `np`, `math`) or a
builtin, never bound anywhere else in the file. For those the answer is
fixed by the import statement alone, so one walk of Python's own `ast`
(C speed) finds them: `ImportNames.lookup` gives the qualified names for such
a node, and None for everything else (a name bound anywhere in the module
other than by one top-level import, a relative or star import, an
attribute of a builtin, an expression that is not a dotted name), which
SourceInfo then asks libcst about, as before. tests/translate/
test_import_names.py checks both agree on every name of the corpus.
"""
from __future__ import annotations

import ast
import builtins

import libcst as cst

_BUILTINS = frozenset(dir(builtins))


class ImportNames:
    """The module-level imports of one source text, and every name bound
    anywhere else in it (see the module docstring)."""

    def __init__(self, imports: dict[str, str], plain: set[str], bound: set[str]):
        self.imports = imports      # root name -> qualified name it stands for
        self.plain = plain          # roots bound by `import a.b.c` (the path is the name)
        self.bound = bound          # names bound otherwise, or ambiguously

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
        cls._walk_bindings(tree, top, bound)
        return cls(imports, plain, bound)

    @staticmethod
    def _walk_bindings(tree: ast.AST, top: set, bound: set) -> None:
        """Every name bound in the module other than by a top-level import
        (assignment and loop targets, parameters, definitions, nested
        imports, except/with/match names, global and nonlocal)."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                for a in node.names:
                    bound.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                bound.update(node.names)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                bound.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                bound.add(node.rest)

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
        if root in self.imports:
            if root in self.plain:
                return {".".join([root, *rest])}
            return {".".join([self.imports[root], *rest])}
        if root in _BUILTINS:
            # an attribute of a builtin resolves to no module member
            return None if rest else {f"builtins.{root}"}
        return set()


__all__ = ["ImportNames"]
