"""What a surface expression translates to: values made of core atoms.

The translator works on surface values (scalars that may still be weak,
tuples, records, arrays of anything) and flattens them to core atoms only at
the boundaries (lets, calls, SOAC lambdas). Functions are not values; a FunV
only appears as an argument of a prelude function and is inlined there
(a lambda, a def, or a builtin / prelude scalar function: PreludeFunV).
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


# PyInfo: what is known about an atom being a plain Python number in Python
# mode: False (a numpy value), True (may be a Python number), RUNTIME (may be
# a Python number computed at run time: len(), int()/float() of a numpy
# value, a range index, and arithmetic on those and constants), or a
# non-empty frozenset (may be a Python number, and then one of these values).
MAX_PY_VALUES = 16


class _RuntimeNumber:
    """The PyInfo RUNTIME (see above): truthy, values unknown."""

    def __repr__(self) -> str:
        return "RUNTIME"


RUNTIME = _RuntimeNumber()


def py_join(a, b):
    """The PyInfo of a value that is either a or b."""
    if not a:
        return b
    if not b:
        return a
    if a is True or b is True:
        return True
    if a is RUNTIME or b is RUNTIME:
        return RUNTIME
    u = a | b
    return u if len(u) <= MAX_PY_VALUES else True


def py_widen(old, new):
    """new (which includes old) for a loop's next try: a set that grows
    becomes True, so that the retries end."""
    if new == old or not old or new is RUNTIME:
        return new
    return True


def py_values(info):
    """The possible Python values of a PyInfo, or None when unknown."""
    return info if isinstance(info, frozenset) else None


@dataclass(frozen=True)
class ScalarV:
    """A scalar. A weak scalar is a compile-time constant whose type is still
    open: `atom` is then a Const of its default type (i64, f64 or bool) and
    the constant takes the type of a typed operand it meets.

    `py` (a PyInfo): whether in Python mode the value may be a plain Python
    number (int, float or bool) rather than a numpy scalar: a constant
    (weak, or fixed at its type), or a value computed only from constants
    (see pynum.py). Where Python's arithmetic differs from numpy's, an
    operation on two such values is rejected. A weak value is its constant."""
    atom: ir.Atom
    weak: bool = False
    py: object = False

    def __post_init__(self):
        if self.weak:
            object.__setattr__(self, "py", frozenset((self.atom.value,)))

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
    lists in Python mode (so `a[i, j]` is not allowed on them). `py`, one
    PyInfo per part (empty: all False), marks a list whose elements may be
    plain Python numbers in that component (see ScalarV.py)."""
    stype: SArray
    parts: tuple[ir.Var, ...]
    buffer: int = 0
    from_list: bool = False
    py: tuple = ()

    def __post_init__(self):
        if self.py and not any(self.py):
            object.__setattr__(self, "py", ())

    def part_py(self) -> tuple:
        """The PyInfo of every part."""
        return self.py if self.py else (False,) * len(self.parts)

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
    """A type used as an argument, as in `ps.highest(ps.f32)`. `convert`
    names the prelude conversion (`pyshark.prelude.f32`) when the type is
    a prelude scalar type, which is also a function (`ps.map(ps.f32, xs)`)."""
    stype: SType
    convert: Optional[str] = None
    node: Optional[cst.CSTNode] = field(default=None, compare=False)


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


def rebuild_value(st: SType, atoms: Sequence[ir.Atom], buffer: int = 0,
                  py: Optional[Sequence] = None) -> Value:
    """Inverse of flatten_value: a value of surface type st from its atoms;
    `py` gives the PyInfos of the atoms (py_flags order), else all False."""
    atoms = list(atoms)
    flags = list(py) if py is not None else [False] * len(atoms)
    assert len(flags) == len(atoms), "one py flag per atom"
    value, rest, _ = _rebuild(st, atoms, buffer, flags)
    assert not rest, f"{len(rest)} atoms left over rebuilding {st!r}"
    return value


def _rebuild(st: SType, atoms: list[ir.Atom], buffer: int, flags: list):
    if isinstance(st, SScalar):
        return ScalarV(atoms[0], py=flags[0]), atoms[1:], flags[1:]
    if isinstance(st, SArray):
        n = len(flatten_stype(st))
        parts = tuple(atoms[:n])
        assert all(isinstance(p, ir.Var) for p in parts), "array parts must be Vars"
        return ArrayV(st, parts, buffer, py=tuple(flags[:n])), atoms[n:], flags[n:]
    if isinstance(st, (STuple, SRecord)):
        elem_types = st.elems if isinstance(st, STuple) else st.field_types
        elems = []
        for et in elem_types:
            e, atoms, flags = _rebuild(et, atoms, buffer, flags)
            elems.append(e)
        return TupleV(tuple(elems), st if isinstance(st, SRecord) else None), atoms, flags
    raise TypeError(f"not a surface type: {st!r}")


def py_flags(v: Value) -> tuple:
    """The PyInfo of each atom of v (flatten_value order): a scalar's own,
    an array's per part (ScalarV.py, ArrayV.py)."""
    if isinstance(v, ScalarV):
        return (v.py,)
    if isinstance(v, TupleV):
        return tuple(f for e in v.elems for f in py_flags(e))
    if isinstance(v, ArrayV):
        return v.part_py()
    raise TypeError(f"not a value: {v!r}")


def with_py(v: Value, flags: Sequence) -> Value:
    """v with the PyInfos `flags` (py_flags order); weak scalars stay as they are."""
    out, rest = _with_py(v, list(flags))
    assert not rest, "one py flag per atom"
    return out


def _with_py(v: Value, flags: list):
    if isinstance(v, ScalarV):
        if v.weak or v.py == flags[0]:
            return v, flags[1:]
        return ScalarV(v.atom, v.weak, flags[0]), flags[1:]
    if isinstance(v, TupleV):
        elems = []
        for e in v.elems:
            e, flags = _with_py(e, flags)
            elems.append(e)
        return TupleV(tuple(elems), v.record), flags
    if isinstance(v, ArrayV):
        n = len(v.parts)
        return ArrayV(v.stype, v.parts, v.buffer, v.from_list, tuple(flags[:n])), flags[n:]
    raise TypeError(f"not a value: {v!r}")


def or_py(*flag_lists: Sequence) -> tuple:
    """Element-wise py_join of several PyInfo tuples of one length."""
    out = []
    for fs in zip(*flag_lists):
        acc = False
        for f in fs:
            acc = py_join(acc, f)
        out.append(acc)
    return tuple(out)


def widen_py(old: Sequence, new: Sequence) -> tuple:
    """Element-wise py_widen (loops and accumulators)."""
    return tuple(py_widen(o, n) for o, n in zip(old, new))


def weak_default_type(value) -> ScalarType:
    """The type a weak constant has when nothing gives it one."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return I64
    return F64


def weak(value) -> ScalarV:
    """A weak constant (a literal, or arithmetic among literals); py too."""
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
