"""The C fast path of a cpu entry's call (fastcall.c): the host time of a
call on small data.

Through the Python path (the Wrapper's bound call, convert.bind_args,
CpuModule.call, _Caller.__call__ with ctypes, _adopt per array result) a
call of saxpy over 1000 f32 cost ~15-50 us on a loaded 2-core box, NumPy's
`a*x+y` ~3 us. `entry()` gives a Wrapper attribute instead a C object,
`Entry`, that does the common case in C: positional numpy scalars / Python
ints and floats / C-contiguous ndarrays of the exact dtype and rank in, one
call of the entry's function with the GIL released, numpy scalars and
ndarrays over the library's blocks out. Everything else calls the Python
path unchanged (`slow`), so conversions, checks and exceptions stay the
Python path's; fastcall.c's header lists the common case and how one fixed
C prototype calls every entry.

numpy's C API, not the buffer protocol: an argument's checks (exact type,
ndim, flags, dtype) and its data pointer and dims are a few loads through
PyArrayObject's macros, where PyObject_GetBuffer makes numpy build a
Py_buffer (format string, shape and strides arrays) per argument and still
leaves the dtype to compare; and a result array over a malloc'd block is
one PyArray_NewFromDescr with a capsule as its base (freed by its
destructor), where a buffer-exporting type would still need np.frombuffer
and reshape from Python. The headers come from numpy.get_include() and the
extension is built against the numpy it runs with (its version is in the
cache key), so its ABI is numpy's own.

Built at first use (codegen/native_ext.py: the C compiler, Python.h and
numpy's headers, cached in the temp folder by hash, loaded with
ExtensionFileLoader). Where it cannot be built or loaded, where the platform's
calling convention is not one the generic call knows, where the ABI probe
fails, or with PYSHARK_CPU_FASTCALL=0, entries take the Python path and
`why_not()` says why (None: no reason known, or not tried yet).
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from pyshark.core.types import SArray, SScalar, STuple, stype_base

from ..native_ext import build_extension, load_extension, once
from .runtime import PysharkCtx

HERE = Path(__file__).parent
SOURCE = HERE / "fastcall.c"
NAME = "_pyshark_cpucall"
KINDS = {"i8": 0, "i16": 1, "i32": 2, "i64": 3, "u8": 4, "u16": 5, "u32": 6, "u64": 7,
         "f32": 8, "f64": 9, "bool": 10}
_STATE: dict = {}                   # "module" (or None) and "why", once per process
_BUILD = threading.Lock()


def enabled() -> bool:
    """PYSHARK_CPU_FASTCALL=0 turns the fast path off (read per Wrapper attribute)."""
    return os.environ.get("PYSHARK_CPU_FASTCALL", "1") != "0"


def why_not() -> Optional[str]:
    """Why the extension is not there or not used (None when it is, or not tried yet)."""
    return _STATE.get("why")


def extension():
    """The loaded extension module, checked (its ctx layout, the ABI probe),
    or None; built, loaded and checked once per process."""
    return once(_STATE, _BUILD, _make_extension)


def _make_extension():
    mod = load_extension(NAME, build_extension(SOURCE, "pyshark-cpucall", [np.get_include()],
                                               key=np.__version__))
    if not mod.CONVENTION:
        raise RuntimeError("the generic call knows no calling convention of this platform "
                           "(SysV x86-64 and Linux AArch64 only)")
    layout = (ctypes.sizeof(PysharkCtx),) + tuple(
        getattr(PysharkCtx, f).offset for f in ("code", "msg", "args", "nthreads", "sigint"))
    if tuple(mod.CTX_LAYOUT) != layout:
        raise RuntimeError(f"pyshark_ctx layout {tuple(mod.CTX_LAYOUT)} != PysharkCtx {layout}")
    abi_probe(mod)
    return mod


#: the ABI probe's signature: integers of every width and sign, f32 and f64
#: interleaved (8 of them: every vector register), and integer arguments past
#: the registers (the stack slots)
_PROBE = (["ptr", "i8", "f32", "u8", "f64", "i16", "u16", "f32", "i32", "u32", "bool", "f64"]
          + ["i64", "u64", "f32", "ptr", "f64", "i64", "f32", "i32", "f64"] + ["i64"] * 12
          + ["i8"])
_PROBE_VALUES = {"ptr": 0x7F00_1234_5678, "i8": -5, "u8": 250, "i16": -30000, "u16": 60000,
                 "i32": -2_000_000_000, "u32": 4_000_000_000, "bool": 1, "i64": -(2 ** 62) + 7,
                 "u64": 2 ** 64 - 3, "f32": 1.5, "f64": -2.25}
_CT = {"ptr": ctypes.c_void_p, "i8": ctypes.c_int8, "u8": ctypes.c_uint8,
       "i16": ctypes.c_int16, "u16": ctypes.c_uint16, "i32": ctypes.c_int32,
       "u32": ctypes.c_uint32, "bool": ctypes.c_uint8, "i64": ctypes.c_int64,
       "u64": ctypes.c_uint64, "f32": ctypes.c_float, "f64": ctypes.c_double}


def abi_probe(mod) -> None:
    """Calls a ctypes callback (a C function of exactly the declared
    signature, through libffi) of the mixed signature _PROBE through the
    extension's generic call, packing each argument as an Entry does, and
    checks that every value arrived; RuntimeError if not."""
    nflt = sum(k in ("f32", "f64") for k in _PROBE)
    if nflt != mod.NFLT or len(_PROBE) - nflt > mod.NINT:
        raise RuntimeError("the ABI probe does not fit the generic call")
    sent = [_PROBE_VALUES[k] + (i if k in ("i64", "i32", "f32", "f64") else 0)
            for i, k in enumerate(_PROBE)]
    got: list = []

    def record(*args):
        got.extend(args)
        return 77
    cb = ctypes.CFUNCTYPE(ctypes.c_int32, *[_CT[k] for k in _PROBE])(record)
    ints, flts = [], []
    for k, v in zip(_PROBE, sent):
        if k == "f32":
            flts.append(struct.unpack("<I", struct.pack("<f", v))[0])
        elif k == "f64":
            flts.append(struct.unpack("<Q", struct.pack("<d", v))[0])
        else:
            ints.append(v & (2 ** 64 - 1))      # sign- or zero-extended, as widen() does
    r = mod.call_generic(ctypes.cast(cb, ctypes.c_void_p).value, tuple(ints), tuple(flts))
    if r != 77 or [(v or 0) for v in got] != sent:
        raise RuntimeError(f"the ABI probe failed ({mod.CONVENTION}): sent {sent}, "
                           f"got {got}, returned {r}")


def simple_result(entry) -> Optional[bool]:
    """False: the entry returns one scalar or array of scalars; True: a
    tuple of those; None: another shape (no fast path)."""
    def leaf(st) -> bool:
        return isinstance(st, SScalar) or (isinstance(st, SArray)
                                           and isinstance(stype_base(st), SScalar))
    ret = entry.ret
    if leaf(ret):
        return False
    if isinstance(ret, STuple) and ret.elems and all(leaf(e) for e in ret.elems):
        return True
    return None


def entry(caller, slow: Callable, *, main: list, pnt: list, free) -> Optional[object]:
    """The C call object of backend._Caller `caller`, or None where the fast
    path does not apply (disabled, no extension, parameters that are not
    flat, results that are not a scalar, an array or a tuple of those, a
    signature the generic call cannot take). `slow(*args, **kwargs)` is the
    Python path; `main`: the list whose item is the main thread's ident;
    `pnt`: wrapper.backend.PROCESS_NUM_THREADS; `free`: the ctypes function
    that frees a result's block (backend._free)."""
    if not enabled():
        return None
    as_tuple = simple_result(caller.entry)
    if as_tuple is None or not caller.flat_params:
        return None
    if len(caller.results) != (len(caller.entry.ret.elems) if as_tuple else 1):
        return None
    mod = extension()
    if mod is None:
        return None
    params = []
    for p, (dt, r), kind in zip(caller.entry.params, caller.params, caller.kinds):
        if r == 0:
            lo = hi = 0
            if dt.kind in "iu":
                info = np.iinfo(dt)
                lo, hi = int(info.min), min(int(info.max), 2 ** 63 - 1)
            params.append((KINDS[kind], p.stype.t.numpy_type, lo, hi))
        else:
            params.append((-1, dt, r))
    results = tuple((KINDS[e], r, dt) for dt, r, e in caller.results)
    try:
        return mod.make(slow, caller.raise_error, main, pnt, caller, caller.address,
                        ctypes.cast(free, ctypes.c_void_p).value, caller.num_threads or 0,
                        tuple(params), results, as_tuple)
    except ValueError:                      # more arguments than the fixed prototype holds
        return None


def retarget(call_object, caller) -> None:
    """Points the C call object made by `entry` at backend._Caller `caller`'s
    function (the same entry, with the same C signature, of another library
    of the same program: the tiered compile's optimised module)."""
    extension().retarget(call_object, caller.raise_error, caller, caller.address)


__all__ = ["enabled", "why_not", "extension", "entry", "retarget", "abi_probe",
           "simple_result", "SOURCE"]
