"""Streamed tiles (codegen/mc/stream_tile.py, session 39): a two-dimensional
elementwise nest whose large fresh result nothing reads afterwards, with
rows of at most TILE_J_FLAT elements, computes each tile into a buffer and
writes it out by one nontemporal copy (kir.CopyMem `nontemporal`,
cpu/emit_stream.py: whole lines streamed, the ragged ends ordinary).

The size threshold is lowered here so that small inputs take the streamed
version: results must equal Python mode for every element type, row width
(aligned or not to a cache line), thread count and failure, on native code
and on the kernel IR interpreter; the kernel IR must have the promised
shape; and the checker and the in-place pass must treat the copy as
documented."""
from __future__ import annotations

import numpy as np
import pytest

from backend_pair import source_file
from pyshark import Wrapper
from pyshark.codegen import kir as K
from pyshark.codegen import stages
from pyshark.codegen.kir_backend import KirModule
from pyshark.codegen.kir_check import KirError, check_function
from pyshark.codegen.mc import segmap
from pyshark.codegen.target import MULTICORE
from pyshark.core.types import F32, I64
from pyshark.wrapper.backend import translate_and_check

SRC = '''
import pyshark.prelude as ps

M32 = ps.Array[ps.Array[ps.f32]]


@ps.entry
def scale_add(a: M32, b: M32) -> M32:
    return ps.map(lambda r, s: ps.map(lambda x, y: x * 0.5 + y, r, s), a, b)


@ps.entry
def twice64(a: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.Array[ps.f64]]:
    return ps.map(lambda r: ps.map(lambda x: x + x, r), a)


@ps.entry
def greater(a: M32, b: M32) -> ps.Array[ps.Array[bool]]:
    return ps.map(lambda r, s: ps.map(lambda x, y: x > y, r, s), a, b)


@ps.entry
def bump_u8(a: ps.Array[ps.Array[ps.u8]]) -> ps.Array[ps.Array[ps.u8]]:
    return ps.map(lambda r: ps.map(lambda x: x + ps.u8(1), r), a)


@ps.entry
def shifted(a: M32, ks: ps.Array[int], xs: ps.Array[ps.f32]) -> M32:
    # row i adds xs[ks[i]]: an index out of range fails in that row
    return ps.map(lambda r, k: ps.map(lambda x: x + xs[k], r), a, ks)


@ps.entry
def summed(a: M32) -> ps.f32:
    # the nest's result is read afterwards: ordinary stores
    t = ps.map(lambda r: ps.map(lambda x: x * 2.0, r), a)
    return ps.sum(ps.map(lambda r: ps.sum(r), t))
'''

SHAPES = ((1, 1), (5, 3), (17, 16), (33, 255), (40, 256), (3, 257), (0, 4), (4, 0))


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return source_file(tmp_path_factory, "stream_tile_mod", SRC)


@pytest.fixture
def low_threshold(monkeypatch):
    monkeypatch.setattr(segmap, "STREAM_MIN_BYTES", 64)


def _args(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    if a.size:
        a.flat[::7] = np.nan
    n = shape[0]
    xs = rng.standard_normal(9).astype(np.float32)
    ks = rng.integers(0, 9, n)
    bad = ks.copy()
    if n:
        bad[n // 2] = 9                                 # out of range in the middle row
    yield "scale_add", (a, b)
    yield "twice64", (a.astype(np.float64),)
    yield "greater", (a, b)
    yield "bump_u8", ((np.abs(np.nan_to_num(a)) * 100).astype(np.uint8),)
    yield "shifted", (a, ks, xs)
    yield "shifted", (a, bad, xs)
    yield "summed", (np.nan_to_num(a),)


def _outcome(w, entry, args):
    try:
        return w.invoke(entry, *args)
    except Exception as e:      # noqa: BLE001 - the class is what is compared
        return type(e).__name__


def _same(got, want) -> bool:
    if isinstance(want, str) or isinstance(got, str):
        return got == want
    if np.ndim(want) == 0:
        return bool(np.isclose(got, want, rtol=1e-4, atol=1e-4))
    got, want = np.asarray(got), np.asarray(want)
    return (got.dtype == want.dtype and got.shape == want.shape
            and np.array_equal(got, want, equal_nan=want.dtype.kind == "f"))


def test_native_results_equal_python_mode(src, tmp_path, low_threshold):
    ref = Wrapper("python", cache_dir=tmp_path / "py").add_source_file(src).compile_and_load()
    for threads in (1, 2, 3):
        w = Wrapper("cpu", cache_dir=tmp_path / f"c{threads}", num_threads=threads, tiered=False)
        w.add_source_file(src).compile_and_load()
        for shape in SHAPES:
            for entry, args in _args(shape, sum(shape)):
                got, want = _outcome(w, entry, args), _outcome(ref, entry, args)
                assert _same(got, want), (threads, shape, entry, got, want)


def _kernels(src):
    program = translate_and_check(src)
    return program, stages.build_kernels(program, target=MULTICORE, par_min=4)


def test_interpreted_results_equal_python_mode(src, tmp_path, low_threshold):
    """The interpreter checks every access of the tile buffers and the copies."""
    program, kernels = _kernels(src)
    interp = KirModule(kernels, program, {}, None)
    ref = Wrapper("python", cache_dir=tmp_path / "py").add_source_file(src).compile_and_load()
    for shape in SHAPES:
        for entry, args in _args(shape, 3 * sum(shape)):
            want = _outcome(ref, entry, args)
            try:
                got = interp.run_flat(entry, list(args))[0]
            except Exception as e:      # noqa: BLE001
                got = type(e).__name__
            assert _same(got, want), (shape, entry, got, want)


def test_the_kernels_stream_only_unread_results(src, low_threshold):
    _, kernels = _kernels(src)
    text = {f.name: K.pretty_module(K.Module([f])) for f in kernels.functions}
    for name in ("scale_add", "twice64", "greater", "bump_u8", "shifted"):
        t = text["pyshark_" + name]
        assert t.count("# nontemporal") == 1 and "<= 256i64)" in t, name
        # the tile buffer is neither put in place nor allocated per tile
        assert "ip_rp" not in t, name
    assert "# nontemporal" not in text["pyshark_summed"]


def test_the_default_threshold_is_streamings(src):
    _, kernels = _kernels(src)
    t = K.pretty_module(K.Module([f for f in kernels.functions if f.name == "pyshark_scale_add"]))
    assert f"(space_" in t and f">= {32 << 20 >> 2}i64)" in t


def test_the_checker_wants_a_prefetch_of_a_pointer_at_an_i64_index():
    p = K.KVar("p", K.Ptr(F32))
    check_function(K.Function("f", (p,), K.Block((K.Prefetch(p, K.KConst(1 << 40, I64)),))))
    with pytest.raises(KirError, match="prefetch"):
        check_function(K.Function("g", (p,), K.Block((K.Prefetch(p, K.KConst(1.0, F32)),))))


def test_the_checker_keeps_nontemporal_copies_inside_parfors():
    p = K.KVar("p", K.Ptr(F32))
    q = K.KVar("q", K.Ptr(F32))
    copy = K.CopyMem(p, q, K.KConst(4, I64), nontemporal=True)
    with pytest.raises(KirError, match="nontemporal copy outside a ParFor"):
        check_function(K.Function("f", (p, q), K.Block((copy,))))
    i = K.KVar("i", I64)
    par = K.ParFor(i, K.KConst(2, I64), K.Block((copy,)))
    check_function(K.Function("g", (p, q), K.Block((par,))))
