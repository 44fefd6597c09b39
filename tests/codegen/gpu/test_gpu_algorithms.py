"""The work-group algorithms of codegen/gpu/ (segred, segscan, filter) on
the "opencl" backend (PoCL in the tests) against Python mode, at sizes
around the work-group size (256) and the tile size, and against a NumPy
reference of the same semantics at 2**20 + 3; and the kernel IR they
produce (work-group ParFors where they apply, none where they decline)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

HERE = Path(__file__).resolve().parent
SRC = HERE / "gpu_kernels.py"
SIZES = [0, 1, 7, 255, 256, 257, 1023, 2 ** 20 + 3]
BIG = 2 ** 20 + 3

pytestmark = pytest.mark.skipif("opencl" not in available_backends(),
                                reason="no OpenCL device here")


def _wrapper(backend: str, **options) -> Wrapper:
    w = Wrapper(backend, **options)
    w.add_source_file(SRC)
    return w.compile_and_load()


@pytest.fixture(scope="module")
def wrappers():
    return {"python": _wrapper("python"), "opencl": _wrapper("opencl")}


# -- inputs and NumPy references (for the size where Python mode is too slow) ----


def _rng(name, n):
    return np.random.default_rng(n * 31 + len(name))


def _with_nans(rng, xs, p=0.001):
    xs = xs.copy()
    xs[rng.random(len(xs)) < p] = np.nan
    return xs


def _affine_fold(ms, cs):
    """The composition of x -> m*x + c in order: (prod m, C) with wrapping i64."""
    m = ms.astype(np.int64)
    suffix = np.ones(len(m) + 1, np.int64)
    suffix[:-1] = np.cumprod(m[::-1])[::-1]
    return np.int64(suffix[0]), np.int64(np.sum(cs * suffix[1:]))


def _affine_scan(ms, cs):
    M, C = np.empty(len(ms), np.int64), np.empty(len(ms), np.int64)
    m, c = 1, 0
    for k, (a, b) in enumerate(zip(ms.tolist(), cs.tolist())):
        m, c = m * a, c * a + b
        M[k], C[k] = m, c
    return M, C


def _last_nonzero_scan(xs):
    pos = np.where(xs != 0, np.arange(len(xs)), -1)
    last = np.maximum.accumulate(pos) if len(xs) else pos
    return np.where(last >= 0, xs[np.maximum(last, 0)], 0).astype(xs.dtype)


def _segmented_scan(fs, xs):
    cs = np.cumsum(xs.astype(np.int64))
    start = np.maximum.accumulate(np.where(fs, np.arange(len(fs)), 0)) if len(fs) else fs
    before = np.where(start > 0, cs[np.maximum(start - 1, 0)], 0) if len(fs) else cs
    return np.logical_or.accumulate(fs) if len(fs) else fs, (cs - before).astype(np.int32)


CASES = {
    # name: (inputs(rng, n), reference(*inputs))
    "sum_f32": (lambda r, n: ((np.arange(n) % 7).astype(np.float32),),
                lambda xs: np.float32(xs.sum(dtype=np.float64))),
    "sum_sq_i64": (lambda r, n: (r.integers(-1000, 1000, n),),
                   lambda xs: np.int64((xs * xs - 3).sum())),
    "max_i32": (lambda r, n: (r.integers(-2 ** 31, 2 ** 31, n, dtype=np.int32),),
                lambda xs: xs.max() if len(xs) else np.int32(-2 ** 31)),
    "min_f64": (lambda r, n: (_with_nans(r, r.standard_normal(n)),),
                lambda xs: np.min(xs) if len(xs) else np.inf),
    "pymax_f64": (lambda r, n: (_with_nans(r, r.standard_normal(n)),),
                  lambda xs: np.nanmax(xs) if len(xs) else -np.inf),
    "compose": (lambda r, n: (r.integers(-1, 2, n), r.integers(-5, 6, n)), _affine_fold),
    "last_nonzero": (lambda r, n: ((r.integers(0, 2, n) * r.integers(-9, 9, n)).astype(np.int32),),
                     lambda xs: xs[xs != 0][-1] if (xs != 0).any() else np.int32(0)),
    "sum_and_count": (lambda r, n: (r.integers(-50, 50, n).astype(np.float64),),
                      lambda xs: (xs.sum(), np.int64((xs > 0).sum()),
                                  xs.max() if len(xs) else -np.inf)),
    "gather_sum": (lambda r, n: (r.integers(0, 100, n), r.integers(-9, 9, 100)),
                   lambda idx, ys: np.int64(ys[idx].sum())),
    "gather_compose": (lambda r, n: (r.integers(0, 100, n), r.integers(-9, 9, 100)),
                       lambda idx, ys: _affine_fold(ys[idx] % 3 - 1, ys[idx])),
    "cumsum_f32": (lambda r, n: ((np.arange(n) % 5).astype(np.float32),),
                   lambda xs: np.cumsum(xs, dtype=np.float64).astype(np.float32)),
    "cumsum_sq": (lambda r, n: (r.integers(-1000, 1000, n),), lambda xs: np.cumsum(xs * xs - 3)),
    "scan_compose": (lambda r, n: (r.integers(-1, 2, n), r.integers(-5, 6, n)), _affine_scan),
    "scan_last_nonzero": (lambda r, n: ((r.integers(0, 2, n) * r.integers(-9, 9, n)).astype(np.int32),),
                          _last_nonzero_scan),
    "scan_max_f64": (lambda r, n: (_with_nans(r, r.standard_normal(n), 1e-5),),
                     lambda xs: np.maximum.accumulate(xs) if len(xs) else xs),
    "scan_segmented": (lambda r, n: (r.random(n) < 0.001, r.integers(-9, 9, n, dtype=np.int32)),
                       _segmented_scan),
    "scan_gather": (lambda r, n: (r.integers(0, 100, n), r.integers(-9, 9, 100)),
                    lambda idx, ys: np.cumsum(ys[idx])),
    "filter_mod3": (lambda r, n: (r.integers(-1000, 1000, n),), lambda xs: xs[xs % 3 == 1]),
    "filter_not_nan": (lambda r, n: (_with_nans(r, r.standard_normal(n).astype(np.float32), 0.3),),
                       lambda xs: xs[~np.isnan(xs)]),
    "partition_half": (lambda r, n: (r.random(n),), lambda xs: (xs[xs > 0.5], xs[~(xs > 0.5)])),
    "filter_pairs": (lambda r, n: (r.integers(-5, 5, n, dtype=np.int32), r.random(n) < 0.3),
                     lambda xs, bs: (xs[bs | (xs < 0)], bs[bs | (xs < 0)])),
    "filter_gather": (lambda r, n: (r.integers(0, 100, n), r.integers(-9, 9, 100)),
                      lambda idx, ys: idx[ys[idx] > 0]),
    "filter_mapped_gather": (lambda r, n: (r.integers(0, 100, n), r.integers(-9, 9, 100)),
                             lambda idx, ys: ys[idx][ys[idx] > 0]),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_against_python_mode_or_numpy(wrappers, name, n):
    make, ref = CASES[name]
    args = make(_rng(name, n), n)
    got = wrappers["opencl"].invoke(name, *args)
    if n < BIG:
        want = wrappers["python"].invoke(name, *args)
        assert_close(got, want)
    want = ref(*args)
    assert_close(got, want)


@pytest.mark.parametrize("n", [1, 7, 257, BIG])
@pytest.mark.parametrize("name", ["gather_sum", "gather_compose", "scan_gather", "filter_gather",
                                  "filter_mapped_gather"])
def test_failing_element_code_raises_index_error(wrappers, name, n):
    rng = _rng(name, n)
    idx = rng.integers(0, 100, n)
    idx[rng.integers(0, n)] = 100 + n          # one index out of range
    ys = rng.integers(-9, 9, 100)
    if n < BIG:
        with pytest.raises(IndexError):
            wrappers["python"].invoke(name, idx, ys)
    with pytest.raises(IndexError):
        wrappers["opencl"].invoke(name, idx, ys)


@pytest.mark.parametrize("n", [0, 1, 300])
def test_failing_operator_is_declined_and_raises(wrappers, n):
    xs = np.arange(n, dtype=np.int64) - 100
    assert wrappers["opencl"].invoke("div_max", xs, np.int64(1)) == \
        wrappers["python"].invoke("div_max", xs, np.int64(1))
    if n:
        for w in wrappers.values():
            with pytest.raises(ZeroDivisionError):
                w.invoke("div_max", xs, np.int64(0))


def test_unsafe_keeps_fused_gathers_in_work_group_kernels():
    w = _wrapper("opencl", unsafe=True)
    rng = np.random.default_rng(5)
    idx, ys = rng.integers(0, 100, 5000), rng.integers(-9, 9, 100)
    assert w.gather_sum(idx, ys) == ys[idx].sum()
    assert np.array_equal(w.scan_gather(idx, ys), np.cumsum(ys[idx]))
    assert np.array_equal(w.filter_gather(idx, ys), idx[ys[idx] > 0])
    fns = _kernels(unsafe=True)
    for name in ("gather_sum", "scan_gather", "filter_gather"):
        assert _parfors(fns[name]) and all(g is not None for g in _parfors(fns[name])), name


# -- the kernel IR ---------------------------------------------------------------


def _kernels(unsafe=False, lookback=True) -> dict:
    from pyshark.codegen.stages import build_kernels
    from pyshark.codegen.lower import Options
    from pyshark.codegen.target import gpu_target
    from pyshark.wrapper.backend import translate_and_check
    program = translate_and_check(SRC)
    m = build_kernels(program, Options(unsafe=unsafe),
                      target=gpu_target(256, 65536, True, lookback=lookback),
                      until="hoist-allocations")
    return {f.name.removeprefix("pyshark_"): f for f in m.functions}


def _is_zeroing(s) -> bool:
    """The plain ParFor that zeroes the single-pass scan's block states."""
    from pyshark.codegen import kir as K
    return (s.group_size is None and len(s.body.stms) == 1
            and isinstance(s.body.stms[0], K.Store) and isinstance(s.body.stms[0].value, K.KConst))


def _parfors(f, zeroing=False) -> list:
    """The group sizes of the ParFors of a function (None: a plain ParFor),
    leaving out the look-back's zeroing ParFor unless `zeroing`."""
    from pyshark.codegen import kir as K
    from pyshark.codegen.gpu.common import walk
    return [s.group_size for s in walk(f.body) if isinstance(s, K.ParFor)
            and (zeroing or not _is_zeroing(s))]


def _local_ids(f) -> bool:
    from pyshark.codegen import kir as K
    from pyshark.codegen.gpu.common import walk
    return any(isinstance(s, K.LocalAlloc) for s in walk(f.body))


def test_kernel_ir_uses_work_group_parfors():
    fns = _kernels()
    plain_then_group = {"gather_sum", "gather_compose", "scan_gather", "filter_gather",
                        "filter_mapped_gather"}
    for name in CASES:
        groups = _parfors(fns[name])
        assert groups and 256 in groups, name
        assert _local_ids(fns[name]), name
        if name in plain_then_group:
            # the failing gather runs first in a plain ParFor, the rest in group kernels
            assert groups[0] is None and all(g == 256 for g in groups[1:]), (name, groups)
        elif name != "partition_half":
            assert all(g == 256 for g in groups), (name, groups)
    # reduce of one 32-bit value: one kernel (its last group does stage 2);
    # of a tuple: stage 1 and stage 2; scan: one single-pass kernel after
    # zeroing the block states; filter: three kernels
    assert len(_parfors(fns["sum_f32"])) == 1
    assert len(_parfors(fns["last_nonzero"])) == 1
    assert len(_parfors(fns["compose"])) == 2
    assert _parfors(fns["cumsum_f32"], zeroing=True) == [None, 256]
    assert _parfors(fns["scan_compose"], zeroing=True) == [256, 256, 256]   # no packing
    assert len(_parfors(fns["filter_mod3"])) == 3
    # an operator that can fail: declined, the mc algorithm (plain ParFors)
    assert all(g is None for g in _parfors(fns["div_max"]))


def test_single_pass_scan_publishes_flag_and_value_in_one_word():
    """The look-back kernel (one 32-bit value): a dynamic block index from an
    atomic counter; every publication an atomic exchange of one 64-bit
    status word; every read of another block's state one AtomicLoad of such
    a word; no plain store or load of the status words inside the kernel.
    Scans of 64-bit or tuple values take reduce-then-scan."""
    from pyshark.codegen import kir as K
    from pyshark.codegen.gpu.common import walk
    from pyshark.core.types import U64
    fns = _kernels()
    for name in ("cumsum_f32", "scan_last_nonzero"):
        (kernel,) = [s for s in walk(fns[name].body)
                     if isinstance(s, K.ParFor) and s.group_size]
        stms = list(walk(kernel.body))
        updates = [s for s in stms if isinstance(s, K.AtomicUpdate)]
        assert len(updates) == 4, name                  # ticket, A, P (block 0), P
        status = {u.ptr for u in updates}
        assert len(status) == 1 and K.type_of(next(iter(status))) == K.Ptr(U64)
        loads = [s for s in stms if isinstance(s, K.AtomicLoad)]
        assert loads and all(s.ptr in status for s in loads)
        assert not any(isinstance(s, K.Store) and s.ptr in status for s in stms)
    for name in ("scan_compose", "scan_max_f64", "cumsum_sq"):
        assert _parfors(fns[name], zeroing=True) == [256, 256, 256], name


def test_single_pass_reduce_counts_groups_in_a_zeroed_block():
    """The one-launch reduction: its (flag, partial) words and ticket counter
    in one zeroed Alloc (no clearing launch; the last group sets them back
    to 0), every publication an atomic exchange of one 64-bit word, every
    read of another group's word an AtomicLoad."""
    from pyshark.codegen import kir as K
    from pyshark.codegen.gpu.common import walk
    from pyshark.codegen.kir_pretty import pretty_function
    from pyshark.core.types import U64
    for name in ("sum_f32", "max_i32", "last_nonzero"):
        f = _kernels()[name]
        allocs = [s for s in walk(f.body) if isinstance(s, K.Alloc)]
        assert [s.var.type.elem for s in allocs if s.zeroed] == [U64], name
        assert any(isinstance(s, K.AtomicLoad) for s in walk(f.body)), name
        assert sum(isinstance(s, K.AtomicUpdate) for s in walk(f.body)) == 2, name
        assert "alloc_zeroed(" in pretty_function(f), name


def test_reduce_then_scan_without_lookback():
    fns = _kernels(lookback=False)
    assert _parfors(fns["cumsum_f32"], zeroing=True) == [256, 256, 256]
    assert len(_parfors(fns["sum_f32"])) == 2
    from pyshark.codegen import kir as K
    from pyshark.codegen.gpu.common import walk
    assert not any(isinstance(s, K.AtomicLoad) for s in walk(fns["cumsum_f32"].body))


def test_commutative_operators_are_recognised():
    from pyshark.codegen.gpu.group import is_commutative
    from pyshark.core import ir
    from pyshark.wrapper.backend import translate_and_check
    program = translate_and_check(SRC)
    found = {}
    for name in program.entries:
        for stm in program.entry_fun(name).body.stms:
            if isinstance(stm.exp, (ir.Reduce, ir.Scan)):
                found[name] = is_commutative(stm.exp)
    assert found["sum_f32"] and found["max_i32"] and found["min_f64"] and found["cumsum_f32"]
    assert found["sum_and_count"]                 # reduce_comm
    assert not found["pymax_f64"]                 # Python's max on floats (NaN)
    assert not found["compose"] and not found["last_nonzero"] and not found["scan_compose"]
    assert not found["scan_segmented"]


def test_small_float_sums_keep_the_order(wrappers):
    # [1e30, -1e30, 1.0] folds to 1.0 left to right; the tree must keep that
    xs = np.array([1e30, -1e30, 1.0], np.float32)
    assert wrappers["opencl"].sum_f32(xs) == wrappers["python"].sum_f32(xs) == 1.0
    assert np.array_equal(wrappers["opencl"].cumsum_f32(xs), np.array([1e30, 0.0, 1.0], np.float32))


# Block boundaries of the single-pass scan (tiles of 256 * 15 = 3840 on
# PoCL's 32 KiB of local memory) and many blocks; each size several times,
# since a publication race would show up only now and then.
STRESS_SIZES = [0, 1, 255, 256, 257, 3839, 3840, 3841, 2 ** 20 + 3, 2 ** 22 + 1]
STRESS_CASES = ["cumsum_f32", "scan_last_nonzero", "cumsum_sq", "scan_compose",
                "scan_segmented", "scan_max_f64",
                # the single-pass reduction (and, in between, its zeroed block
                # reused by every size and entry)
                "sum_f32", "max_i32", "last_nonzero"]


@pytest.fixture(scope="module", params=["1", "0"], ids=["single-pass", "reduce-then-scan"])
def scan_wrapper(request):
    """The opencl module compiled with the single-pass scan and reduction on
    (PYSHARK_OPENCL_LOOKBACK=1, the default) or off (reduce-then-scan for
    every scan, two stages for every reduction)."""
    from pyshark.codegen.opencl import runtime
    if not runtime.available():
        pytest.skip("no OpenCL device")
    mp = pytest.MonkeyPatch()
    mp.setenv("PYSHARK_OPENCL_LOOKBACK", request.param)
    try:
        assert runtime.device().target().lookback == (request.param == "1")
        yield _wrapper("opencl")
    finally:
        mp.undo()


@pytest.mark.parametrize("n", STRESS_SIZES)
def test_scan_stress(scan_wrapper, n):
    for name in STRESS_CASES:
        make, ref = CASES[name]
        args = make(_rng(name, n), n)
        want = ref(*args)
        for _ in range(3):
            assert_close(scan_wrapper.invoke(name, *args), want)


@pytest.mark.parametrize("n", [0, 1, 257, 3841, 2 ** 20 + 3])
def test_reduce_then_scan_fallback_on_the_device(monkeypatch, n):
    monkeypatch.setenv("PYSHARK_OPENCL_LOOKBACK", "0")
    w = _wrapper("opencl")
    from pyshark.codegen.opencl import runtime
    assert not runtime.device().target().lookback
    for name in ("cumsum_f32", "scan_compose", "scan_segmented"):
        make, ref = CASES[name]
        args = make(_rng(name, n), n)
        assert_close(w.invoke(name, *args), ref(*args))
