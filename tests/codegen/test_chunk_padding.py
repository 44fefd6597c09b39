"""Per-chunk partials that threads update often are PAD_BYTES apart
(mc/common.py): reduce_by_index's private histograms (mc/seghist.py) and
the column reductions' partial rows (mc/colred.py) get a stride of m plus
the padding, in elements of their narrowest type, so no cache line holds
data of two chunks; results stay Python mode's at widths around a line
(15, 16, 17 bins) on 2, 3 and 7 threads."""
from __future__ import annotations

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K
from pyshark.codegen.mc.common import PAD_BYTES

from test_lower import lower_optimised as lower

SRC = """
import pyshark.prelude as ps


@ps.entry
def counts(m: int, idxs: ps.Array[int]) -> ps.Array[ps.i32]:
    return ps.reduce_by_index(ps.replicate(m, ps.i32(0)), lambda a, b: a + b, ps.i32(0),
                              idxs, ps.replicate(len(idxs), ps.i32(1)))


@ps.entry
def sums64(m: int, idxs: ps.Array[int], vals: ps.Array[float]) -> ps.Array[float]:
    return ps.reduce_by_index(ps.replicate(m, 0.0), lambda a, b: a + b, 0.0, idxs, vals)


@ps.entry
def col_sums(a: ps.Array[ps.Array[int]]) -> ps.Array[int]:
    return ps.map(lambda col: ps.reduce(lambda x, y: x + y, 0, col), ps.transpose(a))
"""


def _strides(m: K.Module, entry: str) -> list:
    f = next(f for f in m.functions if f.name.endswith(entry))
    return [s.value for s in K.walk_stms(f.body)
            if isinstance(s, K.Set) and s.var.name.startswith("stride")]


@pytest.mark.parametrize("entry, elem", [("counts", 4), ("sums64", 8), ("col_sums", 8)])
def test_the_partials_are_padded(entry, elem):
    (stride,) = _strides(lower(SRC), entry)
    assert isinstance(stride, K.Bin) and stride.op == "add"
    assert stride.y == K.KConst(PAD_BYTES // elem, stride.y.type)


@pytest.fixture(scope="module")
def mods(tmp_path_factory):
    return python_and("cpu", SRC, tmp_path_factory, "pad")


@pytest.mark.parametrize("threads", [2, 3, 7])
@pytest.mark.parametrize("m", [15, 16, 17])
def test_results_equal_python_mode(mods, threads, m):
    import pyshark
    py, cpu = mods
    rng = np.random.default_rng(m * 10 + threads)
    n = 70_001                                   # above par_min: the parallel algorithms
    idxs = rng.integers(-1, m + 1, n)
    vals = rng.integers(-50, 50, n).astype(np.float64)   # exact sums in any order
    a = rng.integers(-9, 9, (4099, m))
    pyshark.set_num_threads(threads)
    try:
        assert np.array_equal(cpu.counts(m, idxs), py.counts(m, idxs))
        assert np.array_equal(cpu.sums64(m, idxs, vals), py.sums64(m, idxs, vals))
        assert np.array_equal(cpu.col_sums(a), py.col_sums(a))
    finally:
        pyshark.set_num_threads(None)
