"""What running an OpenCL module needs: the device, its memory, launches.

- The device: PYOPENCL_CTX when set (pyopencl's own choice, non-interactive);
  otherwise the first GPU of any platform, else the first device. One
  context, one in-order queue and one memory pool per process (`device()`).
  Calls are serialised by one lock (kernel arguments are set, then the
  kernel is enqueued: two threads must not interleave that).
- NumThreads (the number of chunks the lowering's parallel reduce/scan/
  filter/histogram split into) is compute units * 64 (PYSHARK_OPENCL_NTHREADS
  overrides it): enough chunks to occupy a GPU's compute units a little
  while keeping the host's sequential combine of the chunk partials (one
  element copy each) short. PoCL on 2 cores: 128.
- Launches use one fixed work-group size (min(256, what the device and the
  kernel allow)) and round the global size up to a multiple of it; the
  kernel guards `i < n`. A fixed size matters on PoCL, which compiles a
  kernel again for every new work-group size (TOOLCHAIN.md).
- Memory: device buffers come from pyopencl's MemoryPool (binned; a freed
  block is reused by the next allocation of its bin). A `DevMem` is one
  allocation; a kir pointer is (DevMem or numpy array, element offset).
  Blocks are at least 64 bytes (OpenCL has no empty buffers: count <= 0
  allocates a minimal block, as kir.py says).
- Program binaries: built once per process and source (`Device.program`);
  PoCL caches binaries on disk itself ($XDG_CACHE_HOME/pocl/kcache).
"""
from __future__ import annotations

import hashlib
import os
import threading
from typing import Optional

import numpy as np

_DTYPES = {k: np.dtype(v) for k, v in (
    ("i8", np.int8), ("i16", np.int16), ("i32", np.int32), ("i64", np.int64),
    ("u8", np.uint8), ("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64),
    ("f32", np.float32), ("f64", np.float64), ("bool", np.bool_))}

_MIN_BLOCK = 64
_MAX_WG = 256
_ERR_INTS = 12          # int code, int msg, long args[4]

_lock = threading.Lock()
_device: Optional["Device"] = None
_failure: Optional[str] = None


class NoDevice(RuntimeError):
    """No OpenCL device can be used here."""


def _choose():
    import pyopencl as cl
    if os.environ.get("PYOPENCL_CTX"):
        ctx = cl.create_some_context(interactive=False)
        return ctx, ctx.devices[0]
    devices = []
    for p in cl.get_platforms():
        try:
            devices += p.get_devices()
        except cl.Error:            # a platform without devices
            pass
    if not devices:
        raise NoDevice("no OpenCL device found")
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    dev = (gpus or devices)[0]
    return cl.Context([dev]), dev


def device() -> "Device":
    """The process's device (created on first use); NoDevice if none."""
    global _device, _failure
    if _device is None:
        with _lock:
            if _device is None:
                if _failure is not None:
                    raise NoDevice(_failure)
                try:
                    _device = Device(*_choose())
                except Exception as exc:  # no pyopencl, no platform, no device
                    _failure = f"{type(exc).__name__}: {exc}"
                    raise NoDevice(_failure) from exc
    return _device


def available() -> bool:
    try:
        device()
        return True
    except NoDevice:
        return False


class DevMem:
    """One device allocation of `count` elements of `dtype`."""
    __slots__ = ("buf", "dtype", "count", "__weakref__")

    def __init__(self, buf, dtype: np.dtype, count: int):
        self.buf, self.dtype, self.count = buf, dtype, count

    def __repr__(self) -> str:
        return f"DevMem({self.dtype}[{self.count}])"


class Device:
    def __init__(self, ctx, dev):
        import pyopencl as cl
        import pyopencl.tools as cl_tools
        self.cl = cl
        self.ctx, self.dev = ctx, dev
        self.name = f"{dev.platform.name} / {dev.name}"
        self.queue = cl.CommandQueue(ctx)
        self.pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(self.queue))
        env = os.environ.get("PYSHARK_OPENCL_NTHREADS")
        self.nthreads = np.int64(int(env) if env else max(1, dev.max_compute_units) * 64)
        self.wg = max(1, min(_MAX_WG, dev.max_work_group_size))
        self.max_alloc = int(dev.max_mem_alloc_size)
        self.fp64 = bool(dev.double_fp_config) or "cl_khr_fp64" in dev.extensions
        opts = [f"-DPYSHARK_NUM_THREADS={int(self.nthreads)}L"]
        if dev.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
            opts.append("-cl-fp32-correctly-rounded-divide-sqrt")
        self.build_options = opts
        self.lock = threading.RLock()
        self.err = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, _ERR_INTS * 4)
        self._zero_err()
        self.programs: dict = {}

    def kernel_max_wg(self, knl) -> int:
        """The largest work-group this device runs kernel `knl` with."""
        return int(knl.get_work_group_info(self.cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                           self.dev))

    def target(self):
        """The lowering's target record for this device (codegen/target.py)."""
        from ..target import gpu_target
        dev = self.dev
        return gpu_target(max_group=int(dev.max_work_group_size),
                          local_mem=int(dev.local_mem_size),
                          atomics64="cl_khr_int64_base_atomics" in dev.extensions)

    def _zero_err(self):
        self.cl.enqueue_copy(self.queue, self.err, np.zeros(_ERR_INTS, np.int32))

    def program(self, source: str, kernel_names: list, extra_options=()) -> list:
        """[(cl.Kernel, work-group size)] for the named kernels of a program,
        built once per process."""
        cl = self.cl
        opts = self.build_options + list(extra_options)
        key = (hashlib.sha256(source.encode()).hexdigest(), tuple(opts))
        with self.lock:
            found = self.programs.get(key)
            if found is None:
                prg = cl.Program(self.ctx, source).build(options=opts)
                found = []
                for name in kernel_names:
                    k = cl.Kernel(prg, name)
                    wg = k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.dev)
                    found.append((k, max(1, min(self.wg, wg))))
                self.programs[key] = found
            return found


class Call:
    """The runtime of one entry call (`rt` in the generated host code)."""

    def __init__(self, dev: Device, kernels: list):
        self.dev = dev
        self.cl = dev.cl
        self.queue = dev.queue
        self.nthreads = dev.nthreads
        self.kernels = kernels          # [(cl.Kernel, wg, kinds, can_fail)]
        self.owned: dict = {}           # id -> DevMem allocated in this call, not freed

    # -- memory ----------------------------------------------------------------
    def alloc(self, count, kind: str):
        """A pointer to a fresh block of max(count, 1) elements; None when the
        size overflows or the device cannot allocate it."""
        n = max(int(count), 1)
        if kind == "ptr":
            if n > (1 << 28):
                return None
            return (np.full(n, None, dtype=object), 0)      # arrays of pointers: host memory
        dt = _DTYPES[kind]
        if n > ((1 << 63) - _MIN_BLOCK) // dt.itemsize:
            return None
        nbytes = -(-(n * dt.itemsize) // _MIN_BLOCK) * _MIN_BLOCK
        if nbytes > self.dev.max_alloc:
            return None
        try:
            buf = self.dev.pool.allocate(nbytes)
        except (self.cl.Error, MemoryError):
            try:
                self.dev.pool.free_held()
                buf = self.dev.pool.allocate(nbytes)
            except (self.cl.Error, MemoryError):
                return None
        mem = DevMem(buf, dt, n)
        self.owned[id(mem)] = mem
        return (mem, 0)

    def free(self, p):
        if p is None:
            return
        mem = p[0]
        if isinstance(mem, DevMem) and self.owned.pop(id(mem), None) is not None:
            mem.buf.release()

    def release(self):
        """Returns every block this call still holds to the pool."""
        for mem in self.owned.values():
            mem.buf.release()
        self.owned.clear()

    def upload(self, a: np.ndarray):
        """A pointer to a device copy of a contiguous array."""
        p = self.alloc(a.size, _kind(a.dtype))
        if p is None:
            raise MemoryError(f"cannot allocate {a.size} elements of {a.dtype} on the device")
        if a.size:
            self.cl.enqueue_copy(self.queue, p[0].buf, a)
        return p

    def download(self, p, shape: tuple, dtype: np.dtype) -> np.ndarray:
        out = np.empty(shape, dtype)
        if out.size:
            mem, off = p
            if isinstance(mem, DevMem):
                self.cl.enqueue_copy(self.queue, out, mem.buf, src_offset=off * dtype.itemsize)
            else:
                out.reshape(-1)[...] = mem[off:off + out.size]
        return out

    def load(self, p, i):
        mem, off = p
        k = off + int(i)
        if not isinstance(mem, DevMem):
            return mem[k]
        out = np.empty(1, mem.dtype)
        self.cl.enqueue_copy(self.queue, out, mem.buf, src_offset=k * mem.dtype.itemsize)
        return out[0]

    def store(self, p, i, v):
        mem, off = p
        k = off + int(i)
        if not isinstance(mem, DevMem):
            mem[k] = v
            return
        self.cl.enqueue_copy(self.queue, mem.buf, np.array([v], dtype=mem.dtype),
                             dst_offset=k * mem.dtype.itemsize)

    def copy(self, dst, src, count):
        n = int(count)
        if n <= 0:
            return
        (dm, do), (sm, so) = dst, src
        cl, q = self.cl, self.queue
        if isinstance(dm, DevMem) and isinstance(sm, DevMem):
            size = dm.dtype.itemsize
            cl.enqueue_copy(q, dm.buf, sm.buf, byte_count=n * size, src_offset=so * size,
                            dst_offset=do * size)
        elif isinstance(dm, DevMem):
            cl.enqueue_copy(q, dm.buf, np.ascontiguousarray(sm[so:so + n]),
                            dst_offset=do * dm.dtype.itemsize)
        elif isinstance(sm, DevMem):
            tmp = np.empty(n, sm.dtype)
            cl.enqueue_copy(q, tmp, sm.buf, src_offset=so * sm.dtype.itemsize)
            dm[do:do + n] = tmp
        else:
            dm[do:do + n] = sm[so:so + n]

    # -- launches ----------------------------------------------------------------
    def launch(self, k: int, count, args: tuple):
        """Runs kernel k over `count` work-items; (code, msg, args) when a
        work-item failed (the first failure), else None."""
        n = int(count)
        if n <= 0:
            return None
        knl, wg, kinds, can_fail = self.kernels[k]
        cl_args = [np.int64(n), self.dev.err]
        for kind, a in zip(kinds, args):
            if kind == "ptr":
                mem, off = a
                if not isinstance(mem, DevMem):
                    raise RuntimeError("a kernel captured host memory (a compiler bug)")
                cl_args += [mem.buf, np.int64(off)]
            elif kind == "bool":
                cl_args.append(np.uint8(a))
            else:
                cl_args.append(_DTYPES[kind].type(a))
        knl.set_args(*cl_args)
        self.cl.enqueue_nd_range_kernel(self.queue, knl, (-(-n // wg) * wg,), (wg,))
        if not can_fail:
            return None
        err = np.empty(_ERR_INTS, np.int32)
        self.cl.enqueue_copy(self.queue, err, self.dev.err)
        if err[0] == 0:
            return None
        self.dev._zero_err()
        return (int(err[0]), int(err[1]), tuple(int(a) for a in err[2:10].view(np.int64)))


def _kind(dt: np.dtype) -> str:
    for k, v in _DTYPES.items():
        if v == dt:
            return k
    raise TypeError(f"no kernel type for {dt}")


__all__ = ["device", "available", "Device", "DevMem", "Call", "NoDevice"]
