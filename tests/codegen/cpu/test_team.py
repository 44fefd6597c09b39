"""PyShark's thread team (codegen/cpu/team.c, team.py): the runtime of the
cpu backend's parallel loops. Checked through its C functions directly
(ctypes callbacks as regions: who runs, with which thread numbers, nested
regions, several callers at once) and through compiled entries in fresh
processes (regions with no spinning at all, so every wake goes through the
futex and late workers meet a closed gate; a forked child; the libgomp
variant; a bad PYSHARK_THREADS)."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from pyshark.codegen.cpu import team

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the team is Linux-only (futex)")

REGION = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@pytest.fixture(scope="module")
def rt():
    lib = team.ensure_runtime()
    if lib is None:
        pytest.skip(f"no team runtime: {team.why_not()}")
    lib.pysharkrt_thread_num.restype = ctypes.c_int
    lib.pysharkrt_team_workers.restype = ctypes.c_int
    lib.pysharkrt_parallel.argtypes = [REGION, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    return lib


def test_the_runtime_is_the_team_unless_asked(rt):
    assert team.kind() == os.environ.get("PYSHARK_THREADS", "team")
    assert team.max_threads() >= 1


def test_a_region_runs_on_its_caller_and_at_most_nthreads_threads(rt):
    if team.kind() != "team":
        pytest.skip("the libgomp variant")
    for nthreads in (1, 2, 3, 8):
        seen, lock = [], threading.Lock()

        @REGION
        def region(_data):
            with lock:
                seen.append((threading.get_ident(), rt.pysharkrt_thread_num()))
        caller = threading.get_ident()
        for _ in range(20):
            seen.clear()
            rt.pysharkrt_parallel(region, None, nthreads, 0)
            nums = [n for _, n in seen]
            # the caller always runs the region, as thread 0; each worker at
            # most once, with its own number below nthreads
            assert (caller, 0) in seen
            assert len(nums) == len(set(nums)) <= nthreads
            assert all(0 <= n < nthreads for n in nums)
        assert rt.pysharkrt_team_workers() >= nthreads - 1


def test_a_region_inside_a_region_runs_alone(rt):
    inner_nums, outer_after = [], []
    lock = threading.Lock()

    @REGION
    def inner(_data):
        with lock:
            inner_nums.append((threading.get_ident(), rt.pysharkrt_thread_num()))

    @REGION
    def outer(_data):
        me = rt.pysharkrt_thread_num()
        rt.pysharkrt_parallel(inner, None, 4, 0)
        with lock:
            outer_after.append(rt.pysharkrt_thread_num() == me)
    rt.pysharkrt_parallel(outer, None, 4, 0)
    # every outer thread ran the inner region once, by itself, as thread 0,
    # and got its own number back afterwards
    assert len(inner_nums) == len(outer_after) >= 1
    assert all(n == 0 for _, n in inner_nums)
    assert len({t for t, _ in inner_nums}) == len(inner_nums)
    assert all(outer_after)


def test_callers_on_several_threads_at_once(rt):
    counts, lock, errors = {}, threading.Lock(), []

    @REGION
    def region(data):
        with lock:
            counts[data] = counts.get(data, 0) + 1

    def caller(k):
        try:
            for r in range(50):
                key = k * 1000 + r
                rt.pysharkrt_parallel(region, key, 3, 0)
                with lock:
                    if not 1 <= counts[key] <= 3:
                        errors.append((key, counts[key]))
        except Exception as exc:          # pragma: no cover - reported below
            errors.append(exc)
    threads = [threading.Thread(target=caller, args=(k + 1,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(counts) == 200


_ENTRIES = textwrap.dedent('''
    import os, sys
    import numpy as np
    import pyshark
    src, cache = sys.argv[1], sys.argv[2]
    w = pyshark.Wrapper("cpu", cache_dir=cache, num_threads=4).add_source_file(src)
    w.compile_and_load()
    w.wait_optimised()
    from pyshark.codegen.cpu import team
    xs = np.arange(1_000_003, dtype=np.int64)
    ok = True
    for k in range(int(os.environ.get("ROUNDS", "300"))):
        n = 1 + (k * 7919) % len(xs)
        ok &= w.isum(xs[:n]) == xs[:n].sum()
        ok &= bool(np.array_equal(w.evens(xs[:n]), xs[:n][xs[:n] % 2 == 0]))
    if os.environ.get("FORK"):
        pid = os.fork()
        if pid == 0:
            good = w.isum(xs) == xs.sum() and team.max_threads() >= 1
            os._exit(0 if good else 3)
        _, status = os.waitpid(pid, 0)
        ok &= os.WEXITSTATUS(status) == 0
    print(team.kind(), ok)
''')

_SRC = '''
import pyshark.prelude as ps


@ps.entry
def isum(xs: ps.Array[int]) -> int:
    return ps.reduce(lambda a, b: a + b, 0, xs)


@ps.entry
def evens(xs: ps.Array[int]) -> ps.Array[int]:
    return ps.filter(lambda x: x % 2 == 0, xs)
'''


def _run(tmp_path, **env):
    src = tmp_path / "m.py"
    src.write_text(_SRC)
    full = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", _ENTRIES, str(src), str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=300, env=full)


def test_no_spinning_every_wake_through_the_futex(tmp_path):
    # no spin and no yield phase: workers sleep at once, so most regions
    # close their gate before some worker wakes (it must then not run the
    # region)
    r = _run(tmp_path, PYSHARK_SPIN_US="0", PYSHARK_YIELD_US="0", PYSHARK_THREADS="team")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["team", "True"]


def test_yielding_workers(tmp_path):
    # no spin, only the yield phase (sched_yield until 3 ms)
    r = _run(tmp_path, PYSHARK_SPIN_US="0", PYSHARK_THREADS="team", ROUNDS="100")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["team", "True"]


def test_a_forked_child_starts_its_own_team(tmp_path):
    r = _run(tmp_path, FORK="1", ROUNDS="20", PYSHARK_THREADS="team")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["team", "True"]


def test_the_libgomp_variant(tmp_path):
    r = _run(tmp_path, PYSHARK_THREADS="gomp", ROUNDS="20")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["gomp", "True"]


def test_a_bad_choice_is_a_clear_error(tmp_path):
    r = _run(tmp_path, PYSHARK_THREADS="tbb", ROUNDS="1")
    assert r.returncode != 0
    assert "PYSHARK_THREADS='tbb'" in r.stderr and "team, gomp" in r.stderr
    assert "Segmentation" not in r.stderr



_MOVE_OFF = r'''
import ctypes, os
from pyshark.codegen.cpu import team
lib = team.ensure_runtime()
libc = ctypes.CDLL(None)
a, b = sorted(os.sched_getaffinity(0))[:2]
os.sched_setaffinity(0, {a})            # this thread on a
assert libc.sched_getcpu() == a
os.sched_setaffinity(0, {a, b})         # allowed both, still on a
lib.pysharkrt_move_off(b)               # not on b: nothing to do
print(libc.sched_getcpu() == a, end=" ")
lib.pysharkrt_move_off(a)
print(libc.sched_getcpu() == b, sorted(os.sched_getaffinity(0)) == [a, b])
'''


def test_a_worker_moves_off_its_callers_cpu():
    """team.c's move_off, which a worker calls before it runs a region: a
    thread on the given CPU leaves it for another it may run on, and may
    run anywhere it could before; elsewhere it stays (a thread of a fresh
    process stands in for the worker)."""
    if team.kind() != "team":
        pytest.skip("the libgomp variant")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU allowed")
    r = subprocess.run([sys.executable, "-c", _MOVE_OFF], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, PYSHARK_THREADS="team"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True"]
