"""Each SOAC, and map of reduce / scan / map, at awkward sizes (0, 1, 7,
1023, 2**20 + 3) on every compiled backend: against Python mode up to 1023
elements, and against a NumPy reference of the same semantics at 2**20 + 3
(where Python mode's per-element loop would take minutes)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

HERE = Path(__file__).resolve().parent
# the kernel-IR interpreter is far too slow for a million elements
NATIVE = [b for b in available_backends() if b not in ("python", "core", "kir")]
SIZES = [0, 1, 7, 1023, 2 ** 20 + 3]


def _wrapper(backend: str) -> Wrapper:
    w = Wrapper(backend)
    w.add_source_file(HERE / "soac_sizes.py")
    return w.compile_and_load()


@pytest.fixture(scope="module")
def wrappers():
    return {b: _wrapper(b) for b in ["python", *NATIVE]}


def _reference(name: str, xs: np.ndarray):
    if name == "map_affine":
        return 3 * xs - 7
    if name == "map_float":
        return xs * 0.5 + 1.0
    if name == "reduce_sum":
        return np.int64(xs.sum())
    if name == "reduce_max_map":
        return np.int32((xs ^ 5).max()) if len(xs) else np.iinfo(np.int32).min
    if name == "scan_sum":
        return np.cumsum(xs)
    if name == "filter_odd":
        return xs[xs % 2 == 1]
    if name == "histogram":
        idx = xs % 19 - 1
        ok = (idx >= 0) & (idx < 17)
        return np.array([xs[ok & (idx == b)].sum() for b in range(17)], np.int64)
    if name == "scatter_rev":
        return xs[::-1].copy()
    raise KeyError(name)


FLAT = ["map_affine", "map_float", "reduce_sum", "reduce_max_map", "scan_sum", "filter_odd",
        "histogram", "scatter_rev"]


def _input(name: str, n: int):
    rng = np.random.default_rng(n + len(name))
    if name == "map_float":
        return rng.standard_normal(n)
    if name == "reduce_max_map":
        return rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int32)
    return rng.integers(-1000, 1000, n, dtype=np.int64)


@pytest.mark.skipif(not NATIVE, reason="no native backend here")
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", FLAT)
def test_flat_soac_at_awkward_sizes(wrappers, name, n):
    xs = _input(name, n)
    want = (wrappers["python"].invoke(name, xs) if n <= 1023 else _reference(name, xs))
    for b in NATIVE:
        assert_close(wrappers[b].invoke(name, xs), want)


@pytest.mark.skipif(not NATIVE, reason="no native backend here")
@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (7, 3), (3, 1023), (1023, 7), (17, 61681)])
@pytest.mark.parametrize("name", ["rows_reduce", "rows_scan", "rows_map"])
def test_nested_soacs_at_awkward_sizes(wrappers, name, shape):
    xss = np.random.default_rng(shape[0]).integers(-1000, 1000, shape, dtype=np.int64)
    if shape[0] * shape[1] <= 8000:
        want = wrappers["python"].invoke(name, xss)
    else:
        want = {"rows_reduce": xss.sum(axis=1), "rows_scan": np.cumsum(xss, axis=1),
                "rows_map": xss * xss}[name]
    for b in NATIVE:
        got = wrappers[b].invoke(name, xss)
        assert_close(got, want)
