"""What running an OpenCL module needs: the device, its memory, launches.

- The device: `device(spec)`. spec None: PYOPENCL_CTX when set (pyopencl's
  own choice, non-interactive), otherwise the first usable GPU of any
  platform, else the first usable device (devices.py; usable: probe.py). spec "P:D" is platform P's device D (indexes as
  `pyshark devices` lists them), "P" platform P's first device, anything
  else a case-insensitive substring of "platform / device name". One
  context, in-order queue, memory pool and error buffer per device, made
  on first use and kept for the process.
- One process-wide lock (`LOCK`, reentrant) serialises everything that
  touches a queue, a kernel's arguments or a pool: whole entry calls,
  DeviceArray.get, freeing held memory.
- NumThreads (the number of chunks the lowering's multicore reduce/scan/
  filter/histogram split into) is compute units * 64 (PYSHARK_OPENCL_NTHREADS
  overrides it). PoCL on 2 cores: 128.
- Launches use one fixed work-group size (min(256, what the device and the
  kernel allow), or a work-group kernel's own size) and round the global
  size up to a multiple of it; the kernel guards `i < n`. A fixed size
  matters on PoCL, which compiles a kernel again for every new work-group
  size.
- Memory: device buffers come from pyopencl's MemoryPool (binned; a freed
  block is reused by the next allocation of its bin). A `DevMem` is one
  allocation; a kir pointer is (DevMem or numpy array, element offset).
  Blocks are at least 64 bytes (OpenCL has no empty buffers: count <= 0
  allocates a minimal block, as kir.py says). Every block a call allocates
  goes back to the pool when the call ends, except those that became
  DeviceArrays: theirs go back when the DeviceArray is garbage-collected
  (at the next call, or the next `get`; DevMem.__del__ only queues them, so
  no pool operation ever runs outside the lock). The pool's held (free)
  blocks are released to the driver when an allocation fails (then it is
  tried again), when they exceed `hold_limit` at the end of a call
  (PYSHARK_OPENCL_POOL_HOLD bytes, default a quarter of the device memory,
  at least 64 MiB), and by `release_held()` / `Wrapper.close()`.
- Program binaries: built once per process and source (`Device.program`);
  PoCL caches binaries on disk itself ($XDG_CACHE_HOME/pocl/kcache), and so
  does NVIDIA's driver (~/.nv/ComputeCache).

Host round trips (`Call`). Launches are never waited for, and a launch
whose kernel can fail does not read the error buffer back at once: the
check is deferred to the points where the host needs device data (a Load
the host mirror cannot serve, a copy to host memory, a host Fail or failed
Alloc, and the end of the call, where it is read together with the
results). That is sound: until the host reads device data, nothing the
host does depends on what a kernel computed, so a failed kernel can only
have affected later kernels, and every later kernel is bounds-checked
(unsafe=True drops the checks, and with them the errors); a later kernel's
failure cannot hide the first one, because a failure is recorded with
atomic_cmpxchg(err, 0, code) and the in-order queue runs kernels in launch
order, so the first failure wins; and the host reports the device's error
before any host Fail that follows it. (A later kernel can spend time on
garbage inputs, e.g. a loop bound read from memory a failed kernel left
unwritten; it cannot write outside its buffers.)
A host Load of device memory reads the whole buffer when it is small
(MIRROR_BYTES) and serves later loads from that host mirror until a
launch that captures the buffer, a copy into it or its free; host Stores
into a mirrored buffer write the mirror and are sent as one write before
the next launch, copy or download (so the chunk loops of the multicore
algorithms cost one read and one write). Small inputs are copied and sent
without waiting; an input over UPLOAD_COPY_BYTES is sent from the caller's
array with a blocking write.

Ctrl-C. The host waits for the device through waits.wait, which the main
thread's KeyboardInterrupt can leave at once (the host code is Python, so
Ctrl-C between launches raises there anyway). OpenCL cannot cancel
commands: the kernels a call had enqueued still run, and the next call's
commands queue behind them, on the same in-order queue (so the blocks the
interrupted call returned to the pool are reused only after its kernels).
So that the device is never far behind, a call waits for its launch
AHEAD back once 2 * AHEAD of its launches are unfinished. The interrupted
call's error buffer is cleared behind its kernels without waiting
(Call.release), and nothing waits for its transfers. On NVIDIA's driver
(an H200) a non-blocking copy and an event wait cost 9-15 us more per call
than a blocking copy; with blocking copies on a GPU (Device.interruptible
False) Ctrl-C of a loop of launches took 24 s there in one run (3.3-8.8 s
with these waits), so the waits stay interruptible everywhere until that
is understood (docs/opencl-backend.md, "Ctrl-C").
"""
from __future__ import annotations

import hashlib
import os
import threading
from typing import Optional

import numpy as np

from .devices import NoDevice, choose_device, default_index, platforms  # noqa: F401 (re-exported)
from . import profile as _profile
from .failures import device_errors
from .waits import wait

_DTYPES = {k: np.dtype(v) for k, v in (
    ("i8", np.int8), ("i16", np.int16), ("i32", np.int32), ("i64", np.int64),
    ("u8", np.uint8), ("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64),
    ("f32", np.float32), ("f64", np.float64), ("bool", np.bool_))}

_MIN_BLOCK = 64
_MAX_WG = 256
_ERR_INTS = 12          # int code, int msg, long args[4]
HEAP_STRIDE = 64 << 10  # first work-item heap of a kernel that allocates (grown on demand)
MIRROR_BYTES = 64 * 1024            # a host Load reads a buffer this small whole
UPLOAD_COPY_BYTES = 1 << 20         # inputs this small are copied, then sent without waiting
_MAX_PENDING = 256                  # transfers in flight before a queue.finish()
AHEAD = 64                          # see "Ctrl-C" above

#: the process-wide lock around every queue, kernel and pool (reentrant)
LOCK = threading.RLock()
_devices: dict = {}                 # cl.Device.int_ptr -> Device
_default: Optional["Device"] = None
_failures: dict = {}                # spec -> why it has no device


class KernelFailure(Exception):
    """A kernel reported an error (code, message index, args): raised by a
    host Load that finds one, caught by Call.run."""

    def __init__(self, err: tuple):
        super().__init__(err)
        self.err = err


# -- choosing a device (devices.py: the platforms, the default, a spec) ----------------


def device(spec: Optional[str] = None) -> "Device":
    """The Device for a spec (None: the default one), created on first use;
    NoDevice if there is none."""
    global _default
    if spec is None and _default is not None:
        return _default
    with LOCK:
        key = spec or None
        if key in _failures:
            raise NoDevice(_failures[key])
        try:
            d = choose_device(key)
            found = _devices.get(d.int_ptr)
            if found is None:
                found = _devices[d.int_ptr] = Device(d)
        except NoDevice as exc:
            if key is None:
                _failures[key] = str(exc)
            raise
        except Exception as exc:        # no pyopencl, no loader, a driver failing to list
            from .devices import WHAT_TO_DO
            _failures[key] = (f"OpenCL cannot be used here ({type(exc).__name__}: "
                              f"{str(exc).strip()[:300]}); {WHAT_TO_DO}")
            raise NoDevice(_failures[key]) from exc
        if key is None:
            _default = found
        return found


def available(spec: Optional[str] = None) -> bool:
    try:
        device(spec)
        return True
    except NoDevice:
        return False


def release_held() -> None:
    """Releases the held (free) blocks of every device's memory pool."""
    with LOCK:
        for d in list(_devices.values()):
            d.release_held()


# -- memory ---------------------------------------------------------------------------


class DevMem:
    """One device allocation of `count` elements of `dtype`. `home`: the
    Device whose pool gets the block back when this dies (set once it backs
    a DeviceArray; a call's other blocks are released by the call)."""
    __slots__ = ("buf", "dtype", "count", "home", "zeroed", "__weakref__")

    def __init__(self, buf, dtype: np.dtype, count: int, zeroed: bool = False):
        self.buf, self.dtype, self.count = buf, dtype, count
        self.home = None
        self.zeroed = zeroed        # a block of the Device's zeroed pool (Call.alloc_zeroed)

    def __del__(self):
        # any thread, any time (even at interpreter exit): only queue the block
        home = self.home
        if home is not None:
            try:
                home.graveyard.append(self.buf)
            except Exception:
                pass

    def __repr__(self) -> str:
        return f"DevMem({self.dtype}[{self.count}])"


class DeviceScalar:
    """An entry's scalar result left in device memory (Call.load_result):
    element `off` of `mem`."""
    __slots__ = ("mem", "off")

    def __init__(self, mem: DevMem, off: int):
        self.mem, self.off = mem, off


class Device:
    def __init__(self, dev):
        import pyopencl as cl
        import pyopencl.tools as cl_tools
        self.cl = cl
        self.dev = dev
        self.ctx = cl.Context([dev])
        self.name = f"{dev.platform.name} / {dev.name}"
        # PYSHARK_OPENCL_PROFILE=1: time every launch (profile.py prints the table at exit)
        self.profile = _profile.enabled()
        self.queue = (cl.CommandQueue(self.ctx, properties=cl.command_queue_properties
                                      .PROFILING_ENABLE) if self.profile
                      else cl.CommandQueue(self.ctx))
        self.pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(self.queue))
        # waits that Ctrl-C can leave (waits.py); see "Ctrl-C" above for why
        # a GPU keeps them too although they cost it some microseconds a call
        self.interruptible = True
        env = os.environ.get("PYSHARK_OPENCL_NTHREADS")
        self.nthreads = np.int64(int(env) if env else max(1, dev.max_compute_units) * 64)
        self.wg = max(1, min(_MAX_WG, dev.max_work_group_size))
        self.compute_units = max(1, int(dev.max_compute_units))
        # the smallest work-group narrow_group makes (a tuning knob; the
        # default 8 was measured on the H200, docs/opencl-backend.md)
        env = os.environ.get("PYSHARK_OPENCL_MIN_GROUP")
        self.min_group = max(1, int(env)) if env else 8
        self.max_alloc = int(dev.max_mem_alloc_size)
        # the most one launch's work-item heaps may take (emit_cl.heap_alloc)
        self.heap_budget = min(self.max_alloc, max(64 << 20, int(dev.global_mem_size) // 4))
        env = os.environ.get("PYSHARK_OPENCL_POOL_HOLD")
        self.hold_limit = int(env) if env else max(64 << 20, int(dev.global_mem_size) // 4)
        self.fp64 = bool(dev.double_fp_config) or "cl_khr_fp64" in dev.extensions
        opts = [f"-DPYSHARK_NUM_THREADS={int(self.nthreads)}L"]
        if dev.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
            opts.append("-cl-fp32-correctly-rounded-divide-sqrt")
        self.build_options = opts
        self.lock = LOCK
        self.err = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, _ERR_INTS * 4)
        self._zeros = np.zeros(_ERR_INTS, np.int32)
        cl.enqueue_copy(self.queue, self.err, self._zeros)
        self.programs: dict = {}
        self.launchers: dict = {}       # (id(kernel), wg, kinds, can_fail) -> _Launcher
        self.pending: list = []         # transfers in flight (pyopencl NannyEvents)
        self.launched: list = []        # launches perhaps unfinished (throttled: AHEAD)
        self.graveyard: list = []       # buffers of dead DeviceArrays, freed under the lock
        self.zeroed: list = []          # zeroed blocks not in use (Call.alloc_zeroed)

    def __repr__(self) -> str:
        return f"<OpenCL device {self.name}>"

    def kernel_max_wg(self, knl) -> int:
        """The largest work-group this device runs kernel `knl` with."""
        return int(knl.get_work_group_info(self.cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                           self.dev))

    def target(self):
        """The lowering's target record for this device (codegen/target.py)."""
        from ..target import gpu_target
        dev = self.dev
        limit = int(dev.max_work_group_size)
        env = os.environ.get("PYSHARK_OPENCL_GROUP")       # a tuning knob (docs/opencl-backend.md)
        if env:
            limit = min(limit, max(1, int(env)))
        # The single-pass scan (decoupled look-back, gpu/segscan.py) needs
        # 64-bit atomics (flag and value in one word); PYSHARK_OPENCL_LOOKBACK=0
        # turns it off (reduce-then-scan everywhere).
        lookback = os.environ.get("PYSHARK_OPENCL_LOOKBACK", "1") == "1"
        # Kernel extraction (codegen/opt/flatten.py); PYSHARK_OPENCL_FLATTEN=0
        # turns it off (LocVolCalib then keeps only its outer parallelism).
        flatten = os.environ.get("PYSHARK_OPENCL_FLATTEN", "1") == "1"
        # iterations per work-item of streaming kernels (kir_passes/coarsen.py; 1: off)
        coarsen = int(os.environ.get("PYSHARK_OPENCL_COARSEN", "4"))
        # work-items of a pass over an array, per unit of NumThreads (gpu/group.group_count)
        fill = int(os.environ.get("PYSHARK_OPENCL_FILL", "32"))
        # maps of several SOACs narrower than this are distributed (flatten.py, "Versions")
        below = int(os.environ.get("PYSHARK_OPENCL_DISTRIBUTE_BELOW", "8192"))
        return gpu_target(max_group=limit,
                          local_mem=int(dev.local_mem_size),
                          atomics64="cl_khr_int64_base_atomics" in dev.extensions,
                          lookback=lookback, flatten=flatten, coarsen=coarsen, fill=fill,
                          distribute_below=below)

    def program(self, source: str, kernel_names: list, extra_options=()) -> list:
        """[(cl.Kernel, work-group size)] for the named kernels of a program,
        built once per process."""
        cl = self.cl
        opts = self.build_options + list(extra_options)
        key = (hashlib.sha256(source.encode()).hexdigest(), tuple(opts))
        with self.lock:
            found = self.programs.get(key)
            if found is None:
                prg = self._build(source, opts)
                found = []
                for name in kernel_names:
                    k = cl.Kernel(prg, name)
                    wg = k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.dev)
                    found.append((k, max(1, min(self.wg, wg))))
                self.programs[key] = found
            return found

    def _build(self, source: str, opts: list):
        """The built cl.Program; DeviceBuildError with the driver's log when
        the driver cannot build it."""
        from pyshark.errors import DeviceBuildError
        cl = self.cl
        prg = cl.Program(self.ctx, source)
        try:
            return prg.build(options=opts)
        except cl.Error as exc:
            try:
                log = prg.get_build_info(self.dev, cl.program_build_info.LOG)
            except cl.Error:
                log = str(exc)
            raise DeviceBuildError(
                f"the OpenCL driver of {self.name} could not build PyShark's kernels "
                f"({str(exc).strip().splitlines()[0] if str(exc).strip() else 'no reason given'}); "
                f"update the runtime (pyshark setup-opencl), choose another device, or use "
                f"Wrapper(backend='cpu')", device=self.name, log=log) from exc

    # -- memory (under the lock) -----------------------------------------------------

    def allocate(self, nbytes: int):
        """A pooled buffer of nbytes, or None when the device cannot give it
        (after releasing the pool's held blocks and trying again)."""
        cl = self.cl
        if self.graveyard:
            self.drain()
        try:
            return self.pool.allocate(nbytes)
        except (cl.Error, MemoryError):
            try:
                self.release_held()
                return self.pool.allocate(nbytes)
            except (cl.Error, MemoryError):
                return None

    def take_zeroed(self, nbytes: int):
        """A block of at least nbytes, all zero: one the kernels gave back
        zeroed (kir.Alloc.zeroed), or a new one, cleared once."""
        for k, buf in enumerate(self.zeroed):
            if buf.size >= nbytes:
                return self.zeroed.pop(k)
        cl = self.cl
        try:
            buf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, nbytes)
            self.keep(cl.enqueue_copy(self.queue, buf, np.zeros(nbytes, np.uint8),
                                      is_blocking=False))
        except (cl.Error, MemoryError):
            return None
        return buf

    def drain(self):
        """Returns the blocks of dead DeviceArrays to the pool."""
        while self.graveyard:
            buf = self.graveyard.pop()
            try:
                buf.release()
            except Exception:       # already released
                pass

    def release_held(self):
        """Returns every held (free) block of the pool to the driver."""
        with self.lock:
            self.drain()
            self.sync()
            self.pool.free_held()

    def held_bytes(self) -> int:
        return int(self.pool.managed_bytes) - int(self.pool.active_bytes)

    def trim(self):
        """Releases the held blocks when they exceed hold_limit."""
        if self.held_bytes() > self.hold_limit:
            self.pool.free_held()

    def sync(self):
        """Waits for the queue; transfers in flight end."""
        if self.interruptible:
            wait(self, self.cl.enqueue_marker(self.queue))
        else:
            self.queue.finish()
        self.passed()

    def copy_and_wait(self, dest, src, **kw) -> None:
        """enqueue_copy(dest, src) and wait for it: through waits.wait, which
        Ctrl-C can leave (interruptible), else as a blocking copy."""
        if self.interruptible:
            wait(self, self.cl.enqueue_copy(self.queue, dest, src, is_blocking=False, **kw))
        else:
            self.cl.enqueue_copy(self.queue, dest, src, is_blocking=True, **kw)

    def passed(self):
        """The queue is past every command so far (after a wait for the last)."""
        self.pending.clear()
        self.launched.clear()

    def keep(self, event):
        """Keeps a non-blocking transfer's event (pyopencl waits for it when
        the event dies) until the queue is known to be past it."""
        self.pending.append(event)
        if len(self.pending) > _MAX_PENDING:
            self.sync()

    def read(self, mem: DevMem, off: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """A host copy of device memory (waits for it)."""
        out = np.empty(shape, dtype)
        if out.size:
            self.copy_and_wait(out, mem.buf, src_offset=off * dtype.itemsize)
            self.passed()
        return out

    # -- the device-array interface (wrapper/device_interface.ArrayDevice) ---------

    def read_array(self, mem: DevMem, off: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """read() under the process lock, a driver failure raised as a
        DeviceError (DeviceArray.get)."""
        with LOCK, device_errors(self.name, "copying a DeviceArray to the host"):
            return self.read(mem, off, shape, dtype)

    def adopt(self, mem: DevMem) -> None:
        """A block that backs DeviceArrays: DevMem.__del__ queues it for
        this device's pool (drained under the lock by the next call)."""
        mem.home = self

    def launcher(self, knl, wg: int, kinds: tuple, can_fail: bool,
                 heap: bool = False, free: bool = False) -> "_Launcher":
        key = (id(knl), wg, kinds, can_fail, heap, free)
        found = self.launchers.get(key)
        if found is None:
            found = self.launchers[key] = _Launcher(self, knl, wg, kinds, can_fail, heap, free)
        return found


def narrow_group(wg: int, n: int, units: int, least: int) -> int:
    """The work-group size for n work-items of a kernel that may take any:
    halve wg (not below `least`, Device.min_group) while the groups would
    not cover half of the `units` compute units. On a GPU a work-group runs on one compute unit,
    so LocVolCalib's 512 tridiagonal solves in groups of 256 ran on 2 of the
    H200's 132 SMs, each SM's load/store units serialising the work-items'
    scattered reads; groups of 8 spread them over 64 (4096 solves stay in
    groups of 32, on 128 SMs: half-empty warps on every SM were slower).
    Measured on the H200: docs/opencl-backend.md, "Work-group sizes"."""
    while wg // 2 >= least and 2 * -(-n // wg) < units:
        wg //= 2
    return wg


class _Launcher:
    """One kernel, its scalar argument types set once (pyopencl then packs
    the arguments and enqueues in one call, a few microseconds)."""
    __slots__ = ("knl", "wg", "kinds", "can_fail", "ptrs", "conv", "err", "queue", "heap",
                 "narrow_below")

    def __init__(self, dev: Device, knl, wg: int, kinds: tuple, can_fail: bool,
                 heap: bool = False, free: bool = False):
        self.knl, self.wg, self.kinds, self.can_fail = knl, wg, kinds, can_fail
        self.heap = heap
        # A kernel free to take any work-group size (one work-item per
        # element, no reqd_work_group_size) launched over fewer than
        # `narrow_below` work-items gets smaller groups (narrow_group), so
        # that they reach every compute unit.
        self.narrow_below = wg * dev.compute_units if free else 0
        dtypes = [np.int64, None] + ([None, np.uint64] if heap else [])
        conv = []
        for kind in kinds:
            if kind == "ptr":
                dtypes += [None, np.int64]
                conv.append(None)
            elif kind == "bool":
                dtypes.append(np.uint8)
                conv.append(int)
            else:
                dtypes.append(_DTYPES[kind])
                conv.append(None)
        knl.set_scalar_arg_dtypes(dtypes)
        self.ptrs = tuple(i for i, kind in enumerate(kinds) if kind == "ptr")
        self.conv = tuple(conv)
        self.err = dev.err
        self.queue = dev.queue


class Call:
    """The runtime of one entry call (`rt` in the generated host code).
    Use under LOCK; `run(fn, args)` runs a host function, `release()`
    (always, in a finally) ends the call."""

    __slots__ = ("dev", "heap", "cl", "queue", "nthreads", "kernels", "owned", "mirrors",
                 "dirty", "unchecked", "keep_scalars")

    def __init__(self, dev: Device, kernels: list, heap: dict | None = None):
        self.dev = dev
        # {"stride": bytes}: the work-item heap of kernels that allocate,
        # shared by the calls of one module (grown by grow_heap, kept)
        self.heap = heap if heap is not None else {"stride": HEAP_STRIDE}
        self.cl = dev.cl
        self.queue = dev.queue
        self.nthreads = dev.nthreads
        # _Launchers, or (cl.Kernel, wg, kinds, can_fail) to make them from
        self.kernels = (kernels if not kernels or isinstance(kernels[0], _Launcher)
                        else [dev.launcher(*k) for k in kernels])
        self.owned: dict = {}           # id -> DevMem allocated in this call, not freed
        self.mirrors: dict = {}         # DevMem -> host copy of its elements
        self.dirty: dict = {}           # DevMem -> (lo, hi): the mirror's part to send
        self.unchecked = False          # a kernel that can fail ran since the last check
        self.keep_scalars = False       # load_result leaves device elements there (caller.py)
        if dev.graveyard:
            dev.drain()

    # -- running ----------------------------------------------------------------------
    def run(self, fn, args: list, downloads: tuple = ()):
        """Calls host function fn(rt, *args) and checks the device's errors:
        (None, [arrays]) on success, ((code, msg, args), None) on the first
        failure. `downloads` are (pointer, shape, dtype) of results to copy
        back, read in the same wait as the error buffer. A pointer that a
        host array should come from is read only after fn returns."""
        try:
            err = fn(self, *args)
        except KernelFailure as f:
            return f.err, None
        if err is not None:
            return err, None
        if not (downloads or self.unchecked or self.dirty):
            return None, ()
        return self.finish(downloads)

    def finish(self, downloads=()):
        self._flush()
        cl, q = self.cl, self.queue
        errbuf = None
        if self.unchecked:
            errbuf = np.empty(_ERR_INTS, np.int32)
            ev = cl.enqueue_copy(q, errbuf, self.dev.err, is_blocking=False)
        outs = []
        for p, shape, dtype in downloads:
            outs.append(self.download(p, shape, dtype))
        if errbuf is not None:
            wait(self.dev, ev)
            self.unchecked = False
            self.dev.passed()
            err = self._error(errbuf)
            if err is not None:
                return err, None
        return None, outs

    def _error(self, errbuf):
        if errbuf[0] == 0:
            return None
        self.dev.keep(self.cl.enqueue_copy(self.queue, self.dev.err, self.dev._zeros,
                                           is_blocking=False))
        self.dev.sync()
        return (int(errbuf[0]), int(errbuf[1]), tuple(int(a) for a in errbuf[2:10].view(np.int64)))

    def check(self):
        """Raises KernelFailure if a kernel failed (waits for the queue)."""
        if self.unchecked:
            errbuf = np.empty(_ERR_INTS, np.int32)
            self.dev.copy_and_wait(errbuf, self.dev.err)
            self.unchecked = False
            self.dev.passed()
            err = self._error(errbuf)
            if err is not None:
                raise KernelFailure(err)

    def fail(self, code, msg, args):
        """A host Fail: the error of an earlier kernel comes first."""
        self.check()
        return (code, msg, args)

    # -- memory ----------------------------------------------------------------------
    def alloc(self, count, kind: str):
        """A pointer to a fresh block of max(count, 1) elements; None when the
        size overflows or the device cannot allocate it."""
        n = int(count)
        if n < 1:
            n = 1
        dt = _DTYPES.get(kind)
        if dt is None:                                      # "ptr"
            if n > (1 << 28):
                return None
            return (np.full(n, None, dtype=object), 0)      # arrays of pointers: host memory
        # Python ints: a size too large for the device is too large for max_alloc
        nbytes = -(-(n * dt.itemsize) // _MIN_BLOCK) * _MIN_BLOCK
        dev = self.dev
        if nbytes > dev.max_alloc:
            return None
        buf = dev.allocate(nbytes)
        if buf is None:
            return None
        mem = DevMem(buf, dt, n)
        self.owned[id(mem)] = mem
        return (mem, 0)

    def alloc_zeroed(self, count, kind: str):
        """kir.Alloc(zeroed=True): a block of max(count, 1) zero elements,
        from the device's zeroed blocks (the kernels that use it leave it
        zero, so it goes back there, never to the pool); None as alloc."""
        n = max(int(count), 1)
        dt = _DTYPES[kind]
        nbytes = -(-(n * dt.itemsize) // _MIN_BLOCK) * _MIN_BLOCK
        if nbytes > self.dev.max_alloc:
            return None
        buf = self.dev.take_zeroed(nbytes)
        if buf is None:
            return None
        mem = DevMem(buf, dt, n, zeroed=True)
        self.owned[id(mem)] = mem
        return (mem, 0)

    def free(self, p):
        if p is None:
            return
        mem = p[0]
        if isinstance(mem, DevMem):
            if self.mirrors or self.dirty:
                self.mirrors.pop(mem, None)
                self.dirty.pop(mem, None)
            if self.owned.pop(id(mem), None) is not None:
                if mem.zeroed:
                    self.dev.zeroed.append(mem.buf)
                else:
                    mem.buf.release()

    def detach(self, p):
        """Takes a result's block out of the call (it outlives it, in a
        DeviceArray): (DevMem, element offset)."""
        mem, off = p
        self.owned.pop(id(mem), None)
        return mem, off

    def release(self):
        """Ends the call: returns every block it still holds to the pool
        (pending kernels may still use them: the in-order queue runs them
        before any later use of a reused block). The error buffer of kernels
        nobody checked (the call was interrupted) is cleared behind them,
        without waiting, so that their failure cannot leak into the next
        call."""
        try:
            if self.unchecked:
                self.unchecked = False
                self.dev.keep(self.cl.enqueue_copy(self.queue, self.dev.err, self.dev._zeros,
                                                   is_blocking=False))
        finally:
            if self.owned:
                for mem in self.owned.values():
                    if mem.zeroed:
                        self.dev.zeroed.append(mem.buf)
                    else:
                        mem.buf.release()
                self.owned.clear()
                self.dev.trim()
            self.mirrors.clear()
            self.dirty.clear()

    def upload(self, a: np.ndarray):
        """A pointer to a device copy of a contiguous array: a small one is
        copied and sent without waiting, a large one is sent from the
        caller's array, waiting (the caller may change it after the call;
        and PoCL's non-blocking writes of large host arrays are slower)."""
        p = self.alloc(a.size, _kind(a.dtype))
        if p is None:
            raise MemoryError(f"cannot allocate {a.size} elements of {a.dtype} on the device")
        if a.nbytes > UPLOAD_COPY_BYTES:
            self.dev.copy_and_wait(p[0].buf, a)
            self.dev.passed()
        elif a.size:
            self.dev.keep(self.cl.enqueue_copy(self.queue, p[0].buf, a.copy(),
                                               is_blocking=False))
        return p

    def download(self, p, shape: tuple, dtype: np.dtype) -> np.ndarray:
        self._flush()
        mem, off = p
        if isinstance(mem, DevMem):
            return self.dev.read(mem, off, shape, dtype)
        out = np.empty(shape, dtype)
        out.reshape(-1)[...] = mem[off:off + out.size]
        return out

    def _read_whole(self, mem: DevMem, k: int):
        """Serves a Load that the mirrors do not: reads the whole buffer when
        small (keeping it as a mirror), else the one element, with the error
        check in the same wait."""
        self._flush()
        cl, q = self.cl, self.queue
        errbuf = None
        if self.unchecked:
            errbuf = np.empty(_ERR_INTS, np.int32)
            ev = cl.enqueue_copy(q, errbuf, self.dev.err, is_blocking=False)
        dt = mem.dtype
        if mem.count * dt.itemsize <= MIRROR_BYTES:
            out = np.empty(mem.count, dt)
            self.dev.copy_and_wait(out, mem.buf)
            self.mirrors[mem] = out
            value = out[k]
        else:
            out = np.empty(1, dt)
            self.dev.copy_and_wait(out, mem.buf, src_offset=k * dt.itemsize)
            value = out[0]
        self.dev.passed()
        if errbuf is not None:
            wait(self.dev, ev)
            self.unchecked = False
            err = self._error(errbuf)
            if err is not None:
                raise KernelFailure(err)
        return value

    def load(self, p, i):
        mem, off = p
        k = off + int(i)
        if not isinstance(mem, DevMem):
            return mem[k]
        m = self.mirrors.get(mem)
        if m is not None:
            return m[k]
        return self._read_whole(mem, k)

    def load_result(self, p, i):
        """The Load of an entry's scalar result (host.py). With
        keep_scalars (a caller of device arrays) an element of a device
        block that no host mirror holds comes back as a DeviceScalar over
        it, with no wait: the block leaves the call (freeing it is a no-op
        then) and backs the 0-d DeviceArray the caller makes. Else load()."""
        mem, off = p
        if (not self.keep_scalars or not isinstance(mem, DevMem) or mem.zeroed
                or mem in self.mirrors):
            return self.load(p, i)
        self.owned.pop(id(mem), None)
        return DeviceScalar(mem, off + int(i))

    def store(self, p, i, v):
        mem, off = p
        k = off + int(i)
        if not isinstance(mem, DevMem):
            mem[k] = v
            return
        m = self.mirrors.get(mem)
        if m is not None:
            m[k] = v
            d = self.dirty.get(mem)
            self.dirty[mem] = (k, k + 1) if d is None else (min(d[0], k), max(d[1], k + 1))
            return
        ev = self.cl.enqueue_copy(self.queue, mem.buf, np.array([v], dtype=mem.dtype),
                                  dst_offset=k * mem.dtype.itemsize, is_blocking=False)
        self.dev.keep(ev)

    def _flush(self):
        """Sends the host mirrors' stores to the device (one write a buffer)."""
        if not self.dirty:
            return
        cl, q = self.cl, self.queue
        for mem, (lo, hi) in self.dirty.items():
            src = self.mirrors[mem][lo:hi].copy()
            self.dev.keep(cl.enqueue_copy(q, mem.buf, src, dst_offset=lo * mem.dtype.itemsize,
                                          is_blocking=False))
        self.dirty.clear()

    def copy(self, dst, src, count):
        n = int(count)
        if n <= 0:
            return
        (dm, do), (sm, so) = dst, src
        cl, q = self.cl, self.queue
        self._flush()
        if isinstance(dm, DevMem):
            self.mirrors.pop(dm, None)
        if isinstance(dm, DevMem) and isinstance(sm, DevMem):
            size = dm.dtype.itemsize
            cl.enqueue_copy(q, dm.buf, sm.buf, byte_count=n * size, src_offset=so * size,
                            dst_offset=do * size)
        elif isinstance(dm, DevMem):
            self.dev.keep(cl.enqueue_copy(q, dm.buf, np.array(sm[so:so + n]),
                                          dst_offset=do * dm.dtype.itemsize, is_blocking=False))
        elif isinstance(sm, DevMem):
            self.check()
            m = self.mirrors.get(sm)
            if m is not None:
                dm[do:do + n] = m[so:so + n]
            else:
                dm[do:do + n] = self.dev.read(sm, so, (n,), sm.dtype)
        else:
            dm[do:do + n] = sm[so:so + n]

    # -- launches ----------------------------------------------------------------
    def launch(self, k: int, count, args: tuple):
        """Enqueues kernel k over `count` work-items (does not wait; errors
        are checked later, see the module doc)."""
        n = int(count)
        if n <= 0:
            return None
        lk = self.kernels[k]
        if self.dirty:
            self._flush()
        cl_args = [n, lk.err]
        arena = None
        if lk.heap:
            arena, stride = self._heap(n)
            cl_args += [arena[0].buf, stride]
        mirrors = self.mirrors
        for a, c in zip(args, lk.conv):
            if type(a) is tuple:
                mem, off = a
                if not isinstance(mem, DevMem):
                    raise RuntimeError("a kernel captured host memory (a compiler bug)")
                if mirrors:
                    mirrors.pop(mem, None)
                cl_args.append(mem.buf)
                cl_args.append(off)
            else:
                cl_args.append(a if c is None else c(a))
        wg = lk.wg if n >= lk.narrow_below else narrow_group(lk.wg, n, self.dev.compute_units,
                                                                        self.dev.min_group)
        launched = self.dev.launched
        launched.append(lk.knl(lk.queue, (-(-n // wg) * wg,), (wg,), *cl_args))
        if self.dev.profile:
            _profile.record(lk.knl, n, launched[-1])
        if len(launched) >= 2 * AHEAD:
            wait(self.dev, launched[AHEAD - 1])
            del launched[:AHEAD]
        if lk.can_fail:
            self.unchecked = True
        if arena is not None:
            # back to the pool now: a later user of the block is enqueued
            # after this kernel on the in-order queue
            self.free(arena)
        return None


    def _heap(self, n: int) -> list:
        """(arena, stride) for n work-items that allocate: the module's
        stride, less when n of them would pass the device's heap budget."""
        budget = self.dev.heap_budget
        stride = self.heap["stride"]
        if n * stride > budget:
            stride = (budget // n) & ~15
            if stride < 256:
                raise MemoryError(f"{n} work-items that allocate need more than the "
                                  f"device's {budget} bytes for their heaps")
        p = self.alloc(n * stride, "u8")
        if p is None:
            raise MemoryError(f"cannot allocate {n * stride} bytes of work-item heaps "
                              f"on the device")
        return p, np.uint64(stride)


def grow_heap(heap: dict, needed: int, dev: "Device") -> None:
    """The next stride after a HEAP_FULL error (emit_cl.py: a work-item
    needed `needed` bytes): at least twice the old one and
    twice what the work-item needed, in 4 KiB steps; MemoryError past what
    one buffer may hold."""
    new = max(2 * heap["stride"], -(-2 * needed // 4096) * 4096)
    if needed > dev.heap_budget or new > dev.max_alloc:
        raise MemoryError(f"a work-item needs {needed} bytes of heap, more than the device "
                          f"gives one launch ({dev.heap_budget} bytes)")
    heap["stride"] = new


def _kind(dt: np.dtype) -> str:
    for k, v in _DTYPES.items():
        if v == dt:
            return k
    raise TypeError(f"no kernel type for {dt}")


__all__ = ["device", "available", "platforms", "default_index", "release_held", "Device",
           "DevMem", "Call", "NoDevice", "KernelFailure", "LOCK",
           "grow_heap", "HEAP_STRIDE"]
