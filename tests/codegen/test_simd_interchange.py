"""The simd-interchange pass (codegen/kir_passes/simd_interchange.py): a map
of sequential recurrences (Thomas solves) is strip-mined and interchanged so
the loop over systems is innermost; results and errors stay Python mode's,
and the interchanged loop is vectorised (`<8 x float>` divisions)."""
from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K
from pyshark.codegen.cpu import emit_module, optimised_ir
from pyshark.codegen.kir_passes.simd_interchange import WIDTH
from pyshark.codegen.stages import build_kernels, kir_stages, stage_names
from pyshark.core.check import check_program
from pyshark.translate import translate_source

SRC = """
import pyshark.prelude as ps
F32s = ps.Array[ps.f32]
I64s = ps.Array[ps.i64]

def tridag(a: F32s, b: F32s, c: F32s, y: F32s) -> F32s:
    n = len(y)
    bb = ps.copy(b)
    yy = ps.copy(y)
    for i in range(1, n):
        beta = a[i] / bb[i - 1]
        bb[i] = bb[i] - beta * c[i - 1]
        yy[i] = yy[i] - beta * yy[i - 1]
    yy[n - 1] = yy[n - 1] / bb[n - 1]
    for i in range(n - 2, -1, -1):
        yy[i] = (yy[i] - c[i] * yy[i + 1]) / bb[i]
    return yy

@ps.entry
def solve(a: ps.Array[F32s], b: ps.Array[F32s], c: ps.Array[F32s],
          y: ps.Array[F32s]) -> ps.Array[F32s]:
    return ps.map(tridag, a, b, c, y)

def tridag_ix(a: F32s, b: F32s, c: F32s, y: F32s, ix: I64s) -> F32s:
    n = len(y)
    bb = ps.copy(b)
    yy = ps.copy(y)
    s = ps.f32(0.0)
    for i in range(1, n):
        beta = a[i] / bb[i - 1]
        bb[i] = bb[i] - beta * c[i - 1]
        yy[i] = yy[i] - beta * yy[i - 1]
        s = s + beta
    for i in range(n - 2, -1, -1):
        yy[i] = (yy[i] - c[i] * yy[i + 1]) / bb[i] + a[ix[i]] * s
    return yy

@ps.entry
def solve_ix(a: ps.Array[F32s], b: ps.Array[F32s], c: ps.Array[F32s], y: ps.Array[F32s],
             ix: ps.Array[I64s]) -> ps.Array[F32s]:
    # an index read from the data: one system may be out of range
    return ps.map(tridag_ix, a, b, c, y, ix)

@ps.entry
def solve_nested(a: ps.Array[ps.Array[F32s]], b: ps.Array[ps.Array[F32s]],
                 c: ps.Array[ps.Array[F32s]], y: ps.Array[ps.Array[F32s]]
                 ) -> ps.Array[ps.Array[F32s]]:
    # the inner map is a For inside the outer map's ParFor (For.independent)
    return ps.map(lambda a1, b1, c1, y1: ps.map(tridag, a1, b1, c1, y1), a, b, c, y)

def settle(y: F32s) -> F32s:
    yy = ps.copy(y)
    for i in range(1, len(y)):
        k = 0
        while k < 3:
            yy[i] = yy[i] * ps.f32(0.5) + yy[i - 1]
            k = k + 1
    return yy

@ps.entry
def settle_all(y: ps.Array[F32s]) -> ps.Array[F32s]:
    # a while loop in the body: declined
    return ps.map(settle, y)

@ps.entry
def row_sums(y: ps.Array[F32s]) -> ps.Array[ps.f32]:
    # a reduction, no recurrence through a buffer: declined
    return ps.map(lambda r: ps.reduce(lambda p, q: p + q, ps.f32(0.0), r), y)

@ps.entry
def products(a: ps.Array[ps.Array[F32s]], b: ps.Array[ps.Array[F32s]]
             ) -> ps.Array[ps.Array[F32s]]:
    # a sum per entry down a column of bb (4096 small matmuls, as users
    # write them): a column walk, interchanged
    return ps.array([[[sum([aa[i][k] * bb[k][j] for k in range(len(bb))])
                       for j in range(len(bb[0]))] for i in range(len(aa))]
                     for aa, bb in zip(a, b)])

@ps.entry
def products_t(a: ps.Array[ps.Array[F32s]], bt: ps.Array[ps.Array[F32s]]
               ) -> ps.Array[ps.Array[F32s]]:
    # the same against rows of bt: contiguous along k already, declined
    return ps.array([[[sum([aa[i][k] * bb[j][k] for k in range(len(aa[0]))])
                       for j in range(len(bb))] for i in range(len(aa))]
                     for aa, bb in zip(a, bt)])
"""

COUNTS = [0, 1, 7, 8, 9, 33, 1000]
LENGTHS = [1, 2, 3, 256]


def _kernels() -> K.Module:
    program = translate_source(textwrap.dedent(SRC), "<test>")
    check_program(program)
    return build_kernels(program, None, check=True)


@pytest.fixture(scope="module")
def kernels():
    return _kernels()


def _strips(m: K.Module, entry: str) -> int:
    f = next(f for f in m.functions if f.name == f"pyshark_{entry}")
    return sum(1 for s in K.walk_stms(f.body)
               if isinstance(s, (K.ParFor, K.For)) and s.var.name.startswith("g_si"))


def test_stage_is_in_the_cpu_pipeline():
    # first but for rows-in-place (kir_passes/in_place.py), which only drops copies
    assert stage_names(kir_stages())[:2] == ["rows-in-place", "simd-interchange"]


def test_which_loops_are_interchanged(kernels):
    assert _strips(kernels, "solve") >= 1          # each version of the loop
    assert _strips(kernels, "solve_ix") >= 1
    assert _strips(kernels, "solve_nested") >= 1
    assert _strips(kernels, "settle_all") == 0
    assert _strips(kernels, "row_sums") == 0
    assert _strips(kernels, "products") >= 1
    assert _strips(kernels, "products_t") == 0


def test_interchanged_loop_is_vectorised(kernels):
    m = K.Module([f for f in kernels.functions if f.name == "pyshark_solve"],
                 list(kernels.messages))
    ir = optimised_ir(emit_module(m))
    assert re.search(rf"fdiv <{WIDTH} x float>", ir)


@pytest.fixture(scope="module", params=["kir", "cpu"])
def wrappers(request, tmp_path_factory):
    return python_and(request.param, SRC, tmp_path_factory, "simd") + [request.param]


def _systems(m: int, n: int, seed: int, nan: bool = True):
    rng = np.random.default_rng(seed)
    a, c, y = (rng.standard_normal((m, n)).astype(np.float32) for _ in range(3))
    b = (rng.standard_normal((m, n)) + 4.0).astype(np.float32)
    if nan and m > 3:
        y[3, n // 2] = np.nan
        b[m - 1, 0] = np.nan
    return a, b, c, y


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("m", COUNTS)
def test_solves_agree_with_python_mode(wrappers, m):
    py, c, backend = wrappers
    for n in LENGTHS:
        if backend == "kir" and m * n > 10000:
            continue                    # the interpreter is slow; cpu runs it
        args = _systems(m, n, m * 1000 + n)
        _same(c.solve(*args), py.solve(*args))
        ix = np.zeros((m, n), dtype=np.int64)
        _same(c.solve_ix(*args, ix), py.solve_ix(*args, ix))


@pytest.mark.parametrize("m", [1, 7, 9, 33])
def test_nested_map_agrees_with_python_mode(wrappers, m):
    py, c, _ = wrappers
    for n in (1, 3, 40):
        args = [x.reshape(1, m, n).repeat(2, 0) for x in _systems(m, n, m + n)]
        _same(c.solve_nested(*args), py.solve_nested(*args))


@pytest.mark.parametrize("m,bad", [(1, 0), (9, 4), (33, 32), (1000, 517)])
def test_out_of_range_index_raises_python_modes_error(wrappers, m, bad):
    py, c, _ = wrappers
    n = 5
    args = _systems(m, n, 7)
    ix = np.zeros((m, n), dtype=np.int64)
    ix[bad, 2] = n + 3
    with pytest.raises(IndexError, match=f"index {n + 3} is out of bounds"):
        py.solve_ix(*args, ix)          # numpy's wording in Python mode
    # the failing system's own error, as the compiler words it without the
    # pass: the index, the row length and the place of `a[ix[i]]`
    with pytest.raises(IndexError, match=rf"^index {n + 3} out of range for length {n} "
                                         rf"\(at .*simd\.py:35:54\)$"):
        c.solve_ix(*args, ix)


def test_declined_loops_agree_with_python_mode(wrappers):
    py, c, _ = wrappers
    y = _systems(9, 5, 3)[3]
    _same(c.settle_all(y), py.settle_all(y))
    np.testing.assert_allclose(c.row_sums(y), py.row_sums(y), rtol=1e-5)


@pytest.mark.parametrize("m", [0, 1, 3])
@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 17])
def test_column_walks_agree_with_python_mode(wrappers, m, n):
    py, c, _ = wrappers
    rng = np.random.default_rng(m * 100 + n)
    a = rng.standard_normal((m, n, n)).astype(np.float32)
    b = rng.standard_normal((m, n, n + 1)).astype(np.float32)
    if m and n > 2:
        b[0, 1, 2] = np.nan
    for name, bb in (("products", b), ("products_t", b.transpose(0, 2, 1).copy())):
        got, want = getattr(c, name)(a, bb), getattr(py, name)(a, bb)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_column_walk_out_of_range_raises_like_python_mode(wrappers):
    py, c, _ = wrappers
    a = np.ones((9, 3, 2), np.float32)          # aa[i][2] is past a row of 2
    b = np.ones((9, 3, 11), np.float32)
    with pytest.raises(IndexError):
        py.products(a, b)
    with pytest.raises(IndexError, match=r"^index 2 out of range for length 2"):
        c.products(a, b)
