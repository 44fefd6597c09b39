"""Scalar prelude functions and builtins: conversions, math, min/max, extremes.

ps.* math functions are numpy ufuncs in Python mode: their result is a numpy
scalar (never weak) of the argument's type, and with two arguments a weak one
takes the other's type. The builtins `min`/`max` are Python's: they compare
with `>`/`<` and return an operand unchanged, so a weak operand must already
have the type of the typed ones (strict), and `abs` of a constant stays a
Python number (weak).
"""
from __future__ import annotations

import builtins

import numpy as np

from ..core import ir
from ..core.types import BOOL, F64, I64, SScalar, ScalarType
from .coerce import harden, python_kind
from .ops import FLOAT_UNOPS, binop, convert, unop
from .prelude_common import PCall, describe
from .pynum import check_conversion, conversion_py, runtime_py
from .values import ArrayV, ScalarV, TypeArg, py_join, type_name, weak

CONVERSIONS = {t.value: t for t in ScalarType if t is not BOOL}
BUILTIN_CONVERSIONS = {"int": I64, "float": F64, "bool": BOOL}

MATH_UNARY = ("sqrt exp log log2 log10 sin cos tan asin acos atan sinh cosh tanh "
              "floor ceil round trunc isnan isinf abs sign").split()


def lower_conversion(c: PCall, t: ScalarType):
    """ps.f32(x), int(x), float(x), bool(x): numpy conversion of a scalar."""
    c.count(1, usage=f"{c.name}(x)")
    v = c.args[0]
    if isinstance(v, ArrayV):
        raise c.error(0, f"{c.name}(...) converts a scalar, not {describe(v)}",
                      hint=f"convert element by element: ps.map(lambda x: {c.name}(x), xs)")
    x = c.scalar(0)
    builtin = c.qualname.startswith("builtins.")
    if not builtin and check_conversion(c.ctx, x, t, c.arg_node(0), c.name):
        _check_numpy_int(c, x, t)
    # int(x), float(x), bool(x) give Python numbers (of a constant, or of a
    # numpy value: pynum.runtime_py); ps.f32(x) a numpy scalar
    py = False
    if builtin:
        py = conversion_py(t, x.py) if x.py else runtime_py()
        if t.is_int and x.type.is_float and not isinstance(x.atom, ir.Const):
            _check_python_int(c, x)
    return convert(c.ctx, t, x, c.arg_node(0), py=py)


def _check_python_int(c: PCall, x: ScalarV, bounds: bool = True) -> None:
    """int(x) of a float raises what Python raises: ValueError for nan,
    OverflowError for an infinity. A finite value beyond int64 is a Python
    int in Python mode (outside the golden rule, as int arithmetic beyond
    int64 is); compiled code raises OverflowError rather than wrap."""
    bind = c.bind1
    nan = bind(ir.UnOp("isnan", x.atom), "isnan")
    c.emit_assert(bind(ir.UnOp("not", nan), "notnan"), "cannot convert float NaN to integer",
                  "ValueError")
    inf = bind(ir.UnOp("isinf", x.atom), "isinf")
    c.emit_assert(bind(ir.UnOp("not", inf), "finite"), "cannot convert float infinity to integer",
                  "OverflowError")
    if not bounds:
        return
    lo = bind(ir.BinOp("ge", x.atom, ir.Const(-2.0 ** 63, x.type)), "lo")
    hi = bind(ir.BinOp("lt", x.atom, ir.Const(2.0 ** 63, x.type)), "hi")
    c.emit_assert(bind(ir.BinOp("land", lo, hi), "fits"),
                  "the float is out of the range of the 64-bit int compiled code computes with",
                  "OverflowError")


def _check_numpy_int(c: PCall, x: ScalarV, t: ScalarType) -> None:
    """numpy 2's `t(x)` of a Python number x: int(x) first (a float: ValueError
    for nan, OverflowError for an infinity), then OverflowError where the
    integer does not fit t, where converting a numpy value wraps. A float
    fits exactly when min - 1 < x < max + 1 (its truncation is in range);
    both bounds are exact in f64 for every integer type but the 64-bit
    ones, whose bounds are powers of two."""
    bind = c.bind1
    c.ctx.fs.python_checks += 1
    info = np.iinfo(t.dtype)
    lo, hi = int(info.min), int(info.max)
    if x.type.is_float:
        _check_python_int(c, x, bounds=False)
        xf = x.atom if x.type is F64 else bind(ir.Convert(F64, x.atom), "x")
        lo_ok = ir.BinOp("ge", xf, ir.Const(float(lo), F64)) if lo == -2 ** 63 else \
            ir.BinOp("gt", xf, ir.Const(float(lo - 1), F64))
        hi_ok = ir.BinOp("lt", xf, ir.Const(float(hi + 1), F64))
    else:
        lo_ok = ir.BinOp("ge", x.atom, ir.Const(max(lo, -2 ** 63), x.type))
        hi_ok = ir.BinOp("le", x.atom, ir.Const(min(hi, 2 ** 63 - 1), x.type))
    fits = bind(ir.BinOp("land", bind(lo_ok, "lo"), bind(hi_ok, "hi")), "fits")
    c.emit_assert(fits, f"Python integer out of bounds for {t.dtype.name}", "OverflowError")


def lower_math_unary(c: PCall, op: str):
    c.count(1, usage=f"{c.name}(x)")
    x = c.scalar(0, "a number")
    if x.weak and op in FLOAT_UNOPS and not x.type.is_float and not x.type.is_bool:
        x = convert(c.ctx, F64, x, c.arg_node(0))           # np.sqrt(2) is float64
    return unop(c.ctx, op, x, c.arg_node(0), fold_weak=False)


def _both_typed(c: PCall, x: ScalarV, y: ScalarV) -> tuple[ScalarV, ScalarV]:
    """Two weak operands of a ufunc: numpy gives them their default types
    (int and float meet at f64)."""
    x, y = harden(x, c.src, c.arg_node(0)), harden(y, c.src, c.arg_node(1))
    if x.type is not y.type:
        x = convert(c.ctx, F64, x, c.arg_node(0))
        y = convert(c.ctx, F64, y, c.arg_node(1))
    return x, y


def lower_math_binary(c: PCall, op: str):
    """ps.atan2(y, x), ps.pow(x, y): a weak argument takes the other's type."""
    c.count(2, usage=f"{c.name}(x, y)")
    x, y = c.scalar(0, "a number"), c.scalar(1, "a number")
    if x.weak and y.weak:
        x, y = _both_typed(c, x, y)
    if op == "atan2":
        for i, v in enumerate((x, y)):
            if not v.weak and not v.type.is_float:
                raise c.error(i, f"ps.atan2 needs float arguments, not {type_name(v.type)}",
                              hint="convert first, e.g. ps.f64(...)")
    return binop(c.ctx, op, x, y, c.node, c.arg_node(0), c.arg_node(1))


def lower_ps_minmax(c: PCall, op: str):
    """ps.min / ps.max: numpy.minimum / maximum, NaN propagates, left to right."""
    c.count(2, None, usage=f"{c.name}(a, b, ...)")
    vals = [c.scalar(i, "a number") for i in range(len(c.args))]
    acc = vals[0]
    acc_node = c.arg_node(0)
    for i in range(1, len(vals)):
        y = vals[i]
        if acc.weak and y.weak:
            acc, y = _both_typed(c, acc, y)
        acc = binop(c.ctx, op, acc, y, c.node, acc_node, c.arg_node(i))
        acc_node = c.node
    return acc


def lower_builtin_minmax(c: PCall, op: str):
    """Builtin min/max. One array argument: like ps.minimum / ps.maximum,
    but for NaN in a float array, where Python's rule holds
    (prelude_arrays._python_extreme). Scalars: Python's rule, max(a, b) =
    b if b > a else a, left to right."""
    if len(c.args) == 1:
        if isinstance(c.args[0], ArrayV):
            from .prelude_arrays import lower_extreme
            return lower_extreme(c, op)
        raise c.error(0, f"{c.name} of a single {describe(c.args[0])}",
                      hint=f"{c.name}(xs) takes an array; {c.name}(a, b, ...) takes scalars")
    c.count(2, None, usage=f"{c.name}(a, b, ...)")
    vals = []
    for i, v in enumerate(c.args):
        if isinstance(v, ArrayV):
            raise c.error(i, f"{c.name} with several arguments compares scalars, "
                             f"but argument {i + 1} is {describe(v)}",
                          hint=f"for the elements of an array use {c.name}(xs)")
        vals.append(c.scalar(i, "a scalar"))
    if builtins.all(v.weak for v in vals):
        pick = builtins.min if op == "min" else builtins.max
        return weak(pick(v.atom.value for v in vals))
    typed = [(i, v) for i, v in enumerate(vals) if not v.weak]
    t = typed[0][1].type
    for i, v in typed[1:]:
        if v.type is not t:
            raise c.error(i, f"{c.name} mixes {type_name(t)} and {type_name(v.type)}; "
                             f"convert one argument explicitly",
                          hint=f"e.g. {type_name(t)}({c.src.code(c.arg_node(i))})")
    fixed = []
    for i, v in enumerate(vals):
        if v.weak:
            if v.type is not t:
                code = c.src.code(c.arg_node(i))
                others = ", ".join(c.src.code(c.arg_node(j)) for j in range(len(vals)) if j != i)
                raise c.error(i, f"the builtin {c.name} returns its arguments unchanged, so this "
                                 f"{describe(v)[len('a '):].lstrip()} (a Python {python_kind(v)} in "
                                 f"Python mode) must already be {type_name(t)}",
                              hint=f"write {type_name(t)}({code}), or ps.{c.name}({others}, {code}) "
                                   f"for a clamp (the prelude's {c.name} gives the constant the "
                                   f"other operand's type)")
            v = harden(v, c.src, c.arg_node(i))
        fixed.append(v)
    cmp = "gt" if op == "max" else "lt"
    acc = fixed[0].atom
    for v in fixed[1:]:
        better = c.bind1(ir.BinOp(cmp, v.atom, acc), "better")
        acc = c.bind1(ir.Select(better, v.atom, acc), op)
    py = False
    for v in fixed:
        py = py_join(py, v.py)
    return ScalarV(acc, py=py)          # one of the arguments


def lower_builtin_abs(c: PCall):
    c.count(1, usage="abs(x)")
    x = c.scalar(0, "a number")
    return unop(c.ctx, "abs", x, c.arg_node(0), fold_weak=True)


def extreme_const(t: ScalarType, highest: bool) -> ir.Const:
    """The type's largest (smallest) value: iinfo max/min, +-inf, True/False."""
    if t.is_bool:
        return ir.Const(highest, BOOL)
    if t.is_int:
        info = np.iinfo(t.dtype)
        return ir.Const(int(info.max if highest else info.min), t)
    return ir.Const(float("inf") if highest else float("-inf"), t)


def lower_extreme_of_type(c: PCall, highest: bool):
    """ps.highest(T) / ps.lowest(T)."""
    c.count(1, usage=f"{c.name}(ps.f32)")
    t = c.args[0]
    if not isinstance(t, TypeArg) or not isinstance(t.stype, SScalar):
        raise c.error(0, f"{c.name} expects a scalar type such as ps.f32, not {describe(t)}")
    return ScalarV(extreme_const(t.stype.t, highest))


def handlers() -> dict:
    h = {}
    P = "pyshark.prelude."
    for name, t in CONVERSIONS.items():
        h[P + name] = (lambda t: lambda c: lower_conversion(c, t))(t)
    for name, t in BUILTIN_CONVERSIONS.items():
        h["builtins." + name] = (lambda t: lambda c: lower_conversion(c, t))(t)
    for op in MATH_UNARY:
        h[P + op] = (lambda op: lambda c: lower_math_unary(c, op))(op)
    h[P + "atan2"] = lambda c: lower_math_binary(c, "atan2")
    h[P + "pow"] = lambda c: lower_math_binary(c, "power")   # numpy.power, not `**`
    h[P + "min"] = lambda c: lower_ps_minmax(c, "min")
    h[P + "max"] = lambda c: lower_ps_minmax(c, "max")
    h["builtins.min"] = lambda c: lower_builtin_minmax(c, "min")
    h["builtins.max"] = lambda c: lower_builtin_minmax(c, "max")
    h["builtins.abs"] = lower_builtin_abs
    h[P + "highest"] = lambda c: lower_extreme_of_type(c, True)
    h[P + "lowest"] = lambda c: lower_extreme_of_type(c, False)
    return h
