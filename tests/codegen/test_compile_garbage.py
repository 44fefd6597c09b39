"""A compile leaves (almost) nothing for Python's cyclic garbage collector.

A cold compile builds large object graphs (libcst's tree, the core and
kernel IRs, llvmlite's module). Whatever of them hangs off a reference
cycle outlives the compile until the cyclic collector walks it: a recursive
closure (a nested `def walk` that calls itself), a bound method stored in
the object it is bound to, llvmlite's parent pointers. LocVolCalib's
optimised compile left 372,000 such objects, 60-110 ms of collection on
the 2-core box, part of every cold compile (pyshark.compile_times,
`pyshark bench`'s compile report). The compile now breaks its cycles
(emit_llvm.ModEmitter._release, module functions for recursive walks), so
reference counting frees what it built as it goes.
"""
from __future__ import annotations

import gc

import pytest

from pyshark.benchmarks import suite
from pyshark.codegen.cpu.backend import translate_and_check
from pyshark.codegen.cpu.emit import emit_module_parts
from pyshark.codegen.stages import build_kernels


def _compile(path, quick: bool) -> int:
    program = translate_and_check(path, text=path.read_text())
    return len(emit_module_parts(build_kernels(program, quick=quick), 2))


@pytest.mark.parametrize("quick", [False, True], ids=["optimised", "quick"])
@pytest.mark.parametrize("program", ["locvolcalib", "srad", "backprop"])
def test_a_compile_leaves_little_cyclic_garbage(program, quick):
    path = suite.PROGRAMS_DIR / f"{program}.py"
    _compile(path, quick)                   # imports and caches outside the count
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        assert _compile(path, quick) >= 1
        left = gc.collect()
    finally:
        if was:
            gc.enable()
    # 372,000 (LocVolCalib), 66,000 (srad) before; about 2,000 and 1,000 now
    assert left < 8000, f"{left} objects were left for the cyclic collector"


def _recursive_closures_left_standing(root) -> list[str]:
    """Nested functions of the compiler's sources that call themselves (a
    reference cycle through their closure cell) and whose enclosing
    function does not set their name to None in a `finally`."""
    import ast
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            broken = {t.id for node in ast.walk(fn) if isinstance(node, ast.Try)
                      for st in node.finalbody for a in ast.walk(st)
                      if isinstance(a, ast.Assign) and isinstance(a.value, ast.Constant)
                      and a.value.value is None
                      for t in a.targets if isinstance(t, ast.Name)}
            for inner in fn.body:
                if not isinstance(inner, ast.FunctionDef):
                    continue
                calls_itself = any(isinstance(n, ast.Name) and n.id == inner.name
                                   and isinstance(n.ctx, ast.Load) for n in ast.walk(inner))
                if calls_itself and inner.name not in broken:
                    out.append(f"{path}:{inner.lineno} {fn.name}.<locals>.{inner.name}")
    return out


def test_the_compilers_recursive_closures_break_their_cycles():
    """The rule of docs/decisions.md ("Tiered compilation"): a recursive walk
    in the compiler, the prelude or the wrapper (whose helpers run per call)
    is a module function, or its enclosing function sets its name to None
    in a `finally` once done."""
    from pathlib import Path

    import pyshark
    import pyshark.codegen
    import pyshark.wrapper
    top = Path(pyshark.__file__).parent
    roots = [Path(pyshark.codegen.__file__).parent, top / "translate", top / "core",
             top / "prelude", Path(pyshark.wrapper.__file__).parent]
    left = [x for r in roots for x in _recursive_closures_left_standing(r)]
    assert left == [], left
