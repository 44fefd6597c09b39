"""The GPU extension of the kernel IR (kir.py: work-group ParFors, local
memory, barriers, atomic updates) spelled by emit_cl.py and run on the test
device: a tree reduction in local memory and histograms by atomic updates
(integer add, and the compare-and-swap loop of a float add and of a max)."""
from __future__ import annotations

import pytest

from ocl_harness import F64, I0, I64, K, P, build, c64, np, v
from pyshark.codegen.kir_check import KirError, check_module
from pyshark.core.types import F32, I32, U32, U64

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


def _chained_sum_module():
    """out[b] = sum of xs[0 : (b+1)*G] by a chained scan across groups: each
    group takes a block index b from an atomic counter (st[ng]), sums its
    block, waits for block b-1's status word (AtomicLoad: flag in the high
    half, the i32 prefix's bits in the low half) and publishes its own by
    one atomic exchange. The publish/read protocol of gpu/segscan.py's
    look-back: flag and value travel in one word (no fence needed)."""
    xs, st, out, ng = v("xs", P(I32)), v("st", P(U64)), v("out", P(I32)), v("ng", I64)
    lb, lid, b = v("lb", K.Ptr(I64, "local")), v("lid", I64), v("b", I64)
    old, old2, w = v("old", U64), v("old2", U64), v("w", U64)
    acc, j, k, done = v("acc", I32), v("j", I64), v("k", I64), v("done", K.BOOL)
    lane0 = K.Bin("eq", lid, I0)
    idx = K.Bin("add", K.Bin("mul", b, c64(G)), k)
    flag = K.Cast(I32, K.Bin("shr", w, K.KConst(32, U64)))
    low = K.Cast(I32, K.Cast(U32, w), bits=True)
    look = K.Block((
        K.AtomicLoad(w, st, j),
        K.If(K.Bin("ne", flag, K.KConst(0, I32)), K.Block((
            K.Set(acc, K.Bin("add", low, acc)), K.Set(done, K.KConst(True, K.BOOL))))),
    ))
    packed = K.Bin("or", K.KConst(1 << 32, U64), K.Cast(U64, K.Cast(U32, acc, bits=True)))
    body = K.Block((
        K.LocalAlloc(lb, 1), K.Set(lid, K.LocalId()),
        K.If(lane0, K.Block((K.AtomicUpdate(st, ng, old, K.Bin("add", old, K.KConst(1, U64))),
                             K.Store(lb, I0, K.Cast(I64, old))))),
        K.Barrier(),
        K.Set(b, K.Load(lb, I0)),
        K.If(lane0, K.Block((
            K.Set(acc, K.KConst(0, I32)),
            K.For(k, I0, c64(G), K.Block((K.If(K.Bin("lt", idx, n), K.Block((
                K.Set(acc, K.Bin("add", acc, K.Load(xs, idx))),))),))),
            K.Set(j, K.Bin("sub", b, c64(1))),
            K.Set(done, K.Bin("eq", b, I0)),
            K.While(K.Un("not", done), look),
            K.AtomicUpdate(st, b, old2, packed),
            K.Store(out, b, acc)))),
    ))
    f_ = K.Function("chain", (xs, st, out, ng, n),
                    K.Block((K.ParFor(i, K.Bin("mul", ng, c64(G)), body, group_size=G),)))
    return K.Module([f_])


@pytest.mark.parametrize("count", [1, 64, 65, 20000, 300001])
def test_chained_scan_across_groups_by_packed_atomic_words(count):
    b = build(_chained_sum_module())
    text = b.host.cl_source
    assert "volatile __global ulong" in text and "atom_xchg" in text and "as_uint" in text
    assert "mem_fence" not in text
    xs = (np.arange(count, dtype=np.int64) % 11 - 5).astype(np.int32)
    ng = -(-count // G)
    for _ in range(3):
        st = np.zeros(ng + 1, np.uint64)
        out = np.full(ng, -1, np.int32)
        assert b.call("chain", xs, st, out, np.int64(ng), np.int64(count)) is None
        want = np.cumsum(np.add.reduceat(xs.astype(np.int64), np.arange(0, count, G)))
        assert np.array_equal(out, want)
        assert st[ng] == ng and ((st[:ng] >> np.uint64(32)) == 1).all()
        assert np.array_equal((st[:ng] & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32),
                              want.astype(np.int32))


def test_atomic_loads_only_in_work_group_kernels():
    xs, x = v("xs", P(I64)), v("x", I64)
    for stm in (K.AtomicLoad(x, xs, i),):
        m = K.Module([K.Function("f", (xs, n), K.Block((K.ParFor(i, n, K.Block((stm,))),)))])
        with pytest.raises(KirError, match="without a group size"):
            check_module(m)
    bad = K.Module([K.Function("f", (xs, n), K.Block((K.ParFor(i, n, K.Block((
        K.AtomicLoad(v("y", I32), xs, i),)), group_size=G),)))])
    with pytest.raises(KirError, match="atomic load"):
        check_module(bad)
    assert "atomic_load xs[i]" in K.pretty_module(K.Module([K.Function("g", (xs, n), K.Block((
        K.ParFor(i, n, K.Block((K.AtomicLoad(x, xs, i),)), group_size=G),)))]))


def test_unroll_hint_is_spelled_and_keeps_the_meaning():
    """For.unroll is a hint: `#pragma unroll N` in the kernel, same values."""
    xs, out = v("xs", P(I64)), v("out", P(I64))
    k, acc = v("k", I64), v("acc", I64)
    body = K.Block((
        K.Set(acc, I0),
        K.For(k, I0, c64(8), K.Block((
            K.Set(acc, K.Bin("add", acc, K.Bin("mul", K.Load(xs, i), k))),)), unroll=4),
        K.Store(out, i, acc),
    ))
    m = K.Module([K.Function("f", (xs, out, n), K.Block((K.ParFor(i, n, body),)))])
    b = build(m)
    assert "#pragma unroll 4" in b.host.cl_source
    a = np.arange(100, dtype=np.int64)
    res = np.zeros(100, np.int64)
    assert b.call("f", a, res, np.int64(100)) is None
    assert np.array_equal(res, a * 28)
