"""What a benchmark runs on: a PyShark backend (through the Wrapper) or a peer library.

Both kinds give `prepare(bench, args) -> call` (a function of no arguments
that runs the benchmark once and returns its output on the host) or raise
`Skip` with the reason. Backends come from the registry, so a backend that
lands there (cpu, opencl) is benchmarked with no change here.
"""
from __future__ import annotations

import time

from .suite import SIZES


class Skip(Exception):
    """This target does not run this benchmark (the message says why)."""


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

    def __init__(self, max_size: str | None = None):
        self.max_size = max_size

    def allows(self, size: str) -> bool:
        return self.max_size is None or SIZES.index(size) <= SIZES.index(self.max_size)

    def prepare(self, bench, args):
        raise NotImplementedError


class BackendTarget(Target):
    """A PyShark backend; each module is compiled (or loaded from the cache) once."""

    kind = "backend"

    def __init__(self, backend: str, max_size: str | None = None):
        super().__init__(max_size)
        self.backend = backend
        self.name = f"ps.{backend}"
        self._wrappers: dict = {}
        self.compile_seconds: dict = {}

    def wrapper(self, bench):
        from pyshark import CompileError, Wrapper
        if bench.module not in self._wrappers:
            t0 = time.perf_counter()
            try:
                w = Wrapper(self.backend)
                w.add_source_file(bench.path)
                w.compile_and_load()
                self._wrappers[bench.module] = w
            except CompileError as exc:
                self._wrappers[bench.module] = Skip(f"does not compile: {str(exc).splitlines()[0]}")
            self.compile_seconds[bench.module] = time.perf_counter() - t0
        w = self._wrappers[bench.module]
        if isinstance(w, Skip):
            raise w
        return w

    def prepare(self, bench, args):
        fn = getattr(self.wrapper(bench), bench.entry)
        return lambda: fn(*args)


class PeerTarget(Target):
    """A peer library; its module may define to_device(args), to_host(value) and
    synchronize() (CuPy does), which run around each call."""

    kind = "peer"

    def __init__(self, name: str, module, max_size: str | None = None):
        super().__init__(max_size)
        self.name = name
        self.module = module

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
