"""ImportNames (pyshark/translate/import_names.py) answers qualified_names
without libcst's ScopeProvider for unshadowed imports and builtins: where it
answers, it must give exactly what the ScopeProvider gives, for every Name
and dotted Attribute of every module the project compiles or rejects."""
from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from pyshark.testing import conformance_dir
from pyshark.translate.import_names import ImportNames
from pyshark.translate.source import SourceInfo

ROOT = Path(__file__).resolve().parents[2]


def _corpus() -> list[Path]:
    files = sorted(conformance_dir().rglob("*.py"))
    for folder in ("examples", "benchmarks/programs", "tests/wrapper/kernels", "tests/translate"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


class _Names(cst.CSTVisitor):
    """Every Name and Attribute in an expression's place (what the
    translator may ask about): not a definition's or parameter's name, a
    keyword, an attribute's own name, or a part of an import statement."""

    def __init__(self):
        self.nodes: list = []
        self.skip: set = set()

    def visit_Name(self, node):
        if id(node) not in self.skip:
            self.nodes.append(node)

    def visit_Attribute(self, node):
        self.skip.add(id(node.attr))
        self.nodes.append(node)

    def visit_FunctionDef(self, node):
        self.skip.add(id(node.name))

    def visit_ClassDef(self, node):
        self.skip.add(id(node.name))

    def visit_Param(self, node):
        self.skip.add(id(node.name))

    def visit_Arg(self, node):
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_Import(self, node):
        return False

    def visit_ImportFrom(self, node):
        return False


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: str(p.relative_to(p.parents[1])))
def test_agrees_with_libcst_scopes(path):
    text = path.read_text()
    try:
        src = SourceInfo.parse(text, str(path))
    except Exception:
        pytest.skip("not a module libcst parses")
    if src._names is None:
        pytest.skip("no table (a star import or a module Python's parser rejects)")
    names = _Names()
    src.module.visit(names)
    answered = 0
    for node in names.nodes:
        fast = src._names.lookup(node)
        if fast is not None:
            answered += 1
            assert fast == src.scoped_qualified_names(node), src.code(node)
    assert answered or not names.nodes or "import" not in text


SHADOWED = '''
import pyshark.prelude as ps
import numpy as np
from math import sqrt as root
import os.path

def f(xs, len):
    ps = 3
    return len(xs) + ps

def g(x):
    return root(x) + np.float32(x) + abs(x) + os.path.join("a")

class R:
    np = 1
'''


def test_shadowed_names_are_left_to_libcst():
    table = ImportNames.of(SHADOWED)
    module = cst.parse_module(SHADOWED)
    found = {}

    class V(cst.CSTVisitor):
        def visit_Attribute(self, node):
            found[module.code_for_node(node)] = table.lookup(node)

        def visit_Name(self, node):
            found.setdefault(node.value, table.lookup(node))
    module.visit(V())
    assert found["ps"] is None and found["len"] is None and found["np"] is None
    assert found["np.float32"] is None                  # np is bound in class R
    assert found["root"] == {"math.sqrt"}
    assert found["abs"] == {"builtins.abs"}
    assert found["os.path.join"] == {"os.path.join"}
    assert found["undefined_name"] if "undefined_name" in found else True


def test_star_and_syntax_errors_give_no_table():
    assert ImportNames.of("from math import *\n") is None
    assert ImportNames.of("def f(:\n") is None


def test_relative_imports_are_left_to_libcst():
    table = ImportNames.of("from . import helper\nimport math\n")
    mod = cst.parse_module("helper.x\nmath.pi\n")
    exprs = [st.body[0].value for st in mod.body]
    assert table.lookup(exprs[0]) is None and table.lookup(exprs[1]) == {"math.pi"}
