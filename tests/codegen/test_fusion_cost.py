"""Fusion that would duplicate loops is not done: a map whose function
loops (here an inner reduction) and whose results feed several consumers
is computed once, not once per consumer (mc/segmap.py)."""
from __future__ import annotations

import textwrap

import numpy as np

from pyshark.codegen import kir as K
from pyshark.codegen.kir_interp import Buffer
from pyshark.codegen.lower import Options, lower_program
from pyshark.codegen.pipeline import optimise
from pyshark.core.check import check_program
from pyshark.translate import translate_source

from test_lower import _run, stms

SRC = """
import pyshark.prelude as ps

def pull(xi: ps.f64, xs: ps.Array[ps.f64]) -> tuple[ps.f64, ps.f64]:
    zero = ps.f64(0.0)
    return ps.reduce(lambda a, b: (a[0] + b[0], a[1] + b[1]), (zero, zero),
                     ps.map(lambda x: (x - xi, (x - xi) * (x - xi)), xs))

@ps.entry
def f(xs: ps.Array[ps.f64], vs: ps.Array[ps.f64],
      ws: ps.Array[ps.f64]) -> tuple[ps.Array[ps.f64], ps.Array[ps.f64]]:
    acc = ps.map(lambda x: pull(x, xs), xs)
    a, b = ps.unzip(acc)
    u = ps.map(lambda v, p: v + p, vs, a)
    w = ps.map(lambda v, q: v * q, ws, b)
    return (u, w)

@ps.entry
def g(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    # no loop in the function: recomputing it in each consumer is cheap, so fused
    ys = ps.map(lambda x: (x + 1.0, x * 2.0), xs)
    a, b = ps.unzip(ys)
    u = ps.map(lambda p: p * 3.0, a)
    w = ps.map(lambda q: q - 1.0, b)
    return ps.map(lambda p, q: p + q, u, w)
"""


def lower() -> K.Module:
    program = translate_source(textwrap.dedent(SRC), "<test>")
    check_program(program)
    m = lower_program(optimise(program, check=True), Options(par_min=4))
    K.check_module(m)
    return m


def test_a_looping_map_with_two_consumers_is_computed_once():
    m = lower()
    # the parallel loop of the outer map, one sequential inner reduction
    inner = [f for f in stms(m, "f", K.For)]
    assert len(inner) == 1, inner
    xs = np.array([0.5, 1.0, 4.0, -2.0, 3.0])
    vs = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    a = np.array([np.sum(xs - x) for x in xs])
    b = np.array([np.sum((xs - x) ** 2) for x in xs])
    out = _run(m, "f", [Buffer(xs.copy()), np.int64(5), Buffer(vs.copy()), np.int64(5),
                        Buffer(vs[::-1].copy()), np.int64(5)], [("array", 1), ("array", 1)])
    np.testing.assert_allclose(out, vs + a)


def test_a_cheap_map_with_two_consumers_is_still_fused():
    m = lower()
    assert not stms(m, "g", K.Alloc) or all(
        a.var.name.startswith("map") for a in stms(m, "g", K.Alloc))
    assert len(stms(m, "g", K.Alloc)) == 1       # only the result
