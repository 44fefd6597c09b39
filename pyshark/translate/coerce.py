"""Weak values meeting types: where a constant takes a type, and where it must
already have it.

LANGUAGE.md: in a binary operator, a prelude call, an owned update or a
conditional expression, a weak constant takes the type of the typed operand
(`lenient`); anywhere else (returns, arguments to user functions, record
fields, loop-carried initial values, builtin min/max) it must already have the
expected type (`strict`), and the error's hint is the conversion to write.
"""
from __future__ import annotations

import numpy as np
import libcst as cst

from ..core import ir
from ..core.types import SArray, SRecord, SScalar, SType, STuple, ScalarType
from .values import ArrayV, ScalarV, TupleV, Value, type_name, value_stype


def const_fits(value, t: ScalarType) -> bool:
    if t.is_bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if t.is_int:
        if not isinstance(value, int):
            return False
        info = np.iinfo(t.dtype)
        return int(info.min) <= value <= int(info.max)
    return isinstance(value, (int, float))


def const_value(value, t: ScalarType):
    """A Python value already representable in t (f32 constants rounded)."""
    if t.is_bool:
        return bool(value)
    if t.is_int:
        return int(value)
    if t is ScalarType.F32:
        with np.errstate(over="ignore"):
            return float(np.float32(value))
    return float(value)


def range_text(t: ScalarType) -> str:
    info = np.iinfo(t.dtype)
    return f"{info.min}..{info.max}"


def weak_to(v: ScalarV, t: ScalarType, src, node: cst.CSTNode) -> ScalarV:
    """The weak constant v given type t; a located error if it cannot be."""
    assert v.weak and isinstance(v.atom, ir.Const)
    value = v.atom.value
    if const_fits(value, t):
        return ScalarV(ir.Const(const_value(value, t), t))
    if t.is_int and isinstance(value, int) and not isinstance(value, bool):
        raise src.error(node, f"literal {value} does not fit {type_name(t)} (range {range_text(t)})",
                        hint=f"use a literal in range, or convert the other operand")
    raise src.error(node, f"a {type_name(v.type)} constant cannot be used as {type_name(t)}",
                    hint=f"write a {type_name(t)} value, e.g. {type_name(t)}({src.code(node)})")


def exact_weak(value, t: ScalarType) -> bool:
    """Whether a weak constant may take type t even where the type is strict:
    an int constant is the same number in any integer type it fits (range
    errors come from weak_to) and in a float type that holds it exactly
    (conformance tuples.py passes 60 to an i32 parameter). A float constant
    would change value as f32, so that stays an error (LANGUAGE.md)."""
    if isinstance(value, bool) or t.is_bool:
        return False
    if isinstance(value, int):
        if t.is_int:
            return True
        mant = 24 if t is ScalarType.F32 else 53
        return abs(value) <= (1 << mant)
    return False


def coerce(v: Value, st: SType, src, node: cst.CSTNode, *, strict: bool, what: str) -> Value:
    """v as a value of surface type st, or a located CompileError.

    `what` names the context for the message ("the return value of 'f'").
    """
    if isinstance(st, SScalar) and isinstance(v, ScalarV):
        if v.weak:
            if strict and v.type is not st.t and not exact_weak(v.atom.value, st.t):
                raise src.error(node, f"{what} must be {type_name(st)}, but this constant is "
                                      f"{type_name(v.type)}",
                                hint=f"write {type_name(st)}({src.code(node)})")
            return weak_to(v, st.t, src, node)
        if v.type is st.t:
            return v
        raise src.error(node, f"{what} must be {type_name(st)}, not {type_name(v.type)}",
                        hint=f"convert explicitly, e.g. {type_name(st)}(...)")
    if isinstance(st, (STuple, SRecord)) and isinstance(v, TupleV):
        want = st.elems if isinstance(st, STuple) else st.field_types
        if isinstance(st, SRecord) and v.record is not None and v.record.name != st.name:
            raise src.error(node, f"{what} must be a {st.name} record, not {v.record.name}")
        if len(want) != len(v.elems):
            raise src.error(node, f"{what} must be {type_name(st)} ({len(want)} elements), "
                                  f"got {len(v.elems)} elements")
        elems = tuple(coerce(e, t, src, node, strict=strict, what=what) for e, t in zip(v.elems, want))
        return TupleV(elems, st if isinstance(st, SRecord) else None)
    if isinstance(st, SArray) and isinstance(v, ArrayV):
        if v.stype == st:
            return v
    got = value_stype(v)
    raise src.error(node, f"{what} must be {type_name(st)}, not {type_name(got)}")


def is_weak(v: Value) -> bool:
    """True for a weak scalar, or a tuple made only of weak values."""
    if isinstance(v, ScalarV):
        return v.weak
    if isinstance(v, TupleV):
        return all(is_weak(e) for e in v.elems)
    return False


def harden(v: Value) -> Value:
    """A weak value fixed at its default type (i64, f64, bool)."""
    if isinstance(v, ScalarV) and v.weak:
        return ScalarV(v.atom)
    if isinstance(v, TupleV):
        return TupleV(tuple(harden(e) for e in v.elems), v.record)
    return v
