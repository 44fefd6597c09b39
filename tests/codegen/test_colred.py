"""Column reductions over a transpose (codegen/mc/colred.py): a map of
reductions over transpose(a) reads a's rows in place, in row chunks and
column blocks, and gives Python mode's results (bit-exact for integers,
within reassociation for floats) and Python mode's exceptions, at shapes
around the chunk and block edges; a transpose read any other way is still
copied."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K
from pyshark.codegen.mc.colred import COLUMN_BLOCK, MIN_CHUNK_ROWS, ROW_STREAMS, plan
from pyshark.codegen.pipeline import optimise
from pyshark.core import ir
from pyshark.testing import assert_close
from pyshark.translate import translate_source

from test_lower import lower_optimised as lower, stms

SRC = """
import pyshark.prelude as ps

F32s = ps.Array[ps.f32]
Matrix = ps.Array[ps.Array[ps.f32]]
Ints = ps.Array[ps.Array[ps.i64]]


def squash(x: ps.f32) -> ps.f32:
    return 1.0 / (1.0 + ps.exp(-x))


@ps.entry
def forward(l1: F32s, conn: Matrix, bias: F32s) -> F32s:
    # Rodinia's backprop layer as Futhark writes it
    conn_t = ps.transpose(conn)
    res_map = ps.map(lambda row: ps.map(lambda a, b: a * b, row, l1), conn_t)
    sums = ps.map(lambda row: ps.sum(row), res_map)
    return ps.map(lambda s, b: squash(s + b), sums, bias)

@ps.entry
def colsums(a: Ints) -> ps.Array[ps.i64]:
    return ps.map(lambda c: ps.sum(c), ps.transpose(a))

@ps.entry
def colstats(a: Ints, w: ps.Array[ps.i64]) -> tuple[ps.Array[ps.i64], ps.Array[ps.i64]]:
    # two results, an inner map with a second input, and both Size reads
    t = ps.transpose(a)
    n = len(t)
    ones = ps.map(lambda c: ps.reduce(lambda x, y: (x[0] + y[0], max(x[1], y[1])),
                                      (ps.i64(0), ps.i64(-99)),
                                      ps.map(lambda v, k: (v * k, v - k + n), c, w)), t)
    return ps.unzip(ones)

@ps.entry
def colmax_twice(a: Matrix) -> tuple[F32s, F32s]:
    t = ps.transpose(a)
    hi = ps.map(lambda c: ps.reduce(lambda x, y: max(x, y), ps.f32(-1e30), c), t)
    lo = ps.map(lambda c: ps.reduce(lambda x, y: min(x, y), ps.f32(1e30), c), t)
    return (hi, lo)

@ps.entry
def last_nonzero(a: Ints) -> ps.Array[ps.i64]:
    # associative, not commutative: any fold order but the rows' shows
    return ps.map(lambda c: ps.reduce(lambda x, y: y if y != 0 else x, ps.i64(0), c),
                  ps.transpose(a))

@ps.entry
def also_returned(a: Matrix) -> tuple[F32s, Matrix]:
    t = ps.transpose(a)
    return (ps.map(lambda c: ps.sum(c), t), t)
"""



def _allocs(m: K.Module, name: str) -> set:
    return {s.var.name.rsplit("_", 1)[0] for s in stms(m, name, K.Alloc)}


def test_column_maps_read_the_matrix_in_place():
    m = lower(SRC)
    for entry in ("forward", "colsums", "colstats", "colmax_twice", "last_nonzero"):
        allocs = _allocs(m, entry)
        assert "colpart" in allocs and "tr" not in allocs, (entry, allocs)
    # a transpose that is also returned is copied, and its maps are plain maps
    allocs = _allocs(m, "also_returned")
    assert "tr" in allocs and "colpart" not in allocs


def test_plan_takes_only_the_column_reduction_shape():
    program = optimise(translate_source(textwrap.dedent(SRC), "<test>"), check=True)
    fun = program.entry_fun("forward")
    tr = next(s for s in fun.body.stms if isinstance(s.exp, ir.Transpose))
    consumer = next(s for s in fun.body.stms if isinstance(s.exp, ir.Map)
                    and any(a.name == tr.pat[0].name for a in s.exp.arrs))
    p = plan(consumer.exp, tr.pat[0].name)
    assert p is not None and len(p.inners) == 1 and len(p.reds) == 1
    assert isinstance(p.reds[0].exp, ir.Reduce)
    # not a map over this name
    assert plan(consumer.exp, "no_such_array") is None
    # a function that returns the column itself is no column reduction
    lam = consumer.exp.lam
    returns_col = ir.Lambda(lam.params, ir.Body((), (lam.params[0],)), (lam.params[0].type,))
    assert plan(ir.Map(consumer.exp.width, returns_col, consumer.exp.arrs), tr.pat[0].name) is None


@pytest.fixture(scope="module", params=["kir", "cpu"])
def wrappers(request, tmp_path_factory):
    return python_and(request.param, SRC, tmp_path_factory, "colred")


# rows around the chunking (MIN_CHUNK_ROWS per group of ROW_STREAMS chunks
# folded in lockstep, chunks of unequal lengths, fewer rows than chunks) x
# columns around the column blocks (COLUMN_BLOCK)
SHAPES = [(0, 0), (0, 3), (3, 0), (1, 1), (2, 17), (ROW_STREAMS + 1, 2), (ROW_STREAMS * 3 - 1, 5),
          (MIN_CHUNK_ROWS * 2 + 1, 3), (MIN_CHUNK_ROWS * ROW_STREAMS + 3, 16),
          (MIN_CHUNK_ROWS * 9 + 5, 16), (300, COLUMN_BLOCK + 1), (1000, 17), (4099, 1),
          (5, 2 * COLUMN_BLOCK)]


@pytest.mark.parametrize("n,m", SHAPES)
def test_column_reductions_agree_with_python_mode(wrappers, n, m):
    py, w = wrappers
    rng = np.random.default_rng(n * 1000 + m)
    a = rng.standard_normal((n, m)).astype(np.float32)
    l1 = rng.random(n, dtype=np.float32)
    bias = rng.standard_normal(m).astype(np.float32)
    assert_close(w.forward(l1, a, bias), py.forward(l1, a, bias), rtol=1e-4, atol=1e-5)
    ai = rng.integers(-1000, 1000, (n, m))
    np.testing.assert_array_equal(w.colsums(ai), py.colsums(ai))
    wi = rng.integers(-5, 5, n)
    for g, x in zip(w.colstats(ai, wi), py.colstats(ai, wi)):
        np.testing.assert_array_equal(g, x)
    sparse = np.where(rng.random((n, m)) < 0.05, ai, 0)
    np.testing.assert_array_equal(w.last_nonzero(sparse), py.last_nonzero(sparse))
    if n and m:
        a[n // 2, m - 1] = 7.5          # an extreme in the middle of a chunk
    for g, x in zip(w.colmax_twice(a), py.colmax_twice(a)):
        np.testing.assert_array_equal(g, x)
    for g, x in zip(w.also_returned(a), py.also_returned(a)):
        assert_close(g, x, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n,m,k", [(5, 3, 4), (200, 16, 199), (5, 0, 4)])
def test_a_mismatched_vector_raises_as_python_mode(wrappers, n, m, k):
    """A vector of the wrong length is Python mode's ShapeError, and no
    error at all when the matrix has no column (the map never runs)."""
    py, w = wrappers
    a = np.ones((n, m), np.float32)
    l1 = np.ones(k, np.float32)
    bias = np.zeros(m, np.float32)
    if m == 0:
        for x in (py, w):
            assert x.forward(l1, a, bias).shape == (0,)
        return
    for x in (py, w):
        with pytest.raises(Exception) as info:
            x.forward(l1, a, bias)
        assert type(info.value).__name__ == "ShapeError"
