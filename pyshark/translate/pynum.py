"""Plain Python numbers in Python mode: where their arithmetic differs from
numpy's, and the compile errors that keep Python mode and compiled code
identical.

In Python mode a value the translator types (i64, f64, ...) may still be a
plain Python int or float (ScalarV.py): a constant (weak, or fixed at its
type beside typed values: a branch of a conditional, a list element, the
initial value of a loop-carried name, an argument or return value of a
function), and what is computed only from such values: arithmetic among
them, `int(...)`/`float(...)`/`abs(...)` of them, builtin `min`/`max`/`sum`
of lists of them. An operation with a numpy operand computes with numpy
(numpy 2 treats the Python number as a weak scalar), exactly as compiled
code does. An operation whose operands may *both* be Python numbers
computes with Python's rules, which differ from numpy's (and so from
compiled code) only here:

- `/`, and float `//` and `%`, by zero: Python raises ZeroDivisionError,
  numpy gives inf/nan (integer `//` and `%` by zero raise on both sides).
- int `**` with a negative exponent: Python gives a float (or raises
  ZeroDivisionError for `0 ** -1`), numpy raises ValueError.
- float `**`: Python raises OverflowError on overflow and ZeroDivisionError
  for `0.0 ** -1.0`, and gives a complex number for a negative base and a
  non-integral exponent; numpy gives inf/nan.
- `<<` / `>>` by a negative count: Python raises ValueError, numpy gives 0 or -1.
- comparing an int with a float: Python compares exactly, numpy converts the
  int to a float first (they differ only beyond 2**53).

Beside these, converting a Python number with a scalar type (`ps.i32(n)`,
`ps.u8(i)`, `ps.i64(y)`) raises OverflowError (ValueError for nan) in numpy 2
when it does not fit, where converting a numpy value (and compiled code)
wraps. Each of these is a compile error, located at the operand to convert,
whose hint is the conversion that makes it a numpy value. Where the
constants decide it, nothing is rejected: a nonzero constant divisor, a
non-negative constant exponent or shift count, `x ** 0.0`, `x ** 1.0`, a
comparison with a float constant below 2**53 or an int constant that is
exactly a float. Plain-int arithmetic beyond the i64 range is outside the
golden rule and is not checked.

Run-time values that are Python numbers in Python mode too -- `len(...)`,
`int(x)` and `float(x)` of a numpy value, `range`/`enumerate` indices,
builtin `sum` of an empty array, and arithmetic on these and constants --
have the PyInfo RUNTIME. Nothing about them is rejected: `/` (and float `//`
and `%`) of two of them gets a run-time check that raises ZeroDivisionError
as Python does (`float(s) / float(len(xs))` of an empty `xs`), and a numpy
conversion of one gets run-time checks that raise what numpy 2 raises
(`ps.i32(i)` of a range index beyond int32: OverflowError). The other
divergences (a negative exponent or shift count, an int-float comparison
beyond 2**53) are left as docs/language.md says: they would reject common
programs such as `2 ** i` over a range.
"""
from __future__ import annotations

import math
import operator
from typing import Optional

import libcst as cst

from ..core import ops as _core_ops

from ..core.types import I64, ScalarType
from .values import MAX_PY_VALUES, RUNTIME, ScalarV, py_values, type_name

def runtime_py():
    """The PyInfo of a run-time value that is a Python number in Python mode."""
    return RUNTIME


COMPARE = set(_core_ops.COMPARISONS)
SYMBOL = {name: (o.python or name) for name, o in _core_ops.BINARY.items()} | {"truediv": "/"}
EXACT_FLOAT_INTS = 2 ** 53


def _values(v: ScalarV):
    """The values v may have as a Python number, or None when unknown."""
    return py_values(v.py)


def _kind(v: ScalarV) -> str:
    """'int', 'float' or 'bool': how the operand computes in Python mode."""
    t = v.type
    if t.is_bool:
        return "bool"
    return "float" if t.is_float else "int"


ZERO_DIVISOR = ("for a zero divisor", "raises ZeroDivisionError", "give inf or nan")
NEGATIVE_POWER = ("for a negative exponent", "gives a float (ZeroDivisionError for 0)",
                  "raise ValueError")
FLOAT_POWER = ("for a result too large, 0.0 to a negative power or a negative base to a "
               "fractional power", "raises OverflowError or ZeroDivisionError, or gives a "
               "complex number", "give inf or nan")
NEGATIVE_SHIFT = ("for a negative count", "raises ValueError", "give 0 or -1")
INT_FLOAT_COMPARE = ("for an int and a float beyond 2**53", "compares them exactly",
                     "convert the int to a float first")


def what_python_numbers() -> str:
    """How messages say which values are plain Python numbers."""
    return "(constants, or values computed only from constants)"


def _float_power_differs(a, b) -> bool:
    """Whether Python's a ** b (a float power) raises or is complex where numpy's is not."""
    try:
        r = a ** b
    except (OverflowError, ZeroDivisionError, ValueError):
        return True
    return isinstance(r, complex)


def _compare_differs(op: str, a, b) -> bool:
    """Whether comparing a and b exactly (Python) and after converting an int
    to a float (numpy) disagree."""
    f = _PY_OPS[op]
    try:
        return f(a, b) != f(float(a), float(b))
    except OverflowError:
        return True


def binop_divergence(op: str, x: ScalarV, y: ScalarV, floats: bool) -> Optional[tuple]:
    """(when, what Python does, what numpy and compiled code do) where `x op y`
    may give a different result in Python mode than in compiled code, or
    None. x and y are the operands as written; where the values they may
    have as Python numbers are known (constants, branches of constants,
    lists of constants), they decide. `floats`: whether the operation
    computes in floats."""
    if not (x.py and y.py) or (x.weak and y.weak):
        return None
    xs, ys = _values(x), _values(y)
    if op == "truediv" or (op in ("floordiv", "mod") and floats):
        if ys is not None and 0 not in ys:
            return None
        return ZERO_DIVISOR
    if op == "pow" and not floats:
        if ys is not None and all(b >= 0 for b in ys):
            return None
        return NEGATIVE_POWER
    if op == "pow":
        if xs is not None and ys is not None:
            if not any(_float_power_differs(a, b) for a in xs for b in ys):
                return None
        elif ys is not None and all(b in (0, 1) for b in ys):
            return None                          # x ** 0.0 is 1.0 and x ** 1.0 is x in both
        elif xs is not None and all(a == 1 for a in xs):
            return None                          # 1.0 ** y is 1.0 in both, nan included
        return FLOAT_POWER
    if op in ("shl", "shr"):
        if ys is not None and all(b >= 0 for b in ys):
            return None
        return NEGATIVE_SHIFT
    if op in COMPARE:
        if {_kind(x), _kind(y)} != {"int", "float"}:
            return None
        if xs is not None and ys is not None:
            if not any(_compare_differs(op, a, b) for a in xs for b in ys):
                return None
            return INT_FLOAT_COMPARE
        known = xs if xs is not None else ys
        if known is not None:
            # against any int (float) value, comparing with these floats (ints) is the same
            # exactly and after the conversion when they are below 2**53 (exact floats)
            if all(_exact_bound(v) for v in known):
                return None
        return INT_FLOAT_COMPARE
    return None


def _exact_bound(v) -> bool:
    """A float below 2**53 (or not finite), or an int that is exactly a float:
    comparisons of any int (float) with it give the same exactly and after
    converting the int to a float."""
    if isinstance(v, float):
        return not math.isfinite(v) or abs(v) < EXACT_FLOAT_INTS
    try:
        return float(v) == v
    except OverflowError:
        return False


# ---------------------------------------------------------------------------
# The PyInfo of results (what a Python number computes to, where known)


_PY_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "band": operator.and_, "bor": operator.or_, "bxor": operator.xor,
    "shl": operator.lshift, "shr": operator.rshift,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge,
}
_BIG = 1 << 64


def _apply(op: str, a, b):
    """Python's a op b, or raise _Unknown where it is not a small number."""
    if op == "pow" and isinstance(a, int) and isinstance(b, int) and abs(a) > 1 and b > 64:
        raise _Unknown()
    if op == "shl" and isinstance(b, int) and b > 64:
        raise _Unknown()
    r = _PY_OPS[op](a, b)
    if isinstance(r, complex) or (isinstance(r, int) and not isinstance(r, bool)
                                  and not -_BIG < r < _BIG):
        raise _Unknown()
    return r


class _Unknown(Exception):
    pass


def binop_py(op: str, x: ScalarV, y: ScalarV):
    """The PyInfo of `x op y` (an operator, not a prelude ufunc): a Python
    number only when both operands may be; its values where theirs are known."""
    if not (x.py and y.py):
        return False
    if RUNTIME in (x.py, y.py) and True not in (x.py, y.py):
        return RUNTIME
    xs, ys = _values(x), _values(y)
    if xs is None or ys is None or op not in _PY_OPS or len(xs) * len(ys) > MAX_PY_VALUES ** 2:
        return True
    out = set()
    for a in xs:
        for b in ys:
            try:
                out.add(_apply(op, a, b))
            except ZeroDivisionError:
                continue                # raises on both sides (or is rejected above)
            except (_Unknown, ArithmeticError, ValueError, TypeError):
                return True
    if not out or len(out) > MAX_PY_VALUES:
        return True
    return frozenset(out)


_PY_UNOPS = {"neg": operator.neg, "bnot": operator.invert, "not": operator.not_, "abs": abs}


def unop_py(op: str, info):
    """The PyInfo of `-x`, `~x`, `not x` or builtin `abs(x)` (Python numbers stay ones)."""
    vals = py_values(info)
    if vals is None or op not in _PY_UNOPS:
        return info
    try:
        return frozenset(_PY_UNOPS[op](v) for v in vals)
    except (ArithmeticError, TypeError, ValueError):
        return True


def conversion_py(t: ScalarType, info):
    """The PyInfo of builtin int(x), float(x) or bool(x) of a Python number x."""
    vals = py_values(info)
    if vals is None:
        return info
    fn = bool if t.is_bool else int if t.is_int else float
    try:
        return frozenset(fn(v) for v in vals)
    except (ArithmeticError, TypeError, ValueError):
        return True


def _error(ctx, node, message: str, hint: str, summary: str):
    err = ctx.src.error(node, message, hint)
    err.pynum_summary = summary        # how a caller's error about an argument quotes it
    return err


def check_binop(ctx, op: str, x: ScalarV, y: ScalarV, node, x_node=None, y_node=None) -> bool:
    """A located error when `x op y` may differ between Python mode and
    compiled code because both operands may be plain Python numbers. It is
    located at the operand the hint converts: one that is not a constant,
    the right one when neither is.

    Where an operand is a run-time Python number (PyInfo RUNTIME), nothing
    is rejected: a possibly zero divisor returns True, and the caller emits
    a run-time check that raises ZeroDivisionError as Python does; the other
    divergences are left as documented (docs/language.md)."""
    if not (x.py and y.py):
        return False
    why = binop_divergence(op, x, y, x.type.is_float or y.type.is_float)
    if why is None:
        return False
    if RUNTIME in (x.py, y.py):
        return why is ZERO_DIVISOR
    when, python, numpy = why
    v, n = (x, x_node or node) if y.weak else (y, y_node or node)
    sym = SYMBOL.get(op, op)
    code = ctx.src.code(n)
    raise _error(ctx, n, f"both operands of '{sym}' may be plain Python numbers in Python mode "
                         f"{what_python_numbers()}; {when}, Python "
                         f"{python} while numpy and compiled code {numpy}",
                 hint=f"make this operand a numpy value: write {type_name(v.type)}({code})",
                 summary=f"'{ctx.src.code(node)}' differs: {when}, Python {python} while numpy "
                         f"and compiled code {numpy}")


def zero_division_message(op: str, x: ScalarV, y: ScalarV) -> str:
    """The message of the ZeroDivisionError that Python raises for `x op 0`
    of Python numbers of these kinds, as this Python words it."""
    a = 1.0 if x.type.is_float else 1
    b = 0.0 if y.type.is_float else 0
    try:
        _PY_OPS[op](a, b)
    except ZeroDivisionError as e:
        return str(e)
    return "division by zero"


def conversion_divergence(x: ScalarV, t: ScalarType) -> Optional[str]:
    """What numpy's `t(x)` of a plain Python number x (not a constant, which is
    converted at compile time) does where converting a numpy value wraps,
    or None."""
    if not x.py or x.weak or x.type.is_bool or not t.is_int:
        return None
    vals = _values(x)
    if vals is not None:
        import numpy as np
        try:
            with np.errstate(all="ignore"):
                for v in vals:
                    t.dtype.type(v)
        except (OverflowError, ValueError):
            return "raises OverflowError (ValueError for nan)" if x.type.is_float else \
                "raises OverflowError"
        return None
    if x.type.is_float:
        return "raises OverflowError (ValueError for nan)"
    if t is I64 or (x.type.is_int and _fits(x.type, t)):
        return None
    return "raises OverflowError"


def _fits(s: ScalarType, t: ScalarType) -> bool:
    import numpy as np
    a, b = np.iinfo(s.dtype), np.iinfo(t.dtype)
    return b.min <= a.min and a.max <= b.max


def check_conversion(ctx, x: ScalarV, t: ScalarType, node: cst.CSTNode, name: str) -> bool:
    """A located error when `name(x)` (a prelude type) may differ between
    Python mode and compiled code because x may be a plain Python number.
    For a run-time Python number (PyInfo RUNTIME) it returns True instead:
    the caller emits the run-time checks that raise what numpy 2 raises."""
    does = conversion_divergence(x, t)
    if does is None:
        return False
    if x.py is RUNTIME:
        return True
    code = ctx.src.code(node)
    kind = "float" if x.type.is_float else "int"
    raise _error(ctx, node, f"the argument of {name}(...) may be a plain Python {kind} in Python "
                            f"mode {what_python_numbers()}; where it "
                            f"does not fit {type_name(t)}, numpy 2 {does} converting it, while "
                            f"converting a numpy value, as compiled code does, gives a value",
                 hint=f"convert a numpy value: write {name}({type_name(x.type)}({code}))",
                 summary=f"'{name}({code})' differs: where the value does not fit "
                         f"{type_name(t)}, numpy 2 {does} while compiled code gives a value")


def first_python_number(v):
    """The first scalar in v that may be a plain Python number (arrays: None)."""
    from .values import TupleV
    if isinstance(v, ScalarV):
        return v if v.py else None
    if isinstance(v, TupleV):
        for e in v.elems:
            hit = first_python_number(e)
            if hit is not None:
                return hit
    return None


def conversion_hint(ctx, v, node) -> str:
    """How to make the plain Python numbers in value v (written as `node`)
    numpy values."""
    from .values import ArrayV
    code = ctx.src.code(node)
    if isinstance(v, ScalarV):
        return f"make it a numpy value: write {type_name(v.type)}({code})"
    if isinstance(v, ArrayV):
        return f"make it a numpy array: write ps.array({code})"
    s = first_python_number(v)
    if s is not None:
        return f"convert the constants in it, e.g. {type_name(s.type)}(...)"
    return "convert the constants in it with ps.array(...) or a scalar type"
