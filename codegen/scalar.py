"""The core IR's scalar operators, built once from kernel-IR primitives.

Every backend gets Python's and numpy's meaning from here: floor division
and modulo (numpy's npy_divmod for floats), NaN-propagating minimum and
maximum (numpy's scalar loops), shifts that give 0 / -1 past the width
(numpy's npy_lshift / npy_rshift), integer power by repeated squaring,
round half to even, sign and abs, numpy's float -> int conversion (gcc's
x86-64 cvtt sequences), and integer division with the divisor made safe for
the primitive's precondition (C's UB rules: no x / 0, no MIN / -1).
Operations that can raise take a `fail` callback that emits a guarded
kir.Fail; everything else is a pure kir expression.
"""
from __future__ import annotations

from typing import Callable

from pyshark.core import ops
from pyshark.core.types import BOOL, I32, I64, U32, U64, ScalarType

from . import kir as K

Emit = Callable[[K.Stm], None]


def const(value, t: ScalarType) -> K.KConst:
    if t.is_float:
        value = float(value)
    elif t.is_bool:
        value = bool(value)
    else:
        value = int(value)
    return K.KConst(value, t)


def _t(e: K.Expr) -> ScalarType:
    t = K.type_of(e)
    assert isinstance(t, ScalarType)
    return t


def b(op: str, x: K.Expr, y: K.Expr, reassoc: bool = False) -> K.Bin:
    return K.Bin(op, x, y, reassoc)


def sel(c, x, y) -> K.Sel:
    return K.Sel(c, x, y)


def lor(x, y) -> K.Expr:
    return K.Bin("or", x, y)


def land(x, y) -> K.Expr:
    return K.Bin("and", x, y)


def lnot(x) -> K.Expr:
    return K.Un("not", x)


def _min_int(t: ScalarType) -> int:
    return -(1 << (t.bits - 1))


def _max_int(t: ScalarType) -> int:
    return (1 << (t.bits - 1)) - 1 if t.is_signed else (1 << t.bits) - 1


def signbit(x: K.Expr) -> K.Expr:
    """x < 0, or x is -0.0 (1/x is -inf): the sign bit of a non-NaN float."""
    t = _t(x)
    return lor(b("lt", x, const(0, t)), b("lt", b("div", const(1, t), x), const(0, t)))


def copysign_zero(s: K.Expr) -> K.Expr:
    """copysign(0.0, s) for a non-NaN s."""
    t = _t(s)
    return sel(signbit(s), const(-0.0, t), const(0.0, t))


# ---------------------------------------------------------------------------
# Integer division family


def _safe_divisor(y: K.Expr) -> K.Expr:
    """y, or 1 where y is 0: the div/rem primitive's precondition holds on
    every evaluation (C's x / 0 is UB, x86's idiv traps), while the zero
    case is handled before the result is used."""
    t = _t(y)
    return sel(b("eq", y, const(0, t)), const(1, t), y)


def int_div_trunc(x: K.Expr, y: K.Expr) -> K.Expr:
    """C truncating division with the primitive's preconditions met: y == 0
    gives x (callers guard it), MIN / -1 wraps to MIN as numpy does."""
    t = _t(x)
    ys = _safe_divisor(y)
    if t.is_unsigned:
        return b("div", x, ys)
    minus1 = b("eq", ys, const(-1, t))
    return sel(minus1, K.Un("neg", x), b("div", x, sel(minus1, const(1, t), ys)))


def int_rem_trunc(x: K.Expr, y: K.Expr) -> K.Expr:
    """C's remainder (sign of x) with the preconditions met: x % 0 gives 0
    (callers guard it), x % -1 is 0."""
    t = _t(x)
    ys = _safe_divisor(y)
    if t.is_unsigned:
        return b("rem", x, ys)
    minus1 = b("eq", ys, const(-1, t))
    return sel(minus1, const(0, t), b("rem", x, sel(minus1, const(1, t), ys)))


def int_floordiv(x: K.Expr, y: K.Expr) -> K.Expr:
    """Python's x // y (y != 0 guaranteed by the caller)."""
    t = _t(x)
    q = int_div_trunc(x, y)
    if t.is_unsigned:
        return q
    r = int_rem_trunc(x, y)
    adjust = land(b("ne", r, const(0, t)),
                  b("ne", b("lt", r, const(0, t)), b("lt", y, const(0, t))))
    return sel(adjust, b("sub", q, const(1, t)), q)


def int_mod(x: K.Expr, y: K.Expr) -> K.Expr:
    """Python's x % y (sign of y; y != 0 guaranteed by the caller)."""
    t = _t(x)
    r = int_rem_trunc(x, y)
    if t.is_unsigned:
        return r
    adjust = land(b("ne", r, const(0, t)),
                  b("ne", b("lt", r, const(0, t)), b("lt", y, const(0, t))))
    return sel(adjust, b("add", r, y), r)


def float_mod(x: K.Expr, y: K.Expr) -> K.Expr:
    """numpy's remainder: npy_divmod's modulus; fmod(x, 0) (NaN) for y == 0."""
    t = _t(x)
    m = b("rem", x, y)
    zero = const(0, t)
    fix = land(b("ne", m, zero), b("ne", b("lt", y, zero), b("lt", m, zero)))
    nonzero_mod = sel(fix, b("add", m, y), m)
    return sel(b("eq", y, zero), m,
               sel(b("ne", m, zero), nonzero_mod, copysign_zero(y)))


def float_floordiv(x: K.Expr, y: K.Expr) -> K.Expr:
    """numpy's floor_divide (npy_floor_divide / npy_divmod): x / y for y == 0."""
    t = _t(x)
    zero, one = const(0, t), const(1, t)
    m = b("rem", x, y)
    div = b("div", b("sub", x, m), y)
    fix = land(b("ne", m, zero), b("ne", b("lt", y, zero), b("lt", m, zero)))
    div = sel(fix, b("sub", div, one), div)
    fl = K.Un("floor", div)
    fl = sel(b("gt", b("sub", div, fl), const(0.5, t)), b("add", fl, one), fl)
    q = b("div", x, y)
    result = sel(b("ne", div, zero), fl, copysign_zero(q))
    # NaN operands: div is NaN and NaN != 0, floor(NaN) is NaN: already right.
    return sel(b("eq", y, zero), q, result)


# ---------------------------------------------------------------------------
# Shifts, min/max, abs, sign


def _shift_in_range(y: K.Expr, t: ScalarType) -> K.Expr:
    """(size_t) y < bits, as numpy tests it (a negative y is out of range)."""
    return b("lt", K.Cast(U64, y), const(t.bits, U64))


def shl(x: K.Expr, y: K.Expr) -> K.Expr:
    t = _t(x)
    ok = _shift_in_range(y, t)
    return sel(ok, b("shl", x, sel(ok, y, const(0, t))), const(0, t))


def shr(x: K.Expr, y: K.Expr) -> K.Expr:
    t = _t(x)
    ok = _shift_in_range(y, t)
    shifted = b("shr", x, sel(ok, y, const(0, t)))
    if t.is_unsigned:
        return sel(ok, shifted, const(0, t))
    fill = sel(b("lt", x, const(0, t)), const(-1, t), const(0, t))
    return sel(ok, shifted, fill)


def minimum(x: K.Expr, y: K.Expr, reassoc: bool = False) -> K.Expr:
    """numpy.minimum: for floats kir's `min` (NaN propagates), for ints and
    bools a compare and select."""
    t = _t(x)
    if t.is_float:
        return b("min", x, y)
    return sel(b("le", x, y), x, y)


def maximum(x: K.Expr, y: K.Expr, reassoc: bool = False) -> K.Expr:
    """numpy.maximum, as minimum."""
    t = _t(x)
    if t.is_float:
        return b("max", x, y)
    return sel(b("ge", x, y), x, y)


def absolute(x: K.Expr) -> K.Expr:
    t = _t(x)
    if t.is_float:
        return K.Un("fabs", x)
    if t.is_unsigned or t.is_bool:
        return x
    return sel(b("lt", x, const(0, t)), K.Un("neg", x), x)


def sign(x: K.Expr) -> K.Expr:
    t = _t(x)
    if t.is_bool:
        return x
    one, zero = const(1, t), const(0, t)
    if t.is_unsigned:
        return sel(b("gt", x, zero), one, zero)
    neg = const(-1, t)
    inner = sel(b("lt", x, zero), neg, zero if not t.is_float else sel(b("eq", x, zero), zero, x))
    return sel(b("gt", x, zero), one, inner)


# ---------------------------------------------------------------------------
# The dispatch used by the lowering


# One rule per core operator of the table (pyshark/core/ops.py); the errors
# the guarded ones raise are the table's.

_PLAIN = {"add": "add", "sub": "sub", "mul": "mul", "band": "and", "bor": "or",
          "bxor": "xor", "land": "and", "lor": "or", "eq": "eq", "ne": "ne",
          "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "atan2": "atan2",
          "fmin": "fmin", "fmax": "fmax"}


def _guard(op: str, cond: K.Expr, emit: Emit, fail: Callable) -> None:
    """Emits `if cond: fail` with the error the table gives op on integers."""
    err = ops.BINARY[op].raises[ops.INT]
    emit(K.If(cond, K.Block((fail(err.error, err.message),))))


def _b_plain(op, x, y, t, emit, fail, new_var, reassoc):
    return K.Bin(_PLAIN[op], x, y, reassoc and op in ("add", "mul") and t.is_float)


def _b_div(op, x, y, t, emit, fail, new_var, reassoc):
    return K.Bin("div", x, y)


def _b_floordiv_mod(op, x, y, t, emit, fail, new_var, reassoc):
    if t.is_float:
        return float_floordiv(x, y) if op == "floordiv" else float_mod(x, y)
    _guard(op, b("eq", y, const(0, t)), emit, fail)
    return int_floordiv(x, y) if op == "floordiv" else int_mod(x, y)


def _b_pow(op, x, y, t, emit, fail, new_var, reassoc):
    if not t.is_float:
        return int_pow(x, y, emit=emit, fail=fail, new_var=new_var)
    if op == "power":
        # numpy.power on scalars (what Python mode runs) takes the square
        # root for an exponent of 0.5: power(-inf, 0.5) is nan,
        # power(-0.0, 0.5) is -0.0; every other exponent is C pow
        return sel(b("eq", y, const(0.5, t)), K.Un("sqrt", x), K.Bin("pow", x, y))
    return K.Bin("pow", x, y)


_BIN_RULES = dict.fromkeys(_PLAIN, _b_plain)
_BIN_RULES.update(
    div=_b_div, floordiv=_b_floordiv_mod, mod=_b_floordiv_mod, pow=_b_pow, power=_b_pow,
    shl=lambda op, x, y, *_: shl(x, y), shr=lambda op, x, y, *_: shr(x, y),
    min=lambda op, x, y, *_: minimum(x, y), max=lambda op, x, y, *_: maximum(x, y))
assert set(_BIN_RULES) == set(ops.BINARY), "scalar.py must lower every core BinOp"


def binop(op: str, x: K.Expr, y: K.Expr, *, emit: Emit, fail: Callable,
          new_var: Callable, reassoc: bool = False) -> K.Expr:
    """The value of core BinOp `op`; emits guards (and loops, for integer
    pow) through `emit`; `fail(kind, text)` gives the kir.Fail to run;
    `new_var(type)` makes a fresh variable."""
    rule = _BIN_RULES.get(op)
    if rule is None:
        raise NotImplementedError(f"binary operator {op}")
    return rule(op, x, y, _t(x), emit, fail, new_var, reassoc)


def int_pow(x, y, *, emit: Emit, fail: Callable, new_var: Callable) -> K.Expr:
    """x ** y by repeated squaring, wrapping; ValueError for y < 0 (numpy)."""
    t = _t(x)
    if ops.BINARY["pow"].raises_on(t) is not None:        # signed types
        _guard("pow", b("lt", y, const(0, t)), emit, fail)
    acc, base, e = new_var(t), new_var(t), new_var(t)
    emit(K.Set(acc, const(1, t)))
    emit(K.Set(base, x))
    emit(K.Set(e, y))
    odd = b("ne", b("and", e, const(1, t)), const(0, t))
    emit(K.While(b("gt", e, const(0, t)), K.Block((
        K.Set(acc, sel(odd, b("mul", acc, base), acc)),
        K.Set(base, b("mul", base, base)),
        K.Set(e, b("shr", e, const(1, t))),
    ))))
    return acc


_UN_PLAIN = {"neg": "neg", "not": "not", "bnot": "not", "sqrt": "sqrt", "exp": "exp",
             "log": "log", "log2": "log2", "log10": "log10", "sin": "sin", "cos": "cos",
             "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
             "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "floor": "floor",
             "ceil": "ceil", "trunc": "trunc", "round": "rint", "isnan": "isnan"}
_UN_RULES = {"abs": absolute, "sign": sign,
             "isinf": lambda x: b("eq", K.Un("fabs", x), const(float("inf"), _t(x)))}
assert set(_UN_PLAIN) | set(_UN_RULES) == set(ops.UNARY), "scalar.py must lower every UnOp"


def unop(op: str, x: K.Expr) -> K.Expr:
    rule = _UN_RULES.get(op)
    if rule is not None:
        return rule(x)
    if op == "neg" and _t(x).is_bool:
        return x
    return K.Un(_UN_PLAIN[op], x)


# ---------------------------------------------------------------------------
# Conversions


def _cvtt(x: K.Expr, it: ScalarType) -> K.Expr:
    """x86's cvttss2si / cvttsd2si to `it` (i32 or i64): C's truncation
    where x is in [-2**(b-1), 2**(b-1)), else (NaN, infinities, out of
    range) the integer minimum. The raw Cast, poison out of range, is only
    chosen in range ((-2**(b-1) - 1, -2**(b-1)) truncates to MIN as well)."""
    t = _t(x)
    half = 2.0 ** (it.bits - 1)
    ok = land(b("ge", x, const(-half, t)), b("lt", x, const(half, t)))
    return sel(ok, K.Cast(it, x), const(_min_int(it), it))


def float_to_int(to: ScalarType, x: K.Expr) -> K.Expr:
    """numpy's conversion of a float scalar to int type `to`, defined on
    every input: what gcc's x86-64 code for a C cast gives (numpy's scalar
    casts are such C casts). i8 i16 i32 u8 u16 through a 32-bit cvtt, i64
    and u32 through a 64-bit one, then truncated; u64 as x >= 2**63 ?
    cvtt64(x - 2**63) ^ 2**63 : cvtt64(x) (an ordered test: NaN takes the
    second arm)."""
    if to.bits < 32 or to is I32:
        v = _cvtt(x, I32)
        return v if to is I32 else K.Cast(to, v)
    if to is U32:
        return K.Cast(to, _cvtt(x, I64))
    if to is I64:
        return _cvtt(x, I64)
    two63 = const(2.0 ** 63, _t(x))
    big = b("xor", _cvtt(b("sub", x, two63), I64), const(_min_int(I64), I64))
    return sel(b("ge", x, two63), K.Cast(U64, big), K.Cast(U64, _cvtt(x, I64)))


def convert(to: ScalarType, x: K.Expr) -> K.Expr:
    """numpy's scalar conversion of x to `to`: the Cast primitive, except
    float -> int, which is float_to_int (the primitive is poison out of range)."""
    frm = _t(x)
    if frm == to:
        return x
    if frm.is_float and to.is_int:
        return float_to_int(to, x)
    return K.Cast(to, x)


__all__ = ["binop", "unop", "convert", "float_to_int", "const", "minimum", "maximum",
           "I64", "BOOL"]
