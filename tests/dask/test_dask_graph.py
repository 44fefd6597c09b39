"""graph.py and entry.py: the graphs of each plan, computed by Dask's
synchronous scheduler, equal the entry's own result on the whole arrays
(and Python mode's), for chunkings with empty and one-element chunks."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import need_dask

need_dask()

import dask  # noqa: E402
import dask.array as da  # noqa: E402

import pyshark.dask as psd  # noqa: E402
from pyshark.errors import ShapeError  # noqa: E402
from pyshark.testing import assert_close  # noqa: E402

N = 97
CHUNKINGS = [(N,), (0, 1, N - 1), (1, 0, 30, 0, 1, 65), (0,) * 3 + (N,) + (0,)]


def _compute(out):
    return dask.compute(*out, scheduler="sync") if isinstance(out, tuple) \
        else dask.compute(out, scheduler="sync")[0]


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "f32": rng.standard_normal(N).astype(np.float32),
        "f64": rng.standard_normal(N),
        "i32": rng.integers(-1000, 1000, N).astype(np.int32),
        "i64": rng.integers(0, 10 ** 6, N),
        "idx": rng.integers(-3, 12, N),
        "rows": rng.standard_normal((N, 5)),
    }


def _args(name, d):
    return {
        "saxpy": (np.float32(1.5), d["f32"], d["f32"][::-1].copy()),
        "split_sign": (d["i32"],), "scale_rows": (2.0, d["rows"]), "row_sums": (d["rows"],),
        "dot": (d["f64"], d["f64"]), "largest": (d["f32"],), "min_max": (d["i32"],),
        "compose": (d["i64"],), "scaled_total": (3, d["i64"]), "prefix": (d["i64"],),
        "running_max": (d["f64"],), "affine_scan": (d["i64"],),
        "histogram": (10, d["idx"], d["f32"]), "count_max": (8, d["idx"], d["i32"]),
    }[name]


NAMES = ["saxpy", "split_sign", "scale_rows", "row_sums", "dot", "largest", "min_max",
         "compose", "scaled_total", "prefix", "running_max", "affine_scan", "histogram",
         "count_max"]


def _dask_args(args, chunks):
    return [da.from_array(a, chunks=(chunks,) + a.shape[1:]) if isinstance(a, np.ndarray)
            else a for a in args]


@pytest.mark.parametrize("backend", ["cpu", "python"])
@pytest.mark.parametrize("name", NAMES)
def test_equals_the_whole_and_python_mode(wrappers, backend, name):
    d = _inputs()
    args = _args(name, d)
    want = wrappers["python"].invoke(name, *args)
    entry = psd.partition(getattr(wrappers[backend], name))
    for chunks in CHUNKINGS:
        got = _compute(entry(*_dask_args(args, chunks)))
        assert_close(got, want)
    if entry.plan.kind == "map":
        out = entry(*_dask_args(args, CHUNKINGS[2]))
        first = out[0] if isinstance(out, tuple) else out
        assert first.chunks[0] == CHUNKINGS[2]             # one task per chunk


def test_integers_are_exact_and_order_is_kept(wrappers):
    d = _inputs(1)
    got = _compute(psd.run(wrappers["cpu"].compose, da.from_array(d["i64"], chunks=7),
                           split_every=2))
    assert tuple(int(v) for v in got) == tuple(int(v) for v in wrappers["cpu"].compose(d["i64"]))


def test_empty_arrays(wrappers):
    e = np.zeros(0)
    assert _compute(psd.run(wrappers["cpu"].dot, da.from_array(e), da.from_array(e))) == 0.0
    assert _compute(psd.run(wrappers["cpu"].prefix, da.from_array(e.astype(np.int64)))).shape \
        == (0,)


def test_numpy_arguments_and_differently_chunked_arrays(wrappers):
    d = _inputs()
    x = da.from_array(d["f32"], chunks=10)
    got = _compute(psd.run(wrappers["cpu"].saxpy, 2.0, x, d["f32"]))
    assert_close(got, wrappers["cpu"].saxpy(2.0, d["f32"], d["f32"]))


def test_jit_function(tmp_path):
    mod = tmp_path / "jitted.py"
    mod.write_text("import pyshark\nimport pyshark.prelude as ps\n\n"
                   "@pyshark.jit(backend='cpu')\n"
                   "def total(xs: ps.Array[ps.i64]) -> ps.i64:\n"
                   "    return ps.sum(xs)\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("jitted_for_dask", mod)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    xs = np.arange(1000)
    assert _compute(psd.run(m.total, da.from_array(xs, chunks=64))) == xs.sum()
    assert psd.partition(m.total).plan.kind == "reduce"


def test_run_time_errors_keep_their_class(wrappers):
    ks = np.array([1, 2, 0, 4], dtype=np.int64)
    for backend in ("cpu", "python"):
        out = psd.run(wrappers[backend].inverse, da.from_array(ks, chunks=2))
        with pytest.raises(ZeroDivisionError):
            _compute(out)


def test_argument_errors(wrappers):
    w = wrappers["cpu"]
    with pytest.raises(ShapeError, match="differ in length"):
        psd.run(w.dot, da.ones(5, chunks=2), da.ones(6, chunks=2))
    with pytest.raises(ShapeError, match="rank"):
        psd.run(w.dot, da.ones((5, 2)), da.ones(5))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        psd.run(w.dot, da.ones(5))
    with pytest.raises(psd.NotPartitionable, match="map_overlap"):
        psd.partition(w.smooth)
    with pytest.raises(TypeError, match="compiled entry"):
        psd.partition(len)
    assert "not partitionable" in psd.explain(w.mean)
    assert psd.explain(w, "dot").startswith("dot: reduction")
