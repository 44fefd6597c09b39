"""Kernel IR host code -> LLVM IR over the OpenCL runtime of rt.h.

The cpu backend's emitter (codegen/cpu/emit_llvm.py) spells every host
statement already (Set, If, For, While, scalar arithmetic, failures and
their unwinding, the C API's error text); this module reuses it with an
OpenCL memory model, overriding only what touches memory:

- a pointer is 8 bytes: host memory (out-params, arrays of pointers) is an
  ordinary address, device memory a tagged value (rt.h, "Device pointers"),
  so PtrAdd stays a getelementptr and a Load/Store/Free tests bit 63 at run
  time (where the pointer is not known to be host memory: an out-param, or
  an array of pointers, which only the host allocates);
- Load/Store of device memory: psk_load / psk_store (the host mirrors of
  rt.h: one read of a small buffer, stores sent before the next launch);
- Alloc of scalars: psk_alloc (a cl_mem; MemoryError with
  kir.ALLOC_FAIL_MESSAGE when refused); of pointers: malloc, as on cpu;
- Free: psk_free or free(); CopyMem: psk_copy (any of host/device);
- a Store of an array into an out-param hands the block to the caller
  (psk_handout: a reference the C API's pyshark_ocl_array_free drops);
- Fail: psk_check first (an earlier kernel's error is reported first, as
  runtime.Call.fail does), then the cpu spelling;
- ParFor: its kernel (emit_cl.emit_kernel, the Python path's kernels and
  argument conventions) launched by psk_launch(ctx, k, n, args): one 8-byte
  value per capture. A body no kernel can spell (emit_cl.Unsupported) runs
  here as a sequential host loop, as host.py runs it;
- NumThreads: ctx->nthreads (compute units x 64, the kernels' build option).

- a Load whose value only goes, after frees, into scalar result k's
  out-param: psk_load_result (with device arrays the element stays on the
  device as the 0-d result's block; host.py's is_result_load).

Each entry NAME is an internal `NAME.body` (the cpu spelling of the kir
function) and an exported `NAME(ctx, params...)` that runs it between
psk_begin and psk_end (the end-of-call error check and releases) and runs
it again after HEAP_FULL once psk_end has grown the work-item heaps, and
`NAME.packed(ctx, words)`: NAME with each parameter one 8-byte word, which
rt_api.c's pyshark_ocl_call runs (one foreign call per call from Python).

The module also defines what rt.h reads: the OpenCL C program
(`pyshark_ocl_source`), build options, and per kernel its name, argument
kinds, whether it can fail, its work-group size (work-group kernels) and
whether it takes a heap.
"""
from __future__ import annotations

from llvmlite import ir

from pyshark.core.types import BOOL

from ... import kir as K
from ...kir_traverse import block_exprs, stm_exprs, walk_exprs
from ...lower import is_scalar_result_param
from ...cpu.emit_llvm import FnEmitter, ModEmitter
from ...cpu.emit_ssa import ssa_vars
from ...cpu.emit_unwind import Unwinder
from ...cpu.llvm_types import (CTX_CODE, CTX_NTHREADS, I1, I8, I32, I64, PTR, VOID,
                               alloca, elem_size, mem_type, param_type)
from .. import emit_cl
from ..emit_cl import HEAP_FULL

_PTR_KIND = 0x10


def _kinds(k: emit_cl.Kernel) -> bytes:
    """rt.h's argument kinds: scalar bytes (bool: 1), or 0x10 | element bytes."""
    out = []
    for a in k.args:
        if a.is_ptr:
            out.append(_PTR_KIND | elem_size(a.type.elem))
        else:
            out.append(elem_size(a.type))
    return bytes(out)


class HostFnEmitter(FnEmitter):
    """FnEmitter with device memory (the module docstring)."""

    out_params: frozenset = frozenset()

    def rt(self, name: str, ret, args):
        return self.decls.get(name, ret, args)

    def on_error(self, rc: ir.Value):
        """Unwind when a runtime call returned an error code (ctx is set)."""
        ok = self.new_block("rt.ok")
        self.b.cbranch(self.b.icmp_signed("!=", rc, I32(0)), self.unwind.target(), ok)
        self.b.position_at_end(ok)

    def host_only(self, ptr: K.Expr) -> bool:
        """Whether ptr is host memory for sure: an out-param, or an array of
        pointers (only the host allocates those)."""
        t = K.type_of(ptr)
        if isinstance(t, K.Ptr) and isinstance(t.elem, K.Ptr):
            return True
        while isinstance(ptr, K.PtrAdd):
            ptr = ptr.ptr
        return isinstance(ptr, K.KVar) and ptr.name in self.out_params

    def is_dev(self, p: ir.Value) -> ir.Value:
        return self.b.icmp_signed("<", self.b.ptrtoint(p, I64), I64(0))

    # -- expressions -------------------------------------------------------------
    def expr(self, e: K.Expr) -> ir.Value:
        if isinstance(e, K.Load) and not self.host_only(e.ptr):
            return self.device_load(e)
        if isinstance(e, K.NumThreads):
            return self.b.sext(self.b.load(self.ctx_field(CTX_NTHREADS), typ=I32), I64)
        return super().expr(e)

    def device_load(self, e: K.Load, result: int = -1) -> ir.Value:
        """psk_load; psk_load_result for the load of scalar result
        `result` (rt.h: a caller of device arrays gets the element where it
        lies, runtime.Call.load_result's protocol)."""
        b = self.b
        t = K.type_of(e)
        mt = mem_type(t)
        p = self.address(e.ptr, e.index)
        dev_bb, host_bb, done = (self.new_block("load.dev"), self.new_block("load.host"),
                                 self.new_block("load.done"))
        b.cbranch(self.is_dev(p), dev_bb, host_bb)
        b.position_at_end(host_bb)
        hv = b.load(p, typ=mt)
        host_end = b.block
        b.branch(done)
        b.position_at_end(dev_bb)
        cell = alloca(self.alloca_builder, mt)
        if result >= 0:
            rc = b.call(self.rt("psk_load_result", I32, [PTR, I64, I64, PTR, I32]),
                        [self.ctx, b.ptrtoint(p, I64), I64(elem_size(t)), cell, I32(result)])
        else:
            rc = b.call(self.rt("psk_load", I32, [PTR, I64, I64, PTR]),
                        [self.ctx, b.ptrtoint(p, I64), I64(elem_size(t)), cell])
        self.on_error(rc)
        dv = b.load(cell, typ=mt)
        dev_end = b.block
        b.branch(done)
        b.position_at_end(done)
        v = b.phi(mt)
        v.add_incoming(hv, host_end)
        v.add_incoming(dv, dev_end)
        if t is BOOL:
            return b.icmp_unsigned("!=", v, I8(0))
        return v

    # -- statements --------------------------------------------------------------
    reads: dict = {}

    def block(self, blk: K.Block):
        for i, s in enumerate(blk.stms):
            k = self.result_load(blk.stms, i)
            if k >= 0:
                self.set_var(s.var, self.device_load(s.value, result=k))
            else:
                self.stm(s)
            if self.b.block.is_terminated:
                return          # after a Fail: the rest of the block is dead

    def result_load(self, stms, i: int) -> int:
        """k when stms[i] is `v = p[j]` of device memory whose value only
        goes, after nothing but frees, into scalar result k's out-param
        (host.py's is_result_load), else -1."""
        s = stms[i]
        if not (isinstance(s, K.Set) and isinstance(s.value, K.Load)
                and self.reads.get(s.var.name) == 1 and not self.host_only(s.value.ptr)):
            return -1
        for t in stms[i + 1:]:
            if isinstance(t, K.Free):
                continue
            if (isinstance(t, K.Store) and t.value == s.var and isinstance(t.ptr, K.KVar)
                    and t.ptr.name in self.out_params and is_scalar_result_param(t.ptr)):
                return int(t.ptr.name[3:])
            return -1
        return -1

    def stm(self, s: K.Stm):
        if isinstance(s, K.Store):
            return self.store(s)
        if isinstance(s, K.Alloc) and not isinstance(s.var.type.elem, K.Ptr):
            return self.device_alloc(s)
        if isinstance(s, K.Free):
            return self.free(s)
        if isinstance(s, K.Prefetch):
            return None                 # a CPU cache hint (kir.Prefetch)
        if isinstance(s, K.CopyMem):
            b = self.b
            n = self.expr(s.count)
            n = b.select(b.icmp_signed(">", n, I64(0)), n, I64(0))
            nbytes = b.mul(n, I64(elem_size(K.type_of(s.dst).elem)))
            rc = b.call(self.rt("psk_copy", I32, [PTR, I64, I64, I64]),
                        [self.ctx, b.ptrtoint(self.expr(s.dst), I64),
                         b.ptrtoint(self.expr(s.src), I64), nbytes])
            return self.on_error(rc)
        return super().stm(s)

    def store(self, s: K.Store):
        b = self.b
        t = K.type_of(s.value)
        if self.host_only(s.ptr):
            if isinstance(t, K.Ptr) and isinstance(s.ptr, K.KVar) and s.ptr.name in self.out_params:
                # an entry's array result: the caller's reference (rt_mem.c psk_handout)
                v = self.expr(s.value)
                b.call(self.rt("psk_handout", VOID, [PTR, I64]), [self.ctx, b.ptrtoint(v, I64)])
            return super().stm(s)
        mt = mem_type(t)
        p = self.address(s.ptr, s.index)
        v = self.expr(s.value)
        if t is BOOL:
            v = b.zext(v, I8)
        dev_bb, host_bb, done = (self.new_block("store.dev"), self.new_block("store.host"),
                                 self.new_block("store.done"))
        b.cbranch(self.is_dev(p), dev_bb, host_bb)
        b.position_at_end(host_bb)
        b.store(v, p)
        b.branch(done)
        b.position_at_end(dev_bb)
        cell = alloca(self.alloca_builder, mt)
        b.store(v, cell)
        rc = b.call(self.rt("psk_store", I32, [PTR, I64, I64, PTR]),
                    [self.ctx, b.ptrtoint(p, I64), I64(elem_size(t)), cell])
        self.on_error(rc)
        b.branch(done)
        b.position_at_end(done)

    def device_alloc(self, s: K.Alloc):
        b = self.b
        count = self.expr(s.count)
        a = b.call(self.rt("psk_alloc", I64, [PTR, I64, I64, I32, I32]),
                   [self.ctx, count, I64(elem_size(s.var.type.elem)), I32(int(s.zeroed)),
                    I32(self.mod.alloc_msg)])
        ok = self.new_block("alloc.ok")
        b.cbranch(b.icmp_signed("==", a, I64(0)), self.unwind.target(), ok)
        b.position_at_end(ok)
        self.set_var(s.var, b.inttoptr(a, PTR))

    def free(self, s: K.Free):
        b = self.b
        p = self.expr(s.ptr)
        if isinstance(K.type_of(s.ptr).elem, K.Ptr):
            self.unwind.untrack(p)
            b.call(self.decls.get("free", VOID, [PTR]), [p])
            return
        dev_bb, host_bb, done = (self.new_block("free.dev"), self.new_block("free.host"),
                                 self.new_block("free.done"))
        b.cbranch(self.is_dev(p), dev_bb, host_bb)
        b.position_at_end(dev_bb)
        b.call(self.rt("psk_free", VOID, [PTR, I64]), [self.ctx, b.ptrtoint(p, I64)])
        b.branch(done)
        b.position_at_end(host_bb)
        self.unwind.untrack(p)
        b.call(self.decls.get("free", VOID, [PTR]), [p])
        b.branch(done)
        b.position_at_end(done)

    def fail(self, code: int, msg: int, args: list):
        """An earlier kernel's error comes first (runtime.Call.fail)."""
        rc = self.b.call(self.rt("psk_check", I32, [PTR]), [self.ctx])
        self.on_error(rc)
        super().fail(code, msg, args)


def spell_launch(mod: "HostModEmitter", host: HostFnEmitter, s: K.ParFor):
    """A ParFor: its kernel's launch, or (a body no kernel spells) a host loop."""
    f = host.prefix
    n = mod.parfor_count.get(f, 0)
    mod.parfor_count[f] = n + 1
    try:
        kern = emit_cl.emit_kernel(f"{f}_parfor{n}", s)
    except emit_cl.Unsupported:
        mod.host_parfors += 1
        host.for_loop(s.var, I64(0), host.expr(s.count), s.body)
        return
    k = len(mod.kernels)
    mod.kernels.append(kern)
    b = host.b
    nargs = max(1, len(kern.args))
    arr = alloca(host.alloca_builder, ir.ArrayType(I64, nargs))
    for i, a in enumerate(kern.args):
        v = host.expr(K.KVar(a.name, a.type))
        if a.is_ptr:
            v = b.ptrtoint(v, I64)
        else:
            if a.type is BOOL:
                v = b.zext(v, I8)
            elif a.type.is_float:
                v = b.bitcast(v, ir.IntType(a.type.bits))
            if v.type != I64:
                v = b.zext(v, I64)
        b.store(v, b.gep(arr, [I64(i)], source_etype=I64))
    rc = b.call(host.rt("psk_launch", I32, [PTR, I32, I64, PTR]),
                [host.ctx, I32(k), host.expr(s.count), arr])
    host.on_error(rc)


class HostModEmitter(ModEmitter):
    """The cpu module emitter with HostFnEmitter and launches (module doc)."""

    def __init__(self, m: K.Module, fastmath: bool, triple, data_layout, build_options: str):
        super().__init__(m, fastmath, triple, data_layout, spell_launch)
        self.kernels: list = []
        self.host_parfors = 0
        self.build_options = build_options

    def function(self, f: K.Function):
        fty = ir.FunctionType(I32, [PTR] + [param_type(p.type) for p in f.params])
        body = ir.Function(self.module, fty, name=f.name + ".body")
        body.linkage = "internal"
        body.attributes.add("nounwind")
        body.attributes.add("noinline")
        body.attributes.add("optnone")
        em = HostFnEmitter(self, body, body.args[0], in_par=False, prefix=f.name)
        em.out_params = frozenset(out_params(f))
        em.reads = {}
        for e in block_exprs(f.body):
            if isinstance(e, K.KVar):
                em.reads[e.name] = em.reads.get(e.name, 0) + 1
        em.ssa = ssa_vars(f.body, tuple(p.name for p in f.params))
        em.unwind = Unwinder(em, f.body, entry=True)
        for p, a in zip(f.params, body.args[1:]):
            a.name = p.name
            v = a
            if p.type is BOOL:
                v = em.b.icmp_unsigned("!=", a, I8(0))
            em.set_var(p, v)
        em.b.store(I32(0), em.ctx_field(CTX_CODE))
        em.unwind.arm()
        em.block(f.body)
        if not em.b.block.is_terminated:
            em.unwind.disarm()
        em.finish(I32(0))
        em.unwind.finish()
        # the exported entry: begin, body, end; again after HEAP_FULL
        fn = ir.Function(self.module, fty, name=f.name)
        fn.attributes.add("nounwind")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        loop = fn.append_basic_block("run")
        done = fn.append_basic_block("done")
        b.branch(loop)
        b.position_at_end(loop)
        ctx = fn.args[0]
        b.call(self.decls.get("psk_begin", VOID, [PTR]), [ctx])
        rc = b.call(body, list(fn.args))
        rc = b.call(self.decls.get("psk_end", I32, [PTR, I32]), [ctx, rc])
        b.cbranch(b.icmp_signed("==", rc, I32(HEAP_FULL)), loop, done)
        b.position_at_end(done)
        b.ret(rc)
        self.packed(f, fn)

    def packed(self, f: K.Function, fn: ir.Function):
        """NAME.packed(ctx, words): NAME with every parameter one 8-byte
        word (a scalar in the low bytes, a pointer as an integer), what
        rt_api.c's pyshark_ocl_call runs: one foreign call per entry call."""
        pk = ir.Function(self.module, ir.FunctionType(I32, [PTR, PTR]), name=f.name + ".packed")
        pk.attributes.add("nounwind")
        b = ir.IRBuilder(pk.append_basic_block("entry"))
        args = [pk.args[0]]
        for i, (p, ty) in enumerate(zip(f.params, fn.function_type.args[1:])):
            w = b.load(b.gep(pk.args[1], [I64(i)], source_etype=I64), typ=I64)
            if isinstance(ty, ir.PointerType):
                v = b.inttoptr(w, ty)
            elif isinstance(ty, ir.IntType):
                v = b.trunc(w, ty) if ty.width < 64 else w
            elif isinstance(ty, ir.FloatType):
                v = b.bitcast(b.trunc(w, ir.IntType(32)), ty)
            elif isinstance(ty, ir.DoubleType):
                v = b.bitcast(w, ty)
            else:
                raise TypeError(f"parameter {p.name}: {ty} has no word form")
            args.append(v)
        b.ret(b.call(fn, args))

    def emit(self) -> str:
        self._build()
        self.tables()
        for name in ("pyshark_ctx_new", "pyshark_ctx_free"):    # the cpu ctx: not this one
            fn = self.module.globals.get(name)
            if fn is not None:
                fn.linkage = "internal"
        return str(self.module)

    def tables(self):
        """What rt.h reads: the program, its options, the kernel table."""
        m = self.module
        source = emit_cl.program_source(self.kernels) if self.kernels else ""
        self.cl_source = source
        _cstring(m, "pyshark_ocl_source", source, exported=True)
        _cstring(m, "pyshark_ocl_options", self.build_options, exported=True)
        _const_i32(m, "pyshark_ocl_nkernels", len(self.kernels))
        _const_i32(m, "pyshark_ocl_uses_f64", int(any(k.uses_f64 for k in self.kernels)))
        info = ir.LiteralStructType([PTR, PTR, I32, I32, I32, I32])
        rows = []
        for i, k in enumerate(self.kernels):
            name = _cstring(m, f"pyshark.kname.{i}", k.name)
            kinds = _cstring(m, f"pyshark.kinds.{i}", _kinds(k))
            rows.append(ir.Constant(info, [name, kinds, I32(len(k.args)), I32(int(k.can_fail)),
                                           I32(k.group_size or 0), I32(int(k.heap))]))
        ty = ir.ArrayType(info, len(rows))
        g = ir.GlobalVariable(m, ty, name="pyshark_ocl_kernels")
        g.global_constant = True
        g.initializer = ir.Constant(ty, rows)


def out_params(f: K.Function) -> list:
    """The names of an entry's out-params: the parameters its body stores
    into at index 0 without ever loading from them or passing them on (the
    lowering's results, `out0`, `out0_shape`, ...)."""
    stored, other = set(), set()
    for s in K.walk_stms(f.body):
        if isinstance(s, K.Store) and isinstance(s.ptr, K.KVar):
            stored.add(s.ptr.name)
        for e in stm_exprs(s):
            for x in walk_exprs(e):
                if isinstance(x, K.KVar) and not (isinstance(s, K.Store) and x is s.ptr):
                    other.add(x.name)
    names = {p.name for p in f.params if isinstance(p.type, K.Ptr)}
    return sorted((stored & names) - other)


def _cstring(module: ir.Module, name: str, text, exported: bool = False) -> ir.Value:
    data = bytearray(text.encode("utf-8") if isinstance(text, str) else text) + b"\0"
    ty = ir.ArrayType(I8, len(data))
    g = ir.GlobalVariable(module, ty, name=name)
    g.global_constant = True
    if not exported:
        g.linkage = "private"
    g.initializer = ir.Constant(ty, data)
    return g.bitcast(PTR) if not exported else g


def _const_i32(module: ir.Module, name: str, value: int):
    g = ir.GlobalVariable(module, I32, name=name)
    g.global_constant = True
    g.initializer = I32(value)


def emit_host_module(m: K.Module, *, fastmath: bool = False, triple=None, data_layout=None):
    """(LLVM IR text, OpenCL C source, kernels, host-run ParFors) of a kernel
    IR module that went through a gpu pipeline. May append ALLOC_FAIL_MESSAGE
    to m.messages."""
    options = "-cl-unsafe-math-optimizations" if fastmath else ""
    em = HostModEmitter(m, False, triple, data_layout, options)
    text = em.emit()
    return text, em.cl_source, em.kernels, em.host_parfors


__all__ = ["emit_host_module", "HostModEmitter", "HostFnEmitter", "out_params"]
