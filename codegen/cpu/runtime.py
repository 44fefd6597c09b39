"""What running a compiled module needs, and nothing more: the ctx struct,
the ctypes types of entry parameters and the loaded Library (loader.py loads
one: ctypes for a .so; MCJIT, through link.py, only for IR text). Importing
it does not import llvmlite, so loading a cached module stays fast."""
from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Optional, Union

from pyshark.core.types import BOOL

from .. import kir as K


#: ctx->sigint of the Python wrapper's calls from the main thread: Ctrl-C
#: stops them through the thread team's runtime's one SIGINT handler (team.c),
#: with no system call per call; any other nonzero value (module.h's C
#: callers) installs the module's own handler around the call
SIGINT_SHARED = 2


class PysharkCtx(ctypes.Structure):
    """typedef struct { int32_t code; int32_t msg; int64_t args[4];
                        int32_t nthreads; int32_t sigint; } pyshark_ctx;
    sigint != 0: a Ctrl-C stops the call with KeyboardInterrupt's code
    (codegen/cpu/emit_unwind.py; SIGINT_SHARED above)."""
    _fields_ = [("code", ctypes.c_int32), ("msg", ctypes.c_int32),
                ("args", ctypes.c_int64 * 4), ("nthreads", ctypes.c_int32),
                ("sigint", ctypes.c_int32)]


_CTYPES = {
    "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
    "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64,
    "f32": ctypes.c_float, "f64": ctypes.c_double, "bool": ctypes.c_uint8,
}


def ctype_of(t: K.KType):
    """The ctypes type of an entry parameter of kernel type t (pointers are
    c_void_p: pass an address, e.g. arr.ctypes.data)."""
    if isinstance(t, K.Ptr):
        return ctypes.c_void_p
    if t is BOOL:
        return ctypes.c_uint8
    return _CTYPES[t.value]


def entry_prototype(f: K.Function):
    """ctypes.CFUNCTYPE(c_int32, POINTER(PysharkCtx), params...) for entry f.
    ctypes releases the GIL during the call."""
    return ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(PysharkCtx),
                            *[ctype_of(p.type) for p in f.params])



class Library:
    """A loaded module: `address_of(name)` gives a function's address, to be
    wrapped with a ctypes.CFUNCTYPE (see `entry_prototype`). `kind` is "so"
    (ctypes.CDLL) or "jit" (MCJIT in this process). Keep the Library alive
    while its functions may be called."""

    def __init__(self, kind: str, handle, path: Optional[Path] = None, engine=None):
        self.kind = kind
        self.path = path
        self._handle = handle
        self._engine = engine

    def address_of(self, name: str) -> int:
        if self.kind == "so":
            f = getattr(self._handle, name)
            return ctypes.cast(f, ctypes.c_void_p).value
        addr = self._engine.get_function_address(name)
        if not addr:
            raise AttributeError(f"no function {name!r} in the JIT module")
        return addr

    def function(self, f: K.Function):
        """The entry `f` as a ctypes function (first argument: a pointer to
        a PysharkCtx, e.g. ctypes.byref(ctx))."""
        return entry_prototype(f)(self.address_of(f.name))


def looks_like_ir(x) -> bool:
    if not isinstance(x, str):
        return False
    head = x.lstrip()[:200]
    return "\n" in x or head.startswith(("; ModuleID", "define", "declare", "target", "source_filename"))


BINARY_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe")


#: glibc mallopt parameters (malloc.h) and what keep_heap sets them to.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
KEEP_MAPPED = 1 << 30          # free memory the heap's top keeps before it is trimmed
HEAP_UP_TO = 32 << 20          # blocks below this come from the heap (glibc's largest
                               # dynamic mmap threshold); larger ones: emit_alloc.py
_GLIBC_KNOBS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                "MALLOC_MMAP_MAX_")
_heap_kept = False


def keep_heap() -> bool:
    """Makes glibc's malloc keep freed blocks of up to HEAP_UP_TO bytes in
    the heap, so that a compiled call's fresh grids reuse mapped pages.

    Why: glibc serves a block of 128 KiB or more by mmap until one such
    block has been freed (its dynamic threshold then rises), trims the
    heap's top once 2x that threshold is free, and freezes the threshold at
    whatever it is when any mallopt runs (emit_alloc's large-block path
    calls one). An iterated stencil allocates one grid per step and frees
    the last: depending on the process's history that was a page fault per
    4 KiB of every grid (trimming) or a fresh mmap and munmap per step (a
    TLB shootdown on every core of the team): hotspot_rodinia at 512^2 x 20
    took 1.25 ms in a fresh process, 7.0 ms once a 4 MiB block had been
    allocated first, 0.54-0.59 ms with the heap kept (2-core Zen 5; docs/
    cpu-backend.md, "Memory"). Called before the first compiled module
    loads; process-wide, as numpy's allocations share the heap. A user's
    MALLOC_*_ variables or glibc.malloc tunables are left to rule, as is
    PYSHARK_KEEP_HEAP=0. Returns whether the settings were made."""
    global _heap_kept
    if _heap_kept:
        return True
    if (os.environ.get("PYSHARK_KEEP_HEAP") == "0" or any(k in os.environ for k in _GLIBC_KNOBS)
            or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):       # not glibc: its own allocator's policy rules
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _heap_kept = bool(mallopt(M_MMAP_THRESHOLD, HEAP_UP_TO)) and bool(
        mallopt(M_TRIM_THRESHOLD, KEEP_MAPPED))
    return _heap_kept
