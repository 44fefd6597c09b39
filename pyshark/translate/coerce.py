"""Weak values meeting types: where a constant takes a type, and where it must
already have it.

LANGUAGE.md: in a binary operator or a prelude call whose other operand is
typed, a weak constant takes that type (`strict=False`, also used where
Python mode stores the value into a numpy array: an owned update of an array,
ps.update, reduce_by_index's operator). Anywhere else (returns, arguments to
user functions, record fields, annotated locals, branches, list elements,
loop-carried values, reduce/scan/fold operator results, builtin min/max) it
must already have the expected type (`strict=True`): its default type, int
is i64 and float is f64, because in Python mode it stays a Python number.
The error's hint is the conversion to write. An entry's own return value is
converted at the boundary, so there it is lenient (stmts.translate_return).
"""
from __future__ import annotations

import numpy as np
import libcst as cst

from ..core import ir
from ..core.types import I64, SArray, SRecord, SScalar, SType, STuple, ScalarType
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
    if isinstance(value, int):          # an int constant must be a finite float of type t
        return abs(value) <= float(np.finfo(t.dtype).max)
    return isinstance(value, float)


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


def const_text(value) -> str:
    """A constant as messages show it (a huge int abbreviated)."""
    text = repr(value)
    if len(text) > 24:
        return f"{text[:12]}...{text[-4:]} ({len(text.lstrip('-'))} digits)"
    return text


def range_text(t: ScalarType) -> str:
    info = np.iinfo(t.dtype)
    return f"{info.min}..{info.max}"


def weak_to(v: ScalarV, t: ScalarType, src, node: cst.CSTNode) -> ScalarV:
    """The weak constant v given type t; a located error if it cannot be.
    The result is still a Python number in Python mode (py), unless where it
    is used converts it (a store into a numpy array)."""
    assert v.weak and isinstance(v.atom, ir.Const)
    value = v.atom.value
    if const_fits(value, t):
        return ScalarV(ir.Const(const_value(value, t), t), py=v.py)   # Python mode keeps value
    if t.is_int and isinstance(value, int) and not isinstance(value, bool):
        raise src.error(node, f"literal {const_text(value)} does not fit {type_name(t)} (range "
                              f"{range_text(t)})",
                        hint=f"use a literal in range, or convert the other operand")
    if t.is_float and isinstance(value, int) and not isinstance(value, bool):
        raise src.error(node, f"the constant {const_text(value)} is too large for {type_name(t)}",
                        hint="use a smaller constant")
    raise src.error(node, f"a {type_name(v.type)} constant cannot be used as {type_name(t)}",
                    hint=f"write a {type_name(t)} value, e.g. {type_name(t)}({src.code(node)})")


PY_KIND = {"bool": "bool", "i64": "int"}


def python_kind(v: ScalarV) -> str:
    """What a weak constant is in Python mode: a Python int, float or bool."""
    return PY_KIND.get(v.type.value, "float")


def weak_mismatch(src, node: cst.CSTNode, v: ScalarV, t: ScalarType, what: str):
    """The error for a weak constant where type t is strictly expected."""
    code = src.code(node)
    return src.error(node, f"{what} must be {type_name(t)}, but this is a constant, which stays a "
                           f"Python {python_kind(v)} in Python mode (so later arithmetic on it "
                           f"would differ from {type_name(t)} arithmetic)",
                     hint=f"write {type_name(t)}({code})")


def coerce(v: Value, st: SType, src, node: cst.CSTNode, *, strict: bool, what: str) -> Value:
    """v as a value of surface type st, or a located CompileError.

    strict: a weak constant must already have type st (its default type:
    int is i64, float is f64), because in Python mode it stays a Python
    number; otherwise (lenient) it takes type st, as an operand does.
    `what` names the context for the message ("the return value of 'f'").
    A tuple expression as `node` locates errors at the offending element.
    """
    if isinstance(st, SScalar) and isinstance(v, ScalarV):
        if v.weak:
            if strict and v.type is not st.t:
                raise weak_mismatch(src, node, v, st.t, what)
            return weak_to(v, st.t, src, node)
        if v.type is st.t:
            return v
        raise src.error(node, f"{what} must be {type_name(st)}, not {type_name(v.type)}",
                        hint=f"convert explicitly, e.g. {type_name(st)}(...)")
    if isinstance(st, (STuple, SRecord)) and isinstance(v, TupleV):
        want = st.elems if isinstance(st, STuple) else st.field_types
        if isinstance(st, SRecord) and v.record is not None and v.record.name != st.name:
            raise src.error(node, f"{what} must be a {st.name} record, not {v.record.name}")
        if isinstance(st, SRecord) and v.record is None:
            raise src.error(node, f"{what} must be a {st.name} record, not a tuple",
                            hint=f"build the record: {st.name}(...)")
        if len(want) != len(v.elems):
            raise src.error(node, f"{what} must be {type_name(st)} ({len(want)} elements), "
                                  f"got {len(v.elems)} elements")
        nodes = [node] * len(want)
        if isinstance(node, cst.Tuple) and len(node.elements) == len(want):
            nodes = [e.value for e in node.elements]
        elems = tuple(coerce(e, t, src, n, strict=strict, what=what)
                      for e, t, n in zip(v.elems, want, nodes))
        return TupleV(elems, st if isinstance(st, SRecord) else None)
    if isinstance(st, SArray) and isinstance(v, ArrayV):
        if v.stype == st:
            return v
    got = value_stype(v)
    raise src.error(node, f"{what} must be {type_name(st)}, not {type_name(got)}",
                    hint=mismatch_hint(got, st, src.code(node)))


def _rank(st: SType) -> int:
    return 1 + _rank(st.elem) if isinstance(st, SArray) else 0


def _base(st: SType) -> SType:
    return _base(st.elem) if isinstance(st, SArray) else st


def _map_convert(rank: int, conv: str, code: str) -> str:
    """ps.map(conv, code), nested under lambdas for each extra dimension."""
    if rank == 1:
        return f"ps.map({conv}, {code})"
    row = f"r{rank - 1}"
    return f"ps.map(lambda {row}: {_map_convert(rank - 1, conv, row)}, {code})"


def mismatch_hint(got: SType, want: SType, code: str) -> str:
    """What to write when a value of type `got` is where `want` is expected.

    Names the prelude spelling that converts (a reduction for an array where
    a number is expected, ps.map of a scalar type for another element type)
    and, as the other way out, the annotation that the value already has.
    """
    annotate = f"or change the annotation to {type_name(got)}"
    if isinstance(got, SArray) and not isinstance(want, SArray):
        return (f"reduce the array to one value (ps.sum({code}), ps.reduce(op, ne, {code})), "
                + annotate)
    if isinstance(want, SArray) and not isinstance(got, SArray):
        return f"ps.replicate(n, {code}) makes an array of it, " + annotate
    if isinstance(got, SArray) and isinstance(want, SArray):
        if _rank(got) == _rank(want) and isinstance(_base(want), SScalar) \
                and isinstance(_base(got), SScalar):
            return f"convert element-wise with {_map_convert(_rank(want), type_name(_base(want)), code)}, " \
                + annotate
        if _rank(got) > _rank(want):
            return f"ps.flatten({code}) removes one dimension, " + annotate
        return annotate
    return annotate


def weak_retyped(v: Value, st: SType):
    """The first weak constant in v that coercing v to st gives a type other
    than its default one, as (value, type), or None (an entry's return value
    converted at the boundary)."""
    if isinstance(v, ScalarV):
        if v.weak and isinstance(st, SScalar) and v.type is not st.t:
            return v.atom.value, st.t
        return None
    if isinstance(v, TupleV) and isinstance(st, (STuple, SRecord)):
        want = st.elems if isinstance(st, STuple) else st.field_types
        for e, t in zip(v.elems, want):
            hit = weak_retyped(e, t)
            if hit is not None:
                return hit
    return None


def has_weak(v: Value) -> bool:
    """True for a weak scalar, or a tuple with a weak value in it."""
    if isinstance(v, ScalarV):
        return v.weak
    if isinstance(v, TupleV):
        return any(has_weak(e) for e in v.elems)
    return False


def is_weak(v: Value) -> bool:
    """True for a weak scalar, or a tuple made only of weak values."""
    if isinstance(v, ScalarV):
        return v.weak
    if isinstance(v, TupleV):
        return all(is_weak(e) for e in v.elems)
    return False


class ConstantRangeError(Exception):
    """A weak int constant outside i64 fixed at its default type where no
    source node was at hand; `guarded` reports it at the statement."""

    def __init__(self, value: int):
        super().__init__(f"the constant {const_text(value)} does not fit int (i64)")
        self.value = value


def check_default_range(v: ScalarV, src=None, node=None) -> None:
    """A weak int constant must fit i64 when it takes its default type."""
    value = v.atom.value
    if isinstance(value, int) and not isinstance(value, bool) and not const_fits(value, I64):
        if src is None:
            raise ConstantRangeError(value)
        raise src.error(node, f"the constant {const_text(value)} does not fit int (i64, range "
                              f"{range_text(I64)})",
                        hint="plain int arithmetic beyond the i64 range is not supported; use "
                             "a smaller constant")


def harden(v: Value, src=None, node=None) -> Value:
    """A weak value fixed at its default type (i64, f64, bool); an int
    constant outside i64 is a located error (at `node` when given). It stays
    a Python number in Python mode (py)."""
    if isinstance(v, ScalarV) and v.weak:
        check_default_range(v, src, node)
        return ScalarV(v.atom, py=v.py)
    if isinstance(v, TupleV):
        return TupleV(tuple(harden(e, src, node) for e in v.elems), v.record)
    return v
