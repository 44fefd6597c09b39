"""entry / python_semantics: integer // and % by zero raise, float ones give numpy's
inf/nan, other numpy warnings are silent."""
import math
import warnings

import numpy as np
import pytest

import pyshark.prelude as ps
from pyshark.prelude import entry, python_semantics

INT_TYPES = [ps.i8, ps.i16, ps.i32, ps.i64, ps.u8, ps.u16, ps.u32, ps.u64]


@pytest.mark.parametrize("t", INT_TYPES)
def test_int_floordiv_and_mod_by_zero_raise_in_entry(t):
    @entry
    def fdiv(a, b):
        return a // b

    @entry
    def fmod(a, b):
        return a % b

    with pytest.raises(ZeroDivisionError):
        fdiv(t(7), t(0))
    with pytest.raises(ZeroDivisionError):
        fmod(t(7), t(0))
    assert fdiv(t(7), t(2)) == 3 and fmod(t(7), t(2)) == 1


def test_divmod_and_weak_divisor_raise():
    with python_semantics():
        with pytest.raises(ZeroDivisionError):
            divmod(np.int32(3), np.int32(0))
    with pytest.raises(ZeroDivisionError):
        with python_semantics():
            np.int64(3) // 0


def test_zero_division_inside_a_soac_raises():
    @entry
    def remainders(xs, d):
        return ps.map(lambda x: x % d, xs)

    with pytest.raises(ZeroDivisionError):
        remainders(np.array([5], dtype=np.int64), np.int64(0))
    assert remainders(np.array([], dtype=np.int64), np.int64(0)).shape == (0,)


def test_float_division_by_zero_gives_ieee_and_no_warning():
    @entry
    def specials(x):
        return (x / 0.0, -x / 0.0, x / x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b, c = specials(np.float64(1.0))
        assert a == np.inf and b == -np.inf and c == 1.0
        a, b, c = specials(np.float32(0.0))
        assert np.isnan(a) and np.isnan(c) and a.dtype == np.float32


FLOAT_TYPES = [ps.f32, ps.f64]


@pytest.mark.parametrize("t", FLOAT_TYPES)
def test_float_floordiv_and_mod_by_zero_give_numpy_inf_nan(t):
    """numpy warns for x // 0.0 exactly as for an integer // 0; only the integer
    case may raise (LANGUAGE.md: float // and % by zero give inf/nan)."""
    @entry
    def ops(a, b):
        return (a // b, -a // b, a % b, b // b, (a + a) // (b * 2))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fd, nfd, md, zz, expr = ops(t(7), t(0))
    assert fd == np.inf and nfd == -np.inf and type(fd) is t
    assert np.isnan(md) and np.isnan(zz) and expr == np.inf
    with np.errstate(all="ignore"):
        assert (fd, nfd) == (np.floor_divide(t(7), t(0)), np.floor_divide(t(-7), t(0)))


def test_float_floordiv_by_zero_in_soacs_comprehensions_and_with_weak_operands():
    @entry
    def in_map(xs, d):
        return ps.map(lambda x: x // d, xs)

    @entry
    def in_comprehension(xs, d):
        return [x // d for x in xs]

    @entry
    def weak(x, n):
        return (x // 0, n // 0.0)          # f64 // weak int; i32 // weak float is f64

    @entry
    def augmented(x, d):
        y = x
        y //= d
        return y

    got = in_map(np.array([1.0, -2.0]), 0.0)
    assert list(got) == [np.inf, -np.inf]
    assert list(in_comprehension(np.array([3.0], dtype=np.float32), np.float32(0))) == [np.inf]
    a, b = weak(np.float64(2.0), np.int32(3))
    assert a == np.inf and b == np.inf and type(b) is np.float64
    assert augmented(np.float64(1.0), np.float64(0.0)) == np.inf
    with pytest.raises(ZeroDivisionError):
        in_map(np.array([1, 2]), np.int64(0))
    with pytest.raises(ZeroDivisionError):
        in_comprehension(np.array([1], dtype=np.int8), np.int8(0))
    with pytest.raises(ZeroDivisionError):
        augmented(np.int16(1), np.int16(0))
    with pytest.raises(ZeroDivisionError):
        with python_semantics():
            np.int32(5) // 0               # typed int // weak int: still integers


def test_float_zero_division_inside_a_helper_and_a_multiline_expression():
    def helper(a, b):
        return (a
                // b)

    @entry
    def outer(a, b):
        return helper(a, b) + math.floor(0.0)

    assert outer(np.float64(1.0), np.float64(0.0)) == np.inf
    with pytest.raises(ZeroDivisionError):
        outer(np.int64(1), np.int64(0))


def test_overflow_wraps_silently():
    @entry
    def ops(a, b):
        return (a + b, a * b, -a, abs(a))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s, p, n, ab = ops(np.int32(-2147483648), np.int32(-1))
        assert s == 2147483647 and p == -2147483648 and n == -2147483648 and ab == -2147483648
        with python_semantics():
            assert np.isinf(np.float32(np.float64(1e40)))


def test_entry_marks_and_wraps():
    def f(x: ps.i32) -> ps.i32:
        """doc"""
        return x

    g = entry(f)
    assert g.__pyshark_entry__ is True
    assert g.__wrapped__ is f
    assert g.__name__ == "f" and g.__doc__ == "doc"
    assert g.__annotations__ == f.__annotations__
    assert g(np.int32(4)) == 4


def test_semantics_restore_warning_filters():
    before = list(warnings.filters)
    with python_semantics():
        pass
    assert warnings.filters == before
    with pytest.raises(ZeroDivisionError):
        with python_semantics():
            np.int8(1) % np.int8(0)
    assert warnings.filters == before


def test_nested_entries_and_other_exceptions_pass_through():
    @entry
    def inner(xs, i):
        return xs[i]

    @entry
    def outer(xs, i):
        return inner(xs, i) // np.int32(1)

    assert outer(np.array([1, 2], dtype=np.int32), -1) == 2
    with pytest.raises(IndexError):
        outer(np.array([1, 2], dtype=np.int32), 2)

    @entry
    def checked(x):
        assert x > 0, "positive"
        return x

    with pytest.raises(AssertionError):
        checked(np.int32(-1))


def test_caller_seterr_ignore_does_not_hide_zero_division():
    old = np.seterr(all="ignore")
    try:
        with pytest.raises(ZeroDivisionError):
            with python_semantics():
                np.int16(1) // np.int16(0)
    finally:
        np.seterr(**old)


def test_zero_steps_and_negative_int_powers_raise_python_value_error():
    """Python's own ValueError (not ShapeError), which compiled code raises too."""
    xs = np.arange(4, dtype=np.int64)
    pairs = ps.zip(xs, xs)
    k = np.int64(0)
    cases = [lambda: xs[::k], lambda: [x for x in xs][::k], lambda: pairs[::k],
             lambda: [i for i in range(0, 4, k)],
             lambda: np.int32(2) ** np.int32(-1), lambda: ps.pow(np.int64(2), np.int64(-3)),
             lambda: ps.pow(np.int8(2), -1)]
    for case in cases:
        with pytest.raises(ValueError) as err:
            with python_semantics():
                case()
        assert not isinstance(err.value, ps.ShapeError)
    with python_semantics():
        assert ps.pow(np.float64(2.0), np.float64(-1.0)) == 0.5
        assert np.isnan(ps.pow(np.float64(-np.inf), 0.5))      # numpy.power, not `**`
        assert np.float64(-np.inf) ** 0.5 == np.inf
