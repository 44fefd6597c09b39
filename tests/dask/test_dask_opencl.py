"""The opencl backend through pyshark.dask on the cluster (2 worker
processes with empty caches of their own): every plan kind (map, reduce,
scan, reduce_by_index) equals Python mode on the whole arrays, for a
chunking with empty and one-element chunks; every file of the opencl
artifact (module.so, its header, the .cl source, abi.json, host.py, ...)
reaches each worker by the plugin, and the workers load the native host
library (NativeModule) when the client built one.

Skipped, with the reason, where there is no OpenCL device; under CI=true
PoCL is installed and a missing device fails the test instead."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from conftest import need_dask

need_dask()

import dask.array as da  # noqa: E402

import pyshark.dask as psd  # noqa: E402
from pyshark.dask import worker  # noqa: E402
from pyshark.testing import assert_close  # noqa: E402

KERNELS = Path(__file__).parent / "kernels_opencl.py"


def _opencl_wrapper():
    from pyshark.wrapper import Wrapper, available_backends
    from pyshark.wrapper.registry import unavailable_reason
    if "opencl" not in available_backends():
        why = f"no OpenCL device: {unavailable_reason('opencl')}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI has PoCL; {why}")
        pytest.skip(why)
    w = Wrapper("opencl")
    w.add_source_file(KERNELS)
    return w.compile_and_load()


def test_every_plan_kind_with_opencl(cluster):
    from pyshark.wrapper import Wrapper
    w = _opencl_wrapper()
    py = Wrapper("python")
    py.add_source_file(KERNELS)
    py.compile_and_load()
    rng = np.random.default_rng(3)
    n = 3_001
    xs = rng.standard_normal(n).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    i32 = rng.integers(-10 ** 6, 10 ** 6, n).astype(np.int32)
    i64 = rng.integers(-1000, 1000, n)
    idx = rng.integers(-2, 12, n)
    chunks = ((0, 1, 1000, 0, 2000),)
    d = {k: da.from_array(a, chunks=chunks) for k, a in
         dict(xs=xs, ys=ys, i32=i32, i64=i64, idx=idx).items()}
    got = cluster.compute([
        psd.run(w.saxpy, np.float32(1.5), d["xs"], d["ys"]),
        *psd.run(w.min_max, d["i32"]),
        psd.run(w.prefix, d["i64"]),
        psd.run(w.histogram, 10, d["idx"], d["xs"]),
    ], sync=True)
    want = [py.saxpy(np.float32(1.5), xs, ys), *py.min_max(i32), py.prefix(i64),
            py.histogram(10, idx, xs)]
    for g, v in zip(got, want):
        assert_close(g, v)
    # what reached the workers: every file of each artifact, loaded natively
    libs = {lib.key: lib for lib in psd.partition(w.histogram).libraries}
    entry_files = {rel for rel, _ in libs[w.artifact_dir("histogram").name].files}
    assert entry_files == {str(f.relative_to(w.artifact_dir("histogram")))
                           for f in w.artifact_dir("histogram").rglob("*") if f.is_file()}
    native = "module.so" in entry_files
    for addr, s in cluster.run(worker.stats).items():
        assert set(libs) <= set(s["received"]), addr
        if native:
            assert "NativeModule" in s["module_types"], (addr, s["module_types"])
