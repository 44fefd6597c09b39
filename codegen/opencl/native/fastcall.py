"""The C fast path of a native opencl entry's call (fastcall.c; issue 18
item 4: a call's host time within 2 us of a bare clEnqueueNDRangeKernel +
clFinish).

The Python path of a call (the Wrapper's bound call, convert.bind_args,
NativeModule.call, NativeCaller.__call__ and its DeviceArray results) cost
about 10 us of Python per call on top of the driver. `entry()` gives a
Wrapper attribute instead a C object, `Entry`, that does the common case in
C: positional scalars and DeviceArrays of this library context in, one
pyshark_ocl_call, DeviceArrays over NativeMems out. Everything else calls
the Python path unchanged (`slow`), so conversions, checks and exceptions
stay the Python path's; fastcall.c's header lists the common case.

The extension is built at first use, like the runtime's objects
(build.py): `cc -O2 -fPIC -shared` against this interpreter's Python.h,
kept in the temp folder under the hash of the source, the compiler and the
interpreter, loaded with importlib's ExtensionFileLoader. Where it cannot be
built or loaded (no Python.h, no compiler) or PYSHARK_OPENCL_FASTCALL=0,
entries take the Python path and `why_not()` says why. Before an entry uses
it, the C reading of each numpy scalar type is checked against numpy's own
bytes (`scalar_bytes`).
"""
from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ...native_ext import build_extension, load_extension, once

HERE = Path(__file__).parent
SOURCE = HERE / "fastcall.c"
NAME = "_pyshark_fastcall"
_KINDS = {"i8": 0, "i16": 1, "i32": 2, "i64": 3, "u8": 4, "u16": 5, "u32": 6, "u64": 7,
          "f32": 8, "f64": 9, "bool": 10}
_STATE: dict = {}                   # "module" (or None) and "why", once per process
_BUILD = threading.Lock()
_CHECKED: dict = {}                 # numpy scalar type -> its C reading is right


def enabled() -> bool:
    """PYSHARK_OPENCL_FASTCALL=0 turns the fast path off (read per Wrapper attribute)."""
    return os.environ.get("PYSHARK_OPENCL_FASTCALL", "1") != "0"


def why_not() -> Optional[str]:
    """Why the extension is not there (None when it is, or not tried yet)."""
    return _STATE.get("why")


def extension():
    """The loaded extension module, or None (built and loaded once per process)."""
    return once(_STATE, _BUILD, lambda: load_extension(NAME, build_extension(
        SOURCE, "pyshark-fastcall")))


def _scalar_ok(mod, dt: np.dtype) -> bool:
    """The C reading of a numpy scalar of dt (its obval) gives numpy's bytes."""
    ok = _CHECKED.get(dt.type)
    if ok is None:
        sample = dt.type(True if dt.kind == "b" else 3.25 if dt.kind == "f" else 0x5A)
        try:
            ok = mod.scalar_bytes(sample, dt.itemsize) == np.array(sample, dt).tobytes()
        except (TypeError, ValueError):
            ok = False
        _CHECKED[dt.type] = ok
    return ok


def entry(caller, slow: Callable, fail: Callable):
    """The C call object of NativeCaller `caller`, or None where the fast path
    does not apply (disabled, no extension, results that are not DeviceArrays
    of a scalar, an array or a tuple of those, parameters that are not flat).
    `slow(*args, **kwargs)` is the Python path; `fail(code)` raises what the
    Python path raises for a failed call's code."""
    if not enabled():
        return None
    if caller.keep != 1 or caller.shape not in ("leaf", "tuple") or not caller.flat.flat_params:
        return None
    mod = extension()
    if mod is None:
        return None
    from pyshark.wrapper.device_array import DeviceArray

    from ..runtime import LOCK
    params = []
    for slots, (dt, r, e) in zip(caller.slots, caller.params):
        if r == 0:
            if not _scalar_ok(mod, dt):
                return None
            lo, hi = 0, 0
            if dt.kind in "iu":
                info = np.iinfo(dt)
                lo, hi = int(info.min), min(int(info.max), 2 ** 63 - 1)
            params.append((0, _KINDS[e], slots[1], dt.itemsize, dt.type, lo, hi))
        else:
            _, hw, dims, side = slots
            params.append((1, side[0], r, dt.itemsize, dt, tuple(dims)))
    results = [(r, dt.itemsize, dt, tuple(c[:3])) for (dt, r, e), c in zip(caller.results,
                                                                             caller.cells)]
    addrs = (caller.ctx, ctypes.cast(caller.lib.call, ctypes.c_void_p).value, caller.packed,
             ctypes.addressof(caller.lay), caller.base, ctypes.addressof(caller.dead),
             type(caller.ctxs).sigint.offset)
    dev = caller.dev
    return mod.make(slow, fail, LOCK, caller.grave, dev.graveyard, dev.drain, dev, caller,
                    DeviceArray, caller.Mem, addrs, caller.main, tuple(params), tuple(results),
                    caller.shape == "tuple")


__all__ = ["enabled", "why_not", "extension", "entry", "SOURCE"]
