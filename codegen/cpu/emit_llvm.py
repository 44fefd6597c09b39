"""Kernel IR -> LLVM IR text (llvmlite.ir), spelling codegen/kir.py and its C ABI.

`emit_module(m)` spells every `kir.Function` as an exported function

    i32 NAME(ptr %ctx, P0, P1, ...)      ; bool params as i8, pointers as ptr

whose return value equals ctx->code (0: success). The ctx struct is
`{ i32 code, i32 msg, [4 x i64] args, i32 nthreads, i32 sigint }` (48 bytes;
offsets 0, 4, 8, 40, 44). The entry stores 0 into ctx->code when it starts;
`sigint` != 0 asks it to stop with KeyboardInterrupt's code at Ctrl-C
(emit_unwind.py).

Spellings (one per kernel IR node; nothing here chooses an algorithm):
- A variable declared once and read only where that declaration dominates
  is the LLVM value itself (emit_ssa.py); the others are allocas in their
  function's entry block (mem2reg makes SSA of them). Bool is i1 in registers, i8 (0/1) in memory and in entry params; a
  bool load is `byte != 0`.
- Bin/Un/Cast/Sel: the machine operation kir.py names, from the tables
  BIN_SPELLINGS / UN_SPELLINGS / CAST_SPELLINGS (keyed like kir.py's): sdiv,
  srem, shl, ... as they are (kir.py's preconditions hold: codegen/scalar.py
  builds Python's operators with the divisor and the shift amount made safe),
  fptosi/fptoui for float -> int (poison out of range, as kir.py says;
  scalar.convert builds numpy's cvtt values around it).
  Floats are IEEE with no contraction; `Bin.reassoc` puts the `reassoc`
  fast-math flag on that instruction (enough for the loop vectorizer to turn
  a float sum into vector partial sums); `Bin.contract` the `contract` flag
  on the add and on its product operand, which LLVM fuses into an FMA
  (vfmadd) where the host CPU has one (kir_passes/contract.py); `fastmath=True` puts `fast` on every
  float operation and math call (not on `isnan`, which stays a real test).
  sqrt fabs floor ceil trunc are LLVM intrinsics, rint is llvm.roundeven;
  the other math functions are libm calls declared `memory(none) nounwind`
  (errno is never read).
- Load/Store/PtrAdd: `getelementptr inbounds` in elements (C pointer rules:
  a pointer stays within its object, one-past-the-end allowed). A
  nontemporal Store carries `!nontemporal !{i32 1}` where emit_parfor.py
  can make it an aligned vector store (see there).
- Alloc: malloc(max(count, 1) * size) (16-byte aligned); from 4 MiB on
  aligned_alloc(2 MiB, ...) from the heap (mmap off around the call, see
  emit_alloc.py and runtime.keep_heap) and madvise(MADV_HUGEPAGE), as numpy does; a
  size that overflows or a NULL result is `Fail("MemoryError",
  ALLOC_FAIL_MESSAGE, (count, elem_size))`; all of it in one noinline
  `pyshark.alloc` per module (emit_alloc.py: an Alloc is a call and a null
  test). emit_module appends ALLOC_FAIL_MESSAGE to
  `m.messages` (via `Module.message`) when the module has an Alloc.
  `zeroed=True` then clears it (llvm.memset).
- Free: free(). CopyMem: llvm.memcpy of max(count, 0) * size bytes; with
  `nontemporal`, emit_stream.stream_copy. Prefetch: llvm.prefetch (read,
  no locality: x86 prefetchnta) of a plain GEP (the index may be past the
  block).
- AtomicUpdate: an integer `old + x` is `atomicrmw add`; anything else a
  compare-and-swap loop on the element's bits (monotonic: the ParFor's join
  orders it with what follows) that starts from an atomic load and stores
  nothing when the new bits equal the current ones (linearised at that
  load), so an atomic max (kir.atomic_max) on a slot that already holds a
  larger value is one shared read, not a contended write.
- Fail in host code: store code, msg and args (unused args = 0) into ctx
  (a call of the module's one cold `pyshark.fail`), then unwind: free the function's live allocations, disarm SIGINT, return
  the code (emit_unwind.py). Inside a ParFor (`pyshark.fail.par`): cmpxchg
  ctx->code from 0 to the code; only the winner stores msg/args; the chunk unwinds (frees its
  own live blocks) and returns; after the loop the host unwinds when
  ctx->code is not 0. Host loops, claimed blocks and looping ParFor bodies
  poll the SIGINT flag (emit_unwind.py).
- ParFor(i, n, body): the body becomes an internal function
  `NAME.parforK(ctx, captures..., lo, hi)` running `for i in lo..hi-1`, with
  `noalias` on its pointer captures (free_vars_of_block(body) minus i, sorted
  by name, passed by value). When n > 1, parallel_if holds and
  min(NumThreads, n) > 1, the host packs {ctx, n, next = 0, block,
  captures...} into a stack struct and calls pysharkrt_parallel(NAME.parforK.omp,
  &struct, min(NumThreads, n), 0); on every thread the outlined function
  claims [lo, lo + block) with `atomicrmw add next, block` and calls the
  body function on it until lo >= n (or the ParFor failed). Otherwise the
  host calls the body function on [0, n) inline.
  (codegen/cpu/emit_parfor.py spells it, with the nontemporal split.)
  The noalias contract: inside one ParFor, memory written through one
  captured pointer variable is not accessed through another captured pointer
  variable (or through a pointer loaded from memory).
- For(i, lo, hi): lo and hi are evaluated once, before the first iteration
  (a range, as kir.py reads); While re-evaluates its condition every time.
- NumThreads: ctx->nthreads when > 0, else pysharkrt_max_threads() (team.c).
- Entry names must differ from the C/OpenMP functions the module calls
  (exp, free, aligned_alloc, pysharkrt_parallel, ...): emit_module raises
  ValueError; the backend should prefix entry names.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from pyshark.core.types import BOOL, ScalarType

from .. import kir as K
from ..kir_traverse import walk_exprs
from .llvm_types import (CTX_ARGS, CTX_CODE, CTX_MSG, CTX_NTHREADS, CTX_SIGINT, CTX_TYPE,
                         elem_size, mem_type, param_type, reg_type)
from .llvm_types import (F32 as _F32, F64 as _F64, I1 as _I1, I8 as _I8, I32 as _I32,
                         I64 as _I64, PTR as _PTR, VOID as _VOID, alloca as _alloca)
from .emit_alloc import MIN_ALLOC_ELEMS as _MIN_ALLOC_ELEMS, block_allocator
from .emit_ssa import ssa_vars
from .emit_stream import stream_copy
from .emit_unwind import INTERRUPT_MESSAGE, Runtime, Unwinder, host_poll_stride, poll, strips

ALLOC_FAIL_MESSAGE = K.ALLOC_FAIL_MESSAGE

_ALIGN = 64

# The spelling tables, keyed like kir.BIN_CLASSES / UN_CLASSES /
# CAST_CLASSES: (primitive, class) -> (how, name). how: "op" an IRBuilder
# method (x, y) / (x); "fop" the same with the float flags; "icmp"/"fcmp" a
# comparison (method, predicate); "libm" a C math library call; "intrinsic"
# an LLVM intrinsic; casts: an IRBuilder conversion, or "resize" (trunc or
# extend by widths: name is the pair of methods), "ne0" (x != 0, kir's `ne`).
_SYM = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
BIN_SPELLINGS = {
    **{(op, "f"): ("fop", m) for op, m in (("add", "fadd"), ("sub", "fsub"), ("mul", "fmul"),
                                           ("div", "fdiv"), ("rem", "frem"))},
    **{(op, c): ("op", op) for op in ("add", "sub", "mul") for c in "su"},
    ("div", "s"): ("op", "sdiv"), ("div", "u"): ("op", "udiv"),
    ("rem", "s"): ("op", "srem"), ("rem", "u"): ("op", "urem"),
    **{(op, c): ("op", op + "_") for op in ("and", "or") for c in "sub"},
    **{("xor", c): ("op", "xor") for c in "sub"},
    ("shl", "s"): ("op", "shl"), ("shl", "u"): ("op", "shl"),
    ("shr", "s"): ("op", "ashr"), ("shr", "u"): ("op", "lshr"),
    ("pow", "f"): ("libm", "pow"), ("atan2", "f"): ("libm", "atan2"),
    # NaN-propagating, and with nsz (kir.py: of -0.0 and 0.0 either): the
    # loop vectorizer makes a reduction of it with no other flag
    ("min", "f"): ("intrinsic", "llvm.minimum"), ("max", "f"): ("intrinsic", "llvm.maximum"),
    ("fmin", "f"): ("intrinsic", "llvm.minnum"), ("fmax", "f"): ("intrinsic", "llvm.maxnum"),
    # C's float comparisons: ordered, except != (unordered: NaN != x)
    **{(op, "f"): ("fcmp", ("fcmp_unordered" if op == "ne" else "fcmp_ordered", sym))
       for op, sym in _SYM.items()},
    **{(op, "s"): ("icmp", ("icmp_signed", sym)) for op, sym in _SYM.items()},
    **{(op, c): ("icmp", ("icmp_unsigned", sym)) for op, sym in _SYM.items() for c in "ub"},
}
UN_SPELLINGS = {
    ("neg", "f"): ("fop", "fneg"), ("neg", "s"): ("op", "neg"), ("neg", "u"): ("op", "neg"),
    **{("not", c): ("op", "not_") for c in "sub"},
    ("isnan", "f"): ("fcmp", ("fcmp_unordered", "uno")),     # no fast flags: a real test
    **{(op, "f"): ("intrinsic", "llvm." + i) for op, i in (
        ("fabs", "fabs"), ("sqrt", "sqrt"), ("floor", "floor"), ("ceil", "ceil"),
        ("trunc", "trunc"), ("rint", "roundeven"))},
    **{(op, "f"): ("libm", op) for op in ("exp", "log", "log2", "log10", "sin", "cos", "tan",
                                          "asin", "acos", "atan", "sinh", "cosh", "tanh")},
}
CAST_SPELLINGS = {
    ("f", "f"): ("resize", ("fptrunc", "fpext")),
    ("f", "s"): ("op", "fptosi"), ("f", "u"): ("op", "fptoui"),     # poison out of range
    ("s", "f"): ("op", "sitofp"), ("u", "f"): ("op", "uitofp"), ("b", "f"): ("op", "uitofp"),
    ("s", "s"): ("resize", ("trunc", "sext")), ("s", "u"): ("resize", ("trunc", "sext")),
    ("u", "s"): ("resize", ("trunc", "zext")), ("u", "u"): ("resize", ("trunc", "zext")),
    ("b", "s"): ("op", "zext"), ("b", "u"): ("op", "zext"),
    **{(c, "b"): ("ne0", None) for c in "fsu"},
}

#: a loop whose kir.For.max_trip is at most this is not interleaved (its
#: vector loop handles one vector an iteration): segmap's tile rows, 16 and
#: 256 elements. backprop's weight update, 16 columns a row, one thread of
#: the 2-core Zen 5: 0.167 -> 0.123 ms a call (docs/cpu-backend.md,
#: "Short rows").
SHORT_TRIP = 256


# ---------------------------------------------------------------------------
# Types


def _const(t: ScalarType, value) -> ir.Constant:
    lt = reg_type(t)
    if t is BOOL:
        return ir.Constant(_I1, 1 if value else 0)
    if t.is_float:
        return ir.Constant(lt, float(value))
    v = int(value) & ((1 << t.bits) - 1)
    if v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    return ir.Constant(lt, v)


def _spelling(table: dict, op: str, t: ScalarType):
    try:
        return table[op, K.scalar_class(t)]
    except KeyError:
        raise NotImplementedError(f"{op} on {t!r} (kir.py gives it no meaning)") from None


# ---------------------------------------------------------------------------
# Module-level declarations


class _Decls:
    """Functions the emitted code calls, declared once per module."""

    def __init__(self, module: ir.Module, entry_names: set):
        self.module = module
        self.entry_names = entry_names
        self.cache: dict[str, ir.Function] = {}

    def get(self, name: str, ret: ir.Type, args: list, pure: bool = False) -> ir.Function:
        fn = self.cache.get(name)
        if fn is None:
            if name in self.entry_names:
                raise ValueError(
                    f"entry {name!r} has the name of a C library/OpenMP function that the "
                    f"module calls; give entries a prefix (e.g. 'pyshark_{name}')")
            fn = self.module.globals.get(name)
            if fn is None:
                fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
                if pure:
                    fn.attributes.add("readnone")  # parsed as memory(none)
                    fn.attributes.add("nounwind")
            self.cache[name] = fn
        return fn

    def intrinsic(self, base: str, t: ir.Type, nargs: int = 1) -> ir.Function:
        suffix = "f32" if t == _F32 else "f64"
        return self.get(f"{base}.{suffix}", t, [t] * nargs)

    def libm(self, name: str, t: ir.Type, nargs: int) -> ir.Function:
        cname = name + ("f" if t == _F32 else "")
        return self.get(cname, t, [t] * nargs, pure=True)


# ---------------------------------------------------------------------------
# Function emitter


class FnEmitter:
    """Emits one LLVM function: an entry (host code) or a ParFor body."""

    def __init__(self, mod: "ModEmitter", fn: ir.Function, ctx: ir.Value,
                 in_par: bool, prefix: str):
        self.mod = mod
        self.fn = fn
        self.ctx = ctx
        self.in_par = in_par
        self.prefix = prefix            # name stem for outlined ParFor functions
        self.vars: dict[str, tuple[ir.Value, K.KType]] = {}   # name -> (alloca, type)
        self.values: dict[str, ir.Value] = {}   # read-only SSA values (ParFor captures)
        # variables spelled as SSA values (emit_ssa.py): their declaration
        # puts the value in `values`, no alloca
        self.ssa: frozenset = frozenset()
        # in a streaming loop (emit_parfor.py): pointer name -> (its block
        # buffer, the block's first index): nontemporal stores go there first
        self.streaming: Optional[dict] = None
        self.unwind = None          # emit_unwind.Unwinder: set by whoever makes the function
        # the claim counters of this function's ParFors (emit_parfor.py):
        # one stack array, reused by each ParFor in turn
        self.claim_counters: Optional[ir.Value] = None
        entry = fn.append_basic_block("entry")
        self.alloca_builder = ir.IRBuilder(entry)
        body = fn.append_basic_block("body")
        self.alloca_builder.branch(body)
        self.alloca_builder.position_at_start(entry)
        self.b = ir.IRBuilder(body)

    # -- helpers ----------------------------------------------------------

    @property
    def decls(self) -> _Decls:
        return self.mod.decls

    def flags(self, reassoc: bool = False, contract: bool = False) -> list:
        if self.mod.fastmath:
            return ["fast"]
        return (["reassoc"] if reassoc else []) + (["contract"] if contract else [])

    def new_block(self, name: str) -> ir.Block:
        return self.fn.append_basic_block(name)

    def goto(self, target: ir.Block):
        if not self.b.block.is_terminated:
            self.b.branch(target)

    def set_var(self, var: K.KVar, v: ir.Value):
        """var = v: the value itself for an SSA variable, else a store."""
        if var.name in self.ssa:
            self.values[var.name] = v
        else:
            self.b.store(v, self.var_slot(var))

    def var_slot(self, var: K.KVar) -> ir.Value:
        slot = self.vars.get(var.name)
        if slot is None:
            a = _alloca(self.alloca_builder, reg_type(var.type), name=var.name)
            self.vars[var.name] = (a, var.type)
            return a
        return slot[0]

    def ctx_field(self, *idx: int) -> ir.Value:
        return self.b.gep(self.ctx, [_I32(0)] + [_I32(i) for i in idx], inbounds=True,
                          source_etype=CTX_TYPE)

    def finish(self, default_ret: Optional[ir.Value]):
        if not self.b.block.is_terminated:
            if default_ret is None:
                self.b.ret_void()
            else:
                self.b.ret(default_ret)

    # -- expressions ------------------------------------------------------

    def expr(self, e: K.Expr) -> ir.Value:
        b = self.b
        if isinstance(e, K.KVar):
            v = self.values.get(e.name)
            if v is not None:
                return v
            if e.name in self.ssa:
                raise AssertionError(f"{e.name} read before its declaration (emit_ssa.py)")
            return b.load(self.var_slot(e), name=e.name, typ=reg_type(e.type))
        if isinstance(e, K.KConst):
            return _const(e.type, e.value)
        if isinstance(e, K.Bin):
            return self.bin(e)
        if isinstance(e, K.Un):
            return self.un(e)
        if isinstance(e, K.Cast):
            if e.bits:
                return self.b.bitcast(self.expr(e.x), reg_type(e.to))
            return self.cast(e.to, K.type_of(e.x), self.expr(e.x))
        if isinstance(e, K.Sel):
            return b.select(self.expr(e.cond), self.expr(e.x), self.expr(e.y))
        if isinstance(e, K.Load):
            t = K.type_of(e)
            p = self.address(e.ptr, e.index)
            v = b.load(p, typ=mem_type(t))
            if t is BOOL:
                v = b.icmp_unsigned("!=", v, _I8(0))
            return v
        if isinstance(e, K.PtrAdd):
            pt = K.type_of(e.ptr)
            return b.gep(self.expr(e.ptr), [self.expr(e.offset)], inbounds=True,
                         source_etype=mem_type(pt.elem))
        if isinstance(e, K.NumThreads):
            return self.num_threads()
        raise TypeError(f"not a kernel IR expression: {e!r}")

    def address(self, ptr: K.Expr, index: K.Expr) -> ir.Value:
        pt = K.type_of(ptr)
        return self.b.gep(self.expr(ptr), [self.expr(index)], inbounds=True,
                          source_etype=mem_type(pt.elem))

    def num_threads(self) -> ir.Value:
        b = self.b
        n = b.load(self.ctx_field(CTX_NTHREADS), typ=_I32)
        rt = self.decls.get("pysharkrt_max_threads", _I32, [])
        d = b.call(rt, [])
        n = b.select(b.icmp_signed(">", n, _I32(0)), n, d)
        n = b.select(b.icmp_signed(">", n, _I32(0)), n, _I32(1))
        return b.sext(n, _I64)

    def bin(self, e: K.Bin) -> ir.Value:
        t = K.type_of(e.x)
        if e.contract:                  # kir.Bin.contract: LLVM's own flag, on both
            return self.spell_bin(e.op, t, self.expr(e.x), self.expr(e.y),
                                  flags=self.flags(e.reassoc, True))
        return self.spell_bin(e.op, t, self.expr(e.x), self.expr(e.y), e.reassoc)

    def spell_bin(self, op: str, t: ScalarType, x: ir.Value, y: ir.Value,
                  reassoc: bool = False, flags: Optional[list] = None) -> ir.Value:
        """BIN_SPELLINGS[op, class of t] on x, y (`flags` overrides the
        float flags)."""
        how, name = _spelling(BIN_SPELLINGS, op, t)
        b = self.b
        fl = self.flags(reassoc) if flags is None else flags
        if how == "op":
            return getattr(b, name)(x, y)
        if how == "fop":
            return getattr(b, name)(x, y, flags=fl)
        if how == "icmp":
            return getattr(b, name[0])(name[1], x, y)
        if how == "fcmp":               # comparisons never reassociate
            return getattr(b, name[0])(name[1], x, y, flags=self.flags() if flags is None
                                       else flags)
        if how == "intrinsic":
            return b.call(self.decls.intrinsic(name, x.type, 2), [x, y],
                          fastmath=fl if "fast" in fl else fl + ["nsz"])
        return b.call(self.decls.libm(name, x.type, 2), [x, y], fastmath=fl)      # libm

    def un(self, e: K.Un) -> ir.Value:
        b = self.b
        x = self.expr(e.x)
        how, name = _spelling(UN_SPELLINGS, e.op, K.type_of(e.x))
        if how == "op":
            return getattr(b, name)(x)
        if how == "fop":
            return getattr(b, name)(x, flags=self.flags())
        if how == "fcmp":
            return getattr(b, name[0])(name[1], x, x)
        if how == "intrinsic":
            return b.call(self.decls.intrinsic(name, x.type), [x], fastmath=self.flags())
        return b.call(self.decls.libm(name, x.type, 1), [x], fastmath=self.flags())   # libm

    def cast(self, to: ScalarType, frm: ScalarType, x: ir.Value) -> ir.Value:
        if to == frm:
            return x
        how, name = CAST_SPELLINGS[K.scalar_class(frm), K.scalar_class(to)]
        lt = reg_type(to)
        if how == "ne0":                # no fast flags: bool(nan) stays true
            return self.spell_bin("ne", frm, x, ir.Constant(x.type, 0.0 if frm.is_float else 0),
                                  flags=[])
        if how == "resize":
            if to.bits == frm.bits:
                return x                # i64 <-> u64: the same bits
            return getattr(self.b, name[0] if to.bits < frm.bits else name[1])(x, lt)
        return getattr(self.b, name)(x, lt)

    # -- statements -------------------------------------------------------

    def block(self, blk: K.Block):
        for s in blk.stms:
            self.stm(s)
            if self.b.block.is_terminated:
                return          # after a Fail: the rest of the block is dead

    def stm(self, s: K.Stm):
        b = self.b
        if isinstance(s, K.Set):
            self.set_var(s.var, self.expr(s.value))
        elif isinstance(s, K.Store):
            t = K.type_of(s.value)
            if s.nontemporal and self.streaming is not None:
                tmp, base = self.streaming[s.ptr.name]
                k = b.sub(self.expr(s.index), base, flags=["nsw"])
                p = b.gep(tmp, [k], inbounds=True, source_etype=mem_type(t))
            else:
                p = self.address(s.ptr, s.index)
            v = self.expr(s.value)
            if t is BOOL:
                v = b.zext(v, _I8)
            elif isinstance(t, K.Ptr):
                self.unwind.untrack(v)      # an entry's result: the caller owns it
            b.store(v, p)
        elif isinstance(s, K.Alloc):
            self.alloc(s)
        elif isinstance(s, K.Free):
            fr = self.decls.get("free", _VOID, [_PTR])
            p = self.expr(s.ptr)
            self.unwind.untrack(p)
            b.call(fr, [p])
        elif isinstance(s, K.Prefetch):
            # read, no temporal locality (prefetchnta), data cache; a plain
            # (not inbounds) GEP: the index may be past the block
            pt = K.type_of(s.ptr)
            p = b.gep(self.expr(s.ptr), [self.expr(s.index)], source_etype=mem_type(pt.elem))
            pf = self.decls.get("llvm.prefetch.p0", _VOID, [_PTR, _I32, _I32, _I32])
            b.call(pf, [p, _I32(0), _I32(0), _I32(1)])
        elif isinstance(s, K.CopyMem):
            size = elem_size(K.type_of(s.dst).elem)
            n = self.expr(s.count)
            n = b.select(b.icmp_signed(">", n, _I64(0)), n, _I64(0))
            dst, src = self.expr(s.dst), self.expr(s.src)
            if s.nontemporal:
                stream_copy(self, dst, src, n, mem_type(K.type_of(s.dst).elem), size)
                return
            nbytes = b.mul(n, _I64(size))
            memcpy = self.decls.get("llvm.memcpy.p0.p0.i64", _VOID, [_PTR, _PTR, _I64, _I1])
            b.call(memcpy, [dst, src, nbytes, _I1(0)])
        elif isinstance(s, K.If):
            cond = self.expr(s.cond)
            then_bb = self.new_block("then")
            else_bb = self.new_block("else") if s.orelse.stms else None
            merge = self.new_block("endif")
            b.cbranch(cond, then_bb, else_bb or merge)
            b.position_at_end(then_bb)
            self.block(s.then)
            self.goto(merge)
            if else_bb is not None:
                b.position_at_end(else_bb)
                self.block(s.orelse)
                self.goto(merge)
            b.position_at_end(merge)
        elif isinstance(s, K.For):
            poll = 0 if self.in_par else host_poll_stride(s.body)
            self.for_loop(s.var, self.expr(s.lo), self.expr(s.hi), s.body, poll, s.simd,
                          s.max_trip)
        elif isinstance(s, K.While):
            head, body, done = (self.new_block("while.cond"), self.new_block("while.body"),
                                self.new_block("while.end"))
            b.branch(head)
            b.position_at_end(head)
            b.cbranch(self.expr(s.cond), body, done)
            b.position_at_end(body)
            self.block(s.body)
            if not self.in_par and not b.block.is_terminated:
                self.poll()
            self.goto(head)
            b.position_at_end(done)
        elif isinstance(s, K.Fail):
            self.fail(K.ERROR_CODES[s.kind], s.msg, [self.expr(a) for a in s.args])
        elif isinstance(s, K.AtomicUpdate):
            self.atomic(s)
        elif isinstance(s, K.ParFor):
            if self.in_par:
                raise NotImplementedError("nested ParFor (the checker rejects it)")
            self.mod.parfor(self, s)
        else:
            raise TypeError(f"not a kernel IR statement: {s!r}")

    def atomic(self, s: K.AtomicUpdate):
        b = self.b
        t = s.old.type
        p = self.address(s.ptr, s.index)
        v = s.value
        if (t.is_int and isinstance(v, K.Bin) and v.op == "add" and v.x == s.old
                and s.old.name not in K.expr_vars(v.y)):
            old = b.atomic_rmw("add", p, self.expr(v.y), "monotonic")
            b.store(old, self.var_slot(s.old))
            return
        it = ir.IntType(t.bits)
        cur0 = b.load_atomic(p, "monotonic", t.bits // 8, typ=it)
        pre = b.block
        head, try_bb, done = (self.new_block("atomic.loop"), self.new_block("atomic.cas"),
                              self.new_block("atomic.done"))
        b.branch(head)
        b.position_at_end(head)
        cur = b.phi(it, name="atomic.cur")
        cur.add_incoming(cur0, pre)
        b.store(cur if t.is_int else b.bitcast(cur, reg_type(t)), self.var_slot(s.old))
        new = self.expr(v)
        new_bits = new if t.is_int else b.bitcast(new, it)
        b.cbranch(b.icmp_unsigned("==", new_bits, cur), done, try_bb)
        b.position_at_end(try_bb)
        res = b.cmpxchg(p, cur, new_bits, "monotonic", "monotonic")
        cur.add_incoming(b.extract_value(res, 0), b.block)
        b.cbranch(b.extract_value(res, 1), done, head)
        b.position_at_end(done)

    def poll(self):
        """Stop with KeyboardInterrupt if SIGINT came (emit_unwind.poll)."""
        poll(self, self.mod.interrupt_message())

    def for_loop(self, var: K.KVar, lo: ir.Value, hi: ir.Value, body: K.Block,
                 poll: int = 0, simd: bool = True, max_trip: int = 0):
        """for var in lo..hi-1: body; `poll` 1 polls for SIGINT at every back
        edge, k > 1 every k iterations (an outer loop over strips of k, so
        the inner loop keeps its one exit and is optimised as before);
        `simd` False (kir.For.simd) marks the back edge with loop metadata
        that keeps LLVM's loop vectorizer off it; `max_trip` (kir.For) up to
        SHORT_TRIP, with metadata that keeps its vector loop to one vector an
        iteration (LLVM interleaves 4 by default, so a 16-element row never
        reaches the main vector loop: on Zen 5 it ran an 8-wide epilogue
        twice)."""
        b = self.b
        if poll > 1:
            strips(self, lo, hi, poll, lambda c, e, done: self.for_loop(var, c, e, body,
                                                                        simd=simd,
                                                                        max_trip=max_trip))
            return
        pre = b.block
        head, body_bb, done = (self.new_block("for.cond"), self.new_block("for.body"),
                               self.new_block("for.end"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(_I64, name=var.name + ".i")
        i.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", i, hi), body_bb, done)
        b.position_at_end(body_bb)
        self.set_var(var, i)
        self.block(body)
        if poll == 1 and not b.block.is_terminated:
            self.poll()
        if not b.block.is_terminated:
            nxt = b.add(i, _I64(1), flags=["nsw"])
            i.add_incoming(nxt, b.block)
            latch = b.branch(head)
            if not simd:
                latch.set_metadata("llvm.loop", self.mod.loop_md(("llvm.loop.vectorize.enable",
                                                                  ir.Constant(_I1, 0))))
            elif 0 < max_trip <= SHORT_TRIP:
                latch.set_metadata("llvm.loop", self.mod.loop_md(("llvm.loop.interleave.count",
                                                                  _I32(1))))
        b.position_at_end(done)

    def fail(self, code: int, msg: int, args: list):
        """Record the failure in ctx (emit_unwind.Runtime.fail_fn: out of
        line, one cold function per module) and unwind."""
        fn = self.mod.runtime.fail_fn(self.in_par)
        args = list(args) + [_I64(0)] * (4 - len(args))
        self.b.call(fn, [self.ctx, _I32(code), _I32(msg)] + args)
        self.b.branch(self.unwind.target())

    def alloc(self, s: K.Alloc):
        b = self.b
        size = elem_size(s.var.type.elem)
        count = self.expr(s.count)
        limit = (2 ** 63 - _ALIGN) // size
        p = b.call(block_allocator(self.mod), [self.ctx, count, _I64(size), _I64(limit),
                                               _I1(int(self.in_par))])
        ok_bb = self.new_block("alloc.ok")
        b.cbranch(b.icmp_unsigned("==", p, ir.Constant(_PTR, None)), self.unwind.target(), ok_bb)
        b.position_at_end(ok_bb)
        self.set_var(s.var, p)
        self.unwind.track(p)
        if s.zeroed:
            n = b.select(b.icmp_signed("<", count, _I64(_MIN_ALLOC_ELEMS)),
                         _I64(_MIN_ALLOC_ELEMS), count)
            memset = self.decls.get("llvm.memset.p0.i64", _VOID, [_PTR, _I8, _I64, _I1])
            b.call(memset, [p, _I8(0), b.mul(n, _I64(size)), _I1(0)])


# ---------------------------------------------------------------------------
# Module emitter


def hot_host_loops(block: K.Block) -> bool:
    """Whether host code has a loop worth LLVM's pipeline: a For or While
    outside the ParFors (whose bodies are functions of their own), except a
    loop that launches a ParFor (a time step: the ParFor does the work) and
    one over per-thread chunks (its count derives from NumThreads: the
    sequential combine of a multicore reduce or scan). Loops nested inside
    those count."""
    defs = {s.var.name: s.value for s in K.walk_stms(block) if isinstance(s, K.Set)}

    def per_thread(e, seen=()) -> bool:
        for x in walk_exprs(e):
            if isinstance(x, K.NumThreads):
                return True
            if isinstance(x, K.KVar) and x.name in defs and x.name not in seen:
                if per_thread(defs[x.name], seen + (x.name,)):
                    return True
        return False

    def hot(b: K.Block) -> bool:
        for s in b.stms:
            if isinstance(s, K.ParFor):
                continue
            if isinstance(s, (K.For, K.While)):
                glue = (any(isinstance(x, K.ParFor) for x in K.walk_stms(s.body))
                        or (isinstance(s, K.For) and per_thread(s.hi)))
                if not glue:
                    return True
            if any(hot(sb) for sb in K.sub_blocks(s)):
                return True
        return False
    try:
        return hot(block)
    finally:
        per_thread = hot = None         # recursive closures are reference cycles


class ModEmitter:
    """Spells a kernel IR module; `spell_parfor(mod, host, parfor)` spells a
    ParFor (emit_parfor.py, handed in by emit.py so that this module does
    not import it)."""

    def __init__(self, m: K.Module, fastmath: bool, triple, data_layout, spell_parfor):
        self.kmod = m
        self.spell_parfor = spell_parfor
        self.fastmath = fastmath
        self.module = ir.Module(name="pyshark")
        if triple:
            self.module.triple = triple
        if data_layout:
            self.module.data_layout = data_layout
        self.decls = _Decls(self.module, {f.name for f in m.functions})
        self.alloc_msg = -1
        self.parfor_count: dict[str, int] = {}
        if triple is None:
            import llvmlite.binding as llvm
            triple = llvm.get_process_triple()
        self.x86 = triple.split("-")[0] in ("x86_64", "i386", "i686")
        self._nontemporal_md = None
        self._loop_ids = 0              # loop_md: a distinct loop id each
        # SIGINT arming spells Linux's struct sigaction (emit_unwind.py)
        self.runtime = Runtime(self.module, self.decls, sigaction_ok=(
            "linux" in triple and triple.split("-")[0] in ("x86_64", "aarch64")))
        self._interrupt_msg = None

    def interrupt_message(self) -> int:
        """The message number of KeyboardInterrupt (added on first use)."""
        if self._interrupt_msg is None:
            self._interrupt_msg = self.kmod.message(INTERRUPT_MESSAGE)
        return self._interrupt_msg

    def nontemporal_md(self):
        """The `!{i32 1}` node of a `!nontemporal` store."""
        if self._nontemporal_md is None:
            self._nontemporal_md = self.module.add_metadata([_I32(1)])
        return self._nontemporal_md


    def loop_md(self, prop: tuple):
        """A fresh loop id `!N = !{!N, !{name, value}}` for prop = (name,
        value), e.g. ("llvm.loop.vectorize.enable", i1 0) (loop ids are
        self-referential, one per loop)."""
        name, value = prop
        node = self.module.add_metadata([ir.MetaDataString(self.module, name), value])
        self._loop_ids += 1
        loop = self.module.add_metadata([node, ir.MetaDataString(self.module,
                                                                 f"loop{self._loop_ids}")])
        loop.operands = (loop, node)
        return loop

    def emit(self) -> str:
        self._build()
        text = str(self.module)
        self._release()
        return text

    def _release(self):
        """Break the reference cycles of llvmlite's objects (each function,
        block, instruction and argument points back at its parent) once the
        text is made, so that reference counting frees the module at once:
        left to Python's cyclic collector, LocVolCalib's 90,000 llvmlite
        objects were a third of the 160,000 it walked after each compile."""
        module, self.module = self.module, None
        for g in list(module.globals.values()):
            for b in getattr(g, "blocks", ()):
                for i in b.instructions:
                    i.__dict__.clear()
                b.__dict__.clear()
            g.__dict__.clear()
        for md in module.metadata:
            md.__dict__.clear()
        module.__dict__.clear()

    def _build(self):
        if any(isinstance(s, K.Alloc) for f in self.kmod.functions for s in K.walk_stms(f.body)):
            self.alloc_msg = self.kmod.message(ALLOC_FAIL_MESSAGE)
        for f in self.kmod.functions:
            self.function(f)
        self.runtime.add_stop_fn()
        from .c_api import add_c_api        # after the functions: the messages are final
        add_c_api(self.module, self.kmod.messages)

    def emit_parts(self, parts: int) -> list[str]:
        """The module's text split for parallel compilation (split.py)."""
        self._build()
        from .split import split_module
        texts = split_module(self.module, [f.name for f in self.kmod.functions], parts)
        self._release()
        return texts

    def function(self, f: K.Function):
        fty = ir.FunctionType(_I32, [_PTR] + [param_type(p.type) for p in f.params])
        fn = ir.Function(self.module, fty, name=f.name)
        fn.args[0].name = "ctx"
        fn.attributes.add("nounwind")
        if not hot_host_loops(f.body):
            # glue around its ParFors (checks, allocations, launches, time
            # steps, chunk combines): LLVM's pipeline and instruction
            # selector pay off only where code runs hot ("Compile time" in
            # docs/cpu-backend.md); the ParFor bodies are functions of their
            # own, optimised as usual
            fn.attributes.add("noinline")
            fn.attributes.add("optnone")
        em = FnEmitter(self, fn, fn.args[0], in_par=False, prefix=f.name)
        em.ssa = ssa_vars(f.body, tuple(p.name for p in f.params))
        em.unwind = Unwinder(em, f.body, entry=True)
        for p, a in zip(f.params, fn.args[1:]):
            a.name = p.name
            v = a
            if p.type is BOOL:
                v = em.b.icmp_unsigned("!=", a, _I8(0))
            em.set_var(p, v)
        em.b.store(_I32(0), em.ctx_field(CTX_CODE))
        em.unwind.arm()
        em.block(f.body)
        if not em.b.block.is_terminated:
            em.unwind.disarm()
        em.finish(_I32(0))
        em.unwind.finish()

    def parfor(self, host: FnEmitter, s: K.ParFor):
        self.spell_parfor(self, host, s)


__all__ = ["ModEmitter", "FnEmitter", "ALLOC_FAIL_MESSAGE", "CTX_TYPE", "reg_type", "mem_type",
           "param_type", "elem_size", "BIN_SPELLINGS", "UN_SPELLINGS", "CAST_SPELLINGS"]
