"""Scalar operators with numpy 2 typing and weak constants.

Weak operands are folded at compile time with Python semantics (they are
Python numbers in Python mode too); a weak operand beside a typed one takes its
type; two typed operands must have one type. Every function emits into
`ctx.b` and returns a ScalarV. An operation of two operands that may be
plain Python numbers in Python mode (ScalarV.py) gives such a number too, and
is a compile error where Python's result may differ from numpy's (pynum.py);
the prelude's ufuncs (ps.pow, ps.atan2, ps.min, ps.max) give numpy values.

`ctx` is the translator's expression context: it has `.b` (Builder), `.src`
(SourceInfo) and `.loc(node)`.
"""
from __future__ import annotations

import math
import operator

import libcst as cst

from ..core import ir
from ..core import ops as core_ops
from ..core.types import BOOL, F32, F64, I64, ScalarType
from .coerce import const_fits, const_text, const_value, harden, weak_to
from .pynum import binop_py, check_binop, unop_py, zero_division_message
from .values import ArrayV, ScalarV, Value, py_join, type_name, weak

ARITH = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow"}
# The operators' kinds and spellings come from the one table (core/ops.py);
# the translator adds only its surface name for `/` ("truediv").
BITWISE = {name for name, o in core_ops.BINARY.items()
           if core_ops.INT in o.kinds and o.kinds <= {core_ops.INT, core_ops.BOOL}}
COMPARE = set(core_ops.COMPARISONS)
SYMBOL = {name: (o.python or name) for name, o in core_ops.BINARY.items()} | {"truediv": "/"}
assert BITWISE == {"band", "bor", "bxor", "shl", "shr"}, BITWISE

_PY_FOLD = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "band": operator.and_, "bor": operator.or_, "bxor": operator.xor,
    "shl": operator.lshift, "shr": operator.rshift,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge,
    "land": lambda a, b: a and b, "lor": lambda a, b: a or b,
}


MAX_CONST_BITS = 4096      # weak int folding refuses results beyond this size
UFUNCS = {"power", "atan2", "min", "max"}     # prelude functions: numpy results


def expect_scalar(ctx, v: Value, node: cst.CSTNode, what: str) -> ScalarV:
    if isinstance(v, ScalarV):
        return v
    if isinstance(v, ArrayV):
        raise ctx.src.error(node, f"{what} is not defined on arrays in v1",
                            hint="apply it element by element with ps.map")
    raise ctx.src.error(node, f"{what} is not defined on tuples or records")


def _fold(ctx, op: str, a, b, node: cst.CSTNode) -> ScalarV:
    """Python semantics for two weak constants."""
    if isinstance(a, bool) and isinstance(b, bool) and op not in COMPARE | {"land", "lor", "band", "bor", "bxor"}:
        raise ctx.src.error(node, f"arithmetic '{SYMBOL[op]}' on bool values is not supported",
                            hint="convert with int(...) first")
    ints = isinstance(a, int) and isinstance(b, int)
    if ints and ((op == "pow" and b > 0 and abs(a) > 1 and b * a.bit_length() > MAX_CONST_BITS)
                 or (op == "shl" and a != 0 and b > MAX_CONST_BITS)):
        raise ctx.src.error(node, "constant expression is far too large to compute",
                            hint="constants must fit a PyShark type (at most 64 bits)")
    try:
        return weak(_PY_FOLD[op](a, b))
    except ZeroDivisionError:
        raise ctx.src.error(node, "division by zero in a constant expression") from None
    except (OverflowError, ValueError) as exc:
        raise ctx.src.error(node, f"constant expression cannot be evaluated: {exc}") from None


def unify(ctx, op: str, x: ScalarV, y: ScalarV, node: cst.CSTNode,
          x_node: cst.CSTNode | None = None, y_node: cst.CSTNode | None = None) -> tuple[ScalarV, ScalarV]:
    """Both operands at one type (a weak one takes the typed one's type).

    A weak float beside a typed integer gives f64 (numpy 2: int32 * 0.5 is
    float64), so the integer operand is converted."""
    x_node, y_node = x_node or node, y_node or node
    if x.weak and not y.weak:
        x, y, x_node, y_node, swapped = y, x, y_node, x_node, True
    else:
        swapped = False
    # now: either both typed, or x typed / y weak (or both weak, handled by callers)
    if not x.weak and y.weak:
        t = x.type
        yv = y.atom.value
        if t.is_int and isinstance(yv, float):
            x = convert(ctx, F64, x, node)
            y = ScalarV(ir.Const(float(yv), F64), py=y.py)
        elif t.is_bool != isinstance(yv, bool):
            raise ctx.src.error(y_node, f"'{SYMBOL.get(op, op)}' between {type_name(t)} and a "
                                        f"{type_name(y.type)} constant", hint="convert explicitly")
        else:
            y = weak_to(y, t, ctx.src, y_node)
    elif not x.weak and not y.weak and x.type is not y.type:
        if swapped:
            x, y, x_node, y_node = y, x, y_node, x_node
        # hint: convert the integer operand to the float type, else the
        # right operand to the left one's type
        if x.type.is_float and not y.type.is_float:
            target, other_node = x.type, y_node
        elif y.type.is_float and not x.type.is_float:
            target, other_node = y.type, x_node
        else:
            target, other_node = x.type, y_node
        raise ctx.src.error(node, f"mixed-type arithmetic {type_name(x.type)} {SYMBOL.get(op, op)} "
                                  f"{type_name(y.type)}; convert one operand explicitly",
                            hint=f"e.g. {type_name(target)}({ctx.src.code(other_node)})")
    return (y, x) if swapped else (x, y)


def binop(ctx, op: str, x: Value, y: Value, node: cst.CSTNode,
          x_node: cst.CSTNode | None = None, y_node: cst.CSTNode | None = None) -> ScalarV:
    """x op y for a surface operator name (see SYMBOL; 'truediv' is `/`)."""
    x = expect_scalar(ctx, x, x_node or node, f"operator '{SYMBOL.get(op, op)}'")
    y = expect_scalar(ctx, y, y_node or node, f"operator '{SYMBOL.get(op, op)}'")
    if x.weak and y.weak and op in _PY_FOLD:
        return _fold(ctx, op, x.atom.value, y.atom.value, node)
    if x.weak and y.weak:          # min/max/atan2 of two constants: numpy gives f64/i64
        x, y = harden(x, ctx.src, x_node or node), harden(y, ctx.src, y_node or node)
        if x.type is not y.type:
            x, y = convert(ctx, F64, x, node), convert(ctx, F64, y, node)
    written = (x, y)
    x, y = unify(ctx, op, x, y, node, x_node, y_node)
    t = x.type
    sym = SYMBOL.get(op, op)
    if t.is_bool and op not in COMPARE | {"land", "lor", "band", "bor", "bxor", "min", "max"}:
        raise ctx.src.error(node, f"operator '{sym}' is not defined on bool", hint="convert with int(...)")
    if op in ("land", "lor") and not t.is_bool:
        raise ctx.src.error(node, f"'{sym}' needs bool operands, not {type_name(t)}",
                            hint="compare explicitly, e.g. x != 0")
    if op in BITWISE and t.is_float:
        raise ctx.src.error(node, f"operator '{sym}' is not defined on {type_name(t)}")
    if op in ("shl", "shr") and t.is_bool:
        raise ctx.src.error(node, f"operator '{sym}' is not defined on bool")
    if op == "atan2" and not t.is_float:
        raise ctx.src.error(node, f"atan2 needs float arguments, not {type_name(t)}",
                            hint=f"convert first, e.g. ps.f64(...)")
    if op in UFUNCS:
        py = False
    elif op in ("land", "lor"):
        py = py_join(x.py, y.py)    # Python's `and`/`or` give one of the operands
    else:
        if check_binop(ctx, op, *written, node, x_node, y_node):
            _check_python_divisor(ctx, op, written, y, node)
        py = binop_py(op, *written)
    if op == "truediv":
        if not t.is_float:
            x, y = convert(ctx, F64, x, node), convert(ctx, F64, y, node)
        op = "div"
    loc = ctx.loc(node)
    return ScalarV(ctx.b.bind1(ir.BinOp(op, x.atom, y.atom), "t", loc), py=py)


def _check_python_divisor(ctx, op: str, written, y: ScalarV, node) -> None:
    """Python raises ZeroDivisionError for `/` (and float `//`, `%`) of two
    Python numbers where numpy gives inf/nan: a run-time check does the
    same in compiled code (pynum.check_binop)."""
    loc = ctx.loc(node)
    ctx.fs.python_checks += 1
    nonzero = ctx.b.bind1(ir.BinOp("ne", y.atom, ir.Const(y.type.dtype.type(0).item(), y.type)),
                          "nonzero", loc)
    ctx.b.emit(ir.Assert(nonzero, zero_division_message(op, *written), "ZeroDivisionError"), (), loc)


_PY_UNFOLD = {"neg": operator.neg, "bnot": operator.invert, "not": operator.not_}
FLOAT_UNOPS = set(core_ops.FLOAT_ONLY_UNARY)


def unop(ctx, op: str, x: Value, node: cst.CSTNode, fold_weak: bool = True) -> ScalarV:
    """A unary operator or math function (ir.UNOPS names).

    `-c`, `~c` and `not c` of a weak constant stay weak (Python numbers);
    prelude math functions return numpy scalars, so callers pass
    fold_weak=False and a weak argument is first fixed at its default type."""
    x = expect_scalar(ctx, x, node, f"'{op}'")
    if x.weak and fold_weak and op in _PY_UNFOLD:
        v = x.atom.value
        if op != "not" and isinstance(v, bool):
            raise ctx.src.error(node, f"'{op}' on a bool constant is not supported")
        if op == "bnot" and isinstance(v, float):
            raise ctx.src.error(node, "'~' is not defined on floats")
        return weak(_PY_UNFOLD[op](v))
    if x.weak and fold_weak and op == "abs":
        return weak(abs(x.atom.value))
    if x.weak:
        x = harden(x, ctx.src, node)
    t = x.type
    if op == "not" and not t.is_bool:
        raise ctx.src.error(node, f"'not' needs a bool operand, not {type_name(t)}",
                            hint="compare explicitly, e.g. x == 0")
    if op == "bnot" and not t.is_int:
        raise ctx.src.error(node, f"'~' needs an integer operand, not {type_name(t)}")
    if op in ("neg", "abs", "sign") and t.is_bool:
        raise ctx.src.error(node, f"'{op}' is not defined on bool")
    if op in FLOAT_UNOPS and not t.is_float:
        raise ctx.src.error(node, f"ps.{op} needs a float argument, not {type_name(t)}",
                            hint=f"convert first, e.g. ps.f64(...)")
    # `-x`, `~x`, `not x` and builtin abs keep a Python number one; ps.* math gives numpy
    py = unop_py(op, x.py) if fold_weak else False
    return ScalarV(ctx.b.bind1(ir.UnOp(op, x.atom), "t", ctx.loc(node)), py=py)


def convert(ctx, t: ScalarType, x: Value, node: cst.CSTNode, py: bool | None = None) -> ScalarV:
    """numpy conversion `t(x)`: a constant argument folds to a typed constant.

    `py` says whether the result is a plain Python number in Python mode:
    True for the builtins int/float/bool, False for a prelude type (a numpy
    scalar); None (an implicit conversion inside an operation) keeps x's."""
    x = expect_scalar(ctx, x, node, f"conversion to {type_name(t)}")
    if py is None:
        py = x.py
    if isinstance(x.atom, ir.Const) and x.weak:
        v = x.atom.value
        if t.is_bool:
            return ScalarV(ir.Const(bool(v), BOOL), py=py)
        if t.is_int:
            if isinstance(v, float):
                if math.isnan(v) or math.isinf(v):
                    raise ctx.src.error(node, f"cannot convert {v} to {type_name(t)}")
                v = int(v)          # truncates toward zero, as numpy does
            if not const_fits(int(v), t):
                raise ctx.src.error(node, f"{const_text(v)} does not fit {type_name(t)}")
            return ScalarV(ir.Const(int(v), t), py=py)
        if isinstance(v, int) and not isinstance(v, bool):
            try:
                float(v)
            except OverflowError:
                raise ctx.src.error(node, f"the constant {const_text(v)} is too large for "
                                          f"{type_name(t)}") from None
        return ScalarV(ir.Const(const_value(v, t), t), py=py)
    if x.type is t:
        return ScalarV(x.atom, py=py)
    return ScalarV(ctx.b.bind1(ir.Convert(t, x.atom), "t", ctx.loc(node)), py=py)
