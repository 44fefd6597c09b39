"""The kernel IR: one imperative language that both native backends spell.

Modelled on Futhark's ImpCode: host code (scalar code, loops, allocations,
copies, error setting) plus parallel loops whose bodies are sequential code.
Everything that is a *decision* (which algorithm a SOAC uses, where memory is
allocated and freed, how Python's operators are built from machine ones) is
made before this IR; the emitters (codegen/cpu/emit_llvm.py, later
codegen/opencl/emit_cl.py) only spell it.

Values
- Scalar types are the core's ScalarType. `bool` is i1 in registers and one
  byte (0 or 1) in memory, as numpy stores it.
- `Ptr(elem)` is a pointer to elements of a scalar type or to pointers.
- Variables (`KVar`) are mutable locals of the function (like C locals):
  `Set` assigns them; a variable is declared by its first `Set` (or as a
  parameter). Every read of a variable is dominated by a Set of it on every
  path (the checker checks the simple, structural version of this rule).

Expressions are pure trees and never fail; every operand already has the
right type (no implicit conversions). Primitive operators have the C/LLVM
machine meaning that BIN_CLASSES, UN_CLASSES and CAST_CLASSES below state,
and the lowering guarantees their preconditions (no integer division by
zero or INT_MIN / -1, shift amounts in [0, bits), no poison observed).
Python's operators (floor division, NaN-propagating min, numpy's float ->
int conversion, ...) are built from these by codegen/scalar.py, once, for
every backend; the emitters are spelling tables over the primitives.

Statements: Set, Store, Alloc, Free, CopyMem, Prefetch (a cache hint), If, For,
While, Fail, ParFor.

`ParFor(i, n, body)` runs body for i in 0..n-1 where iterations are
independent (and, the noalias contract, memory written through one captured
pointer variable is not accessed through another captured pointer variable); the CPU backend splits them in contiguous static chunks over
the OpenMP threads (and runs them inline when `parallel_if` is false or
n <= 1). Its body may read any variable of the enclosing code (captured by
value when the loop starts), may Set only variables it declares itself, and
communicates results only through memory. ParFors do not nest (the checker
rejects it).

`Fail(kind, msg, args)` stops the entry with an error: code `kind` (see
ERROR_CODES), message number `msg` (an index into Module.messages, a
str.format template with `{}` for each of up to four i64 `args`). Inside a
ParFor the first failure wins, the failing chunk stops, and the entry
returns the error after the loop. A failing entry frees the blocks it
allocated and still holds: those neither freed nor stored into memory (an
entry's results, stored into its out-params, are the caller's). Backends
keep that account per function (emit_unwind.py), so a ParFor body frees
only blocks that it allocated itself (kir_interp checks it). A backend may
also stop an entry with KeyboardInterrupt's code at a Ctrl-C (the cpu
backend's polls; the lowering never emits that Fail).

The entry ABI that every backend implements for a `Function`:
    int32_t NAME(pyshark_ctx *ctx, P0, P1, ...)
with the params in order (scalars by value, bool as uint8_t; pointers as
pointers) and
    typedef struct { int32_t code; int32_t msg; int64_t args[4];
                     int32_t nthreads; int32_t sigint; } pyshark_ctx;
The return value equals ctx->code after the call (0: success).
`nthreads` is the number of threads a ParFor may use (0: the runtime's
default); `sigint` != 0 lets a Ctrl-C stop the call (codegen/cpu). `Alloc` returns memory that the caller may later release with C
`free()` (results are handed to numpy that way).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from pyshark.core.types import BOOL, F32, F64, I8, I32, I64, ScalarType
from pyshark.errors import RUNTIME_ERRORS


# ---------------------------------------------------------------------------
# Types


@dataclass(frozen=True)
class Ptr:
    """A pointer to elements of `elem` (a scalar type or another Ptr).
    `space` is "global" (memory of the entry: Alloc, params) or "local"
    (a work-group's local memory: LocalAlloc, GPU extension below)."""
    elem: Union[ScalarType, "Ptr"]
    space: str = "global"

    def __repr__(self) -> str:
        return f"*{self.elem!r}" if self.space == "global" else f"*local {self.elem!r}"


KType = Union[ScalarType, Ptr]


# ---------------------------------------------------------------------------
# Expressions


@dataclass(frozen=True)
class KVar:
    name: str
    type: KType

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class KConst:
    """A scalar constant; `value` is a Python int/float/bool in range of type."""
    value: Union[int, float, bool]
    type: ScalarType

    def __repr__(self) -> str:
        return f"{self.value!r}{self.type.value}"


# Primitive meaning. Each primitive is defined on every input of the classes
# it lists -- except where a precondition is named (int div/rem, shifts),
# which the IR must meet, and float -> int Cast, which gives poison outside
# its range. The emitters only spell these meanings (tables keyed like the
# ones below: emit_llvm.py, opencl/emit_cl.py, opencl/host.py, kir_interp.py);
# Python's and numpy's operators (floor division, NaN-propagating min,
# numpy's float -> int rules) are built from them once, in codegen/scalar.py.
#
# Scalar classes: "f" float, "s" signed int, "u" unsigned int, "b" bool.
#
# Binary primitives. Operands have one type T; result T unless noted.
#   add sub mul           ints wrap (mod 2**bits); floats IEEE, round to
#                         nearest, no contraction (except Bin.contract's)
#   div                   floats: IEEE division. ints: truncating (C) division;
#                         precondition y != 0 and not (x == MIN and y == -1),
#                         on every evaluation (a Sel's unchosen arm too: the
#                         machine instruction traps); scalar.py builds Python's
#                         // and % with the divisor made safe, the lowering's
#                         own divisions are by sizes >= 1
#   rem                   floats: C fmod (exact; sign of x; NaN for y == 0 or
#                         x infinite). ints: C remainder (sign of x), same
#                         precondition as div
#   and or xor            ints and bool, bitwise
#   shl shr               ints; shr is arithmetic for signed T, logical for
#                         unsigned; precondition 0 <= y < bits(T) (scalar.py's
#                         shl/shr give numpy's values past the width)
#   pow atan2             floats: C pow / atan2 (f32: powf / atan2f)
#   min max               floats: numpy.minimum / maximum: NaN when either
#                         operand is NaN, else the smaller (larger); of -0.0
#                         and 0.0 either (LLVM's llvm.minimum with nsz: a
#                         vectorizable reduction, where a compare and select
#                         is one only with no-NaN flags)
#   fmin fmax             floats: numpy.fmin / fmax (IEEE minNum): a NaN
#                         operand is passed over, NaN only when both are; of
#                         -0.0 and 0.0 either (LLVM's llvm.minnum with nsz,
#                         OpenCL's fmin: both vectorizable)
#   eq ne lt le gt ge     any T -> bool; signedness from T (bool: False < True);
#                         floats: ordered comparisons except ne, which is
#                         unordered (NaN != x is true, every other comparison
#                         with a NaN is false); -0.0 == 0.0
BIN_CLASSES = {
    **dict.fromkeys(("add", "sub", "mul", "div", "rem"), "fsu"),
    **dict.fromkeys(("and", "or", "xor"), "sub"),
    **dict.fromkeys(("shl", "shr"), "su"),
    **dict.fromkeys(("pow", "atan2", "min", "max", "fmin", "fmax"), "f"),
    **dict.fromkeys(("eq", "ne", "lt", "le", "gt", "ge"), "fsub"),
}
BIN_PRIMS = frozenset(BIN_CLASSES)
CMP_PRIMS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})

# Unary primitives, result of the operand type unless noted.
#   neg                   ints: 0 - x (wraps); floats: IEEE negation (fneg:
#                         flips the sign bit, -0.0 for 0.0)
#   not                   bool: logical not; ints: bitwise complement
#   fabs sqrt             floats (sqrt correctly rounded)
#   exp log log2 log10 sin cos tan asin acos atan sinh cosh tanh
#                         floats: the C math library function (f32: the `f` one)
#   floor ceil trunc rint floats, exact; rint rounds half to even
#   isnan                 floats -> bool
UN_CLASSES = {"neg": "fsu", "not": "sub", **dict.fromkeys((
    "fabs", "sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "rint", "isnan"), "f")}
UN_PRIMS = frozenset(UN_CLASSES)

#: the primitives a backend computes with a math library routine (libm, or
#: libmvec's and OpenCL's vector versions), and what one counts as in simple
#: operations in the passes' cost estimates (streaming stores, the parallel
#: work guard)
LIBM_PRIMS = frozenset({"exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
                        "atan", "sinh", "cosh", "tanh", "pow", "atan2"})
LIBM_COST = 20

# Conversions (Cast, bits=False), by (class of x, class of `to`); a Cast to
# x's own type is x.
#   f -> f                f32 <-> f64, round to nearest
#   f -> s, f -> u        C's conversion, truncation toward zero, where
#                         trunc(x) is a value of `to`; otherwise (NaN, +-inf,
#                         out of range) the result is POISON (below).
#                         numpy's total conversion is scalar.convert's
#   s -> f, u -> f        round to nearest
#   b -> f, b -> s, b -> u  0 or 1
#   s -> s, s -> u        sign-extend or truncate (mod 2**bits)
#   u -> s, u -> u        zero-extend or truncate
#   f -> b, s -> b, u -> b  x != 0 (the `ne` primitive: NaN gives true)
# With bits=True a Cast is no conversion (see Cast).
#
# POISON (LLVM's word) is the result of an out-of-range float -> int Cast:
# not undefined behaviour, but a value no program may observe. Bin, Un and
# Cast of poison give poison; a Sel whose chosen arm is not poison is not
# poison; a variable may hold it. Anything else that reads it (a Sel or If
# or While condition, an index, a count, a divisor or shift amount, a
# stored value, a Fail argument) is an IR error, which kir_interp reports.
# LLVM's fptosi/fptoui give poison there, OpenCL C an implementation-
# defined value: both spell it.
CAST_CLASSES = frozenset((a, b) for a in "fsub" for b in "fsub" if (a, b) != ("b", "b"))


def scalar_class(t: ScalarType) -> str:
    """The class letter of a scalar type in the tables above."""
    if t.is_bool:
        return "b"
    if t.is_float:
        return "f"
    return "s" if t.is_signed else "u"


@dataclass(frozen=True)
class Bin:
    """A binary primitive. `reassoc` lets the backend reassociate this float
    operation (set on the operators of reduce/scan/reduce_by_index, which
    LANGUAGE.md allows to run in any association).

    `contract`, on a float `add` one of whose operands is a float `mul` Bin
    (in the tree, not through a variable) that carries it too, lets the
    backend compute the pair as one fused multiply-add (one rounding: C's
    fma, LLVM's `contract` flags, OpenCL C's mad); nowhere else does it mean
    anything. LANGUAGE.md allows it for a product that goes only into the
    `+` of a reduction operator (a dot or matrix product);
    kir_passes/contract.py is what sets it. Evaluating the pair as written
    (kir_interp, the host code) is one of the allowed results."""
    op: str
    x: "Expr"
    y: "Expr"
    reassoc: bool = False
    contract: bool = False


@dataclass(frozen=True)
class Un:
    op: str
    x: "Expr"


@dataclass(frozen=True)
class Cast:
    """x converted to `to`: the machine conversion CAST_CLASSES defines
    (float -> int: C's truncation in range, POISON outside it; numpy's
    values there -- gcc's x86-64 cvtt sequences -- are scalar.convert's).
    With bits=True it is no conversion: x's bits read as a `to` of the same
    width, neither being bool (C's as_type; packing a float with a flag into
    one atomic word, gpu/segscan.py)."""
    to: ScalarType
    x: "Expr"
    bits: bool = False


@dataclass(frozen=True)
class Sel:
    """`x if cond else y`, both evaluated (they never fail)."""
    cond: "Expr"
    x: "Expr"
    y: "Expr"


@dataclass(frozen=True)
class Load:
    """ptr[index] (index is i64, in elements)."""
    ptr: "Expr"
    index: "Expr"


@dataclass(frozen=True)
class PtrAdd:
    """ptr + offset elements (offset i64)."""
    ptr: "Expr"
    offset: "Expr"


@dataclass(frozen=True)
class NumThreads:
    """The number of threads a ParFor started now would use (i64, >= 1)."""


@dataclass(frozen=True)
class LocalId:
    """GPU extension: this work-item's index in its group (i64, 0..group_size-1)."""


@dataclass(frozen=True)
class GroupId:
    """GPU extension: the index of this work-item's group (i64)."""


Expr = Union[KVar, KConst, Bin, Un, Cast, Sel, Load, PtrAdd, NumThreads, LocalId, GroupId]


# ---------------------------------------------------------------------------
# Statements


@dataclass(frozen=True)
class Set:
    var: KVar
    value: Expr


@dataclass(frozen=True)
class Store:
    """ptr[index] = value. `nontemporal` says that nothing reads this
    element again soon, so a backend may write it past the caches (x86
    streaming stores, which do not read the line first) and may delay it
    to the end of its ParFor chunk; the value is visible after the ParFor
    like any store's (after a Fail in the ParFor, what it stored is
    unspecified). Only as `p[i] = v` at the top level of a ParFor body, i
    the ParFor's counter and p a pointer variable that the body does not
    declare or otherwise mention (the checker enforces it;
    codegen/kir_passes/streaming.py sets it; OpenCL C ignores it)."""
    ptr: Expr
    index: Expr
    value: Expr
    nontemporal: bool = False


@dataclass(frozen=True)
class Alloc:
    """var = fresh memory for `count` (i64) elements of var.type.elem, 16-byte
    aligned, uninitialised; releasable with C free(). count <= 0 allocates a
    minimal block. Fails with MemoryError when the size overflows or the
    allocation fails.

    zeroed=True: the elements are 0, and the code that uses them leaves
    them 0 again before the block is freed, so a runtime may serve such
    blocks from a persistent zeroed pool with no clearing pass (the opencl
    runtime does, runtime.Call.alloc_zeroed; gpu/segred.py's single-pass
    reduction counts its groups in one)."""
    var: KVar
    count: Expr
    zeroed: bool = False


@dataclass(frozen=True)
class Free:
    ptr: Expr


@dataclass(frozen=True)
class CopyMem:
    """dst[0:count] = src[0:count] (element type of dst; no overlap).
    `nontemporal`, as Store's: nothing reads dst[0:count] again soon, so a
    backend may write its whole cache lines past the caches; the copy is
    visible after its ParFor like any store. Only inside a ParFor body, with
    dst global memory that nothing in the function reads (the checker
    enforces the first; mc/segmap.py's streamed tiles set it; OpenCL C and
    the kir interpreter ignore it)."""
    dst: Expr
    src: Expr
    count: Expr
    nontemporal: bool = False


@dataclass(frozen=True)
class Prefetch:
    """A hint: ptr[index] is about to be read once, by a loop streaming
    through it, so a backend may fetch its line ahead of the loop without
    keeping it in the outer caches (x86 `prefetchnta`, which on AMD Zen
    does not make the line an L3 victim, so a stream does not evict what
    the loop keeps there: mc/scatter.py's split scan). Any index is
    allowed, past the block's end included: it never faults, never fails
    and changes no result. OpenCL C and the kir interpreter ignore it."""
    ptr: Expr
    index: Expr


@dataclass(frozen=True)
class Block:
    stms: tuple["Stm", ...]


@dataclass(frozen=True)
class If:
    cond: Expr
    then: Block
    orelse: Block = Block(())


@dataclass(frozen=True)
class For:
    """for var in lo, lo+1, ..., hi-1 (i64; no iteration when hi <= lo).
    `var` is read-only in the body. `unroll` > 1 is a hint that a backend
    may unroll the loop by that factor (no change of meaning; a rebuilt
    loop may drop it). `independent` says that the iterations are
    independent, as a ParFor's are (the lowering of a map inside a ParFor
    sets it, lower_base.par_for): they may run in any interleaving, and the
    body's variables are not read after the loop. A pass may reorder them
    (codegen/kir_passes/simd_interchange.py); a rebuilt loop may drop it.
    `simd` False is a hint that vector code for this loop is expected to be
    slower than scalar code on the target (a scatter's dense indirect stores
    on a CPU whose vector scatter is slow: mc/scatter.py), so a backend
    should not vectorize it (no change of meaning). `max_trip` > 0 says
    that the loop never runs more than that many iterations (a tile's row:
    mc/segmap.py), so a backend should not spend a row's few iterations on
    wide unrolled vector code (the cpu backend does not interleave it)."""
    var: KVar
    lo: Expr
    hi: Expr
    body: Block
    unroll: int = 0
    independent: bool = False
    simd: bool = True
    max_trip: int = 0


@dataclass(frozen=True)
class While:
    """while cond: body -- `cond` is re-evaluated before every iteration."""
    cond: Expr
    body: Block


@dataclass(frozen=True)
class Fail:
    kind: str
    msg: int
    args: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class ParFor:
    """See the module docstring; `group_size` (GPU extension) makes it a
    work-group kernel."""
    var: KVar
    count: Expr
    body: Block
    parallel_if: Optional[Expr] = None   # None: always worth going parallel
    group_size: Optional[int] = None


# -- The GPU extension slot (target-specific ops kept in one place). ------------
# A ParFor with `group_size` G is a work-group kernel: it runs
# ceil(count / G) * G work-items in groups of G (no iteration is skipped: the
# body guards `var < count` itself where it must), `var` being the global
# index. Only there may LocalId, GroupId, Barrier, LocalAlloc and AtomicLoad
# appear, and such a body contains no Fail, Alloc or Free (a work-item that left early
# would break the next barrier): the gpu/ algorithms run user code that can
# fail in plain ParFors. Barriers sit in control flow that is uniform across
# the group. Only codegen/opencl spells these nodes; the mc/ family never
# makes them.


@dataclass(frozen=True)
class Barrier:
    """Every work-item of the group waits here; the local and global memory
    writes of each before it are visible to all after it."""


@dataclass(frozen=True)
class LocalAlloc:
    """var = `count` (a Python int) elements of local memory, shared by the
    work-group; var.type is Ptr(elem, "local"). At the top level of a group
    ParFor's body only."""
    var: KVar
    count: int


@dataclass(frozen=True)
class AtomicUpdate:
    """Atomically: old = ptr[index]; ptr[index] = value, where `value` may
    read `old` (a variable this statement declares) and is evaluated again
    until the update wins (a compare-and-swap loop: `value` must not read
    memory that others write). Element types of 32 or 64 bits. Any ParFor,
    on a device or on the CPU; used by histograms and by the last-wins
    scatter (an atomic max, below). The memory it updates is read and
    written only by atomic statements until the ParFor ends."""
    ptr: Expr
    index: Expr
    old: KVar
    value: Expr


def atomic_max(ptr: Expr, index: Expr, old: KVar, x: Expr) -> AtomicUpdate:
    """ptr[index] = max(ptr[index], x) for a signed integer, as the one
    AtomicUpdate form `Sel(x > old, x, old)` that the emitters recognise
    (atomicrmw max / OpenCL atomic_max) -- a spelling, not a new meaning."""
    return AtomicUpdate(ptr, index, old, Sel(Bin("gt", x, old), x, old))


@dataclass(frozen=True)
class AtomicLoad:
    """var = ptr[index] (global memory) as it is now, for memory that other
    work-groups write while the kernel runs: never served from an earlier
    read or a non-coherent cache, not merged with or moved across another
    AtomicLoad; untorn for elements of 32 or 64 bits. No order with other
    addresses is promised (OpenCL 1.2 has no fence across work-groups): what
    must be seen together travels in one word. In a work-group ParFor; used
    by the scan's look-back (gpu/segscan.py)."""
    var: KVar
    ptr: Expr
    index: Expr


Stm = Union[Set, Store, Alloc, Free, CopyMem, Prefetch, If, For, While, Fail, ParFor, Barrier,
            LocalAlloc, AtomicUpdate, AtomicLoad]

ERROR_CODES = {name: code for name, (code, _) in RUNTIME_ERRORS.items()}
# the message of the MemoryError of an Alloc (or of a pass's size check):
# the element count and the element size
ALLOC_FAIL_MESSAGE = "cannot allocate {} elements of {} bytes"


# ---------------------------------------------------------------------------
# Functions and modules


@dataclass(frozen=True)
class Function:
    """One entry point (see the ABI in the module docstring)."""
    name: str
    params: tuple[KVar, ...]
    body: Block


@dataclass
class Module:
    functions: list[Function] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    def message(self, text: str) -> int:
        """The number of a message template, adding it when new."""
        if text not in self.messages:
            self.messages.append(text)
        return self.messages.index(text)


# ---------------------------------------------------------------------------
# Typing


def type_of(e: Expr) -> KType:
    if isinstance(e, (KVar, KConst)):
        return e.type
    if isinstance(e, Bin):
        return BOOL if e.op in CMP_PRIMS else type_of(e.x)
    if isinstance(e, Un):
        return BOOL if e.op == "isnan" else type_of(e.x)
    if isinstance(e, Cast):
        return e.to
    if isinstance(e, Sel):
        return type_of(e.x)
    if isinstance(e, Load):
        t = type_of(e.ptr)
        assert isinstance(t, Ptr), f"load from non-pointer {e.ptr!r}"
        return t.elem
    if isinstance(e, PtrAdd):
        return type_of(e.ptr)
    if isinstance(e, (NumThreads, LocalId, GroupId)):
        return I64
    raise TypeError(f"not a kernel IR expression: {e!r}")


# ---------------------------------------------------------------------------
# Traversal and the module's other helpers
#
# The generic walks over these classes (children, stm_exprs, sub_blocks,
# walk_stms, rename_block, ...) live in kir_traverse.py, driven by its table
# of every node's fields by role; the checker and the printer in kir_check.py
# and kir_pretty.py. They are reachable as attributes of this module
# (K.walk_stms, K.check_module) and imported on first use (PEP 562's module
# __getattr__), so that this spec imports none of the modules built on it:
# no import cycle, whichever of them is imported first.

_ELSEWHERE = {
    **{name: "kir_traverse" for name in (
        "children", "expr_vars", "stm_exprs", "sub_blocks", "declared_vars",
        "free_vars_of_block", "walk_stms", "parfor_captures", "block_can_fail",
        "rename_expr", "rename_block", "atomic_max_operand")},
    "check_module": "kir_check",
    "pretty_module": "kir_pretty",
}


def __getattr__(name: str):
    where = _ELSEWHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"{__package__}.{where}"), name)
    globals()[name] = value             # later lookups are plain attribute reads
    return value


__all__ = [
    "Ptr", "KType", "KVar", "KConst", "Bin", "Un", "Cast", "Sel", "Load", "PtrAdd",
    "NumThreads", "LocalId", "GroupId", "Expr", "Set", "Store", "Alloc", "Free", "CopyMem",
    "Prefetch", "Block", "If", "For", "While", "Fail", "ParFor", "Barrier", "LocalAlloc",
    "AtomicUpdate", "AtomicLoad", "atomic_max", "atomic_max_operand", "BIN_CLASSES", "UN_CLASSES",
    "CAST_CLASSES", "BIN_PRIMS", "UN_PRIMS", "CMP_PRIMS", "scalar_class",
    "Stm", "Function", "Module", "ERROR_CODES", "ALLOC_FAIL_MESSAGE",
    "type_of", "children", "expr_vars", "stm_exprs", "sub_blocks", "declared_vars",
    "free_vars_of_block", "walk_stms", "parfor_captures", "block_can_fail", "rename_expr",
    "rename_block", "check_module", "pretty_module",
    "BOOL", "F32", "F64", "I8", "I32", "I64",
]
