"""Scalar semantics of the core interpreter: every BinOp/UnOp/Convert per type,
compared with Python ints reduced mod 2**bits and with numpy scalars."""
import math
import operator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from coreir_build import (BOOL, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, B, c,
                          fun, ir, prog)
from pyshark.core.check import check_program
from pyshark.core.interp import run_function
from pyshark.core.types import FLOAT_TYPES, INT_TYPES

SETTINGS = settings(max_examples=60, deadline=None)
_CACHE = {}


def _prog(kind, op, t, t2=None):
    key = (kind, op, t, t2)
    if key not in _CACHE:
        if kind == "bin":
            f = fun("f", [t, t], lambda b, x, y: b.bin(op, x, y))
        elif kind == "un":
            f = fun("f", [t], lambda b, x: b.un(op, x))
        else:
            f = fun("f", [t], lambda b, x: b.let(ir.Convert(t2, x)))
        p = prog(f)
        check_program(p)
        _CACHE[key] = p
    return _CACHE[key]


def binop(op, t, x, y):
    (r,) = run_function(_prog("bin", op, t), "f", [t.numpy_type(x), t.numpy_type(y)])
    return r


def unop(op, t, x):
    (r,) = run_function(_prog("un", op, t), "f", [t.numpy_type(x)])
    return r


def rng(t):
    if t.is_signed:
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def wrap(v, t):
    lo, _ = rng(t)
    return (v - lo) % (1 << t.bits) + lo


def ints_of(t):
    lo, hi = rng(t)
    return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, 1, lo + 1, hi - 1]))


INT_REF = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "floordiv": lambda x, y: x // y, "mod": lambda x, y: x % y,
    "band": lambda x, y: x & y, "bor": lambda x, y: x | y, "bxor": lambda x, y: x ^ y,
    "min": min, "max": max,
}
CMP_REF = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
           "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


@pytest.mark.parametrize("op", sorted(INT_REF) + sorted(CMP_REF))
@SETTINGS
@given(data=st.data())
def test_int_binops_match_python_mod_2_bits(op, data):
    t = data.draw(st.sampled_from(INT_TYPES))
    x, y = data.draw(ints_of(t)), data.draw(ints_of(t))
    if op in ("floordiv", "mod") and y == 0:
        with pytest.raises(ZeroDivisionError, match="prog.py:7:5"):
            binop(op, t, x, y)
        return
    r = binop(op, t, x, y)
    if op in CMP_REF:
        assert type(r) is np.bool_ and bool(r) == CMP_REF[op](x, y)
    else:
        assert type(r) is t.numpy_type
        assert int(r) == wrap(INT_REF[op](x, y), t)


@SETTINGS
@given(data=st.data())
def test_int_pow_wraps(data):
    t = data.draw(st.sampled_from(INT_TYPES))
    x = data.draw(ints_of(t))
    y = data.draw(st.integers(0, 70))
    r = binop("pow", t, x, y)
    assert type(r) is t.numpy_type and int(r) == wrap(x ** y, t)


def test_int_pow_negative_exponent_is_numpy_valueerror():
    with pytest.raises(ValueError, match="negative"):
        binop("pow", I32, 2, -1)


@pytest.mark.parametrize("op", ["shl", "shr"])
@SETTINGS
@given(data=st.data())
def test_int_shifts(op, data):
    t = data.draw(st.sampled_from(INT_TYPES))
    x = data.draw(ints_of(t))
    y = data.draw(st.integers(0, t.bits + 3))
    r = binop(op, t, x, y)
    want = wrap(x << y, t) if op == "shl" else x >> y
    assert type(r) is t.numpy_type and int(r) == want


def test_shr_is_arithmetic_on_signed():
    assert binop("shr", I8, -128, 1) == -64
    assert binop("shr", U8, 128, 1) == 64
    assert binop("shr", I32, -1, 40) == -1


def test_int_floor_semantics():
    assert binop("floordiv", I32, 7, -2) == -4
    assert binop("mod", I32, 7, -2) == -1
    assert binop("mod", I64, -7, 2) == 1
    assert binop("floordiv", I8, -128, -1) == -128       # wraps
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        binop("floordiv", U8, 1, 0)
    with pytest.raises(ZeroDivisionError, match="modulo by zero"):
        binop("mod", I16, 1, 0)


def floats_of(t):
    return st.floats(width=32 if t is F32 else 64, allow_nan=True, allow_infinity=True)


def same_float(a, b):
    return type(a) is type(b) and (a == b and math.copysign(1, a) == math.copysign(1, b)
                                   or (np.isnan(a) and np.isnan(b)))


FLOAT_NP = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "floordiv": np.floor_divide, "mod": np.remainder,
    # `**` on numpy scalars (what Python mode runs) is the reference, not np.power:
    # the two may differ in the last ulp (libm), which the golden rule tolerates
    "pow": operator.pow,
    "min": np.minimum, "max": np.maximum, "atan2": np.arctan2,
}


@pytest.mark.parametrize("op", sorted(FLOAT_NP) + sorted(CMP_REF))
@SETTINGS
@given(data=st.data())
def test_float_binops_match_numpy(op, data):
    t = data.draw(st.sampled_from(FLOAT_TYPES))
    x, y = t.numpy_type(data.draw(floats_of(t))), t.numpy_type(data.draw(floats_of(t)))
    r = binop(op, t, x, y)
    with np.errstate(all="ignore"):
        if op in CMP_REF:
            assert type(r) is np.bool_ and bool(r) == CMP_REF[op](x, y)
        else:
            assert same_float(r, FLOAT_NP[op](x, y))


@pytest.mark.parametrize("t", [F32, F64])
def test_power_is_numpy_power_and_pow_is_scalar_star_star(t):
    """`power` (ps.pow) is numpy.power, `pow` (`**`) numpy's scalar `**`: they
    differ where numpy.power takes its sqrt fast path for an exponent of 0.5."""
    n = t.numpy_type
    assert np.isnan(binop("power", t, -np.inf, 0.5))
    assert binop("pow", t, -np.inf, 0.5) == np.inf
    r = binop("power", t, -0.0, 0.5)
    assert r == 0.0 and math.copysign(1.0, r) == -1.0
    assert math.copysign(1.0, binop("pow", t, -0.0, 0.5)) == 1.0
    with np.errstate(all="ignore"):
        for x in (-np.inf, -2.5, -1.0, -0.0, 0.0, 0.5, 3.0, np.inf, np.nan):
            for y in (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 2.5, np.inf, np.nan):
                r = binop("power", t, x, y)
                assert same_float(r, np.power(n(x), n(y))), (x, y, r)


@pytest.mark.parametrize("t", [I8, I32, U64])
def test_int_power_is_pow(t):
    assert binop("power", t, 3, 4) == binop("pow", t, 3, 4) == t.numpy_type(81)
    assert int(binop("power", t, 3, 41)) == wrap(3 ** 41, t)
    with pytest.raises(ValueError, match="negative"):
        binop("power", I32, 2, -1)


def test_float_division_by_zero_does_not_raise():
    assert binop("div", F32, 1.0, 0.0) == np.float32(np.inf)
    assert type(binop("div", F32, 1.0, 0.0)) is np.float32
    assert np.isnan(binop("mod", F64, 5.0, 0.0))
    assert binop("floordiv", F64, 5.0, 0.0) == np.inf
    assert np.isnan(binop("min", F64, np.nan, 1.0))
    assert np.isnan(binop("max", F32, 1.0, np.nan))


@pytest.mark.parametrize("op", ["band", "bor", "bxor", "land", "lor", "eq", "ne"])
def test_bool_binops(op):
    ref = {"band": lambda a, b: a and b, "land": lambda a, b: a and b,
           "bor": lambda a, b: a or b, "lor": lambda a, b: a or b,
           "bxor": lambda a, b: a != b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
    for x in (False, True):
        for y in (False, True):
            r = binop(op, BOOL, x, y)
            assert type(r) is np.bool_ and bool(r) == ref[op](x, y)


INT_UN = {"neg": lambda x: -x, "bnot": lambda x: ~x, "abs": abs,
          "sign": lambda x: (x > 0) - (x < 0)}


@pytest.mark.parametrize("op", sorted(INT_UN))
@SETTINGS
@given(data=st.data())
def test_int_unops(op, data):
    t = data.draw(st.sampled_from(INT_TYPES))
    x = data.draw(ints_of(t))
    r = unop(op, t, x)
    assert type(r) is t.numpy_type and int(r) == wrap(INT_UN[op](x), t)


FLOAT_UN = ["neg", "abs", "sign", "sqrt", "exp", "log", "log2", "log10", "sin", "cos",
            "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "floor", "ceil",
            "round", "trunc", "isnan", "isinf"]
NP_UN = {"neg": np.negative, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan}


@pytest.mark.parametrize("op", FLOAT_UN)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_float_unops_match_numpy(op, data):
    t = data.draw(st.sampled_from(FLOAT_TYPES))
    x = t.numpy_type(data.draw(floats_of(t)))
    r = unop(op, t, x)
    with np.errstate(all="ignore"):
        want = (NP_UN[op] if op in NP_UN else getattr(np, op))(x)
    if op in ("isnan", "isinf"):
        assert type(r) is np.bool_ and r == want
    else:
        assert same_float(r, want)


def test_round_half_to_even_and_not():
    assert unop("round", F64, 2.5) == 2.0 and unop("round", F32, 3.5) == 4.0
    assert unop("round", F64, -0.5) == 0.0
    assert unop("not", BOOL, True) == np.False_
    assert unop("abs", I8, -128) == -128


def convert(x, t, to):
    (r,) = run_function(_prog("cvt", None, t, to), "f", [t.numpy_type(x)])
    return r


ALL = INT_TYPES + FLOAT_TYPES + (BOOL,)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_convert_is_numpy_astype(data):
    t, to = data.draw(st.sampled_from(ALL)), data.draw(st.sampled_from(ALL))
    if t.is_int:
        x = data.draw(ints_of(t))
    elif t.is_float:
        x = data.draw(st.floats(-1e6, 1e6, width=32 if t is F32 else 64))
    else:
        x = data.draw(st.booleans())
    r = convert(x, t, to)
    want = np.array(t.numpy_type(x)).astype(to.dtype)[()]
    assert type(r) is to.numpy_type
    assert r == want or (np.isnan(r) and np.isnan(want))


def test_convert_examples():
    assert convert(3.7, F64, I32) == 3 and convert(-3.7, F64, I32) == -3
    assert convert(300, I64, I8) == 44
    assert convert(2.5, F64, BOOL) == np.True_ and convert(0.0, F32, BOOL) == np.False_
    assert convert(np.nan, F64, BOOL) == np.True_
    assert convert(0.1, F64, F32) == np.float32(0.1)
    assert convert(-1, I32, U8) == 255


def test_select_and_constants():
    def f(b, x):
        cond = b.bin("lt", x, c(0, I32))
        return b.let(ir.Select(cond, c(-1, I32), c(1, I32)))
    p = prog(fun("f", [I32], f))
    check_program(p)
    assert run_function(p, "f", [np.int32(-5)])[0] == -1
    assert run_function(p, "f", [np.int32(5)])[0] == 1
    (r,) = run_function(prog(fun("g", [], lambda b: (c(-0.0, F64),))), "g", [])
    assert math.copysign(1.0, r) == -1.0 and type(r) is np.float64
