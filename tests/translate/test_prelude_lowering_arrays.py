"""Prelude lowering of array functions, reductions and scalar functions,
checked against numpy through the core checker and interpreter."""
from __future__ import annotations

import builtins
import math

import numpy as np
import pytest

from prelude_harness import (A, BOOL, F32, F64, I32, I64, P, SArray, SScalar, STuple, call,
                             compile_fn, run)
from pyshark.core import ir
from pyshark.core.types import I16, U8
from pyshark.errors import CompileError, ShapeError
from pyshark.translate.values import ScalarV, TupleV, TypeArg, weak

xs32 = np.array([3, -1, 4, 1, -5], np.int32)


def eq(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


S = SScalar


def test_iota_replicate():
    for n in (0, 1, 4):
        (r,) = run(call("iota", P(0)), [S(I32)], n)
        eq(r, np.arange(n, dtype=np.int64))
    with pytest.raises(ShapeError):
        run(call("iota", P(0)), [S(I64)], -1)
    (r,) = run(call("replicate", P(0), weak(1.5)), [S(I64)], 3)
    eq(r, np.full(3, 1.5))
    a, b = run(lambda ctx, node, n, x: call("replicate", n, TupleV((weak(1), x)))(ctx, node),
               [S(I64), S(F32)], 2, 0.5)
    eq(a, np.ones(2, np.int64))
    eq(b, np.full(2, 0.5, np.float32))
    m = np.arange(6, dtype=np.int32).reshape(2, 3)
    (r,) = run(call("replicate", P(0), P(1)), [S(I64), A(I32, 2)], 2, m)
    eq(r, np.stack([m, m]))


def test_len_length():
    for name in ("length", "builtins.len"):
        (r,) = run(call(name, P(0)), [A(F32)], np.zeros(3, np.float32))
        assert r == 3 and r.dtype == np.int64


@pytest.mark.parametrize("name,f", [("head", lambda x: x[0]), ("last", lambda x: x[-1]),
                                    ("tail", lambda x: x[1:]), ("init", lambda x: x[:-1])])
def test_ends(name, f):
    for xs in (xs32, xs32[:1]):
        (r,) = run(call(name, P(0)), [A(I32)], xs)
        eq(r, f(xs))
    with pytest.raises(IndexError):
        run(call(name, P(0)), [A(I32)], xs32[:0])


def test_take_drop_split_reverse():
    for n in (0, 2, 5):
        (r,) = run(call("take", P(0), P(1)), [S(I64), A(I32)], n, xs32)
        eq(r, xs32[:n])
        (r,) = run(call("drop", P(0), P(1)), [S(I64), A(I32)], n, xs32)
        eq(r, xs32[n:])
        a, b = run(call("split", P(0), P(1)), [S(I64), A(I32)], n, xs32)
        eq(a, xs32[:n])
        eq(b, xs32[n:])
    with pytest.raises(IndexError):
        run(call("take", P(0), P(1)), [S(I64), A(I32)], 6, xs32)
    for xs in (xs32, xs32[:0]):
        (r,) = run(call("reverse", P(0)), [A(I32)], xs)
        eq(r, xs[::-1])


def test_concat_rotate():
    (r,) = run(call("concat", P(0), P(1), P(0)), [A(I32), A(I32)], xs32, xs32[:2])
    eq(r, np.concatenate([xs32, xs32[:2], xs32]))
    with pytest.raises(CompileError, match="ps.concat joins arrays of one type"):
        compile_fn(call("concat", P(0), P(1)), [A(I32), A(F32)])
    for k in (-7, -1, 0, 1, 2, 5, 12):
        (r,) = run(call("rotate", P(0), P(1)), [S(I32), A(I32)], k, xs32)
        eq(r, np.roll(xs32, -k))
    (r,) = run(call("rotate", P(0), P(1)), [S(I64), A(I32)], 3, xs32[:0])
    eq(r, xs32[:0])


def test_transpose_flatten_unflatten():
    m = np.arange(6, dtype=np.float64).reshape(2, 3)
    (r,) = run(call("transpose", P(0)), [A(F64, 2)], m)
    eq(r, m.T)
    (r,) = run(call("flatten", P(0)), [A(F64, 2)], m)
    eq(r, m.reshape(6))
    (r,) = run(call("unflatten", P(0), P(1), P(2)), [S(I64), S(I64), A(F64)], 3, 2, m.reshape(6))
    eq(r, m.reshape(3, 2))
    for n, k in ((4, 2), (-2, -3)):
        with pytest.raises(ShapeError):
            run(call("unflatten", P(0), P(1), P(2)), [S(I64), S(I64), A(F64)], n, k, m.reshape(6))
    with pytest.raises(CompileError, match="rank 2 or more"):
        compile_fn(call("transpose", P(0)), [A(F64)])


def test_copy_update():
    xs = np.array([1, 2, 3], np.float32)
    (r,) = run(call("update", P(0), weak(-1), weak(9.5)), [A(F32)], xs)
    eq(r, np.array([1, 2, 9.5], np.float32))
    with pytest.raises(IndexError):
        run(call("update", P(0), P(1), weak(0.0)), [A(F32), S(I64)], xs, 3)
    (r,) = run(call("copy", P(0)), [A(F32)], xs)
    eq(r, xs)


def test_zip_unzip_and_array():
    a, b = run(call("unzip", lambda ctx, v: call("zip", P(0), P(1))(ctx, None, *v)),
               [A(I32), A(F32)], xs32, xs32.astype(np.float32))
    eq(a, xs32)
    eq(b, xs32.astype(np.float32))
    with pytest.raises(ShapeError):
        run(call("zip", P(0), P(1)), [A(I32), A(I32)], xs32, xs32[:1])
    with pytest.raises(CompileError, match="needs an array of tuples"):
        compile_fn(call("unzip", P(0)), [A(I32)])
    r = run(call("unzip", P(0)), [SArray(STuple((S(I64), S(BOOL))))],
            np.array([1, 2], np.int64), np.array([True, False]))
    eq(r[1], np.array([True, False]))


def test_sum_product_integer_wrap_and_empty():
    for name, f in (("sum", np.sum), ("product", np.prod), ("builtins.sum", np.sum)):
        for xs in (xs32, xs32[:1], xs32[:0], np.array([2**31 - 1, 1], np.int32)):
            (r,) = run(call(name, P(0)), [A(I32)], xs)
            assert r.dtype == np.int32 and r == f(xs, dtype=np.int32)
    m = np.arange(6, dtype=np.float64).reshape(2, 3)
    (r,) = run(call("sum", P(0)), [A(F64, 2)], m)
    eq(r, m.sum(axis=0))
    with pytest.raises(CompileError):
        compile_fn(call("sum", P(0)), [A(BOOL)])


def test_minimum_maximum_nan_and_empty():
    xs = np.array([2.0, np.nan, -1.0], np.float32)
    for name, f in (("minimum", np.min), ("maximum", np.max), ("builtins.min", np.min),
                    ("builtins.max", np.max)):
        for v in (xs, xs[[1, 0, 2]], xs[[0, 2, 1]]):
            (r,) = run(call(name, P(0)), [A(F32)], v)
            assert r.dtype == np.float32
            if name.startswith("builtins."):
                # Python's rule: a NaN first stays, later NaNs are passed over
                want = getattr(builtins, name[len("builtins."):])(list(v))
                assert (math.isnan(r) and math.isnan(want)) or r == want
            else:
                assert math.isnan(r)            # numpy's: NaN propagates
        (r,) = run(call(name, P(0)), [A(F32)], xs[[0, 2]])
        assert r == f(xs[[0, 2]])
        (r,) = run(call(name, P(0)), [A(I32)], xs32)
        assert r == f(xs32) and r.dtype == np.int32
        # of an empty array: the prelude's raise ShapeError, the builtins
        # Python's own ValueError (issue 15, item 11)
        with pytest.raises(ValueError) as info:
            run(call(name, P(0)), [A(I32)], xs32[:0])
        assert isinstance(info.value, ShapeError) == (not name.startswith("builtins."))


@pytest.mark.parametrize("name,f", [("argmin", np.argmin), ("argmax", np.argmax)])
def test_argmin_argmax(name, f):
    cases = [np.array(v, np.float64) for v in (
        [3.0, 1.0, 1.0, 5.0, 5.0], [np.nan, 1.0, np.nan], [1.0, np.nan, 0.0, np.nan],
        [7.0], [-0.0, 0.0], [np.inf, -np.inf, np.inf, -np.inf])]
    rng = np.random.default_rng(1)
    cases += [rng.integers(0, 3, 9).astype(np.float64) for _ in range(5)]
    for xs in cases:
        (r,) = run(call(name, P(0)), [A(F64)], xs)
        assert r == f(xs) and r.dtype == np.int64, (xs, r)
    ints = np.array([2, 0, 2, 0, -3, -3, 9, 9], np.int32)
    (r,) = run(call(name, P(0)), [A(I32)], ints)
    assert r == f(ints)
    with pytest.raises(ShapeError):
        run(call(name, P(0)), [A(F64)], np.zeros(0))


# ---------------------------------------------------------------------------
# Scalars


def test_conversions_and_math():
    (r,) = run(call("i8", P(0)), [S(I32)], 300)
    assert r == 44 and r.dtype == np.int8
    (r,) = run(call("builtins.int", P(0)), [S(F64)], -2.7)
    assert r == -2 and r.dtype == np.int64
    (r,) = run(call("builtins.float", P(0)), [S(I32)], 3)
    assert r == 3.0 and r.dtype == np.float64
    (r,) = run(call("builtins.bool", P(0)), [S(F64)], 0.0)
    assert r == False  # noqa: E712
    (r,) = run(call("sqrt", P(0)), [S(F32)], 2.0)
    assert r.dtype == np.float32 and r == np.sqrt(np.float32(2.0))
    (r,) = run(call("sqrt", weak(2)), [])
    assert r.dtype == np.float64 and r == np.sqrt(2)
    (r,) = run(call("round", P(0)), [S(F64)], 2.5)
    assert r == 2.0
    (r,) = run(call("abs", P(0)), [S(I16)], -32768)
    assert r == -32768 and r.dtype == np.int16
    (r,) = run(call("isnan", P(0)), [S(F32)], float("nan"))
    assert r
    with pytest.raises(CompileError, match="needs a float argument"):
        compile_fn(call("sqrt", P(0)), [S(I32)])
    with pytest.raises(CompileError, match="converts a scalar"):
        compile_fn(call("f32", P(0)), [A(F64)])


def test_binary_math_weak_takes_other_type():
    (r,) = run(call("pow", P(0), weak(2)), [S(F32)], 3.0)
    assert r.dtype == np.float32 and r == 9.0
    (r,) = run(call("atan2", P(0), weak(1.0)), [S(F32)], 1.0)
    assert r.dtype == np.float32 and r == np.arctan2(np.float32(1), np.float32(1))
    (r,) = run(call("max", P(0), weak(0.0)), [S(F32)], float("nan"))
    assert math.isnan(r) and r.dtype == np.float32
    (r,) = run(call("min", P(0), weak(0), P(1)), [S(I32), S(I32)], 5, -3)
    assert r == -3 and r.dtype == np.int32


def test_builtin_min_max_python_semantics():
    nan = float("nan")
    for a, b in ((nan, 1.0), (1.0, nan), (2.0, 1.0), (-0.0, 0.0), (0.0, -0.0)):
        (r,) = run(call("builtins.max", P(0), P(1)), [S(F64), S(F64)], a, b)
        want = max(a, b)
        assert (math.isnan(r) and math.isnan(want)) or (r == want and math.copysign(1, r) == math.copysign(1, want))
        (r,) = run(call("builtins.min", P(0), P(1)), [S(F64), S(F64)], a, b)
        want = min(a, b)
        assert (math.isnan(r) and math.isnan(want)) or (r == want and math.copysign(1, r) == math.copysign(1, want))
    (r,) = run(call("builtins.max", P(0), P(1), P(2)), [S(F64), S(F64), S(F64)], 1.0, 3.0, 2.0)
    assert r == 3.0
    (r,) = run(call("builtins.max", P(0), weak(0)), [S(I64)], -4)
    assert r == 0 and r.dtype == np.int64
    r = call("builtins.max", weak(1), weak(2.5))
    from prelude_harness import call_node, Ctx, Builder
    src, node = call_node(2)
    v = r(Ctx(src, Builder()), node)
    assert v.weak and v.atom.value == 2.5
    with pytest.raises(CompileError, match="must already be ps.f32") as ei:
        compile_fn(call("builtins.max", P(0), weak(0.0)), [S(F32)])
    assert "ps.f32(a1)" in str(ei.value)
    with pytest.raises(CompileError, match="mixes ps.i32 and ps.i64"):
        compile_fn(call("builtins.min", P(0), P(1)), [S(I32), S(I64)])


def test_highest_lowest_and_builtin_abs():
    for t, hi, lo in ((I32, 2**31 - 1, -2**31), (F32, np.inf, -np.inf), (BOOL, True, False),
                      (U8, 255, 0)):
        (r,) = run(call("highest", TypeArg(S(t))), [])
        assert r == hi and r.dtype == t.dtype
        (r,) = run(call("lowest", TypeArg(S(t))), [])
        assert r == lo
    from prelude_harness import call_node, Ctx, Builder
    src, node = call_node(1)
    v = call("builtins.abs", weak(-3))(Ctx(src, Builder()), node)
    assert v.weak and v.atom.value == 3


def test_argument_count_and_keywords():
    with pytest.raises(CompileError, match="ps.iota takes 1 argument, got 2"):
        compile_fn(call("iota", P(0), P(0)), [S(I64)])
    from prelude_harness import Builder, Ctx
    from pyshark.translate.prelude_calls import lower_call
    from pyshark.translate.source import SourceInfo
    src = SourceInfo.parse("f(a, n=2)\n", "t.py")
    node = src.module.body[0].body[0].value
    with pytest.raises(CompileError, match="keyword argument 'n'"):
        lower_call(Ctx(src, Builder()), "pyshark.prelude.iota", [weak(1), weak(2)], node)


def test_buffers_fresh_results_and_views():
    from prelude_harness import Builder, Ctx, call_node
    from pyshark.translate.prelude_calls import lower_call
    from pyshark.translate.values import ArrayV, new_buffer
    src, node = call_node(2)
    b = Builder()
    ctx = Ctx(src, b)
    owned = ArrayV(A(I32), (b.var(ir.ArrayType(I32, 1), "xs"),), new_buffer())
    c = lower_call(ctx, "pyshark.prelude.copy", [owned], node)
    assert c.buffer > 0 and c.buffer != owned.buffer
    t = lower_call(ctx, "pyshark.prelude.tail", [owned], node)
    assert t.buffer == -owned.buffer
    z = lower_call(ctx, "pyshark.prelude.zip", [owned, c], node)
    assert z.buffer == -owned.buffer


@pytest.mark.parametrize("name,f", [("argmin", np.argmin), ("argmax", np.argmax)])
def test_arg_operator_is_associative(name, f):
    """Parallel backends regroup the Reduce: a random tree must give numpy's answer."""
    from pyshark.core.interp import Interpreter
    prog = compile_fn(call(name, P(0)), [A(F32)])
    (red,) = [s.exp for s in prog.functions["f"].body.stms if isinstance(s.exp, ir.Reduce)]
    it = Interpreter(prog)
    rng = np.random.default_rng(7)

    def tree(items):
        if len(items) == 1:
            return items[0]
        k = int(rng.integers(1, len(items)))
        a, b = tree(items[:k]), tree(items[k:])
        return tuple(it.apply(red.lam, {}, (*a, *b)))
    for _ in range(40):
        xs = rng.choice(np.array([0.0, 1.0, -1.0, np.nan, np.inf, -0.0], np.float32), 7)
        items = [(x, np.int64(i)) for i, x in enumerate(xs)]
        ne = tuple(it.atom(a, {}) for a in red.neutral)
        items = [ne] + items[:3] + [ne] + items[3:]
        assert tree(items)[1] == f(xs), xs
