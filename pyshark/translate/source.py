"""Source files, positions and located CompileErrors.

Every error the translator raises goes through `SourceInfo.error(node, ...)`, so
each one names file:line:col and shows the line with a caret.
"""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, ScopeProvider

from ..compile_times import stage
from ..core.ir import Loc
from ..errors import CompileError
from .import_names import ImportNames


@dataclass
class SourceInfo:
    filename: str
    text: str
    wrapper: MetadataWrapper

    @staticmethod
    def parse(text: str, filename: str) -> "SourceInfo":
        try:
            with stage("parse"):
                module = cst.parse_module(text)
        except cst.ParserSyntaxError as exc:
            line = exc.raw_line
            col = max(exc.raw_column, 0)
            lines = text.splitlines()
            src = lines[line - 1] if 0 < line <= len(lines) else None
            raise CompileError(f"syntax error: {exc.message}", filename, line, col, src) from None
        with stage("metadata"):
            # nothing else holds the tree we just parsed: no defensive deep copy
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        return SourceInfo(filename, text, wrapper)

    @property
    def module(self) -> cst.Module:
        return self.wrapper.module

    def __post_init__(self):
        self.lines = self.text.splitlines()
        with stage("metadata"):
            self.positions = self.wrapper.resolve(PositionProvider)
            self._names = ImportNames.of(self.text)
        self._scopes = None

    @property
    def scopes(self):
        """libcst's scopes, resolved on first use: qualified_names asks them
        only about names that ImportNames cannot answer alone. (The scopes,
        not QualifiedNameProvider: that provider is one more walk of the
        whole tree that stores, per node, a closure calling
        scope.get_qualified_names_for(node), which qualified_names calls
        itself.)"""
        if self._scopes is None:
            with stage("metadata"):
                self._scopes = self.wrapper.resolve(ScopeProvider)
        return self._scopes

    def loc(self, node: cst.CSTNode) -> Loc:
        pos = self.positions.get(node)
        if pos is None:
            return Loc(self.filename, 0, 0)
        return Loc(self.filename, pos.start.line, pos.start.column)

    def error(self, node: cst.CSTNode | None, message: str, hint: str | None = None) -> CompileError:
        """A CompileError located at `node` (raise it: `raise src.error(...)`)."""
        if node is None:
            return CompileError(message, self.filename, 0, 0, None, hint)
        loc = self.loc(node)
        src = self.lines[loc.line - 1] if 0 < loc.line <= len(self.lines) else None
        return CompileError(message, self.filename, loc.line, loc.col, src, hint)

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """Fully qualified names libcst resolves for a Name/Attribute node,
        e.g. {'pyshark.prelude.map'} for `ps.map`, {'builtins.len'} for `len`.
        For an attribute only names ending in its attribute count: libcst
        resolves `int.bit_length` to 'builtins.int' (an attribute of a
        builtin, which is not a module member)."""
        if self._names is not None:
            fast = self._names.lookup(node)
            if fast is not None:
                return fast
        return self.scoped_qualified_names(node)

    def scoped_qualified_names(self, node: cst.CSTNode) -> set[str]:
        """qualified_names as libcst's ScopeProvider resolves them."""
        out = set()
        scope = self.scopes.get(node)
        found = scope.get_qualified_names_for(node) if scope is not None else ()
        for q in found:
            name = q.name
            if q.source.name == "BUILTIN" and not name.startswith("builtins."):
                name = "builtins." + name
            if isinstance(node, cst.Attribute) and not name.endswith("." + node.attr.value):
                continue
            out.add(name)
        return out

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)
