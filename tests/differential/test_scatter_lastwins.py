"""Last-wins scatter (LANGUAGE.md: with duplicate indices the value that
comes last in idxs wins, as numpy's `dest[idxs] = vals`; indices outside
0 <= i < len(dest) are ignored) on every backend, with many duplicates
(indices drawn from a tiny range) at sizes on both sides of every parallel
threshold: the CPU's par_min (2**15, codegen/lower.Options) and many
OpenCL work-groups (256 work-items each). Each result is compared with a
NumPy reference of the rule and with Python mode. The kir interpreter
(par_min=4: the parallel passes, iterations in a shuffled order) takes the
small sizes only; it runs about a thousand elements a second.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pyshark import Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

HERE = Path(__file__).resolve().parent
BACKENDS = available_backends()
COMPILED = [b for b in BACKENDS if b != "python"]
KIR_MAX = 400            # elements the kir interpreter gets
PAR_MIN = 1 << 15        # codegen/lower.Options.par_min
SETTINGS = settings(max_examples=int(os.environ.get("PYSHARK_DIFF_EXAMPLES", "12")),
                    deadline=None, derandomize=not os.environ.get("PYSHARK_DIFF_RANDOM"),
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
# small (kir too), just below and above the CPU threshold, and a few
# work-groups' worth that is no multiple of 256 or of a vector width
SIZES = st.sampled_from([0, 1, 2, 7, 63, 300, PAR_MIN - 1, PAR_MIN, PAR_MIN + 1,
                         40_003, 70_001])


@pytest.fixture(scope="module")
def ws() -> dict[str, Wrapper]:
    out = {}
    for b in BACKENDS:
        w = Wrapper(backend=b)
        w.add_source_file(HERE / "scatter_lastwins.py")
        out[b] = w.compile_and_load()
    return out


def last_wins(dest: np.ndarray, idxs: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """numpy's dest[idxs] = vals after dropping out-of-range indices, with
    the last duplicate winning made explicit (numpy's fancy assignment does
    it in practice, but does not promise it)."""
    out = dest.copy()
    ok = (idxs >= 0) & (idxs < len(dest)) if idxs.dtype.kind != "u" else idxs < len(dest)
    sel = idxs[ok].astype(np.int64)
    v = vals[ok]
    # the owner of each slot: the largest position that names it
    owner = np.full(len(dest), -1, dtype=np.int64)
    np.maximum.at(owner, sel, np.arange(len(sel)))
    hit = owner >= 0
    out[hit] = v[owner[hit]]
    return out


def check(ws, entry: str, args: tuple, want) -> None:
    n = max((len(a) for a in args if isinstance(a, np.ndarray)), default=0)
    py = ws["python"].invoke(entry, *args)
    assert_close(py, want)
    for b in COMPILED:
        if b == "kir" and n > KIR_MAX:
            continue
        assert_close(ws[b].invoke(entry, *args), want)


def _draw(data, n: int, m: int, dtype=np.int64, lo=None):
    """n indices from a tiny range around [0, m): duplicates everywhere, and
    some out of range at both ends."""
    span = data.draw(st.integers(1, 6), label="span")
    lo = -2 if lo is None else lo
    seed = data.draw(st.integers(0, 2 ** 32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    hi = min(m + 2, lo + span + data.draw(st.integers(0, m + 2), label="shift"))
    return rng, rng.integers(lo, max(hi, lo + 1), n).astype(dtype)


@SETTINGS
@given(n=SIZES, m=st.integers(0, 9), data=st.data())
def test_flat_duplicates(ws, n, m, data):
    rng, idxs = _draw(data, n, m)
    dest = rng.integers(-50, 50, m).astype(np.int64)
    vals = rng.integers(-10 ** 12, 10 ** 12, n).astype(np.int64)
    check(ws, "scatter_i64", (dest, idxs, vals), last_wins(dest, idxs, vals))


@SETTINGS
@given(n=SIZES, m=st.integers(1, 9), data=st.data())
def test_i32_indices_float_values_with_nan(ws, n, m, data):
    rng, idxs = _draw(data, n, m, np.int32)
    dest = np.full(m, np.nan, dtype=np.float32)
    vals = rng.standard_normal(n).astype(np.float32)
    vals[::5] = np.nan
    check(ws, "scatter_f32_i32", (dest, idxs, vals), last_wins(dest, idxs, vals))


@SETTINGS
@given(n=SIZES, m=st.integers(1, 9), data=st.data())
def test_unsigned_indices(ws, n, m, data):
    rng, idxs = _draw(data, n, m, np.uint64, lo=0)
    idxs[::7] = np.uint64(2 ** 64 - 1)       # -1 as u64: far out of range
    idxs[3::11] = np.uint64(2 ** 63 + 1)     # negative as i64
    dest = np.zeros(m, dtype=np.int32)
    vals = np.arange(n, dtype=np.int32)
    check(ws, "scatter_u64", (dest, idxs, vals), last_wins(dest, idxs, vals))


@SETTINGS
@given(n=SIZES, m=st.integers(0, 6), w=st.sampled_from([1, 3, 17]), data=st.data())
def test_rows(ws, n, m, w, data):
    rng, idxs = _draw(data, n, m)
    dest = np.zeros((m, w))
    vals = rng.standard_normal((n, w))
    check(ws, "scatter_rows", (dest, idxs, vals), last_wins(dest, idxs, vals))


@SETTINGS
@given(n=SIZES, m=st.integers(1, 5), data=st.data())
def test_pairs(ws, n, m, data):
    _, idxs = _draw(data, n, m)
    pos = np.arange(n, dtype=np.int64)
    first = last_wins(np.full(m, -1, np.int64), idxs, pos)
    second = last_wins(np.zeros(m, np.float32), idxs, pos.astype(np.float32) * np.float32(0.5))
    want = np.empty(m, dtype=[("f0", np.int64), ("f1", np.float32)])
    want["f0"], want["f1"] = first, second
    got = ws["python"].invoke("scatter_pairs", m, idxs)
    for b in COMPILED:
        if b == "kir" and n > KIR_MAX:
            continue
        assert_close(ws[b].invoke("scatter_pairs", m, idxs), got)
    assert [tuple(x) for x in got] == [tuple(x) for x in want]


@pytest.mark.parametrize("m,k,n", [(1, 1, PAR_MIN + 5), (5, 3, 40_003), (997, 7, 70_001),
                                   (8, 0, PAR_MIN + 1), (3, 2, 5), (0, 1, 40), (6, 5, 301)])
def test_fused_positions(ws, m, k, n):
    """Every element into a handful of slots (k = 0: all into slot -1, none
    in range); the last position of each slot must win. The index and value
    maps are fused into the scatter. The core interpreter runs a map one
    element at a time (seconds per 10^4), so it takes the small sizes only;
    its scatter meets large inputs in the tests above."""
    i = np.arange(n, dtype=np.int64)
    want = last_wins(np.full(m, -7, np.int64), (i * k) % (m + 3) - 1, i)
    assert_close(ws["python"].invoke("scatter_positions", m, k, n), want)
    for b in COMPILED:
        if b in ("kir", "core") and n > KIR_MAX:
            continue
        assert_close(ws[b].invoke("scatter_positions", m, k, n), want)


def test_repeatable_above_threshold(ws):
    """The race this replaces: every element writing slot 3 gave a different
    winner from run to run on cpu above the parallel threshold."""
    n = 4 * PAR_MIN + 5
    idxs = np.full(n, 3, dtype=np.int64)
    vals = np.arange(n, dtype=np.int64)
    dest = np.zeros(8, dtype=np.int64)
    want = last_wins(dest, idxs, vals)
    assert want[3] == n - 1
    for b in COMPILED:
        if b == "kir":
            continue
        for _ in range(20):
            assert_close(ws[b].invoke("scatter_i64", dest, idxs, vals), want)
