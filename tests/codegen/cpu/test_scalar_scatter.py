"""Scatter on a CPU whose vector scatter is slow (target.slow_scatter, AMD
Zen): kir.For's `simd` hint and its LLVM spelling (loop metadata that keeps
the vectorizer off), the lowering's choice (mc/scatter.py: the sequential
loop scalar, and run instead of the slot split up to DENSE_THREADS
threads, or 1 where the split's scan is branchless), the host switch and its cache key, and results equal to Python
mode either way, at the edges (empty, one, duplicates, out-of-range and
negative indices, sizes around par_min, 1-3 threads)."""
from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest

from cpu_harness import I64, K, P, build, c64, function_ir, v
from pyshark import Wrapper
from pyshark.codegen import stages
from pyshark.codegen.cpu import link
from pyshark.codegen.mc import scatter as mc_scatter
from pyshark.codegen.target import MULTICORE
from pyshark.wrapper.backend import translate_and_check

SRC = '''
import pyshark.prelude as ps


@ps.entry
def scatter_i64(dest: ps.Array[int], idxs: ps.Array[int], vals: ps.Array[int]) -> ps.Array[int]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def scatter_f32(dest: ps.Array[ps.f32], idxs: ps.Array[ps.i32],
                vals: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.scatter(dest, idxs, ps.map(lambda x: x * ps.f32(2.0), vals))
'''


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    p = tmp_path_factory.mktemp("ss") / "ss_mod.py"
    p.write_text(SRC)
    return p


def _kernels(src, slow: bool) -> K.Module:
    program = translate_and_check(src)
    return stages.build_kernels(program, target=replace(MULTICORE, slow_scatter=slow))


def _fors(m: K.Module) -> list:
    return [s for f in m.functions for s in K.walk_stms(f.body) if isinstance(s, K.For)]


def test_the_lowering_keeps_dense_scatters_scalar_on_a_slow_scatter_target(src):
    slow, fast = _kernels(src, True), _kernels(src, False)
    assert all(f.simd for f in _fors(fast))
    scalar = [f for f in _fors(slow) if not f.simd]
    # one sequential loop per entry, and the branchless scan of the split
    # where the values are in memory (scatter_i64; scatter_f32's are a map)
    assert len(scalar) == 3
    text = K.pretty_module(slow)
    assert " scalar {" in text
    assert "(num_threads() <= 1i64)" in text          # scatter_i64: split from 2 threads on
    assert f"(num_threads() <= {mc_scatter.DENSE_THREADS}i64)" in text
    assert text.count("? (dst_") == 1                  # the branchless store, once
    assert "num_threads() <=" not in K.pretty_module(fast)
    assert "? (dst_" not in K.pretty_module(fast)


def test_the_hint_is_spelled_as_loop_metadata(tmp_path):
    n, i = v("n", I64), v("i", I64)
    xs, ys = v("xs", P(I64)), v("ys", P(I64))
    body = K.Block((K.Store(ys, K.Load(xs, i), i),))
    m = K.Module([K.Function("f", (xs, ys, n), K.Block((
        K.For(i, c64(0), n, body, simd=False),
        K.For(i, c64(0), n, body)))) ])
    built = build(m, tmp_path)
    loops = function_ir(built.text, "f").count("!llvm.loop")
    assert loops == 1
    assert '!"llvm.loop.vectorize.enable", i1 0' in built.text
    xs_ = np.array([3, 0, 3, 1], np.int64)
    ys_ = np.full(4, -1, np.int64)
    rc, _ = built.call("f", xs_, ys_, 4)
    assert rc == 0 and ys_.tolist() == [1, 3, -1, 2]


def test_the_host_switch_and_the_cache_key(monkeypatch, tmp_path):
    from pyshark.codegen.cpu.backend import CpuBackend
    monkeypatch.setenv("PYSHARK_SCALAR_SCATTER", "1")
    assert link.slow_vector_scatter() and link.host_target().slow_scatter
    on = CpuBackend().cache_salt()
    monkeypatch.setenv("PYSHARK_SCALAR_SCATTER", "0")
    assert not link.slow_vector_scatter() and not link.host_target().slow_scatter
    assert CpuBackend().cache_salt() != on
    monkeypatch.delenv("PYSHARK_SCALAR_SCATTER")
    assert link.slow_vector_scatter() == link.host_cpu().startswith("znver")


def _cases():
    rng = np.random.default_rng(7)
    out = []
    for n in (0, 1, 5, 32767, 32768, 100_003):
        m = max(1, n // 3)
        idxs = rng.integers(-2, m + 2, n)                 # duplicates, out of range, negative
        out.append((np.arange(m, dtype=np.int64) * -1, idxs, rng.integers(-9, 9, n)))
    return out


@pytest.mark.parametrize("slow", ["0", "1"])
def test_results_equal_python_mode(src, tmp_path, monkeypatch, slow):
    monkeypatch.setenv("PYSHARK_SCALAR_SCATTER", slow)
    ref = Wrapper("python", cache_dir=tmp_path / "py").add_source_file(src).compile_and_load()
    for threads in (1, 2, 3):
        w = Wrapper("cpu", cache_dir=tmp_path / "c", num_threads=threads)
        w.add_source_file(src).compile_and_load()
        for dest, idxs, vals in _cases():
            want = ref.scatter_i64(dest, idxs, vals)
            got = w.scatter_i64(dest, idxs, vals)
            assert got.dtype == want.dtype and np.array_equal(got, want), (threads, len(idxs))
            d32 = dest.astype(np.float32)
            i32 = idxs.astype(np.int32)
            v32 = vals.astype(np.float32)
            assert np.array_equal(w.scatter_f32(d32, i32, v32), ref.scatter_f32(d32, i32, v32))
