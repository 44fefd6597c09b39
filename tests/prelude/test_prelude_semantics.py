"""entry / python_semantics: integer // and % by zero raise, other numpy warnings are silent."""
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
