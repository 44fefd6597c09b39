"""Expressions: names, literals, operators, short-circuit logic, conditional
expressions, tuples, record fields and array literals.

Calls live in calls.py, indexing in indexing.py, comprehensions in
comprehensions.py. Every operator goes through ops.py (numpy-2 typing with
weak constants). `and`, `or`, chained comparisons and `x if c else y` only
evaluate what Python evaluates: the lazy side is built in a nested builder
and becomes an ir.If when it emitted statements.
"""
from __future__ import annotations

import math
from typing import Optional

import libcst as cst

from ..core import ir
from ..core.types import BOOL, SArray, SType, array_of
from . import ops
from .context import Ctx, LocalDef, Unbound
from .coerce import harden
from .unify import merge_branches, unify_values
from .values import (ArrayV, ScalarV, TupleV, Value, flatten_value, new_buffer, or_py, py_flags,
                     py_join,
                     rebuild_value, type_name, value_stype, weak)

BINOPS = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "truediv",
    cst.FloorDivide: "floordiv", cst.Modulo: "mod", cst.Power: "pow", cst.BitAnd: "band",
    cst.BitOr: "bor", cst.BitXor: "bxor", cst.LeftShift: "shl", cst.RightShift: "shr",
}
COMPARES = {
    cst.LessThan: "lt", cst.LessThanEqual: "le", cst.GreaterThan: "gt",
    cst.GreaterThanEqual: "ge", cst.Equal: "eq", cst.NotEqual: "ne",
}
PRELUDE_CONSTANTS = {"pyshark.prelude.inf": math.inf, "pyshark.prelude.nan": math.nan}
FUNCTION_NOT_VALUE = ("functions are not values; a lambda may only be an argument to a prelude "
                      "function such as ps.map")

UNSUPPORTED = {
    cst.Dict: ("dict literals are not supported", "use arrays, tuples or NamedTuple records"),
    cst.DictComp: ("dict comprehensions are not supported", None),
    cst.Set: ("set literals are not supported", "use an array"),
    cst.SetComp: ("set comprehensions are not supported", None),
    cst.GeneratorExp: ("generator expressions are not supported", "use a list comprehension [...]"),
    cst.NamedExpr: ("assignment expressions (:=) are not supported", "assign in a separate statement"),
    cst.FormattedString: ("f-strings are not supported", "strings may only be assert messages"),
    cst.SimpleString: ("strings are not supported as values", "strings may only be assert messages "
                                                              "and docstrings"),
    cst.ConcatenatedString: ("strings are not supported as values", None),
    cst.Yield: ("'yield' is not supported; build the array with ps.map, ps.tabulate or a "
                "comprehension", None),
    cst.Await: ("'await' is not supported", None),
    cst.Imaginary: ("complex numbers are not supported", None),
    cst.StarredElement: ("star-expressions are not supported", None),
    cst.Ellipsis: ("'...' is not a value", None),
    cst.Lambda: (FUNCTION_NOT_VALUE, None),
}


def translate_expr(ctx: Ctx, node: cst.BaseExpression, expect: Optional[SType] = None) -> Value:
    """The surface value of an expression (statements emitted into ctx.b).

    `expect` is the type the context wants, used only where a value cannot
    be typed on its own (an empty list literal)."""
    if isinstance(node, cst.Integer):
        return weak(node.evaluated_value)
    if isinstance(node, cst.Float):
        return weak(float(node.evaluated_value))
    if isinstance(node, cst.Name):
        return translate_name(ctx, node)
    if isinstance(node, cst.Attribute):
        return translate_attribute(ctx, node)
    if isinstance(node, cst.BinaryOperation):
        op = BINOPS.get(type(node.operator))
        if op is None:
            raise ctx.error(node, "the '@' operator is not supported",
                            hint="write the product with ps.map and ps.reduce")
        x = translate_expr(ctx, node.left)
        y = translate_expr(ctx, node.right)
        return ops.binop(ctx, op, x, y, node, node.left, node.right)
    if isinstance(node, cst.UnaryOperation):
        return translate_unary(ctx, node)
    if isinstance(node, cst.BooleanOperation):
        return translate_boolop(ctx, node)
    if isinstance(node, cst.Comparison):
        return translate_compare(ctx, node)
    if isinstance(node, cst.IfExp):
        return translate_ifexp(ctx, node)
    if isinstance(node, cst.Call):
        from .calls import translate_call
        return translate_call(ctx, node)
    if isinstance(node, cst.Subscript):
        from .indexing import translate_subscript
        return translate_subscript(ctx, node)
    if isinstance(node, cst.Tuple):
        return TupleV(tuple(translate_element(ctx, e) for e in node.elements))
    if isinstance(node, cst.List):
        return translate_list(ctx, node, expect)
    if isinstance(node, cst.ListComp):
        from .comprehensions import translate_listcomp
        return translate_listcomp(ctx, node)
    for kind, (msg, hint) in UNSUPPORTED.items():
        if isinstance(node, kind):
            raise ctx.error(node, msg, hint)
    raise ctx.error(node, f"this expression is not supported in PyShark: {ctx.src.code(node)}")


def translate_element(ctx: Ctx, el: cst.BaseElement, expect=None) -> Value:
    if isinstance(el, cst.StarredElement):
        raise ctx.error(el, "star-expressions are not supported")
    return translate_expr(ctx, el.value, expect)


# ---------------------------------------------------------------------------
# Names


def translate_name(ctx: Ctx, node: cst.Name) -> Value:
    name = node.value
    if name in ("True", "False"):
        return weak(name == "True")
    if name == "None":
        raise ctx.error(node, "None is not a PyShark value")
    b = ctx.scope.lookup(name)
    if isinstance(b, Unbound):
        raise ctx.error(node, b.message, b.hint)
    if isinstance(b, LocalDef):
        raise ctx.error(node, FUNCTION_NOT_VALUE)
    if b is not None:
        return b
    return module_name_value(ctx, node, name)


def module_name_value(ctx: Ctx, node: cst.CSTNode, name: str) -> Value:
    env = ctx.env
    if name in env.constants:
        return env.constant_value(ctx, name, node)
    if name in env.functions:
        raise ctx.error(node, FUNCTION_NOT_VALUE)
    if name in env.records or name in env.aliases:
        raise ctx.error(node, f"the type '{name}' is not a value",
                        hint=f"call it to build a value, e.g. {name}(...)")
    return qualified_value(ctx, node, name)


def qualified_value(ctx: Ctx, node: cst.CSTNode, shown: str) -> Value:
    quals = ctx.src.qualified_names(node)
    for q in quals:
        if q in PRELUDE_CONSTANTS:
            return weak(PRELUDE_CONSTANTS[q])
    for q in quals:
        if q.startswith("pyshark.prelude."):
            raise ctx.error(node, f"ps.{q.rsplit('.', 1)[1]} is not a value here",
                            hint="prelude functions may only be called, or passed to prelude functions")
        if q.startswith("builtins."):
            raise ctx.error(node, f"the builtin '{q[9:]}' is not a value here")
    for q in quals:
        mod = q.split(".")[0]
        if "<locals>" not in q and mod != shown:
            raise ctx.error(node, f"use of non-prelude module '{mod}' ({q})",
                            hint="only pyshark.prelude may be used in PyShark code")
    raise ctx.error(node, f"name '{shown}' is not defined")


def attribute_root(node: cst.BaseExpression) -> Optional[cst.Name]:
    """The name an attribute chain starts from (`s` in `s.a.x`), if any."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node if isinstance(node, cst.Name) else None


def rooted_at_value(ctx: Ctx, node: cst.Attribute) -> bool:
    """Whether an attribute chain starts from a value (a local name or a
    module constant), so that it is a chain of record fields; otherwise it
    names something in a module (`ps.map`, `math.pi`)."""
    root = attribute_root(node)
    if root is None:
        return True
    b = ctx.scope.lookup(root.value)
    if b is not None:
        return not isinstance(b, LocalDef)
    return root.value in ctx.env.constants


def check_module_attribute(ctx: Ctx, node: cst.Attribute) -> None:
    """Only module members (`ps.map`, `math.sqrt`) may be named with a dot:
    attributes of builtins, prelude functions and types, and of this module's
    functions, records and aliases (`float.__neg__`, `int.bit_length`,
    `ps.f32.__add__`, `Vec3._make`) are outside the subset."""
    code = ctx.src.code(node)
    root = attribute_root(node)
    msg = f"attributes of builtins, functions and types ({code}) are not in the subset"
    hint = "use operators, prelude functions and the builtins the language lists, e.g. -x, ps.abs(x)"
    if root is not None:
        b = ctx.scope.lookup(root.value)
        env = ctx.env
        if isinstance(b, LocalDef) or (b is None and (root.value in env.functions or root.value in
                                                      env.records or root.value in env.aliases)):
            raise ctx.error(node, msg, hint)
        if b is None and any(q.startswith("builtins.") for q in ctx.src.qualified_names(root)):
            raise ctx.error(node, msg, hint)
    for q in ctx.src.qualified_names(node):
        if q.startswith("builtins."):
            raise ctx.error(node, msg, hint)
        if q.startswith("pyshark.prelude.") and "." in q[len("pyshark.prelude."):]:
            raise ctx.error(node, msg, hint)


def translate_attribute(ctx: Ctx, node: cst.Attribute) -> Value:
    if rooted_at_value(ctx, node):
        return field_of(ctx, translate_expr(ctx, node.value), node)
    check_module_attribute(ctx, node)
    return qualified_value(ctx, node, ctx.src.code(node))


def field_of(ctx: Ctx, v: Value, node: cst.Attribute) -> Value:
    attr = node.attr.value
    if isinstance(v, TupleV) and v.record is not None:
        names = v.record.field_names
        if attr not in names:
            raise ctx.error(node.attr, f"record {v.record.name} has no field '{attr}'",
                            hint=f"its fields are {', '.join(names)}")
        return v.elems[names.index(attr)]
    if isinstance(v, TupleV):
        raise ctx.error(node.attr, f"tuples have no field '{attr}'", hint="index it, e.g. t[0]")
    if isinstance(v, ArrayV):
        from ..core.types import SRecord
        if isinstance(v.stype.elem, SRecord):
            raise ctx.error(node.attr, f"'.{attr}' on an array of {v.stype.elem.name} records",
                            hint=f"take the field of each element: ps.map(lambda r: r.{attr}, "
                                 f"{ctx.src.code(node.value)}), or ps.unzip(...)")
        raise ctx.error(node.attr, f"arrays have no attribute '{attr}'",
                        hint="use the prelude functions, e.g. len(xs), ps.sum(xs)")
    raise ctx.error(node.attr, f"a {type_name(v.stype)} value has no attribute '{attr}'")


# ---------------------------------------------------------------------------
# Operators


def translate_unary(ctx: Ctx, node: cst.UnaryOperation) -> Value:
    x = translate_expr(ctx, node.expression)
    op = node.operator
    if isinstance(op, cst.Plus):
        return ops.expect_scalar(ctx, x, node, "unary '+'")
    name = {cst.Minus: "neg", cst.BitInvert: "bnot", cst.Not: "not"}[type(op)]
    return ops.unop(ctx, name, x, node)


def bool_value(ctx: Ctx, v: Value, node, what: str = "the condition") -> ScalarV:
    if isinstance(v, ScalarV) and v.type is BOOL:
        return v
    got = type_name(value_stype(v))
    raise ctx.error(node, f"{what} must be a bool, not {got}",
                    hint="compare explicitly, e.g. x != 0" if isinstance(v, ScalarV) else None)


def translate_condition(ctx: Ctx, node) -> ScalarV:
    return bool_value(ctx, translate_expr(ctx, node), node)


def lazy_bool(ctx: Ctx, left: ScalarV, op: str, right_fn, node) -> ScalarV:
    """`left and right` / `left or right` where right_fn(ctx2) builds the right
    operand, evaluated only when Python would evaluate it."""
    if left.weak:
        decided = (op == "land" and not left.atom.value) or (op == "lor" and left.atom.value)
        if decided:
            return left
        return right_fn(ctx)
    sub = ctx.nested()
    right = right_fn(sub)
    if not sub.b.stms:
        return ops.binop(ctx, op, left, right, node)
    r_atom = right.atom if not right.weak else ir.Const(bool(right.atom.value), BOOL)
    taken = sub.b.body([r_atom])
    short = ir.Body((), (ir.Const(op == "lor", BOOL),))
    then_b, else_b = (taken, short) if op == "land" else (short, taken)
    out = ctx.b.bind1(ir.If(left.atom, then_b, else_b, (BOOL,)), op, ctx.loc(node))
    return ScalarV(out)


def translate_boolop(ctx: Ctx, node: cst.BooleanOperation) -> ScalarV:
    op = "land" if isinstance(node.operator, cst.And) else "lor"
    left = bool_value(ctx, translate_expr(ctx, node.left), node.left, f"an operand of '{op[1:]}'")

    def right(c):
        return bool_value(c, translate_expr(c, node.right), node.right, f"an operand of '{op[1:]}'")
    return lazy_bool(ctx, left, op, right, node)


def translate_compare(ctx: Ctx, node: cst.Comparison) -> ScalarV:
    """`a < b < c` is `a < b and b < c` with b evaluated once, c lazily."""
    for t in node.comparisons:
        if type(t.operator) not in COMPARES:
            sym = ctx.src.module.code_for_node(t.operator).strip()
            hint = "compare values with == / !=" if "is" in sym else "use ps.any(lambda x: x == v, xs)"
            raise ctx.error(t.operator, f"the '{sym}' operator is not supported", hint)
    left = translate_expr(ctx, node.left)

    def chain(c: Ctx, left: Value, left_node, i: int) -> ScalarV:
        t = node.comparisons[i]
        right = translate_expr(c, t.comparator)
        r = ops.binop(c, COMPARES[type(t.operator)], left, right, node, left_node, t.comparator)
        if i + 1 == len(node.comparisons):
            return r
        return lazy_bool(c, r, "land", lambda c2: chain(c2, right, t.comparator, i + 1), node)
    try:
        return chain(ctx, left, node.left, 0)
    finally:
        chain = None                    # a recursive closure is a reference cycle


def translate_ifexp(ctx: Ctx, node: cst.IfExp) -> Value:
    cond = translate_condition(ctx, node.test)
    if cond.weak:
        return translate_expr(ctx, node.body if cond.atom.value else node.orelse)
    ct, ce = ctx.nested(), ctx.nested()
    vt = translate_expr(ct, node.body)
    ve = translate_expr(ce, node.orelse)
    vt, ve = merge_branches(ctx, vt, ve, node.body, node.orelse,
                            "the two branches of the conditional expression")
    return emit_choice(ctx, cond.atom, ct, vt, ce, ve, node)


def emit_choice(ctx: Ctx, cond: ir.Atom, ct: Ctx, vt: Value, ce: Ctx, ve: Value, node) -> Value:
    """The value of `vt if cond else ve` (already at one type): Selects when
    both sides are plain scalars computed without statements, else an If."""
    at, ae = flatten_value(vt), flatten_value(ve)
    st = value_stype(vt)
    if not ct.b.stms and not ce.b.stms and all(isinstance(a.type, type(BOOL)) for a in at):
        outs = [ctx.b.bind1(ir.Select(cond, x, y), "sel", ctx.loc(node)) if x != y else x
                for x, y in zip(at, ae)]
        return merged_meta(rebuild_value(st, outs), vt, ve)
    if not at:
        return vt
    outs = ctx.b.bind(ir.If(cond, ct.b.body(at), ce.b.body(ae), tuple(a.type for a in at)),
                      "if", ctx.loc(node))
    return merged_meta(rebuild_value(st, outs), vt, ve)


def merged_meta(res: Value, a: Value, b: Value) -> Value:
    """Ownership after a branch: an array keeps its buffer only if both sides
    agree; a value may be a list, or a Python number, if either side may be."""
    if isinstance(res, ArrayV):
        buf = a.buffer if a.buffer == b.buffer else 0
        return ArrayV(res.stype, res.parts, buf, a.from_list or b.from_list,
                      or_py(a.part_py(), b.part_py()))
    if isinstance(res, TupleV):
        return TupleV(tuple(merged_meta(r, x, y) for r, x, y in zip(res.elems, a.elems, b.elems)),
                      res.record)
    if isinstance(res, ScalarV) and not res.weak:
        return ScalarV(res.atom, py=py_join(a.py, b.py))
    return res


# ---------------------------------------------------------------------------
# Array literals


def translate_list(ctx: Ctx, node: cst.List, expect: Optional[SType]) -> ArrayV:
    if not node.elements:
        if isinstance(expect, SArray):
            return empty_array(ctx, expect, node)
        raise ctx.error(node, "the element type of an empty list [] is not known here",
                        hint="build it with a typed prelude call, e.g. ps.replicate(0, ps.f32(0.0))")
    elem_expect = expect.elem if isinstance(expect, SArray) else None
    values = [translate_element(ctx, e, elem_expect) for e in node.elements]
    nodes = [e.value for e in node.elements]
    values = [harden(v, ctx.src, n)
              for v, n in zip(unify_values(ctx, values, nodes, "the elements of this list"), nodes)]
    st = value_stype(values[0])
    cols = list(zip(*[flatten_value(v) for v in values]))
    parts = []
    for col in cols:
        t = array_of(col[0].type)
        parts.append(ctx.b.bind1(ir.ArrayLit(tuple(col), t), "lit", ctx.loc(node)))
    # a list holds its elements as they are: Python numbers where they may be ones
    return ArrayV(SArray(st), tuple(parts), new_buffer(), from_list=True,
                  py=or_py(*[py_flags(v) for v in values]))


def empty_array(ctx: Ctx, st: SArray, node) -> ArrayV:
    from ..core.types import flatten_stype
    parts = tuple(ctx.b.bind1(ir.ArrayLit((), t), "empty", ctx.loc(node)) for t in flatten_stype(st))
    return ArrayV(st, parts, new_buffer(), from_list=True)
