"""The inverse interchange (codegen/opt/interchange.py: a loop of elementwise
maps becomes a map of the loop) and the tiling of its ParFor
(codegen/kir_passes/tile_steps.py): which loops qualify, and the programs
against Python mode on the kir interpreter, cpu (both passes) and opencl
(neither), at sizes around the vector width, the strip, par_min and the
thread count, with zero steps and a failing element."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pyshark.codegen import kir as K
from pyshark.codegen.opt.interchange import interchange
from pyshark.codegen.stages import build_kernels, core_stages, run_stages
from pyshark.core import ir
from pyshark.core.check import check_program
from pyshark.core.traverse import iter_stms
from pyshark.translate import translate_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from backend_pair import python_and  # noqa: E402

SRC = """
import pyshark.prelude as ps

def step(x: ps.f32, v: ps.f32, dt: ps.f32) -> tuple[ps.f32, ps.f32]:
    a = -x * ps.f32(0.5)
    return x + dt * v, v + dt * a

@ps.entry
def particles(xs: ps.Array[ps.f32], vs: ps.Array[ps.f32], steps: int,
              dt: ps.f32) -> tuple[ps.Array[ps.f32], ps.Array[ps.f32]]:
    for s in range(steps):
        xs, vs = ps.unzip(ps.map(lambda x, v: step(x, v, dt), xs, vs))
    return xs, vs

@ps.entry
def decay(xs: ps.Array[ps.f64], steps: int) -> ps.Array[ps.f64]:
    for s in range(steps):
        xs = ps.map(lambda x: x * 0.99 + ps.f64(s), xs)
    return xs

@ps.entry
def chained(xs: ps.Array[ps.f64], ws: ps.Array[ps.f64], steps: int) -> ps.Array[ps.f64]:
    # two maps per step and a read-only table (ws) beside the carried array
    for s in range(steps):
        ys = ps.map(lambda x, w: x * w, xs, ws)
        xs = ps.map(lambda y, x: 0.5 * y + x * 0.25, ys, xs)
    return xs

@ps.entry
def lookup(xs: ps.Array[int], table: ps.Array[int], steps: int, bad: int) -> ps.Array[int]:
    # an IndexError at one element (x == bad), at the step it gets there
    for s in range(steps):
        xs = ps.map(lambda x: table[x % 10] + x if x != bad else table[15], xs)
    return xs

@ps.entry
def stencil(xs: ps.Array[ps.f64], steps: int) -> ps.Array[ps.f64]:
    # an element reads its neighbours: not interchanged
    n = len(xs)
    for s in range(steps):
        xs = ps.tabulate(n, lambda i: (xs[max(i - 1, 0)] + xs[min(i + 1, n - 1)]) * 0.5)
    return xs

@ps.entry
def normalised(xs: ps.Array[ps.f64], steps: int) -> ps.Array[ps.f64]:
    # a reduction in the loop: not interchanged
    for s in range(steps):
        t = ps.sum(xs)
        xs = ps.map(lambda x: x / (1.0 + abs(t)), xs)
    return xs

@ps.entry
def counted(xs: ps.Array[ps.f64], steps: int) -> tuple[ps.Array[ps.f64], ps.f64]:
    # a carried scalar beside the array: not interchanged
    t = 0.0
    for s in range(steps):
        xs = ps.map(lambda x: x + t, xs)
        t = t + 1.0
    return xs, t
"""


def _program():
    p = translate_source(textwrap.dedent(SRC), "<test>")
    check_program(p)
    return p


def _has_loop_of_maps(fun: ir.FunDef) -> bool:
    return any(s.exp.__class__ is ir.Loop and any(x.exp.__class__ is ir.Map
                                                  for x in s.exp.body.stms)
               for s in fun.body.stms)


def test_which_loops_are_interchanged():
    p = run_stages(_program(), core_stages())
    assert [n for n, _ in core_stages()][-1] == "interchange"
    for name in ("particles", "decay", "chained", "lookup"):
        assert not _has_loop_of_maps(p.functions[name]), name
    for name in ("stencil", "normalised", "counted"):
        assert _has_loop_of_maps(p.functions[name]), name
    check_program(p)


def test_interchange_output_checks_and_keeps_the_loop_for_many_steps():
    p = run_stages(_program(), core_stages())
    check_program(p)
    for name in ("particles", "decay"):
        body = p.functions[name].body
        ifs = [s.exp for s in body.stms if s.exp.__class__ is ir.If]
        assert len(ifs) == 1
        assert any(s.exp.__class__ is ir.Loop for s in ifs[0].else_body.stms)
    check_program(interchange(p))


def test_the_step_loop_is_tiled():
    m = build_kernels(_program(), None, check=True)
    fns = {f.name: f for f in m.functions}

    def tiled(f):
        return any(isinstance(s, K.ParFor) and any(isinstance(t, K.Alloc) and "_tile" in t.var.name
                                                   for t in s.body.stms)
                   for s in _walk(f.body))
    assert tiled(fns["pyshark_particles"]) and tiled(fns["pyshark_decay"])
    assert not tiled(fns["pyshark_stencil"])


def _walk(b):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from _walk(sb)


@pytest.fixture(scope="module", params=["kir", "cpu", "opencl"])
def wrappers(request, tmp_path_factory):
    return python_and(request.param, SRC, tmp_path_factory, "interchange")


SIZES = [0, 1, 7, 257, 70001]


def _size(c, n):
    return min(n, 3001) if c.backend != "cpu" else n


@pytest.mark.parametrize("n", SIZES)
def test_particles_and_decay(wrappers, n):
    py, c = wrappers
    n = _size(c, n)
    rng = np.random.default_rng(n)
    xs, vs = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    for steps in (0, 1, 3, 10):
        got, want = c.particles(xs, vs, steps, np.float32(0.01)), py.particles(
            xs, vs, steps, np.float32(0.01))
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and np.array_equal(g, w)
        assert np.array_equal(c.decay(xs.astype(np.float64), steps),
                              py.decay(xs.astype(np.float64), steps))
        ws = rng.random(n)
        assert np.array_equal(c.chained(xs.astype(np.float64), ws, steps),
                              py.chained(xs.astype(np.float64), ws, steps))
    if steps and n:
        with pytest.raises(ValueError) as want:             # ShapeError, as before
            py.particles(xs, vs[:-1], 2, np.float32(0.01))
        with pytest.raises(ValueError) as got:
            c.particles(xs, vs[:-1], 2, np.float32(0.01))
        assert type(got.value) is type(want.value)
    # zero steps: no length check, the arrays come back
    got = c.particles(xs, vs[: n // 2], 0, np.float32(0.01))
    assert np.array_equal(got[0], xs) and np.array_equal(got[1], vs[: n // 2])


@pytest.mark.parametrize("n", [0, 3])
def test_more_steps_than_max_run_the_loop_as_written(wrappers, n):
    from pyshark.codegen.opt.interchange import MAX_STEPS
    py, c = wrappers
    xs = np.linspace(0.0, 1.0, n)
    for steps in (MAX_STEPS, MAX_STEPS + 1):
        np.testing.assert_allclose(c.decay(xs, steps), py.decay(xs, steps))


@pytest.mark.parametrize("n", [1, 7, 70001])
def test_failing_element(wrappers, n):
    py, c = wrappers
    n = _size(c, n)
    xs, table = np.arange(n, dtype=np.int64), np.arange(10, dtype=np.int64) * 3
    assert np.array_equal(c.lookup(xs, table, 4, -1), py.lookup(xs, table, 4, -1))
    # bad = 0: element 0 fails at step 0; bad = 34: elements 1 and 4 get
    # there at steps 3 and 2 (4 -> 16 -> 34, 1 -> 4 -> 16 -> 34), so the
    # tiled map of the loop may raise element 1's error where the loop of
    # maps raised element 4's: the same class and text
    raised = 0
    for bad in (0, 34, n // 2):
        try:
            want = py.lookup(xs, table, 4, bad)
        except IndexError:
            raised += 1
            with pytest.raises(IndexError) as got:
                c.lookup(xs, table, 4, bad)
            assert str(got.value).startswith("index 15 out of range for length 10 (at ")
        else:
            assert np.array_equal(c.lookup(xs, table, 4, bad), want)
    assert raised >= 1


@pytest.mark.parametrize("n", [0, 1, 9])
def test_declined_loops_still_run(wrappers, n):
    py, c = wrappers
    xs = np.linspace(-1.0, 1.0, n)
    for steps in (0, 2):
        np.testing.assert_allclose(c.stencil(xs, steps), py.stencil(xs, steps))
        np.testing.assert_allclose(c.normalised(xs, steps), py.normalised(xs, steps))
        got, want = c.counted(xs, steps), py.counted(xs, steps)
        np.testing.assert_allclose(got[0], want[0])
        assert got[1] == want[1]
