"""The import graph of the compiler (issue 16): no import cycle in codegen/
and wrapper/, and no module imports a private name of another.

Imports are read with `ast`, in-function imports included: an import in a
function ties two modules as much as one at the top, it only puts off the
failure of a cycle to run time. `if TYPE_CHECKING:` blocks never run and
are left out. Importing `a.b.c` runs the `__init__` of `a` and `a.b` too,
so it counts as an import of those packages (except the importer's own).
pyshark/ is read as well: its cycles are listed below, so that a new one
fails here too.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: folder of the repository -> the dotted name it installs as (pyproject.toml)
PACKAGES = {"codegen": "pyshark.codegen", "wrapper": "pyshark.wrapper", "pyshark": "pyshark"}

#: packages that must have no cycle at all (the issue's "done when")
ACYCLIC = ("pyshark.codegen", "pyshark.wrapper")

#: Cycles still there, each with what removes it. A cycle that is gone must
#: leave this list (the test says so), so the list stays the truth.
KNOWN_CYCLES: dict[frozenset, str] = {
    # pyshark/ (not in the "done when"; listed so that no new one comes)
    frozenset({
        "pyshark.translate.calls", "pyshark.translate.comprehensions", "pyshark.translate.exprs",
        "pyshark.translate.funcs", "pyshark.translate.indexing", "pyshark.translate.iteration",
        "pyshark.translate.loops", "pyshark.translate.prelude_arrays",
        "pyshark.translate.prelude_calls", "pyshark.translate.prelude_common",
        "pyshark.translate.prelude_scalars", "pyshark.translate.prelude_soacs",
        "pyshark.translate.stmts"}):
        "the translator's mutually recursive expression and statement walks",
    frozenset({"pyshark.prelude.build", "pyshark.prelude.convert", "pyshark.prelude.scalars",
               "pyshark.prelude.tuple_array"}):
        "the prelude's value builders and converters",
}

#: Private names still imported across modules, (importer, module, name),
#: with what removes each.
KNOWN_PRIVATE: dict[tuple, str] = {
    ("pyshark.prelude.build", "pyshark.prelude.scalars", "_scalar_class"):
        "pyshark/prelude (outside the issue's codegen/ and wrapper/)",
    ("pyshark.prelude.convert", "pyshark.prelude.scalars", "_scalar_class"):
        "pyshark/prelude (outside the issue's codegen/ and wrapper/)",
    ("pyshark.prelude.convert", "pyshark.prelude.build", "_stack_tuple_arrays"):
        "pyshark/prelude (outside the issue's codegen/ and wrapper/)",
    ("pyshark.prelude.soacs", "pyshark.prelude.build", "_PY_SCALARS"):
        "pyshark/prelude (outside the issue's codegen/ and wrapper/)",
}


# ---------------------------------------------------------------------------
# Reading the graph


def modules(root: Path = ROOT, packages: dict = PACKAGES) -> dict[str, tuple[Path, bool]]:
    """{dotted name: (file, is a package)} of every .py file of the packages."""
    found = {}
    for folder, dotted in packages.items():
        for f in sorted((root / folder).rglob("*.py")):
            parts = dotted.split(".") + list(f.relative_to(root / folder).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_pkg else parts)] = (f, is_pkg)
    return found


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node, at any depth, outside TYPE_CHECKING blocks."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            todo.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def _known(name: str, mods: dict) -> str | None:
    """The longest prefix of a dotted name that is one of our modules."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def read_graph(mods: dict) -> tuple[dict[str, set], list[tuple]]:
    """(edges: module -> the modules its imports run, private imports as
    (importer, module, name, line))."""
    edges: dict[str, set] = {}
    private = []
    for mod, (path, is_pkg) in mods.items():
        out = edges.setdefault(mod, set())
        tree = ast.parse(path.read_text(), str(path))
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [_known(a.name, mods) for a in node.names]
            else:
                if node.level:
                    base = mod.split(".")[:None if is_pkg else -1]
                    base = base[:len(base) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module
                targets = []
                for a in node.names:
                    if f"{source}.{a.name}" in mods:        # a submodule
                        targets.append(f"{source}.{a.name}")
                        continue
                    found = _known(source, mods)
                    targets.append(found)
                    if (found is not None and found != mod and a.name.startswith("_")
                            and not a.name.startswith("__")):
                        private.append((mod, found, a.name, node.lineno))
            mine = {".".join(mod.split(".")[:k]) for k in range(1, mod.count(".") + 2)}
            for t in filter(None, targets):
                out.add(t)
                parts = t.split(".")                # the packages an import runs
                out.update(p for p in (".".join(parts[:k]) for k in range(1, len(parts)))
                           if p in mods and p not in mine)
        out.discard(mod)
    return edges, private


def cycles(edges: dict[str, set]) -> list[frozenset]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    found = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(frozenset(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _in(name: str, packages) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


@pytest.fixture(scope="module")
def graph():
    return read_graph(modules())


def _show(comp) -> str:
    return "{" + ", ".join(sorted(comp)) + "}"


# ---------------------------------------------------------------------------
# The rules


def test_no_import_cycle_in_codegen_and_wrapper(graph):
    edges, _ = graph
    found = [c for c in cycles(edges) if any(_in(m, ACYCLIC) for m in c)]
    new = [c for c in found if c not in KNOWN_CYCLES]
    assert not new, "import cycles: " + "; ".join(_show(c) for c in new)


def test_no_new_import_cycle_in_the_rest_of_pyshark(graph):
    edges, _ = graph
    found = [c for c in cycles(edges) if not any(_in(m, ACYCLIC) for m in c)]
    new = [c for c in found if c not in KNOWN_CYCLES]
    assert not new, "import cycles: " + "; ".join(_show(c) for c in new)


def test_known_cycles_are_still_there(graph):
    """An entry of KNOWN_CYCLES whose cycle is gone (or changed) must go."""
    edges, _ = graph
    found = set(cycles(edges))
    stale = [c for c in KNOWN_CYCLES if c not in found]
    assert not stale, "gone or changed, update KNOWN_CYCLES: " + "; ".join(map(_show, stale))


def test_no_private_name_imported_across_modules(graph):
    _, private = graph
    new = [p for p in private if p[:3] not in KNOWN_PRIVATE]
    assert not new, "private names imported: " + "; ".join(
        f"{m} line {line} imports {name} from {src}" for m, src, name, line in new)
    stale = set(KNOWN_PRIVATE) - {p[:3] for p in private}
    assert not stale, f"no longer imported, update KNOWN_PRIVATE: {sorted(stale)}"


#: the lowering's rules: the common ones, each family, and the driver that
#: gathers them (lower_base.py is the layer under them all)
RULES = ("pyshark.codegen.lower", "pyshark.codegen.lower_scalar",
         "pyshark.codegen.lower_control", "pyshark.codegen.lower_arrays",
         "pyshark.codegen.mc", "pyshark.codegen.gpu")


def _reachable(edges: dict, start: str) -> set:
    seen, todo = set(), [start]
    while todo:
        for m in edges.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def test_lowering_base_imports_no_rule(graph):
    edges, _ = graph
    reached = _reachable(edges, "pyshark.codegen.lower_base")
    assert not sorted(m for m in reached if _in(m, RULES))


def test_opencl_backend_imports_nothing_of_the_cpu_backend(graph):
    """What both native backends use (the entry ABI, the error protocol,
    the allocation-failure message) lives outside cpu/ (marshal.py, kir.py).
    The one exception: opencl/native/ spells host code with the cpu
    backend's LLVM emitter and link step (issue 18; docs/opencl-backend.md,
    "Native host code"); moving those into a shared package is left."""
    edges, mods = graph[0], modules()
    for m in mods:
        if _in(m, ("pyshark.codegen.opencl",)) and not _in(m, ("pyshark.codegen.opencl.native",)):
            assert not sorted(x for x in edges[m] if _in(x, ("pyshark.codegen.cpu",))), m


def test_the_wrapper_reaches_no_device_runtime(graph):
    """DeviceArrays need only wrapper/device_interface.ArrayDevice of their
    device; the runtime implements it (the wrapper names backends only as
    strings, registry.py)."""
    edges, mods = graph[0], modules()
    for m in mods:
        if _in(m, ("pyshark.wrapper",)):
            assert not sorted(x for x in _reachable(edges, m)
                              if _in(x, ("pyshark.codegen.opencl",))), m


def test_multicore_family_imports_no_gpu_family(graph):
    """gpu/ falls back on mc/ and reuses its pieces, never the other way."""
    edges, mods = graph[0], modules()
    for m in mods:
        if _in(m, ("pyshark.codegen.mc",)):
            assert not sorted(x for x in _reachable(edges, m) if _in(x, ("pyshark.codegen.gpu",)))


# ---------------------------------------------------------------------------
# The reader itself, on a package made for it


def _package(tmp_path: Path, files: dict) -> dict:
    for name, text in files.items():
        f = tmp_path / "pkg" / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return modules(tmp_path, {"pkg": "top.pkg"})


def test_reader_finds_a_cycle_closed_inside_a_function(tmp_path):
    mods = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from .b import f\n",
        "b.py": "def f():\n    from . import a\n    return a\n",
        "c.py": "from top.pkg import a\nfrom .a import _hidden\n",
    })
    edges, private = read_graph(mods)
    assert edges["top.pkg.b"] == {"top.pkg.a"}
    assert cycles(edges) == [frozenset({"top.pkg.a", "top.pkg.b"})]
    assert [p[:3] for p in private] == [("top.pkg.c", "top.pkg.a", "_hidden")]


def test_reader_counts_the_packages_an_import_runs_and_skips_type_checking(tmp_path):
    mods = _package(tmp_path, {
        "__init__.py": "",
        "x/__init__.py": "from ..y import g\n",
        "x/m.py": "X = 1\n",
        "y.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    from .x import m\ndef g():\n    return 1\n"),
        "z.py": "from .x.m import X\n",
    })
    edges, _ = read_graph(mods)
    assert edges["top.pkg.z"] == {"top.pkg.x.m", "top.pkg.x"}
    assert edges["top.pkg.y"] == set()
    assert cycles(edges) == []
