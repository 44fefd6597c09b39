"""gpu/segmap.flat_nest_rows: a perfect nest whose innermost function
returns arrays of a shape known on the host (a sequential solve per row of
a matrix, per element of an outer map) is one work-item per (outer, row)
element writing its row; against Python mode at sizes with empty and
single dimensions; a row whose length the element decides is declined (the
multicore form), with the same values; and the kernel IR's shape."""
from __future__ import annotations

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K

SOURCE = '''
import pyshark.prelude as ps

M = ps.Array[ps.Array[ps.f32]]


def prefix_row(r: ps.Array[ps.f32], s: ps.f32) -> ps.Array[ps.f32]:
    """A sequential loop over a copy of the row (like a tridiagonal sweep)."""
    n = len(r)
    out = ps.copy(r)
    for i in range(1, n):
        out[i] = out[i - 1] * s + out[i]
    return out


@ps.entry
def sweeps(scales: ps.Array[ps.f32], m: M) -> ps.Array[M]:
    return ps.map(lambda s: ps.map(lambda r: prefix_row(r, s), m), scales)


@ps.entry
def transposes(a: ps.Array[ps.Array[ps.Array[ps.i64]]]) -> ps.Array[ps.Array[ps.Array[ps.i64]]]:
    return ps.map(lambda m: ps.transpose(m), a)


@ps.entry
def columns(scales: ps.Array[ps.f32], a: ps.Array[M]) -> ps.Array[M]:
    """A sweep down every column of every matrix: the transpose first."""
    return ps.map(lambda m, s: ps.map(lambda c: prefix_row(c, s), ps.transpose(m)), a, scales)


@ps.entry
def ragged(ks: ps.Array[ps.i64], m: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.Array[ps.Array[ps.i64]]]:
    return ps.map(lambda k: ps.map(lambda r: ps.map(lambda j: r[0] + j, ps.iota(k)), m), ks)
'''


@pytest.fixture(scope="module")
def mods(tmp_path_factory):
    return python_and("opencl", SOURCE, tmp_path_factory, "rows")


@pytest.mark.parametrize("n_s,n_r,n_c", [(0, 3, 4), (3, 0, 4), (2, 3, 0), (1, 1, 1), (5, 7, 13),
                                          (3, 64, 33)])
def test_rows_agree_with_python_mode(mods, n_s, n_r, n_c):
    py, cl = mods
    rng = np.random.default_rng(n_s * 100 + n_r * 10 + n_c)
    scales = rng.random(n_s, dtype=np.float32)
    m = rng.random((n_r, n_c), dtype=np.float32)
    want, got = py.sweeps(scales, m), cl.sweeps(scales, m)
    assert got.shape == want.shape and np.array_equal(got, want)


def test_a_row_length_the_element_decides_is_declined_and_right(mods):
    py, cl = mods
    m = np.arange(12, dtype=np.int64).reshape(4, 3)
    for ks in (np.array([2, 2, 2]), np.array([], np.int64), np.array([3])):
        want, got = py.ragged(ks, m), cl.ragged(ks, m)
        assert np.asarray(got).shape == np.asarray(want).shape
        assert np.array_equal(got, want)


def test_one_work_item_per_outer_and_row_element(tmp_path):
    """The kernel IR: one plain ParFor whose count is the product of the two
    widths, copying a row per element, and no ParFor over the outer width
    alone with the rows in a loop."""
    from pyshark.codegen.stages import build_kernels
    from pyshark.codegen.lower import Options
    from pyshark.codegen.target import gpu_target
    from pyshark.wrapper.backend import translate_and_check
    src = tmp_path / "rows.py"
    src.write_text(SOURCE)
    m = build_kernels(translate_and_check(src), Options(), target=gpu_target(256, 65536, True),
                      until="hoist-allocations")
    f = next(f for f in m.functions if f.name.endswith("sweeps"))
    pars = [s for s in K.walk_stms(f.body) if isinstance(s, K.ParFor)]
    copies = [p for p in pars if any(isinstance(s, K.CopyMem) for s in K.walk_stms(p.body))]
    assert len(copies) == 1
    body = list(K.walk_stms(copies[0].body))
    assert not any(isinstance(s, K.ParFor) for s in body)
    # the element's indices come from div/mod of the flat index
    assert any(isinstance(s, K.Set) and isinstance(s.value, K.Bin) and s.value.op == "div"
               for s in body)


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 0, 4), (2, 3, 0), (1, 1, 1), (3, 5, 7),
                                   (4, 33, 65)])
def test_transposes_of_rows_agree_with_python_mode(mods, shape):
    """A map of transposes is one kernel (transpose_rows), and a nest whose
    outer function transposes its matrix first reads the rows of that
    kernel's result; empty shapes as Python mode gives them."""
    py, cl = mods
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    want, got = py.transposes(a), cl.transposes(a)
    assert np.asarray(got).shape == np.asarray(want).shape and np.array_equal(got, want)
    f = (a % 7).astype(np.float32) / 8
    scales = np.linspace(0.5, 1.0, shape[0], dtype=np.float32)
    want, got = py.columns(scales, f), cl.columns(scales, f)
    assert np.asarray(got).shape == np.asarray(want).shape and np.array_equal(got, want)


def test_the_transpose_is_one_kernel_before_the_nest(tmp_path):
    from pyshark.codegen.stages import build_kernels
    from pyshark.codegen.lower import Options
    from pyshark.codegen.target import gpu_target
    from pyshark.wrapper.backend import translate_and_check
    src = tmp_path / "rows.py"
    src.write_text(SOURCE)
    m = build_kernels(translate_and_check(src), Options(), target=gpu_target(256, 65536, True),
                      until="hoist-allocations")
    f = next(f for f in m.functions if f.name.endswith("columns"))
    pars = [s for s in K.walk_stms(f.body) if isinstance(s, K.ParFor)]
    # the transposes first (no loop), then one element per (matrix, column)
    # with its sweep, copying its row (besides, the empty space's ParFor)
    assert not any(isinstance(s, (K.For, K.While)) for s in K.walk_stms(pars[0].body))
    rows = [p for p in pars if any(isinstance(s, K.CopyMem) for s in K.walk_stms(p.body))]
    assert len(rows) == 1 and pars.index(rows[0]) > 0
