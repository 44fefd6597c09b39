"""Tile shape of perfect map nests (codegen/mc/segmap.py `_tiled_nest`): an
element without loops of its own (a stencil's update) gets 16 x TILE_J_FLAT
tiles, an element that loops (a reduction per element) keeps 16 x 16 cache
blocks; both give Python mode's results at shapes around the tile edges,
and Python mode's exception."""
from __future__ import annotations


import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K
from pyshark.codegen.mc.segmap import TILE_I, TILE_J, TILE_J_FLAT

from test_lower import lower_optimised as lower, stms

SRC = """
import pyshark.prelude as ps

@ps.entry
def stencil(a: ps.Array[ps.Array[ps.f32]], s: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    rows = len(a)
    cols = len(a[0])
    return ps.map(lambda i, ra, rs: ps.map(
        lambda j, x, y: x * 0.5 + y + a[min(i + 1, rows - 1), j] - a[i, max(j - 1, 0)],
        ps.iota(cols), ra, rs), ps.iota(rows), a, s)

@ps.entry
def picks(a: ps.Array[ps.Array[ps.i64]], idx: ps.Array[ps.i64]) -> ps.Array[ps.Array[ps.i64]]:
    # idx[j] may be out of range: IndexError, as in Python mode
    return ps.map(lambda ra: ps.map(lambda j, x: x + ra[idx[j]], ps.iota(len(ra)), ra), a)

@ps.entry
def rowsums(a: ps.Array[ps.Array[ps.f32]], b: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    # an element that loops (a max over k): cache blocks of 16 x 16
    return ps.map(lambda r: ps.map(lambda c: ps.reduce(
        lambda x, y: max(x, y), ps.f32(0.0), ps.map(lambda u, v: u - v, r, c)), b), a)
"""



def _tile_widths(m: K.Module, name: str) -> set:
    """The j widths of the entry's tile counts: `(nj + (w - 1)) / w`."""
    out = set()
    for s in stms(m, name, K.Set):
        if s.var.name.startswith("ntj") and isinstance(s.value, K.Bin) and s.value.op == "div":
            if isinstance(s.value.y, K.KConst):
                out.add(s.value.y.value)
    return out


def test_loop_free_element_gets_wide_tiles():
    m = lower(SRC)
    assert _tile_widths(m, "stencil") == {TILE_J_FLAT}
    assert _tile_widths(m, "picks") == {TILE_J_FLAT}
    assert _tile_widths(m, "rowsums") == {TILE_J}
    assert TILE_J_FLAT > TILE_J and TILE_I == 16


def test_tile_rows_carry_their_bound_to_the_llvm_loop():
    """A flat tile's row loop says it runs at most the tile's width
    (kir.For.max_trip), through the later kernel IR passes (split's pieces
    keep it), and the cpu backend spells it as an un-interleaved vector loop
    (emit_llvm.SHORT_TRIP). (rowsums' elements loop: its tiles are register
    tiles, mc/tile.py, whose rows are not marked.)"""
    from pyshark.codegen import stages as ST
    from pyshark.codegen.cpu.emit import emit_module
    from pyshark.codegen.cpu.emit_llvm import SHORT_TRIP
    m = lower(SRC)
    bounds = {name: {f.max_trip for f in stms(m, name, K.For) if f.var.name.startswith("j")}
              for name in ("stencil", "picks")}
    assert bounds == {"stencil": {TILE_J_FLAT}, "picks": {TILE_J_FLAT}}
    assert TILE_J_FLAT <= SHORT_TRIP
    import textwrap
    from pyshark.core.check import check_program
    from pyshark.translate import translate_source
    program = translate_source(textwrap.dedent(SRC), "<test>")
    check_program(program)
    kernels = ST.run_stages(program, ST.pipeline_for(None), check=True)
    marked = [s for f in kernels.functions for s in K.walk_stms(f.body)
              if isinstance(s, K.For) and s.max_trip]
    assert len(marked) >= 3
    text = emit_module(kernels)
    assert text.count('!"llvm.loop.interleave.count", i32 1') >= 1
    assert text.count("llvm.loop.interleave.count") >= 1


@pytest.fixture(scope="module", params=["kir", "cpu"])
def wrappers(request, tmp_path_factory):
    return python_and(request.param, SRC, tmp_path_factory, "flat_tiles")


SHAPES = [(0, 0), (1, 1), (1, 300), (3, 257), (16, 256), (17, 255), (33, 513), (2, 1)]


@pytest.mark.parametrize("n,m", SHAPES)
def test_nests_agree_with_python_mode(wrappers, n, m):
    py, w = wrappers
    rng = np.random.default_rng(n * 1000 + m)
    a = rng.standard_normal((n, m)).astype(np.float32)
    s = rng.standard_normal((n, m)).astype(np.float32)
    if n and m:
        a[0, m - 1] = np.nan
        got, want = w.stencil(a, s), py.stencil(a, s)
        assert got.shape == want.shape == (n, m)
        np.testing.assert_array_equal(got, want)     # elementwise: bit-exact, NaN included
    ai = rng.integers(-9, 9, (n, m))
    idx = rng.integers(0, max(m, 1), m)
    got, want = w.picks(ai, idx), py.picks(ai, idx)
    assert got.shape == want.shape and np.array_equal(got, want)
    b = rng.standard_normal((5, m)).astype(np.float32)
    got, want = w.rowsums(a, b), py.rowsums(a, b)
    assert got.shape == want.shape == (n, 5)
    np.testing.assert_array_equal(got, want)


def test_wide_tiles_raise_python_modes_error(wrappers):
    py, w = wrappers
    a = np.ones((20, 300), np.int64)
    idx = np.zeros(300, np.int64)
    idx[270] = 300
    for x in (py, w):
        with pytest.raises(IndexError):
            x.picks(a, idx)
