"""tables (codegen/opt/tables.py, run by hoist.py): the math-library part
of an inner map that does not depend on the outer map's element becomes a
table computed once before the outer map. The pass's output is compared
with the core interpreter before it (values and exception classes, empty
and negative widths included), and on every backend with Python mode
(tests/differential covers the corpus; crystal is in benchmarks/)."""
from __future__ import annotations

import numpy as np
import pytest

from opt_build import before_and_after_hoist, check_same
from pyshark import Wrapper
from pyshark.wrapper import available_backends
from pyshark.core import ir
from pyshark.core.traverse import iter_stms

SRC = '''
import pyshark.prelude as ps
F = ps.Array[ps.f32]


@ps.entry
def waves(xs: F, n: int, k: ps.f32) -> F:
    # crystal's shape: cos and sin of each wave's angle, inside the map over xs
    th = 3.0 / k
    return ps.map(lambda x: ps.sum(ps.tabulate(n, lambda i: ps.cos(
        ps.cos(ps.f32(i) * th) * x + ps.sin(ps.f32(i) * th)))), xs)


@ps.entry
def cheap(xs: F, n: int, k: ps.f32) -> F:
    # no math library call in the invariant part: recomputed, not a table
    return ps.map(lambda x: ps.sum(ps.tabulate(n, lambda i: ps.f32(i) * k + x)), xs)


@ps.entry
def reads_x(xs: F, n: int) -> F:
    # the costly call reads the outer element: stays
    return ps.map(lambda x: ps.sum(ps.tabulate(n, lambda i: ps.exp(ps.f32(i) * x))), xs)


@ps.entry
def over_array(xs: F, ws: F) -> F:
    # an inner map over an outer array, two costly outputs used twice
    return ps.map(lambda x: ps.sum(ps.map(lambda w: ps.exp(w) * x + ps.log(w + 2.0) - ps.exp(w),
                                          ws)), xs)


@ps.entry
def width_from_x(xs: ps.Array[int], k: ps.f32) -> F:
    # the inner width depends on the element: no table
    return ps.map(lambda x: ps.sum(ps.tabulate(x, lambda i: ps.sin(ps.f32(i) * k))), xs)
'''


@pytest.fixture(scope="module")
def programs():
    return before_and_after_hoist(SRC, "tables_cases.py")


def _tables_before_the_map(fun: ir.FunDef) -> list:
    """The table statements at the entry's top level (named tbl_*)."""
    return [v.name for s in iter_stms(fun.body) for v in s.pat if v.name.startswith("tbl")
            and s.exp.__class__ is ir.Map]


def _costly_inside(fun: ir.FunDef, ops=("cos", "sin", "exp", "log")) -> int:
    n = 0
    for s in fun.body.stms:
        if isinstance(s.exp, ir.Map) and not any(v.name.startswith("tbl") for v in s.pat):
            n += sum(isinstance(x.exp, ir.UnOp) and x.exp.op in ops
                     for x in iter_stms(s.exp.lam.body))
    return n


def test_crystals_shape_gets_a_table(programs):
    before, after = programs
    f0, f1 = before.functions["waves"], after.functions["waves"]
    assert len(_tables_before_the_map(f1)) == 2                 # cos and sin of the angle
    assert _costly_inside(f0) == 3 and _costly_inside(f1) == 1    # one cos per element left


def test_an_inner_map_over_an_outer_array(programs):
    _, after = programs
    f = after.functions["over_array"]
    assert len(_tables_before_the_map(f)) == 2                  # exp(w) and log(w + 2)
    assert _costly_inside(f) == 0


@pytest.mark.parametrize("entry", ["cheap", "reads_x", "width_from_x"])
def test_no_table(programs, entry):
    _, after = programs
    assert _tables_before_the_map(after.functions[entry]) == []


XS = [np.array([], np.float32), np.array([0.5], np.float32),
      np.linspace(-2, 2, 7, dtype=np.float32)]


@pytest.mark.parametrize("entry, args", [
    ("waves", (xs, n, np.float32(k))) for xs in XS for n in (-1, 0, 1, 5) for k in (0.0, 1.5)
] + [
    ("over_array", (xs, ws)) for xs in XS
    for ws in (np.array([], np.float32), np.array([1.0, 0.25, 3.0], np.float32))
])
def test_the_interpreter_agrees(programs, entry, args):
    before, after = programs
    check_same(before, after, entry, args)


@pytest.fixture(scope="module")
def cpu_pair(tmp_path_factory):
    if "cpu" not in available_backends():
        pytest.skip("cpu unavailable")
    d = tmp_path_factory.mktemp("tables")
    src = d / "tables_mod.py"
    src.write_text(SRC)
    return [Wrapper(b, cache_dir=d / "cache").add_source_file(src).compile_and_load()
            for b in ("python", "cpu")]


def test_cpu_agrees_with_python_mode(cpu_pair):
    py, cpu = cpu_pair
    xs = np.linspace(-2, 2, 40_001, dtype=np.float32)    # above par_min: a parallel map
    for n in (0, 1, 17):
        np.testing.assert_allclose(cpu.waves(xs, n, np.float32(1.5)),
                                   py.waves(xs, n, np.float32(1.5)), rtol=2e-5, atol=2e-4)
    ws = np.array([1.0, 0.25, 3.0], np.float32)
    np.testing.assert_allclose(cpu.over_array(xs, ws), py.over_array(xs, ws), rtol=2e-5,
                               atol=2e-4)
    for f in (cpu, py):
        with pytest.raises(Exception) as exc:
            f.waves(xs[:3], -1, np.float32(1.0))
        assert type(exc.value).__name__ == "ShapeError"
