"""Type annotations -> surface types (SType).

Accepts the scalar types of the prelude (`ps.f32`, `from pyshark.prelude import
f32`), `int` (i64), `float` (f64), `bool`, `ps.Array[T]` (nesting gives rank),
`tuple[A, B]` / `typing.Tuple[A, B]`, NamedTuple record classes and module
aliases of any of these. Names are resolved through libcst's qualified names,
so every import spelling works.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..core.types import BOOL, F64, I64, SArray, SScalar, SType, STuple, ScalarType

PRELUDE = "pyshark.prelude."
SCALAR_NAMES = {t.value: t for t in ScalarType if t is not BOOL}
BUILTIN_TYPES = {"builtins.int": I64, "builtins.float": F64, "builtins.bool": BOOL}
ARRAY_NAMES = {PRELUDE + "Array"}
TUPLE_NAMES = {"builtins.tuple", "typing.Tuple"}


def scalar_of_qualname(q: str) -> Optional[ScalarType]:
    if q.startswith(PRELUDE) and q[len(PRELUDE):] in SCALAR_NAMES:
        return SCALAR_NAMES[q[len(PRELUDE):]]
    if q == PRELUDE + "bool_":
        return BOOL
    return BUILTIN_TYPES.get(q)


class NotAType(Exception):
    pass


def parse_type(env, node: cst.BaseExpression, quiet: bool = False) -> Optional[SType]:
    """The SType an annotation denotes; None (quiet) or a located error if none."""
    try:
        return _parse(env, node)
    except NotAType as exc:
        if quiet:
            return None
        raise env.src.error(node, f"not a PyShark type: {env.src.code(node)}",
                            hint=str(exc) or "use ps.f32, int, float, bool, ps.Array[T], "
                                             "tuple[...] or a NamedTuple class") from None


def _parse(env, node: cst.BaseExpression) -> SType:
    if isinstance(node, cst.Name):
        if node.value in env.aliases:
            return env.aliases[node.value]
        if node.value in env.records:
            return env.records[node.value]
    if isinstance(node, (cst.Name, cst.Attribute)):
        for q in env.src.qualified_names(node):
            t = scalar_of_qualname(q)
            if t is not None:
                return SScalar(t)
        raise NotAType()
    if isinstance(node, cst.Subscript):
        quals = env.src.qualified_names(node.value) if isinstance(node.value, (cst.Name, cst.Attribute)) else set()
        items = []
        for el in node.slice:
            if not isinstance(el.slice, cst.Index):
                raise NotAType()
            items.append(el.slice.value)
        if quals & ARRAY_NAMES:
            if len(items) != 1:
                raise NotAType("ps.Array takes one element type; nest it for rank: "
                               "ps.Array[ps.Array[ps.f32]]")
            return SArray(_parse(env, items[0]))
        if quals & TUPLE_NAMES:
            if len(items) == 1 and isinstance(items[0], cst.Tuple):
                items = [e.value for e in items[0].elements]
            if any(isinstance(i, cst.Ellipsis) for i in items):
                raise NotAType("variable-length tuples are not supported; use ps.Array[T]")
            return STuple(tuple(_parse(env, i) for i in items))
        raise NotAType()
    raise NotAType()
