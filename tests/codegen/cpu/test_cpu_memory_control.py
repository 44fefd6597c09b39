"""Memory (bool bytes, Load/Store/PtrAdd, Alloc/Free, CopyMem, results handed
out through **T), control flow (If/For/While), Fail in host code, NumThreads
and the entry ABI (bool params, ctx->code reset)."""
from __future__ import annotations

import ctypes

import pytest

from cpu_harness import (BOOL, F32, F64, I0, I1, I64, K, P, build, c64, np, v)
from pyshark.codegen.cpu import ALLOC_FAIL_MESSAGE
from pyshark.core.types import I8, I32, U8

libc = ctypes.CDLL(None)
libc.free.argtypes = [ctypes.c_void_p]

n = v("n", I64)
i = v("i", I64)
j = v("j", I64)


def _module():
    m = K.Module()
    fns = []
    # bool in memory: out[i] = not xs[i]; count trues into cnt[0] (i64)
    xs, out, cnt, acc = v("xs", P(BOOL)), v("out", P(BOOL)), v("cnt", P(I64)), v("acc", I64)
    fns.append(K.Function("bools", (xs, out, cnt, n), K.Block((
        K.Set(acc, I0),
        K.For(i, I0, n, K.Block((
            K.Store(out, i, K.Un("not", K.Load(xs, i))),
            K.If(K.Load(xs, i), K.Block((K.Set(acc, K.Bin("add", acc, I1)),))),
        ))),
        K.Store(cnt, I0, acc)))))
    # a bool parameter (i8 in the ABI) and a bool stored through a pointer
    flag, res = v("flag", BOOL), v("res", P(BOOL))
    fns.append(K.Function("boolparam", (flag, res), K.Block((
        K.Store(res, I0, flag), K.Store(res, I1, K.Un("not", flag))))))
    # PtrAdd views: dst[k] = src[off + k] for k < n  (via a view pointer)
    src, dst, off, view = v("src", P(F64)), v("dst", P(F64)), v("off", I64), v("view", P(F64))
    fns.append(K.Function("window", (src, dst, off, n), K.Block((
        K.Set(view, K.PtrAdd(src, off)),
        K.For(i, I0, n, K.Block((K.Store(dst, i, K.Load(view, i)),))),))))
    # Alloc + fill + hand out through a **f64 out-param (caller frees with free())
    outp, buf = v("outp", P(P(F64))), v("buf", P(F64))
    fns.append(K.Function("make_iota", (n, outp), K.Block((
        K.Alloc(buf, n),
        K.For(i, I0, n, K.Block((K.Store(buf, i, K.Cast(F64, i)),))),
        K.Store(outp, I0, buf)))))
    # Alloc a temporary, CopyMem into it and back out reversed, Free it
    a, tmp, r = v("a", P(I32)), v("tmp", P(I32)), v("r", P(I32))
    fns.append(K.Function("copy_rev", (a, r, n), K.Block((
        K.Alloc(tmp, n),
        K.CopyMem(tmp, a, n),
        K.For(i, I0, n, K.Block((
            K.Store(r, i, K.Load(tmp, K.Bin("sub", K.Bin("sub", n, I1), i))),))),
        K.Free(tmp)))))
    # Alloc with a count <= 0 or too large
    cnt2, p8 = v("count", I64), v("p8", P(F64))
    fns.append(K.Function("alloc_n", (cnt2,), K.Block((
        K.Alloc(p8, cnt2), K.Free(p8)))))
    # Alloc of pointers (a **u8 table)
    tbl, row = v("tbl", P(P(U8))), v("row", P(U8))
    fns.append(K.Function("table", (n, outp), K.Block((
        K.Alloc(tbl, n),
        K.For(i, I0, n, K.Block((
            K.Alloc(row, c64(3)),
            K.Store(row, I0, K.Cast(U8, i)),
            K.Store(tbl, i, row),))),
        K.Set(acc, I0),
        K.For(i, I0, n, K.Block((
            K.Set(acc, K.Bin("add", acc, K.Cast(I64, K.Load(K.Load(tbl, i), I0)))),
            K.Free(K.Load(tbl, i)),))),
        K.Free(tbl),
        K.Alloc(buf, c64(1)),
        K.Store(buf, I0, K.Cast(F64, acc)),
        K.Store(outp, I0, buf)))))
    # control: collatz steps with While and If/else
    x, steps, o = v("x", I64), v("steps", I64), v("o", P(I64))
    fns.append(K.Function("collatz", (x, o), K.Block((
        K.Set(steps, I0),
        K.While(K.Bin("ne", x, I1), K.Block((
            K.If(K.Bin("eq", K.Bin("and", x, I1), I0),
                 K.Block((K.Set(x, K.Bin("shr", x, I1)),)),
                 K.Block((K.Set(x, K.Bin("add", K.Bin("mul", x, c64(3)), I1)),))),
            K.Set(steps, K.Bin("add", steps, I1)),))),
        K.Store(o, I0, steps)))))
    # nested For with bounds from variables, empty ranges, and a variable
    # first set inside a branch (function-level scope)
    lo, hi, s = v("lo", I64), v("hi", I64), v("s", I64)
    late = v("late", I64)
    fns.append(K.Function("nested", (lo, hi, o), K.Block((
        K.Set(s, I0),
        K.For(i, lo, hi, K.Block((
            K.For(j, i, hi, K.Block((K.Set(s, K.Bin("add", s, K.Bin("mul", i, j))),))),))),
        K.If(K.Bin("gt", hi, lo), K.Block((K.Set(late, c64(1)),)), K.Block((K.Set(late, c64(2)),))),
        K.Store(o, I0, s), K.Store(o, I1, late)))))
    # Fail in host code: index check, code/msg/args, nothing after it runs
    msg = m.message("index {} out of bounds for length {}")
    ys = v("ys", P(I64))
    fns.append(K.Function("checked_get", (ys, n, i, o), K.Block((
        K.Store(o, I1, c64(11)),
        K.If(K.Bin("or", K.Bin("lt", i, I0), K.Bin("ge", i, n)),
             K.Block((K.Fail("IndexError", msg, (i, n)), K.Store(o, I1, c64(99))))),
        K.For(j, I0, n, K.Block((
            K.If(K.Bin("eq", j, c64(1000)), K.Block((K.Fail("AssertionError", msg, ()),))),))),
        K.Store(o, I0, K.Load(ys, i)),
        K.Store(o, I1, c64(22))))))
    # NumThreads
    fns.append(K.Function("nthreads", (o,), K.Block((K.Store(o, I0, K.NumThreads()),))))
    m.functions = fns
    return m


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(_module(), tmp_path_factory.mktemp("mem"))


def test_bool_memory(lib):
    xs = np.array([True, False, True, True, False] * 41)
    raw = xs.view(np.uint8).copy()
    raw[0] = 2                      # any non-zero byte reads as True
    out = np.zeros(xs.size, dtype=bool)
    cnt = np.zeros(1, np.int64)
    assert lib.call("bools", raw, out, cnt, xs.size)[0] == 0
    assert np.array_equal(out, ~xs)
    assert set(out.view(np.uint8).tolist()) <= {0, 1}      # stored as 0/1 bytes
    assert cnt[0] == xs.sum()


def test_bool_param(lib):
    res = np.full(2, 7, np.uint8)
    for flag, want in [(1, [1, 0]), (0, [0, 1]), (2, [1, 0])]:
        lib.call("boolparam", flag, res)
        assert res.tolist() == want


def test_ptradd_window(lib):
    src = np.arange(100, dtype=np.float64)
    dst = np.zeros(10)
    lib.call("window", src, dst, 37, 10)
    assert np.array_equal(dst, src[37:47])


def test_alloc_returned_to_caller_and_freed(lib):
    for count in (0, 1, 5, 1000):
        outp = np.zeros(1, np.uintp)
        rc, _ = lib.call("make_iota", count, outp)
        assert rc == 0
        addr = int(outp[0])
        assert addr % 16 == 0
        if count:
            arr = np.ctypeslib.as_array(ctypes.cast(addr, ctypes.POINTER(ctypes.c_double)),
                                        shape=(count,))
            assert np.array_equal(arr, np.arange(count, dtype=np.float64))
        libc.free(addr)


def test_copymem_and_free(lib):
    a = np.arange(77, dtype=np.int32) * 3
    r = np.zeros(77, np.int32)
    assert lib.call("copy_rev", a, r, 77)[0] == 0
    assert np.array_equal(r, a[::-1])
    assert lib.call("copy_rev", a, r, 0)[0] == 0


def test_alloc_minimal_and_failures(lib):
    for count in (0, -5, 1, 1 << 20):
        assert lib.call("alloc_n", count)[0] == 0
    idx = lib.module.messages.index(ALLOC_FAIL_MESSAGE)
    for count in (1 << 60, (1 << 63) - 1, 1 << 58):   # overflow, overflow, NULL from libc
        rc, ctx = lib.call("alloc_n", count)
        assert rc == K.ERROR_CODES["MemoryError"] == ctx.code
        assert ctx.msg == idx
        assert list(ctx.args) == [count, 8, 0, 0]
    assert ALLOC_FAIL_MESSAGE.format(*list(ctx.args)[:2])


def test_pointer_table(lib):
    outp = np.zeros(1, np.uintp)
    assert lib.call("table", 10, outp)[0] == 0
    addr = int(outp[0])
    assert ctypes.cast(addr, ctypes.POINTER(ctypes.c_double))[0] == 45.0
    libc.free(addr)


def test_while_if(lib):
    o = np.zeros(1, np.int64)
    for x, steps in [(1, 0), (6, 8), (27, 111), (97, 118)]:
        lib.call("collatz", x, o)
        assert o[0] == steps


def test_nested_for(lib):
    o = np.zeros(2, np.int64)
    for lo, hi in [(0, 10), (3, 4), (5, 5), (7, 2), (-3, 3)]:
        lib.call("nested", lo, hi, o)
        assert o[0] == sum(a * b for a in range(lo, hi) for b in range(a, hi))
        assert o[1] == (1 if hi > lo else 2)


def test_fail_in_host_code(lib):
    ys = np.arange(10, dtype=np.int64) * 10
    o = np.zeros(2, np.int64)
    rc, ctx = lib.call("checked_get", ys, 10, 3, o)
    assert rc == 0 and o.tolist() == [30, 22]
    o[:] = 0
    rc, ctx = lib.call("checked_get", ys, 10, 12, o)
    assert rc == ctx.code == K.ERROR_CODES["IndexError"]
    assert ctx.msg == lib.module.messages.index("index {} out of bounds for length {}")
    assert list(ctx.args) == [12, 10, 0, 0]
    assert o.tolist() == [0, 11]            # stopped at the Fail
    rc, ctx = lib.call("checked_get", np.zeros(2000, np.int64), 2000, 1, o)
    assert rc == K.ERROR_CODES["AssertionError"] and list(ctx.args) == [0, 0, 0, 0]
    # the ctx is reset by the next call
    rc, ctx2 = lib.call("checked_get", ys, 10, 3, o, ctx=ctx)
    assert rc == 0 and ctx2.code == 0


def test_num_threads(lib):
    import os
    o = np.zeros(1, np.int64)
    lib.call("nthreads", o, nthreads=3)
    assert o[0] == 3
    lib.call("nthreads", o, nthreads=0)
    want = int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or len(os.sched_getaffinity(0))
    assert o[0] == want


def test_entry_named_like_a_libm_function_is_refused():
    from pyshark.codegen.cpu import emit_module
    x = v("x", P(F64))
    f = K.Function("exp", (x,), K.Block((K.Store(x, I0, K.Un("exp", K.Load(x, I0))),)))
    with pytest.raises(ValueError, match="prefix"):
        emit_module(K.Module([f]))
