"""Unroll-and-jam with predication of a parallel loop around a while loop
(codegen/kir_passes/jam_while.py): done where the while body is safe to run on
thrown-away values, never where it loads or divides, and bit-exact with
Python mode at every width (whole blocks of U, remainders, empty)."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K
from pyshark.codegen.stages import build_kernels
from pyshark.codegen.kir_passes.jam_while import U
from pyshark.core.check import check_program
from pyshark.translate import translate_source

SRC = """
import pyshark.prelude as ps

def escape(cx: ps.f32, cy: ps.f32, max_iter: ps.i32) -> ps.i32:
    zr = ps.f32(0.0)
    zi = ps.f32(0.0)
    k = ps.i32(0)
    while k < max_iter and zr * zr + zi * zi <= 4.0:
        zr, zi = zr * zr - zi * zi + cx, 2.0 * zr * zi + cy
        k = k + 1
    return k

@ps.entry
def mandel(w: int, h: int, n: ps.i32) -> ps.Array[ps.Array[ps.i32]]:
    return ps.tabulate_2d(h, w, lambda i, j: escape(ps.f32(-2.0) + ps.f32(j) * ps.f32(3.0) / ps.f32(w),
                                                    ps.f32(-1.2) + ps.f32(i) * ps.f32(2.4) / ps.f32(h), n))

def collatz(x: int) -> int:
    steps = 0
    while x > 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps = steps + 1
    return steps

@ps.entry
def steps(w: int, h: int) -> ps.Array[ps.Array[int]]:
    # the body divides: not jammed (a thrown-away value could be anything)
    return ps.tabulate_2d(h, w, lambda i, j: collatz(i * w + j + 1))

def walk(xs: ps.Array[ps.f64], i: int) -> int:
    k = i
    while k < len(xs) and xs[k] > 0.0:
        k = k + 1
    return k

@ps.entry
def runs(xs: ps.Array[ps.f64], h: int) -> ps.Array[ps.Array[int]]:
    # the body loads: not jammed
    return ps.tabulate_2d(h, len(xs), lambda i, j: walk(xs, j))
"""


def _kernels():
    program = translate_source(textwrap.dedent(SRC), "<test>")
    check_program(program)

    class Opts:
        unsafe = False
    return build_kernels(program, Opts())


def _walk(b):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from _walk(sb)


def _jammed(m, name):
    f = next(f for f in m.functions if f.name == f"pyshark_{name}")
    return [s for s in _walk(f.body) if isinstance(s, K.While)
            and isinstance(s.cond, K.KVar) and s.cond.name.startswith("jany")]


def test_only_safe_while_loops_are_jammed():
    m = _kernels()
    assert _jammed(m, "mandel")
    assert not _jammed(m, "steps")
    assert not _jammed(m, "runs")


@pytest.fixture(scope="module", params=["kir", "cpu"])
def wrappers(request, tmp_path_factory):
    return python_and(request.param, SRC, tmp_path_factory, "jam")


@pytest.mark.parametrize("w", [0, 1, U - 1, U, U + 1, 2 * U + 3])
def test_jammed_loops_are_bit_exact(wrappers, w):
    py, c = wrappers
    for h in (0, 1, 3):
        got, want = c.mandel(w, h, np.int32(40)), py.mandel(w, h, np.int32(40))
        assert got.shape == want.shape and np.array_equal(got, want)
    assert np.array_equal(c.steps(w, 2), py.steps(w, 2))
    xs = np.array([1.0, 2.0, -1.0, 3.0] * (w // 4 + 1))[:w]
    assert np.array_equal(c.runs(xs, 2), py.runs(xs, 2))
