"""Array expressions, SOACs, control flow and errors in the core interpreter."""
import numpy as np
import pytest

from coreir_build import (BOOL, F32, F64, I32, I64, U8, B, Ctx, c, arr, fun, ir, prog,
                          run, run1)
from pyshark.core.check import check_program
from pyshark.core.interp import run_entry, run_function
from pyshark.core.types import SArray, SRecord, SScalar, STuple
from pyshark.errors import InternalCompilerError, ShapeError

A64 = arr(I64)
M64 = arr(I64, 2)


def same(got, want):
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert np.array_equal(got, want)


def ai(*xs, dt=np.int64):
    return np.array(xs, dtype=dt)


# -- indexing -----------------------------------------------------------------

def index(xs, *idxs, wrap=True):
    t = arr(I64, xs.ndim)
    return run1([t] + [I64] * len(idxs),
                lambda b, a, *i: b.let(ir.Index(a, tuple(i), wrap)), xs, *idxs)


def test_index_scalar_and_rows():
    xs = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    assert index(xs, 1, 2, 3) == 23 and type(index(xs, 1, 2, 3)) is np.int64
    same(index(xs, 1), xs[1])
    same(index(xs, -1, 0), xs[-1, 0])
    assert index(ai(5, 6, 7), -3) == 5


def test_index_errors():
    with pytest.raises(IndexError, match=r"index 3 out of range for length 3 \(at prog.py:7:5\)"):
        index(ai(1, 2, 3), 3)
    with pytest.raises(IndexError, match="index -4"):
        index(ai(1, 2, 3), -4)
    with pytest.raises(IndexError, match="index -1"):
        index(ai(1, 2, 3), -1, wrap=False)
    with pytest.raises(IndexError, match="dimension 1"):
        index(np.zeros((2, 2), np.int64), 0, 2)
    with pytest.raises(IndexError):
        index(np.zeros((0,), np.int64), 0)


def slice_(xs, dims):
    """dims: list of int or (start, stop, step) with None."""
    t = arr(I64, xs.ndim)

    def f(b, a):
        ds = []
        for d in dims:
            if isinstance(d, tuple):
                ds.append(ir.SliceDim(*[None if v is None else c(v) for v in d]))
            else:
                ds.append(c(d))
        return b.let(ir.Slice(a, tuple(ds)))
    return run1([t], f, xs)


def test_slice_python_semantics():
    xs = np.arange(10, dtype=np.int64)
    for s in [(2, 5, None), (None, None, -1), (-3, None, None), (-100, 100, 2), (8, 2, -2),
              (5, 2, None), (None, None, 3)]:
        same(slice_(xs, [s]), xs[slice(*s)])
    m = np.arange(12, dtype=np.int64).reshape(3, 4)
    same(slice_(m, [(None, None, None), 1]), m[:, 1])
    same(slice_(m, [-1]), m[-1])
    same(slice_(m, [(1, None, None)]), m[1:])
    assert slice_(m, [2, -1]) == m[2, -1]
    with pytest.raises(ValueError, match="step cannot be zero") as err:
        slice_(xs, [(None, None, 0)])
    assert type(err.value) is ValueError        # Python's own class, not ShapeError
    with pytest.raises(ValueError):
        xs[::0]                                  # what Python mode raises
    with pytest.raises(IndexError):
        slice_(m, [(None, None, None), 4])


def test_update_scalar_row_and_errors():
    def f(b, xs, v):
        ys = b.let(ir.Copy(xs))
        return b.let(ir.Update(ys, (c(-1),), v))
    xs = ai(1, 2, 3)
    same(run1([A64, I64], f, xs, 9), ai(1, 2, 9))
    same(xs, ai(1, 2, 3))                      # the input is untouched

    def g(b, xss, row):
        ys = b.let(ir.Copy(xss))
        return b.let(ir.Update(ys, (c(1),), row))
    m = np.zeros((2, 3), np.int64)
    same(run1([M64, A64], g, m, ai(7, 8, 9)), [[0, 0, 0], [7, 8, 9]])
    with pytest.raises(ShapeError, match="shape"):
        run1([M64, A64], g, m, ai(7, 8))
    with pytest.raises(IndexError, match="out of range"):
        run1([A64, I64], f, np.zeros(0, np.int64), 1)


def test_size_iota_replicate_copy():
    m = np.zeros((2, 5), np.int64)
    assert run(([M64]), lambda b, a: (b.size(a, 0), b.size(a, 1)), m) == [2, 5]
    for n in (0, -3, 1, 5):
        same(run1([I64], lambda b, n: b.let(ir.Iota(n)), n), np.arange(max(n, 0)))
    same(run1([I64, F32], lambda b, n, v: b.let(ir.Replicate(n, v)), 3, 1.5),
         np.full(3, 1.5, np.float32))
    same(run1([I64, A64], lambda b, n, v: b.let(ir.Replicate(n, v)), 2, ai(1, 2)),
         [[1, 2], [1, 2]])
    same(run1([I64, A64], lambda b, n, v: b.let(ir.Replicate(n, v)), 0, ai(1, 2)),
         np.zeros((0, 2), np.int64))
    same(run1([I64, BOOL], lambda b, n, v: b.let(ir.Replicate(n, v)), -1, True),
         np.zeros(0, bool))


def test_arraylit():
    same(run1([I32, I32], lambda b, x, y: b.let(ir.ArrayLit((x, y, x), arr(I32))), 1, 2),
         ai(1, 2, 1, dt=np.int32))
    same(run1([], lambda b: b.let(ir.ArrayLit((), arr(F64, 2)))), np.zeros((0, 0)))
    same(run1([A64, A64], lambda b, x, y: b.let(ir.ArrayLit((x, y), M64)), ai(1, 2), ai(3, 4)),
         [[1, 2], [3, 4]])
    with pytest.raises(ShapeError, match="irregular"):
        run1([A64, A64], lambda b, x, y: b.let(ir.ArrayLit((x, y), M64)), ai(1, 2), ai(3))


def test_concat_rotate_transpose_reshape():
    cat = lambda b, x, y: b.let(ir.Concat((x, y)))
    same(run1([A64, A64], cat, ai(1), ai(2, 3)), ai(1, 2, 3))
    same(run1([A64, A64], cat, ai(), ai()), ai())
    same(run1([M64, M64], cat, np.zeros((0, 0), np.int64), np.ones((1, 2), np.int64)),
         np.ones((1, 2), np.int64))
    with pytest.raises(ShapeError, match="concat"):
        run1([M64, M64], cat, np.zeros((1, 3), np.int64), np.ones((1, 2), np.int64))
    rot = lambda b, r, x: b.let(ir.Rotate(r, x))
    xs = ai(0, 1, 2, 3, 4)
    for r in (0, 1, 2, -1, 7, -12):
        same(run1([I64, A64], rot, r, xs), np.roll(xs, -r))
    same(run1([I64, A64], rot, 3, ai()), ai())
    m3 = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    same(run1([arr(I64, 3)], lambda b, x: b.let(ir.Transpose(x)), m3), m3.transpose(1, 0, 2))
    rs = lambda b, x, n, m: b.let(ir.Reshape((n, m), x))
    same(run1([A64, I64, I64], rs, np.arange(6), 2, 3), np.arange(6).reshape(2, 3))
    with pytest.raises(ShapeError, match="reshape"):
        run1([A64, I64, I64], rs, np.arange(6), 4, 2)
    with pytest.raises(ShapeError):
        run1([A64, I64, I64], rs, np.arange(0), -1, 0)


# -- SOACs ----------------------------------------------------------------------

def test_map_one_two_inputs_two_outputs():
    def f(b, xs, ys):
        lam = b.lam([I64, I64], lambda s, x, y: (s.bin("add", x, y), s.bin("lt", x, y)))
        return b.let(ir.Map(b.size(xs), lam, (xs, ys)))
    s, l = run([A64, A64], f, ai(1, 5), ai(3, 4))
    same(s, ai(4, 9))
    same(l, np.array([True, False]))
    s, l = run([A64, A64], f, ai(), ai())
    same(s, ai())
    same(l, np.zeros(0, bool))
    with pytest.raises(ShapeError, match="map"):
        run([A64, A64], f, ai(1, 2), ai(1))


def test_map_returning_arrays_and_empty_rank():
    def f(b, xs):
        lam = b.lam([I64], lambda s, x: s.let(ir.Iota(c(3))))
        return b.let(ir.Map(b.size(xs), lam, (xs,)))
    same(run1([A64], f, ai(5, 6)), [[0, 1, 2], [0, 1, 2]])
    same(run1([A64], f, ai()), np.zeros((0, 0), np.int64))

    def g(b, xs):                                   # irregular rows
        lam = b.lam([I64], lambda s, x: s.let(ir.Iota(x)))
        return b.let(ir.Map(b.size(xs), lam, (xs,)))
    with pytest.raises(ShapeError, match="irregular"):
        run1([A64], g, ai(1, 2))


def test_map_without_arrays_uses_width():
    def f(b, n):
        return b.let(ir.Map(n, b.lam([], lambda s: c(7, I32)), ()))
    same(run1([I64], f, 3), ai(7, 7, 7, dt=np.int32))


def test_map_rank3_and_free_variables():
    def f(b, xsss, k):
        def inner(s, xs):                         # xs: []i64, k is free
            return s.let(ir.Map(s.size(xs), s.lam([I64], lambda t, x: t.bin("mul", x, k)), (xs,)))
        def mid(s, xss):
            return s.let(ir.Map(s.size(xss), s.lam([A64], inner), (xss,)))
        return b.let(ir.Map(b.size(xsss), b.lam([M64], mid), (xsss,)))
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    same(run1([arr(I64, 3), I64], f, x, 3), x * 3)


def sum_lam(b, t=I64):
    return b.lam([t, t], lambda s, a, x: s.bin("add", a, x))


def test_reduce_sum_empty_one_and_order():
    def f(b, xs):
        return b.let(ir.Reduce(b.size(xs), sum_lam(b), (c(10),), (xs,)))
    assert run1([A64], f, ai(1, 2, 3)) == 16
    assert run1([A64], f, ai()) == 10
    assert run1([A64], f, ai(5)) == 15

    def g(b, xs):                                  # a*10 + x: shows left-to-right order
        lam = b.lam([I64, I64], lambda s, a, x: s.bin("add", s.bin("mul", a, c(10)), x))
        return b.let(ir.Reduce(b.size(xs), lam, (c(0),), (xs,)))
    assert run1([A64], g, ai(1, 2, 3)) == 123


def test_reduce_two_accumulators_argmax():
    def f(b, xs):
        idx = b.let(ir.Iota(b.size(xs)))

        def op(s, bv, bi, v, i):
            better = s.bin("gt", v, bv)
            return (s.let(ir.Select(better, v, bv)), s.let(ir.Select(better, i, bi)))
        lam = b.lam([F32, I64, F32, I64], op)
        return b.let(ir.Reduce(b.size(xs), lam, (c(-np.inf, F32), c(-1)), (xs, idx)))
    v, i = run([arr(F32)], f, np.array([1, 5, 2, 5], np.float32))
    assert v == np.float32(5) and i == 1 and type(v) is np.float32


def test_nested_map_of_reduce_row_sums():
    def f(b, xss):
        def row(s, xs):
            return s.let(ir.Reduce(s.size(xs), sum_lam(s, F64), (c(0.0, F64),), (xs,)))
        return b.let(ir.Map(b.size(xss), b.lam([arr(F64)], row), (xss,)))
    m = np.arange(12, dtype=np.float64).reshape(3, 4)
    same(run1([arr(F64, 2)], f, m), m.sum(axis=1))
    same(run1([arr(F64, 2)], f, np.zeros((0, 4))), np.zeros(0))
    same(run1([arr(F64, 2)], f, np.zeros((2, 0))), np.zeros(2))


def test_reduce_of_rows():
    def f(b, xss):
        vadd = b.lam([A64, A64], lambda s, a, x: s.let(
            ir.Map(s.size(a), s.lam([I64, I64], lambda t, p, q: t.bin("add", p, q)), (a, x))))
        zero = b.let(ir.Replicate(b.size(xss, 1), c(0)))
        return b.let(ir.Reduce(b.size(xss), vadd, (zero,), (xss,)))
    m = np.arange(6, dtype=np.int64).reshape(3, 2)
    same(run1([M64], f, m), m.sum(axis=0))


def test_scan_inclusive():
    def f(b, xs):
        return b.let(ir.Scan(b.size(xs), sum_lam(b), (c(0),), (xs,)))
    same(run1([A64], f, ai(1, 2, 3, 4)), ai(1, 3, 6, 10))
    same(run1([A64], f, ai()), ai())
    same(run1([A64], f, ai(7)), ai(7))


def test_filter():
    def f(b, xs, ys):
        lam = b.lam([I64, F32], lambda s, x, y: s.bin("gt", x, c(1)))
        return b.let(ir.Filter(b.size(xs), lam, (xs, ys)))
    a, f32s = run([A64, arr(F32)], f, ai(3, 1, 2), np.array([.5, 1.5, 2.5], np.float32))
    same(a, ai(3, 2))
    same(f32s, np.array([.5, 2.5], np.float32))
    a, _ = run([A64, arr(F32)], f, ai(0, 1), np.zeros(2, np.float32))
    same(a, ai())
    a, _ = run([A64, arr(F32)], f, ai(), np.zeros(0, np.float32))
    same(a, ai())


def test_reduce_by_index():
    def f(b, dest, idxs, vals):
        return b.let(ir.ReduceByIndex(b.size(idxs), (dest,), sum_lam(b), (c(0),), idxs, (vals,)))
    dest = ai(100, 200, 300)
    same(run1([A64, A64, A64], f, dest, ai(0, 2, 2, -1, 3, 7, 0), ai(1, 2, 3, 4, 5, 6, 7)),
         ai(108, 200, 305))
    same(dest, ai(100, 200, 300))
    same(run1([A64, A64, A64], f, dest, ai(), ai()), dest)
    with pytest.raises(ShapeError):
        run1([A64, A64, A64], f, dest, ai(1, 2), ai(1))


def test_reduce_by_index_2d_rows():
    def f(b, dest, idxs, vals):
        vadd = b.lam([A64, A64], lambda s, a, x: s.let(
            ir.Map(s.size(a), s.lam([I64, I64], lambda t, p, q: t.bin("add", p, q)), (a, x))))
        zero = b.let(ir.Replicate(b.size(dest, 1), c(0)))
        return b.let(ir.ReduceByIndex(b.size(idxs), (dest,), vadd, (zero,), idxs, (vals,)))
    dest = np.zeros((2, 2), np.int64)
    vals = np.array([[1, 2], [3, 4], [5, 6]], np.int64)
    same(run1([M64, arr(U8), M64], f, dest, np.array([1, 1, 9], np.uint8), vals),
         [[0, 0], [4, 6]])


def test_scatter():
    def f(b, dest, idxs, vals):
        return b.let(ir.Scatter(b.size(idxs), (dest,), idxs, (vals,)))
    dest = ai(0, 0, 0)
    same(run1([A64, A64, A64], f, dest, ai(2, -1, 5, 0), ai(7, 8, 9, 10)), ai(10, 0, 7))
    same(dest, ai(0, 0, 0))
    same(run1([A64, A64, A64], f, dest, ai(), ai()), dest)


# -- control flow ------------------------------------------------------------------

def test_if_and_call():
    sq = fun("sq", [I64], lambda b, x: b.bin("mul", x, x))

    def f(b, x):
        cond = b.bin("gt", x, c(0))
        then = b.block(lambda s: s.let(ir.Call("sq", (x,), (I64,))))
        els = b.block(lambda s: s.un("neg", x))
        return b.let(ir.If(cond, then, els, (I64,)))
    assert run1([I64], f, 5, extra=(sq,)) == 25
    assert run1([I64], f, -5, extra=(sq,)) == 5


def test_for_loop_carried_sum_and_zero_iterations():
    def f(b, n):
        ctx = b.ctx
        acc, i = ctx.fresh("acc", I64), ctx.fresh("i", I64)
        body = b.block(lambda s: s.bin("add", acc, i))
        return b.let(ir.Loop((acc,), (c(0),), ir.ForLoop(i, n), body))
    assert run1([I64], f, 5) == 10
    assert run1([I64], f, 0) == 0
    assert run1([I64], f, -2) == 0


def test_while_loop_collatz_two_carried():
    def f(b, x0):
        ctx = b.ctx
        x, steps = ctx.fresh("x", I64), ctx.fresh("steps", I64)
        cond = b.block(lambda s: s.bin("ne", x, c(1)))

        def step(s):
            even = s.bin("eq", s.bin("mod", x, c(2)), c(0))
            half = s.bin("floordiv", x, c(2))
            odd = s.bin("add", s.bin("mul", x, c(3)), c(1))
            return (s.let(ir.Select(even, half, odd)), s.bin("add", steps, c(1)))
        r = b.let(ir.Loop((x, steps), (x0, c(0)), ir.WhileLoop(cond), b.block(step)))
        return r
    assert run([I64], f, 6) == [1, 8]
    assert run([I64], f, 1) == [1, 0]


def update_loop(b, xs, n):
    """for i < n: ys[i % len] = ys[i % len] + i, on a copy of xs."""
    ctx = b.ctx
    ys0 = b.let(ir.Copy(xs))
    ys, i = ctx.fresh("ys", A64), ctx.fresh("i", I64)

    def body(s):
        j = s.bin("mod", i, s.size(ys))
        old = s.let(ir.Index(ys, (j,)))
        return s.let(ir.Update(ys, (j,), s.bin("add", old, i)))
    return b.let(ir.Loop((ys,), (ys0,), ir.ForLoop(i, n), b.block(body)))


def test_loop_with_in_place_updates():
    xs = ai(0, 0, 0)
    same(run1([A64, I64], update_loop, xs, 5), ai(0 + 3, 1 + 4, 2))
    same(xs, ai(0, 0, 0))


def test_loop_of_updates_copies_only_once(monkeypatch):
    from pyshark.core import interp
    copies = []
    real = interp._refcount_after_pop

    def spy(env, name):
        a, rc = real(env, name)
        copies.append(not (a.base is None and rc <= interp._SOLE))
        return a, rc
    monkeypatch.setattr(interp, "_refcount_after_pop", spy)
    xs = np.zeros(1000, np.int64)
    r = run1([A64, I64], update_loop, xs, 50)
    assert r[49] == 49 and xs.sum() == 0
    assert len(copies) == 50 and sum(copies) == 1   # only the first (ys0 stays bound)


def test_update_of_parameter_never_mutates_caller_array():
    def f(b, xs):                                   # not valid per the checker: run directly
        return b.let(ir.Update(xs, (c(0),), c(42)))
    xs = ai(1, 2)
    (r,) = run_function(prog(fun("f", [A64], f)), "f", [xs])
    same(r, ai(42, 2))
    same(xs, ai(1, 2))


def test_update_in_if_branch():
    def f(b, xs, cnd):
        ys = b.let(ir.Copy(xs))
        then = b.block(lambda s: s.let(ir.Update(ys, (c(0),), c(9))))
        els = b.block(lambda s: ys)
        return b.let(ir.If(cnd, then, els, (A64,)))
    same(run1([A64, BOOL], f, ai(1, 2), True), ai(9, 2))
    same(run1([A64, BOOL], f, ai(1, 2), False), ai(1, 2))


def test_aliased_update_copies():
    # ys = xs_copy; zs = ys with [0] = 5; return (ys_alias, zs) -- breaks uniqueness on
    # purpose (no checker): the interpreter must still not let zs's update show through.
    def f(b, xs):
        ys = b.let(ir.Copy(xs))
        alias = b.let(ir.AtomExp(ys))
        zs = b.let(ir.Update(alias, (c(0),), c(5)))
        return (b.let(ir.Index(ys, (c(0),))), zs)
    y0, zs = run_function(prog(fun("f", [A64], f)), "f", [ai(1, 2)])
    assert y0 == 1
    same(zs, ai(5, 2))


# -- errors -------------------------------------------------------------------------

@pytest.mark.parametrize("kind,cls", [("AssertionError", AssertionError),
                                      ("IndexError", IndexError),
                                      ("ZeroDivisionError", ZeroDivisionError),
                                      ("ShapeError", ShapeError),
                                      ("ValueError", ValueError)])
def test_assert_raises_named_class(kind, cls):
    def f(b, x):
        b.let(ir.Assert(b.bin("gt", x, c(0)), "x must be positive", kind))
        return x
    assert run1([I64], f, 1) == 1
    with pytest.raises(cls, match=r"x must be positive \(at prog.py:7:5\)") as err:
        run1([I64], f, 0)
    assert type(err.value) is cls


def test_use_of_consumed_name_is_internal_error():
    def f(b, xs):
        ys = b.let(ir.Copy(xs))
        b.let(ir.Update(ys, (c(0),), c(1)))
        return b.let(ir.Index(ys, (c(0),)))
    with pytest.raises(InternalCompilerError, match="not bound"):
        run_function(prog(fun("f", [A64], f)), "f", [ai(1)])


# -- entries -------------------------------------------------------------------------

def test_run_entry_flat_args():
    pair = STuple((SArray(SScalar(I64)), SScalar(F32)))

    def f(b, xs, w):
        s = b.let(ir.Reduce(b.size(xs), sum_lam(b), (c(0),), (xs,)))
        return (s, w)
    fd = fun("e", [A64, F32], f)
    p = prog(fd, entries=(ir.Entry("e", (ir.EntryParam("p", pair),),
                                   STuple((SScalar(I64), SScalar(F32)))),))
    check_program(p)
    s, w = run_entry(p, "e", [[1, 2, 3], 2.5])
    assert s == 6 and type(s) is np.int64 and type(w) is np.float32
    with pytest.raises(TypeError, match="rank"):
        run_entry(p, "e", [np.zeros((2, 2)), 1.0])
