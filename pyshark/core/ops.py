"""The table of the core IR's scalar operators (ir.BinOp and ir.UnOp).

One `Op` per operator says everything the passes and backends need:
- `arity` (1 or 2) and `kinds`, the operand kinds it accepts: "int" (any
  signed or unsigned integer type), "float" (f32, f64), "bool". Both
  operands of a BinOp have one type.
- `result`: "same" (the operand type) or "bool" (comparisons, isnan, isinf).
- `raises`: operand kind -> `Raise` (the error and its message) for the
  operators that can fail: integer floordiv/mod by zero (ZeroDivisionError),
  integer pow/power with a negative exponent (ValueError). Nothing else raises.
- `ref`: operand kind -> the reference semantics, a function on numpy
  scalars of the exact dtype (numpy 2 semantics, what the interpreter runs
  and constant folding reuses). It raises `Raise.exception(Raise.message)`.
- spelling: `symbol` (the pretty-printer's infix or prefix symbol; None
  means `name(x, y)`), `python` (the Python operator token, where there is
  one) and `prelude` (the prelude function that produces it, where there is
  one).

The checker, the interpreter, the pretty-printer and codegen/scalar.py read
this table; a test checks it against ir.BINOPS / ir.UNOPS.
"""
from __future__ import annotations

import builtins
import operator
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

import numpy as np

from . import ir
from .types import BOOL as BOOL_T, ScalarType

INT, FLOAT, BOOL = "int", "float", "bool"
KINDS = (INT, FLOAT, BOOL)
SAME = "same"                   # `result`: the operand type (BOOL: bool)


def kind_of(t: ScalarType) -> str:
    """The operand kind of a scalar type: "int", "float" or "bool"."""
    return BOOL if t.is_bool else FLOAT if t.is_float else INT


@dataclass(frozen=True)
class Raise:
    """A run-time error an operator raises on some operands."""
    error: str                  # an ir.ERROR_KINDS name
    message: str                # the text every backend reports
    when: str                   # the condition, in words
    signed_only: bool = False   # cannot happen on unsigned types

    @property
    def exception(self) -> type:
        return getattr(builtins, self.error)


@dataclass(frozen=True)
class Op:
    name: str
    arity: int
    kinds: frozenset
    result: str
    ref: Mapping[str, Callable] = field(repr=False)
    raises: Mapping[str, Raise] = field(default_factory=dict)
    symbol: Optional[str] = None
    python: Optional[str] = None
    prelude: Optional[str] = None

    def accepts(self, t: ScalarType) -> bool:
        return kind_of(t) in self.kinds

    def result_type(self, t: ScalarType) -> ScalarType:
        """The result type on operands of type t (which it must accept)."""
        return BOOL_T if self.result == BOOL else t

    def raises_on(self, t: ScalarType) -> Optional[Raise]:
        """The error the operator may raise on operands of type t, or None."""
        r = self.raises.get(kind_of(t))
        if r is None or (r.signed_only and t.is_unsigned):
            return None
        return r

    def reference(self, t: ScalarType) -> Callable:
        """The reference function on operands of type t (numpy scalars)."""
        return self.ref[kind_of(t)]

    @property
    def spelling(self) -> str:
        """How a user writes it: the Python operator, else the prelude function."""
        return self.python or self.prelude or self.name


# ---------------------------------------------------------------------------
# Reference functions that raise

ZERO_DIV = Raise("ZeroDivisionError", "integer division by zero", "the divisor is 0")
ZERO_MOD = Raise("ZeroDivisionError", "integer modulo by zero", "the divisor is 0")
NEG_POW = Raise("ValueError", "Integers to negative integer powers are not allowed.",
                "the exponent is negative", signed_only=True)


def _int_floordiv(x, y):
    if y == 0:
        raise ZeroDivisionError(ZERO_DIV.message)
    return x // y


def _int_mod(x, y):
    if y == 0:
        raise ZeroDivisionError(ZERO_MOD.message)
    return x % y


def _int_pow(x, y):
    if y < 0:
        raise ValueError(NEG_POW.message)
    return x ** y


def _land(x, y):
    return np.bool_(x and y)


def _lor(x, y):
    return np.bool_(x or y)


def _not(x):
    return np.bool_(not x)


# ---------------------------------------------------------------------------
# The table

_NUM = frozenset({INT, FLOAT})
_ANY = frozenset(KINDS)


def _op(name, arity, kinds, f, *, result=SAME, on=None, raises=None, symbol=None,
        python=None, prelude=None) -> Op:
    """An Op whose reference is f on every kind, except the kinds in `on`."""
    kinds = frozenset(kinds) if not isinstance(kinds, str) else frozenset({kinds})
    ref = {k: f for k in kinds}
    ref.update(on or {})
    return Op(name, arity, kinds, result, ref, raises or {}, symbol, python, prelude)


def _bin(name, kinds, f, sym=None, **kw) -> Op:
    """A binary operator; `sym` is both its pretty symbol and its Python token."""
    kw.setdefault("python", sym)
    return _op(name, 2, kinds, f, symbol=sym, **kw)


_BINARY = [
    _bin("add", _NUM, operator.add, "+"),
    _bin("sub", _NUM, operator.sub, "-"),
    _bin("mul", _NUM, operator.mul, "*"),
    _bin("div", FLOAT, operator.truediv, "/"),
    _bin("floordiv", _NUM, operator.floordiv, "//", on={INT: _int_floordiv},
         raises={INT: ZERO_DIV}),
    _bin("mod", _NUM, operator.mod, "%", on={INT: _int_mod}, raises={INT: ZERO_MOD}),
    _bin("pow", _NUM, operator.pow, "**", on={INT: _int_pow}, raises={INT: NEG_POW}),
    # numpy.power: as pow, except that a float exponent of exactly 0.5 is sqrt
    _bin("power", _NUM, np.power, None, on={INT: _int_pow}, raises={INT: NEG_POW},
         prelude="ps.pow"),
    _bin("band", {INT, BOOL}, operator.and_, "&"),
    _bin("bor", {INT, BOOL}, operator.or_, "|"),
    _bin("bxor", {INT, BOOL}, operator.xor, "^"),
    _bin("shl", INT, operator.lshift, "<<"),
    _bin("shr", INT, operator.rshift, ">>"),
    _bin("land", BOOL, _land, "&&", python="and"),
    _bin("lor", BOOL, _lor, "||", python="or"),
    _bin("min", _ANY, np.minimum, prelude="ps.min"),
    _bin("max", _ANY, np.maximum, prelude="ps.max"),
    # NaN passed over (IEEE minNum): the builtins min/max of a float array
    # reduce with them (translate/prelude_arrays._python_extreme)
    _bin("fmin", FLOAT, np.fmin, prelude="min"),
    _bin("fmax", FLOAT, np.fmax, prelude="max"),
    _bin("atan2", FLOAT, np.arctan2, prelude="ps.atan2"),
    _bin("eq", _ANY, operator.eq, "==", result=BOOL),
    _bin("ne", _ANY, operator.ne, "!=", result=BOOL),
    _bin("lt", _ANY, operator.lt, "<", result=BOOL),
    _bin("le", _ANY, operator.le, "<=", result=BOOL),
    _bin("gt", _ANY, operator.gt, ">", result=BOOL),
    _bin("ge", _ANY, operator.ge, ">=", result=BOOL),
]

_MATH = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "log2": np.log2,
         "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan,
         "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
         "cosh": np.cosh, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil,
         "round": np.round, "trunc": np.trunc}

_UNARY = [
    _op("neg", 1, _NUM, operator.neg, symbol="-", python="-"),
    _op("not", 1, BOOL, _not, symbol="!", python="not"),
    _op("bnot", 1, INT, operator.invert, symbol="~", python="~"),
    _op("abs", 1, _NUM, np.abs, prelude="abs"),
    _op("sign", 1, _NUM, np.sign, prelude="ps.sign"),
    *[_op(n, 1, FLOAT, f, prelude=f"ps.{n}") for n, f in _MATH.items()],
    _op("isnan", 1, FLOAT, np.isnan, result=BOOL, prelude="ps.isnan"),
    _op("isinf", 1, FLOAT, np.isinf, result=BOOL, prelude="ps.isinf"),
]

BINARY: dict[str, Op] = {o.name: o for o in _BINARY}
UNARY: dict[str, Op] = {o.name: o for o in _UNARY}

#: Python operator token -> core operator ("/" is div after converting ints to f64)
PYTHON_BINARY: dict[str, str] = {o.python: o.name for o in _BINARY if o.python}
PYTHON_UNARY: dict[str, str] = {o.python: o.name for o in _UNARY if o.python}
#: the unary operators defined on floats only (math functions)
FLOAT_ONLY_UNARY = frozenset(n for n, o in UNARY.items() if o.kinds == {FLOAT})
COMPARISONS = frozenset(n for n, o in BINARY.items() if o.result == BOOL)

assert set(BINARY) == ir.BINOPS and set(UNARY) == ir.UNOPS
assert COMPARISONS == ir.COMPARISONS
assert {n for n, o in UNARY.items() if o.result == BOOL} == ir.BOOL_RESULT_UNOPS


def binary(name: str) -> Op:
    """The Op of a BinOp operator (KeyError for an unknown one)."""
    return BINARY[name]


def unary(name: str) -> Op:
    """The Op of a UnOp operator (KeyError for an unknown one)."""
    return UNARY[name]


__all__ = ["Op", "Raise", "BINARY", "UNARY", "PYTHON_BINARY", "PYTHON_UNARY",
           "FLOAT_ONLY_UNARY", "COMPARISONS", "INT", "FLOAT", "BOOL", "KINDS", "SAME",
           "kind_of", "binary", "unary", "ZERO_DIV", "ZERO_MOD", "NEG_POW"]
