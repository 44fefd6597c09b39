"""Register tiling of map-of-reduce nests (codegen/mc/tile.py): the MR x NR
jammed reduction loop is built, gives Python mode's results at every shape
(edges, empty and one-element dimensions), is refused when its loop could
fail, and LLVM turns its accumulators into vectors."""
from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K
from pyshark.codegen.mc.tile import MR, NR
from pyshark.wrapper import available_backends


from test_lower import lower_optimised as lower, stms


MATMUL = """
import pyshark.prelude as ps

def dot(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), ps.map(lambda x, y: x * y, xs, ys))

@ps.entry
def mm(a: ps.Array[ps.Array[ps.f32]], b: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: dot(row, col), bt), a)

@ps.entry
def dist(a: ps.Array[ps.Array[ps.i64]], b: ps.Array[ps.Array[ps.i64]], s: int) -> ps.Array[ps.Array[ps.i64]]:
    # max over k of |a[i,k] - b[j,k]| + s, a map-of-reduce with another operator
    return ps.map(lambda r: ps.map(lambda c: ps.reduce(
        lambda x, y: max(x, y), 0, ps.map(lambda u, v: abs(u - v) + s, r, c)), b), a)

@ps.entry
def scaled(a: ps.Array[ps.Array[ps.f32]], b: ps.Array[ps.Array[ps.f32]], s: ps.f32) -> ps.Array[ps.Array[ps.f32]]:
    # sgemm's alpha: a scaling map fused into the product, an epilogue after the jammed loop
    bt = ps.transpose(b)
    p = ps.map(lambda row: ps.map(lambda col: dot(row, col), bt), a)
    return ps.map(lambda r: ps.map(lambda x: x * s + 1.0, r), p)

@ps.entry
def div_after(a: ps.Array[ps.Array[ps.i64]], b: ps.Array[ps.Array[ps.i64]], d: ps.Array[ps.i64]) -> ps.Array[ps.Array[ps.i64]]:
    # an epilogue that can raise (ZeroDivisionError at the element Python mode stops at): not jammed
    return ps.map(lambda r: ps.map(lambda c, e: ps.reduce(
        lambda x, y: x + y, 0, ps.map(lambda u, v: u * v, r, c)) // e, b, d), a)

@ps.entry
def divs(a: ps.Array[ps.Array[ps.i64]], b: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.Array[ps.i64]]:
    # the k loop can raise ZeroDivisionError: not jammed
    return ps.map(lambda r: ps.map(lambda c: ps.reduce(
        lambda x, y: x + y, 0, ps.map(lambda u, v: u // v, r, c)), b), a)
"""

SHAPES = [(0, 0, 0), (0, 3, 2), (3, 0, 2), (2, 3, 0), (1, 1, 1), (3, 5, 3), (4, 4, 4),
          (5, 7, 9), (17, 3, 33), (33, 17, 18), (16, 1, 20)]


def _jammed_loops(m: K.Module, name: str) -> list:
    """For loops whose body folds at least MR * NR accumulators."""
    out = []
    for f in stms(m, name, K.For):
        accs = {s.var.name for s in f.body.stms
                if isinstance(s, K.Set) and s.var.name.startswith("acc")}
        if len(accs) >= MR * NR and not any(isinstance(s, K.For) for s in f.body.stms):
            out.append(f)
    return out


def test_map_of_reduce_nest_is_register_tiled():
    m = lower(MATMUL)
    loops = _jammed_loops(m, "mm")
    assert loops
    for k in loops:       # nothing in a jammed loop can fail or allocate
        kinds = {type(s) for s in _walk(k.body)}
        assert not kinds & {K.Fail, K.Alloc, K.ParFor}
    assert _jammed_loops(m, "dist")
    assert _jammed_loops(m, "scaled")
    assert not _jammed_loops(m, "divs")
    assert not _jammed_loops(m, "div_after")


def _walk(b: K.Block):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from _walk(sb)


@pytest.fixture(scope="module", params=["kir", "cpu"])
def wrappers(request, tmp_path_factory):
    return python_and(request.param, MATMUL, tmp_path_factory, "tile")


@pytest.mark.parametrize("n,k,m", SHAPES)
def test_tiled_nests_agree_with_python_mode(wrappers, n, k, m):
    py, w = wrappers
    rng = np.random.default_rng(n * 10000 + k * 100 + m)
    a = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal((k, m)).astype(np.float32)
    got, want = w.mm(a, b), py.mm(a, b)
    assert got.shape == want.shape == (n, m)      # an empty a keeps b's width (the stand-in)
    # the same fold per element, reassociated by the vectorizer only
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(k, 1))
    ai = rng.integers(-9, 9, (n, k))
    bi = rng.integers(-9, 9, (m, k))
    for x, y in ((w.dist(ai, bi, 2), py.dist(ai, bi, 2)),
                 (w.divs(ai, np.where(bi == 0, 3, bi)), py.divs(ai, np.where(bi == 0, 3, bi)))):
        assert x.shape == y.shape and np.array_equal(x, y)
    got, want = w.scaled(a, b, np.float32(0.5)), py.scaled(a, b, np.float32(0.5))
    assert got.shape == want.shape == (n, m)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(k, 1))
    d = rng.integers(1, 4, m)
    x, y = w.div_after(ai, bi, d), py.div_after(ai, bi, d)
    assert x.shape == y.shape and np.array_equal(x, y)


def test_untiled_nest_raises_python_modes_error(wrappers):
    py, w = wrappers
    a = np.ones((6, 5), np.int64)
    b = np.ones((7, 5), np.int64)
    b[3, 2] = 0
    for x in (py, w):
        with pytest.raises(ZeroDivisionError):
            x.divs(a, b)
    d = np.ones(7, np.int64)
    d[4] = 0
    for x in (py, w):
        with pytest.raises(ZeroDivisionError):
            x.div_after(a, b, d)


@pytest.mark.skipif("cpu" not in available_backends(), reason="cpu backend unavailable")
def test_register_tile_accumulators_are_vectors(tmp_path):
    import contextlib
    import io
    from pyshark.cli import main
    src = tmp_path / "tile.py"
    src.write_text(textwrap.dedent(MATMUL))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["show", "--ir", "llvm", str(src)]) == 0
    text = buf.getvalue()
    # one vector loop (a basic block) carrying MR * NR vector accumulators
    best = 0
    for fn in re.findall(r"^define internal fastcc void @pyshark_mm\.parfor.*?^}", text,
                         re.S | re.M):
        for b in fn.split("\n\n"):
            best = max(best, len(re.findall(r"= phi <\d+ x float>", b)))
    assert best >= MR * NR, best
    # the accumulation: reassociable, and contracted with its product into an
    # FMA where LLVM finds one (the contract pass; LANGUAGE.md allows it)
    assert re.search(r"fadd reassoc (contract )?<\d+ x float>", text)


# --- jam_fold: a fold over a map whose function ends in a reduction --------

NEAREST = """
import pyshark.prelude as ps

def dist(p: ps.Array[ps.f32], c: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), ps.map(lambda x, y: (x - y) * (x - y), p, c))

@ps.entry
def nearest(ps_: ps.Array[ps.Array[ps.f32]], cs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[int]:
    return ps.map(lambda p: ps.argmin(ps.map(lambda c: dist(p, c), cs)), ps_)

@ps.entry
def total(ps_: ps.Array[ps.Array[ps.i64]], cs: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.i64]:
    # an integer fold of integer reductions: exact in any association
    return ps.map(lambda p: ps.reduce(lambda a, b: a + b, 0, ps.map(
        lambda c: ps.reduce(lambda a, b: a + b, 0, ps.map(lambda x, y: x * y, p, c)), cs)), ps_)
"""


def test_fold_of_reductions_is_jammed():
    from pyshark.codegen.mc.tile import KF
    m = lower(NEAREST)
    for name in ("nearest", "total"):
        loops = [f for f in stms(m, name, K.For)
                 if len({s.var.name for s in f.body.stms if isinstance(s, K.Set)
                         and s.var.name.startswith("acc")}) >= KF
                 and not any(isinstance(s, K.For) for s in f.body.stms)]
        assert loops, name


@pytest.fixture(scope="module", params=["kir", "cpu"])
def nearest_wrappers(request, tmp_path_factory):
    return python_and(request.param, NEAREST, tmp_path_factory, "near")


@pytest.mark.parametrize("k", [1, 2, 15, 16, 17, 35])
@pytest.mark.parametrize("d", [0, 1, 3, 16])
def test_jammed_fold_agrees_with_python_mode(nearest_wrappers, k, d):
    py, w = nearest_wrappers
    rng = np.random.default_rng(k * 100 + d)
    pts = rng.integers(0, 4, (9, d)).astype(np.float32)       # many ties
    cs = rng.integers(0, 4, (k, d)).astype(np.float32)
    if k > 3 and d:
        cs[3] = cs[1]                                         # an exact tie: first index
        cs[k - 1, 0] = np.nan                                 # a NaN distance
    assert np.array_equal(w.nearest(pts, cs), py.nearest(pts, cs))
    pi = rng.integers(-5, 5, (9, d))
    ci = rng.integers(-5, 5, (k, d))
    assert np.array_equal(w.total(pi, ci), py.total(pi, ci))
