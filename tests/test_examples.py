"""The example kernels (examples/*.py with @ps.entry functions, issue 15).

For every example module:
1. its embedded `__pyshark_cases__` pass on every available backend and
   match Python mode (the golden rule), as tests/test_conformance.py does for
   the conformance corpus;
2. on random inputs of a few sizes (tiny, odd, and ~10^5 elements, above the
   cpu backend's parallel thresholds) every entry equals the module's NumPy
   reference `numpy_<entry>` within `pyshark.testing.assert_close`'s
   tolerance, on every available backend.

The NumPy references are plain numpy; they sit in the module's
`if __name__ == "__main__":` block (the translator skips it, and a top-level
def that is not PyShark would be a compile error), and are read from there
with `numpy_references` below.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from pyshark import testing
from pyshark.wrapper import available_backends

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BACKENDS = available_backends()

# Examples that use a feature of the 2026-11-25 contract change that main does not
# implement yet; their tests are expected to fail until it lands. Keyed by module
# stem (a compile error fails the whole module) or by (module, entry).
NEEDS: dict = {}


# Python mode already has these (the prelude is the reference); only compiled code lacks them.
PYTHON_HAS = {"last-wins scatter with duplicate indices"}


def _need(module: Path, entry: str, backend: str) -> str | None:
    need = NEEDS.get(module.stem) or NEEDS.get((module.stem, entry))
    return None if backend == "python" and need in PYTHON_HAS else need


def _marks(module: Path, entry: str, backend: str) -> list:
    need = _need(module, entry, backend)
    return [pytest.mark.xfail(reason=f"needs {need} (issue 15)", strict=False)] if need else []


# ---------------------------------------------------------------------------
# Reading the example modules


def entry_names(path: Path) -> list[str]:
    """The @ps.entry functions of a module, in source order."""
    tree = ast.parse(path.read_text(), str(path))
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any((isinstance(d, ast.Attribute) and d.attr == "entry")
                    or (isinstance(d, ast.Name) and d.id == "entry") for d in node.decorator_list)]


def numpy_references(path: Path) -> dict:
    """The `numpy_*` functions defined in the module's `if __name__ == "__main__":`
    block (its imports and defs are run; nothing else in it is)."""
    tree = ast.parse(path.read_text(), str(path))
    body = []
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test).replace("'", '"') == \
                '__name__ == "__main__"':
            body += [n for n in node.body
                     if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef))]
    namespace: dict = {}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
    return {k: v for k, v in namespace.items() if k.startswith("numpy_")}


MODULES = [m for m in testing.find_modules(EXAMPLES) if m.name != "demo.py" and entry_names(m)]
assert MODULES, f"no example modules found in {EXAMPLES}"
CASES = [c for m in MODULES for c in testing.load_cases(m)]


def test_every_entry_has_cases_and_a_numpy_reference():
    for m in MODULES:
        refs = numpy_references(m)
        with_cases = {c.entry for c in testing.load_cases(m)}
        for e in entry_names(m):
            assert f"numpy_{e}" in refs, f"{m.name}: entry {e} has no numpy_{e}"
            assert e in with_cases, f"{m.name}: entry {e} has no embedded case"
            assert e in RANDOM_INPUTS, f"{m.name}: entry {e} has no random-input generator here"


# ---------------------------------------------------------------------------
# 1. The embedded cases


def _case_params(backends):
    return [pytest.param(c, b, id=f"{c.id}-{b}", marks=_marks(c.module, c.entry, b))
            for c in CASES for b in backends]


@pytest.mark.parametrize("case,backend", _case_params(BACKENDS))
def test_case(case, backend):
    w = testing.compiled_wrapper(case.module, backend)
    outcome = testing.run_case(w, case)
    msg = testing.check_expected(w, case, outcome)
    assert msg is None, f"{case.id} args={testing.short(case.args)}: {msg}"


@pytest.mark.parametrize("case,backend", _case_params([b for b in BACKENDS if b != "python"]) or
                         [pytest.param(None, None, marks=pytest.mark.skip("only Python mode here"))])
def test_case_matches_python_mode(case, backend):
    w = testing.compiled_wrapper(case.module, backend)
    ref = testing.compiled_wrapper(case.module, "python")
    msg = testing.check_against_python(testing.run_case(w, case), testing.run_case(ref, case))
    assert msg is None, f"{case.id} args={testing.short(case.args)}: {msg}"


# ---------------------------------------------------------------------------
# 2. Random inputs against the NumPy references
#
# RANDOM_INPUTS[entry] = (make(rng, size) -> args, sizes); the last size is the
# large one (about 10^5 elements, or more work than that).

f32, i64, u32 = np.float32, np.int64, np.uint32


def _matrix(rng, rows, cols, scale=1.0):
    return (rng.standard_normal((rows, cols)) * scale).astype(f32)


def _csr(rng, rows, cols, mean_degree):
    degrees = rng.poisson(mean_degree, rows)
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(i64)
    indices = rng.integers(0, cols, indptr[-1]).astype(i64)
    return indptr, indices


def _spmv_args(rng, n):
    indptr, indices = _csr(rng, n, max(n // 2, 1) + 1, 5)
    data = rng.uniform(0.5, 1.5, len(indices)).astype(f32)      # positive: no cancellation
    x = rng.uniform(0.5, 1.5, max(n // 2, 1) + 1).astype(f32)
    return indptr, indices, data, x


def _bfs_args(rng, n):
    indptr, indices = _csr(rng, n, n, 4)
    parent = np.full(n, -1, dtype=i64)
    visited = rng.random(n) < 0.3
    visited[0] = True
    parent[visited] = rng.integers(0, n, visited.sum())
    frontier = np.flatnonzero(visited & (rng.random(n) < 0.5)).astype(i64)
    rng.shuffle(frontier)
    return indptr, indices, frontier, parent


def _segment_ids_args(rng, n):
    nseg = n // 10 + 1
    ids = rng.integers(-1, nseg + 1, n).astype(i64)        # a few out of range: ignored
    return rng.uniform(0.0, 1.0, n).astype(f32), ids, nseg


def _flags_args(rng, n):
    return rng.uniform(0.0, 1.0, n).astype(f32), rng.random(n) < 0.1


def _prices(rng, n):
    return 100.0 * np.exp(np.cumsum(rng.standard_normal(n) * 0.01))


def _kmeans_args(rng, n, k=5, d=2):
    centres = rng.uniform(-100.0, 100.0, (k, d))
    labels = rng.integers(0, k, n)
    points = (centres[labels] + rng.standard_normal((n, d))).astype(f32)
    start = (centres + rng.standard_normal((k, d)) * 5.0).astype(f32)
    return points, start, 3


def _keys(rng, n):
    return rng.integers(0, 2**32, n, dtype=np.uint64).astype(u32)


RANDOM_INPUTS = {
    "saxpy": (lambda rng, n: (f32(rng.standard_normal()), _matrix(rng, 1, n)[0], _matrix(rng, 1, n)[0]),
              [0, 1, 1001, 100_003]),
    "dot": (lambda rng, n: (_matrix(rng, 1, n)[0], _matrix(rng, 1, n)[0]), [0, 1, 1001, 100_003]),
    "norm_and_max": (lambda rng, n: (_matrix(rng, 1, n)[0],), [0, 1, 1001, 100_003]),
    "softmax": (lambda rng, n: (_matrix(rng, n, 2 * n + 1, 5.0),), [1, 7, 223]),
    "conv3x3_valid": (lambda rng, n: (_matrix(rng, n, n + 30), _matrix(rng, 3, 3)), [3, 9, 301]),
    "conv3x3_clamp": (lambda rng, n: (_matrix(rng, n, n + 30), _matrix(rng, 3, 3)), [1, 9, 301]),
    "pairwise_distances": (lambda rng, n: (_matrix(rng, n, 3),), [1, 17, 333]),
    "pcg_hash_all": (lambda rng, n: (_keys(rng, n),), [1, 1001, 100_003]),
    "count_hits": (lambda rng, n: (n, u32(rng.integers(0, 2**32))), [1, 1001, 100_003]),
    "estimate_pi": (lambda rng, n: (n, u32(rng.integers(0, 2**32))), [1, 1001, 100_003]),
    "spmv": (_spmv_args, [1, 37, 100_003]),
    "segment_sum_ids": (_segment_ids_args, [1, 101, 100_003]),
    "segment_sum_flags": (_flags_args, [1, 101, 100_003]),
    "running_peak": (lambda rng, n: (_prices(rng, n),), [1, 101, 100_003]),
    "max_drawdown": (lambda rng, n: (_prices(rng, n),), [1, 101, 100_003]),
    "bfs_step": (_bfs_args, [1, 37, 100_003]),
    "kmeans": (_kmeans_args, [1, 13, 50_001]),
    "digit_histogram": (lambda rng, n: (_keys(rng, n), u32(4 * rng.integers(0, 8))),
                        [1, 1001, 100_003]),
    "radix_pass": (lambda rng, n: (_keys(rng, n), u32(4 * rng.integers(0, 8))),
                   [1, 1001, 100_003]),
    "radix_sort": (lambda rng, n: (_keys(rng, n),), [1, 1001, 100_003]),
}

# Float results built from long reductions (the references sum in another order):
# a looser relative tolerance than assert_close's default for f32.
TOLERANCE = {"dot": 1e-4, "segment_sum_ids": 1e-4, "segment_sum_flags": 1e-4, "spmv": 1e-5,
             "kmeans": 1e-4, "softmax": 1e-5}


# The large size runs on the native backends only: in Python mode and in the
# interpreters (core, and the tests' kir) it takes minutes on this machine
# (radix_sort at 10^5 keys: 150 s in Python mode; softmax at 223 x 447: 270 s in kir).
NATIVE = {"cpu", "opencl"}


def _random_params():
    out = []
    for m in MODULES:
        for e in entry_names(m):
            _, sizes = RANDOM_INPUTS.get(e, (None, [0]))
            for size in sizes:
                for b in BACKENDS:
                    if size == sizes[-1] and len(sizes) > 1 and b not in NATIVE:
                        continue
                    out.append(pytest.param(m, e, size, b, id=f"{m.stem}::{e}-n{size}-{b}",
                                            marks=_marks(m, e, b)))
    return out


@pytest.mark.parametrize("module,entry,size,backend", _random_params())
def test_matches_numpy_reference(module, entry, size, backend):
    make, _ = RANDOM_INPUTS[entry]
    rng = np.random.default_rng([size, sum(map(ord, entry))])
    args = make(rng, size)
    want = numpy_references(module)[f"numpy_{entry}"](*args)
    w = testing.compiled_wrapper(module, backend)
    got = w.invoke(entry, *args)
    rtol = TOLERANCE.get(entry)
    testing.assert_close(got, want, rtol=rtol, atol=rtol)
