"""Hand-written CUDA kernels through CuPy (RawKernel, ElementwiseKernel): the GPU issue's yardsticks.

- nbody_step: the naive all-pairs kernel, one thread per body, a plain loop
  over every body in global memory (no shared-memory tiling), about 20
  flops a pair (sqrtf and a division, as the other versions compute it),
  then the Euler update of the body's velocity and position.
- saxpy: one fused ElementwiseKernel (a CuPy expression `a * x + y` runs
  two kernels and moves five arrays' worth of bytes instead of three).

Inputs and timing as for the CuPy peer (device-resident, synchronised after
each call). The CUDA C is in cuda_sources.py (the test suite also
compiles it as OpenCL C and checks it on PoCL where there is no GPU).
"""
from __future__ import annotations

import cupy
import numpy as np

from .cuda_sources import CUDA_PREAMBLE, NBODY_SOURCE, THREADS
from .cupy_peers import synchronize, to_device, to_host  # noqa: F401

DEVICE = "gpu"

_nbody = cupy.RawKernel(CUDA_PREAMBLE + NBODY_SOURCE, "nbody_step")
_saxpy = cupy.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 out",
                                "out = a * x + y", "pyshark_bench_saxpy")


def saxpy(a, xs, ys):
    return _saxpy(np.float32(a), xs, ys)


def nbody_step(dt, eps, xs, ys, zs, ms, vxs, vys, vzs):
    n = len(xs)
    outs = tuple(cupy.empty(n, cupy.float32) for _ in range(6))
    if n:
        _nbody(((n + THREADS - 1) // THREADS,), (THREADS,),
               (xs, ys, zs, ms, vxs, vys, vzs, *outs, np.float32(dt), np.float32(eps * eps),
                np.int32(n)))
    return outs
