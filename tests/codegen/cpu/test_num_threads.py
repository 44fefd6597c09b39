"""Wrapper(num_threads=N) and pyshark.set_num_threads/get_num_threads on the
cpu backend: results agree with Python mode whatever the team size (the
ParFor's static stealing and the multicore algorithms' chunking depend on
it; 70 threads share the 64 claim slots; the old one-counter schedule,
PYSHARK_SCHEDULE=dynamic, too), every block runs once when libgomp starts
fewer threads than asked, the team really has N threads (counted in /proc
in a fresh process), bad values are a clear ValueError, and the other
backends accept and ignore the option."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pyshark
from pyshark import Wrapper
from pyshark.testing import assert_close

pytestmark = pytest.mark.skipif(
    "cpu" not in __import__("pyshark.wrapper", fromlist=["x"]).available_backends(),
    reason="cpu backend unavailable")

SRC = '''
import pyshark.prelude as ps


@ps.entry
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x, y: a * x + y, xs, ys)


@ps.entry
def poly(xs: ps.Array[float]) -> ps.Array[float]:
    return ps.map(lambda x: (x * 0.5 - 3.0) * x + 1.25, xs)


@ps.entry
def fsum32(xs: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), xs)


@ps.entry
def fsum64(xs: ps.Array[float]) -> float:
    return ps.reduce(lambda a, b: a + b, 0.0, xs)


@ps.entry
def isum(xs: ps.Array[int]) -> int:
    return ps.reduce(lambda a, b: a + b, 0, xs)


@ps.entry
def imax(xs: ps.Array[ps.i32]) -> ps.i32:
    return ps.reduce(lambda a, b: max(a, b), ps.i32(-2147483648), xs)


@ps.entry
def iscan(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    return ps.scan(lambda a, b: a + b, ps.i32(0), xs)


@ps.entry
def evens(xs: ps.Array[int]) -> ps.Array[int]:
    return ps.filter(lambda x: x % 2 == 0, xs)


@ps.entry
def counts(num_bins: int, idxs: ps.Array[int]) -> ps.Array[ps.i32]:
    ones = ps.replicate(len(idxs), ps.i32(1))
    return ps.reduce_by_index(ps.replicate(num_bins, ps.i32(0)), lambda a, b: a + b,
                              ps.i32(0), idxs, ones)


@ps.entry
def row_sums(xss: ps.Array[ps.Array[int]]) -> ps.Array[int]:
    return ps.map(lambda row: ps.reduce(lambda a, b: a + b, 0, row), xss)
'''

THREADS = (1, 2, 3, 7, 70)     # 70: more threads than emit_parfor.MAX_SLOTS
DYNAMIC = "dynamic"             # 7 threads, PYSHARK_SCHEDULE=dynamic
# 0, 1, not multiples of 64 or of any block, above par_min (2^15) and
# above the 4096-iteration minimum block times every team size
SIZES = (0, 1, 63, 4097, 100_003)
BIG = 1_000_003                 # compared with NumPy only (Python mode is slow)


@pytest.fixture(scope="module")
def src(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("nt") / "nt_mod.py"
    p.write_text(SRC)
    return p


def _load(src: Path, cache: Path, backend: str = "cpu", **kw) -> Wrapper:
    return Wrapper(backend, cache_dir=cache, **kw).add_source_file(src).compile_and_load()


@pytest.fixture(scope="module")
def wrappers(src, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    ws = {nt: _load(src, cache, num_threads=nt) for nt in THREADS}
    before = os.environ.get("PYSHARK_SCHEDULE")
    os.environ["PYSHARK_SCHEDULE"] = "dynamic"
    try:
        ws[DYNAMIC] = _load(src, cache, num_threads=7)
    finally:
        if before is None:
            os.environ.pop("PYSHARK_SCHEDULE")
        else:
            os.environ["PYSHARK_SCHEDULE"] = before
    return ws


def test_the_schedule_is_part_of_the_cache_key(wrappers):
    assert wrappers[DYNAMIC].artifact_dir != wrappers[7].artifact_dir


@pytest.fixture(scope="module")
def ref(src, tmp_path_factory):
    return _load(src, tmp_path_factory.mktemp("pycache"), "python")


def _inputs(n: int) -> dict:
    rng = np.random.default_rng(n)
    f32 = rng.standard_normal(n).astype(np.float32)
    if n > 3:
        f32[[1, n // 2]] = np.nan                  # NaN goes through a map as NaN
    return {
        "saxpy": (np.float32(1.5), f32, rng.random(n, dtype=np.float32)),
        "poly": (rng.standard_normal(n) * 100,),
        # small integers in f32: every summation order gives the same sum
        "fsum32": (rng.integers(0, 16, n).astype(np.float32),),
        "fsum64": (rng.standard_normal(n) * 1e3,),
        "isum": (rng.integers(-2**40, 2**40, n),),
        "imax": (rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32),),
        # wraps around on overflow: the same in every order
        "iscan": (rng.integers(-2**31, 2**31 - 1, n, dtype=np.int32),),
        "evens": (rng.integers(0, 1000, n),),
        "counts": (37, rng.integers(-3, 40, n)),      # duplicates, out-of-range indices
    }


def _same_map(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True)      # bit-exact up to NaN payloads


def _check(name, got, want):
    if name in ("saxpy", "poly"):
        _same_map(got, want)
    elif name == "fsum64":
        assert_close(got, want, rtol=1e-9, atol=1e-6)      # the reduction's tolerance
    else:
        assert_close(got, want)                               # exact: ints, exact f32 sums
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("n", SIZES)
def test_every_team_size_matches_python_mode(wrappers, ref, n):
    for name, args in _inputs(n).items():
        want = ref.invoke(name, *args)
        for nt, w in wrappers.items():
            try:
                _check(name, w.invoke(name, *args), want)
            except AssertionError as e:
                raise AssertionError(f"{name}, n={n}, num_threads={nt}: {e}") from None


@pytest.mark.parametrize("rows", [1, 5, 17, 1001])
def test_rows_with_inner_loops(wrappers, ref, rows):
    # a ParFor whose body has a loop claims blocks of ceil(n / (8 T)) rows
    xss = np.arange(rows * 33, dtype=np.int64).reshape(rows, 33) % 7 - 3
    want = ref.row_sums(xss)
    for w in wrappers.values():
        _check("row_sums", w.row_sums(xss), want)


def test_large_inputs_match_numpy(wrappers):
    args = _inputs(BIG)
    a, xs, ys = args["saxpy"]
    idxs = args["counts"][1]
    want = {
        "saxpy": a * xs + ys,
        "poly": (args["poly"][0] * 0.5 - 3.0) * args["poly"][0] + 1.25,
        "fsum32": np.float32(args["fsum32"][0].sum(dtype=np.float64)),
        "fsum64": np.float64(np.sum(args["fsum64"][0])),
        "isum": np.int64(args["isum"][0].sum()),
        "imax": np.int32(args["imax"][0].max()),
        "iscan": np.cumsum(args["iscan"][0], dtype=np.int32),
        "evens": args["evens"][0][args["evens"][0] % 2 == 0],
        "counts": np.bincount(idxs[(idxs >= 0) & (idxs < 37)], minlength=37).astype(np.int32),
    }
    for nt, w in wrappers.items():
        for name, args_ in args.items():
            try:
                _check(name, w.invoke(name, *args_), want[name])
            except AssertionError as e:
                raise AssertionError(f"{name}, num_threads={nt}: {e}") from None


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "3", 1 << 20])
def test_bad_num_threads_is_a_value_error(tmp_path, bad):
    for backend in ("cpu", "python"):
        with pytest.raises(ValueError, match="num_threads"):
            Wrapper(backend, cache_dir=tmp_path, num_threads=bad)
    with pytest.raises(ValueError, match="set_num_threads"):
        pyshark.set_num_threads(bad)


def test_set_and_get_num_threads():
    before = pyshark.get_num_threads()
    assert isinstance(before, int) and before >= 1
    try:
        pyshark.set_num_threads(np.int64(3))
        assert pyshark.get_num_threads() == 3
        assert type(pyshark.get_num_threads()) is int
    finally:
        pyshark.set_num_threads(None)
    assert pyshark.get_num_threads() == before


def test_other_backends_accept_and_ignore_it(src, tmp_path):
    w = _load(src, tmp_path, "python", num_threads=3)
    assert w.num_threads == 3
    assert w.isum(np.arange(10)) == 45
    from pyshark.wrapper import available_backends
    if "core" in available_backends():
        assert _load(src, tmp_path, "core", num_threads=2).isum(np.arange(10)) == 45


_COUNT_THREADS = textwrap.dedent('''
    import os, sys
    import numpy as np
    import pyshark
    src, cache = sys.argv[1], sys.argv[2]

    def tasks():
        return len(os.listdir("/proc/self/task"))

    def load(**kw):
        return pyshark.Wrapper("cpu", cache_dir=cache, **kw).add_source_file(src).compile_and_load()
    xs = np.ones(1 << 20, np.float32)
    ws = {k: load(num_threads=k) for k in (1, 3, 6)}
    plain = load()
    base = tasks()
    out = []
    ws[1].saxpy(2.0, xs, xs)
    out.append(tasks() - base)            # a team of 1: no thread started
    ws[3].saxpy(2.0, xs, xs)
    out.append(tasks() - base)            # libgomp's pool: 2 threads beside this one
    pyshark.set_num_threads(4)
    plain.isum(np.ones(1 << 20, np.int64))
    out.append(tasks() - base)            # the process default: a team of 4
    ws[6].evens(np.arange(1 << 20))
    out.append(tasks() - base)            # the Wrapper's 6 over the process default
    from pyshark.wrapper.wrapper import build
    build(src, cache + "/built", "cpu")
    pyshark.Wrapper.load(cache + "/built", num_threads=8).iscan(np.ones(1 << 20, np.int32))
    out.append(tasks() - base)            # Wrapper.load(num_threads=8)
    print(out)
''')


_FEWER_THREADS = textwrap.dedent('''
    import sys
    import numpy as np
    import pyshark
    src, cache = sys.argv[1], sys.argv[2]
    w = pyshark.Wrapper("cpu", cache_dir=cache, num_threads=9).add_source_file(src)
    w.compile_and_load()
    xs = np.arange(1_000_003, dtype=np.int64)
    xss = (np.arange(1001 * 33, dtype=np.int64) % 7 - 3).reshape(1001, 33)
    print(w.isum(xs) == xs.sum(), np.array_equal(w.evens(xs), xs[xs % 2 == 0]),
          np.array_equal(w.row_sums(xss), xss.sum(axis=1)),
          np.array_equal(w.iscan(np.ones(100_003, np.int32)), np.arange(1, 100_004)))
''')


def test_fewer_threads_than_slots_still_run_every_block(src, tmp_path):
    # libgomp starts at most OMP_THREAD_LIMIT threads: 2 of the 9 slots'
    # owners run, and they must claim the other 7 slots' blocks round the ring
    env = dict(os.environ, OMP_THREAD_LIMIT="2")
    r = subprocess.run([sys.executable, "-c", _FEWER_THREADS, str(src), str(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "True True True True"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_the_team_has_num_threads_threads(src, tmp_path):
    # libgomp keeps the threads it started in a pool that only grows, so the
    # number of threads of a fresh process tells the largest team so far
    r = subprocess.run([sys.executable, "-c", _COUNT_THREADS, str(src), str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[0, 2, 3, 5, 7]"
