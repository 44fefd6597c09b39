"""ParFor as OpenCL kernels: iteration counts, captures (scalars, bools,
offset pointers), control flow inside a kernel, Fail (first failure wins),
and the host statements around launches (Alloc, Load/Store of device
memory, CopyMem, a ParFor the host runs because its body allocates)."""
from __future__ import annotations

import pytest

from ocl_harness import BOOL, F64, I0, I1, I64, K, P, build, c64, np, v
from pyshark.core.types import I32

n, i, j = v("n", I64), v("i", I64), v("j", I64)


def _iota_module():
    """out[i] = i * 3 + k (k captured), flag[i] = b (a bool capture), and
    view[i] = i through a pointer moved by `off` elements."""
    out, flag, base, k, b, off = (v("out", P(I64)), v("flag", P(BOOL)), v("base", P(I64)),
                                  v("k", I64), v("b", BOOL), v("off", I64))
    view = v("view", P(I64))
    body = K.Block((
        K.Store(out, i, K.Bin("add", K.Bin("mul", i, c64(3)), k)),
        K.Store(flag, i, K.Bin("xor", b, K.Bin("eq", K.Bin("rem", i, c64(2)), I0))),
        K.Store(view, i, i),
    ))
    f = K.Function("iota", (out, flag, base, k, b, off, n), K.Block((
        K.Set(view, K.PtrAdd(base, off)),
        K.ParFor(i, n, body),
    )))
    return K.Module([f])


@pytest.fixture(scope="module")
def iota():
    return build(_iota_module())


@pytest.mark.parametrize("count", [0, 1, 7, 1023, 2 ** 20 + 3])
def test_parfor_counts(iota, count):
    out = np.full(count + 5, -1, np.int64)
    flag = np.zeros(count + 5, np.bool_)
    base = np.full(count + 9, -1, np.int64)
    assert iota.call("iota", out, flag, base, np.int64(11), np.bool_(True), np.int64(4),
                     np.int64(count)) is None
    idx = np.arange(count)
    assert np.array_equal(out[:count], idx * 3 + 11)
    assert (out[count:] == -1).all()                       # the guard i < n
    assert np.array_equal(flag[:count], ~(idx % 2 == 0))
    assert not flag[count:].any()
    assert (base[:4] == -1).all() and np.array_equal(base[4:4 + count], idx)
    assert (base[4 + count:] == -1).all()


def test_negative_count_runs_nothing(iota):
    out = np.full(3, -1, np.int64)
    assert iota.call("iota", out, np.zeros(3, bool), np.zeros(3, np.int64), np.int64(0),
                     np.bool_(False), np.int64(0), np.int64(-5)) is None
    assert (out == -1).all()


def test_fail_in_a_kernel_first_failure_wins():
    """Every i with xs[i] < 0 fails; exactly one failure is reported, with
    its own arguments; iterations that do not fail still run. (The host
    checks the error buffer only where it needs device data or at the end,
    runtime.py: the host Store after the launch may run, its memory is
    never seen by the caller of a failed entry.)"""
    xs, out = v("xs", P(I64)), v("out", P(I64))
    m = K.Module()
    msg = m.message("negative {} at {}")
    x = v("x", I64)
    body = K.Block((
        K.Set(x, K.Load(xs, i)),
        K.If(K.Bin("lt", x, I0), K.Block((K.Fail("IndexError", msg, (x, i)),))),
        K.Store(out, i, K.Bin("mul", x, c64(2))),
    ))
    m.functions.append(K.Function("f", (xs, out, n), K.Block((
        K.ParFor(i, n, body),
        K.Store(out, I0, c64(-99)),               # may run: the check is deferred
    ))))
    b = build(m)
    N = 5000
    a = np.arange(N, dtype=np.int64)
    res = np.zeros(N, np.int64)
    assert b.call("f", a, res, np.int64(N)) is None
    assert res[0] == -99 and np.array_equal(res[1:], 2 * a[1:])
    a[[17, 2500, 4999]] = [-1, -2, -3]
    res[:] = 0
    code, mnum, args = b.call("f", a, res, np.int64(N))
    assert (code, mnum) == (K.ERROR_CODES["IndexError"], msg)
    assert (args[0], args[1]) in [(-1, 17), (-2, 2500), (-3, 4999)] and args[2:] == (0, 0)
    assert res[1] == 2                            # the rest ran
    # the error buffer is clean again: the next call succeeds
    a[:] = 1
    assert b.call("f", a, res, np.int64(N)) is None


def test_control_flow_in_a_kernel():
    """For (bounds evaluated once), While, If/else, Sel and CopyMem inside a
    kernel: out[i] = sum_{k<i} k, the Collatz step count of i + 1, and a copy
    of row i of a matrix."""
    out, steps, mat, rows, w = (v("out", P(I64)), v("steps", P(I64)), v("mat", P(F64)),
                                v("rows", P(F64)), v("w", I64))
    acc, k, hi, c, s = v("acc", I64), v("k", I64), v("hi", I64), v("c", I64), v("s", I64)
    body = K.Block((
        K.Set(acc, I0), K.Set(hi, i),
        K.For(k, I0, hi, K.Block((K.Set(acc, K.Bin("add", acc, k)), K.Set(hi, c64(0))))),
        K.Store(out, i, acc),
        K.Set(c, K.Bin("add", i, I1)), K.Set(s, I0),
        K.While(K.Bin("ne", c, I1), K.Block((
            K.If(K.Bin("eq", K.Bin("rem", c, c64(2)), I0),
                 K.Block((K.Set(c, K.Bin("div", c, c64(2))),)),
                 K.Block((K.Set(c, K.Bin("add", K.Bin("mul", c, c64(3)), I1)),))),
            K.Set(s, K.Bin("add", s, I1)),
        ))),
        K.Store(steps, i, K.Sel(K.Bin("gt", s, c64(100)), c64(100), s)),
        K.CopyMem(K.PtrAdd(rows, K.Bin("mul", i, w)), K.PtrAdd(mat, K.Bin("mul", i, w)), w),
    ))
    b = build(K.Module([K.Function("f", (out, steps, mat, rows, w, n),
                                   K.Block((K.ParFor(i, n, body),)))]))
    N, W = 37, 5
    o, st = np.zeros(N, np.int64), np.zeros(N, np.int64)
    m_, r_ = np.random.default_rng(0).random((N, W)), np.zeros((N, W))
    assert b.call("f", o, st, m_, r_, np.int64(W), np.int64(N)) is None

    def collatz(c):
        s = 0
        while c != 1:
            c, s = (c // 2 if c % 2 == 0 else 3 * c + 1), s + 1
        return min(s, 100)
    assert o.tolist() == [x * (x - 1) // 2 for x in range(N)]
    assert st.tolist() == [collatz(x + 1) for x in range(N)]
    assert np.array_equal(r_, m_)


def test_host_statements_around_launches():
    """Alloc (count 0 too), host Store and Load of device memory, CopyMem
    device to device, a kernel reading what the host stored, Free; nothing
    left allocated."""
    out, t, e, s = v("out", P(I32)), v("t", P(I32)), v("e", P(I32)), v("s", I32)
    body = K.Block((K.Store(t, i, K.Bin("mul", K.Load(t, i), K.Cast(I32, i))),))
    f = K.Function("f", (out, n), K.Block((
        K.Alloc(t, n), K.Alloc(e, I0),
        K.For(j, I0, n, K.Block((K.Store(t, j, K.KConst(7, I32)),))),
        K.ParFor(i, n, body),
        K.Set(s, K.Load(t, c64(2))),
        K.Store(t, I0, s),
        K.CopyMem(out, t, n),
        K.Free(t), K.Free(e),
    )))
    b = build(K.Module([f]))
    o = np.zeros(6, np.int32)
    assert b.call("f", o, np.int64(6)) is None
    assert o.tolist() == [14, 7, 14, 21, 28, 35]
    assert b.live_after_call == 0


def test_alloc_failure_is_memory_error():
    t = v("t", P(F64))
    m = K.Module([K.Function("f", (n,), K.Block((K.Alloc(t, n), K.Free(t))))])
    b = build(m)
    assert b.call("f", np.int64(10)) is None
    code, msg, args = b.call("f", np.int64(2 ** 61))
    assert code == K.ERROR_CODES["MemoryError"]
    assert m.messages[msg].format(*args[:2]) == f"cannot allocate {2 ** 61} elements of 8 bytes"


def _allocating_parfor(count_of_i: bool):
    """out[i] = i * i through a buffer the body allocates (of 2 elements, or
    of i + 2 when count_of_i) and frees; iteration 5 fails."""
    out, tmp = v("out", P(I64)), v("tmp", P(I64))
    m = K.Module()
    msg = m.message("bad {}")
    body = K.Block((
        K.Alloc(tmp, K.Bin("add", i, c64(2)) if count_of_i else c64(2)),
        K.Store(tmp, I1, K.Bin("mul", i, i)),
        K.If(K.Bin("eq", i, c64(5)), K.Block((K.Fail("ValueError", msg, (i,)),))),
        K.Store(out, i, K.Load(tmp, I1)),
        K.Free(tmp),
    ))
    m.functions.append(K.Function("f", (out, n), K.Block((K.ParFor(i, n, body),))))
    return m, msg


@pytest.mark.parametrize("count_of_i", [False, True], ids=["expanded", "heap"])
def test_parfor_whose_body_allocates(count_of_i):
    """OpenCL C has no malloc: a body's allocation of a loop-invariant size
    becomes a slice of one block allocated before the launch (expand.py);
    any other comes from the work-item's heap (emit_cl.heap_alloc). Same
    values either way, a Fail still wins, and nothing stays allocated."""
    m, msg = _allocating_parfor(count_of_i)
    b = build(m)
    assert b.host.host_parfors == 0 and len(b.kernels) == 1
    assert b.host.kernels[0].heap == count_of_i
    for count in (0, 1, 5):
        o = np.full(6, -1, np.int64)
        assert b.call("f", o, np.int64(count)) is None
        assert o.tolist() == [k * k for k in range(count)] + [-1] * (6 - count)
        assert b.live_after_call == 0
    code, mnum, args = b.call("f", np.zeros(7, np.int64), np.int64(7))
    assert (code, mnum, args[0]) == (5, msg, 5)


def test_expanded_allocation_too_large_is_memory_error():
    t, out = v("t", P(F64)), v("out", P(F64))
    c = v("c", I64)
    body = K.Block((K.Alloc(t, c), K.Store(t, I0, K.Cast(F64, i)),
                    K.Store(out, i, K.Load(t, I0)), K.Free(t)))
    m = K.Module([K.Function("f", (out, c, n), K.Block((K.ParFor(i, n, body),)))])
    b = build(m)
    assert b.kernels and b.host.host_parfors == 0
    o = np.zeros(4)
    assert b.call("f", o, np.int64(3), np.int64(4)) is None and o.tolist() == [0, 1, 2, 3]
    code, msg, args = b.call("f", o, np.int64(2 ** 59), np.int64(100))
    assert code == K.ERROR_CODES["MemoryError"]
    assert m.messages[msg].format(*args[:2]) == f"cannot allocate {2 ** 59} elements of 8 bytes"
    assert b.call("f", o, np.int64(2 ** 59), np.int64(0)) is None     # no iteration allocates


def test_num_threads_is_the_same_in_kernels_and_on_the_host():
    out = v("out", P(I64))
    f = K.Function("f", (out, n), K.Block((
        K.ParFor(i, n, K.Block((K.Store(out, i, K.NumThreads()),))),
        K.Store(out, n, K.NumThreads()),
    )))
    b = build(K.Module([f]))
    o = np.zeros(4, np.int64)
    b.call("f", o, np.int64(3))
    assert o[0] >= 1 and (o == o[0]).all() and o[0] == b.dev.nthreads


def test_kernel_source_spellings():
    """The pragmas and the UB-free integer spellings are in the program."""
    b = build(_iota_module())
    src = b.cl_source
    assert src.startswith("#pragma OPENCL FP_CONTRACT OFF") and "cl_khr_fp64" not in src
    assert "(long)((ulong)" in src                  # wrapping i64 arithmetic
    assert "get_global_id(0)" in src and ">= pyshark_n) return;" in src
    assert "native_" not in src and "mad(" not in src


def test_f64_kernels_enable_fp64():
    out = v("out", P(F64))
    f = K.Function("f", (out, n), K.Block((
        K.ParFor(i, n, K.Block((K.Store(out, i, K.Cast(F64, i)),))),)))
    b = build(K.Module([f]))
    assert b.cl_source.startswith("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    o = np.zeros(3)
    b.call("f", o, np.int64(3))
    assert o.tolist() == [0.0, 1.0, 2.0]


def test_expanded_blocks_used_only_through_loads_and_stores_are_interleaved():
    """expand.py: a body that uses its buffer only as p[e] gets element e of
    work-item i at arena[e * n + i] (coalesced); one that offsets the
    pointer keeps a slice per work-item. Same values either way."""
    from pyshark.codegen.kir_passes.expand import expand_allocations
    for offset in (False, True):
        out, tmp, q, k = v("out", P(I64)), v("tmp", P(I64)), v("q", P(I64)), v("k", I64)
        use = ([K.Set(q, K.PtrAdd(tmp, I1)), K.Store(out, i, K.Load(q, c64(1)))] if offset else
               [K.Store(out, i, K.Load(tmp, c64(2)))])
        body = K.Block(tuple([
            K.Alloc(tmp, c64(3)),
            K.For(k, I0, c64(3), K.Block((K.Store(tmp, k, K.Bin("mul", i, k)),))),
        ] + use + [K.Free(tmp)]))
        m = K.Module([K.Function("f", (out, n), K.Block((K.ParFor(i, n, body),)))])
        (p,) = [s for s in K.walk_stms(expand_allocations(m).functions[0].body)
                if isinstance(s, K.ParFor)]
        sliced = any(isinstance(s, K.Set) and isinstance(s.value, K.PtrAdd)
                     and s.var == tmp for s in p.body.stms)
        assert sliced == offset
        b = build(m)
        for count in (0, 1, 7, 300):
            o = np.full(300, -1, np.int64)
            assert b.call("f", o, np.int64(count)) is None
            assert o[:count].tolist() == [2 * x for x in range(count)]


def test_expanded_blocks_reached_through_aliases():
    """expand.py: a copy that a loop carries under other names (`bb = tmp`,
    then `nb = bb; bb = nb` per iteration, as an inlined tridiagonal solve's
    ps.copy is) and that is freed through an alias is one block: expanded
    and interleaved, its CopyMem an element loop; a second allocation whose
    alias chain starts elsewhere is not taken for it. Same values, nothing
    left allocated, no work-item heap."""
    from pyshark.codegen.kir_passes.expand import expand_allocations
    out, src, tmp, bb, nb = (v("out", P(I64)), v("src", P(I64)), v("tmp", P(I64)),
                             v("bb", P(I64)), v("nb", P(I64)))
    k, m3 = v("k", I64), v("m3", I64)
    body = K.Block((
        K.Alloc(tmp, m3),
        K.CopyMem(tmp, src, m3),                        # tmp[e] = src[e]
        K.Set(bb, tmp),
        K.For(k, I1, m3, K.Block((                      # bb[k] += bb[k-1] * i
            K.Store(bb, k, K.Bin("add", K.Load(bb, k),
                                 K.Bin("mul", K.Load(bb, K.Bin("sub", k, I1)), i))),
            K.Set(nb, bb), K.Set(bb, nb),
        ))),
        K.Store(out, i, K.Load(bb, K.Bin("sub", m3, I1))),
        K.Free(bb),
    ))
    mod = K.Module([K.Function("f", (out, src, m3, n), K.Block((K.ParFor(i, n, body),)))])
    (p,) = [s for s in K.walk_stms(expand_allocations(mod).functions[0].body)
            if isinstance(s, K.ParFor)]
    assert not any(isinstance(s, (K.Alloc, K.Free, K.CopyMem)) for s in K.walk_stms(p.body))
    b = build(mod)
    assert not b.host.kernels[0].heap
    s = np.array([1, 2, 3, 4], np.int64)
    for count in (0, 1, 7, 300):
        o = np.full(300, -1, np.int64)
        assert b.call("f", o, s, np.int64(4), np.int64(count)) is None
        want = []
        for x in range(count):
            acc = s.copy()
            for q in range(1, 4):
                acc[q] += acc[q - 1] * x
            want.append(int(acc[3]))
        assert o[:count].tolist() == want
        assert b.live_after_call == 0
