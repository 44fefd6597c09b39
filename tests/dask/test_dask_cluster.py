"""pyshark.dask on a real distributed LocalCluster (2 worker processes,
one thread each, their own empty PyShark cache): every plan computes what
the entry gives on the whole arrays, each worker loads each module once
(the modules reach it by plugin, not per task), and a worker killed
mid-run does not lose the computation (Dask retries its tasks; the
restarted worker gets the modules again from the plugin)."""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from conftest import need_dask

need_dask()

import dask.array as da  # noqa: E402

import pyshark.dask as psd  # noqa: E402
from pyshark.dask import worker  # noqa: E402
from pyshark.testing import assert_close  # noqa: E402


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_every_plan_on_the_cluster(cluster, wrappers, backend):
    w = wrappers[backend]
    rng = np.random.default_rng(7)
    n = 10_001
    xs = rng.standard_normal(n)
    ks = rng.integers(0, 1000, n)
    idx = rng.integers(-1, 20, n)
    chunks = ((0, 1, 4000, 0, 6000),)
    dx, dk, di = (da.from_array(a, chunks=chunks) for a in (xs, ks, idx))
    f32 = xs.astype(np.float32)
    got = cluster.compute([
        psd.run(w.saxpy, 2.0, dx.astype(np.float32), dx.astype(np.float32)),
        psd.run(w.dot, dx, dx),
        psd.run(w.prefix, dk),
        psd.run(w.histogram, 20, di, dx.astype(np.float32)),
    ], sync=True)
    want = [w.saxpy(2.0, f32, f32), w.dot(xs, xs), w.prefix(ks), w.histogram(20, idx, f32)]
    for g, v in zip(got, want):
        assert_close(g, v)


def test_each_worker_loads_each_module_once(cluster, wrappers):
    w = wrappers["cpu"]
    entry = psd.partition(w.scaled_total)
    ks = np.arange(20_000)
    for _ in range(2):
        total = entry(3, da.from_array(ks, chunks=500)).compute()
        assert total == 3 * ks.sum()
    keys = {lib.key for lib in entry.libraries}
    assert len(keys) == 2                    # the entry's module and its combine step
    stats = cluster.run(worker.stats)
    assert len(stats) == 2
    for addr, s in stats.items():
        assert s.get("installs", 0) >= 1, addr      # written from the plugin's bytes
        mine = keys & set(s["loaded"])
        assert mine, f"worker {addr} ran none of the tasks"
        assert s["loads"] <= len(set(s["loaded"]))   # never the same module twice
    calls = sum(s["calls"] for s in stats.values())
    loads = sum(s["loads"] for s in stats.values())
    assert calls >= 80 and calls > 10 * loads        # 40 chunks + combines, twice


def test_a_killed_worker_loses_nothing(cluster, wrappers):
    w = wrappers["cpu"]
    rounds = 400
    xs = np.arange(400_000, dtype=np.int64)
    want = w.slow_hash(rounds, xs)
    t0 = time.perf_counter()
    w.slow_hash(rounds, xs[:40_000])
    per_chunk = time.perf_counter() - t0
    future = cluster.compute(psd.run(w.slow_hash, rounds, da.from_array(xs, chunks=40_000)))
    pids = cluster.run(os.getpid)
    victim = sorted(pids)[0]
    # wait until the computation runs on the cluster, then kill a worker process
    deadline = time.time() + 60
    while not any(cluster.processing().values()) and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(min(per_chunk, 0.5))
    assert not future.done(), "the computation ended before a worker could be killed"
    os.kill(pids[victim], signal.SIGKILL)
    assert future.result(timeout=300) == want
    cluster.wait_for_workers(2, timeout=60)
    # the restarted worker got the modules from the plugin (its cache was empty)
    again = psd.run(w.slow_hash, rounds, da.from_array(xs[:80_000], chunks=20_000))
    assert cluster.compute(again, sync=True) == w.slow_hash(rounds, xs[:80_000])
