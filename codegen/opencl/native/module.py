"""Loading a native opencl library and calling its entries through ctypes,
as the cpu backend does (codegen/cpu/backend._Caller).

The library gets one context per (library, device), made over pyopencl's
context, device and in-order queue (`pyshark_ocl_ctx_wrap`), so that its
buffers and the Python runtime's are one memory: a DeviceArray made by any
opencl entry (native or Python host code) is taken by any other, and the
process lock (runtime.LOCK) serialises calls on the shared queue. The
context builds the kernels once, from the source embedded in the library.

A call: numpy array arguments are uploaded (`pyshark_ocl_upload`, small
ones sent without waiting), DeviceArray arguments imported
(`pyshark_ocl_import`: one more reference to their cl_mem, no copy); the
entry runs; array results are read into numpy arrays
(`pyshark_ocl_download`) or, with device_arrays=True, wrapped as
DeviceArrays over a pyopencl Buffer of the same cl_mem (retained), so they
die like the Python path's; every handle of the call is then freed
(`pyshark_ocl_array_free`). An error code becomes the exception
marshal.error_from gives (the cpu backend's text), or a DeviceError for
the runtime's own codes (100-102, rt.c).
"""
from __future__ import annotations

import _thread
import ctypes
import threading

import numpy as np

from pyshark.core.types import ScalarType
from pyshark.errors import DeviceBuildError, DeviceError, DeviceOutOfMemory
from pyshark.wrapper.convert import FlatCall
from pyshark.wrapper.device_array import device_array, output_keeping_arrays
from pyshark.wrapper.device_interface import is_device_array

from ...lower import symbol
from ...marshal import error_from

DEVICE_ERROR, DEVICE_OOM, DEVICE_BUILD = 100, 101, 102
_INTERRUPTED = 8                        # kir.ERROR_CODES["KeyboardInterrupt"]
_check_signals = ctypes.pythonapi.PyErr_CheckSignals    # raises what a handler raises
_check_signals.argtypes = []
_check_signals.restype = ctypes.c_int
_MAIN = [threading.main_thread().ident]

_CTYPES = {"i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
           "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "f32": ctypes.c_float,
           "f64": ctypes.c_double, "bool": ctypes.c_uint8}


class Ctx(ctypes.Structure):
    """The first fields of rt.c's context: kir's ctx."""
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
                ("pyshark_ocl_error_message", i64, [vp, ctypes.c_char_p, i64])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
            short = name[len("pyshark_ocl_"):]
            setattr(self, short + "_" if short == "import" else short, fn)
        self.contexts: dict = {}

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
            self.release_held(c)


class NativeCaller:
    """One entry's call path (the cpu backend's _Caller, with device memory)."""

    def __init__(self, lib: Library, dev, entry, spec: dict, messages: list,
                 device_arrays: bool):
        from ..runtime import LOCK, DevMem
        self.lib, self.dev, self.entry, self.messages = lib, dev, entry, messages
        self.LOCK, self.DevMem = LOCK, DevMem
        self.cl = dev.cl
        self.ctx = lib.context(dev)
        self.ctxs = Ctx.from_address(self.ctx)
        self.device_arrays = device_arrays
        self.params = [(np.dtype(ScalarType(e).dtype), r, e) for e, r in spec["params"]]
        self.results = [(np.dtype(ScalarType(e).dtype), r, e) for e, r in spec["results"]]
        self.flat = FlatCall(entry)
        self.shape = _result_shape(entry.ret)
        argtypes = [ctypes.c_void_p]
        for dt, r, e in self.params:
            argtypes += [_CTYPES[e]] if r == 0 else [ctypes.c_uint64] + [ctypes.c_int64] * r
        for dt, r, e in self.results:
            argtypes += [ctypes.c_void_p] if r == 0 else [ctypes.c_void_p, ctypes.c_void_p]
        fn = getattr(lib.lib, symbol(entry.name))
        fn.restype, fn.argtypes = ctypes.c_int32, argtypes
        self.fn = fn

    def handle(self, v, dt: np.dtype, r: int, owned: list):
        """(handle, shape) of an array argument: a DeviceArray imported, any
        other value uploaded."""
        lib, ctx = self.lib, self.ctx
        if is_device_array(v) and not isinstance(v, np.ndarray):
            if v.device is not self.dev:
                raise ValueError(f"a DeviceArray argument lives on the OpenCL device "
                                 f"{v.device.name}, this module runs on {self.dev.name}: pass "
                                 f"np.asarray(value) (a copy through the host)")
            if v.dtype != dt or v.ndim != r:
                raise TypeError(f"a DeviceArray of {v.dtype}[{v.ndim}] where "
                                f"{dt}[{r}] is expected")
            h = lib.import_(ctx, v._mem.buf.int_ptr, v._off * dt.itemsize)
            shape = v.shape
        else:
            a = np.ascontiguousarray(v, dtype=dt)
            if a.ndim != r:
                raise TypeError(f"an array of rank {a.ndim} where rank {r} is expected")
            h = lib.upload(ctx, a.ctypes.data, a.nbytes)
            shape = a.shape
        if not h:
            raise self.lib.error(ctx, self.ctxs.code, self.messages, self.dev.name)
        owned.append(h)
        return h, shape

    def __call__(self, canon_args: list):
        flat = canon_args if self.flat.flat_params else self.flat.args(canon_args)
        lib, ctx, dev = self.lib, self.ctx, self.dev
        with self.LOCK:
            if dev.graveyard:
                dev.drain()
            owned: list = []
            try:
                args: list = [ctx]
                for (dt, r, e), v in zip(self.params, flat):
                    if r == 0:
                        args.append(int(v) if e == "bool" else v)
                    else:
                        h, shape = self.handle(v, dt, r, owned)
                        args.append(h)
                        args += shape
                outs = []
                for dt, r, e in self.results:
                    if r == 0:
                        cell = _CTYPES[e]()
                        outs.append(cell)
                        args.append(ctypes.addressof(cell))
                    else:
                        h = ctypes.c_uint64(0)
                        shape = (ctypes.c_int64 * r)()
                        outs.append((h, shape))
                        args += [ctypes.addressof(h), ctypes.addressof(shape)]
                ctxs = self.ctxs
                ctxs.sigint = 1 if _thread.get_ident() == _MAIN[0] else 0
                code = self.fn(*args)
                while code == _INTERRUPTED:     # Ctrl-C: Python's handlers, then again
                    for (dt, r, e), o in zip(self.results, outs):
                        if r and o[0].value:
                            lib.array_free(ctx, o[0].value)
                            o[0].value = 0
                    _check_signals()
                    code = self.fn(*args)
                if code:
                    raise lib.error(ctx, code, self.messages, dev.name)
                results = []
                for (dt, r, e), o in zip(self.results, outs):
                    if r == 0:
                        results.append(dt.type(o.value))
                        continue
                    h = o[0].value
                    if self.device_arrays:
                        results.append(self.device_result(h, tuple(o[1]), dt))
                    else:
                        owned.append(h)
                        results.append(self.result(h, tuple(o[1]), dt))
            finally:
                for h in owned:
                    lib.array_free(ctx, h)
        if self.shape == "leaf":
            return results[0]
        if self.shape == "tuple":
            return tuple(results)
        if self.device_arrays:
            return output_keeping_arrays(self.entry.ret, results, np.asarray)
        return self.flat.output(results)

    def device_result(self, h: int, shape: tuple, dt: np.dtype):
        """A DeviceArray over a result (its cl_mem as a pyopencl Buffer, so
        that it dies as the Python path's do; the handle is freed)."""
        lib, ctx = self.lib, self.ctx
        off = ctypes.c_int64(0)
        lib.buffer(ctx, h, ctypes.byref(off))
        mem = lib.detach(ctx, h)
        buf = self.cl.Buffer.from_int_ptr(mem, retain=False)
        n = 1
        for d in shape:
            n *= d
        return device_array(self.dev, self.DevMem(buf, dt, n), off.value // dt.itemsize, shape, dt)

    def result(self, h: int, shape: tuple, dt: np.dtype):
        lib, ctx = self.lib, self.ctx
        out = np.empty(shape, dt)
        if out.nbytes:
            code = lib.download(ctx, h, out.ctypes.data, out.nbytes)
            if code:
                raise lib.error(ctx, code, self.messages, self.dev.name)
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
            raise DeviceOutOfMemory(f"on the OpenCL device {self.dev.name}, entry {name!r}: "
                                    f"{exc}; free DeviceArrays or call Wrapper.close(), use "
                                    f"smaller inputs, or Wrapper(backend='cpu')",
                                    device=self.dev.name) from exc


__all__ = ["Library", "NativeCaller", "NativeModule", "Ctx", "DEVICE_ERROR", "DEVICE_OOM",
           "DEVICE_BUILD"]
