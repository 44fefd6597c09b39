"""kir.Alloc(zeroed=True) on every kernel IR runner: the elements read 0,
on the first call and again after the block came back (the opencl runtime
keeps zeroed blocks from call to call instead of clearing a fresh one)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from pyshark.codegen import kir as K
from pyshark.codegen.kir_interp import run_function
from pyshark.codegen.kir_pretty import pretty_function
from pyshark.core.types import I32, I64

sys.path.insert(0, str(Path(__file__).parent / "cpu"))
sys.path.insert(0, str(Path(__file__).parent / "opencl"))

n, i = K.KVar("n", I64), K.KVar("i", I64)
SIZES = [0, 1, 7, 1023, 70001]


def f_read_zeroed() -> K.Module:
    """out[i] = z[i] + i over a zeroed block z of n elements (left zero)."""
    out, z = K.KVar("out", K.Ptr(I32)), K.KVar("z", K.Ptr(I32))
    body = K.Block((K.Store(out, i, K.Bin("add", K.Load(z, i), K.Cast(I32, i))),))
    return K.Module([K.Function("f", (out, n), K.Block((
        K.Alloc(z, n, zeroed=True), K.ParFor(i, n, body), K.Free(z))))])


def want(size: int) -> np.ndarray:
    return np.arange(size, dtype=np.int32)


def test_pretty_prints_zeroed_allocations():
    assert "alloc_zeroed(n)" in pretty_function(f_read_zeroed().functions[0])


def test_kir_interpreter_zeroes_them():
    for size in SIZES[:4]:
        out = np.full(size, -1, np.int32)
        r = run_function(f_read_zeroed(), "f", [out, size])
        assert r.code == 0 and np.array_equal(out, want(size))


def test_cpu_backend_zeroes_them(tmp_path):
    from cpu_harness import build
    b = build(f_read_zeroed(), tmp_path)
    for size in SIZES:
        out = np.full(size, -1, np.int32)
        assert b.call("f", out, np.int64(size))[0] == 0
        assert np.array_equal(out, want(size))


def test_opencl_runtime_serves_them_zeroed_again_and_again():
    from pyshark.codegen.opencl import runtime
    if not runtime.available():
        pytest.skip("no OpenCL device")
    from ocl_harness import build
    b = build(f_read_zeroed())
    for size in SIZES + SIZES[::-1]:
        out = np.full(size, -1, np.int32)
        assert b.call("f", out, np.int64(size)) is None
        assert np.array_equal(out, want(size)), size
    dev = runtime.device()
    assert dev.zeroed and all(buf.size >= 4 for buf in dev.zeroed)   # back in the pool
