"""Kernel IR -> host code: one generated Python function per entry.

Everything of a `kir.Function` outside ParFor bodies (Set, If, For, While,
Alloc, Free, CopyMem, Load/Store, Fail, and the ParFor launches) is spelled
as Python source, compiled once with compile() when the module loads. The
user's code never runs as Python here: this is host code generated from the
kernel IR, as Futhark's PyOpenCL backend generates Python host code.

    def pyshark_NAME(rt, v_P0, v_P1, ...):   # kir params in order
        ...
        return None                          # or (code, msg, (args...))

`rt` is the call's runtime (runtime.py: device memory, launches). Values:
- scalars are numpy scalars of their exact dtype; the primitives are spelled
  from the tables HOST_BIN / HOST_UN / HOST_CAST over hostprims.py (the
  meanings of kir.py, as kir_interp.py computes them); a function that
  computes with them runs its body under np.errstate(all="ignore") so
  wrapping arithmetic stays quiet;
- a pointer is a pair (memory, element offset): memory is a runtime.DevMem
  (a device buffer) or a numpy array (host memory: the out-params of the
  entry ABI, and arrays of pointers);
- Load/Store through a pointer are rt.load / rt.store (runtime.Call: a
  small buffer is read whole once and served from a host mirror, stores
  into it are sent as one write before the next launch); CopyMem is rt.copy
  (buffer to buffer); Alloc is rt.alloc (None when it fails: the host code
  then fails with MemoryError and kir.ALLOC_FAIL_MESSAGE, as the cpu
  backend's Alloc fails); a Load whose value only goes (after frees) into
  a scalar result's out-param is rt.load_result, which with device arrays
  leaves the element where it is (runtime.Call.load_result);
- Fail returns rt.fail(code, msg, args): the error of a kernel that failed
  earlier, if any, else this one, in the CPU backend's (code, message
  index, args) protocol; the caller raises it;
- a ParFor is rt.launch(k, count, captures): kernel k of KERNELS (emit_cl.py)
  over `count` work-items, enqueued without waiting. Kernel errors are
  checked where the host next needs device data (a load raises
  runtime.KernelFailure, which the caller's runtime.Call.run catches) or at
  the end of the call (runtime.py says why that is sound). `parallel_if` is
  not consulted: a launch is always right on a device, and the values do
  not depend on it. A body OpenCL C cannot spell (Alloc/Free inside:
  emit_cl.Unsupported) runs here, as a sequential host loop (correct, slow).

The module also gets KERNELS (name, argument kinds, can_fail per kernel)
and ENTRIES (name -> function).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pyshark.core.types import BOOL, ScalarType

from .. import kir as K
from ..kir import ALLOC_FAIL_MESSAGE   # one message text for every backend
from ..kir_traverse import block_exprs
from ..lower import is_scalar_result_param
from . import emit_cl


# Python spellings over numpy scalars (hostprims.py), keyed like
# kir.BIN_CLASSES / UN_CLASSES / CAST_CLASSES: (primitive, class).
HOST_BIN = {
    **{(op, c): f"({{x}} {sym} {{y}})" for op, sym in (("add", "+"), ("sub", "-"), ("mul", "*"))
       for c in "fsu"},
    ("div", "f"): "({x} / {y})", ("rem", "f"): "fmod({x}, {y})",
    **{(op, c): f"{fn}({{x}}, {{y}})" for op, fn in (("div", "idiv"), ("rem", "irem"))
       for c in "su"},
    **{(op, c): f"({{x}} {sym} {{y}})" for op, sym in (("and", "&"), ("or", "|"), ("xor", "^"))
       for c in "sub"},
    **{(op, c): f"({{x}} {sym} {{y}})" for op, sym in (("shl", "<<"), ("shr", ">>"))
       for c in "su"},
    ("pow", "f"): "libm('pow', {x}, {y})", ("atan2", "f"): "libm('atan2', {x}, {y})",
    ("min", "f"): "minimum({x}, {y})", ("max", "f"): "maximum({x}, {y})",
    ("fmin", "f"): "fmin({x}, {y})", ("fmax", "f"): "fmax({x}, {y})",
    **{(op, c): f"({{x}} {sym} {{y}})" for op, sym in (("eq", "=="), ("ne", "!="), ("lt", "<"),
                                                     ("le", "<="), ("gt", ">"), ("ge", ">="))
       for c in "fsub"},
}
HOST_UN = {
    **{("neg", c): "(-{x})" for c in "fsu"}, **{("not", c): "(~{x})" for c in "sub"},
    ("isnan", "f"): "isnan({x})",
    **{(op, "f"): op + "({x})" for op in ("fabs", "sqrt", "floor", "ceil", "trunc", "rint")},
    **{(op, "f"): f"libm('{op}', {{x}})" for op in ("exp", "log", "log2", "log10", "sin", "cos",
                                                   "tan", "asin", "acos", "atan", "sinh", "cosh",
                                                   "tanh")},
}
# every conversion is the interpreter's (kir_interp.CAST_IMPL, via hostprims.cast)
HOST_CAST = dict.fromkeys(K.CAST_CLASSES, "cast({x}, '{to}')")

# Bin ops that never warn on numpy scalars (comparisons of NaN included)
_QUIET_BIN = frozenset(K.CMP_PRIMS) | {"and", "or", "xor"}

_PY_TYPES = {"i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "u8": "u8", "u16": "u16",
             "u32": "u32", "u64": "u64", "f32": "f32", "f64": "f64", "bool": "b1"}


@dataclass
class HostProgram:
    py_source: str          # the host module (Python)
    cl_source: str          # the OpenCL C program (every kernel)
    kernels: list           # emit_cl.Kernel, in KERNELS order
    host_parfors: int       # ParFors run on the host (bodies a kernel cannot spell)


class _FnGen:
    def __init__(self, mod: "_ModGen", f: K.Function):
        self.mod = mod
        self.f = f
        self.lines: list[str] = []
        self.names: dict[str, str] = {}
        self.loops = 0
        self.parfors = 0
        self.arith = False      # numpy scalar arithmetic that may warn: run under errstate
        self.reads: dict = {}   # variable name -> how often the function reads it
        for e in block_exprs(f.body):
            if isinstance(e, K.KVar):
                self.reads[e.name] = self.reads.get(e.name, 0) + 1

    def name(self, v: K.KVar) -> str:
        n = self.names.get(v.name)
        if n is None:
            n = "v_" + re.sub(r"[^A-Za-z0-9_]", "_", v.name)
            if n in self.names.values():
                n = f"{n}_{len(self.names)}"
            self.names[v.name] = n
        return n

    # -- expressions ----------------------------------------------------------
    def expr(self, e: K.Expr) -> str:
        if isinstance(e, K.KVar):
            return self.name(e)
        if isinstance(e, K.KConst):
            return self.mod.const(e.type, e.value)
        if isinstance(e, K.Bin):
            t = K.type_of(e.x)
            x, y = self.expr(e.x), self.expr(e.y)
            self.arith |= e.op not in _QUIET_BIN
            if (e.op in ("div", "rem") and t.is_int and isinstance(e.y, K.KConst)
                    and int(e.y.value) > 0):
                # a positive constant divisor (sizes, chunk counts): numpy's
                # floor // and % are C's truncating ones for x >= 0
                zero = self.mod.const(t, 0)
                py, slow = ("//", "idiv") if e.op == "div" else ("%", "irem")
                self.loops += 1
                tmp = f"_d{self.loops}"
                return f"({tmp} {py} {y} if ({tmp} := {x}) >= {zero} else {slow}({tmp}, {y}))"
            return HOST_BIN[e.op, K.scalar_class(t)].format(x=x, y=y)
        if isinstance(e, K.Un):
            self.arith |= e.op not in ("not", "isnan")
            return HOST_UN[e.op, K.scalar_class(K.type_of(e.x))].format(x=self.expr(e.x))
        if isinstance(e, K.Cast):
            frm = K.type_of(e.x)
            if e.to == frm:
                return self.expr(e.x)
            if e.bits:
                return f"bitcast({self.expr(e.x)}, '{e.to.value}')"
            self.arith = True
            return HOST_CAST[K.scalar_class(frm), K.scalar_class(e.to)].format(
                x=self.expr(e.x), to=e.to.value)
        if isinstance(e, K.Sel):
            return f"({self.expr(e.x)} if {self.expr(e.cond)} else {self.expr(e.y)})"
        if isinstance(e, K.Load):
            return f"rt.load({self.expr(e.ptr)}, {self.expr(e.index)})"
        if isinstance(e, K.PtrAdd):
            return f"padd({self.expr(e.ptr)}, {self.expr(e.offset)})"
        if isinstance(e, K.NumThreads):
            return "rt.nthreads"
        raise TypeError(f"not a kernel IR expression: {e!r}")

    # -- statements -------------------------------------------------------------
    def emit(self, ind: str, text: str):
        self.lines.append(ind + text)

    def block(self, b: K.Block, ind: str):
        if not b.stms:
            self.emit(ind, "pass")
        for k, s in enumerate(b.stms):
            if self.is_result_load(b.stms, k):
                self.emit(ind, f"{self.name(s.var)} = rt.load_result("
                               f"{self.expr(s.value.ptr)}, {self.expr(s.value.index)})")
                continue
            self.stm(s, ind)

    def is_result_load(self, stms, k: int) -> bool:
        """stms[k] is `v = p[i]` whose value only goes, after nothing but
        frees, into a scalar result's out-param: rt.load_result, which with
        device arrays hands the element back where it lies (a 0-d
        DeviceArray, no wait) and else is rt.load."""
        s = stms[k]
        if not (isinstance(s, K.Set) and isinstance(s.value, K.Load)
                and self.reads.get(s.var.name) == 1):
            return False
        for t in stms[k + 1:]:
            if isinstance(t, K.Free):
                continue
            return (isinstance(t, K.Store) and t.value == s.var
                    and isinstance(t.ptr, K.KVar) and is_scalar_result_param(t.ptr)
                    and t.ptr in self.f.params)
        return False

    def stm(self, s: K.Stm, ind: str):
        if isinstance(s, K.Set):
            self.emit(ind, f"{self.name(s.var)} = {self.expr(s.value)}")
        elif isinstance(s, K.Store):
            self.emit(ind, f"rt.store({self.expr(s.ptr)}, {self.expr(s.index)}, "
                           f"{self.expr(s.value)})")
        elif isinstance(s, K.Alloc):
            elem = s.var.type.elem
            kind = "ptr" if isinstance(elem, K.Ptr) else elem.value
            size = 8 if isinstance(elem, K.Ptr) else max(elem.bits // 8, 1)
            v = self.name(s.var)
            self.emit(ind, f"_n = {self.expr(s.count)}")
            how = "alloc_zeroed" if s.zeroed else "alloc"
            self.emit(ind, f"{v} = rt.{how}(_n, '{kind}')")
            self.emit(ind, f"if {v} is None:")
            self.emit(ind, f"    return rt.fail(6, {self.mod.alloc_msg()}, (int(_n), {size}))")
        elif isinstance(s, K.Free):
            self.emit(ind, f"rt.free({self.expr(s.ptr)})")
        elif isinstance(s, K.Prefetch):
            pass                            # a CPU cache hint (kir.Prefetch)
        elif isinstance(s, K.CopyMem):
            self.emit(ind, f"rt.copy({self.expr(s.dst)}, {self.expr(s.src)}, "
                           f"{self.expr(s.count)})")
        elif isinstance(s, K.If):
            self.emit(ind, f"if {self.expr(s.cond)}:")
            self.block(s.then, ind + "    ")
            if s.orelse.stms:
                self.emit(ind, "else:")
                self.block(s.orelse, ind + "    ")
        elif isinstance(s, K.For):
            self.range_loop(s.var, f"int({self.expr(s.lo)}), int({self.expr(s.hi)})", s.body, ind)
        elif isinstance(s, K.While):
            self.emit(ind, f"while {self.expr(s.cond)}:")
            self.block(s.body, ind + "    ")
        elif isinstance(s, K.Fail):
            args = "".join(f"int({self.expr(a)}), " for a in s.args)
            self.emit(ind, f"return rt.fail({K.ERROR_CODES[s.kind]}, {s.msg}, ({args}))")
        elif isinstance(s, K.ParFor):
            self.parfor(s, ind)
        else:
            raise TypeError(f"not a kernel IR statement: {s!r}")

    def range_loop(self, var: K.KVar, bounds: str, body: K.Block, ind: str):
        self.loops += 1
        k = f"_i{self.loops}"
        self.emit(ind, f"for {k} in range({bounds}):")
        self.emit(ind + "    ", f"{self.name(var)} = i64({k})")
        self.block(body, ind + "    ")

    def parfor(self, s: K.ParFor, ind: str):
        kname = f"{self.f.name}_parfor{self.parfors}"
        self.parfors += 1
        try:
            kern = emit_cl.emit_kernel(kname, s)
        except emit_cl.Unsupported as why:
            # the host runs it: in order, the first failure wins and stops it
            self.mod.host_parfors += 1
            self.emit(ind, f"# {kname} runs on the host: {why}")
            self.range_loop(s.var, f"int({self.expr(s.count)})", s.body, ind)
            return
        k = self.mod.add_kernel(kern)
        args = "".join(f"{self.name(K.KVar(a.name, a.type))}, " for a in kern.args)
        self.emit(ind, f"rt.launch({k}, {self.expr(s.count)}, ({args}))")

    def function(self) -> list[str]:
        """The function's lines; its body runs under np.errstate(all="ignore")
        (wrapping arithmetic stays quiet; hostprims.quiet_set) only when it
        computes with numpy scalars (even that costs a little every call)."""
        params = "".join(f", {self.name(p)}" for p in self.f.params)
        self.block(self.f.body, "    ")
        body = self.lines + ["    return None"]
        if self.arith:
            body = (["    _quiet = quiet_set(QUIET)", "    try:"] + ["    " + ln for ln in body]
                    + ["    finally:", "        quiet_reset(_quiet)"])
        return [f"def {self.f.name}(rt{params}):"] + body + [""]


class _ModGen:
    def __init__(self, m: K.Module):
        self.m = m
        self.consts: dict = {}
        self.kernels: list = []
        self.host_parfors = 0
        self._alloc_msg = None

    def const(self, t: ScalarType, value) -> str:
        """The name of a module-level constant holding `value` as a t."""
        text = self.const_value(t, value)
        name = self.consts.get(text)
        if name is None:
            name = self.consts[text] = f"C{len(self.consts)}_{t.value}"
        return name

    def alloc_msg(self) -> int:
        if self._alloc_msg is None:
            self._alloc_msg = self.m.message(ALLOC_FAIL_MESSAGE)
        return self._alloc_msg

    def add_kernel(self, k: emit_cl.Kernel) -> int:
        self.kernels.append(k)
        return len(self.kernels) - 1

    def const_lines(self) -> list[str]:
        return [f"{name} = {text}" for text, name in self.consts.items()]

    def generate(self) -> HostProgram:
        if any(isinstance(s, K.Alloc) for f in self.m.functions for s in K.walk_stms(f.body)):
            self.alloc_msg()
        fn_lines = []
        for f in self.m.functions:
            fn_lines += _FnGen(self, f).function()
        head = ['"""Host code generated by PyShark (codegen/opencl/host.py) from the kernel IR."""',
                "from pyshark.codegen.opencl.hostprims import *", ""]
        kern = ["KERNELS = ("]
        for k in self.kernels:
            kinds = ", ".join(repr("ptr" if a.is_ptr else a.type.value) for a in k.args)
            kern.append(f"    ({k.name!r}, ({kinds}{',' if len(k.args) == 1 else ''}), "
                        f"{k.can_fail}),")
        kern.append(")")
        entries = ["ENTRIES = {"] + [f"    {f.name!r}: {f.name}," for f in self.m.functions] + ["}"]
        py = "\n".join(head + self.const_lines() + [""] + kern + [""] + fn_lines + entries) + "\n"
        return HostProgram(py, emit_cl.program_source(self.kernels), self.kernels,
                           self.host_parfors)

    @staticmethod
    def const_value(t: ScalarType, value) -> str:
        py = _PY_TYPES[t.value]
        if t is BOOL:
            return f"b1({bool(value)})"
        if t.is_float:
            return f"fhex({py}, {float(value).hex()!r})"
        v = int(value) & ((1 << t.bits) - 1)
        if t.is_signed and v >= 1 << (t.bits - 1):
            v -= 1 << t.bits
        return f"{py}({v})"


def translate(m: K.Module) -> HostProgram:
    """The host Python module and the OpenCL C program of a kernel IR module.
    May append ALLOC_FAIL_MESSAGE to m.messages (when some Alloc exists)."""
    return _ModGen(m).generate()


__all__ = ["translate", "HostProgram", "HOST_BIN", "HOST_UN", "HOST_CAST", "ALLOC_FAIL_MESSAGE"]
