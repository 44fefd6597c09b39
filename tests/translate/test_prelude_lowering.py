"""Prelude lowering, unit level: each lowering's IR is type-checked and run by
the core interpreter, and compared with numpy formulations (empty and
one-element arrays, NaN, out-of-range indices)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from prelude_harness import (A, BOOL, F32, F64, I32, I64, NODE, P, PyFun, SArray, SScalar,
                             STuple, add, binfun, call, compile_fn, run)
from pyshark.errors import CompileError, ShapeError
from pyshark.translate import ops
from pyshark.translate.values import ArrayV, ScalarV, TupleV, weak

f32a, f64a, i32a, i64a = (np.array(v, dtype=d) for v, d in (
    ([1.5, -2.0, 3.25], np.float32), ([1.0, 2.0, 3.0], np.float64),
    ([3, -1, 4, 1, -5], np.int32), ([2, 7, 1, 8], np.int64)))


def eq(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# map


def test_map_one_and_two_arrays():
    double = PyFun(lambda ctx, x: ops.binop(ctx, "mul", weak(2.0), x, NODE), 1)
    for xs in (f32a, f32a[:1], f32a[:0]):
        (r,) = run(call("map", double, P(0)), [A(F32)], xs)
        eq(r, (2 * xs).astype(np.float32))
    (r,) = run(call("map", binfun("add"), P(0), P(1)), [A(F32), A(F32)], f32a, f32a[::-1].copy())
    eq(r, f32a + f32a[::-1])


def test_map_length_mismatch_raises_shape_error():
    with pytest.raises(ShapeError):
        run(call("map", binfun("add"), P(0), P(1)), [A(I64), A(I64)], i64a, i64a[:2])


def test_map_same_array_twice_emits_no_assert():
    prog = compile_fn(call("map", binfun("add"), P(0), P(0)), [A(I64)])
    assert not any(isinstance(s.exp, __import__("pyshark.core.ir").core.ir.Assert)
                   for s in prog.functions["f"].body.stms)


def test_map_tuple_result_and_weak_result():
    pair = PyFun(lambda ctx, x: TupleV((x, weak(1))), 1)
    r = run(call("unzip", lambda ctx, v: call("map", pair, P(0))(ctx, None, *v)), [A(I32)], i32a)
    eq(r[0], i32a)
    eq(r[1], np.ones(5, np.int64))


def test_map_over_zip_of_records_and_empty():
    prod3 = PyFun(lambda ctx, t: ops.binop(ctx, "mul", t.elems[0], t.elems[1], NODE), 1)

    def build(ctx, node, xs, ys):
        from pyshark.translate.prelude_calls import lower_call
        z = lower_call(ctx, "pyshark.prelude.zip", [xs, ys], node)
        return lower_call(ctx, "pyshark.prelude.map", [prod3, z], node)
    (r,) = run(build, [A(F64), A(F64)], f64a, f64a)
    eq(r, f64a * f64a)
    (r,) = run(build, [A(F64), A(F64)], f64a[:0], f64a[:0])
    eq(r, np.zeros(0))


def test_map_rows_of_2d():
    rowsum = PyFun(lambda ctx, row: call("sum", P(0))(ctx, NODE, row), 1)
    m = np.arange(6, dtype=np.float64).reshape(2, 3)
    (r,) = run(call("map", rowsum, P(0)), [A(F64, 2)], m)
    eq(r, m.sum(axis=1))


# ---------------------------------------------------------------------------
# reduce / scan / filter / partition


def test_reduce_weak_neutral_takes_element_type():
    for xs in (f32a, f32a[:1], f32a[:0]):
        (r,) = run(call("reduce", binfun("add"), weak(0.0), P(0)), [A(F32)], xs)
        assert r.dtype == np.float32 and r == np.float32(xs.sum())
    (r,) = run(call("reduce_comm", binfun("max"), weak(-100), P(0)), [A(I32)], i32a)
    assert r.dtype == np.int32 and r == 4


def test_reduce_tuple_neutral():
    def op(ctx, a, b):
        return TupleV((ops.binop(ctx, "add", a.elems[0], b.elems[0], NODE),
                       ops.binop(ctx, "mul", a.elems[1], b.elems[1], NODE)))

    def build(ctx, node, xs, ys):
        from pyshark.translate.prelude_calls import lower_call
        z = lower_call(ctx, "pyshark.prelude.zip", [xs, ys], node)
        return lower_call(ctx, "pyshark.prelude.reduce", [PyFun(op, 2), TupleV((weak(0), weak(1))), z], node)
    r = run(build, [A(I64), A(I64)], i64a, i64a)
    assert list(r) == [18, 112]


def test_reduce_neutral_of_wrong_type_is_an_error():
    with pytest.raises(CompileError, match="neutral element of ps.reduce must be ps.f32"):
        compile_fn(call("reduce", binfun("add"), ScalarV(__import__("pyshark.core.ir").core.ir.Const(0.0, F64)), P(0)), [A(F32)])


def test_scan_inclusive():
    for xs in (i32a, i32a[:1], i32a[:0]):
        (r,) = run(call("scan", binfun("add"), weak(0), P(0)), [A(I32)], xs)
        eq(r, np.cumsum(xs, dtype=np.int32))


def test_filter_and_partition():
    pos = PyFun(lambda ctx, x: ops.binop(ctx, "gt", x, weak(0), NODE), 1)
    for xs in (i32a, i32a[:1], i32a[:0]):
        (r,) = run(call("filter", pos, P(0)), [A(I32)], xs)
        eq(r, xs[xs > 0])
        yes, no = run(call("partition", pos, P(0)), [A(I32)], xs)
        eq(yes, xs[xs > 0])
        eq(no, xs[~(xs > 0)])


def test_filter_predicate_must_be_bool():
    ident = PyFun(lambda ctx, x: x, 1)
    with pytest.raises(CompileError, match="predicate passed to ps.filter must be bool"):
        compile_fn(call("filter", ident, P(0)), [A(I32)])


# ---------------------------------------------------------------------------
# reduce_by_index / scatter


def test_reduce_by_index_ignores_out_of_range():
    dest = np.zeros(4, np.int64)
    idxs = np.array([0, 3, -1, 4, 3, 1, 100], np.int32)
    vals = np.arange(7, dtype=np.int64)
    (r,) = run(call("reduce_by_index", P(0), binfun("add"), weak(0), P(1), P(2)),
               [A(I64), A(I32), A(I64)], dest, idxs, vals)
    want = dest.copy()
    for i, v in zip(idxs, vals):
        if 0 <= i < 4:
            want[i] += v
    eq(r, want)
    (r,) = run(call("reduce_by_index", P(0), binfun("add"), weak(0), P(1), P(2)),
               [A(I64), A(I32), A(I64)], dest, idxs[:0], vals[:0])
    eq(r, dest)
    with pytest.raises(ShapeError):
        run(call("reduce_by_index", P(0), binfun("add"), weak(0), P(1), P(2)),
            [A(I64), A(I32), A(I64)], dest, idxs, vals[:3])


def test_scatter():
    dest = np.full(3, 9.0, np.float32)
    idxs = np.array([2, -1, 0, 3], np.int64)
    vals = np.array([1, 2, 3, 4], np.float32)
    (r,) = run(call("scatter", P(0), P(1), P(2)), [A(F32), A(I64), A(F32)], dest, idxs, vals)
    eq(r, np.array([3, 9, 1], np.float32))
    with pytest.raises(CompileError, match="destination's element type"):
        compile_fn(call("scatter", P(0), P(1), P(2)), [A(F32), A(I64), A(F64)])


# ---------------------------------------------------------------------------
# all / any / folds / tabulate


def test_all_any():
    pos = PyFun(lambda ctx, x: ops.binop(ctx, "gt", x, weak(0), NODE), 1)
    for xs in (i32a, np.abs(i32a) + 1, i32a[:0]):
        (r,) = run(call("all", pos, P(0)), [A(I32)], xs)
        assert r == np.all(xs > 0)
        (r,) = run(call("any", pos, P(0)), [A(I32)], xs)
        assert r == np.any(xs > 0)


def test_foldl_foldr():
    def step_l(ctx, acc, d):
        return ops.binop(ctx, "add", ops.binop(ctx, "mul", acc, weak(10), NODE), d, NODE)

    def step_r(ctx, d, acc):
        return step_l(ctx, acc, d)
    digits = np.array([1, 2, 3], np.int64)
    for xs, wl, wr in ((digits, 123, 321), (digits[:0], 0, 0), (digits[:1], 1, 1)):
        (r,) = run(call("foldl", PyFun(step_l, 2), weak(0), P(0)), [A(I64)], xs)
        assert r == wl and r.dtype == np.int64
        (r,) = run(call("foldr", PyFun(step_r, 2), weak(0), P(0)), [A(I64)], xs)
        assert r == wr


def test_tabulate_and_tabulate_2d():
    sq = PyFun(lambda ctx, i: ops.binop(ctx, "mul", i, i, NODE), 1)
    for n in (0, 1, 5):
        (r,) = run(call("tabulate", P(0), sq), [SScalar(I64)], n)
        eq(r, np.arange(n) ** 2)
    f = PyFun(lambda ctx, i, j: ops.binop(ctx, "sub", ops.binop(ctx, "mul", i, weak(10), NODE), j, NODE), 2)
    for n, m in ((2, 3), (0, 3), (3, 0)):
        (r,) = run(call("tabulate_2d", P(0), P(1), f), [SScalar(I64), SScalar(I64)], n, m)
        want = np.arange(n)[:, None] * 10 - np.arange(m)[None, :]
        if want.size:
            eq(r, want)
        else:           # like an empty map, an empty outer dimension loses the inner length
            assert r.size == 0 and r.ndim == 2 and r.dtype == np.int64
    with pytest.raises(ShapeError):
        run(call("tabulate_2d", P(0), P(1), f), [SScalar(I64), SScalar(I64)], -1, 2)


def test_function_arity_checked():
    with pytest.raises(CompileError, match="must take 2 arguments, but it takes 1"):
        compile_fn(call("reduce", PyFun(lambda ctx, x: x, 1), weak(0), P(0)), [A(I64)])


def test_map_rejects_scalar_argument():
    with pytest.raises(CompileError, match=r"ps.map expects arrays after the function, but argument 2 is ps.f32"):
        compile_fn(call("map", PyFun(lambda ctx, x: x, 1), P(0)), [SScalar(F32)])
