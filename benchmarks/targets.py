"""What a benchmark runs on: a PyShark backend (through the Wrapper) or a peer library.

Both kinds give `prepare(bench, args) -> call` (a function of no arguments
that runs the benchmark once, complete, and returns its output) or raise
`Skip` with the reason; `host_value(call, out)` brings an output to the
host for the check, outside any timing. Backends come from the registry,
so a backend that lands there (cpu, opencl) is benchmarked with no change
here.

GPU targets are timed alike: inputs are put on the device once, before
timing, and each timed call lasts until the device has finished its work;
results are brought back only for the check.

- CuPy and the hand-written CUDA kernels: `to_device` (cupy.asarray) before
  timing, `cupy.cuda.Device().synchronize()` after every call.
- PyShark's opencl backend, when its Wrapper takes `device_arrays=True`:
  inputs go to the device once (the Wrapper's `to_device` if it has one,
  else through the copy entries of programs/device_copy.py, whose results
  stay on the device), and each timed call ends with a synchronisation:
  the Wrapper's `finish()` or `synchronize()` when it has one, else
  `finish()` on each result that has it and `finish()` on the OpenCL
  runtime's queue (one in-order queue per process, so every kernel the call
  enqueued is done). A Wrapper without `device_arrays` copies inputs in
  and results out on every call: its rows say "transfers included".
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager

import numpy as np

from .suite import PROGRAMS_DIR, SIZES


class Skip(Exception):
    """This target does not run this benchmark (the message says why)."""


class Timeout(BaseException):
    """A call ran past its time limit (a BaseException, so no `except Exception`
    in the code under test swallows it)."""


@contextmanager
def time_limit(seconds: float | None):
    """Raises Timeout in this thread after `seconds` (SIGALRM; the main thread of a
    POSIX process only, else no limit). A call inside one long C function is
    interrupted when that function returns to Python."""
    if (not seconds or seconds <= 0 or not hasattr(signal, "setitimer")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return

    def expire(signum, frame):
        raise Timeout(f"over the time limit of {seconds:.3g} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


#: backends that are interpreters: run at these sizes at most unless --max-size says otherwise
SLOW_BACKENDS = {"python": "tiny", "core": "tiny", "kir": "tiny"}


def default_limits() -> dict:
    """The largest size each slow backend runs by default: the interpreters
    at tiny, and OpenCL at tiny too when its device is not a GPU (PoCL on the
    CPU runs the first OpenCL slice correctly but slowly)."""
    limits = dict(SLOW_BACKENDS)
    from pyshark.wrapper import registry
    if "opencl" in registry.available_backends():
        cls = registry.get_backend("opencl")
        check = getattr(cls, "outranks_cpu", None)
        if callable(check) and not check():
            limits["opencl"] = "tiny"
    return limits


class Target:
    name = "?"
    kind = "?"
    device = "cpu"          # where it computes: "cpu" or "gpu" (which copy bandwidth bounds it)
    note = ""               # said in each of its rows (e.g. "transfers included")

    def __init__(self, max_size: str | None = None):
        self.max_size = max_size

    def allows(self, size: str) -> bool:
        return self.max_size is None or SIZES.index(size) <= SIZES.index(self.max_size)

    def prepare(self, bench, args):
        raise NotImplementedError


#: backends whose arrays can live on a device (asked for with Wrapper(device_arrays=True))
DEVICE_BACKENDS = ("opencl",)
DEVICE_COPY = PROGRAMS_DIR / "device_copy.py"


def _make_wrapper(backend: str, device_arrays: bool):
    """Wrapper(backend, device_arrays=True) when asked and accepted, else Wrapper(backend):
    (wrapper, whether its arrays stay on the device)."""
    from pyshark import Wrapper
    if device_arrays:
        try:
            return Wrapper(backend, device_arrays=True), True
        except TypeError:          # a Wrapper from before device arrays
            pass
    return Wrapper(backend), False


def _class_method(obj, *names):
    """The first of `names` that obj's class defines (never an entry of a Wrapper)."""
    for name in names:
        if callable(getattr(type(obj), name, None)):
            return getattr(obj, name)
    return None


class BackendTarget(Target):
    """A PyShark backend; each module is compiled (or loaded from the cache) once."""

    kind = "backend"

    def __init__(self, backend: str, max_size: str | None = None,
                 device_arrays: bool | None = None):
        super().__init__(max_size)
        self.backend = backend
        self.name = f"ps.{backend}"
        self._wrappers: dict = {}
        self.compile_seconds: dict = {}
        #: ask for device-resident arrays (default: for the opencl backend)
        self.want_device_arrays = (backend in DEVICE_BACKENDS if device_arrays is None
                                   else device_arrays)
        self.resident = None            # known after the first wrapper
        if backend in DEVICE_BACKENDS:
            self.device = _backend_device(backend)
        if self.want_device_arrays and not _takes_device_arrays():
            self.note = "transfers included (this Wrapper has no device_arrays)"
        self._wrapper_note = self.note      # the note of every row; prepare adds its own

    def wrapper(self, bench, path=None, module=None):
        from pyshark import CompileError
        module = module or bench.module
        if module not in self._wrappers:
            t0 = time.perf_counter()
            try:
                w, self.resident = _make_wrapper(self.backend, self.want_device_arrays)
                if self.want_device_arrays and not self.resident:
                    self.note = self._wrapper_note = ("transfers included (this Wrapper has "
                                                      "no device_arrays)")
                w.add_source_file(path or bench.path)
                w.compile_and_load()
                # a tiered compile (cpu) runs quick code until its optimised
                # module is built: time the optimised code
                wait = _class_method(w, "wait_optimised")
                if wait is not None:
                    wait()
                self._wrappers[module] = w
            except CompileError as exc:
                self._wrappers[module] = Skip(f"does not compile: {str(exc).splitlines()[0]}")
            self.compile_seconds[module] = time.perf_counter() - t0
        w = self._wrappers[module]
        if isinstance(w, Skip):
            raise w
        return w

    def prepare(self, bench, args):
        w = self.wrapper(bench)
        fn = getattr(w, bench.entry)
        self.note = self._wrapper_note      # not the previous row's
        if not self.resident:
            return lambda: fn(*args)     # host arrays in, host arrays out: complete on return
        try:
            dargs = tuple(self.to_device(w, a) if isinstance(a, np.ndarray) else a
                          for a in args)
        except Exception as exc:      # no way onto the device: host inputs, said in the row
            self.note = f"inputs from the host, transfers included ({_short(exc)})"
            dargs = args
        finish = self._finisher(w)

        def call():
            out = fn(*dargs)
            finish(out)
            return out

        return _HostView(call, device_to_host)

    def to_device(self, w, a: np.ndarray):
        """A device-resident copy of a (the Wrapper's to_device, else a copy entry's result)."""
        upload = _class_method(w, "to_device")
        if upload is not None:
            return upload(a)
        kind = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32",
                np.dtype(np.float64): "f64", np.dtype(np.int64): "i64",
                np.dtype(np.uint8): "u8"}.get(a.dtype)
        if kind is None or a.ndim not in (1, 2):
            raise Skip(f"no device copy entry for a {a.ndim}-d {a.dtype} input")
        copies = self.wrapper(None, DEVICE_COPY, "device_copy")
        return getattr(copies, f"copy_{kind}" + ("_2d" if a.ndim == 2 else ""))(a)

    def _finisher(self, w):
        """finish(out): returns when everything the call enqueued is done."""
        hook = _class_method(w, "finish", "synchronize")
        if hook is not None:
            return lambda out: hook()
        queue = _runtime_queue(self.backend)

        def finish(out):
            for leaf in _leaves(out):
                done = getattr(leaf, "finish", None)
                if callable(done):
                    done()
            if queue is not None:
                queue.finish()

        return finish


def _takes_device_arrays() -> bool:
    import inspect

    from pyshark import Wrapper
    try:
        params = inspect.signature(Wrapper.__init__).parameters
    except (TypeError, ValueError):
        return True                   # cannot tell: try it (_make_wrapper falls back)
    return "device_arrays" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:160]


def _backend_device(backend: str) -> str:
    """"gpu" when the backend's device is a GPU (the opencl backend outranks cpu there)."""
    from pyshark.wrapper import registry
    try:
        check = getattr(registry.get_backend(backend), "outranks_cpu", None)
        return "gpu" if callable(check) and check() else "cpu"
    except Exception:
        return "cpu"


def _runtime_queue(backend: str):
    """The OpenCL runtime's command queue (one per process), or None."""
    if backend != "opencl":
        return None
    try:
        from pyshark.codegen.opencl import runtime
        return runtime.device().queue
    except Exception:
        return None


def _leaves(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def device_to_host(value):
    """A device-resident result (or a tuple of them) as NumPy values."""
    if isinstance(value, tuple):
        return tuple(device_to_host(v) for v in value)
    if isinstance(value, (np.ndarray, np.generic, int, float, bool)):
        return value
    get = getattr(value, "get", None)
    return get() if callable(get) else np.asarray(value)


class PeerTarget(Target):
    """A peer library; its module may define to_device(args), to_host(value) and
    synchronize() (CuPy does), which run around each call."""

    kind = "peer"

    def __init__(self, name: str, module, max_size: str | None = None):
        super().__init__(max_size)
        self.name = name
        self.module = module
        self.device = getattr(module, "DEVICE", "cpu")

    def prepare(self, bench, args):
        fn = getattr(self.module, bench.entry, None)
        if fn is None:
            raise Skip(f"no {self.name} version of {bench.entry}")
        to_device = getattr(self.module, "to_device", None)
        to_host = getattr(self.module, "to_host", None)
        sync = getattr(self.module, "synchronize", None)
        dargs = to_device(args) if to_device else args
        if sync is None:
            return lambda: fn(*dargs)

        def call():
            out = fn(*dargs)
            sync()
            return out

        if to_host is None:
            return call
        return _HostView(call, to_host)


class _HostView:
    """A call whose timed result stays on the device; .host() brings one back."""

    def __init__(self, call, to_host):
        self.call, self.to_host = call, to_host

    def __call__(self):
        return self.call()

    def host(self, value):
        return self.to_host(value)


def host_value(call, value):
    """The output of `call` as host (NumPy) values."""
    return call.host(value) if isinstance(call, _HostView) else value
