"""Property tests: integer semantics per type, and SOACs against plain numpy."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pyshark.prelude as ps
from pyshark.errors import ShapeError

INT_TYPES = [ps.i8, ps.i16, ps.i32, ps.i64, ps.u8, ps.u16, ps.u32, ps.u64]
FEW = settings(max_examples=50, deadline=None)


def bits(t):
    return np.dtype(t).itemsize * 8


def wrap(v, t):
    """Python int v reduced to type t (two's complement)."""
    b = bits(t)
    v %= 1 << b
    if np.issubdtype(t, np.signedinteger) and v >= 1 << (b - 1):
        v -= 1 << b
    return v


def ints_of(t):
    info = np.iinfo(t)
    return st.integers(int(info.min), int(info.max))


def pair_of(t):
    return st.tuples(st.just(t), ints_of(t), ints_of(t))


any_int_pair = st.sampled_from(INT_TYPES).flatmap(pair_of)


@FEW
@given(any_int_pair)
def test_add_sub_mul_wrap(tab):
    t, a, b = tab
    with ps.python_semantics():
        x, y = t(a), t(b)
        assert int(x + y) == wrap(a + b, t) and type(x + y) is t
        assert int(x - y) == wrap(a - b, t)
        assert int(x * y) == wrap(a * b, t)
        if np.issubdtype(t, np.signedinteger):
            assert int(-x) == wrap(-a, t)
            assert int(abs(x)) == wrap(abs(a), t) and int(ps.abs(x)) == wrap(abs(a), t)


@FEW
@given(any_int_pair)
def test_floor_div_mod_follow_python(tab):
    t, a, b = tab
    assume(b != 0)
    # INT_MIN // -1 is left open by the language
    assume(not (np.issubdtype(t, np.signedinteger) and a == np.iinfo(t).min and b == -1))
    with ps.python_semantics():
        x, y = t(a), t(b)
        assert int(x // y) == a // b and type(x // y) is t
        assert int(x % y) == a % b


@FEW
@given(any_int_pair)
def test_div_mod_by_zero_raise_in_entry(tab):
    t, a, _ = tab

    @ps.entry
    def div(x, y):
        return x // y

    @ps.entry
    def mod(x, y):
        return x % y

    with pytest.raises(ZeroDivisionError):
        div(t(a), t(0))
    with pytest.raises(ZeroDivisionError):
        mod(t(a), t(0))


@FEW
@given(st.sampled_from(INT_TYPES), st.sampled_from(INT_TYPES), st.data())
def test_int_conversions_wrap(src, dst, data):
    v = data.draw(ints_of(src))
    with ps.python_semantics():
        assert int(dst(src(v))) == wrap(v, dst)


@FEW
@given(st.floats(-2.0e9, 2.0e9, allow_nan=False), st.sampled_from([ps.i32, ps.i64]))
def test_float_to_int_truncates(x, t):
    assert int(t(ps.f64(x))) == math.trunc(x)


@FEW
@given(st.integers(-10**6, 10**6), st.sampled_from([ps.f32, ps.f64]))
def test_round_half_to_even(k, t):
    x = t(k) + t(0.5)
    r = ps.round(x)
    assert type(r) is t
    want = k if k % 2 == 0 else k + 1
    assert r == want
    assert ps.floor(x) == k and ps.ceil(x) == k + 1 and ps.trunc(x) == (k if k >= 0 else k + 1)


@FEW
@given(st.floats(-1e6, 1e6, allow_nan=False))
def test_round_matches_python(x):
    assert ps.round(x) == round(x)


# --- SOACs against numpy ---------------------------------------------------------------------------
dtypes = st.sampled_from([np.int8, np.int32, np.int64, np.uint16, np.float32, np.float64])


@st.composite
def arrays(draw, dtype=None, min_size=0, max_size=20):
    dt = np.dtype(draw(dtypes) if dtype is None else dtype)
    n = draw(st.integers(min_size, max_size))
    if dt.kind == "f":
        elems = st.floats(-1e3, 1e3, allow_nan=False, width=dt.itemsize * 8)
    else:
        info = np.iinfo(dt)
        elems = st.integers(int(info.min), int(info.max))
    return np.array(draw(st.lists(elems, min_size=n, max_size=n)), dtype=dt)


@FEW
@given(arrays())
def test_map_matches_numpy(xs):
    with ps.python_semantics():
        got = ps.map(lambda x: x * 2 + 1, xs)
        with np.errstate(all="ignore"):
            want = xs * 2 + 1
    assert got.dtype == xs.dtype and got.shape == xs.shape
    assert np.array_equal(got, want)


@FEW
@given(arrays())
def test_reduce_sum_matches_numpy(xs):
    with ps.python_semantics():
        got = ps.reduce(lambda a, b: a + b, 0, xs)
    want = np.sum(xs, dtype=xs.dtype)
    assert type(got) is xs.dtype.type
    if xs.dtype.kind == "f":
        assert np.isclose(got, want, rtol=1e-4, atol=1e-2)
    else:
        assert got == want == ps.sum(xs)


@FEW
@given(arrays())
def test_scan_matches_cumsum(xs):
    with ps.python_semantics():
        got = ps.scan(lambda a, b: a + b, 0, xs)
    assert got.dtype == xs.dtype and got.shape == xs.shape
    want = np.cumsum(xs, dtype=xs.dtype)
    if xs.dtype.kind == "f":
        assert np.allclose(got, want, rtol=1e-4, atol=1e-2)
    else:
        assert np.array_equal(got, want)


@FEW
@given(arrays())
def test_scan_max_is_running_max(xs):
    with ps.python_semantics():
        got = ps.scan(ps.max, ps.lowest(xs.dtype.type), xs)
    assert np.array_equal(got, np.maximum.accumulate(xs)) and got.dtype == xs.dtype


@FEW
@given(arrays())
def test_filter_partition_match_masks(xs):
    mask = xs > 0
    f = ps.filter(lambda x: x > 0, xs)
    assert f.dtype == xs.dtype and np.array_equal(f, xs[mask])
    yes, no = ps.partition(lambda x: x > 0, xs)
    assert np.array_equal(yes, xs[mask]) and np.array_equal(no, xs[~mask])


@FEW
@given(st.integers(0, 8), st.data())
def test_reduce_by_index_matches_add_at(m, data):
    n = data.draw(st.integers(0, 20))
    idxs = np.array(data.draw(st.lists(st.integers(-3, m + 3), min_size=n, max_size=n)), dtype=np.int64)
    vals = np.array(data.draw(st.lists(st.integers(-100, 100), min_size=n, max_size=n)), dtype=np.int32)
    dest = np.array(data.draw(st.lists(st.integers(-5, 5), min_size=m, max_size=m)), dtype=np.int32)
    got = ps.reduce_by_index(dest, lambda a, b: a + b, ps.i32(0), idxs, vals)
    keep = (idxs >= 0) & (idxs < m)
    want = dest.copy()
    np.add.at(want, idxs[keep], vals[keep])
    assert got.dtype == np.int32 and np.array_equal(got, want)


@FEW
@given(st.integers(0, 8), st.data())
def test_scatter_matches_assignment(m, data):
    idxs = data.draw(st.lists(st.integers(-3, m + 3), unique=True, max_size=12))
    vals = np.arange(len(idxs), dtype=np.float32) + 0.5
    dest = np.zeros(m, dtype=np.float32)
    got = ps.scatter(dest, np.array(idxs, dtype=np.int64), vals)
    want = dest.copy()
    for i, v in zip(idxs, vals):
        if 0 <= i < m:
            want[i] = v
    assert got.dtype == np.float32 and np.array_equal(got, want) and not dest.any()


@FEW
@given(arrays(), st.integers(-50, 50))
def test_rotate_is_roll(xs, r):
    got = ps.rotate(r, xs)
    assert np.array_equal(got, np.roll(xs, -r)) and got.dtype == xs.dtype
    n = len(xs)
    for i in range(n):
        assert got[i] == xs[(i + r) % n]


@FEW
@given(arrays(dtype=np.int16), arrays(dtype=np.int16), arrays(dtype=np.int16))
def test_concat_reverse_take_drop(xs, ys, zs):
    c = ps.concat(xs, ys, zs)
    assert np.array_equal(c, np.concatenate([xs, ys, zs])) and c.dtype == np.int16
    assert np.array_equal(ps.reverse(c), c[::-1])
    k = len(xs)
    a, b = ps.split(k, c)
    assert np.array_equal(a, xs) and np.array_equal(ps.drop(k, c), b)
    assert np.array_equal(ps.concat(a, b), c)


@FEW
@given(st.integers(0, 5), st.integers(0, 5))
def test_transpose_flatten_unflatten(n, m):
    xss = np.arange(n * m, dtype=np.int32).reshape(n, m)
    assert np.array_equal(ps.transpose(xss), xss.T)
    assert np.array_equal(ps.flatten(xss), xss.ravel())
    assert np.array_equal(ps.unflatten(n, m, ps.flatten(xss)), xss)
    assert np.array_equal(ps.tabulate_2d(n, m, lambda i, j: ps.i32(i * m + j)), xss)
    with pytest.raises(ShapeError):
        ps.unflatten(n, m, np.arange(n * m + 1))
    with pytest.raises(ShapeError):
        ps.unflatten(-n - 1, -m, np.arange(n * m))


@FEW
@given(arrays(dtype=np.float64, min_size=1), st.booleans())
def test_min_max_args_with_nan(xs, put_nan):
    if put_nan:
        xs = xs.copy()
        xs[len(xs) // 2] = np.nan
    assert np.array_equal(ps.minimum(xs), np.min(xs), equal_nan=True)
    assert np.array_equal(ps.maximum(xs), np.max(xs), equal_nan=True)
    assert ps.argmin(xs) == np.argmin(xs) and ps.argmax(xs) == np.argmax(xs)
    if not put_nan:
        assert xs[ps.argmin(xs)] == xs.min() and ps.argmin(xs) == list(xs).index(xs.min())


@FEW
@given(arrays(dtype=np.int32, max_size=10), arrays(dtype=np.float32, max_size=10))
def test_zip_unzip_roundtrip(xs, ys):
    if len(xs) != len(ys):
        with pytest.raises(ShapeError):
            ps.zip(xs, ys)
        with pytest.raises(ShapeError):
            ps.map(lambda x, y: x, xs, ys)
        return
    z = ps.zip(xs, ys)
    assert list(z) == list(zip(xs.tolist(), ys.tolist()))
    a, b = ps.unzip(ps.map(lambda p: (p[0], p[1]), z))
    assert np.array_equal(a, xs) and np.array_equal(b, ys) and a.dtype == xs.dtype and b.dtype == ys.dtype
    s = z.to_structured()
    assert ps.TupleArray.from_structured(s) == z


@FEW
@given(arrays(max_size=3))
def test_empty_and_one_element(xs):
    one = xs[:1]
    e = xs[:0]
    assert ps.map(lambda x: x, e).dtype == xs.dtype
    assert ps.scan(lambda a, b: a + b, xs.dtype.type(0), e).dtype == xs.dtype
    assert ps.filter(lambda x: True, e).dtype == xs.dtype
    assert ps.reduce(lambda a, b: a + b, 0, e) == 0 and type(ps.reduce(lambda a, b: a + b, 0, e)) is xs.dtype.type
    assert ps.sum(e) == 0 and ps.product(e) == 1
    if len(one):
        assert ps.head(one) == ps.last(one) == one[0]
        assert len(ps.tail(one)) == 0 and len(ps.init(one)) == 0
        assert ps.minimum(one) == ps.maximum(one) == one[0]
