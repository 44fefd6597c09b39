"""The CPU's parallel scatter (codegen/mc/scatter.py, session 38): slot
ranges bounded by sampled splitters (`_slot_bounds`), and on a slow_scatter
target (AMD Zen) a branchless scan that stores every value, into its slot
or into the thread's sink, from 2 threads on. Any bounds are correct, so
what is tested is that results equal Python mode whatever the indices'
spread (a permutation, a quarter of the slots, one slot, the last slot,
none in range, negatives, duplicates), the element type (bool, u8, f64
with NaN, u64 indices past 2**63) and the thread count, on native code and
on the kernel IR interpreter (every access checked, the sinks freed), and
that the kernel IR has the shape the lowering promises (the branchless
scan prefetches its inputs ahead, kir.Prefetch, session 39)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from backend_pair import source_file
from pyshark import Wrapper
from pyshark.codegen import kir as K
from pyshark.codegen import stages
from pyshark.codegen.kir_backend import KirModule
from pyshark.codegen.mc import scatter as mc_scatter
from pyshark.codegen.target import MULTICORE
from pyshark.wrapper.backend import translate_and_check

SRC = '''
import pyshark.prelude as ps


@ps.entry
def put_i64(dest: ps.Array[int], idxs: ps.Array[ps.i32], vals: ps.Array[int]) -> ps.Array[int]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def put_bool(dest: ps.Array[bool], idxs: ps.Array[int], vals: ps.Array[bool]) -> ps.Array[bool]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def put_u8(dest: ps.Array[ps.u8], idxs: ps.Array[ps.u64], vals: ps.Array[ps.u8]) -> ps.Array[ps.u8]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def put_f64(dest: ps.Array[ps.f64], idxs: ps.Array[int], vals: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def put_two(a: ps.Array[int], b: ps.Array[ps.f32], idxs: ps.Array[int], xs: ps.Array[int],
            ys: ps.Array[ps.f32]) -> tuple[ps.Array[int], ps.Array[ps.f32]]:
    return (ps.scatter(a, idxs, xs), ps.scatter(b, idxs, ys))


@ps.entry
def put_doubled(dest: ps.Array[int], idxs: ps.Array[int], vals: ps.Array[int]) -> ps.Array[int]:
    return ps.scatter(dest, idxs, ps.map(lambda v: v * 2, vals))
'''


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return source_file(tmp_path_factory, "split_mod", SRC)


def _spreads(n: int, m: int, rng) -> dict:
    return {
        "permutation": rng.permutation(max(m, n))[:n] % max(m, 1),
        "quarter": rng.integers(0, max(1, m // 4), n),
        "one slot": np.full(n, m // 3),
        "last slot": np.full(n, m - 1),
        "none in range": rng.integers(m, m + 5, n),
        "negatives too": rng.integers(-m, m, n),
        "two clusters": np.where(rng.random(n) < 0.5, rng.integers(0, 8, n),
                                 rng.integers(max(0, m - 8), m, n)),
    }


def _all_args(n: int, m: int, seed: int):
    """(entry, args) for every entry and spread."""
    rng = np.random.default_rng(seed)
    for spread, idx in _spreads(n, m, rng).items():
        vals = rng.integers(-50, 50, n)
        f = rng.standard_normal(n)
        f[::7] = np.nan
        big = idx.astype(np.uint64)
        big[::5] = np.uint64(1 << 63) + np.uint64(3)       # past 2**63: out of range
        yield spread, "put_i64", (np.arange(m) * -1, idx.astype(np.int32), vals)
        yield spread, "put_bool", (np.zeros(m, bool), idx, vals > 0)
        yield spread, "put_u8", (np.full(m, 7, np.uint8), big, (vals % 256).astype(np.uint8))
        yield spread, "put_f64", (np.full(m, np.nan), idx, f)
        yield spread, "put_two", (np.zeros(m, np.int64), np.ones(m, np.float32), idx, vals,
                                  f.astype(np.float32))
        yield spread, "put_doubled", (np.zeros(m, np.int64), idx, vals)


def _same(got, want) -> bool:
    if isinstance(want, tuple):
        return all(_same(g, w) for g, w in zip(got, want))
    return got.dtype == want.dtype and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


@pytest.mark.parametrize("slow", ["1", "0"])
def test_native_results_equal_python_mode(src, tmp_path, monkeypatch, slow):
    monkeypatch.setenv("PYSHARK_SCALAR_SCATTER", slow)
    ref = Wrapper("python", cache_dir=tmp_path / "py").add_source_file(src).compile_and_load()
    for threads in (2, 3, 4):
        w = Wrapper("cpu", cache_dir=tmp_path / "c", num_threads=threads, tiered=False)
        w.add_source_file(src).compile_and_load()
        for n, m in ((32768, 40_000), (50_001, 1_000), (40_000, 300_000)):
            for spread, entry, args in _all_args(n, m, n + m):
                got, want = w.invoke(entry, *args), ref.invoke(entry, *args)
                assert _same(got, want), (threads, n, m, spread, entry)


def _slow_kernels(src) -> tuple:
    program = translate_and_check(src)
    target = replace(MULTICORE, slow_scatter=True)
    return program, stages.build_kernels(program, target=target, par_min=4)


def test_interpreted_results_equal_python_mode(src, tmp_path):
    """The interpreter runs the split on 2 threads from 4 values on, and
    fails on any access outside a block, a sink not freed or freed twice."""
    program, kernels = _slow_kernels(src)
    interp = KirModule(kernels, program, {}, None)
    ref = Wrapper("python", cache_dir=tmp_path / "py").add_source_file(src).compile_and_load()
    for n, m in ((1, 1), (5, 3), (64, 9), (300, 1_000)):
        for spread, entry, args in _all_args(n, m, 7 * n + m):
            want = ref.invoke(entry, *args)
            got = interp.run_flat(entry, list(args))
            got = tuple(got) if isinstance(want, tuple) else got[0]
            assert _same(got, want), (n, m, spread, entry)


def test_the_kernels_sample_the_bounds_and_store_branchless_where_they_can(src):
    _, kernels = _slow_kernels(src)
    text = {f.name: K.pretty_module(K.Module([f])) for f in kernels.functions}
    for name in ("put_i64", "put_bool", "put_u8", "put_f64", "put_two", "put_doubled"):
        t = text["pyshark_" + name]
        assert f"alloc({mc_scatter.BUCKETS}i64)" in t and f"{mc_scatter.SAMPLES}i64" in t, name
    # values in memory: every value is stored, through a select of two addresses
    for name, dests in (("put_i64", 1), ("put_bool", 1), ("put_u8", 1), ("put_two", 2)):
        t = text["pyshark_" + name]
        assert t.count("sink_") == 3 * dests, name      # alloc, store, free
        assert "(num_threads() <= 1i64)" in t, name
        # the indices and every value array streamed ahead, not kept in L3
        assert t.count("prefetch(") == 2 * dests, name     # per scan: indices, values
        assert f"+ {mc_scatter.PREFETCH_BYTES // 8}i64)])" in t or name != "put_i64", name
    # a computed value would be computed by every thread: the scan with a branch
    t = text["pyshark_put_doubled"]
    assert "sink_" not in t and "prefetch(" not in t
    assert f"(num_threads() <= {mc_scatter.DENSE_THREADS}i64)" in t
