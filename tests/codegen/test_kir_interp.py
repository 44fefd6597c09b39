"""The kernel IR interpreter (codegen/kir_interp.py) on hand-built modules."""
from __future__ import annotations

import numpy as np
import pytest

from pyshark.codegen import kir as K
from pyshark.codegen.kir_interp import (GARBAGE_BYTE, UNINIT, Buffer, KirInterpError,
                                KirMemoryError, KirPreconditionError, leaks, run_function)
from pyshark.core.types import (BOOL, F32, F64, FLOAT_TYPES, I8, I16, I32, I64, INT_TYPES,
                                U8, U32, U64)

pytestmark = pytest.mark.filterwarnings("error")

ALL_TYPES = INT_TYPES + FLOAT_TYPES + (BOOL,)


def v(name, t):
    return K.KVar(name, t)


def c(x, t=I64):
    return K.KConst(x, t)


def run(params, stms, args, messages=(), **kw):
    """Run one entry `f` with `params` and body `stms`."""
    m = K.Module([K.Function("f", tuple(params), K.Block(tuple(stms)))], list(messages))
    return run_function(m, "f", list(args), **kw)


def ptr(t):
    return K.Ptr(t)


# ---------------------------------------------------------------------------
# Scalar values for every type


def samples(t):
    """Sample values of t as a numpy array (edge cases included)."""
    if t is BOOL:
        return np.array([False, True, False, True])
    if t.is_float:
        return np.array([0.0, -0.0, 1.5, -2.5, 3.0, 1e30, -7.25, np.inf, -np.inf, np.nan,
                         0.5, 2.0], t.dtype)
    info = np.iinfo(t.dtype)
    vals = [0, 1, -1, 2, -3, 7, 100, -100, info.min, info.max, info.min + 1, 5]
    return np.array([x for x in vals if info.min <= x <= info.max], t.dtype)


def apply_elementwise(op_expr, t, rt, xs, ys=None):
    """out[i] = op(xs[i], ys[i]) through a For loop with Load/Store."""
    n = len(xs)
    xp, yp, op_ = v("xp", ptr(t)), v("yp", ptr(t)), v("op", ptr(rt))
    i = v("i", I64)
    x = K.Load(xp, i)
    y = K.Load(yp, i)
    out = np.zeros(n, rt.dtype)
    r = run([xp, yp, op_], [K.For(i, c(0), c(n), K.Block((K.Store(op_, i, op_expr(x, y)),)))],
            [Buffer(xs), Buffer(xs if ys is None else ys), Buffer(out)])
    assert r.code == 0
    return out


def pairs(t):
    xs = samples(t)
    a, b = np.meshgrid(xs, xs)
    return a.ravel(), b.ravel()


def c_divrem(xs, ys, t):
    q = [abs(int(x)) // abs(int(y)) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(xs, ys)]
    r = [int(x) - qq * int(y) for x, y, qq in zip(xs, ys, q)]
    return np.array(q, object).astype(t.dtype), np.array(r, object).astype(t.dtype)


LIBM = {"pow", "atan2", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
        "atan", "sinh", "cosh", "tanh"}


def assert_same(got, want, op, t):
    """Exact, except C libm functions against numpy's (a few ulps apart)."""
    assert got.dtype == want.dtype
    if op in LIBM and t.is_float:
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(t.dtype).eps, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


REF_BIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and,
           "or": np.bitwise_or, "xor": np.bitwise_xor, "pow": np.power,
           "atan2": np.arctan2, "min": np.minimum, "max": np.maximum,
           "fmin": np.fmin, "fmax": np.fmax, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
           "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def bin_cases():
    for t in ALL_TYPES:
        for op in sorted(K.BIN_PRIMS):
            if K.scalar_class(t) in K.BIN_CLASSES[op]:
                yield op, t


@pytest.mark.parametrize("op,t", list(bin_cases()), ids=lambda p: str(p))
def test_binary_primitive(op, t):
    xs, ys = pairs(t)
    if op in ("div", "rem") and t.is_int:
        ok = ys != 0
        if t.is_signed:
            ok &= ~((xs == np.iinfo(t.dtype).min) & (ys == -1))
        xs, ys = xs[ok], ys[ok]
    if op in ("shl", "shr"):
        ys = (np.arange(len(xs)) % t.bits).astype(t.dtype)
    rt = BOOL if op in K.CMP_PRIMS else t
    got = apply_elementwise(lambda x, y: K.Bin(op, x, y), t, rt, xs, ys)
    with np.errstate(all="ignore"):
        if op in ("div", "rem") and t.is_int:
            want = c_divrem(xs, ys, t)[op == "rem"]
        elif op == "div":
            want = np.divide(xs, ys)
        elif op == "rem":
            want = np.fmod(xs, ys)
        elif op == "shl":
            want = np.left_shift(xs, ys)
        elif op == "shr":
            want = np.right_shift(xs, ys)
        elif op == "pow":             # numpy's scalar `**` is C pow (the ufunc has fast paths)
            want = np.array([x ** y for x, y in zip(xs, ys)], t.dtype)
        else:
            want = REF_BIN[op](xs, ys)
    assert got.dtype == rt.dtype
    assert_same(got, want, op, t)


def un_cases():
    for t in ALL_TYPES:
        for op in sorted(K.UN_PRIMS):
            if K.scalar_class(t) in K.UN_CLASSES[op]:
                yield op, t


REF_UN = {"neg": np.negative, "not": np.invert, "fabs": np.fabs, "sqrt": np.sqrt,
          "exp": np.exp, "log": np.log, "log2": np.log2, "log10": np.log10,
          "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
          "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
          "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
          "rint": np.rint, "isnan": np.isnan}


@pytest.mark.parametrize("op,t", list(un_cases()), ids=lambda p: str(p))
def test_unary_primitive(op, t):
    xs = samples(t)
    rt = BOOL if op == "isnan" else t
    got = apply_elementwise(lambda x, y: K.Un(op, x), t, rt, xs)
    with np.errstate(all="ignore"):
        want = REF_UN[op](xs)
    assert got.dtype == rt.dtype
    assert_same(got, want, op, t)


def test_float_details():
    xs = np.array([0.0, 2.5, -2.5, 3.5], F64.dtype)
    neg = apply_elementwise(lambda x, y: K.Un("neg", x), F64, F64, xs)
    assert np.signbit(neg[0])                             # fneg, not 0 - x
    np.testing.assert_array_equal(apply_elementwise(lambda x, y: K.Un("rint", x), F64, F64, xs),
                                  [0.0, 2.0, -2.0, 4.0])   # half to even
    # f32 arithmetic stays in float32 (1 + 2**-30 rounds to 1 in f32)
    a = np.array([1.0], np.float32)
    b = np.array([2.0 ** -30], np.float32)
    s = apply_elementwise(lambda x, y: K.Bin("add", x, y), F32, F32, a, b)
    assert s.dtype == np.float32 and s[0] == 1.0
    # pow is C pow / powf (numpy's ufunc takes pow(-inf, 0.5) as sqrt: nan)
    for t in FLOAT_TYPES:
        xs = np.array([-np.inf, np.nan, 1.0, 1e30], t.dtype)
        ys = np.array([0.5, 0.0, np.nan, 2.0], t.dtype)
        got = apply_elementwise(lambda x, y: K.Bin("pow", x, y), t, t, xs, ys)
        assert got[:3].tolist() == [np.inf, 1.0, 1.0] and got.dtype == t.dtype
    # ne is unordered, the others ordered
    n = np.array([np.nan], F64.dtype)
    for op, want in [("ne", True), ("eq", False), ("lt", False), ("ge", False)]:
        assert apply_elementwise(lambda x, y: K.Bin(op, x, y), F64, BOOL, n, n)[0] == want


@pytest.mark.parametrize("t", [I8, I32, I64, U32])
def test_int_preconditions(t):
    x, y, o = v("x", t), v("y", t), v("o", ptr(t))
    out = np.zeros(1, t.dtype)

    def go(op, a, b):
        return run([x, y, o], [K.Store(o, c(0), K.Bin(op, x, y))],
                   [t.numpy_type(a), t.numpy_type(b), out])
    for op in ("div", "rem"):
        with pytest.raises(KirPreconditionError, match="by 0"):
            go(op, 5, 0)
        if t.is_signed:
            with pytest.raises(KirPreconditionError):
                go(op, np.iinfo(t.dtype).min, -1)
    go("div", 7, 2)
    assert out[0] == 3
    if t.is_signed:
        go("div", -7, 2)
        assert out[0] == -3                                 # truncating, not floor
        go("rem", -7, 2)
        assert out[0] == -1                                 # sign of x
        with pytest.raises(KirPreconditionError, match="out of range"):
            go("shl", 1, -1)
        go("shr", -8, 1)
        assert out[0] == -4                                 # arithmetic
    else:
        go("shr", np.iinfo(t.dtype).max, 1)
        assert out[0] == np.iinfo(t.dtype).max // 2          # logical
    with pytest.raises(KirPreconditionError, match="out of range"):
        go("shl", 1, t.bits)
    go("shl", 1, t.bits - 1)
    top_bit = 1 << (t.bits - 1)
    assert int(out[0]) == (top_bit if t.is_unsigned else -top_bit)


def test_int_arithmetic_wraps_without_warnings():
    got = apply_elementwise(lambda x, y: K.Bin("mul", x, y), I8, I8,
                            np.array([100, -128], np.int8), np.array([3, -1], np.int8))
    np.testing.assert_array_equal(got, [44, -128])
    got = apply_elementwise(lambda x, y: K.Un("neg", x), I64, I64,
                            np.array([np.iinfo(np.int64).min]))
    assert got[0] == np.iinfo(np.int64).min


# ---------------------------------------------------------------------------
# Casts


@pytest.mark.parametrize("src", ALL_TYPES, ids=str)
def test_cast_matches_numpy_in_range(src):
    xs = samples(src)
    for to in ALL_TYPES:
        if src.is_float and to.is_int:
            info = np.iinfo(to.dtype)
            keep = np.isfinite(xs) & (np.trunc(xs) >= info.min) & (np.trunc(xs) <= info.max)
            vals = xs[keep]
        else:
            vals = xs
        got = apply_elementwise(lambda x, y: K.Cast(to, x), src, to, vals)
        with np.errstate(all="ignore"):
            want = vals != 0 if to is BOOL else vals.astype(to.dtype)
        assert got.dtype == to.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {to}")


def test_cast_float_out_of_range_is_poison():
    """The raw float -> int Cast is poison out of range (kir.py): held in a
    variable and dropped by a Sel it is harmless, stored it is an error."""
    from pyshark.codegen.kir_interp import POISON, cast
    assert cast(np.float64(np.nan), I32) is POISON
    assert cast(np.float64(2.0 ** 31), I32) is POISON
    assert cast(np.float64(-2.0 ** 31 - 0.5), I32) == -2 ** 31      # truncates into range
    assert cast(np.float32(-0.9), U32) == 0 and cast(np.float64(256.0), U8) is POISON
    xs = np.array([1e20, 2.5])
    inr = K.Bin("lt", K.Un("fabs", v("x", F64)), K.KConst(1e9, F64))
    body = lambda x, y: K.Sel(K.Bin("lt", K.Un("fabs", x), K.KConst(1e9, F64)),  # noqa: E731
                              K.Bin("add", K.Cast(I32, x), K.KConst(1, I32)), K.KConst(-7, I32))
    np.testing.assert_array_equal(apply_elementwise(body, F64, I32, xs), [-7, 3])
    with pytest.raises(KirPreconditionError, match="poison"):
        apply_elementwise(lambda x, y: K.Cast(I32, x), F64, I32, xs)
    x, o = v("x", F64), v("o", ptr(I32))
    held = [K.Set(v("p", I32), K.Cast(I32, x)), K.Store(o, c(0), K.Sel(inr, v("p", I32),
                                                                     K.KConst(0, I32)))]
    out = np.zeros(1, np.int32)
    assert run([x, o], held, [np.float64(1e20), out]).code == 0 and out[0] == 0
    for use in (K.If(K.Bin("eq", v("p", I32), K.KConst(0, I32)), K.Block(())),
                K.Set(v("q", I32), K.Bin("div", K.KConst(1, I32), v("p", I32)))):
        with pytest.raises(KirPreconditionError, match="poison"):
            run([x, o], [held[0], use], [np.float64(1e20), out])


# ---------------------------------------------------------------------------
# Sel, Load, Store, PtrAdd, NumThreads


def test_sel_load_store_ptradd():
    xs = np.arange(10, dtype=np.int32)
    out = np.zeros(4, np.int32)
    p, o = v("p", ptr(I32)), v("o", ptr(I32))
    q = v("q", ptr(I32))
    r = run([p, o], [
        K.Set(q, K.PtrAdd(p, c(3))),
        K.Store(o, c(0), K.Load(q, c(2))),                             # xs[5]
        K.Store(o, c(1), K.Sel(K.Bin("lt", K.Load(q, c(0)), c(4, I32)), c(-1, I32), c(1, I32))),
        K.Store(K.PtrAdd(o, c(2)), c(1), K.Load(K.PtrAdd(q, c(-3)), c(9))),   # o[3] = xs[9]
        K.Store(o, c(2), K.Cast(I32, K.NumThreads())),
    ], [Buffer(xs), Buffer(out)], nthreads=5)
    assert r.code == 0 and r.message == "" and r.msg == -1
    np.testing.assert_array_equal(out, [5, -1, 5, 9])


@pytest.mark.parametrize("index", [-1, 4, 1 << 40])
def test_out_of_bounds_raises(index):
    p = v("p", ptr(F64))
    buf = np.zeros(4)
    with pytest.raises(KirMemoryError, match="load"):
        run([p], [K.Set(v("x", F64), K.Load(p, c(index)))], [Buffer(buf)])
    with pytest.raises(KirMemoryError, match="store"):
        run([p], [K.Store(p, c(index), c(1.0, F64))], [Buffer(buf)])
    with pytest.raises(KirMemoryError):                      # never wraps around
        run([p], [K.Store(K.PtrAdd(p, c(2)), c(index - 2), c(1.0, F64))], [Buffer(buf)])
    assert (buf == 0).all()


def test_buffer_offset_and_argument_checks():
    p = v("p", ptr(I64))
    arr = np.arange(6)
    run([p], [K.Store(p, c(-1), c(99))], [Buffer(arr, 2)])
    assert arr[1] == 99 and Buffer(arr, 2).values(2).tolist() == [2, 3]
    with pytest.raises(TypeError, match="int64"):
        run([p], [], [Buffer(np.zeros(3, np.int32))])
    with pytest.raises(TypeError):
        run([v("x", I32)], [], [np.int64(3)])


# ---------------------------------------------------------------------------
# Alloc, Free, CopyMem


def test_alloc_is_garbage_filled():
    o = v("o", ptr(F64))
    a = v("a", ptr(F64))
    out = np.zeros(1)
    r = run([o], [K.Alloc(a, c(3)), K.Store(o, c(0), K.Load(a, c(2))), K.Free(a)], [Buffer(out)])
    assert r.code == 0 and out.view(np.uint8).tolist() == [GARBAGE_BYTE] * 8
    b = v("b", ptr(BOOL))
    with pytest.raises(KirMemoryError, match="uninitialised"):
        run([], [K.Alloc(b, c(3)), K.Set(v("x", BOOL), K.Load(b, c(0)))], [])
    pp = v("pp", ptr(ptr(F64)))
    with pytest.raises(KirMemoryError, match="uninitialised pointer"):
        run([], [K.Alloc(pp, c(2)), K.Set(v("x", F64), K.Load(K.Load(pp, c(1)), c(0)))], [])
    with pytest.raises(KirMemoryError):                      # a minimal block has no elements
        run([], [K.Alloc(a, c(0)), K.Set(v("x", F64), K.Load(a, c(0)))], [])


def test_alloc_too_large_fails_with_memory_error():
    a = v("a", ptr(F64))
    r = run([], [K.Alloc(a, c(1 << 62))], [])
    assert r.code == K.ERROR_CODES["MemoryError"] and r.msg == -1 and "out of memory" in r.message


def test_use_after_free_and_double_free():
    a = v("a", ptr(I32))
    alloc = [K.Alloc(a, c(4)), K.Store(a, c(0), c(1, I32))]
    with pytest.raises(KirMemoryError, match="use after free"):
        run([], alloc + [K.Free(a), K.Set(v("x", I32), K.Load(a, c(0)))], [])
    with pytest.raises(KirMemoryError, match="use after free"):
        run([], alloc + [K.Free(a), K.Store(K.PtrAdd(a, c(1)), c(0), c(1, I32))], [])
    with pytest.raises(KirMemoryError, match="double free"):
        run([], alloc + [K.Free(a), K.Free(a)], [])
    with pytest.raises(KirMemoryError, match="interior"):
        run([], alloc + [K.Free(K.PtrAdd(a, c(1)))], [])
    p = v("p", ptr(I32))
    with pytest.raises(KirMemoryError, match="did not allocate"):
        run([p], [K.Free(p)], [Buffer(np.zeros(2, np.int32))])
    assert run([p], [K.Free(p)], [None]).code == 0          # free(NULL)


def test_copymem():
    src, dst = v("s", ptr(I16)), v("d", ptr(I16))
    xs, out = np.arange(8, dtype=np.int16), np.zeros(8, np.int16)
    run([src, dst], [K.CopyMem(K.PtrAdd(dst, c(1)), K.PtrAdd(src, c(2)), c(5))],
        [Buffer(xs), Buffer(out)])
    np.testing.assert_array_equal(out, [0, 2, 3, 4, 5, 6, 0, 0])
    run([src, dst], [K.CopyMem(dst, src, c(0))], [Buffer(xs), Buffer(out)])
    with pytest.raises(KirMemoryError, match="copy to"):
        run([src, dst], [K.CopyMem(K.PtrAdd(dst, c(4)), src, c(5))], [Buffer(xs), Buffer(out)])
    with pytest.raises(KirMemoryError, match="copy from"):
        run([src, dst], [K.CopyMem(dst, K.PtrAdd(src, c(-1)), c(2))], [Buffer(xs), Buffer(out)])
    with pytest.raises(KirMemoryError, match="overlapping"):
        run([src, dst], [K.CopyMem(dst, K.PtrAdd(dst, c(1)), c(2))], [Buffer(xs), Buffer(out)])
    with pytest.raises(KirMemoryError):
        run([src, dst], [K.CopyMem(dst, src, c(-1))], [Buffer(xs), Buffer(out)])
    a = v("a", ptr(I16))
    with pytest.raises(KirMemoryError, match="use after free"):
        run([src], [K.Alloc(a, c(8)), K.Free(a), K.CopyMem(a, src, c(1))], [Buffer(xs)])
    # pointer arrays copy their pointers
    pp, qq, e = v("pp", ptr(ptr(I16))), v("qq", ptr(ptr(I16))), v("e", ptr(I16))
    outs = Buffer.pointers(2)
    r = run([src, qq], [K.Alloc(pp, c(2)), K.Store(pp, c(0), src), K.Store(pp, c(1), src),
                        K.CopyMem(qq, pp, c(2)), K.Free(pp)], [Buffer(xs), outs])
    assert r.code == 0 and outs.array[1].array is xs and r.leaks() == []
    with pytest.raises(KirInterpError, match="store of"):
        run([qq, e], [K.Store(qq, c(0), K.Load(e, c(0)))], [outs, Buffer(xs)], check=False)


# ---------------------------------------------------------------------------
# Control flow and Fail


def test_for_while_if():
    n, o = v("n", I64), v("o", ptr(I64))
    i, acc, k, steps = v("i", I64), v("acc", I64), v("k", I64), v("steps", I64)
    out = np.zeros(3, np.int64)
    stms = [
        K.Set(acc, c(0)),
        K.For(i, c(2), n, K.Block((K.Set(acc, K.Bin("add", acc, i)),))),
        K.Store(o, c(0), acc),
        K.Set(k, c(27)), K.Set(steps, c(0)),
        K.While(K.Bin("ne", k, c(1)), K.Block((
            K.If(K.Bin("eq", K.Bin("rem", k, c(2)), c(0)),
                 K.Block((K.Set(k, K.Bin("div", k, c(2))),)),
                 K.Block((K.Set(k, K.Bin("add", K.Bin("mul", k, c(3)), c(1))),))),
            K.Set(steps, K.Bin("add", steps, c(1))),
        ))),
        K.Store(o, c(1), steps),
        K.For(i, n, c(0), K.Block((K.Store(o, c(2), c(-1)),))),   # hi <= lo: no iteration
    ]
    run([n, o], stms, [10, Buffer(out)])
    np.testing.assert_array_equal(out, [sum(range(2, 10)), 111, 0])
    with pytest.raises(KirInterpError, match="counter"):
        run([n], [K.For(i, c(0), n, K.Block((K.Set(i, c(5)),)))], [3], check=False)
    with pytest.raises(KirInterpError, match="read before"):
        run([], [K.Set(acc, k)], [], check=False)


def test_fail_in_host_code():
    n, o = v("n", I64), v("o", ptr(I64))
    msgs = ["index {} out of range for length {}"]
    out = np.zeros(1, np.int64)
    stms = [K.If(K.Bin("ge", n, c(3)), K.Block((K.Fail("IndexError", 0, (n, c(3))),))),
            K.Store(o, c(0), c(1))]
    r = run([n, o], stms, [5, Buffer(out)], msgs)
    assert (r.code, r.msg, r.args) == (1, 0, [5, 3])
    assert r.message == "index 5 out of range for length 3" and out[0] == 0
    assert run([n, o], stms, [2, Buffer(out)], msgs).code == 0 and out[0] == 1


# ---------------------------------------------------------------------------
# ParFor


def order_recorder(count_expr):
    """ParFor body: seen[i] += 1; order[i] = ctr[0]++ (through memory)."""
    seen, order, ctr = v("seen", ptr(I64)), v("order", ptr(I64)), v("ctr", ptr(I64))
    i, t = v("i", I64), v("t", I64)
    body = K.Block((
        K.Store(seen, i, K.Bin("add", K.Load(seen, i), c(1))),
        K.Set(t, K.Load(ctr, c(0))),
        K.Store(ctr, c(0), K.Bin("add", t, c(1))),
        K.Store(order, i, t),
    ))
    return [seen, order, ctr], [K.ParFor(i, count_expr, body)]


@pytest.mark.parametrize("n", [0, 1, 7, 1023])
@pytest.mark.parametrize("nthreads", [1, 3])
def test_parfor_writes_every_index_once(n, nthreads):
    params, stms = order_recorder(c(n))
    seen, order = np.zeros(n, np.int64), np.zeros(n, np.int64)
    r = run(params, stms, [Buffer(seen), Buffer(order), Buffer(np.zeros(1, np.int64))],
            nthreads=nthreads)
    assert r.code == 0 and (seen == 1).all()
    assert sorted(order) == list(range(n))
    if n >= 7:
        assert list(order) != list(range(n))               # not in sequential order


def test_parfor_orders():
    params, stms = order_recorder(c(10))
    order = np.zeros(10, np.int64)

    def args():
        return [Buffer(np.zeros(10, np.int64)), Buffer(order), Buffer(np.zeros(1, np.int64))]
    run(params, stms, args(), order="reverse", nthreads=4)
    assert list(order) == list(range(9, -1, -1))
    run(params, stms, args(), order="forward")
    assert list(order) == list(range(10))


def test_parfor_body_must_not_set_outer_variables():
    i, x, p = v("i", I64), v("x", I64), v("p", ptr(I64))
    with pytest.raises(KirInterpError, match="captured"):
        run([p], [K.Set(x, c(0)), K.ParFor(i, c(3), K.Block((K.Set(x, i),)))],
            [Buffer(np.zeros(3, np.int64))], check=False)
    with pytest.raises(KirInterpError, match="ParFor counter"):
        run([], [K.ParFor(i, c(3), K.Block((K.Set(i, c(0)),)))], [], check=False)
    # a variable of the body is fresh in every iteration
    y = v("y", I64)
    with pytest.raises(KirInterpError, match="read before"):
        run([], [K.ParFor(i, c(3), K.Block((
            K.If(K.Bin("gt", i, c(0)), K.Block((K.Set(x, y),))), K.Set(y, i))))], [], check=False)
    with pytest.raises(KirInterpError, match="nested"):
        run([], [K.ParFor(i, c(3), K.Block((K.ParFor(y, c(2), K.Block(())),)))], [], check=False)


def test_fail_in_parfor():
    n, o, done = v("n", I64), v("o", ptr(I64)), v("done", ptr(I64))
    i = v("i", I64)
    body = K.Block((
        K.If(K.Bin("ge", i, c(5)), K.Block((K.Fail("ValueError", 0, (i,)),))),
        K.Store(o, i, c(1)),
    ))
    stms = [K.ParFor(i, n, body), K.Store(done, c(0), c(1))]
    for order in ("shuffle", "reverse", "forward"):
        out, flag = np.zeros(8, np.int64), np.zeros(1, np.int64)
        r = run([n, o, done], stms, [8, Buffer(out), Buffer(flag)], ["bad {}"],
                nthreads=2, order=order)
        assert r.code == K.ERROR_CODES["ValueError"] and r.args[0] in (5, 6, 7)
        assert r.message == f"bad {r.args[0]}"
        assert flag[0] == 0                                 # returns after the loop
        assert (out[:4] == 1).all()                         # the other chunk ran to its end
    # with parallel_if false the loop is one chunk: the failure stops it all
    out = np.zeros(8, np.int64)
    seq = K.ParFor(i, n, body, parallel_if=c(False, BOOL))
    r = run([n, o, done], [seq], [8, Buffer(out), Buffer(np.zeros(1, np.int64))], ["bad {}"],
            order="forward")
    assert r.args == [5] and out.tolist() == [1] * 5 + [0] * 3


def chunked_sum_module():
    """out[0] = sum(xs[0:n]) through per-thread partials (NumThreads of them)."""
    n, xs, out = v("n", I64), v("xs", ptr(F64)), v("out", ptr(F64))
    nt, part, t, lo, hi, j, acc, tot = (v("nt", I64), v("part", ptr(F64)), v("t", I64),
                                       v("lo", I64), v("hi", I64), v("j", I64),
                                       v("acc", F64), v("tot", F64))
    mul, div, add = (lambda a, b: K.Bin("mul", a, b)), (lambda a, b: K.Bin("div", a, b)), \
        (lambda a, b: K.Bin("add", a, b))
    body = [
        K.Set(nt, K.NumThreads()),
        K.Alloc(part, nt),
        K.ParFor(t, nt, K.Block((
            K.Set(lo, div(mul(t, n), nt)),
            K.Set(hi, div(mul(add(t, c(1)), n), nt)),
            K.Set(acc, c(0.0, F64)),
            K.For(j, lo, hi, K.Block((K.Set(acc, add(acc, K.Load(xs, j))),))),
            K.Store(part, t, acc),
        ))),
        K.Set(tot, c(0.0, F64)),
        K.For(t, c(0), nt, K.Block((K.Set(tot, add(tot, K.Load(part, t))),))),
        K.Free(part),
        K.Store(out, c(0), tot),
    ]
    return K.Module([K.Function("sum", (n, xs, out), K.Block(tuple(body)))])


@pytest.mark.parametrize("nthreads", [1, 2, 3, 8])
@pytest.mark.parametrize("n", [0, 5, 1000])
def test_chunked_sum_with_partials(n, nthreads):
    xs = np.arange(n, dtype=np.float64)
    out = np.zeros(1)
    r = run_function(chunked_sum_module(), "sum", [n, Buffer(xs), Buffer(out)], nthreads=nthreads)
    assert r.code == 0 and out[0] == xs.sum() and r.leaks() == [] and r.dangling() == []


# ---------------------------------------------------------------------------
# Leaks


def test_leak_detection():
    a, b, res = v("a", ptr(I32)), v("b", ptr(I32)), v("res", ptr(ptr(I32)))
    outs = Buffer.pointers(1)
    r = run([res], [K.Alloc(a, c(4)), K.Alloc(b, c(2)), K.Store(a, c(0), c(7, I32)),
                    K.Store(res, c(0), a)], [outs])
    assert r.code == 0 and outs.array[0].values(1).tolist() == [7]
    (leaked,) = leaks(r)
    assert len(leaked.array) == 2                           # b, not a (reachable)
    r = run([res], [K.Alloc(a, c(4)), K.Alloc(b, c(2)), K.Store(res, c(0), a), K.Free(b)], [outs])
    assert r.leaks() == [] and r.dangling() == []
    r = run([res], [K.Alloc(a, c(4)), K.Store(res, c(0), a), K.Free(a)], [outs])
    assert r.leaks() == [] and len(r.dangling()) == 1
    # reachable through an allocated pointer array
    pp = v("pp", ptr(ptr(I32)))
    outs2 = Buffer(np.full(1, None, dtype=object))
    r = run([v("res2", ptr(ptr(ptr(I32))))],
            [K.Alloc(pp, c(1)), K.Alloc(a, c(3)), K.Store(pp, c(0), a),
             K.Store(v("res2", ptr(ptr(ptr(I32)))), c(0), pp)], [outs2])
    assert r.leaks() == [] and outs2.array[0].array[0] is not UNINIT


def test_a_failing_entry_frees_what_it_holds():
    """kir.py: a Fail frees the blocks the entry allocated and still holds,
    but not a result it stored into an out-param (the caller owns that)."""
    a, b, res = v("a", ptr(I32)), v("b", ptr(I32)), v("res", ptr(ptr(I32)))
    outs = Buffer.pointers(1)
    r = run([res], [K.Alloc(a, c(4)), K.Alloc(b, c(2)), K.Store(res, c(0), a),
                    K.Fail("ValueError", 0)], [outs], messages=["no"])
    assert r.code == K.ERROR_CODES["ValueError"] and r.leaks() == [] and r.dangling() == []
    assert isinstance(outs.array[0], Buffer)             # the result stays stored, not freed


def test_a_parfor_body_frees_only_its_own_blocks():
    """The failure cleanup keeps one account per function (emit_unwind.py),
    so a ParFor body must not free a block the host allocated."""
    a, i, t = v("a", ptr(I32)), v("i", I64), v("t", ptr(I32))
    own = K.ParFor(i, c(3), K.Block((K.Alloc(t, c(2)), K.Free(t))))
    r = run([], [K.Alloc(a, c(4)), own, K.Free(a)], [])
    assert r.code == 0 and r.leaks() == []
    theirs = K.ParFor(i, c(1), K.Block((K.Free(a),)))
    with pytest.raises(KirMemoryError, match="did not allocate"):
        run([], [K.Alloc(a, c(4)), theirs], [])


@pytest.mark.parametrize("frm,to", [(F32, U32), (U32, F32), (F64, I64), (I64, F64)], ids=str)
def test_bit_cast_reads_the_same_bits(frm, to):
    xs = samples(frm)
    got = apply_elementwise(lambda x, y: K.Cast(to, x, bits=True), frm, to, xs)
    assert np.array_equal(got.view(np.uint8), xs.view(to.dtype).view(np.uint8))


@pytest.mark.parametrize("frm,to", [(F32, I64), (I8, BOOL), (BOOL, U8)], ids=str)
def test_bit_cast_needs_one_width_and_no_bool(frm, to):
    from pyshark.codegen.kir_check import KirError
    p = v("p", ptr(frm))
    q = v("q", ptr(to))
    f = K.Function("f", (p, q), K.Block((K.Store(q, c(0), K.Cast(to, K.Load(p, c(0)),
                                                                   bits=True)),)))
    with pytest.raises(KirError, match="bit cast"):
        K.check_module(K.Module([f], []))
