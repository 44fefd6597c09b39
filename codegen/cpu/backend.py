"""Backend "cpu": core IR -> kernel IR -> LLVM IR -> a shared library.

compile: translate and check, optimise (codegen/pipeline.py when present),
lower to the kernel IR (codegen/lower.py), spell it in LLVM IR
(emit_llvm.py), optimise for the host CPU and link with the system C
compiler (link.py). The artifact directory holds the library, the kernel
ABI of each entry (abi.json: parameter layout and error messages) and a C
header declaring each entry.

load/call: ctypes; array inputs pass their buffers without a copy (numpy
arrays that are already C-contiguous of the right dtype), results are
buffers the library allocated, handed to numpy without a copy and freed by
C `free()` when numpy lets go of them. ctypes releases the GIL during the
call, and each call has its own context, so several Python threads may call
entries of one library at once.

Ctrl-C: a call from the main thread sets ctx->sigint, so compiled code
stops within about a millisecond of SIGINT with KeyboardInterrupt's code
(codegen/cpu/emit_unwind.py), having freed what it allocated. The wrapper
then runs Python's signal handlers (PyErr_CheckSignals): the default one
raises KeyboardInterrupt; if the user's own handler returns instead, the
call runs again from the start (entries are pure), as a Python loop would
go on after the handler. Calls from other threads are not interrupted
(Python raises KeyboardInterrupt only in the main thread).
"""
from __future__ import annotations

import _thread
import ctypes
import ctypes.util
import json
import os
import threading
import weakref
from pathlib import Path

import numpy as np

from pyshark.core import ir
from pyshark.core.types import ArrayType, ScalarType
from pyshark.errors import RUNTIME_ERRORS, ShapeError
from pyshark.wrapper import convert
from pyshark.wrapper.backend import (_NUM_THREADS, Backend, LoadedModule, entries_from_manifest,
                                     translate_and_check)

from .. import kir as K
from ..lower import symbol
from ..marshal import ERRORS, error_from

LIB_FILE = "module.so"
ABI_FILE = "abi.json"
HEADER_FILE = "module.h"
KIR_FILE = "kernels.txt"

_ERRORS = ERRORS            # kept under its old name

_CTYPES = {"i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
           "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "f32": ctypes.c_float,
           "f64": ctypes.c_double, "bool": ctypes.c_uint8}
_C_NAMES = {"i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
            "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
            "f32": "float", "f64": "double", "bool": "uint8_t"}


from .runtime import PysharkCtx as Ctx
from .c_api import HEADER as C_API_HEADER


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


_free = _libc().free
_free.argtypes = [ctypes.c_void_p]
_free.restype = None

_INTERRUPTED = RUNTIME_ERRORS["KeyboardInterrupt"][0]
_check_signals = ctypes.pythonapi.PyErr_CheckSignals    # raises what a handler raises
_check_signals.argtypes = []
_check_signals.restype = ctypes.c_int
_MAIN = [threading.main_thread().ident]             # the thread Python's handlers run in
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _MAIN.__setitem__(0, threading.main_thread().ident))


def build_kernels(program: ir.Program, options, **lower_options) -> K.Module:
    """The kernel IR of every entry of a checked program."""
    from ..lower import Options as LowerOptions, lower_program
    try:
        from ..pipeline import optimise
    except ImportError:          # the middle end is optional
        optimise = None
    if optimise is not None:
        target = lower_options.get("target")
        program = optimise(program) if target is None else optimise(program, target=target)
    module = lower_program(program, LowerOptions(unsafe=options.unsafe, **lower_options))
    from ..memory import hoist_allocations
    module = hoist_allocations(module)
    if not getattr(lower_options.get("target"), "gpu", False):
        # a CPU's latency hiding (a GPU runs work-items in lockstep already)
        from ..mc.jam_while import jam_while_loops
        module = jam_while_loops(module)
    if lower_options.get("target") is None:
        # the LLVM backend's streaming stores (OpenCL C has none)
        from .streaming import stream_stores
        module = stream_stores(module)
    K.check_module(module)
    return module


def abi_of(program: ir.Program) -> dict:
    """Per entry: the core parameter and result types, in ABI order."""
    out = {}
    for name in program.entries:
        fun = program.entry_fun(name)
        out[name] = {
            "params": [_tjson(p.type) for p in fun.params],
            "results": [_tjson(t) for t in fun.ret],
        }
    return out


def _tjson(t):
    if isinstance(t, ScalarType):
        return [t.value, 0]
    return [t.elem.value, t.rank]


def c_header(program: ir.Program) -> str:
    """A C header declaring every entry of the library."""
    lines = ["/* Generated by PyShark: entries of a compiled module. */",
             "#include <stdint.h>",
             "typedef struct { int32_t code; int32_t msg; int64_t args[4];",
             "                 int32_t nthreads; int32_t sigint; } pyshark_ctx;",
             "/* Each entry returns 0 or an error code (1 IndexError, 2 ZeroDivisionError,",
             "   3 AssertionError, 4 ShapeError, 5 ValueError, 6 MemoryError, 7 OverflowError,",
             "   8 KeyboardInterrupt; pyshark_error_message below gives the text), having",
             "   freed what it allocated. Arrays come",
             "   in as a data pointer and one int64_t per dimension; array results come",
             "   back as a pointer to release with free() and their dimensions. */", "",
             C_API_HEADER]
    for name in program.entries:
        fun = program.entry_fun(name)
        params = ["pyshark_ctx *ctx"]
        for p in fun.params:
            if isinstance(p.type, ScalarType):
                params.append(f"{_C_NAMES[p.type.value]} {p.name}")
            else:
                params.append(f"const {_C_NAMES[p.type.elem.value]} *{p.name}")
                params += [f"int64_t {p.name}_n{d}" for d in range(p.type.rank)]
        for k, t in enumerate(fun.ret):
            if isinstance(t, ScalarType):
                params.append(f"{_C_NAMES[t.value]} *out{k}")
            else:
                params.append(f"{_C_NAMES[t.elem.value]} **out{k}")
                params.append(f"int64_t *out{k}_shape")
        lines.append(f"/* entry {name} */")
        lines.append(f"int32_t {symbol(name)}({', '.join(params)});")
    return "\n".join(lines) + "\n"


class CpuModule(LoadedModule):
    def __init__(self, lib, abi: dict, messages: list, entries, source,
                 num_threads: int | None = None):
        super().__init__(entries, source)
        self.lib = lib
        self.messages = messages
        self.callers = {name: _Caller(lib, symbol(name), spec, messages, entries[name],
                                      num_threads)
                        for name, spec in abi.items() if name in entries}

    def call(self, name: str, canon_args: list):
        return self.callers[name](canon_args)


class _Caller:
    """Marshals one entry's arguments and results (the flatten -> call ->
    unflatten path of the native backends), with the per-parameter work
    decided once, here, rather than at every call."""

    def __init__(self, lib, sym: str, spec: dict, messages: list, entry: ir.Entry,
                 num_threads: int | None = None):
        self.entry = entry
        self.num_threads = num_threads      # the Wrapper's; None: the process default
        self.messages = messages
        self.params = [(np.dtype(ScalarType(e).dtype), r) for e, r in spec["params"]]
        self.results = [(np.dtype(ScalarType(e).dtype), r, e) for e, r in spec["results"]]
        # the shared flatten/unflatten path (convert.FlatCall); its two fast
        # paths are inlined in __call__: parameters that are all scalars or
        # arrays of scalars are the flat arguments, and a scalar result (of
        # the exact numpy type, as built below) is the output
        self.flat = convert.FlatCall(entry)
        self.flat_params = self.flat.flat_params
        self.simple_result = self.flat.scalar_result
        argtypes = [ctypes.POINTER(Ctx)]
        for (dt, r), (e, _) in zip(self.params, spec["params"]):
            if r == 0:
                argtypes.append(_CTYPES[e])
            else:
                argtypes += [ctypes.c_void_p] + [ctypes.c_int64] * r
        for dt, r, e in self.results:
            argtypes += [ctypes.c_void_p] if r == 0 else [ctypes.c_void_p, ctypes.c_void_p]
        # a CFUNCTYPE foreign function releases the GIL during the call
        self.fn = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(lib.address_of(sym))
        self.lib = lib          # keeps the library (or JIT engine) alive

    def __call__(self, canon_args: list):
        flat = canon_args if self.flat_params else self.flat.args(canon_args)
        args: list = []
        keep = []
        for (dt, r), v in zip(self.params, flat):
            if r == 0:
                args.append(int(v) if dt.kind == "b" else v)
                continue
            if not (v.flags.c_contiguous and v.dtype == dt):
                v = np.ascontiguousarray(v, dtype=dt)
            keep.append(v)
            args.append(v.ctypes.data)
            args += v.shape
        outs = []
        for dt, r, e in self.results:
            if r == 0:
                cell = _CTYPES[e]()
                outs.append(cell)
                args.append(ctypes.addressof(cell))
            else:
                ptr = ctypes.c_void_p(0)
                shape = (ctypes.c_int64 * r)()
                outs.append((ptr, shape))
                args += [ctypes.addressof(ptr), ctypes.addressof(shape)]
        ctx = Ctx()
        # ctx->nthreads: NumThreads of every ParFor (0: libgomp's default)
        ctx.nthreads = self.num_threads or _NUM_THREADS[0] or 0
        if _thread.get_ident() == _MAIN[0]:
            ctx.sigint = 1          # Ctrl-C stops the call (see the module docstring)
        code = self.fn(ctypes.byref(ctx), *args)
        while code == _INTERRUPTED:
            self._interrupted(outs)
            code = self.fn(ctypes.byref(ctx), *args)
        results = []
        for (dt, r, e), o in zip(self.results, outs):
            if r == 0:
                results.append(dt.type(o.value))
            elif o[0].value:
                results.append(_adopt(o[0].value, tuple(o[1]), dt))
        if code:
            raise self._error(ctx)
        if self.simple_result:
            return results[0]
        return self.flat.output(results)

    def _interrupted(self, outs: list):
        """After a call stopped by Ctrl-C: frees any result it had handed
        over, then runs Python's signal handlers, which raise
        KeyboardInterrupt (or what the user's handler raises); when they
        return, the caller runs the entry again."""
        for (dt, r, e), o in zip(self.results, outs):
            if r and o[0].value:
                _free(o[0].value)
                o[0].value = 0
        _check_signals()

    def _error(self, ctx: Ctx) -> Exception:
        return error_from(ctx.code, ctx.msg, ctx.args, self.messages)


def _sha256(path: Path) -> str:
    import hashlib
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _adopt(ptr: int, shape: tuple, dt: np.dtype) -> np.ndarray:
    """A numpy array over memory the library allocated; freed with it."""
    n = int(np.prod(shape)) if shape else 1
    nbytes = n * dt.itemsize
    buf = (ctypes.c_char * max(nbytes, 1)).from_address(ptr)
    weakref.finalize(buf, _free, ptr)
    return np.frombuffer(buf, dtype=dt, count=n).reshape(shape)


class CpuBackend(Backend):
    name = "cpu"
    description = "LLVM (llvmlite): every CPU core through OpenMP, SIMD through LLVM's vectorizers"
    runtime_options = ("num_threads",)
    uses_num_threads = True

    def __init__(self, options=None, *, num_threads: int | None = None):
        from pyshark.wrapper.backend import Options, check_num_threads
        super().__init__(options if options is not None else Options())
        self.num_threads = check_num_threads(num_threads)

    @classmethod
    def is_available(cls) -> bool:
        import importlib.util
        return importlib.util.find_spec("llvmlite") is not None

    def compile(self, path: Path, source_text: str, directory: Path):
        from .emit_llvm import emit_module
        from .link import optimise_and_build
        program = translate_and_check(path, text=source_text)
        kernels = build_kernels(program, self.options)
        llvm_ir = emit_module(kernels, fastmath=self.options.fastmath)
        directory = Path(directory)
        optimise_and_build(llvm_ir, directory / LIB_FILE, fastmath=self.options.fastmath)
        (directory / ABI_FILE).write_text(json.dumps(
            {"entries": abi_of(program), "messages": kernels.messages,
             "library_sha256": _sha256(directory / LIB_FILE)}))
        (directory / HEADER_FILE).write_text(c_header(program))
        (directory / KIR_FILE).write_text(K.pretty_module(kernels))
        return program, {"library": LIB_FILE, "abi": ABI_FILE, "header": HEADER_FILE}

    def load(self, directory: Path, manifest: dict, source_path: Path | None) -> LoadedModule:
        from .runtime import load_library
        directory = Path(directory)
        abi = json.loads((directory / manifest["files"]["abi"]).read_text())
        lib_path = directory / manifest["files"]["library"]
        # never dlopen a library that is not byte for byte the one we built
        # (a truncated or corrupt cache entry is rebuilt by the Wrapper)
        if _sha256(lib_path) != abi.get("library_sha256"):
            raise ValueError(f"{lib_path} does not match its recorded hash (corrupt artifact)")
        lib = load_library(lib_path)
        return CpuModule(lib, abi["entries"], abi["messages"], entries_from_manifest(manifest),
                         manifest["source"], self.num_threads)
