"""pyshark.dask on a real distributed cluster (2 worker processes, one
thread each, each its own PyShark cache, empty at start): every plan
computes what the entry gives on the whole arrays, each worker loads each
module once (the modules reach it by plugin, not per task), and a worker
killed mid-run does not lose the computation (Dask computes its lost
results again; the restarted worker gets the modules again from the
plugin). No test here waits on a sleep: they wait on scheduler state and
a distributed Event."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
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
    """Counted on each worker around this test's own computations (the
    counts of earlier tests, on whichever worker ran them, do not enter)."""
    w = wrappers["cpu"]
    entry = psd.partition(w.scaled_total)
    keys = {lib.key for lib in entry.libraries}
    assert len(keys) == 2                    # the entry's module and its combine step
    ks = np.arange(20_000)
    before = cluster.run(worker.stats)
    for _ in range(2):
        total = entry(3, da.from_array(ks, chunks=500)).compute()
        assert total == 3 * ks.sum()
    after = cluster.run(worker.stats)
    assert len(after) == 2 and set(after) == set(before)
    calls = 0
    for addr, s in after.items():
        b = before[addr]
        assert keys <= set(s["received"]), addr      # the plugin delivered both modules
        fresh = keys - set(b["received"])        # (a combine step may be an earlier one's)
        assert fresh, addr
        assert s.get("installs", 0) - b.get("installs", 0) == len(fresh), addr  # own cache
        mine = (keys & set(s["loaded"])) - set(b["loaded"])
        # each module loaded once at most, on the first task that needs it
        assert s.get("loads", 0) - b.get("loads", 0) == len(mine), addr
        calls += s.get("calls", 0) - b.get("calls", 0)
    assert calls >= 2 * (40 + 1)             # 40 chunks and >= 1 combine step, twice


def _gate(block, event_name):
    """A chunk that arrives once the test sets the distributed Event."""
    from distributed import Event
    Event(event_name).wait()
    return block


def _held_results(dask_scheduler, prefix):
    """worker address -> the keys of our graph it holds results of."""
    out: dict = {}
    for ts in dask_scheduler.tasks.values():
        name = ts.key[0] if isinstance(ts.key, tuple) else ts.key
        if ts.state == "memory" and str(name).startswith(prefix):
            for ws in ts.who_has:
                out.setdefault(ws.address, []).append(str(ts.key))
    return out


_ISOLATED = "PYSHARK_DASK_KILL_TEST_ISOLATED"


def test_a_killed_worker_loses_nothing(request):
    """Deterministic, not timed: the last chunk is held back by a
    distributed Event, so the reduction cannot finish; once a worker holds
    finished partial results of the graph (the scheduler says so), that
    worker's process is killed, then the gate opens. The lost partials are
    computed again (on the restarted worker, which gets the modules from
    the plugin again, or on the other) and the total is still exact.

    It runs in a fresh interpreter with a cluster of its own: at the end of
    the whole suite's long-lived process (2026-11-26, after tests/codegen)
    the nanny's restart of the killed worker left the shared cluster with
    no worker, and every later cluster test waited on it; on its own, or
    after tests/benchmarks or the interrupt tests, it passes in ~20 s. The
    cause in the long process is not found yet (docs/dask.md)."""
    if os.environ.get(_ISOLATED) != "1":
        here = f"{__file__}::test_a_killed_worker_loses_nothing"
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              here], env={**os.environ, _ISOLATED: "1"},
                             capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert "1 passed" in run.stdout
        return
    cluster = request.getfixturevalue("cluster")
    wrappers = request.getfixturevalue("wrappers")
    import uuid

    import dask
    from distributed import Event
    w = wrappers["cpu"]
    rounds, chunk = 20, 5_000
    xs = np.arange(10 * chunk, dtype=np.int64)
    want = w.slow_hash(rounds, xs)
    name = f"pyshark-test-gate-{uuid.uuid4().hex}"
    gate = Event(name, client=cluster)
    last = da.from_delayed(dask.delayed(_gate)(xs[-chunk:], name), (chunk,), xs.dtype)
    dx = da.concatenate([da.from_array(xs[:-chunk], chunks=chunk), last])
    future = cluster.compute(psd.run(w.slow_hash, rounds, dx))
    pids = cluster.run(os.getpid)
    deadline = time.time() + 120
    held: dict = {}
    while not held and time.time() < deadline:
        held = cluster.run_on_scheduler(_held_results, prefix="pyshark-slow_hash")
        time.sleep(0.05)
    assert held, "no worker finished a chunk within 120 s"
    victim = sorted(held)[0]
    assert not future.done()                 # the gate holds the last chunk back
    os.kill(pids[victim], signal.SIGKILL)
    gate.set()
    assert future.result(timeout=300) == want
    cluster.wait_for_workers(2, timeout=120)
    now = cluster.run(os.getpid)
    new = [addr for addr, pid in now.items() if pid not in pids.values()]
    assert len(new) == 1 and pids[victim] not in now.values()   # the nanny's new process
    # the restarted worker got the modules delivered so far from the plugin
    assert cluster.run(worker.stats, workers=new)[new[0]].get("registered", 0) >= 2
    again = psd.run(w.slow_hash, rounds, da.from_array(xs[:4 * chunk], chunks=chunk))
    assert cluster.compute(again, sync=True) == w.slow_hash(rounds, xs[:4 * chunk])
