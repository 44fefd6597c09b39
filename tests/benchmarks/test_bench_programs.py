"""Smoke test of the benchmark programs: correctness only, never timing.

Each program at its smallest size, on every available PyShark backend (Python
mode included), must agree with its NumPy peer; the Numba peer too when Numba
imports; and every module's embedded test cases must pass (what `pyshark
test benchmarks/programs` checks).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks import suite  # noqa: E402
from benchmarks.peers import numpy_peers  # noqa: E402
from benchmarks.runner import compare  # noqa: E402
from pyshark import testing  # noqa: E402
from pyshark.wrapper import available_backends  # noqa: E402

SMALLEST = suite.SIZES[0]
BENCHES = [pytest.param(b, id=b.name) for b in suite.BENCHMARKS]


@pytest.fixture(scope="module")
def reference():
    """The NumPy peer's output per benchmark at the smallest size (and its inputs)."""
    cache = {}

    def get(bench):
        if bench.name not in cache:
            args = bench.make_inputs(SMALLEST, seed=2024)
            cache[bench.name] = args, getattr(numpy_peers, bench.entry)(*args)
        return cache[bench.name]

    return get


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("bench", BENCHES)
def test_backend_agrees_with_numpy(bench, backend, reference):
    args, want = reference(bench)
    w = testing.compiled_wrapper(bench.path, backend)
    got = w.invoke(bench.entry, *args)
    problem = compare(got, want, *bench.tolerance(SMALLEST))
    assert problem is None, f"{bench.name} on {backend}: {problem}"


@pytest.mark.parametrize("bench", BENCHES)
def test_numba_agrees_with_numpy(bench, reference):
    pytest.importorskip("numba")
    from benchmarks.peers import numba_peers
    args, want = reference(bench)
    problem = compare(getattr(numba_peers, bench.entry)(*args), want,
                      *bench.tolerance(SMALLEST))
    assert problem is None, f"{bench.name} on numba: {problem}"


MODULES = testing.find_modules(suite.PROGRAMS_DIR)


def test_every_benchmark_program_is_a_module_here():
    assert {b.path for b in suite.BENCHMARKS} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES, ids=[m.stem for m in MODULES])
def test_embedded_cases(module):
    results = testing.run_module(module, available_backends())
    assert results, f"{module.name} has no test cases"
    failures = [r.line() for r in results if not r.passed]
    assert not failures, "\n".join(failures)
