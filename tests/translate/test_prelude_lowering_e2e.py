"""Prelude calls end to end: source -> translate_source -> core interpreter,
compared with Python mode, plus located errors for misuse."""
from __future__ import annotations

import math

import numpy as np
import pytest

from translate_helpers import compile_src, reject, run


def test_argmin_argmax_nan_and_ties_match_numpy():
    src = """
    @ps.entry
    def f(xs: ps.Array[ps.f64]) -> tuple[ps.i64, ps.i64, ps.f64, ps.f64]:
        return (ps.argmin(xs), ps.argmax(xs), ps.minimum(xs), ps.maximum(xs))
    """
    for xs in ([3.0, 1.0, 1.0], [1.0, float("nan"), 0.0, float("nan")], [2.0]):
        a = np.array(xs)
        got = run(src, "f", a)
        assert tuple(got[:2]) == (np.argmin(a), np.argmax(a))
        for g, w in zip(got[2:], (np.min(a), np.max(a))):
            assert (math.isnan(g) and math.isnan(w)) or g == w
    from pyshark.errors import ShapeError
    with pytest.raises(ShapeError):
        run(src, "f", np.zeros(0))


def test_builtin_max_weak_int_with_i64_and_python_nan_order():
    src = """
    @ps.entry
    def f(a: float, b: float, n: int) -> tuple[float, float, int]:
        return (max(a, b), min(a, b), max(n - 1, 0))
    """
    got = run(src, "f", float("nan"), 1.0, 0)
    assert math.isnan(got[0]) and math.isnan(got[1]) and got[2] == 0
    got = run(src, "f", 1.0, float("nan"), 5)
    assert got[0] == 1.0 and got[1] == 1.0 and got[2] == 4


def test_partition_reduce_by_index_with_i32_indices_and_folds():
    src = """
    @ps.entry
    def f(xs: ps.Array[ps.i32], idxs: ps.Array[ps.i32]) -> tuple[ps.Array[ps.i32], ps.Array[ps.i32], ps.Array[ps.i32], ps.i32]:
        small, big = ps.partition(lambda x: x < 3, xs)
        hist = ps.reduce_by_index(ps.replicate(3, ps.i32(0)), lambda a, b: a + b, 0, idxs, xs)
        return (small, big, hist, ps.foldr(lambda x, acc: acc * 2 + x, ps.i32(0), xs))
    """
    xs = np.array([5, 1, 4, 2], np.int32)
    idxs = np.array([0, -1, 2, 3], np.int32)
    small, big, hist, folded = run(src, "f", xs, idxs)
    assert list(small) == [1, 2] and list(big) == [5, 4]
    assert list(hist) == [5, 0, 4]
    acc = 0
    for x in xs[::-1]:
        acc = acc * 2 + int(x)
    assert folded == acc


def test_tabulate_2d_and_unzip_of_records():
    src = """
    class P(NamedTuple):
        x: ps.f32
        k: int

    @ps.entry
    def f(n: int, m: int) -> tuple[ps.Array[ps.Array[ps.i64]], ps.Array[ps.f32], ps.Array[int]]:
        ps_ = ps.map(lambda i: P(x=ps.f32(i) * 0.5, k=i), ps.iota(n))
        xs, ks = ps.unzip(ps_)
        return (ps.tabulate_2d(n, m, lambda i, j: i * m + j), xs, ks)
    """
    t, xs, ks = run(src, "f", 2, 3)
    assert np.array_equal(t, np.arange(6).reshape(2, 3))
    assert list(xs) == [0.0, 0.5] and list(ks) == [0, 1]


def test_errors_are_located_at_the_argument():
    reject("""
    @ps.entry
    def f(x: ps.f32) -> ps.Array[ps.f32]:
        return ps.map(lambda v: v, x)  # <-
    """, contains="ps.map expects arrays after the function, but argument 2 is ps.f32")
    reject("""
    @ps.entry
    def f(xs: ps.Array[ps.f32]) -> ps.f32:
        return ps.reduce(lambda a: a, ps.f32(0.0), xs)  # <-
    """, contains="must take 2 arguments")
    reject("""
    @ps.entry
    def f(x: ps.f32) -> ps.f32:
        return max(x, 0.0)  # <-
    """, contains="ps.f32(0.0)")
    reject("""
    @ps.entry
    def f(xs: ps.Array[ps.f32]) -> ps.f32:
        return ps.reduce(lambda a, b: a + b, ps.f64(0.0), xs)  # <-
    """, contains="neutral element of ps.reduce must be ps.f32")


def test_views_cannot_be_updated_in_place():
    reject("""
    @ps.entry
    def f(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
        ys = ps.tail(ps.copy(xs))
        ys[0] = 1  # <-
        return ys
    """)
    got = run("""
    @ps.entry
    def f(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
        ys = ps.copy(ps.tail(xs))
        ys[0] = 1
        return ys
    """, "f", np.array([5, 6, 7]))
    assert list(got) == [1, 7]


def test_ps_pow_is_numpy_power_and_star_star_is_scalar_power():
    """ps.pow lowers to the IR's `power` (numpy.power: an exponent of 0.5 is
    sqrt), `**` to `pow` (numpy's scalar `**`), as Python mode computes them."""
    src = """
    @ps.entry
    def f(x: ps.f64, y: ps.f64) -> tuple[ps.f64, ps.f64]:
        return (ps.pow(x, y), x ** y)

    @ps.entry
    def g(x: ps.f32) -> tuple[ps.f32, ps.f32]:
        return (ps.pow(x, 0.5), x ** 0.5)
    """
    prog = compile_src(src)
    ops = {s.exp.op for fn in prog.functions.values() for s in fn.body.stms
           if type(s.exp).__name__ == "BinOp"}
    assert {"power", "pow"} <= ops
    p, s = run(src, "f", -np.inf, 0.5)
    assert math.isnan(p) and s == np.inf
    assert (np.isnan(np.power(-np.inf, 0.5)), np.float64(-np.inf) ** 0.5) == (True, np.inf)
    p, s = run(src, "g", np.float32(-0.0))
    assert math.copysign(1.0, p) == -1.0 and math.copysign(1.0, s) == 1.0
    p, s = run(src, "f", 2.0, 10.0)
    assert p == s == 1024.0


def test_int_pow_negative_exponent_raises_value_error():
    src = """
    @ps.entry
    def f(x: ps.i32, y: ps.i32) -> tuple[ps.i32, ps.i32]:
        return (ps.pow(x, y), x ** y)
    """
    assert list(run(src, "f", np.int32(3), np.int32(3))) == [27, 27]
    with pytest.raises(ValueError, match="negative"):
        run(src, "f", np.int32(3), np.int32(-1))
    with pytest.raises(ValueError):
        np.power(np.int32(3), np.int32(-1))      # what Python mode raises
