"""kir.AtomicUpdate on the CPU backend (emit_llvm.py): atomicrmw add for an
integer add, a compare-and-swap loop for anything else (kir.atomic_max
included), under real OpenMP threads, many of them on one slot."""
from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import K, P, build, v
from pyshark.core.types import F32, F64, I32, I64

n, i = v("n", I64), v("i", I64)


def _module(t, op: str):
    """out[idx[i]] = op(out[idx[i]], vals[i]) for i in a ParFor of n."""
    idx, vals, out = v("idx", P(I64)), v("vals", P(t)), v("out", P(t))
    old, x = v("old", t), v("x", t)
    if op == "add":
        upd = K.AtomicUpdate(out, K.Load(idx, i), old, K.Bin("add", old, x))
    elif op == "max":
        upd = K.atomic_max(out, K.Load(idx, i), old, x)
    else:       # min, by a general select: the compare-and-swap loop
        upd = K.AtomicUpdate(out, K.Load(idx, i), old, K.Sel(K.Bin("lt", x, old), x, old))
    body = K.Block((K.Set(x, K.Load(vals, i)), upd))
    f = K.Function("upd", (idx, vals, out, n), K.Block((K.ParFor(i, n, body),)))
    return K.Module([f])


@pytest.mark.parametrize("t,op", [(I32, "add"), (I64, "add"), (F64, "add"), (I32, "max"),
                                  (I64, "max"), (F32, "min"), (F64, "min")])
@pytest.mark.parametrize("count,bins", [(0, 3), (1, 1), (100_003, 1), (100_003, 7),
                                        (300_001, 5000)])
def test_atomic_updates_under_threads(tmp_path, t, op, count, bins):
    b = build(_module(t, op), tmp_path)
    if op == "max":
        # a compare-and-swap loop (the ParFor's block claiming is an atomicrmw add)
        assert "atomicrmw max" not in b.text and "cmpxchg" in b.text
    rng = np.random.default_rng(count + bins)
    idx = rng.integers(0, bins, count).astype(np.int64)
    vals = rng.integers(-1000, 1000, count).astype(t.dtype)   # integral: float sums exact
    start = {"add": 0, "max": -(1 << 30), "min": 1 << 20}[op]
    out = np.full(bins, start, t.dtype)
    for nthreads in (1, 4, 16):
        got = out.copy()
        rc, _ = b.call("upd", idx, vals, got, np.int64(count), nthreads=nthreads)
        assert rc == 0
        want = out.copy()
        {"add": np.add, "max": np.maximum, "min": np.minimum}[op].at(want, idx, vals)
        assert np.array_equal(got, want), (nthreads, got[:8], want[:8])


def test_last_position_wins_election(tmp_path):
    """The owner pass of the scatter (mc/scatter.py): the largest position
    naming each slot, whatever the threads' interleaving."""
    idx, owner = v("idx", P(I64)), v("owner", P(I32))
    old = v("old", I32)
    body = K.Block((K.atomic_max(owner, K.Load(idx, i), old, K.Cast(I32, i)),))
    b = build(K.Module([K.Function("own", (idx, owner, n),
                                   K.Block((K.ParFor(i, n, body),)))]), tmp_path)
    count = 1 << 18
    idx_ = (np.arange(count) * 7919 % 13).astype(np.int64)
    for _ in range(10):
        got = np.full(13, -1, np.int32)
        assert b.call("own", idx_, got, np.int64(count), nthreads=16)[0] == 0
        want = np.array([np.flatnonzero(idx_ == s).max() for s in range(13)], np.int32)
        assert np.array_equal(got, want)
