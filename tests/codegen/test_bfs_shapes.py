"""A level-synchronous BFS as a user writes it (an edge filter and a scatter
per level, issue 17's "frontier BFS"), and the two lowering changes it
asked for (session 37):
- mc/filter.py: a predicate that reads memory beyond its elements (the
  gather `dist[src[e]]`) is evaluated once, its values kept as one byte per
  element for the write pass; a predicate on the elements alone is still
  evaluated twice (no flags);
- mc/scatter.py: a scatter takes its destination's memory when the frame
  owns it whole, nothing live after sees it and nothing the scatter reads
  may alias it; otherwise it copies (the destination used later, values
  computed from it, a caller's array).
Results equal Python mode on cpu, its quick tier and the kernel IR
interpreter (which checks every access, use after free and double free),
at sizes on both sides of the parallel thresholds, with duplicate targets,
out-of-range indices and unreachable nodes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend_pair import agree, host_kernels, loaded, source_file
from pyshark.codegen import kir as K
from pyshark.codegen.kir_traverse import block_exprs
from pyshark.core.types import BOOL

#: the BFS of scripts/shapes_probe/programs.py, beside entries of the same
#: shapes whose destinations a scatter may not take
SRC = (Path(__file__).resolve().parents[2] / "scripts" / "shapes_probe" / "programs.py").read_text() + '''


@ps.entry
def positives(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.filter(lambda x: x > 0.0, xs)


@ps.entry
def looked_up(keys: ps.Array[int], table: ps.Array[ps.f64]) -> ps.Array[int]:
    return ps.filter(lambda k: table[k] > 0.5, keys)


@ps.entry
def bumped_twice(n: int, idx: ps.Array[int]) -> tuple[ps.Array[int], ps.Array[int]]:
    """The first scatter's destination is read again: it must stay as it was."""
    d = ps.replicate(n, 0)
    d = ps.update(d, 0, 7)
    e = ps.scatter(d, idx, ps.replicate(len(idx), 1))
    return (d, e)


@ps.entry
def from_itself(n: int, idx: ps.Array[int]) -> ps.Array[int]:
    """The values read the destination at other indices: a copy first."""
    d = ps.map(lambda i: i * 10, ps.iota(n))
    return ps.scatter(d, idx, ps.map(lambda i: d[(i + 1) % n] + 1, idx))


@ps.entry
def into_input(dest: ps.Array[int], idx: ps.Array[int]) -> ps.Array[int]:
    """The caller's array: never written."""
    return ps.scatter(dest, idx, ps.replicate(len(idx), -5))
'''



@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return source_file(tmp_path_factory, "bfs_mod", SRC)


@pytest.fixture(scope="module")
def kernels(src):
    return host_kernels(src)


def _fn(m: K.Module, name: str) -> K.Function:
    (f,) = [f for f in m.functions if f.name == "pyshark_" + name]
    return f


def _bool_arrays(f: K.Function) -> set:
    return {s.var.name for s in K.walk_stms(f.body)
            if isinstance(s, K.Alloc) and s.var.type == K.Ptr(BOOL)}


def test_a_gathering_predicate_is_kept_as_flags_a_plain_one_recomputed(kernels):
    bfs = _fn(kernels, "bfs")
    (flags,) = _bool_arrays(bfs)
    stored = [s for s in K.walk_stms(bfs.body) if isinstance(s, K.Store)
              and getattr(s.ptr, "name", None) == flags]
    loaded = [x for x in block_exprs(bfs.body) if isinstance(x, K.Load)
              and getattr(x.ptr, "name", None) == flags]
    assert stored and loaded
    assert _bool_arrays(_fn(kernels, "looked_up"))
    assert not _bool_arrays(_fn(kernels, "positives"))


def _copies(f: K.Function) -> list:
    return [s for s in K.walk_stms(f.body) if isinstance(s, K.CopyMem)]


def test_the_bfs_level_scatters_into_dist_itself(kernels):
    bfs = _fn(kernels, "bfs")
    # the one copy left is the replicate's before the update (outside the loop)
    loops = [s for s in K.walk_stms(bfs.body) if isinstance(s, K.While)]
    assert loops and not any(isinstance(s, K.CopyMem) for w in loops
                             for s in K.walk_stms(w.body))


def _scatter_copies(f: K.Function) -> list:
    """The copies into a scatter's own destination (mc/scatter._dest's `dst`)."""
    return [s for s in _copies(f) if any(isinstance(x, K.KVar) and x.name.startswith("dst_")
                                         for x in block_exprs(K.Block((s,))))]


def test_scatters_whose_destination_is_still_needed_copy_it(kernels):
    assert not _scatter_copies(_fn(kernels, "bfs"))
    for name in ("bumped_twice", "from_itself", "into_input"):
        assert _scatter_copies(_fn(kernels, name)), name


@pytest.fixture(scope="module")
def wrappers(src):
    return loaded(src)


def _agree(wrappers, entry, *args):
    agree(wrappers, entry, *args, errors=(IndexError,))


@pytest.mark.parametrize("n,m", [(1, 0), (1, 1), (6, 9), (50, 40), (300, 2_000),
                                 (3_000, 40_000)])
def test_bfs_equals_python_mode(wrappers, n, m):
    rng = np.random.default_rng(n + m)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    _agree(wrappers, "bfs", src, dst, n, 0)
    _agree(wrappers, "bfs", src, dst, n, n - 1)


def test_bfs_with_an_edge_out_of_range_raises_as_python_mode(wrappers):
    src = np.array([0, 1, 2, 9])
    dst = np.array([1, 2, 3, 0])
    _agree(wrappers, "bfs", src, dst, 4, 0)
    _agree(wrappers, "bfs", np.array([0, 1]), np.array([1, 7]), 4, 0)


@pytest.mark.parametrize("n", [0, 1, 17, 40_000])
def test_filters_equal_python_mode(wrappers, n):
    rng = np.random.default_rng(n)
    xs = (rng.standard_normal(n)).astype(np.float32)
    _agree(wrappers, "positives", xs)
    table = rng.random(max(n, 1))
    keys = rng.integers(-max(n, 1), max(n, 1), n)
    _agree(wrappers, "looked_up", keys, table)
    if n:
        bad = keys.copy()
        bad[n // 2] = 10 * n + 3
        _agree(wrappers, "looked_up", bad, table)


@pytest.mark.parametrize("n,k", [(1, 0), (5, 3), (70_000, 50_000)])
def test_scatters_equal_python_mode(wrappers, n, k):
    rng = np.random.default_rng(n + k)
    idx = rng.integers(-2, n + 2, k)
    _agree(wrappers, "bumped_twice", n, idx)
    _agree(wrappers, "from_itself", n, idx)
    dest = np.arange(n) * 3
    keep = dest.copy()
    _agree(wrappers, "into_input", dest, idx)
    assert np.array_equal(dest, keep)
