"""Large blocks (codegen/cpu/emit_alloc.py): staggered (64-byte aligned,
different offsets modulo 4 KiB from one block to the next) or 2 MiB
aligned, as PYSHARK_ALLOC_STAGGER chooses; both give the same results, the
results are freed by numpy, and the choice is part of the cache key.
Where large blocks are staggered, malloc's blocks from 256 KiB on are
padded, so that blocks of one size allocated one after another do not
start at the same offset modulo the L2 cache's set period (128 KiB here),
as glibc places them unpadded."""
from __future__ import annotations

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.codegen.cpu import emit_alloc

SRC = '''
import pyshark.prelude as ps

@ps.entry
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x, y: a * x + y, xs, ys)
'''

N = (1 << 20) + 3          # 4 MiB + 12 bytes of f32: the large-block path


def _live_results(tmp_path, n: int, count: int) -> list:
    """`count` results of n f32 elements each, all alive at once, checked."""
    src = tmp_path / "sx.py"
    src.write_text(SRC)
    w = Wrapper("cpu", cache_dir=tmp_path / "cache").add_source_file(src).compile_and_load()
    xs = np.arange(n, dtype=np.float32)
    ys = np.ones(n, dtype=np.float32)
    outs = [w.saxpy(np.float32(2.0), xs, ys) for _ in range(count)]
    for out in outs:
        np.testing.assert_array_equal(out, np.float32(2.0) * xs + ys)
    return outs


@pytest.mark.parametrize("stagger", ["0", "1"])
def test_large_blocks_by_policy(stagger, monkeypatch, tmp_path):
    monkeypatch.setenv("PYSHARK_ALLOC_STAGGER", stagger)
    assert emit_alloc.stagger_blocks() is (stagger == "1")
    outs = _live_results(tmp_path, N, 4)
    addrs = [o.ctypes.data for o in outs]
    if stagger == "1":
        assert all(a % 64 == 0 for a in addrs)
        assert len({a % 4096 for a in addrs}) > 1      # live blocks at different page offsets
    else:
        assert all(a % (1 << 21) == 0 for a in addrs)
    del outs                                            # numpy frees them


def test_policy_is_part_of_the_cache_key(monkeypatch, tmp_path):
    from pyshark.codegen.cpu.backend import CpuBackend
    monkeypatch.setenv("PYSHARK_ALLOC_STAGGER", "0")
    off = CpuBackend().cache_salt()
    monkeypatch.setenv("PYSHARK_ALLOC_STAGGER", "1")
    on = CpuBackend().cache_salt()
    assert off != on and off.split(":")[0] == on.split(":")[0]   # same host, other policy


MID = (1 << 18) + 7        # 1 MiB + 28 bytes of f32: malloc's path, padded


def test_mid_blocks_of_one_size_fall_in_different_cache_sets(monkeypatch, tmp_path):
    monkeypatch.setenv("PYSHARK_ALLOC_STAGGER", "1")       # the pad goes with staggering
    outs = _live_results(tmp_path, MID, 6)
    period = 1 << 17
    offs = sorted(o.ctypes.data % period for o in outs)
    # unpadded, glibc put them 1 MiB + 16 bytes apart: all six within 80 bytes
    assert max(offs) - min(offs) > 4096, offs
    del outs
