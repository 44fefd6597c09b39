"""Maps of maps of a reduction over the rows of two matrices (matmul) on the
"opencl" backend through codegen/gpu/tile2d.py (2-D local-memory tiling with
8 x 8 register blocks, 4 x 4 for f64), against Python mode: sizes around the 128 x 128 block
and the k chunk, empty outputs and k = 0, f32 / f64 / wrapping i32, other
operators (max of products, min of differences with the inner map's arrays
swapped), a prefix and a suffix, a suffix reading a third matrix (sgemm's
beta * C), per-element statements (unsafe), the ShapeError of rows of other lengths,
other group sizes; transpose through local memory (gpu/transpose.py); and
the kernel IR (one work-group ParFor with local memory where it applies,
none where it declines)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.codegen import kir as K
from pyshark.codegen.target import gpu_target
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

SOURCE = '''
import pyshark.prelude as ps

M32 = ps.Array[ps.Array[ps.f32]]
M64 = ps.Array[ps.Array[ps.f64]]
I32s = ps.Array[ps.Array[ps.i32]]
I64s = ps.Array[ps.Array[ps.i64]]


def dot(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), ps.map(lambda x, y: x * y, xs, ys))


@ps.entry
def matmul(a: M32, b: M32) -> M32:
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: dot(row, col), bt), a)


@ps.entry
def matmul_nt(a: M32, c: M32) -> M32:
    """a @ c.T: the rows of a against the rows of c (lengths may differ)."""
    return ps.map(lambda row: ps.map(lambda col: dot(row, col), c), a)


@ps.entry
def matmul_i32(a: I32s, b: I32s) -> I32s:
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: ps.reduce(
        lambda x, y: x + y, ps.i32(0), ps.map(lambda u, v: u * v, row, col)), bt), a)


@ps.entry
def affine_f64(s: ps.f64, a: M64, b: M64) -> M64:
    """A prefix on the host (h) and a suffix per element."""
    bt = ps.transpose(b)

    def one(row: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
        h = s * 2.0
        return ps.map(lambda col: ps.reduce(lambda x, y: x + y, 0.0,
                                            ps.map(lambda u, v: u * v, row, col)) * h + 1.0, bt)
    return ps.map(one, a)


@ps.entry
def max_prod(a: M32, b: M32) -> M32:
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: ps.reduce(
        lambda x, y: ps.max(x, y), ps.f32(-1e30), ps.map(lambda u, v: u * v, row, col)), bt), a)


@ps.entry
def min_diff(a: I64s, c: I64s) -> I64s:
    """The inner map's arrays in the other order (col, row)."""
    return ps.map(lambda row: ps.map(lambda col: ps.reduce(
        lambda x, y: ps.min(x, y), 1 << 40, ps.map(lambda v, u: u - 3 * v, col, row)), c), a)


@ps.entry
def div_sum(a: I64s, c: I64s) -> I64s:
    """g can fail (ZeroDivisionError): declined, the flat nest."""
    return ps.map(lambda row: ps.map(lambda col: ps.reduce(
        lambda x, y: x + y, 0, ps.map(lambda u, v: u // v, row, col)), c), a)


@ps.entry
def scaled(a: M32, b: M32) -> M32:
    """Per-element statements (row[0], col[1]): tiled when unsafe drops
    their index checks, declined otherwise."""
    bt = ps.transpose(b)

    def one(row: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        h = row[0]
        return ps.map(lambda col: ps.reduce(lambda x, y: x + y, ps.f32(0),
                                            ps.map(lambda u, v: u * v * h, row, col)) - col[1], bt)
    return ps.map(one, a)


@ps.entry
def transpose_i32(a: I32s) -> I32s:
    return ps.transpose(a)


@ps.entry
def transpose_bool(a: ps.Array[ps.Array[bool]]) -> ps.Array[ps.Array[bool]]:
    return ps.transpose(a)


@ps.entry
def transpose3(a: ps.Array[ps.Array[ps.Array[ps.f64]]]) -> ps.Array[ps.Array[ps.Array[ps.f64]]]:
    """Rank 3: declined, the shared cache-blocked copy."""
    return ps.transpose(a)


@ps.entry
def sgemm(a: M32, b: M32, c: M32, alpha: ps.f32, beta: ps.f32) -> M32:
    """parboil's sgemm as Futhark writes it: the sum with beta * c fuses into
    the product across the zip's length check, so the suffix reads c[i, j]."""
    bt = ps.transpose(b)
    p = ps.map(lambda row: ps.map(lambda col: dot(row, col) * alpha, bt), a)
    q = ps.map(lambda r: ps.map(lambda x: x * beta, r), c)
    return ps.map(lambda r, s: ps.map(lambda x, y: x + y, r, s), q, p)


@ps.entry
def row_scaled(a: M32, b: M32) -> M32:
    """Y depends on the row: declined."""
    def one(row: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        ys = ps.map(lambda r: ps.map(lambda v: v * row[0], r), b)
        return ps.map(lambda col: dot(row, col), ys)
    return ps.map(one, a)
'''

pytestmark = pytest.mark.skipif("opencl" not in available_backends(),
                                reason="no OpenCL device")

rng = np.random.default_rng(11)
SIZES = [(0, 3, 0), (0, 4, 5), (4, 0, 5), (1, 1, 1), (7, 5, 3), (63, 65, 17), (64, 64, 64),
         (130, 33, 70), (1, 200, 1), (129, 9, 257), (255, 16, 128)]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    p = tmp_path_factory.mktemp("tile2d") / "tile2d.py"
    p.write_text(SOURCE)
    return str(p)


@lru_cache(maxsize=None)
def _wrapper(path: str, backend: str, group: str = "", unsafe: bool = False):
    mp = pytest.MonkeyPatch()
    if group:
        mp.setenv("PYSHARK_OPENCL_GROUP", group)
    try:
        w = Wrapper(backend=backend, unsafe=True) if unsafe else Wrapper(backend=backend)
        w.add_source_file(path)
        w.compile_and_load()
    finally:
        mp.undo()
    return w


def _both(source, entry, *args, group="", unsafe=False):
    """The entry's outcome on opencl and in Python mode: equal values
    (floats within assert_close's default tolerance, ints exactly), or the
    same exception type."""
    got = want = None
    try:
        got = getattr(_wrapper(source, "opencl", group, unsafe), entry)(*args)
    except Exception as exc:          # noqa: BLE001
        got = exc
    try:
        want = getattr(_wrapper(source, "python"), entry)(*args)
    except Exception as exc:          # noqa: BLE001
        want = exc
    if isinstance(want, Exception) or isinstance(got, Exception):
        assert type(got) is type(want), f"opencl: {got!r}, python: {want!r}"
        return got
    assert np.shape(got) == np.shape(want)
    assert_close(got, want)
    return got


def _mats(n, k, m, dtype):
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        return (rng.integers(info.min, info.max, (n, k), dtype=dtype, endpoint=True),
                rng.integers(info.min, info.max, (k, m), dtype=dtype, endpoint=True))
    return (rng.standard_normal((n, k)).astype(dtype),
            rng.standard_normal((k, m)).astype(dtype))


@pytest.mark.parametrize("n,k,m", SIZES)
def test_matmul(source, n, k, m):
    a, b = _mats(n, k, m, np.float32)
    _both(source, "matmul", a, b)
    a, b = _mats(n, k, m, np.int32)                 # products and sums wrap
    _both(source, "matmul_i32", a, b)
    a, b = _mats(n, k, m, np.float64)
    _both(source, "affine_f64", 0.75, a, b)
    a, b = _mats(n, k, m, np.float32)
    _both(source, "max_prod", a, b)
    a, c = (rng.integers(-1000, 1000, (x, k)) for x in (n, m))
    _both(source, "min_diff", a, c)
    a, b = _mats(n, k, m, np.float32)
    c = rng.standard_normal((n, m)).astype(np.float32)
    _both(source, "sgemm", a, b, c, np.float32(1.5), np.float32(-0.5))


def test_sgemm_with_a_c_of_another_shape_raises_as_python_mode(source):
    f = np.float32
    for n, k, m, cn, cm in [(3, 4, 5, 2, 5), (3, 4, 5, 3, 4), (0, 4, 5, 0, 3), (3, 4, 0, 3, 1)]:
        a, b = _mats(n, k, m, f)
        _both(source, "sgemm", a, b, np.ones((cn, cm), f), f(2), f(1))


def test_rows_of_other_lengths(source):
    a, c = np.ones((3, 4), np.float32), np.ones((5, 6), np.float32)
    err = _both(source, "matmul_nt", a, c)
    assert type(err).__name__ == "ShapeError"
    # no element, no check (Python mode never compares the rows)
    _both(source, "matmul_nt", np.ones((0, 4), np.float32), c)
    _both(source, "matmul_nt", a, np.ones((0, 6), np.float32))


def test_declined_shapes_still_compute(source):
    a = rng.integers(-50, 50, (9, 7))
    c = rng.integers(1, 50, (66, 7))
    _both(source, "div_sum", a, c)
    c[40, 3] = 0
    err = _both(source, "div_sum", a, c)
    assert isinstance(err, ZeroDivisionError)
    for n, k, m in [(0, 2, 3), (5, 3, 66), (70, 4, 2)]:
        a, b = _mats(n, k, m, np.float32)
        _both(source, "row_scaled", a, b.T.copy())


@pytest.mark.parametrize("unsafe", [False, True])
def test_per_element_statements(source, unsafe):
    for n, k, m in [(1, 2, 1), (70, 33, 66), (5, 40, 130)]:
        a, b = _mats(n, k, m, np.float32)
        _both(source, "scaled", a, b, unsafe=unsafe)


@pytest.mark.parametrize("group", ["128", "64"])
def test_other_group_sizes(source, group):
    for n, k, m in [(1, 1, 1), (33, 40, 65), (70, 17, 9)]:
        a, b = _mats(n, k, m, np.float32)
        _both(source, "matmul", a, b, group=group)


@pytest.mark.parametrize("n,m", [(0, 5), (5, 0), (1, 1), (31, 33), (64, 65), (100, 3)])
def test_transpose(source, n, m):
    a = rng.integers(-2 ** 31, 2 ** 31 - 1, (n, m), dtype=np.int32)
    assert np.array_equal(_both(source, "transpose_i32", a), a.T)
    _both(source, "transpose_bool", a > 0)
    _both(source, "transpose3", rng.standard_normal((n, m, 2)))


# -- the kernel IR ------------------------------------------------------------

def _kernels(path, target, unsafe=False):
    from pyshark.codegen.stages import build_kernels
    from pyshark.core.check import check_program
    from pyshark.translate import translate_file
    from pyshark.wrapper.backend import Options
    program = translate_file(path)
    check_program(program)
    m = build_kernels(program, Options(unsafe=unsafe), target=target, until="hoist-allocations")
    return {f.name.removeprefix("pyshark_"): f for f in m.functions}


def _groups(f):
    return [s for s in K.walk_stms(f.body) if isinstance(s, K.ParFor) and s.group_size]


TILED = ["matmul", "matmul_nt", "matmul_i32", "affine_f64", "max_prod", "min_diff", "sgemm"]


def test_kernel_ir(source):
    fns = _kernels(source, gpu_target(256, 65536, True))
    for name in TILED:
        # a transpose (below) is a work-group kernel of one local array
        gs = [g for g in _groups(fns[name])
              if sum(isinstance(s, K.LocalAlloc) for s in g.body.stms) != 1]
        # two buffers of TK k-rows of the block's side + 4: 8 x 8 register
        # blocks of 4-byte elements (a 128 x 128 block, TK = 16), and beside
        # it (chosen on the host for few blocks) 4 x 4 ones (64 x 64) and 2 x 2
        # ones (32 x 32); 8-byte elements: 4 x 4 and 2 x 2, TK = 8
        f64 = name in ("affine_f64", "min_diff")
        sides = ([(1, 8, 68), (1, 8, 36)] if f64
                 else [(0, 16, 132), (1, 16, 68), (1, 16, 36)])
        assert len(gs) == len(sides), name
        gs.sort(key=lambda g: -sum(1 for _ in K.walk_stms(g.body)))    # 8 x 8 first
        for g, (two, tk, side) in zip(gs, sides):
            assert g.group_size == 256, name
            allocs = [s for s in g.body.stms if isinstance(s, K.LocalAlloc)]
            # (f32 128 x 128 with TK = 16: one buffer in the target's 32 KiB)
            assert [a.count for a in allocs] == [(1 + two) * tk * side] * 2, name
            # double buffered: one before the chunks, one per chunk, one
            # before the last partial chunk's fold (one buffer: two per chunk)
            assert sum(isinstance(s, K.Barrier) for s in K.walk_stms(g.body)) == 3, name
            assert not any(isinstance(s, K.Fail) for s in K.walk_stms(g.body)), name
    for name in ("div_sum", "row_scaled", "scaled"):     # no tiled product
        assert all(sum(isinstance(s, K.LocalAlloc) for s in g.body.stms) == 1
                   for g in _groups(fns[name])), name
    unsafe = _kernels(source, gpu_target(256, 65536, True), unsafe=True)
    assert [sum(isinstance(s, K.LocalAlloc) for s in g.body.stms)
            for g in _groups(unsafe["scaled"])] == [1, 2, 2, 2]
    # transpose: one work-group kernel with a 32 x 33 tile; rank 3 declines
    for name in ("transpose_i32", "transpose_bool"):
        (g,) = _groups(fns[name])
        assert [s.count for s in g.body.stms if isinstance(s, K.LocalAlloc)] == [32 * 33]
    assert not _groups(fns["transpose3"])
    # groups of 128 work-items: 8 x 16 of them, a 64 x 128 block
    small = _kernels(source, gpu_target(128, 65536, True))
    (tr, _, _, g) = _groups(small["matmul"])
    assert g.group_size == tr.group_size == 128
    assert sorted(s.count for s in g.body.stms if isinstance(s, K.LocalAlloc)) == [2 * 16 * 68,
                                                                                    2 * 16 * 132]
    # local memory for one buffer of TK = 8 of the 64 x 64 block only (4352 bytes),
    # beside the 32 x 32 one
    one = _kernels(source, gpu_target(256, 4400, True))
    (tr, _, g) = _groups(one["matmul"])
    assert [s.count for s in g.body.stms if isinstance(s, K.LocalAlloc)] == [8 * 68] * 2
    assert sum(isinstance(s, K.Barrier) for s in K.walk_stms(g.body)) == 3
    # too little for that: the 32 x 32 block alone (one buffer of TK = 8: 2304
    # bytes; the transpose's 32 x 33 tile, 4224 bytes, still fits)
    tiny = _kernels(source, gpu_target(256, 4300, True))
    (tr, g) = _groups(tiny["matmul"])
    assert [s.count for s in g.body.stms if isinstance(s, K.LocalAlloc)] == [8 * 36] * 2
    # and too little for any block: declined
    none = _kernels(source, gpu_target(256, 2000, True))
    assert len(_groups(none["matmul"])) == 0
