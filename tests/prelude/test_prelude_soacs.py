"""SOACs: element-by-element semantics, result types, empty results."""
import time

import numpy as np
import pytest

import pyshark.prelude as ps
from pyshark.errors import ShapeError

F32 = np.array([1.5, -2.0, 0.0], dtype=np.float32)
EMPTY_F32 = np.array([], dtype=np.float32)


def double(x: ps.f32) -> ps.f32:
    return x * 2.0


def pair_of(x: ps.i32) -> tuple[ps.i32, ps.Array[ps.f64]]:
    return (x, ps.replicate(3, 1.0))


def test_map_types_and_lengths():
    r = ps.map(lambda x, y: x * y, F32, F32)
    assert r.dtype == np.float32 and r.tolist() == [2.25, 4.0, 0.0]
    with pytest.raises(ShapeError):
        ps.map(lambda x, y: x + y, F32, F32[:2])
    relu = ps.map(lambda x: x if x > 0.0 else 0.0, np.array([-1.0, 2.0], dtype=np.float32))
    assert relu.dtype == np.float32  # first numpy result decides, weak 0.0 converts
    assert ps.map(lambda x: 1, F32).dtype == np.int64
    assert ps.map(lambda x: x > 0.0, F32).dtype == np.bool_
    assert ps.map(lambda x: 0.5, [1, 2]).dtype == np.float64
    assert ps.map(lambda x: x + 1, [1, 2, 3]).tolist() == [2, 3, 4]


def test_map_results_stack_and_irregular_raise():
    m = ps.map(lambda i: ps.map(lambda j: i * j, ps.iota(3)), ps.iota(2))
    assert m.shape == (2, 3) and m.dtype == np.int64 and m[1].tolist() == [0, 1, 2]
    assert ps.map(lambda i: [i, i], ps.iota(2)).tolist() == [[0, 0], [1, 1]]
    with pytest.raises(ShapeError):
        ps.map(lambda n: ps.iota(n), ps.iota(3))
    with pytest.raises(ShapeError):
        ps.map(lambda x: (x, x) if x > 0 else (x,), np.array([1, -1]))


def test_map_empty_result_types():
    # annotation of a named function
    assert ps.map(double, EMPTY_F32).dtype == np.float32
    t = ps.map(pair_of, np.array([], dtype=np.int32))
    assert isinstance(t, ps.TupleArray) and t.fields[0].dtype == np.int32
    # the rows are what pair_of gives the stand-in 0 (docs/language.md, "Empty results")
    assert t.fields[1].shape == (0, 3) and t.fields[1].dtype == np.float64
    # probe on zero values
    assert ps.map(lambda x: 2.0 * x, EMPTY_F32).dtype == np.float32
    assert ps.map(lambda x: x if x > 0.0 else 0.0, EMPTY_F32).dtype == np.float32
    assert ps.map(lambda row: ps.sum(row), np.zeros((0, 4), dtype=np.int16)).dtype == np.int16
    rows = ps.map(lambda row: ps.map(lambda v: v * 2, row), np.zeros((0, 4), dtype=np.int16))
    assert rows.shape == (0, 4) and rows.dtype == np.int16
    # fallback
    xs = np.array([], dtype=np.int64)
    assert ps.map(lambda i: EMPTY_F32[i], xs).dtype == np.float64
    assert ps.map(lambda x: x, []).dtype == np.float64


def test_probe_of_a_loop_that_never_ends_is_bounded():
    def spin(x):
        while True:
            x = x + 1

    start = time.perf_counter()
    r = ps.map(lambda x: spin(x), np.array([], dtype=np.int32))
    assert r.shape == (0,) and time.perf_counter() - start < 10


def test_reduce_and_weak_neutral_element():
    add = lambda a, b: a + b  # noqa: E731
    assert ps.reduce(add, 0.0, EMPTY_F32).dtype == np.float32
    assert ps.reduce(add, 0, np.array([], dtype=np.int8)).dtype == np.int8
    with ps.python_semantics():
        assert ps.reduce(add, 0, np.array([100, 100], dtype=np.int8)) == -56
    assert ps.reduce_comm(add, 0, [1, 2, 3]) == 6
    # non-commutative: left fold order
    assert ps.reduce(lambda a, b: a * 10 + b, 0, np.array([1, 2, 3])) == 123
    t = ps.reduce(lambda a, b: (a[0] + b[0], a[1] + b[1]), (0, 0.0),
                  ps.zip(np.array([1, 2], dtype=np.int32), np.array([0.5, 0.25], dtype=np.float32)))
    assert t == (3, 0.75) and type(t[0]) is np.int32 and type(t[1]) is np.float32
    e = ps.reduce(lambda a, b: a, (0, 0.0), ps.zip(np.array([], dtype=np.int16), EMPTY_F32))
    assert type(e[0]) is np.int16 and type(e[1]) is np.float32


def test_scan_inclusive_and_empty_types():
    s = ps.scan(lambda a, b: a + b, 0, np.array([1, 2, 3], dtype=np.int32))
    assert s.tolist() == [1, 3, 6] and s.dtype == np.int32
    assert ps.scan(lambda a, b: a + b, 0.0, EMPTY_F32).dtype == np.float32
    e = ps.scan(lambda a, b: (a[0] or b[0], a[1] + b[1]), (False, ps.i32(0)),
                ps.zip(np.array([], dtype=bool), np.array([], dtype=np.int32)))
    assert isinstance(e, ps.TupleArray) and e.fields[0].dtype == np.bool_ and e.fields[1].dtype == np.int32
    rows = ps.scan(lambda a, b: ps.map(lambda x, y: x + y, a, b), np.zeros(2), np.ones((3, 2)))
    assert rows.tolist() == [[1, 1], [2, 2], [3, 3]]
    assert ps.scan(lambda a, b: a + b, np.zeros(2), np.ones((0, 2))).shape == (0, 2)


def test_filter_partition_keep_order_and_type():
    xs = np.array([3, -1, 4, -1, 5], dtype=np.int16)
    f = ps.filter(lambda x: x > 0, xs)
    assert f.tolist() == [3, 4, 5] and f.dtype == np.int16
    assert ps.filter(lambda x: x > 10, xs).dtype == np.int16
    yes, no = ps.partition(lambda x: x > 0, xs)
    assert yes.tolist() == [3, 4, 5] and no.tolist() == [-1, -1]
    z = ps.zip(xs, xs * 2)
    fz = ps.filter(lambda p: p[0] < 0, z)
    assert isinstance(fz, ps.TupleArray) and list(fz) == [(-1, -2), (-1, -2)]
    rows = ps.filter(lambda r: r[0] > 1, np.arange(6).reshape(3, 2))
    assert rows.tolist() == [[2, 3], [4, 5]]
    assert ps.filter(lambda x: x % 2 == 0, [1, 2, 3, 4]).tolist() == [2, 4]


def test_reduce_by_index_and_scatter():
    dest = np.array([10, 20, 30], dtype=np.int64)
    r = ps.reduce_by_index(dest, lambda a, b: a + b, 0, np.array([0, 2, 0, 5, -1]), np.array([1, 2, 3, 4, 5]))
    assert r.tolist() == [14, 20, 32] and dest.tolist() == [10, 20, 30]
    with pytest.raises(ShapeError):
        ps.reduce_by_index(dest, lambda a, b: a + b, 0, np.array([0]), np.array([1, 2]))
    s = ps.scatter(dest, np.array([2, -1, 7, 0]), np.array([5, 6, 7, 8]))
    assert s.tolist() == [8, 20, 5] and dest.tolist() == [10, 20, 30]
    with pytest.raises(ShapeError):
        ps.scatter(dest, [0, 1], [1])
    rows = ps.scatter(np.zeros((3, 2), dtype=np.int32), [2, 0], np.array([[1, 2], [3, 4]], dtype=np.int32))
    assert rows.tolist() == [[3, 4], [0, 0], [1, 2]]
    hist = ps.reduce_by_index(np.zeros((2, 2)), lambda a, b: ps.map(lambda x, y: x + y, a, b), np.zeros(2),
                              [1, 1], np.ones((2, 2)))
    assert hist.tolist() == [[0, 0], [2, 2]]
    tup = ps.scatter(ps.zip(np.zeros(2, dtype=np.int32), np.zeros(2)), [1], ps.zip(np.array([5], dtype=np.int32),
                                                                                 np.array([1.5])))
    assert list(tup) == [(0, 0.0), (5, 1.5)]
    bmax = ps.reduce_by_index(ps.replicate(2, ps.lowest(ps.f32)), ps.max, ps.lowest(ps.f32), [0, 0, 1],
                              np.array([1.0, 3.0, -2.0], dtype=np.float32))
    assert bmax.tolist() == [3.0, -2.0] and bmax.dtype == np.float32


def test_all_any_evaluate_every_element():
    xs = np.array([1, 2, 3])
    assert ps.all(lambda x: x > 0, xs) is True and ps.any(lambda x: x > 2, xs) is True
    assert ps.all(lambda x: x > 0, []) is True and ps.any(lambda x: x > 0, []) is False
    with pytest.raises(IndexError):  # no short-circuit: a parallel backend evaluates all
        ps.any(lambda i: xs[i] > 0, np.array([0, 5]))


def test_folds_order():
    digits = np.array([1, 2, 3], dtype=np.int64)
    assert ps.foldl(lambda acc, d: acc * 10 + d, ps.i64(0), digits) == 123
    assert ps.foldr(lambda d, acc: acc * 10 + d, ps.i64(0), digits) == 321
    assert ps.foldl(lambda acc, x: acc, 7, []) == 7 and ps.foldr(lambda x, acc: acc, 7, []) == 7


def test_tabulate():
    t = ps.tabulate(4, lambda i: i * i)
    assert t.tolist() == [0, 1, 4, 9] and t.dtype == np.int64
    seen = []
    ps.tabulate(2, lambda i: seen.append(type(i)) or 0)
    assert seen == [np.int64, np.int64]
    assert ps.tabulate(0, lambda i: ps.f32(i)).dtype == np.float32
    t2 = ps.tabulate_2d(2, 3, lambda i, j: i * 3 + j)
    assert t2.tolist() == [[0, 1, 2], [3, 4, 5]] and t2.dtype == np.int64
    assert ps.tabulate_2d(3, 0, lambda i, j: ps.i32(i)).shape == (3, 0)
    assert ps.tabulate_2d(3, 0, lambda i, j: ps.i32(i)).dtype == np.int32
    tt = ps.tabulate_2d(2, 2, lambda i, j: (i, ps.f32(j)))
    assert isinstance(tt, ps.TupleArray) and tt.rank == 2 and tt[1, 0] == (1, 0.0)


def test_list_neutral_element_of_row_reduction_becomes_array():
    rows = np.ones((0, 2), dtype=np.float32)
    r = ps.reduce(lambda a, b: ps.map(lambda x, y: x + y, a, b), [0.0, 0.0], rows)
    assert isinstance(r, np.ndarray) and r.dtype == np.float32 and r.tolist() == [0.0, 0.0]
    s = ps.scan(lambda a, b: ps.map(lambda x, y: x + y, a, b), [0.0, 0.0], np.ones((2, 2), dtype=np.float32))
    assert s.dtype == np.float32 and s.tolist() == [[1, 1], [2, 2]]


def test_negative_tabulate_sizes_raise():
    with pytest.raises(ShapeError):
        ps.tabulate(-1, lambda i: i)
    with pytest.raises(ShapeError):
        ps.tabulate_2d(2, -1, lambda i, j: i)
