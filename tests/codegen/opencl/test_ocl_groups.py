"""The GPU extension of the kernel IR (kir.py: work-group ParFors, local
memory, barriers, atomic updates) spelled by emit_cl.py and run on the test
device: a tree reduction in local memory and histograms by atomic updates
(integer add, and the compare-and-swap loop of a float add and of a max)."""
from __future__ import annotations

import pytest

from ocl_harness import F64, I0, I64, K, P, build, c64, np, v
from pyshark.codegen.kir_check import KirError, check_module
from pyshark.core.types import F32, I32

G = 64
n, i = v("n", I64), v("i", I64)


def _group_sum_module():
    """sums[g] = sum of xs[g*G : (g+1)*G] (zeros past n): an order-keeping
    tree in local memory (the pairs (2s*j, 2s*j + s) at stride s)."""
    xs, sums = v("xs", P(I64)), v("sums", P(I64))
    loc, lid, s_, x = v("loc", K.Ptr(I64, "local")), v("lid", I64), v("s", I64), v("x", I64)
    stride = v("stride", I64)
    body = [K.LocalAlloc(loc, G), K.Set(lid, K.LocalId()),
            K.Set(x, K.Sel(K.Bin("lt", i, n), K.Load(xs, K.Sel(K.Bin("lt", i, n), i, I0)), I0)),
            K.Store(loc, lid, x), K.Barrier()]
    s = 1
    while s < G:
        body += [K.If(K.Bin("eq", K.Bin("rem", lid, c64(2 * s)), I0), K.Block((
            K.Store(loc, lid, K.Bin("add", K.Load(loc, lid), K.Load(loc, K.Bin("add", lid, c64(s))))),
        ))), K.Barrier()]
        s *= 2
    body.append(K.If(K.Bin("eq", lid, I0), K.Block((K.Store(sums, K.GroupId(), K.Load(loc, I0)),))))
    del s_, stride
    f = K.Function("gsum", (xs, sums, n), K.Block((K.ParFor(i, n, K.Block(tuple(body)), group_size=G),)))
    return K.Module([f])


@pytest.mark.parametrize("count", [1, 7, 64, 1000, 4099])
def test_work_group_tree_sum(count):
    b = build(_group_sum_module())
    xs = np.arange(count, dtype=np.int64) * 3 - 7
    groups = -(-count // G)
    sums = np.full(groups, -1, np.int64)
    assert b.call("gsum", xs, sums, np.int64(count)) is None
    want = np.add.reduceat(xs, np.arange(0, count, G))
    assert np.array_equal(sums, want)


def _hist_module(t, op: str):
    """hist[idx[i]] = op(hist[idx[i]], vals[i]) by atomic updates."""
    idx, vals, hist = v("idx", P(I64)), v("vals", P(t)), v("hist", P(t))
    old = v("old", t)
    x = v("x", t)
    if op == "add":
        new = K.Bin("add", old, x)
    else:       # max
        new = K.Sel(K.Bin("gt", x, old), x, old)
    body = K.Block((K.Set(x, K.Load(vals, i)),
                    K.AtomicUpdate(hist, K.Load(idx, i), old, new)))
    f = K.Function("hist", (idx, vals, hist, n), K.Block((K.ParFor(i, n, body),)))
    return K.Module([f])


@pytest.mark.parametrize("t,op", [(I32, "add"), (I64, "add"), (F32, "add"), (F64, "add"),
                                  (F32, "max"), (I32, "max")])
def test_atomic_histograms(t, op):
    m = _hist_module(t, op)
    b = build(m)
    rng = np.random.default_rng(1)
    N, bins = 20011, 7
    idx = rng.integers(0, bins, N).astype(np.int64)
    vals = (rng.integers(-50, 50, N)).astype(t.dtype)   # integral values: float sums exact
    hist = np.zeros(bins, t.dtype)
    assert b.call("hist", idx, vals, hist, np.int64(N)) is None
    want = np.zeros(bins, t.dtype)
    (np.add if op == "add" else np.maximum).at(want, idx, vals)
    if op == "max":
        want = np.maximum(want, 0)
    assert np.array_equal(hist, want)


def test_group_operations_are_checked():
    lid = v("lid", I64)
    outside = K.Module([K.Function("f", (n,), K.Block((
        K.ParFor(i, n, K.Block((K.Set(lid, K.LocalId()),))),)))])
    with pytest.raises(KirError, match="without a group size"):
        check_module(outside)
    m = K.Module()
    msg = m.message("x")
    m.functions.append(K.Function("g", (n,), K.Block((
        K.ParFor(i, n, K.Block((K.Fail("IndexError", msg),)), group_size=G),))))
    with pytest.raises(KirError, match="may not Fail"):
        check_module(m)
    barrier_on_host = K.Module([K.Function("h", (n,), K.Block((K.Barrier(),)))])
    with pytest.raises(KirError, match="outside a ParFor"):
        check_module(barrier_on_host)
