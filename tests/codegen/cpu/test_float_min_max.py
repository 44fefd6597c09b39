"""kir's float `min` / `max` primitives (numpy.minimum / maximum: NaN from
either operand, of -0.0 and 0.0 either; kir.py) and `fmin` / `fmax`
(numpy.fmin / fmax: a NaN passed over) as the cpu backend spells them,
llvm.minimum / maximum and llvm.minnum / maxnum with nsz: ps.minimum /
ps.maximum and the builtins min / max (Python's rule) of a float array are
reductions LLVM vectorises; a max-histogram still writes a bin
only when it changes (mc/seghist._store_if_changed); and every backend
agrees with Python mode at sizes around the vector widths and the
parallel thresholds, with NaN first, inside and last, infinities and
signed zeros."""
from __future__ import annotations

import numpy as np
import pytest

from backend_pair import agree, host_kernels, loaded, source_file
from cpu_harness import functions_ir
from pyshark.codegen import kir as K
from pyshark.codegen.cpu import link
from pyshark.codegen.cpu.emit import emit_module
from pyshark.errors import ShapeError

SRC = '''
import pyshark.prelude as ps


@ps.entry
def min32(xs: ps.Array[ps.f32]) -> ps.f32:
    return ps.minimum(xs)


@ps.entry
def max64(xs: ps.Array[ps.f64]) -> ps.f64:
    return ps.maximum(xs)


@ps.entry
def py_min32(xs: ps.Array[ps.f32]) -> ps.f32:
    return min(xs)


@ps.entry
def py_max64(xs: ps.Array[ps.f64]) -> ps.f64:
    return max(xs)


@ps.entry
def row_extremes(img: ps.Array[ps.Array[ps.f32]]) -> tuple[ps.Array[ps.f32], ps.Array[ps.f32]]:
    return (ps.map(lambda row: ps.minimum(row), img), ps.map(lambda row: ps.maximum(row), img))


@ps.entry
def clamp_all(xs: ps.Array[ps.f64], lo: float, hi: float) -> ps.Array[ps.f64]:
    return ps.map(lambda x: ps.min(ps.max(x, lo), hi), xs)


@ps.entry
def max_hist(bins: ps.Array[ps.i32], vals: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    lowest = ps.lowest(ps.f32)
    return ps.reduce_by_index(ps.replicate(8, lowest), lambda a, b: ps.max(a, b), lowest,
                              bins, vals)
'''


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return source_file(tmp_path_factory, "fminmax_mod", SRC)


@pytest.fixture(scope="module")
def kernels(src):
    return host_kernels(src)


def test_minimum_and_maximum_reduce_in_vectors(kernels):
    text = link.optimised_ir(emit_module(kernels))
    assert "@llvm.minimum.v" in functions_ir(text, "pyshark_min32")
    assert "@llvm.maximum.v" in functions_ir(text, "pyshark_max64")
    # the builtins, Python's rule: NaN passed over (fmin / fmax, llvm.minnum)
    assert "@llvm.minnum.v" in functions_ir(text, "pyshark_py_min32")
    assert "@llvm.maxnum.v" in functions_ir(text, "pyshark_py_max64")
    rows = functions_ir(text, "pyshark_row_extremes")
    assert "@llvm.minimum.v" in rows and "@llvm.maximum.v" in rows


def test_the_max_histogram_writes_a_bin_only_when_it_changes(kernels):
    (f,) = [f for f in kernels.functions if f.name == "pyshark_max_hist"]
    stms = list(K.walk_stms(f.body))
    maxes = {s.var.name for s in stms if isinstance(s, K.Set) and isinstance(s.value, K.Bin)
             and s.value.op == "max"}
    assert maxes                      # the operator, in the private and the sequential loop
    stored = {s.value.name for s in stms if isinstance(s, K.Store)
              and isinstance(s.value, K.KVar)}
    assert not maxes & stored         # never stored as computed
    guarded = [s for s in stms if isinstance(s, K.If) and len(s.then.stms) == 1
               and isinstance(s.then.stms[0], K.Store) and not s.orelse.stms]
    assert len(guarded) >= 2          # `if not (old >= v or isnan(old)): h[b] = v`


@pytest.fixture(scope="module")
def wrappers(src):
    return loaded(src)


def _agree(wrappers, entry, *args):
    agree(wrappers, entry, *args, errors=(ShapeError, ValueError))


def _arrays(n: int, dtype, seed: int):
    rng = np.random.default_rng(seed)
    base = (rng.standard_normal(n) * 100).astype(dtype)
    yield base
    if n == 0:
        return
    for at in sorted({0, n // 2, n - 1}):
        x = base.copy()
        x[at] = np.nan
        yield x
    x = base.copy()
    x[rng.integers(0, n, max(1, n // 7))] = np.inf
    x[rng.integers(0, n, max(1, n // 9))] = -np.inf
    yield x
    yield np.where(base > 0, dtype(0.0), dtype(-0.0))
    yield np.full(n, np.nan, dtype)
    if n > 1:
        x = np.full(n, np.nan, dtype)
        x[-1] = 2.5
        yield x


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 31, 33, 64, 100, 1000, 100_003])
def test_array_extremes_equal_python_mode(wrappers, n):
    for x in _arrays(n, np.float32, n):
        _agree(wrappers, "min32", x)
        _agree(wrappers, "py_min32", x)
    for x in _arrays(n, np.float64, n + 1):
        _agree(wrappers, "max64", x)
        _agree(wrappers, "py_max64", x)


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 17), (5, 32), (4, 33), (300, 130)])
def test_row_extremes_equal_python_mode(wrappers, rows, cols):
    rng = np.random.default_rng(rows + cols)
    img = rng.standard_normal((rows, cols)).astype(np.float32)
    img[rows // 2, cols // 2] = np.nan
    img[0, -1] = -np.inf
    _agree(wrappers, "row_extremes", img)


def test_clamps_equal_python_mode(wrappers):
    x = np.array([-2.0, -0.0, 0.0, 0.5, 3.0, np.nan, np.inf, -np.inf] * 5 + [1.5])
    _agree(wrappers, "clamp_all", x, -1.0, 1.0)
    _agree(wrappers, "clamp_all", x, np.nan, 1.0)
    _agree(wrappers, "clamp_all", x, 0.0, -0.0)


@pytest.mark.parametrize("n", [0, 1, 40, 70_001])
def test_max_histogram_equals_python_mode(wrappers, n):
    rng = np.random.default_rng(n)
    bins = rng.integers(-2, 10, n).astype(np.int32)
    vals = rng.standard_normal(n).astype(np.float32)
    if n:
        vals[n // 3] = np.nan
        vals[-1] = np.inf
    _agree(wrappers, "max_hist", bins, vals)
