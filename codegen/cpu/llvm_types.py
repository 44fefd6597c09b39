"""The LLVM spellings every part of the cpu emitter shares: the ctx struct's
fields, the LLVM types of kernel-IR types, and small instruction helpers.

A module of its own so that the function emitter (emit_llvm.py), the ParFor
speller (emit_parfor.py) and the failure paths (emit_unwind.py) import it
and not each other.
"""
from __future__ import annotations

from llvmlite import ir

from pyshark.core.types import BOOL

from .. import kir as K

# The ctx struct (see kir.py): field numbers and the LLVM type.
CTX_CODE, CTX_MSG, CTX_ARGS, CTX_NTHREADS, CTX_SIGINT = range(5)

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()
CTX_TYPE = ir.LiteralStructType([I32, I32, ir.ArrayType(I64, 4), I32, I32])


def reg_type(t: K.KType) -> ir.Type:
    """The LLVM type of a value of kernel type t in a register."""
    if isinstance(t, K.Ptr):
        return PTR
    if t is BOOL:
        return I1
    if t.is_float:
        return F32 if t.bits == 32 else F64
    return ir.IntType(t.bits)


def mem_type(t: K.KType) -> ir.Type:
    """The LLVM type of an element of kernel type t in memory (bool: i8)."""
    return I8 if t is BOOL else reg_type(t)


def param_type(t: K.KType) -> ir.Type:
    """The LLVM type of an entry parameter (the C ABI: bool as uint8_t)."""
    return mem_type(t)


def elem_size(t: K.KType) -> int:
    if isinstance(t, K.Ptr):
        return 8
    return t.bytes


def alloca(builder: ir.IRBuilder, t: ir.Type, name: str = "") -> ir.Value:
    """An alloca typed as an opaque `ptr` (llvmlite types it `T*` by default,
    which then clashes with opaque-pointer loads and stores)."""
    a = builder.alloca(t, name=name)
    a.type = PTR
    return a


def streaming_fence(em) -> None:
    """Orders the streaming stores before what follows (see the docstring)."""
    if em.mod.x86:
        em.b.call(em.decls.get("llvm.x86.sse.sfence", VOID, []), [])
    else:
        em.b.fence("seq_cst")


def counted_loop(b: ir.IRBuilder, fn: ir.Function, lo: ir.Value, hi: ir.Value, step_fn,
                 name: str = "loop") -> None:
    """for (k = lo; k < hi; k = step_fn(k, done)): step_fn emits the body
    and returns the next k, or None where it ended the block itself (a
    branch to `done`, the block after the loop, where the builder is left).
    One exit, so LLVM vectorizes and unswitches the loops inside it."""
    pre = b.block
    head, body, done = (fn.append_basic_block(name + ".cond"),
                        fn.append_basic_block(name + ".body"),
                        fn.append_basic_block(name + ".end"))
    b.branch(head)
    b.position_at_end(head)
    k = b.phi(I64)
    k.add_incoming(lo, pre)
    b.cbranch(b.icmp_signed("<", k, hi), body, done)
    b.position_at_end(body)
    nxt = step_fn(k, done)
    if nxt is not None and not b.block.is_terminated:
        k.add_incoming(nxt, b.block)
        b.branch(head)
    b.position_at_end(done)
