"""gpu/segred.segmented_reduce: a map whose function reduces its rows is a
work-group per row when rows have at least a group's length, else a
work-item per row (decided at run time by the row length); against Python
mode with row counts and lengths around the group size, a non-commutative
operator (kept in order), tuple accumulators, integer and float sums, NaN,
and the width checks' errors; and the kernel IR's shape."""
from __future__ import annotations

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K

SOURCE = '''
import pyshark.prelude as ps

M = ps.Array[ps.Array[ps.f32]]


@ps.entry
def row_sums(m: M) -> ps.Array[ps.f32]:
    return ps.map(lambda r: ps.sum(r), m)


@ps.entry
def row_dots(a: M, b: M) -> ps.Array[ps.f32]:
    return ps.map(lambda r, q: ps.reduce_comm(lambda x, y: x + y, ps.f32(0.0),
                                             ps.map(lambda u, v: u * v, r, q)), a, b)


@ps.entry
def layer(w: M, v: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    """backprop's shape: each row's products with one shared vector, summed."""
    return ps.map(lambda r: ps.sum(ps.map(lambda a, b: a * b, r, v)), w)


@ps.entry
def last_nonzero(m: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.i64]:
    """Associative, not commutative: the order of a row is kept."""
    return ps.map(lambda r: ps.reduce(lambda x, y: y if y != 0 else x, 0, r), m)


@ps.entry
def min_and_count(m: ps.Array[ps.Array[ps.i64]]) -> tuple[ps.Array[ps.i64], ps.Array[ps.i64]]:
    return ps.unzip(ps.map(lambda r: ps.reduce_comm(
        lambda a, b: (min(a[0], b[0]), a[1] + b[1]), (2 ** 62, 0),
        ps.map(lambda x: (x, 1), r)), m))
'''

SHAPES = [(0, 5), (3, 0), (1, 1), (4, 255), (3, 256), (2, 257), (5, 1000), (70, 3), (1, 4099)]


@pytest.fixture(scope="module")
def mods(tmp_path_factory):
    return python_and("opencl", SOURCE, tmp_path_factory, "segred_rows")


def _same(a, b, rtol=0.0):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, rtol)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(b, a, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("rows,cols", SHAPES)
def test_rows_agree_with_python_mode(mods, rows, cols):
    py, cl = mods
    r = np.random.default_rng(rows * 10007 + cols)
    m = r.random((rows, cols), dtype=np.float32)
    q = r.random((rows, cols), dtype=np.float32)
    _same(py.row_sums(m), cl.row_sums(m), 1e-4)
    _same(py.row_dots(m, q), cl.row_dots(m, q), 1e-4)
    v = r.random(cols, dtype=np.float32)
    _same(py.layer(m, v), cl.layer(m, v), 1e-4)
    k = r.integers(-3, 4, (rows, cols)).astype(np.int64) * r.integers(0, 2, (rows, cols))
    _same(py.last_nonzero(k), cl.last_nonzero(k))
    _same(py.min_and_count(k), cl.min_and_count(k))


def test_nan_stays_nan(mods):
    py, cl = mods
    m = np.ones((3, 600), np.float32)
    m[1, 417] = np.nan
    got = cl.row_sums(m)
    assert np.isnan(got[1]) and got[0] == got[2] == 600.0


def test_rows_of_different_lengths_raise_shape_error(mods):
    py, cl = mods
    a, b = np.ones((2, 300), np.float32), np.ones((2, 299), np.float32)
    for mod in (py, cl):
        with pytest.raises(Exception) as info:
            mod.row_dots(a, b)
        assert type(info.value).__name__ == "ShapeError"
    for mod in (py, cl):
        with pytest.raises(Exception) as info:
            mod.layer(a, np.ones(7, np.float32))
        assert type(info.value).__name__ == "ShapeError"
    # no row: the function never runs, so nothing to raise
    _same(py.row_dots(a[:0], b[:0]), cl.row_dots(a[:0], b[:0]))


def test_both_versions_are_in_the_kernel_ir():
    from pyshark.codegen.stages import pipeline_for, run_stages
    from pyshark.codegen.target import gpu_target
    from pyshark.translate import translate_source
    m = run_stages(translate_source(SOURCE, "segred_rows.py"),
                   pipeline_for(gpu_target(256, 32768, True)))
    f = next(f for f in m.functions if f.name.endswith("row_sums"))
    groups = [s for s in K.walk_stms(f.body) if isinstance(s, K.ParFor) and s.group_size]
    items = [s for s in K.walk_stms(f.body) if isinstance(s, K.ParFor) and not s.group_size]
    assert groups and items
