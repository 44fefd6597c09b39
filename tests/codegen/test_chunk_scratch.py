"""Per-chunk scratch (codegen/kir_passes/scratch.py): an array local to one
element of a parallel map is allocated once per strip of iterations; the
programs give Python mode's values and errors on the kir interpreter (its
memory checks, shuffled strips), cpu and opencl (which does not run the
pass), at sizes around the strip length, the thread count and par_min."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K
from pyshark.codegen.kir_passes.scratch import CHUNK, chunk_scratch
from pyshark.codegen.kir_interp import run_function
from pyshark.codegen.stages import build_kernels
from pyshark.core.check import check_program
from pyshark.core.types import F64, I64
from pyshark.translate import translate_source

SRC = """
import pyshark.prelude as ps

@ps.entry
def paths(n: int, m: int) -> ps.Array[ps.f32]:
    def one(i: int) -> ps.f32:
        buf = ps.map(lambda j: ps.f32(i * j), ps.iota(m))
        return ps.sum(ps.scan(lambda a, b: a + b, 0.0, buf))
    return ps.map(one, ps.iota(n))

@ps.entry
def failing(xs: ps.Array[ps.f64], bad: int, m: int) -> ps.Array[ps.f64]:
    # an IndexError at element `bad`, after its scratch is written
    def one(i: int) -> ps.f64:
        buf = ps.scan(lambda a, b: a + b, 0.0, ps.map(lambda j: xs[i] * ps.f64(j), ps.iota(m)))
        k = len(xs) + 3 if i == bad else i
        return ps.sum(buf) + xs[k]
    return ps.map(one, ps.iota(len(xs)))

@ps.entry
def nested(n: int, c: int, m: int) -> ps.Array[ps.Array[ps.f64]]:
    # the scratch of an inner map's element: hoisted to the outer parfor, then stripped
    def cell(i: int, j: int) -> ps.f64:
        buf = ps.scan(lambda a, b: a + b, 0.0, ps.map(lambda k: ps.f64(i + j * k), ps.iota(m)))
        return ps.maximum(buf) if m > 0 else 0.0
    return ps.map(lambda i: ps.map(lambda j: cell(i, j), ps.iota(c)), ps.iota(n))

@ps.entry
def smooth_rows(xss: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.f64]:
    # a ps.copy per row updated in place (a tridiagonal sweep's shape)
    def row(xs: ps.Array[ps.f64]) -> ps.f64:
        ys = ps.copy(xs)
        for j in range(1, len(ys)):
            ys[j] = ys[j] + 0.5 * ys[j - 1]
        return ys[len(ys) - 1]
    return ps.map(row, xss)

@ps.entry
def prefix_rows(n: int, m: int) -> ps.Array[ps.Array[ps.f32]]:
    # array-valued rows: each row's temporaries before its copy into the result
    return ps.map(lambda i: ps.scan(lambda a, b: a + b, 0.0,
                                    ps.map(lambda j: ps.f32((i * 7 + j) % 5), ps.iota(m))),
                  ps.iota(n))
"""


def _kernels():
    program = translate_source(textwrap.dedent(SRC), "<test>")
    check_program(program)
    return build_kernels(program, None, check=True)


def _walk(b):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from _walk(sb)


def _parfor_allocs(f: K.Function) -> tuple[int, int]:
    """(Allocs at a ParFor body's top level, Allocs inside a For of one)."""
    top = inner = 0
    for s in _walk(f.body):
        if isinstance(s, K.ParFor):
            top += sum(isinstance(t, K.Alloc) for t in s.body.stms)
            inner += sum(isinstance(t, K.Alloc) for u in s.body.stms
                         if isinstance(u, (K.For, K.While)) for t in _walk(u.body))
    return top, inner


def test_scratch_leaves_the_element_loop():
    m = _kernels()
    fns = {f.name: f for f in m.functions}
    for name in ("paths", "failing", "nested", "smooth_rows"):
        top, inner = _parfor_allocs(fns[f"pyshark_{name}"])
        assert top >= 1 and inner == 0, name


def test_escaping_or_varying_blocks_stay():
    i, n, c = K.KVar("i", I64), K.KVar("n", I64), K.KVar("c", I64)
    t, u = K.KVar("t", K.Ptr(F64)), K.KVar("u", K.Ptr(F64))
    out = K.KVar("out", K.Ptr(K.Ptr(F64)))
    zero = K.KConst(0, I64)
    varying = K.ParFor(i, n, K.Block((K.Alloc(u, i), K.Store(u, zero, K.KConst(1.0, F64)),
                                      K.Free(u))))
    escaping = K.ParFor(i, n, K.Block((K.Alloc(t, c), K.Set(u, K.PtrAdd(t, zero)),
                                       K.Store(out, i, u), K.Free(t))))
    f = K.Function("f", (n, c, out), K.Block((varying, escaping)))
    g = chunk_scratch(K.Module([f])).functions[0]
    assert g.body == f.body


def test_direct_kir_run_frees_every_strip():
    i, n, c = K.KVar("i", I64), K.KVar("n", I64), K.KVar("c", I64)
    t, out = K.KVar("t", K.Ptr(F64)), K.KVar("out", K.Ptr(F64))
    zero = K.KConst(0, I64)
    body = K.Block((K.Alloc(t, c), K.Store(t, zero, K.Cast(F64, i)),
                    K.Store(out, i, K.Load(t, zero)), K.Free(t)))
    f = K.Function("f", (n, c, out), K.Block((K.ParFor(i, n, body),)))
    m = chunk_scratch(K.Module([f]))
    K.check_module(m)
    for size in (0, 1, 5, CHUNK * 8 * 3 + 1):
        xs = np.zeros(max(size, 1))
        r = run_function(m, "f", [np.int64(size), np.int64(2), xs], nthreads=3)
        assert r.code == 0 and r.leaks() == [] and r.dangling() == []
        assert np.array_equal(xs[:size], np.arange(size, dtype=np.float64))


@pytest.fixture(scope="module", params=["kir", "cpu", "opencl"])
def wrappers(request, tmp_path_factory):
    return python_and(request.param, SRC, tmp_path_factory, "scratch")


SIZES = [0, 1, 3, 17, CHUNK + 1, 70001]


@pytest.mark.parametrize("n", SIZES)
def test_paths(wrappers, n):
    py, c = wrappers
    if n > 20000 and c.backend != "cpu":
        n = 4099                                # the interpreter is slow
    for m in (0, 1, 64):
        np.testing.assert_allclose(c.paths(n, m), py.paths(n, m), rtol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 9, 70001])
def test_failing_element(wrappers, n):
    py, c = wrappers
    if n > 20000 and c.backend != "cpu":
        n = 1031
    xs = np.linspace(0.0, 1.0, n)
    for bad in sorted({0, n // 2, n - 1}):
        with pytest.raises(IndexError):
            py.failing(xs, bad, 5)
        with pytest.raises(IndexError) as got:     # the message compiled code always gave
            c.failing(xs, bad, 5)
        assert str(got.value).startswith(f"index {n + 3} out of range for length {n} (at ")
    np.testing.assert_allclose(c.failing(xs, -1, 5), py.failing(xs, -1, 5))


@pytest.mark.parametrize("n,cols,m", [(0, 3, 2), (1, 1, 0), (5, 3, 7), (33, 65, 3)])
def test_nested(wrappers, n, cols, m):
    py, c = wrappers
    np.testing.assert_allclose(c.nested(n, cols, m), py.nested(n, cols, m))


@pytest.mark.parametrize("rows,cols", [(0, 4), (1, 1), (7, 5), (130, 3), (70001, 4)])
def test_rows(wrappers, rows, cols):
    py, c = wrappers
    if rows > 20000 and c.backend != "cpu":
        rows = 2053
    xss = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) % 7
    np.testing.assert_allclose(c.smooth_rows(xss), py.smooth_rows(xss))
    np.testing.assert_allclose(c.prefix_rows(rows, cols), py.prefix_rows(rows, cols))
    if rows:
        empty = np.zeros((rows, 0))
        with pytest.raises(IndexError):
            py.smooth_rows(empty)
        with pytest.raises(IndexError) as got:
            c.smooth_rows(empty)
        assert str(got.value).startswith("index -1 out of range for length 0 (at ")
