"""Types of the core language, and the surface types entries keep for the wrapper.

The core language only knows scalars and regular arrays of scalars: tuples are
flattened into several values and records are erased to tuples, as in Futhark's
SOACS IR. Entries remember their surface types (STypes) so that the wrapper can
flatten arguments on the way in and rebuild tuples/records on the way out.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Union

import numpy as np


class ScalarType(enum.Enum):
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    F32 = "f32"
    F64 = "f64"
    BOOL = "bool"

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(_NUMPY_NAMES[self])

    @property
    def numpy_type(self) -> type:
        """The numpy scalar class (np.int32, ..., np.bool_)."""
        return self.dtype.type

    # is_int, is_signed, is_unsigned, is_float, is_bool and bits are plain
    # attributes of each member, set below the class
    def __repr__(self) -> str:
        return self.value

    __str__ = __repr__

    @staticmethod
    def from_dtype(dtype) -> "ScalarType":
        dt = np.dtype(dtype)
        for st, name in _NUMPY_NAMES.items():
            if np.dtype(name) == dt:
                return st
        raise TypeError(f"no PyShark scalar type for numpy dtype {dt}")


_NUMPY_NAMES = {
    ScalarType.I8: "int8", ScalarType.I16: "int16", ScalarType.I32: "int32",
    ScalarType.I64: "int64", ScalarType.U8: "uint8", ScalarType.U16: "uint16",
    ScalarType.U32: "uint32", ScalarType.U64: "uint64", ScalarType.F32: "float32",
    ScalarType.F64: "float64", ScalarType.BOOL: "bool",
}

# The predicates and the width are attributes of each member, not properties
# over `.value` (enum's descriptor, a Python call per read): the compiler
# reads them millions of times in a large program's compile (LocVolCalib:
# 440,000 reads, ~4% of the Python stages' time).
for _t in ScalarType:
    _t.is_int = _t.value[0] in "iu"
    _t.is_signed = _t.value[0] == "i"
    _t.is_unsigned = _t.value[0] == "u"
    _t.is_float = _t.value[0] == "f"
    _t.is_bool = _t is ScalarType.BOOL
    _t.bits = 8 if _t is ScalarType.BOOL else int(_t.value[1:])
    _t.bytes = _t.bits // 8         # in memory (a bool is one byte)
del _t

I8, I16, I32, I64 = ScalarType.I8, ScalarType.I16, ScalarType.I32, ScalarType.I64
U8, U16, U32, U64 = ScalarType.U8, ScalarType.U16, ScalarType.U32, ScalarType.U64
F32, F64, BOOL = ScalarType.F32, ScalarType.F64, ScalarType.BOOL
INT_TYPES = (I8, I16, I32, I64, U8, U16, U32, U64)
FLOAT_TYPES = (F32, F64)


@dataclass(frozen=True)
class ArrayType:
    """A regular array of `elem` with `rank` >= 1 dimensions."""
    elem: ScalarType
    rank: int

    def __post_init__(self):
        assert self.rank >= 1, "arrays have rank >= 1"

    def row(self) -> "Type":
        """The type of xs[i]."""
        return self.elem if self.rank == 1 else ArrayType(self.elem, self.rank - 1)

    def __repr__(self) -> str:
        return "[]" * self.rank + self.elem.value

    __str__ = __repr__


Type = Union[ScalarType, ArrayType]


def array_of(t: Type, extra_rank: int = 1) -> ArrayType:
    """The type of an array whose elements have type t."""
    if isinstance(t, ArrayType):
        return ArrayType(t.elem, t.rank + extra_rank)
    return ArrayType(t, extra_rank)


def elem_type(t: Type) -> ScalarType:
    return t.elem if isinstance(t, ArrayType) else t


def rank_of(t: Type) -> int:
    return t.rank if isinstance(t, ArrayType) else 0


# ---------------------------------------------------------------------------
# Surface types: what the user wrote (tuples, records, nested arrays).


@dataclass(frozen=True)
class SScalar:
    t: ScalarType

    def __repr__(self) -> str:
        return self.t.value


@dataclass(frozen=True)
class SArray:
    """ps.Array[elem]; nesting gives rank."""
    elem: "SType"

    def __repr__(self) -> str:
        return f"Array[{self.elem!r}]"


@dataclass(frozen=True)
class STuple:
    elems: tuple["SType", ...]

    def __repr__(self) -> str:
        return "tuple[" + ", ".join(map(repr, self.elems)) + "]"


@dataclass(frozen=True)
class SRecord:
    """A NamedTuple class: name and fields in declaration order."""
    name: str
    fields: tuple[tuple[str, "SType"], ...]

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.fields)

    @property
    def field_types(self) -> tuple["SType", ...]:
        return tuple(t for _, t in self.fields)

    def __repr__(self) -> str:
        return self.name


SType = Union[SScalar, SArray, STuple, SRecord]


def flatten_stype(st: SType) -> list[Type]:
    """The core types that represent a value of surface type st, in order.

    Tuples and records contribute their fields left to right; an array of
    tuples becomes one array per field (struct of arrays), each with the
    array's rank added to the field's own rank.
    """
    if isinstance(st, SScalar):
        return [st.t]
    if isinstance(st, STuple):
        return [t for e in st.elems for t in flatten_stype(e)]
    if isinstance(st, SRecord):
        return [t for e in st.field_types for t in flatten_stype(e)]
    if isinstance(st, SArray):
        return [array_of(t) for t in flatten_stype(st.elem)]
    raise TypeError(f"not a surface type: {st!r}")


def stype_rank(st: SType) -> int:
    """Number of array dimensions wrapped directly around st's element."""
    rank = 0
    while isinstance(st, SArray):
        rank += 1
        st = st.elem
    return rank


def stype_base(st: SType) -> SType:
    """The element type under all directly nested SArray layers."""
    while isinstance(st, SArray):
        st = st.elem
    return st
