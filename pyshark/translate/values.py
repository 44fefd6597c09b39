"""What a surface expression translates to: values made of core atoms.

The translator works on surface values (scalars that may still be weak,
tuples, records, arrays of anything) and flattens them to core atoms only at
the boundaries (lets, calls, SOAC lambdas). Functions are not values; a FunV
only appears as an argument of a prelude function and is inlined there.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

import libcst as cst

from ..core import ir
from ..core.types import (
    BOOL, F64, I64, SArray, SRecord, SScalar, SType, STuple, ScalarType, flatten_stype,
)


@dataclass(frozen=True)
class ScalarV:
    """A scalar. A weak scalar is a compile-time constant whose type is still
    open: `atom` is then a Const of its default type (i64, f64 or bool) and
    the constant takes the type of a typed operand it meets."""
    atom: ir.Atom
    weak: bool = False

    @property
    def stype(self) -> SScalar:
        return SScalar(self.atom.type)

    @property
    def type(self) -> ScalarType:
        return self.atom.type


@dataclass(frozen=True)
class TupleV:
    """A tuple, or a record when `record` is set (fields in declaration order)."""
    elems: tuple["Value", ...]
    record: Optional[SRecord] = None

    @property
    def stype(self) -> SType:
        if self.record is not None:
            return self.record
        return STuple(tuple(value_stype(e) for e in self.elems))


_buffer_ids = itertools.count(1)


def new_buffer() -> int:
    """A fresh identity for an array this function owns (see ArrayV.buffer)."""
    return next(_buffer_ids)


@dataclass(frozen=True)
class ArrayV:
    """An array of any surface element type, stored as one core array per
    flattened element component (struct of arrays).

    `buffer` identifies the storage for ownership checks of in-place updates:
    0 means not owned by this function (a parameter, a slice of one, a module
    constant); names bound to the same non-zero buffer alias each other.
    `from_list` marks array literals and comprehensions, which are Python
    lists in Python mode (so `a[i, j]` is not allowed on them)."""
    stype: SArray
    parts: tuple[ir.Var, ...]
    buffer: int = 0
    from_list: bool = False

    @property
    def rank(self) -> int:
        r, t = 0, self.stype
        while isinstance(t, SArray):
            r, t = r + 1, t.elem
        return r


class FunV:
    """A function passed to a prelude function: a lambda, a local def or a
    top-level def. `apply` inlines (or calls) it on argument values."""

    name: str = "<function>"
    node: Optional[cst.CSTNode] = None

    @property
    def arity(self) -> Optional[int]:
        raise NotImplementedError

    def param_stypes(self) -> Optional[list[Optional[SType]]]:
        """Declared parameter types where annotated (None entries where not)."""
        return None

    def ret_stype(self) -> Optional[SType]:
        """The declared return type, if annotated."""
        return None

    def apply(self, ctx, args: Sequence["Value"], node: cst.CSTNode) -> "Value":
        raise NotImplementedError


Value = Union[ScalarV, TupleV, ArrayV]


@dataclass(frozen=True)
class TypeArg:
    """A type used as an argument, as in `ps.highest(ps.f32)`."""
    stype: SType


def value_stype(v: Value) -> SType:
    if isinstance(v, ArrayV):
        return v.stype
    return v.stype


def flatten_value(v: Value) -> list[ir.Atom]:
    """The core atoms of a value, in flatten_stype order (weak scalars give
    their default-typed Const; coerce first where the type matters)."""
    if isinstance(v, ScalarV):
        return [v.atom]
    if isinstance(v, TupleV):
        return [a for e in v.elems for a in flatten_value(e)]
    if isinstance(v, ArrayV):
        return list(v.parts)
    raise TypeError(f"not a value: {v!r}")


def rebuild_value(st: SType, atoms: Sequence[ir.Atom], buffer: int = 0) -> Value:
    """Inverse of flatten_value: a value of surface type st from its atoms."""
    atoms = list(atoms)
    value, rest = _rebuild(st, atoms, buffer)
    assert not rest, f"{len(rest)} atoms left over rebuilding {st!r}"
    return value


def _rebuild(st: SType, atoms: list[ir.Atom], buffer: int):
    if isinstance(st, SScalar):
        return ScalarV(atoms[0]), atoms[1:]
    if isinstance(st, SArray):
        n = len(flatten_stype(st))
        parts = tuple(atoms[:n])
        assert all(isinstance(p, ir.Var) for p in parts), "array parts must be Vars"
        return ArrayV(st, parts, buffer), atoms[n:]
    if isinstance(st, (STuple, SRecord)):
        elem_types = st.elems if isinstance(st, STuple) else st.field_types
        elems = []
        for et in elem_types:
            e, atoms = _rebuild(et, atoms, buffer)
            elems.append(e)
        return TupleV(tuple(elems), st if isinstance(st, SRecord) else None), atoms
    raise TypeError(f"not a surface type: {st!r}")


def weak_default_type(value) -> ScalarType:
    """The type a weak constant has when nothing gives it one."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return I64
    return F64


def weak(value) -> ScalarV:
    """A weak constant (a literal, or arithmetic among literals)."""
    if isinstance(value, bool):
        return ScalarV(ir.Const(value, BOOL), weak=True)
    if isinstance(value, int):
        return ScalarV(ir.Const(int(value), I64), weak=True)
    return ScalarV(ir.Const(float(value), F64), weak=True)


def type_name(st: SType | ScalarType) -> str:
    """How types are named in messages: ps.f32, int (for i64), float (f64)."""
    if isinstance(st, ScalarType):
        st = SScalar(st)
    if isinstance(st, SScalar):
        if st.t is BOOL:
            return "bool"
        return f"ps.{st.t.value}"
    if isinstance(st, SArray):
        return f"ps.Array[{type_name(st.elem)}]"
    if isinstance(st, STuple):
        return "tuple[" + ", ".join(type_name(e) for e in st.elems) + "]"
    if isinstance(st, SRecord):
        return st.name
    return repr(st)
