"""reduce_by_index on the "opencl" backend through codegen/gpu/seghist.py
(local-memory sub-histograms and atomic updates), against Python mode up to
1023 elements and a NumPy model of the same semantics at 2**20 + 3: i32 /
i64 / f32 / f64 with +, max and min (NaN values included), 1 to 100000
bins known at compile time or only at run time, out-of-range indices,
element code that can fail, a tuple operator (the mc fallback); and the
kernel IR the gpu lowering makes for each (work-group ParFors, atomics)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.codegen import kir as K
from pyshark.codegen.target import gpu_target
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

TYPES = ["i32", "i64", "f32", "f64"]
OPS = {"add": ("a + b", "ps.{t}(0)"), "max": ("ps.max(a, b)", "ps.lowest(ps.{t})"),
       "min": ("ps.min(a, b)", "ps.highest(ps.{t})")}
CONST_BINS = [1, 7, 256, 5000, 100000]
BINS = [1, 7, 256, 5000, 100000]
SIZES = [0, 1, 7, 1023, 2 ** 20 + 3]
BIG = 2 ** 20 + 3


def _source() -> str:
    src = ["import pyshark.prelude as ps\n"]
    for t in TYPES:
        for op, (f, ne) in OPS.items():
            src.append(f"""
@ps.entry
def {op}_{t}(dest: ps.Array[ps.{t}], idxs: ps.Array[ps.i64], vals: ps.Array[ps.{t}]) -> ps.Array[ps.{t}]:
    return ps.reduce_by_index(dest, lambda a, b: {f}, {ne.format(t=t)}, idxs, vals)
""")
    for b in CONST_BINS:
        src.append(f"""
@ps.entry
def count_{b}(idxs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    ones = ps.replicate(len(idxs), ps.i32(1))
    return ps.reduce_by_index(ps.replicate({b}, ps.i32(0)), lambda a, b: a + b, ps.i32(0), idxs, ones)
""")
    src.append("""
@ps.entry
def fmax_256(idxs: ps.Array[ps.i32], vals: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    lo = ps.lowest(ps.f32)
    return ps.reduce_by_index(ps.replicate(256, lo), lambda a, b: ps.max(a, b), lo, idxs, vals)


@ps.entry
def divided(k: ps.i64, idxs: ps.Array[ps.i64], vals: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    # the values' map can fail (k == 0): it runs in a plain ParFor, not in the group kernel
    qs = ps.map(lambda v: v // k, vals)
    return ps.reduce_by_index(ps.replicate(256, 0), lambda a, b: a + b, 0, idxs, qs)


@ps.entry
def divided_dyn(k: ps.i64, dest: ps.Array[ps.i64], idxs: ps.Array[ps.i64], vals: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    qs = ps.map(lambda v: v // k, vals)
    return ps.reduce_by_index(dest, lambda a, b: a + b, 0, idxs, qs)


@ps.entry
def pair(idxs: ps.Array[ps.i64], xs: ps.Array[ps.i32], ys: ps.Array[ps.f32]) -> tuple[ps.Array[ps.i32], ps.Array[ps.f32]]:
    dest = ps.zip(ps.replicate(7, ps.i32(0)), ps.replicate(7, ps.f32(1)))
    out = ps.reduce_by_index(dest, lambda a, b: (a[0] + b[0], ps.max(a[1], b[1])),
                             (ps.i32(0), ps.lowest(ps.f32)), idxs, ps.zip(xs, ys))
    return ps.unzip(out)
""")
    return "".join(src)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    p = tmp_path_factory.mktemp("ghist") / "ghist.py"
    p.write_text(_source())
    return p


@lru_cache(maxsize=None)
def _wrapper(path: str, backend: str) -> Wrapper:
    w = Wrapper(backend)
    w.add_source_file(path)
    return w.compile_and_load()


def _kernels(path, atomics64=True) -> dict:
    from pyshark.codegen.stages import build_kernels
    from pyshark.core.check import check_program
    from pyshark.translate import translate_file
    from pyshark.wrapper.backend import Options
    p = translate_file(str(path))
    check_program(p)
    m = build_kernels(p, Options(), target=gpu_target(256, 65536, atomics64),
                      until="hoist-allocations")
    return {f.name.removeprefix("pyshark_"): f for f in m.functions}


def _walk(b: K.Block):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from _walk(sb)


def _shape(f: K.Function):
    """(#work-group ParFors, #plain ParFors with atomics, #atomics on local memory)."""
    groups = plain = local = 0
    for s in _walk(f.body):
        if isinstance(s, K.ParFor):
            atoms = [a for a in _walk(s.body) if isinstance(a, K.AtomicUpdate)]
            if s.group_size is not None:
                groups += 1
                local += sum(K.type_of(a.ptr).space == "local" for a in atoms)
            elif atoms:
                plain += 1
    return groups, plain, local


# -- the kernel IR ---------------------------------------------------------------


def test_kernel_shapes(source):
    ks = _kernels(source)
    for t in TYPES:
        for op in OPS:
            # bins known at run time: a host `if` between the group kernel and global atomics
            assert _shape(ks[f"{op}_{t}"]) == (1, 1, 1), (op, t)
    for b in (1, 7, 256):
        assert _shape(ks[f"count_{b}"]) == (1, 0, 1), b
    for b in (5000, 100000):                     # too many bins for the group: global atomics
        assert _shape(ks[f"count_{b}"]) == (0, 1, 0), b
    assert _shape(ks["fmax_256"]) == (1, 0, 1)
    # the failing map is computed by a plain ParFor before the group kernel
    f = ks["divided"]
    assert _shape(f) == (1, 0, 1)
    assert any(isinstance(s, K.ParFor) and s.group_size is None
               and any(isinstance(x, K.Fail) for x in _walk(s.body)) for s in _walk(f.body))
    assert _shape(ks["divided_dyn"]) == (1, 1, 1)
    assert _shape(ks["pair"]) == (0, 0, 0)      # tuple operator: mc fallback, no atomics
    ks32 = _kernels(source, atomics64=False)     # no 64-bit atomics: 64-bit types fall back
    assert _shape(ks32["add_i64"]) == (0, 0, 0) and _shape(ks32["max_f64"]) == (0, 0, 0)
    assert _shape(ks32["add_i32"]) == (1, 1, 1)


def test_integer_add_is_an_atomic_add(source):
    f = _kernels(source)["count_256"]
    atoms = [s for s in _walk(f.body) if isinstance(s, K.AtomicUpdate)]
    assert atoms and all(isinstance(a.value, K.Bin) and a.value.op == "add"
                         and a.value.x == a.old for a in atoms)


# -- running it ----------------------------------------------------------------------

pytestmark_ocl = pytest.mark.skipif("opencl" not in available_backends(),
                                    reason="opencl backend unavailable (no OpenCL device)")


def _inputs(t: str, op: str, bins: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    dt = np.dtype({"i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}[t])
    idxs = rng.integers(-3, bins + 3, n).astype(np.int64)
    vals = rng.integers(-50, 50, n).astype(dt)       # integral: float sums exact in any order
    dest = rng.integers(-20, 20, bins).astype(dt)
    if t.startswith("i") and op != "add" and n:
        info = np.iinfo(dt)
        vals[:: max(1, n // 5)] = info.max if op == "max" else info.min
    if t.startswith("f") and op != "add" and n > 3:
        vals[n // 2] = np.nan
        dest[-1] = np.nan
    return dest, idxs, vals


def _model(op: str, dest, idxs, vals):
    out = dest.copy()
    ok = (idxs >= 0) & (idxs < len(dest))
    fn = {"add": np.add, "max": np.maximum, "min": np.minimum}[op]
    with np.errstate(invalid="ignore"):
        fn.at(out, idxs[ok], vals[ok])
    return out


@pytestmark_ocl
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("bins", BINS)
@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("op", list(OPS))
def test_runtime_bins(source, op, t, bins, n):
    if n == BIG and bins in (7, 5000):
        pytest.skip("the large size at 1, 256 and 100000 bins covers both paths")
    dest, idxs, vals = _inputs(t, op, bins, n, seed=bins * 31 + n)
    got = getattr(_wrapper(str(source), "opencl"), f"{op}_{t}")(dest, idxs, vals)
    if n < BIG:
        want = getattr(_wrapper(str(source), "python"), f"{op}_{t}")(dest, idxs, vals)
    else:
        want = _model(op, dest, idxs, vals)
    assert got.dtype == dest.dtype
    assert_close(got, want)


@pytestmark_ocl
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("bins", CONST_BINS)
def test_constant_bins(source, bins, n):
    rng = np.random.default_rng(n + bins)
    idxs = rng.integers(-2, bins + 2, n).astype(np.int32)
    if n:
        idxs[0] = np.iinfo(np.int32).min
    got = getattr(_wrapper(str(source), "opencl"), f"count_{bins}")(idxs)
    if n < BIG:
        want = getattr(_wrapper(str(source), "python"), f"count_{bins}")(idxs)
    else:
        ok = (idxs >= 0) & (idxs < bins)
        want = np.bincount(idxs[ok], minlength=bins).astype(np.int32)
    assert np.array_equal(got, want)


@pytestmark_ocl
@pytest.mark.parametrize("n", SIZES)
def test_float_max_with_nan(source, n):
    rng = np.random.default_rng(n)
    idxs = rng.integers(-1, 257, n).astype(np.int32)
    vals = rng.standard_normal(n).astype(np.float32)
    vals[:: 97] = np.nan
    got = _wrapper(str(source), "opencl").fmax_256(idxs, vals)
    if n < BIG:
        want = _wrapper(str(source), "python").fmax_256(idxs, vals)
    else:
        want = _model("max", np.full(256, -np.inf, np.float32), idxs.astype(np.int64), vals)
    assert np.array_equal(got, want, equal_nan=True)


@pytestmark_ocl
@pytest.mark.parametrize("n", [0, 7, 1023, BIG])
def test_failing_element_code(source, n):
    rng = np.random.default_rng(n)
    idxs = rng.integers(-2, 300, n).astype(np.int64)
    vals = rng.integers(-1000, 1000, n).astype(np.int64)
    dest = np.arange(300, dtype=np.int64)
    ocl = _wrapper(str(source), "opencl")
    py = _wrapper(str(source), "python")
    for k in (3, -7):
        got = ocl.divided(k, idxs, vals)
        got_dyn = ocl.divided_dyn(k, dest, idxs, vals)
        if n < BIG:
            assert np.array_equal(got, py.divided(k, idxs, vals))
            assert np.array_equal(got_dyn, py.divided_dyn(k, dest, idxs, vals))
        else:
            assert np.array_equal(got, _model("add", np.zeros(256, np.int64), idxs, vals // k))
            assert np.array_equal(got_dyn, _model("add", dest, idxs, vals // k))
    if n:
        with pytest.raises(ZeroDivisionError):
            ocl.divided(0, idxs, vals)
        with pytest.raises(ZeroDivisionError):
            ocl.divided_dyn(0, dest, idxs, vals)


@pytestmark_ocl
@pytest.mark.parametrize("n", [0, 1, 7, 1023])
def test_tuple_operator_falls_back(source, n):
    rng = np.random.default_rng(n)
    idxs = rng.integers(-2, 9, n).astype(np.int64)
    xs = rng.integers(-9, 9, n).astype(np.int32)
    ys = rng.standard_normal(n).astype(np.float32)
    got = _wrapper(str(source), "opencl").pair(idxs, xs, ys)
    want = _wrapper(str(source), "python").pair(idxs, xs, ys)
    assert_close(got, want)
