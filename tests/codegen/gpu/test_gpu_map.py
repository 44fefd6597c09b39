"""ir.Map at host level on the "opencl" backend through codegen/gpu/segmap.py,
against Python mode: perfect 2-D and 3-D nests flattened to one work-item
per element (sizes 0, 1, 7, 17 x 61, 1023 x 3), a transposed read, a fused
producer, failing code inside (IndexError, ShapeError, ZeroDivisionError
still raised, also for an empty inner dimension), maps of a reduction over a
shared array tiled in local memory (n-body-like, with a prefix and a
suffix, f32 and f64) at widths around the group size, matmul-like nests,
and the kernel IR the gpu lowering makes for each (element-wise ParFors,
work-group ParFors with local memory, or the untiled fallback)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.codegen import kir as K
from pyshark.codegen.target import gpu_target
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

ROOT = Path(__file__).resolve().parents[3]

SOURCE = '''
import pyshark.prelude as ps

F32s = ps.Array[ps.f32]
F64s = ps.Array[ps.f64]
M32 = ps.Array[ps.Array[ps.f32]]


@ps.entry
def add2(a: M32, b: M32) -> M32:
    return ps.map(lambda r, s: ps.map(lambda x, y: x + y * 2, r, s), a, b)


def scale_row(c: ps.f64, r: F64s) -> F64s:
    h = r[0]                # once per row in Python mode: an empty row is an IndexError
    return ps.map(lambda x: x * h + c, r)


@ps.entry
def scale3(c: ps.f64, a: ps.Array[ps.Array[F64s]]) -> ps.Array[ps.Array[F64s]]:
    return ps.map(lambda p: ps.map(lambda r: scale_row(c, r), p), a)


@ps.entry
def transposed(m: ps.i64, a: M32) -> M32:
    return ps.tabulate_2d(m, ps.length(a), lambda i, j: a[j][i])


@ps.entry
def outer(xs: F32s, ys: F32s) -> M32:
    xs2 = ps.map(lambda x: x * 2, xs)
    return ps.map(lambda x: ps.map(lambda y: x * y - 1, ys), xs2)


@ps.entry
def gather2(k: ps.i64, n: ps.i64, m: ps.i64, xs: ps.Array[ps.i64]) -> ps.Array[ps.Array[ps.i64]]:
    return ps.tabulate_2d(n, m, lambda i, j: xs[i * k + j])


@ps.entry
def pairwise(xs: F32s, ys: F32s) -> F32s:
    return ps.map(lambda x: ps.reduce(lambda a, b: a + b, ps.f32(0),
                                      ps.map(lambda y: (x - y) * (x - y), ys)), xs)


@ps.entry
def pairwise64(xs: F64s, ys: F64s, ws: F64s) -> tuple[F64s, F64s]:
    def one(x: ps.f64):
        x2 = x * x
        s, t = ps.reduce(lambda a, b: (a[0] + b[0], ps.max(a[1], b[1])), (0.0, -1e300),
                         ps.map(lambda y, w: (w / (1.0 + x2 + y * y), y - x), ys, ws))
        return (s * 0.5, t)
    return ps.unzip(ps.map(one, xs))


@ps.entry
def divides(xs: ps.Array[ps.i64], ys: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.map(lambda x: ps.reduce(lambda a, b: a + b, 0, ps.map(lambda y: y // x, ys)), xs)


@ps.entry
def lookups(table: F32s, xs: F32s, idx: ps.Array[ps.i64]) -> F32s:
    return ps.map(lambda x: ps.reduce(lambda a, b: a + b, ps.f32(0),
                                      ps.map(lambda j: table[j] * x, idx)), xs)


@ps.entry
def count_below(xs: ps.Array[ps.i32], flags: ps.Array[bool], ys: ps.Array[ps.i32]) -> ps.Array[ps.i64]:
    return ps.map(lambda x: ps.reduce(lambda a, b: a + b, 0,
                                      ps.map(lambda f, y: 1 if f and y < x else 0, flags, ys)), xs)


@ps.entry
def matmul(a: M32, b: M32) -> M32:
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: ps.reduce(lambda x, y: x + y, ps.f32(0),
                                                            ps.map(lambda u, v: u * v, row, col)),
                                     bt), a)
'''

pytestmark = pytest.mark.skipif("opencl" not in available_backends(),
                                reason="no OpenCL device")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    p = tmp_path_factory.mktemp("gmap") / "gmap.py"
    p.write_text(SOURCE)
    return p


@lru_cache(maxsize=None)
def _wrapper(path: str, backend: str, unsafe: bool = False):
    w = Wrapper(backend=backend, unsafe=unsafe) if unsafe else Wrapper(backend=backend)
    w.add_source_file(path)
    w.compile_and_load()
    return w


def _both(source, entry, *args, unsafe=False, rtol=None):
    """The entry's outcome on opencl and in Python mode: equal values, or
    the same exception type."""
    got = want = None
    try:
        got = getattr(_wrapper(str(source), "opencl", unsafe), entry)(*args)
    except Exception as exc:          # noqa: BLE001
        got = exc
    try:
        want = getattr(_wrapper(str(source), "python"), entry)(*args)
    except Exception as exc:          # noqa: BLE001
        want = exc
    if isinstance(want, Exception) or isinstance(got, Exception):
        assert type(got) is type(want), f"opencl: {got!r}, python: {want!r}"
        return got
    kw = {} if rtol is None else {"rtol": rtol}
    assert_close(got, want, **kw)
    return got


rng = np.random.default_rng(7)
SHAPES2 = [(0, 0), (0, 5), (5, 0), (1, 1), (7, 7), (17, 61), (1023, 3)]


@pytest.mark.parametrize("shape", SHAPES2)
def test_2d_nest(source, shape):
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    _both(source, "add2", a, b)


def test_2d_nest_zipped_rows_of_other_lengths(source):
    # the inner map's length assert, also when the inner width is 0
    for sa, sb in [((3, 0), (3, 5)), ((3, 4), (3, 5))]:
        err = _both(source, "add2", np.ones(sa, np.float32), np.ones(sb, np.float32))
        assert type(err).__name__ == "ShapeError"


@pytest.mark.parametrize("shape", [(0, 0, 0), (1, 1, 1), (7, 7, 7), (2, 17, 61), (1023, 3, 2),
                                   (3, 0, 4)])
def test_3d_nest(source, shape):
    a = rng.standard_normal(shape)
    _both(source, "scale3", 1.5, a)


def test_3d_nest_failing_outer_statement_with_no_elements(source):
    err = _both(source, "scale3", 1.5, np.zeros((2, 3, 0)))
    assert isinstance(err, IndexError)


@pytest.mark.parametrize("n,m", [(0, 0), (1, 1), (7, 3), (17, 61), (1023, 3)])
def test_transposed_read(source, n, m):
    a = rng.standard_normal((n, m)).astype(np.float32)
    got = _both(source, "transposed", m, a)
    assert np.array_equal(np.asarray(got).reshape(m, n), a.T)


def test_transposed_read_out_of_range(source):
    err = _both(source, "transposed", 5, np.ones((3, 4), np.float32))
    assert isinstance(err, IndexError)


@pytest.mark.parametrize("n,m", [(0, 3), (1, 1), (17, 61), (3, 1023)])
def test_outer_product_of_a_fused_producer(source, n, m):
    _both(source, "outer", rng.standard_normal(n).astype(np.float32),
          rng.standard_normal(m).astype(np.float32))


def test_failing_index_inside_a_nest(source):
    xs = np.arange(100, dtype=np.int64)
    _both(source, "gather2", 10, 10, 10, xs)
    err = _both(source, "gather2", 10, 10, 11, xs)
    assert isinstance(err, IndexError)
    err = _both(source, "gather2", 10, 11, 10, xs)
    assert isinstance(err, IndexError)


@pytest.mark.parametrize("n", [0, 1, 7, 255, 256, 257, 1000])
def test_map_of_reduce_over_a_shared_array(source, n):
    xs = rng.standard_normal(n).astype(np.float32)
    for m in sorted({0, 1, n, 300}):
        ys = rng.standard_normal(m).astype(np.float32)
        _both(source, "pairwise", xs, ys, rtol=1e-5)


@pytest.mark.parametrize("n", [1, 7, 255, 257, 1000])
def test_map_of_tuple_reduce_with_prefix_and_suffix(source, n):
    xs, ys, ws = (rng.standard_normal(n) for _ in range(3))
    _both(source, "pairwise64", xs, ys, ws, rtol=1e-12)
    err = _both(source, "pairwise64", xs, ys, ws[:-1])
    assert type(err).__name__ == "ShapeError"


@pytest.mark.parametrize("n", [0, 1, 7, 257, 1000])
def test_map_of_reduce_over_shared_bool_and_int_arrays(source, n):
    xs = rng.integers(-50, 50, n).astype(np.int32)
    flags = rng.integers(0, 2, 600).astype(bool)
    ys = rng.integers(-50, 50, 600).astype(np.int32)
    _both(source, "count_below", xs, flags, ys)


def test_map_of_reduce_that_can_fail_is_untiled(source):
    xs = np.array([3, 1, -2, 5] * 70, dtype=np.int64)
    ys = np.arange(-300, 300, dtype=np.int64)
    _both(source, "divides", xs, ys)
    xs[200] = 0
    err = _both(source, "divides", xs, ys)
    assert isinstance(err, ZeroDivisionError)


@pytest.mark.parametrize("unsafe", [False, True])
def test_map_of_reduce_with_an_index_inside(source, unsafe):
    table = rng.standard_normal(50).astype(np.float32)
    idx = rng.integers(0, 50, 333).astype(np.int64)
    xs = rng.standard_normal(300).astype(np.float32)
    _both(source, "lookups", table, xs, idx, unsafe=unsafe, rtol=1e-5)
    if not unsafe:
        idx[100] = 50
        assert isinstance(_both(source, "lookups", table, xs, idx), IndexError)


@pytest.mark.parametrize("n,k,m", [(0, 3, 4), (1, 1, 1), (7, 5, 3), (17, 61, 9), (255, 7, 257)])
def test_matmul_like(source, n, k, m):
    a = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal((k, m)).astype(np.float32)
    _both(source, "matmul", a, b, rtol=1e-5)


@pytest.mark.parametrize("program,entry", [("nbody", "nbody_step"), ("matmul", "matmul")])
def test_benchmark_programs(program, entry):
    path = str(ROOT / "benchmarks" / "programs" / f"{program}.py")
    if program == "nbody":
        for n in [0, 1, 7, 255, 257, 1000]:
            args = [np.float32(0.1), np.float32(0.01)] + [
                rng.standard_normal(n).astype(np.float32) for _ in range(7)]
            args[5] = np.abs(args[5]) + np.float32(0.1)
            _both(path, entry, *args, rtol=1e-4)
    else:
        for n, k, m in [(1, 1, 1), (33, 65, 17), (64, 64, 64)]:
            _both(path, entry, rng.standard_normal((n, k)).astype(np.float32),
                  rng.standard_normal((k, m)).astype(np.float32), rtol=1e-5)


# -- the kernel IR ------------------------------------------------------------

def _kernels(path, unsafe=False):
    from pyshark.codegen.stages import build_kernels
    from pyshark.core.check import check_program
    from pyshark.translate import translate_file
    from pyshark.wrapper.backend import Options
    program = translate_file(str(path))
    check_program(program)
    return build_kernels(program, Options(unsafe=unsafe), target=gpu_target(256, 65536, True),
                         until="hoist-allocations")


def _walk(b: K.Block):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from _walk(sb)


def _parfors(module, entry):
    f = next(f for f in module.functions if f.name == f"pyshark_{entry}")
    return [s for s in _walk(f.body) if isinstance(s, K.ParFor)]


def _loops(b: K.Block):
    return [s for s in _walk(b) if isinstance(s, (K.For, K.While))]


@pytest.fixture(scope="module")
def kernels(source):
    return _kernels(source)


@pytest.mark.parametrize("entry", ["add2", "scale3", "transposed", "outer", "gather2"])
def test_nests_are_one_work_item_per_element(kernels, entry):
    pfs = _parfors(kernels, entry)
    assert pfs and all(p.group_size is None for p in pfs)
    # the element-wise loop has no loop inside (no 16 x 16 tiles, no rows);
    # the others only run outer statements of an empty space
    assert any(not _loops(p.body) and any(isinstance(s, K.Store) for s in _walk(p.body))
               for p in pfs)
    for p in pfs:
        if any(isinstance(s, K.Store) for s in _walk(p.body)):
            assert not _loops(p.body), entry


@pytest.mark.parametrize("entry", ["pairwise", "pairwise64", "count_below"])
def test_map_of_reduce_is_a_tiled_work_group_kernel(kernels, entry):
    groups = [p for p in _parfors(kernels, entry) if p.group_size is not None]
    assert len(groups) == 1
    body = groups[0].body
    assert any(isinstance(s, K.LocalAlloc) for s in body.stms)
    assert sum(isinstance(s, K.Barrier) for s in _walk(body)) == 4   # full tiles + the last
    assert not any(isinstance(s, K.Fail) for s in _walk(body))


def test_failing_map_of_reduce_is_one_plain_work_item_per_element(kernels):
    pfs = _parfors(kernels, "divides")
    assert all(p.group_size is None for p in pfs)
    assert any(isinstance(s, K.Fail) for p in pfs for s in _walk(p.body))


def test_unsafe_drops_the_check_that_kept_it_untiled(source, kernels):
    assert all(p.group_size is None for p in _parfors(kernels, "lookups"))
    unsafe = _kernels(source, unsafe=True)
    assert any(p.group_size is not None for p in _parfors(unsafe, "lookups"))


def test_nbody_and_matmul_are_tiled():
    nb = _kernels(ROOT / "benchmarks" / "programs" / "nbody.py")
    assert sum(p.group_size is not None for p in _parfors(nb, "nbody_step")) == 1
    mm = _kernels(ROOT / "benchmarks" / "programs" / "matmul.py")
    # the product: a 2-D tiled work-group kernel (gpu/tile2d.py; its own
    # tests are in test_gpu_tile2d.py) in three block sizes, the smaller ones
    # for outputs of fewer blocks than compute units, after the transpose's
    # (gpu/transpose.py)
    groups = [p for p in _parfors(mm, "matmul") if p.group_size is not None]
    assert [sum(isinstance(s, K.LocalAlloc) for s in g.body.stms) for g in groups] == [1, 2, 2, 2]
