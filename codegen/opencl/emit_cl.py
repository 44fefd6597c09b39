"""Kernel IR -> OpenCL C 1.2: one `__kernel` per ParFor body.

`emit_kernel(name, parfor)` spells the body of one `kir.ParFor` as

    __kernel void NAME(long pyshark_n, __global int *pyshark_err, CAPTURES...)
    {   long i = get_global_id(0); if (pyshark_err[0] != 0) return; if (i >= pyshark_n) return;  BODY  }

one work-item per iteration; the host rounds the global size up to a
multiple of the work-group size, hence the guard. CAPTURES are
`free_vars_of_block(body) - {i}`, sorted by name (as emit_llvm.py passes
them): a scalar by value (a bool as uchar `pu_NAME`), a pointer as
`__global T *pb_NAME, long po_NAME` (OpenCL 1.2 cannot pass an offset
pointer; the kernel adds the offset). kir variables are spelled `v_NAME`
and temporaries `tN`, so no spelling clashes with another. `program_source(kernels)` puts the
kernels of a module into one program behind the pragmas.

Spellings (one per kernel IR node, from the tables below, keyed like
kir.py's; nothing here chooses an algorithm or gives a primitive a meaning
beyond kir.py's):
- `#pragma OPENCL FP_CONTRACT OFF` (PoCL contracts a*b+c into an FMA by
  default); no native_*, no relaxed math, and mad only for an add marked
  `contract` with its marked product operand (kir.Bin.contract: a product
  that feeds only a reduction operator's +, kir_passes/contract.py):
  `mad(x, y, acc)`, which OpenCL lets be a correctly rounded fma or the two
  operations, as LANGUAGE.md lets the contraction happen or not. sqrt and f32 division must
  be correctly rounded: PoCL's are; elsewhere the host passes
  -cl-fp32-correctly-rounded-divide-sqrt when the device supports it (never
  -cl-fast-relaxed-math or -cl-mad-enable).
- Scalars: i8..u64 are char short int long uchar ushort uint ulong; f32
  float, f64 double (the program enables cl_khr_fp64 when any kernel uses
  f64); bool is `bool` in registers and uchar (0/1) in memory and in kernel
  arguments; a bool load is `byte != 0`.
- Integer + - * and negation wrap: they are computed in the unsigned type of
  at least 32 bits (uint/ulong) and converted back, so no signed overflow
  (C UB) and no promotion to a signed int is left. Shifts, div and rem are
  C's: kir.py's preconditions (amount in [0, bits), no x / 0, no MIN / -1)
  hold, codegen/scalar.py builds Python's operators so.
- Floats: IEEE + - * /; rem is fmod; pow atan2 exp ... are the OpenCL
  built-ins of the same name (the CPU backend calls libm: the two agree to
  within the built-ins' documented ulps, not bit for bit); fabs sqrt floor
  ceil trunc rint are exact. Comparisons are C's: ordered, except != which is
  unordered, as kir.py says.
- Casts are C's `(T)x` (kir.CAST_CLASSES; to bool `x != 0`): float -> int
  out of range is implementation-defined in OpenCL C, kir's POISON, which
  scalar.convert (numpy's x86 cvtt model, built once) never chooses.
- Every non-leaf expression is bound to a fresh `const` temporary, in order,
  so each operand is a name or a literal however often a spelling uses it.
  Float constants are hex literals (exact); NaN and infinities are as_float /
  as_double of their bits.
- Load/Store/PtrAdd: C pointer arithmetic on `__global T *`.
- Fail: the first failure wins through atomic_cmpxchg on pyshark_err[0]
  (0 -> code); the winner writes the message number to pyshark_err[1] and
  the four i64 arguments after it (pyshark_err + 2, as longs); the work-item
  returns. The host reads the buffer after the launch.
- CopyMem: an element loop. NumThreads: PYSHARK_NUM_THREADS, which the host
  defines when it builds the program (the same value it uses itself).
- GPU extension: Barrier is barrier(local | global fence); AtomicUpdate an
  atomic_add (integer add), an atomic_max (kir.atomic_max, 32-bit), an
  atomic_xchg (a value that does not read the old one) or a compare-and-swap
  loop; AtomicLoad a volatile load (on GPUs
  it bypasses the non-coherent L1). There is no fence across work-groups in
  OpenCL 1.2 (mem_fence is membar.cta on NVIDIA): kir.py has none.
- Alloc and Free in a plain ParFor body use a per-work-item heap: the
  kernel takes (pyshark_arena, pyshark_stride) after pyshark_err, work-item
  i owns bytes [i * stride, (i + 1) * stride) of the arena, Alloc bumps a
  private top (a 16-byte header keeps each block's size), Free pops the
  block when it is the last one (LIFO; others stay until the work-item
  ends), and a heap too small stops the work-item with HEAP_FULL: the host
  grows the stride and runs the entry again (runtime.py). OpenCL C has no
  malloc; expand.py first turns the plainly expandable allocations into
  slices of one block. Memory of pointers cannot be spelled: emit_kernel
  raises Unsupported and the host runs that ParFor itself (see host.py).
"""
from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

from pyshark.core.types import BOOL, F32, F64, I64, ScalarType

from .. import kir as K

HEADER = "#pragma OPENCL FP_CONTRACT OFF\n"
FP64_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
ATOM64_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
ERR = "pyshark_err"
COUNT = "pyshark_n"
# A kernel whose body allocates takes a per-work-item heap (see heap_alloc):
# work-item i owns arena[i * stride, (i + 1) * stride).
ARENA, STRIDE, HEAP, TOP = "pyshark_arena", "pyshark_stride", "pyshark_heap", "pyshark_top"
# The error code of a work-item whose heap is too small: the host grows the
# stride and runs the entry again (runtime.py); never a user-visible error,
# so its code lies beyond every run-time error's (kir.ERROR_CODES).
HEAP_FULL = 64
assert HEAP_FULL not in K.ERROR_CODES.values()
HEAP_HEADER = 16                # bytes before each block: its size (LIFO frees)

# ---------------------------------------------------------------------------
# Types

C_TYPES = {
    "i8": "char", "i16": "short", "i32": "int", "i64": "long",
    "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
    "f32": "float", "f64": "double", "bool": "bool",
}


def reg_type(t: K.KType) -> str:
    """The OpenCL C type of a value in a register (a private variable)."""
    if isinstance(t, K.Ptr):
        return f"__{t.space} {mem_type(t.elem)} *"
    return C_TYPES[t.value]


def mem_type(t: K.KType) -> str:
    """The OpenCL C type of an element in memory (bool: uchar)."""
    if isinstance(t, K.Ptr):
        raise Unsupported("memory of pointers in a kernel")
    return "uchar" if t is BOOL else C_TYPES[t.value]


def wrap_type(t: ScalarType) -> str:
    """The unsigned type integer + - * << of t are computed in (>= 32 bits)."""
    return "ulong" if t.bits == 64 else "uint"


# ---------------------------------------------------------------------------
# The spellings, keyed like kir.BIN_CLASSES / UN_CLASSES / CAST_CLASSES:
# (primitive, class). {x} {y}: operands (names or literals); {T}: the C type
# of the operands (of the result, for casts); {W}: wrap_type(T); {Z}: a zero
# of x's type.

BIN_SPELLINGS = {
    # floats
    ("add", "f"): "{x} + {y}", ("sub", "f"): "{x} - {y}", ("mul", "f"): "{x} * {y}",
    ("div", "f"): "{x} / {y}", ("rem", "f"): "fmod({x}, {y})",
    ("pow", "f"): "pow({x}, {y})", ("atan2", "f"): "atan2({x}, {y})",
    # NaN-propagating (OpenCL's fmin/fmax pass NaN over)
    ("min", "f"): "(({x} <= {y} || isnan({x})) ? {x} : {y})",
    ("max", "f"): "(({x} >= {y} || isnan({x})) ? {x} : {y})",
    ("fmin", "f"): "fmin({x}, {y})", ("fmax", "f"): "fmax({x}, {y})",      # IEEE minNum
    # integers: wrapping arithmetic in the unsigned type of >= 32 bits
    **{(op, c): f"({{T}})(({{W}}){{x}} {sym} ({{W}}){{y}})"
       for op, sym in (("add", "+"), ("sub", "-"), ("mul", "*")) for c in "su"},
    # C's division, remainder and shifts; kir.py's preconditions hold
    **{(op, c): f"({{T}})({{x}} {sym} {{y}})"
       for op, sym in (("div", "/"), ("rem", "%"), ("and", "&"), ("or", "|"), ("xor", "^"))
       for c in "su"},
    ("and", "b"): "{x} & {y}", ("or", "b"): "{x} | {y}", ("xor", "b"): "{x} ^ {y}",
    ("shl", "s"): "({T})(({W}){x} << {y})", ("shl", "u"): "({T})(({W}){x} << {y})",
    ("shr", "s"): "({T})({x} >> {y})",        # arithmetic (signed)
    ("shr", "u"): "({T})({x} >> {y})",        # logical (unsigned)
    # comparisons (C's: ordered, except != which is unordered on floats)
    **{(op, c): f"{{x}} {sym} {{y}}"
       for op, sym in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="),
                       ("gt", ">"), ("ge", ">=")) for c in "fsub"},
}

UN_SPELLINGS = {
    ("neg", "f"): "-{x}",
    ("neg", "s"): "({T})(({W})0 - ({W}){x})", ("neg", "u"): "({T})(({W})0 - ({W}){x})",
    ("not", "s"): "({T})~{x}", ("not", "u"): "({T})~{x}", ("not", "b"): "!{x}",
    ("isnan", "f"): "isnan({x})",
    **{(op, "f"): op + "({x})" for op in (
        "fabs", "sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
        "atan", "sinh", "cosh", "tanh", "floor", "ceil", "trunc", "rint")},
}

# C's conversions: float -> int out of range is implementation-defined in
# OpenCL C (kir's POISON; scalar.convert never chooses it); x -> bool is `ne`.
CAST_SPELLINGS = {
    **dict.fromkeys(K.CAST_CLASSES, "({T}){x}"),
    **{(c, "b"): "{x} != {Z}" for c in "fsu"},
}


# ---------------------------------------------------------------------------
# Literals


def literal(t: ScalarType, value) -> str:
    """An exact OpenCL C literal of a kir constant."""
    if t is BOOL:
        return "true" if value else "false"
    if t.is_float:
        return float_literal(t, float(value))
    v = int(value) & ((1 << t.bits) - 1)
    if t.is_signed and v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    ct = C_TYPES[t.value]
    if t.is_signed and v == -(1 << (t.bits - 1)):
        big = 1 << (t.bits - 1)
        return f"(({ct})(-{big - 1}{'L' if t.bits == 64 else ''} - 1))"
    suffix = {64: "UL" if t.is_unsigned else "L", 32: "U" if t.is_unsigned else ""}.get(t.bits, "")
    return f"(({ct}){v}{suffix})" if v < 0 or t.bits < 32 else f"{v}{suffix}"


def float_literal(t: ScalarType, f: float) -> str:
    if math.isnan(f) or math.isinf(f):
        if t is F32:
            bits = struct.unpack("<I", struct.pack("<f", f))[0]
            return f"as_float(0x{bits:08x}U)"
        bits = struct.unpack("<Q", struct.pack("<d", f))[0]
        return f"as_double(0x{bits:016x}UL)"
    text = f.hex() + ("f" if t is F32 else "")
    return f"({text})" if text.startswith("-") else text


# ---------------------------------------------------------------------------
# The kernel emitter


class Unsupported(Exception):
    """A ParFor body that a kernel cannot spell (Alloc/Free in it, memory of
    pointers): the host runs it instead."""


@dataclass(frozen=True)
class KernelArg:
    """A captured variable: kind "scalar" (by value; bool as uchar) or "ptr"
    (a buffer and an element offset)."""
    name: str
    type: K.KType

    @property
    def is_ptr(self) -> bool:
        return isinstance(self.type, K.Ptr)


@dataclass(frozen=True)
class Kernel:
    name: str
    source: str
    args: tuple                 # KernelArg, after (pyshark_n, pyshark_err)
    can_fail: bool
    uses_f64: bool
    group_size: int | None = None   # a work-group kernel: launched in groups of this size
    uses_atomics64: bool = False
    heap: bool = False          # Alloc/Free in the body: takes (arena, stride) after pyshark_err


def c_name(kir_name: str) -> str:
    """The C spelling of a kir variable (prefixed: never a keyword or built-in)."""
    return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", kir_name)


_walk = K.walk_stms


block_can_fail = K.block_can_fail


captures = K.parfor_captures         # the variables a ParFor body captures, by name


def _fusable(e: K.Expr) -> bool:
    return isinstance(e, K.Bin) and e.op == "mul" and e.contract


class _KernelEmitter:
    def __init__(self):
        self.lines: list[str] = []
        self.ntemps = 0
        self.uses_f64 = False
        self.names: dict[str, str] = {}      # kir name -> C name
        self.uses_atomics64 = False

    # -- helpers -----------------------------------------------------------
    def ctype(self, t: K.KType) -> str:
        self._note(t)
        return reg_type(t)

    def _note(self, t):
        while isinstance(t, K.Ptr):
            t = t.elem
        if t is F64:
            self.uses_f64 = True

    def name(self, v: K.KVar) -> str:
        n = self.names.get(v.name)
        if n is None:
            n = c_name(v.name)
            if n in self.names.values():
                n = f"{n}_{len(self.names)}"
            self.names[v.name] = n
        return n

    def temp(self, t: K.KType, text: str, ind: str) -> str:
        self.ntemps += 1
        n = f"t{self.ntemps}"
        ct = self.ctype(t)
        decl = f"{ct}const {n}" if ct.endswith("*") else f"const {ct} {n}"
        self.lines.append(f"{ind}{decl} = {text};")
        return n

    # -- expressions: each returns an atom (a name or a literal) -------------
    def expr(self, e: K.Expr, ind: str) -> str:
        if isinstance(e, K.KVar):
            self._note(e.type)
            return self.name(e)
        if isinstance(e, K.KConst):
            self._note(e.type)
            return literal(e.type, e.value)
        t = K.type_of(e)
        return self.temp(t, self.spell(e, ind), ind)

    def spell(self, e: K.Expr, ind: str) -> str:
        if isinstance(e, K.Bin) and e.contract and e.op == "add":
            # kir.Bin.contract: the product operand and the add as one mad
            # (a correctly rounded fma, or the two operations)
            acc, p = (e.x, e.y) if _fusable(e.y) else (e.y, e.x)
            if _fusable(p):
                self._note(K.type_of(e))
                x, y, z = self.expr(p.x, ind), self.expr(p.y, ind), self.expr(acc, ind)
                return f"mad({x}, {y}, {z})"
        if isinstance(e, K.Bin):
            t = K.type_of(e.x)
            x, y = self.expr(e.x, ind), self.expr(e.y, ind)
            tmpl = BIN_SPELLINGS.get((e.op, K.scalar_class(t)))
            if tmpl is None:
                raise NotImplementedError(f"{e.op} on {t!r} (kir.py gives it no meaning)")
            return self._fill(tmpl, t, x=x, y=y)
        if isinstance(e, K.Un):
            t = K.type_of(e.x)
            x = self.expr(e.x, ind)
            tmpl = UN_SPELLINGS.get((e.op, K.scalar_class(t)))
            if tmpl is None:
                raise NotImplementedError(f"{e.op} on {t!r} (kir.py gives it no meaning)")
            return self._fill(tmpl, t, x=x)
        if isinstance(e, K.Cast):
            if e.bits:
                self._note(e.to)
                return f"as_{C_TYPES[e.to.value]}({self.expr(e.x, ind)})"
            return self.cast(e.to, K.type_of(e.x), self.expr(e.x, ind), ind)
        if isinstance(e, K.Sel):
            c, x, y = (self.expr(a, ind) for a in (e.cond, e.x, e.y))
            return f"{c} ? {x} : {y}"
        if isinstance(e, K.Load):
            t = K.type_of(e)
            p, i = self.expr(e.ptr, ind), self.expr(e.index, ind)
            return f"{p}[{i}] != 0" if t is BOOL else f"{p}[{i}]"
        if isinstance(e, K.PtrAdd):
            return f"{self.expr(e.ptr, ind)} + {self.expr(e.offset, ind)}"
        if isinstance(e, K.NumThreads):
            return "PYSHARK_NUM_THREADS"
        if isinstance(e, K.LocalId):
            return "(long)get_local_id(0)"
        if isinstance(e, K.GroupId):
            return "(long)get_group_id(0)"
        raise TypeError(f"not a kernel IR expression: {e!r}")

    def _fill(self, tmpl: str, t: ScalarType, **ops) -> str:
        self._note(t)
        T = C_TYPES[t.value]
        return tmpl.format(T=T, W=wrap_type(t) if t.is_int else "", **ops)

    def cast(self, to: ScalarType, frm: ScalarType, x: str, ind: str) -> str:
        self._note(to)
        if to == frm:
            return x
        tmpl = CAST_SPELLINGS[K.scalar_class(frm), K.scalar_class(to)]
        return tmpl.format(T=C_TYPES[to.value], x=x, Z=literal(frm, 0))

    # -- statements ----------------------------------------------------------
    def block(self, b: K.Block, ind: str):
        for s in b.stms:
            self.stm(s, ind)

    def stm(self, s: K.Stm, ind: str):
        out = self.lines
        if isinstance(s, K.Set):
            v = self.expr(s.value, ind)
            out.append(f"{ind}{self.name(s.var)} = {v};")
        elif isinstance(s, K.Store):
            t = K.type_of(s.value)
            p, i, v = (self.expr(a, ind) for a in (s.ptr, s.index, s.value))
            out.append(f"{ind}{p}[{i}] = {'(uchar)' if t is BOOL else ''}{v};")
        elif isinstance(s, K.If):
            c = self.expr(s.cond, ind)
            out.append(f"{ind}if ({c}) {{")
            self.block(s.then, ind + "    ")
            if s.orelse.stms:
                out.append(f"{ind}}} else {{")
                self.block(s.orelse, ind + "    ")
            out.append(f"{ind}}}")
        elif isinstance(s, K.For):
            out.append(f"{ind}{{")
            inner = ind + "    "
            lo = self.temp(I64, self.expr(s.lo, inner), inner)
            hi = self.temp(I64, self.expr(s.hi, inner), inner)
            i = self.name(s.var)
            if s.unroll > 1:
                out.append(f"{inner}#pragma unroll {s.unroll}")
            out.append(f"{inner}for ({i} = {lo}; {i} < {hi}; {i}++) {{")
            self.block(s.body, inner + "    ")
            out.append(f"{inner}}}")
            out.append(f"{ind}}}")
        elif isinstance(s, K.While):
            out.append(f"{ind}for (;;) {{")
            inner = ind + "    "
            c = self.expr(s.cond, inner)
            out.append(f"{inner}if (!({c})) break;")
            self.block(s.body, inner)
            out.append(f"{ind}}}")
        elif isinstance(s, K.Fail):
            args = [self.expr(a, ind) for a in s.args]
            code = K.ERROR_CODES[s.kind]
            out.append(f"{ind}if (atomic_cmpxchg({ERR}, 0, {code}) == 0) {{")
            out.append(f"{ind}    {ERR}[1] = {s.msg};")
            for k in range(4):
                a = args[k] if k < len(args) else "0L"
                out.append(f"{ind}    ((__global long *)({ERR} + 2))[{k}] = {a};")
            out.append(f"{ind}}}")
            out.append(f"{ind}return;")
        elif isinstance(s, K.CopyMem):
            d, src, n = (self.expr(a, ind) for a in (s.dst, s.src, s.count))
            self._note(K.type_of(s.dst))
            out.append(f"{ind}for (long k = 0; k < {n}; k++) {d}[k] = {src}[k];")
        elif isinstance(s, K.Prefetch):
            pass                        # a CPU cache hint (kir.Prefetch)
        elif isinstance(s, K.Barrier):
            out.append(f"{ind}barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);")
        elif isinstance(s, K.LocalAlloc):
            pass                        # declared at the kernel's top (OpenCL C wants it there)
        elif isinstance(s, K.AtomicUpdate):
            self.atomic(s, ind)
        elif isinstance(s, K.AtomicLoad):
            t = s.var.type
            p, i = self.expr(s.ptr, ind), self.expr(s.index, ind)
            self._note(t)
            ld = f"*(volatile __global {mem_type(t)} *)({p} + {i})"
            out.append(f"{ind}{self.name(s.var)} = {ld}{' != 0' if t is BOOL else ''};")
        elif isinstance(s, K.Alloc):
            self.heap_alloc(s, ind)
        elif isinstance(s, K.Free):
            self.heap_free(s, ind)
        elif isinstance(s, K.ParFor):
            raise NotImplementedError("nested ParFor (the checker rejects it)")
        else:
            raise TypeError(f"not a kernel IR statement: {s!r}")

    def heap_alloc(self, s: K.Alloc, ind: str):
        """A bump allocation in the work-item's heap: a 16-byte header holding
        the block's size, then max(count, 1) elements (16-byte aligned). A
        heap too small for it stops the work-item with HEAP_FULL and the bytes
        it needed; the host then grows every heap and runs the entry again."""
        out = self.lines
        elem = s.var.type.elem
        size = elem.bytes
        self._note(s.var.type)
        c = self.expr(s.count, ind)
        v = self.name(s.var)
        limit = (1 << 40) // size
        out.append(f"{ind}{{")
        inner = ind + "    "
        out.append(f"{inner}const ulong pn = {c} > 1 ? (ulong){c} : 1UL;")
        out.append(f"{inner}const ulong nb = pn > {limit}UL ? 0x4000000000000000UL : "
                   f"((pn * {size}UL + 15UL) & ~15UL) + {HEAP_HEADER}UL;")
        out.append(f"{inner}if ({TOP} + nb > {STRIDE}) {{")
        out.append(f"{inner}    if (atomic_cmpxchg({ERR}, 0, {HEAP_FULL}) == 0) {{")
        out.append(f"{inner}        {ERR}[1] = -1;")
        out.append(f"{inner}        ((__global long *)({ERR} + 2))[0] = (long)({TOP} + nb);")
        out.append(f"{inner}    }}")
        out.append(f"{inner}    return;")
        out.append(f"{inner}}}")
        out.append(f"{inner}*(__global ulong *)({HEAP} + {TOP}) = nb;")
        out.append(f"{inner}{v} = (__global {mem_type(elem)} *)({HEAP} + {TOP} + {HEAP_HEADER});")
        out.append(f"{inner}{TOP} += nb;")
        out.append(f"{ind}}}")

    def heap_free(self, s: K.Free, ind: str):
        """The block goes back to the heap if it is the last one allocated
        (LIFO, the usual order of a body's temporaries); any other block, or
        a pointer that is not the heap's, stays until the work-item ends."""
        out = self.lines
        p = self.expr(s.ptr, ind)
        out.append(f"{ind}{{")
        inner = ind + "    "
        out.append(f"{inner}__global uchar *const fp = (__global uchar *)({p}) - {HEAP_HEADER};")
        out.append(f"{inner}if (fp >= {HEAP} && fp < {HEAP} + {TOP} && "
                   f"fp + *(__global ulong *)fp == {HEAP} + {TOP}) {TOP} -= *(__global ulong *)fp;")
        out.append(f"{ind}}}")

    def atomic(self, s: K.AtomicUpdate, ind: str):
        """An add of a 32/64-bit integer is atomic_add / atom_add, a 32-bit
        kir.atomic_max is atomic_max (core OpenCL 1.1; the 64-bit atom_max
        needs cl_khr_int64_extended_atomics, so a 64-bit max is the loop);
        anything else is a compare-and-swap loop on the element's bits."""
        out = self.lines
        t = s.old.type
        wide = t.bits == 64
        self.uses_atomics64 |= wide
        bits_t = "ulong" if wide else "uint"
        space = K.type_of(s.ptr).space
        p, i = self.expr(s.ptr, ind), self.expr(s.index, ind)
        old = self.name(s.old)
        v = s.value
        if (t.is_int and isinstance(v, K.Bin) and v.op == "add" and v.x == s.old
                and s.old.name not in K.expr_vars(v.y)):
            x = self.expr(v.y, ind)
            fn = "atom_add" if wide else "atomic_add"
            out.append(f"{ind}{old} = {fn}((volatile __{space} {C_TYPES[t.value]} *)({p} + {i}), {x});")
            return
        mx = K.atomic_max_operand(s)
        if mx is not None and not wide:
            x = self.expr(mx, ind)
            out.append(f"{ind}{old} = atomic_max((volatile __{space} {C_TYPES[t.value]} *)({p} + {i}), {x});")
            return
        if s.old.name not in K.expr_vars(v):
            # a store that others may read or update at once: one exchange
            bits = "ulong" if wide else "uint"
            fn = "atom_xchg" if wide else "atomic_xchg"
            x = self.expr(v, ind)
            out.append(f"{ind}{old} = as_{C_TYPES[t.value]}({fn}((volatile __{space} {bits} *)"
                       f"({p} + {i}), as_{bits}({x})));")
            return
        fn = "atom_cmpxchg" if wide else "atomic_cmpxchg"
        out.append(f"{ind}{{")
        inner = ind + "    "
        out.append(f"{inner}volatile __{space} {bits_t} *const pa = "
                   f"(volatile __{space} {bits_t} *)({p} + {i});")
        out.append(f"{inner}{bits_t} cur = *pa;")
        out.append(f"{inner}for (;;) {{")
        body = inner + "    "
        out.append(f"{body}{old} = as_{C_TYPES[t.value]}(cur);")
        new = self.expr(v, body)
        out.append(f"{body}const {bits_t} got = {fn}(pa, cur, as_{bits_t}({new}));")
        out.append(f"{body}if (got == cur) break;")
        out.append(f"{body}cur = got;")
        out.append(f"{inner}}}")
        out.append(f"{ind}}}")

    # -- the kernel ------------------------------------------------------------
    def kernel(self, name: str, p: K.ParFor) -> Kernel:
        caps = captures(p)
        heap = False
        for s in _walk(p.body):
            if isinstance(s, K.Alloc):
                if isinstance(s.var.type.elem, K.Ptr):
                    raise Unsupported("an array of pointers allocated in a ParFor body")
                heap = True
        if heap and p.group_size is not None:
            raise Unsupported("Alloc in a work-group kernel")
        params = [f"long {COUNT}", f"__global int *{ERR}"]
        if heap:
            params += [f"__global uchar *{ARENA}", f"ulong {STRIDE}"]
        prologue = []
        ind = "    "
        for v in caps:
            cn = self.name(v)
            if isinstance(v.type, K.Ptr):
                mt = mem_type(v.type.elem)
                self._note(v.type)
                params += [f"__global {mt} *pb_{cn}", f"long po_{cn}"]
                prologue.append(f"{ind}__global {mt} *const {cn} = pb_{cn} + po_{cn};")
            elif v.type is BOOL:
                params.append(f"uchar pu_{cn}")
                prologue.append(f"{ind}const bool {cn} = pu_{cn} != 0;")
            else:
                params.append(f"{self.ctype(v.type)} {cn}")
        # locals: everything the body declares, at the top (C function scope)
        declared: dict = {}
        for s in _walk(p.body):
            if isinstance(s, (K.Set, K.For, K.Alloc)):
                declared.setdefault(s.var.name, s.var)
            elif isinstance(s, K.AtomicUpdate):
                declared.setdefault(s.old.name, s.old)
            elif isinstance(s, K.AtomicLoad):
                declared.setdefault(s.var.name, s.var)
        i = self.name(p.var)
        # An earlier kernel of this entry failed: the host checks the error
        # buffer only where it needs device data, so a later kernel may start
        # on garbage; it does nothing instead (uniform across a group: only
        # earlier kernels set the flag of a group kernel, which cannot fail).
        locals_ = [f"{ind}const long {i} = (long)get_global_id(0);",
                   f"{ind}if ({ERR}[0] != 0) return;"]
        if p.group_size is None:
            locals_.append(f"{ind}if ({i} >= {COUNT}) return;")
        if heap:
            locals_.append(f"{ind}__global uchar *const {HEAP} = {ARENA} + (ulong){i} * {STRIDE};")
            locals_.append(f"{ind}ulong {TOP} = 0;")
        for s in p.body.stms:
            if isinstance(s, K.LocalAlloc):
                mt = mem_type(s.var.type.elem)
                self._note(s.var.type)
                cn = self.name(s.var)
                # 16-byte aligned: consecutive loads of a 16-byte multiple
                # may become one vector load (ld.shared.v4, gpu/tile2d.py)
                locals_.append(f"{ind}__local {mt} {cn}_mem[{s.count}] "
                               f"__attribute__((aligned(16)));")
                locals_.append(f"{ind}__local {mt} *const {cn} = {cn}_mem;")
        for v in declared.values():
            ct = self.ctype(v.type)
            locals_.append(f"{ind}{ct}{'' if ct.endswith('*') else ' '}{self.name(v)};")
        self.block(p.body, ind)
        attr = ("" if p.group_size is None else
                f"__attribute__((reqd_work_group_size({p.group_size}, 1, 1)))\n")
        head = f"{attr}__kernel void {name}({', '.join(params)})"
        src = "\n".join([head, "{"] + prologue + locals_ + self.lines + ["}"]) + "\n"
        return Kernel(name, src, tuple(KernelArg(v.name, v.type) for v in caps),
                      block_can_fail(p.body), self.uses_f64, p.group_size, self.uses_atomics64,
                      heap)


def emit_kernel(name: str, p: K.ParFor) -> Kernel:
    """The OpenCL C kernel of one ParFor (raises Unsupported, see above)."""
    return _KernelEmitter().kernel(name, p)


def program_source(kernels: list) -> str:
    """One OpenCL C program holding every kernel of a module."""
    head = HEADER
    if any(k.uses_atomics64 for k in kernels):
        head = ATOM64_PRAGMA + head
    if any(k.uses_f64 for k in kernels):
        head = FP64_PRAGMA + head
    guard = "#ifndef PYSHARK_NUM_THREADS\n#error \"build with -D PYSHARK_NUM_THREADS=<n>\"\n#endif\n"
    return head + guard + "\n" + "\n".join(k.source for k in kernels)


def uses_f64(source: str) -> bool:
    """Whether a program from program_source needs cl_khr_fp64."""
    return source.startswith(FP64_PRAGMA)


__all__ = ["emit_kernel", "program_source", "uses_f64", "Kernel", "KernelArg", "Unsupported",
           "captures", "block_can_fail", "literal", "reg_type", "mem_type", "c_name",
           "BIN_SPELLINGS", "UN_SPELLINGS", "CAST_SPELLINGS", "C_TYPES"]
