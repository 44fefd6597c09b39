"""Loading a native opencl library and calling its entries through ctypes,
as the cpu backend does (codegen/cpu/backend._Caller).

The library gets one context per (library, device), made over pyopencl's
context, device and in-order queue (`pyshark_ocl_ctx_wrap`), so that its
buffers and the Python runtime's are one memory: a DeviceArray made by any
opencl entry (native or Python host code) is taken by any other, and the
process lock (runtime.LOCK) serialises calls on the shared queue. The
context builds the kernels once, from the source embedded in the library.

A call is one foreign call, rt_api.c's pyshark_ocl_call over the entry's
NAME.packed (emit_host.py): the arguments go in as 8-byte words of a
ctypes Structure made once per entry; inside, numpy arguments are uploaded
(small ones sent without waiting), DeviceArray arguments imported (one more
reference to their cl_mem, no copy), the entry runs, the arguments are
released and, with device_arrays=True, every result is handed out as a
cl_mem reference (a scalar result too: the element the entry left on the
device, psk_load_result, or its value uploaded), wrapped here as a
DeviceArray over a NativeMem. A dead NativeMem's buffer goes back through
the next call (pyshark_ocl_reclaim: the context's cache of free blocks), so a loop
of calls allocates no new buffer, as the Python host's pool does. Without
device_arrays array results are read into numpy arrays
(`pyshark_ocl_download`) and freed (`pyshark_ocl_array_free`). An error
code becomes the exception marshal.error_from gives (the cpu backend's
text), or a DeviceError for the runtime's own codes (100-102, rt.h).
"""
from __future__ import annotations

import _thread
import ctypes
import os
import threading

import numpy as np

from pyshark.core.types import ScalarType
from pyshark.errors import DeviceBuildError, DeviceError, DeviceOutOfMemory
from pyshark.wrapper.convert import FlatCall
from pyshark.wrapper.device_array import device_array, output_keeping_arrays
from pyshark.wrapper.device_interface import is_device_array

from ...lower import symbol
from ...marshal import error_from
from ..failures import out_of_memory
from ..runtime import LOCK, DevMem

DEVICE_ERROR, DEVICE_OOM, DEVICE_BUILD = 100, 101, 102
_INTERRUPTED = 8                        # kir.ERROR_CODES["KeyboardInterrupt"]
_check_signals = ctypes.pythonapi.PyErr_CheckSignals    # raises what a handler raises
_check_signals.argtypes = []
_check_signals.restype = ctypes.c_int
MAIN_THREAD = [threading.main_thread().ident]   # the thread Python's handlers run in
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: MAIN_THREAD.__setitem__(
        0, threading.main_thread().ident))

_CTYPES = {"i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
           "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "f32": ctypes.c_float,
           "f64": ctypes.c_double, "bool": ctypes.c_uint8}


class Ctx(ctypes.Structure):
    """The first fields of rt.h's context: kir's ctx."""
    _fields_ = [("code", ctypes.c_int32), ("msg", ctypes.c_int32),
                ("args", ctypes.c_int64 * 4), ("nthreads", ctypes.c_int32),
                ("sigint", ctypes.c_int32)]


class Library:
    """A loaded native library, its C API typed, and one context per device."""

    def __init__(self, path):
        lib = self.lib = ctypes.CDLL(str(path))
        vp, u64, i64, i32 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int32
        for name, res, args in (
                ("pyshark_ocl_ctx_wrap", vp, [vp, vp, vp]),
                ("pyshark_ocl_ctx_free", None, [vp]),
                ("pyshark_ocl_upload", u64, [vp, vp, i64]),
                ("pyshark_ocl_import", u64, [vp, vp, i64]),
                ("pyshark_ocl_buffer", vp, [vp, u64, ctypes.POINTER(i64)]),
                ("pyshark_ocl_download", i32, [vp, u64, vp, i64]),
                ("pyshark_ocl_array_free", None, [vp, u64]),
                ("pyshark_ocl_release_held", None, [vp]),
                ("pyshark_ocl_detach", vp, [vp, u64]),
                ("pyshark_ocl_heap_stride", i64, [vp]),
                ("pyshark_ocl_call", i32, [vp, vp, vp, vp, i64, vp]),
                ("pyshark_ocl_reclaim", None, [vp, i64, vp]),
                ("pyshark_ocl_error_message", i64, [vp, ctypes.c_char_p, i64])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
            short = name[len("pyshark_ocl_"):]
            setattr(self, short + "_" if short == "import" else short, fn)
        self.contexts: dict = {}
        self.graves: dict = {}      # context -> cl_mems of dead NativeMems (any thread appends)

    def context(self, dev) -> int:
        """This library's context on runtime.Device dev (made once; raises
        the DeviceError of a failed kernel build)."""
        c = self.contexts.get(id(dev))
        if c is None:
            c = self.ctx_wrap(dev.ctx.int_ptr, dev.dev.int_ptr, dev.queue.int_ptr)
            if not c:
                raise MemoryError("cannot allocate an OpenCL context record")
            code = Ctx.from_address(c).code
            if code:
                err = self.error(c, code, [], dev.name)
                self.ctx_free(c)
                raise err
            self.contexts[id(dev)] = c
            self.graves[c] = []
        return c

    def message(self, c: int) -> str:
        buf = ctypes.create_string_buffer(16384)
        self.error_message(c, buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def error(self, c: int, code: int, messages: list, device: str) -> Exception:
        ctx = Ctx.from_address(c)
        if code < DEVICE_ERROR and ctx.msg != -1:
            return error_from(code, ctx.msg, list(ctx.args), messages)
        text = self.message(c).split(": ", 1)[-1]
        if code == DEVICE_OOM:
            return DeviceOutOfMemory(text, device=device)
        if code == DEVICE_BUILD:
            return DeviceBuildError(text, device=device, log=text)
        return DeviceError(text, device=device)

    def close(self):
        for c in self.contexts.values():
            grave = self.graves[c]
            while grave:
                self.reclaim(c, 1, (ctypes.c_uint64 * 1)(grave.pop()))
            self.release_held(c)


class NativeMem(DevMem):
    """A block that pyshark_ocl_call handed out: an array `handle` of its
    library context (the context keeps the cl_mem, `ptr`). When it dies the
    handle goes to that context's graveyard, which the context's next call
    gives back (pyshark_ocl_reclaim: its free blocks), so a loop of calls
    reuses one buffer as the Python host's pool does, and an entry of the
    same context takes it back as its handle (no import). `buf`, the
    pyopencl Buffer that the Python host path and DeviceArray.get use, is
    made on first use (its own reference)."""
    __slots__ = ("handle", "ptr", "grave", "_buf")

    def __init__(self, handle: int, ptr: int, dtype: np.dtype, count: int, grave: list):
        self.handle, self.ptr, self.grave = handle, ptr, grave
        self.dtype, self.count = dtype, count
        self.home = None
        self.zeroed = False
        self._buf = None

    @property
    def buf(self):
        b = self._buf
        if b is None:
            import pyopencl as cl
            b = self._buf = cl.Buffer.from_int_ptr(self.ptr, retain=True)
        return b

    def __del__(self):
        try:
            self.grave.append(self.handle)
        except Exception:
            pass


_DEAD_MAX = 32
_OFFSET = (1 << 40) - 1                 # rt.h's handles: the byte offset's bits
_HANDLE = ~_OFFSET & ((1 << 64) - 1)


class NativeCaller:
    """One entry's call path: one foreign call (rt_api.c pyshark_ocl_call) per
    call. The words of the call (one 8-byte word per parameter of the
    entry's NAME.packed, then three side words per array argument, then the
    result cells) are a ctypes Structure made once per entry: the out-param
    words point at the cells once and for all; a call sets the scalar and
    array-argument words, passes the graveyard's dead buffers, and reads the
    cells."""

    def __init__(self, lib: Library, dev, entry, spec: dict, messages: list,
                 device_arrays: bool):
        self.Mem, self.main = NativeMem, MAIN_THREAD
        self.lib, self.dev, self.entry, self.messages = lib, dev, entry, messages
        self.LOCK = LOCK
        self.ctx = lib.context(dev)
        self.ctxs = Ctx.from_address(self.ctx)
        self.grave = lib.graves[self.ctx]
        self.dead = (ctypes.c_uint64 * _DEAD_MAX)()
        self.device_arrays = device_arrays
        self.params = [(np.dtype(ScalarType(e).dtype), r, e) for e, r in spec["params"]]
        self.results = [(np.dtype(ScalarType(e).dtype), r, e) for e, r in spec["results"]]
        self.flat = FlatCall(entry)
        self.shape = _result_shape(entry.ret)
        # the words: (field name, ctypes type) per 8-byte word
        fields: list = []

        def word(t=ctypes.c_uint64) -> int:
            i = sum(1 for n, _ in fields if n[0] == "w")
            fields.append((f"w{i}", t))
            if ctypes.sizeof(t) < 8:
                fields.append((f"_pad{i}", ctypes.c_char * (8 - ctypes.sizeof(t))))
            return i
        nwords = lambda: sum(1 for n, _ in fields if n[0] == "w")   # noqa: E731
        plan = []                   # per param: ("s", word) or ("a", handle word, dims words)
        for dt, r, e in self.params:
            if r == 0:
                plan.append(("s", word(_CTYPES[e])))
            else:
                plan.append(("a", word(), [word() for _ in range(r)]))
        outparams = []
        for dt, r, e in self.results:
            outparams.append([word() for _ in range(1 if r == 0 else 2)])
        ins = []
        for k, pl in enumerate(plan):
            if pl[0] == "a":
                side = [word(), word(), word()]
                ins.append((pl[1], side[0]))
                plan[k] = ("a",) + pl[1:] + (side,)
        self.slots = list(plan)     # per param: ("s", word) or ("a", handle, dims, side words)
        cells = []
        for dt, r, e in self.results:
            cells.append([word(_CTYPES[e])] + [word() for _ in range(2)] if r == 0
                         else [word() for _ in range(2 + r)])
        Words = type("Words", (ctypes.Structure,), {"_fields_": fields})
        st = self.st = Words()
        n = nwords()
        assert ctypes.sizeof(st) == 8 * n
        self.words = (ctypes.c_uint64 * n).from_buffer(st)
        base = ctypes.addressof(st)
        for op, cl_ in zip(outparams, cells):
            for i, c in zip(op, (cl_[0], cl_[2])):
                self.words[i] = base + 8 * c
        desc = lambda i: Words.__dict__[f"w{i}"].__set__       # noqa: E731
        self.plan = [(desc(pl[1]),) if pl[0] == "s" else
                     (None, pl[1], pl[2], pl[3][0]) for pl in plan]
        keep = 0 if not device_arrays else (1 if self.shape != "built" else 2)
        lay = [keep, len(ins)]
        for hw, sw in ins:
            lay += [hw, sw]
        lay.append(len(self.results))
        for k, ((dt, r, e), c) in enumerate(zip(self.results, cells)):
            lay += [0 if r == 0 else 1, c[0], dt.itemsize, k]
        self.lay = (ctypes.c_int32 * len(lay))(*lay)
        self.keep = keep
        self.cells = cells
        self.getters = [Words.__dict__[f"w{c[0]}"].__get__ for c in cells]
        fn = getattr(lib.lib, symbol(entry.name) + ".packed")
        self.packed = ctypes.cast(fn, ctypes.c_void_p).value
        self.base = base

    def __call__(self, canon_args: list):
        flat = canon_args if self.flat.flat_params else self.flat.args(canon_args)
        lib, ctx, dev = self.lib, self.ctx, self.dev
        st, w = self.st, self.words
        with self.LOCK:
            if dev.graveyard:
                dev.drain()
            hold = None                 # numpy arguments alive until the call returns
            for pl, (dt, r, e), v in zip(self.plan, self.params, flat):
                if pl[0] is not None:
                    pl[0](st, int(v) if e == "bool" else v)
                    continue
                _, hw, dims, sw = pl
                if is_device_array(v) and not isinstance(v, np.ndarray):
                    if v.device is not dev:
                        raise ValueError(f"a DeviceArray argument lives on the OpenCL device "
                                         f"{v.device.name}, this module runs on {dev.name}: "
                                         f"pass np.asarray(value) (a copy through the host)")
                    if v.dtype != dt or v.ndim != r:
                        raise TypeError(f"a DeviceArray of {v.dtype}[{v.ndim}] where "
                                        f"{dt}[{r}] is expected")
                    m = v._mem
                    if type(m) is self.Mem and m.grave is self.grave:     # this context's
                        w[sw] = m.handle + v._off * dt.itemsize
                        w[sw + 2] = 2
                    else:
                        w[sw] = m.ptr if type(m) is self.Mem else m.buf.int_ptr
                        w[sw + 1] = v._off * dt.itemsize
                        w[sw + 2] = 0
                    shape = v.shape
                else:
                    a = np.ascontiguousarray(v, dtype=dt)
                    if a.ndim != r:
                        raise TypeError(f"an array of rank {a.ndim} where rank {r} is expected")
                    if hold is None:
                        hold = []
                    hold.append(a)
                    w[sw] = a.ctypes.data
                    w[sw + 1] = a.nbytes
                    w[sw + 2] = 1
                    shape = a.shape
                for i, d in zip(dims, shape):
                    w[i] = d
            grave, dead = self.grave, self.dead
            nd = 0
            while grave and nd < _DEAD_MAX:
                dead[nd] = grave.pop()
                nd += 1
            self.ctxs.sigint = 1 if _thread.get_ident() == MAIN_THREAD[0] else 0
            code = lib.call(ctx, self.packed, self.lay, self.base, nd, dead)
            while code == _INTERRUPTED:     # Ctrl-C: Python's handlers, then again
                _check_signals()
                code = lib.call(ctx, self.packed, self.lay, self.base, 0, dead)
            if code:
                raise lib.error(ctx, code, self.messages, dev.name)
            results = self.device_results() if self.keep else self.host_results()
        if self.shape == "leaf":
            return results[0]
        if self.shape == "tuple":
            return tuple(results)
        if self.device_arrays:
            return output_keeping_arrays(self.entry.ret, results, np.asarray)
        return self.flat.output(results)

    def device_results(self) -> list:
        """DeviceArrays over the cells' buffers (a kept scalar: a 0-d one)."""
        w, st, Mem, grave, dev = self.words, self.st, self.Mem, self.grave, self.dev
        out = []
        for (dt, r, e), c, get in zip(self.results, self.cells, self.getters):
            if r == 0:
                if self.keep == 2:
                    out.append(dt.type(get(st)))
                else:
                    h = w[c[1]]
                    out.append(device_array(dev, Mem(h & _HANDLE, w[c[2]], dt, 1, grave),
                                            (h & _OFFSET) // dt.itemsize, (), dt))
                continue
            shape = tuple([w[i] for i in c[2:]])
            n = 1
            for d in shape:
                n *= d
            h = w[c[0]]
            out.append(device_array(dev, Mem(h & _HANDLE, w[c[1]], dt, n, grave),
                                    (h & _OFFSET) // dt.itemsize, shape, dt))
        return out

    def host_results(self) -> list:
        """numpy values: arrays downloaded (waits), every handle freed."""
        w, st, lib, ctx = self.words, self.st, self.lib, self.ctx
        out, err = [], None
        for (dt, r, e), c, get in zip(self.results, self.cells, self.getters):
            if r == 0:
                out.append(dt.type(get(st)))
                continue
            h = w[c[0]]
            a = np.empty(tuple([w[i] for i in c[2:]]), dt)
            if a.nbytes and err is None:
                code = lib.download(ctx, h, a.ctypes.data, a.nbytes)
                if code:
                    err = lib.error(ctx, code, self.messages, self.dev.name)
            lib.array_free(ctx, h)
            out.append(a)
        if err is not None:
            raise err
        return out


def _result_shape(ret) -> str:
    """"leaf" (a scalar or an array of scalars: the one flat result),
    "tuple" (a tuple of those), else "built" (FlatCall.output or
    output_keeping_arrays), as caller._result decides."""
    from pyshark.core.types import SArray, SScalar, STuple, stype_base

    def leaf(st):
        return isinstance(st, SScalar) or (isinstance(st, SArray)
                                           and isinstance(stype_base(st), SScalar))
    if leaf(ret):
        return "leaf"
    if isinstance(ret, STuple) and all(leaf(e) for e in ret.elems):
        return "tuple"
    return "built"




class NativeModule:
    """A loaded native opencl module (the LoadedModule of OpenCLBackend.load
    when the library was built): one NativeCaller per entry."""

    def __init__(self, lib_path, dev, abi: dict, messages: list, entries, source,
                 device_arrays: bool = False):
        from pyshark.wrapper.backend import LoadedModule
        LoadedModule.__init__(self, entries, source)
        self.dev = dev
        self.lib = Library(lib_path)
        self.callers = {name: NativeCaller(self.lib, dev, entries[name], spec, messages,
                                           device_arrays)
                        for name, spec in abi.items() if name in entries}

    @property
    def heap(self):
        """{"stride": bytes}: the work-item heaps of this module's kernels on
        its device (as OpenCLModule.heap; grown on HEAP_FULL and kept)."""
        lib, ctx = self.lib, self.lib.context(self.dev)

        class Heap:
            def __getitem__(self, key):
                if key != "stride":
                    raise KeyError(key)
                return int(lib.heap_stride(ctx))
        return Heap()

    def call(self, name: str, canon_args: list):
        try:
            return self.callers[name](canon_args)
        except (DeviceError, DeviceOutOfMemory):
            raise
        except MemoryError as exc:      # an allocation the device refused
            raise out_of_memory(self.dev.name, name, exc) from exc

    def fast_entry(self, name: str, slow):
        """The Wrapper's attribute for entry `name`: fastcall.py's C call
        object over its NativeCaller (the common case in C, the rest through
        `slow`, the Wrapper's own bound call), or None for `slow` itself."""
        from functools import partial

        from .fastcall import entry
        caller = self.callers.get(name)
        return None if caller is None else entry(caller, slow, partial(self.failed, name))

    def failed(self, name: str, code: int):
        """Raises what call() raises for a call of `name` that returned `code`
        (NativeCaller's lib.error, an allocation refused as in call())."""
        c = self.callers[name]
        err = c.lib.error(c.ctx, code, c.messages, c.dev.name)
        if isinstance(err, MemoryError) and not isinstance(err, DeviceError):
            raise out_of_memory(self.dev.name, name, err) from err
        raise err


__all__ = ["Library", "NativeCaller", "NativeMem", "NativeModule", "Ctx", "DEVICE_ERROR",
           "DEVICE_OOM",
           "DEVICE_BUILD"]
