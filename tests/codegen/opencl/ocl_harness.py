"""Helpers for the OpenCL emitter tests: build kernel IR modules by hand,
translate them (emit_cl.py + host.py), build the program on the test device
(PoCL) and call entries on numpy arrays."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from pyshark.codegen import kir as K
from pyshark.core.types import BOOL, F32, F64, I64, ScalarType

I0 = K.KConst(0, I64)
I1 = K.KConst(1, I64)
_counter = itertools.count()


def runtime_or_skip():
    from pyshark.codegen.opencl import runtime
    if not runtime.available():
        pytest.skip("no OpenCL device")
    return runtime


def c64(v: int) -> K.KConst:
    return K.KConst(v, I64)


def v(name: str, t) -> K.KVar:
    return K.KVar(name, t)


def P(t) -> K.Ptr:
    return K.Ptr(t)


class Built:
    """A translated and built module. `call(name, *args)`: numpy arrays for
    pointer params (copied to the device and back after the call, or, with
    host_memory=True, passed as host memory so that only host code runs),
    numpy scalars for scalars. Returns None or (code, msg, args) (the first
    failure)."""

    def __init__(self, m: K.Module, coarsen: int = 1):
        from pyshark.codegen.opencl.backend import spell_kernels
        from pyshark.codegen.stages import gpu_kernel_stages, run_stages
        from pyshark.codegen.target import Target
        self.runtime = runtime_or_skip()
        K.check_module(m)
        self.module = m
        # spelled: after kir_passes/expand.py (and coarsen.py), checked after each
        shaped = run_stages(m, gpu_kernel_stages(Target("gpu", coarsen=coarsen)), check=True)
        self.host, meta, self.spelled = spell_kernels(shaped)
        K.check_module(m)           # messages the translation added keep it valid
        self.dev = self.runtime.device()
        self.kernels = []
        if meta:
            built = self.dev.program(self.host.cl_source, [k[0] for k in meta])
            self.kernels = [(knl, group or wg, tuple(kinds), can_fail, heap, group is None)
                            for (knl, wg), (_, kinds, can_fail, group, heap) in zip(built, meta)]
        self.ns: dict = {}
        exec(compile(self.host.py_source, f"<host{next(_counter)}>", "exec"), self.ns)

    @property
    def cl_source(self) -> str:
        return self.host.cl_source

    def call(self, name: str, *args, host_memory: bool = False, heap_stride: int | None = None):
        """`heap_stride`: the work-item heap of kernels that allocate (bytes;
        the runtime's first stride by default; a call that outgrows it returns
        the HEAP_FULL error: only the backend's caller grows and retries)."""
        fn = self.ns["ENTRIES"][name]
        heap = None if heap_stride is None else {"stride": heap_stride}
        with self.dev.lock, np.errstate(all="ignore"):
            rt = self.runtime.Call(self.dev, self.kernels, heap)
            try:
                conv, back = [], []
                for a in args:
                    if isinstance(a, np.ndarray):
                        p = (a.reshape(-1), 0) if host_memory else rt.upload(a.reshape(-1))
                        conv.append(p)
                        back.append((a, p))
                    else:
                        conv.append(a)
                res, arrays = rt.run(fn, conv, [(p, a.shape, a.dtype) for a, p in back
                                                 if not host_memory])
                if arrays is None and not host_memory:     # after a failure: what ran
                    arrays = [rt.download(p, a.shape, a.dtype) for a, p in back]
                if arrays:
                    for (a, _), out in zip(back, arrays):
                        a[...] = out
                live = len(rt.owned) - len(back)
            finally:
                rt.release()
        self.live_after_call = live
        return res


def build(m: K.Module, coarsen: int = 1) -> Built:
    return Built(m, coarsen)


def np_same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact equality, NaNs equal to NaNs (any payload) for floats."""
    if a.dtype.kind == "f":
        both_nan = np.isnan(a) & np.isnan(b)
        return bool(np.all(both_nan | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))))
    return bool(np.array_equal(a, b))


def multi(name: str, tins: list, outs: list, par: bool = True) -> K.Function:
    """outs[k][i] = make_k(ins[0][i], ins[1][i], ...) for i in 0..n-1, every
    output in one loop (one kernel): `outs` is [(type, make)]."""
    xs = [v(f"x{k}", P(t)) for k, t in enumerate(tins)]
    os_ = [v(f"o{k}", P(t)) for k, (t, _) in enumerate(outs)]
    n, i = v("n", I64), v("i", I64)
    loads = [K.Load(x, i) for x in xs]
    body = K.Block(tuple(K.Store(o, i, make(*loads)) for o, (_, make) in zip(os_, outs)))
    loop = K.ParFor(i, n, body) if par else K.For(i, I0, n, body)
    return K.Function(name, tuple(xs) + tuple(os_) + (n,), K.Block((loop,)))


__all__ = ["K", "np", "BOOL", "F32", "F64", "I64", "ScalarType", "I0", "I1", "c64", "v", "P",
           "Built", "build", "np_same", "multi", "runtime_or_skip"]
