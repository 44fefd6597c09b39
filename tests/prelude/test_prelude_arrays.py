"""Array functions and math of the prelude."""
import numpy as np
import pytest

import pyshark.prelude as ps
from pyshark.errors import ShapeError

I32 = np.array([1, 2, 3, 4], dtype=np.int32)


def test_iota_replicate():
    assert ps.iota(3).tolist() == [0, 1, 2] and ps.iota(0).dtype == np.int64
    assert ps.replicate(2, ps.f32(1.5)).dtype == np.float32
    assert ps.replicate(0, ps.u8(1)).dtype == np.uint8
    assert ps.replicate(2, 1).dtype == np.int64 and ps.replicate(2, 1.0).dtype == np.float64
    assert ps.replicate(2, True).dtype == np.bool_
    m = ps.replicate(2, ps.replicate(3, ps.f32(0)))
    assert m.shape == (2, 3) and m.dtype == np.float32
    m[0, 0] = 1.0
    assert m[1, 0] == 0.0  # copies, not views
    t = ps.replicate(3, (1, ps.f32(2)))
    assert isinstance(t, ps.TupleArray) and t[2] == (1, 2.0) and t.fields[1].dtype == np.float32
    tt = ps.replicate(2, t)
    assert tt.rank == 2 and tt.shape == (2, 3)
    with pytest.raises(ShapeError):
        ps.iota(-1)
    with pytest.raises(ShapeError):
        ps.replicate(-1, 0)


def test_ends():
    assert ps.head(I32) == 1 and ps.last(I32) == 4 and type(ps.head(I32)) is np.int32
    assert ps.tail(I32).tolist() == [2, 3, 4] and ps.init(I32).tolist() == [1, 2, 3]
    e = I32[:0]
    for fn in (ps.head, ps.last, ps.tail, ps.init):
        with pytest.raises(IndexError):
            fn(e)
        with pytest.raises(IndexError):
            fn([])
    assert ps.length(I32) == 4 and type(ps.length(I32)) is np.int64
    assert ps.tail([7]).shape == (0,)


def test_take_drop_split():
    assert ps.take(2, I32).tolist() == [1, 2] and ps.drop(2, I32).tolist() == [3, 4]
    a, b = ps.split(0, I32)
    assert a.dtype == np.int32 and len(a) == 0 and b.tolist() == [1, 2, 3, 4]
    for n in (-1, 5):
        with pytest.raises(IndexError):
            ps.take(n, I32)
        with pytest.raises(IndexError):
            ps.drop(n, I32)
    t = ps.take(1, ps.zip(I32, I32))
    assert list(t) == [(1, 1)]


def test_reverse_concat_rotate():
    assert ps.reverse(I32).tolist() == [4, 3, 2, 1]
    c = ps.concat(I32, I32[:1], I32[:0])
    assert c.tolist() == [1, 2, 3, 4, 1] and c.dtype == np.int32
    assert ps.concat([], I32).dtype == np.int32
    assert ps.concat([1, 2], [3]).tolist() == [1, 2, 3]
    with pytest.raises(ShapeError):
        ps.concat(np.zeros((2, 2)), np.zeros((1, 3)))
    rows = ps.concat(np.zeros((2, 2)), np.ones((1, 2)))
    assert rows.shape == (3, 2)
    zc = ps.concat(ps.zip(I32[:1], I32[:1]), ps.zip(I32[1:2], I32[1:2]))
    assert list(zc) == [(1, 1), (2, 2)]
    assert ps.rotate(1, I32).tolist() == [2, 3, 4, 1]
    assert ps.rotate(-1, I32).tolist() == [4, 1, 2, 3]
    assert ps.rotate(6, I32).tolist() == [3, 4, 1, 2]
    assert ps.rotate(3, I32[:0]).shape == (0,)
    assert list(ps.rotate(1, ps.zip(I32[:2], I32[:2]))) == [(2, 2), (1, 1)]


def test_transpose_flatten_unflatten():
    m = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert ps.transpose(m).tolist() == [[0, 3], [1, 4], [2, 5]]
    assert ps.flatten(m).tolist() == [0, 1, 2, 3, 4, 5]
    assert ps.unflatten(3, 2, ps.flatten(m)).tolist() == [[0, 1], [2, 3], [4, 5]]
    assert ps.unflatten(3, 0, np.array([], dtype=np.int32)).shape == (3, 0)
    for n, k in ((2, 2), (-1, -6), (-2, -3), (7, 1)):
        with pytest.raises(ShapeError):
            ps.unflatten(n, k, ps.flatten(m))
    assert ps.transpose(np.zeros((0, 3))).shape == (3, 0)
    t = ps.tabulate_2d(2, 3, lambda i, j: (i, j))
    tt = ps.transpose(t)
    assert tt.shape == (3, 2) and tt[2, 1] == (1, 2)
    ft = ps.flatten(t)
    assert ft.rank == 1 and ft[4] == (1, 1)
    assert ps.unflatten(2, 3, ft) == t
    assert ps.transpose(np.zeros((2, 3, 4))).shape == (3, 2, 4)


def test_copy_update_are_functional():
    c = ps.copy(I32)
    c[0] = 99
    assert I32[0] == 1
    u = ps.update(I32, -1, ps.i32(9))
    assert u.tolist() == [1, 2, 3, 9] and I32.tolist() == [1, 2, 3, 4]
    with pytest.raises(IndexError):
        ps.update(I32, 4, ps.i32(0))
    with pytest.raises(IndexError):
        ps.update(I32, -5, ps.i32(0))
    with pytest.raises(IndexError):
        ps.update([], 0, 0)
    z = ps.zip(I32, I32)
    uz = ps.update(z, 0, (ps.i32(0), ps.i32(0)))
    assert uz[0] == (0, 0) and z[0] == (1, 1)
    assert ps.copy(ps.i32(3)) == 3 and ps.copy((1, 2)) == (1, 2)


def test_array_from_lists():
    assert ps.array([[1, 2], [3, 4]]).shape == (2, 2)
    assert ps.array([ps.f32(1), 2.0]).dtype == np.float32
    assert ps.array([1, 2.5]).dtype == np.float64
    with pytest.raises(ShapeError):
        ps.array([[1, 2], [3]])
    with pytest.raises(ShapeError):
        ps.array([[1, 2], 3])
    t = ps.array([(1, 2.0), (3, 4.0)])
    assert isinstance(t, ps.TupleArray) and t[1] == (3, 4.0)
    assert ps.array([]).shape == (0,) and ps.array([[], []]).shape == (2, 0)
    a = ps.array(I32)
    a[0] = 5
    assert I32[0] == 1


def test_zip_unzip_errors():
    with pytest.raises(ShapeError):
        ps.zip(I32, I32[:2])
    with pytest.raises(TypeError):
        ps.unzip(I32)
    a, b, c = ps.unzip(ps.zip(I32, [1.0, 2.0, 3.0, 4.0], I32 > 2))
    assert b.dtype == np.float64 and c.dtype == np.bool_


def test_sum_product_wrap_and_empty():
    i8 = np.array([100, 100], dtype=np.int8)
    assert ps.sum(i8) == -56 and type(ps.sum(i8)) is np.int8
    assert ps.product(np.array([65536, 65536, 3], dtype=np.int32)) == 0
    assert ps.sum(I32[:0]) == 0 and type(ps.sum(I32[:0])) is np.int32
    assert ps.product(I32[:0]) == 1 and type(ps.product(I32[:0])) is np.int32
    assert type(ps.sum(np.array([0.5], dtype=np.float32))) is np.float32
    assert ps.sum([1, 2]) == 3
    assert ps.sum(np.ones((2, 3))).tolist() == [2.0, 2.0, 2.0]


def test_min_max_arg():
    xs = np.array([3, -1, 4, -1, 5], dtype=np.int32)
    assert ps.minimum(xs) == -1 and ps.maximum(xs) == 5 and type(ps.minimum(xs)) is np.int32
    assert ps.argmin(xs) == 1 and ps.argmax(xs) == 4 and type(ps.argmin(xs)) is np.int64
    assert ps.argmax(np.array([2.0, 1.0, 2.0])) == 0
    f = np.array([1.0, np.nan, -1.0], dtype=np.float32)
    assert np.isnan(ps.minimum(f)) and np.isnan(ps.maximum(f))
    for fn in (ps.minimum, ps.maximum, ps.argmin, ps.argmax):
        with pytest.raises(ShapeError):
            fn(xs[:0])


def test_math_keeps_types():
    x32, x64 = ps.f32(2.0), ps.f64(2.0)
    for fn in (ps.sqrt, ps.exp, ps.log, ps.log2, ps.log10, ps.sin, ps.cos, ps.tan, ps.atan, ps.sinh,
               ps.cosh, ps.tanh, ps.floor, ps.ceil, ps.round, ps.trunc, ps.abs, ps.sign):
        assert type(fn(x32)) is np.float32, fn.__name__
        assert type(fn(x64)) is np.float64, fn.__name__
        assert type(fn(2.0)) is np.float64, fn.__name__
    for fn in (ps.asin, ps.acos):
        assert type(fn(ps.f32(0.5))) is np.float32
    assert type(ps.atan2(x32, 1.0)) is np.float32 and type(ps.pow(x32, 2.0)) is np.float32
    assert type(ps.min(x32, 0.0)) is np.float32 and type(ps.max(1.0, x32)) is np.float32
    assert ps.pow(x32, ps.f32(10.0)) == 1024.0
    assert ps.sqrt is not np.sqrt
    assert ps.isnan(ps.nan) and ps.isinf(-ps.inf) and not ps.isnan(x32)


def test_math_edge_semantics():
    with ps.python_semantics():
        assert ps.abs(ps.i16(-32768)) == -32768 and type(ps.abs(ps.i16(-5))) is np.int16
    assert [ps.round(v) for v in (0.5, 1.5, 2.5, -0.5, -1.5)] == [0.0, 2.0, 2.0, -0.0, -2.0]
    assert ps.round(ps.f32(2.5)) == 2.0 and ps.trunc(-2.7) == -2.0
    assert np.isnan(ps.min(ps.nan, 1.0)) and np.isnan(ps.max(1.0, ps.nan))
    assert ps.min(3, 1, 2) == 1 and ps.max(3, 1, 2) == 3
    assert ps.sign(ps.i32(-4)) == -1 and ps.sign(0.0) == 0.0
