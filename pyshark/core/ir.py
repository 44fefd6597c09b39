"""The core language: a typed, first-order, A-normal-form IR built on SOACs.

Shape (modelled on Futhark's SOACS IR):
- A Program holds FunDefs and Entries. Each FunDef has typed parameters, result
  types and a Body.
- A Body is a sequence of Let statements followed by result atoms. Every Let
  binds a pattern (zero or more typed Vars) to one Exp. Names are unique inside
  a FunDef (SSA); rebinding in the source makes a new name.
- Operands of expressions are Atoms: a Var or a Const. Nested code (branches,
  loop bodies, lambdas) is a Body. Lambdas may refer to names bound outside
  them (free variables); they are never values.
- Tuples are flattened (an Exp may produce several values), records are erased
  to tuples, arrays are regular arrays of scalars (an array of tuples is one
  array per field).

Run-time errors are part of the semantics: the interpreter raises, compiled
code sets an error code. Each Exp documents the Python exception it raises.
The `loc` of a Let is where the error is reported.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from .types import ArrayType, ScalarType, SRecord, SType, Type
from ..errors import NOT_ASSERTED, RUNTIME_ERRORS


# ---------------------------------------------------------------------------
# Atoms and locations


@dataclass(frozen=True)
class Loc:
    file: str
    line: int          # 1-based
    col: int           # 0-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


@dataclass(frozen=True)
class Var:
    name: str
    type: Type

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const:
    """A scalar literal. `value` is a Python int/float/bool already in range."""
    value: Union[int, float, bool]
    type: ScalarType

    def __repr__(self) -> str:
        return f"{self.value!r}{self.type.value}"


Atom = Union[Var, Const]


# ---------------------------------------------------------------------------
# Scalar expressions

# BinOp operators. Operands have one type; the result has that type except
# for comparisons (bool). core/ops.py holds the operators as one table
# (operand types, result type, errors, reference semantics, spellings).
#   add sub mul         ints wrap (two's complement), floats IEEE (no FMA)
#   div                 floats only (the translator converts ints to f64 first)
#   floordiv mod        Python floor semantics; ints raise ZeroDivisionError
#                       on a zero divisor; floats follow numpy
#   pow                 `x ** y`: ints wrap, a negative exponent raises ValueError
#                       (numpy); floats are numpy's scalar `**` (C pow)
#   power               `ps.pow(x, y)`, i.e. numpy.power: ints as pow; floats as
#                       pow except that an exponent of exactly 0.5 is sqrt(x)
#                       (numpy's fast path: power(-inf, 0.5) is nan, power(-0.0,
#                       0.5) is -0.0, where C pow gives inf and 0.0)
#   band bor bxor       ints and bool
#   shl shr             ints (shr is arithmetic for signed types)
#   land lor            bool only (both operands are already evaluated)
#   min max             numpy.minimum / numpy.maximum: NaN propagates
#   fmin fmax           floats: numpy.fmin / numpy.fmax: a NaN operand is
#                       passed over (NaN only when both are); not spelled in
#                       Python, the prelude's lowering of builtin min/max of
#                       a float array (Python's rule) reduces with them
#   atan2               floats (numpy.arctan2(x, y) with x the first operand)
#   eq ne lt le gt ge   any scalar type -> bool (IEEE: NaN compares unequal)
BINOPS = frozenset({
    "add", "sub", "mul", "div", "floordiv", "mod", "pow", "power",
    "band", "bor", "bxor", "shl", "shr", "land", "lor",
    "min", "max", "fmin", "fmax", "atan2",
    "eq", "ne", "lt", "le", "gt", "ge",
})
COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})

# UnOp operators, result of the operand type unless noted.
#   neg                 ints wrap, floats IEEE
#   not                 bool
#   bnot                ints (~x)
#   abs sign            any numeric; abs of INT_MIN wraps to INT_MIN
#   sqrt exp log log2 log10 sin cos tan asin acos atan sinh cosh tanh
#   floor ceil round(half to even) trunc           floats only
#   isnan isinf         floats -> bool
UNOPS = frozenset({
    "neg", "not", "bnot", "abs", "sign",
    "sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "floor", "ceil", "round", "trunc", "isnan", "isinf",
})
BOOL_RESULT_UNOPS = frozenset({"isnan", "isinf"})


@dataclass(frozen=True)
class AtomExp:
    """The value of an atom (a copy of a scalar, an alias of an array)."""
    atom: Atom


@dataclass(frozen=True)
class BinOp:
    op: str
    x: Atom
    y: Atom


@dataclass(frozen=True)
class UnOp:
    op: str
    x: Atom


@dataclass(frozen=True)
class Convert:
    """numpy conversion of a scalar to `to`: narrowing ints wrap, float to int
    truncates toward zero, f64 to f32 rounds to nearest, x to bool is x != 0."""
    to: ScalarType
    x: Atom


@dataclass(frozen=True)
class Select:
    """`x if cond else y` on already evaluated scalar atoms (no branching)."""
    cond: Atom
    x: Atom
    y: Atom


# ---------------------------------------------------------------------------
# Control flow and calls


@dataclass(frozen=True)
class Body:
    stms: tuple["Let", ...]
    result: tuple[Atom, ...]


@dataclass(frozen=True)
class Lambda:
    """An anonymous function used only as a SOAC operator. Free variables allowed."""
    params: tuple[Var, ...]
    body: Body
    ret: tuple[Type, ...]


@dataclass(frozen=True)
class Call:
    """Call of a FunDef of the program by name."""
    fn: str
    args: tuple[Atom, ...]
    ret: tuple[Type, ...]


@dataclass(frozen=True)
class If:
    """Evaluates only the branch taken; both branches return `ret`."""
    cond: Atom
    then_body: Body
    else_body: Body
    ret: tuple[Type, ...]


@dataclass(frozen=True)
class ForLoop:
    """`index` (i64) runs 0, 1, ..., bound - 1; no iteration when bound <= 0."""
    index: Var
    bound: Atom


@dataclass(frozen=True)
class WhileLoop:
    """`cond` is evaluated with the loop parameters in scope; one bool result."""
    cond: Body


@dataclass(frozen=True)
class Loop:
    """A sequential loop with loop-carried values.

    `params` are bound to `inits` before the first iteration and to the body's
    results after each; the Loop's value is the params' final values.
    """
    params: tuple[Var, ...]
    inits: tuple[Atom, ...]
    form: Union[ForLoop, WhileLoop]
    body: Body


@dataclass(frozen=True)
class Assert:
    """Raises `error(msg)` unless `cond` holds. Binds no names.

    `error` is one of ERROR_KINDS. The translator uses it for user asserts and
    for checks it inserts itself (length mismatch, head of an empty array, a
    zero `range` step: ValueError, as Python raises).
    """
    cond: Atom
    msg: str
    error: str = "AssertionError"


#: the errors an Assert may raise: every run-time error (pyshark/errors.py)
#: but MemoryError and KeyboardInterrupt (a failed allocation, a Ctrl-C)
ERROR_KINDS = frozenset(RUNTIME_ERRORS) - NOT_ASSERTED


# ---------------------------------------------------------------------------
# Arrays


@dataclass(frozen=True)
class SliceDim:
    """Python slice start:stop:step on one dimension; None means omitted.

    Bounds are clamped as Python does; step must not be zero (a zero step
    raises ValueError, as Python and numpy do -- the translator rejects a
    constant zero).
    """
    start: Optional[Atom]
    stop: Optional[Atom]
    step: Optional[Atom]


@dataclass(frozen=True)
class Index:
    """arr[i0, i1, ...] with len(idxs) <= rank; the result is a scalar when all
    dimensions are indexed, else a sub-array. Out of range raises IndexError.
    With `wrap_negative`, a negative index counts from the end (Python); a
    pass may clear the flag where an index is known to be non-negative."""
    arr: Var
    idxs: tuple[Atom, ...]
    wrap_negative: bool = True


@dataclass(frozen=True)
class Slice:
    """Python basic indexing: each entry of `dims` is a SliceDim (keeps the
    dimension) or an index Atom (drops it, IndexError if out of range,
    negative counts from the end). Missing trailing dims are kept whole."""
    arr: Var
    dims: tuple[Union[SliceDim, Var, Const], ...]


@dataclass(frozen=True)
class Update:
    """In-place arr[idxs] = value on an array this function owns (consumed).

    `value` is a scalar when all dimensions are indexed, else an array of the
    row's shape (ShapeError if it differs). Index rules as Index."""
    arr: Var
    idxs: tuple[Atom, ...]
    value: Atom
    wrap_negative: bool = True


@dataclass(frozen=True)
class Size:
    """The length of dimension `dim` of arr, as i64."""
    arr: Var
    dim: int = 0


@dataclass(frozen=True)
class ArrayLit:
    """[e0, e1, ...]; elements are scalars (rank 1) or arrays of equal shape
    (ShapeError otherwise). `type` is the result type (needed when empty)."""
    elems: tuple[Atom, ...]
    type: ArrayType


@dataclass(frozen=True)
class Iota:
    """[0, 1, ..., n-1] as i64 (n <= 0 gives an empty array)."""
    n: Atom


@dataclass(frozen=True)
class Replicate:
    """n copies of a scalar or array value (n <= 0 gives an empty array)."""
    n: Atom
    value: Atom


@dataclass(frozen=True)
class Copy:
    """A fresh array with arr's contents (the result is owned)."""
    arr: Var


@dataclass(frozen=True)
class Concat:
    """Concatenation along dimension 0; inner dimensions must agree (ShapeError)."""
    arrs: tuple[Var, ...]


@dataclass(frozen=True)
class Rotate:
    """result[i] == arr[(i + r) mod n] along dimension 0 (numpy.roll(arr, -r))."""
    r: Atom
    arr: Var


@dataclass(frozen=True)
class Transpose:
    """Swaps dimensions 0 and 1 (rank >= 2)."""
    arr: Var


@dataclass(frozen=True)
class Reshape:
    """Row-major reshape; ShapeError unless every dim >= 0 and the product of
    `shape` equals arr's element count. The result rank is len(shape)."""
    shape: tuple[Atom, ...]
    arr: Var


# ---------------------------------------------------------------------------
# SOACs. `width` is the common length of the input arrays; the translator
# emits Size and a ShapeError Assert when it cannot see they agree.


@dataclass(frozen=True)
class Map:
    """Applies lam to the i-th elements of arrs; one result array per lam
    result (a lambda returning an array gives a rank-increased array).

    `empty_dims`: the inner dimensions of the results when width is 0 (no
    row to take them from): one i64 atom per dimension of each array-valued
    lam result, in order. None means all 0. The translator leaves it None
    for prelude maps (core/empty_shapes.py derives it, the shape lam gives
    for a stand-in element, as Python mode does) and sets zeros for a
    comprehension (an empty Python list has no inner dimensions).

    `row_dims`: the same layout, the inner dimensions every row has when the
    width is positive, or None when they are not known without running the
    function (they depend on an element's data). core/empty_shapes.py sets
    them; a backend allocates the result before running any row, and checks
    each row against them. A pass that changes the results drops them."""
    width: Atom
    lam: Lambda
    arrs: tuple[Var, ...]
    empty_dims: Optional[tuple[Atom, ...]] = None
    row_dims: Optional[tuple[Atom, ...]] = None


@dataclass(frozen=True)
class Reduce:
    """Folds arrs with the associative operator lam (2k params: accumulator
    values then element values) from `neutral`; empty input gives neutral.
    `commutative` records that the user said reduce_comm."""
    width: Atom
    lam: Lambda
    neutral: tuple[Atom, ...]
    arrs: tuple[Var, ...]
    commutative: bool = False


@dataclass(frozen=True)
class Scan:
    """Inclusive scan of arrs with associative lam from `neutral`."""
    width: Atom
    lam: Lambda
    neutral: tuple[Atom, ...]
    arrs: tuple[Var, ...]


@dataclass(frozen=True)
class Filter:
    """Keeps, in order, the elements of arrs for which lam (-> bool) holds."""
    width: Atom
    lam: Lambda
    arrs: tuple[Var, ...]


@dataclass(frozen=True)
class ReduceByIndex:
    """Histogram: result = copy of dests; for each j with 0 <= idxs[j] <
    len(dests), result[idxs[j]] = lam(result[idxs[j]], vals[j]). Other
    indices (negative ones too) are ignored. lam is associative and
    commutative, `neutral` its neutral element."""
    width: Atom
    dests: tuple[Var, ...]
    lam: Lambda
    neutral: tuple[Atom, ...]
    idxs: Var
    vals: tuple[Var, ...]


@dataclass(frozen=True)
class Scatter:
    """result = copy of dests; result[idxs[j]] = vals[j] where 0 <= idxs[j] <
    len(dests); other indices ignored; with duplicates one value wins."""
    width: Atom
    dests: tuple[Var, ...]
    idxs: Var
    vals: tuple[Var, ...]


Exp = Union[
    AtomExp, BinOp, UnOp, Convert, Select, Call, If, Loop, Assert,
    Index, Slice, Update, Size, ArrayLit, Iota, Replicate, Copy, Concat,
    Rotate, Transpose, Reshape, Map, Reduce, Scan, Filter, ReduceByIndex, Scatter,
]

SOACS = (Map, Reduce, Scan, Filter, ReduceByIndex, Scatter)


@dataclass(frozen=True)
class Let:
    pat: tuple[Var, ...]
    exp: Exp
    loc: Optional[Loc] = None


# ---------------------------------------------------------------------------
# Functions and programs


@dataclass(frozen=True)
class FunDef:
    name: str
    params: tuple[Var, ...]
    ret: tuple[Type, ...]
    body: Body
    loc: Optional[Loc] = None


@dataclass(frozen=True)
class EntryParam:
    name: str          # the user's parameter name (for error messages)
    stype: SType       # its surface type; flatten_stype gives its core params


@dataclass(frozen=True)
class Entry:
    """An @ps.entry function. The FunDef of the same name takes the flattened
    parameters in order and returns the flattened result."""
    name: str
    params: tuple[EntryParam, ...]
    ret: SType
    loc: Optional[Loc] = None


#: entry names the compiled libraries' own C API takes: each entry is
#: exported as pyshark_<name>, and so are the cpu library's functions
#: (codegen/cpu/c_api.py, emit_unwind.py) and every pyshark_ocl_* of the
#: opencl library (codegen/opencl/native/); the front end rejects entries
#: of these names, and with this prefix, on every backend
C_API_NAMES = frozenset({"ctx_new", "ctx_free", "error_message", "stop_calls"})
C_API_PREFIX = "ocl_"


def is_c_api_name(name: str) -> bool:
    """Whether an entry called `name` would clash with a compiled library's
    own C API (C_API_NAMES, C_API_PREFIX)."""
    return name in C_API_NAMES or name.startswith(C_API_PREFIX)


@dataclass
class Program:
    functions: dict[str, FunDef]
    entries: dict[str, Entry]
    records: dict[str, SRecord] = field(default_factory=dict)
    filename: str = "<source>"

    def entry_fun(self, name: str) -> FunDef:
        return self.functions[name]
