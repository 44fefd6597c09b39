"""Bringing several values to one surface type: the two sides of a branch
(if statements, conditional expressions, guard returns) and the elements of
an array literal.

LANGUAGE.md's rule for weak constants here is the strict one: beside a typed
value a weak constant must already have that type (its default type: int is
i64, float is f64), because in Python mode it stays a Python number (`x if c
else 0.0` is a Python float whenever c is false). The error's hint is the
conversion to write. With nothing typed, the constants keep their default
types (int and float constants together give f64, as numpy does).
"""
from __future__ import annotations

import libcst as cst

from ..core import ir
from ..core.types import BOOL, F64
from .coerce import harden, python_kind
from .values import ArrayV, ScalarV, TupleV, Value, type_name, value_stype


def unify_values(ctx, values: list[Value], nodes: list[cst.CSTNode], what: str) -> list[Value]:
    """The values at one surface type (a located error if they cannot be)."""
    first = values[0]
    if all(isinstance(v, ScalarV) for v in values):
        typed = [v for v in values if not v.weak]
        if typed:
            t = typed[0].type
            for v, n in zip(values, nodes):
                if not v.weak and v.type is not t:
                    raise ctx.src.error(n, f"{what} mix {type_name(t)} and {type_name(v.type)}",
                                        hint=f"convert explicitly, e.g. {type_name(t)}({ctx.src.code(n)})")
            out = []
            for v, n in zip(values, nodes):
                if v.weak:
                    if v.type is not t:
                        raise ctx.src.error(
                            n, f"{what} mix {type_name(t)} and a constant, which stays a Python "
                               f"{python_kind(v)} in Python mode (so later arithmetic on it would "
                               f"differ from {type_name(t)} arithmetic)",
                            hint=f"write {type_name(t)}({ctx.src.code(n)})")
                    v = harden(v, ctx.src, n)
                out.append(v)
            return out
        # all weak: same kind stays as is (callers harden), ints and floats give floats
        kinds = {v.type for v in values}
        if len(kinds) == 1:
            return list(values)
        if BOOL in kinds:
            raise ctx.src.error(nodes[0], f"{what} mix bool and number constants")
        return [ScalarV(ir.Const(float(v.atom.value), F64), weak=True) for v in values]
    if all(isinstance(v, TupleV) for v in values):
        n = len(first.elems)
        for v, nd in zip(values, nodes):
            if len(v.elems) != n:
                raise ctx.src.error(nd, f"{what} are tuples of different lengths ({n} and {len(v.elems)})")
            if (v.record is None) != (first.record is None) or (
                    v.record is not None and v.record.name != first.record.name):
                raise ctx.src.error(nd, f"{what} have different types: "
                                        f"{type_name(value_stype(first))} and {type_name(value_stype(v))}")
        columns = [unify_values(ctx, [v.elems[i] for v in values], [_elem_node(nd, i, n) for nd in nodes],
                                what) for i in range(n)]
        return [TupleV(tuple(col[j] for col in columns), values[j].record) for j in range(len(values))]
    if all(isinstance(v, ArrayV) for v in values):
        st = first.stype
        for v, nd in zip(values, nodes):
            if v.stype != st:
                raise ctx.src.error(nd, f"{what} have different types: {type_name(st)} and "
                                        f"{type_name(v.stype)}")
        return list(values)
    kinds = ", ".join(sorted({type_name(value_stype(v)) for v in values}))
    raise ctx.src.error(nodes[-1], f"{what} have different kinds of types: {kinds}")


def _elem_node(node, i: int, n: int):
    """Element i of a tuple expression of n elements (for locating errors), else node."""
    if isinstance(node, cst.Tuple) and len(node.elements) == n:
        return node.elements[i].value
    return node


def merge_branches(ctx, a: Value, b: Value, node_a, node_b, what: str) -> tuple[Value, Value]:
    """Two branch values at one type, weak ones hardened where both were weak."""
    a2, b2 = unify_values(ctx, [a, b], [node_a, node_b], what)
    return harden(a2, ctx.src, node_a), harden(b2, ctx.src, node_b)
