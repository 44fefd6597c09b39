"""pyshark.testing: the golden-rule tolerance and the case tables."""
from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from pyshark.testing import assert_close, embedded_cases, load_cases


def fails(got, want, **kw):
    with pytest.raises(AssertionError):
        assert_close(got, want, **kw)


def test_floats_within_tolerance_by_dtype():
    assert_close(np.float32(1.0), np.float32(1.0 + 5e-6))
    fails(np.float32(1.0), np.float32(1.001))
    assert_close(np.float64(1.0), np.float64(1.0 + 1e-13))
    fails(np.float64(1.0), np.float64(1.0 + 1e-9))
    assert_close(np.float64(1.0), np.float64(1.1), rtol=0.2)


def test_nan_inf_and_signed_zero():
    assert_close(np.array([np.nan, np.inf, -0.0]), np.array([np.nan, np.inf, 0.0]))
    fails(np.float64(np.inf), np.float64(-np.inf))
    fails(np.float64(np.nan), np.float64(0.0))
    fails(np.float64(1e308), np.float64(np.inf))


def test_ints_and_bools_are_exact_with_their_dtype():
    assert_close(np.int32(5), np.int32(5))
    fails(np.int32(5), np.int32(6))
    fails(np.int32(5), np.int64(5))
    fails(np.array([True]), np.array([1]))


def test_empty_arrays_match_by_rank():
    assert_close(np.zeros((0, 3)), np.zeros((0, 0)))
    fails(np.zeros((0,)), np.zeros((0, 0)))
    fails(np.zeros((0,)), np.zeros((1,)))


def test_tuples_records_and_structured_arrays():
    V = collections.namedtuple("V", "x y")
    assert_close((np.int64(1), V(np.float32(1), np.float32(2))),
                 (np.int64(1), V(np.float32(1), np.float32(2 + 1e-6))))
    fails((np.int64(1),), (np.int64(1), np.int64(2)))
    W = collections.namedtuple("W", "a b")
    fails(V(1, 2), W(1, 2))
    dt = np.dtype([("f0", np.int32), ("f1", np.float32, (2,))])
    a = np.zeros(2, dt)
    b = a.copy()
    assert_close(a, b)
    b["f1"][1, 0] = 1
    fails(a, b)


def test_embedded_cases_are_read_without_running_the_module():
    src = ('raise SystemExit("never run")\n'
           '__pyshark_cases__ = [\n'
           '    {"entry": "f", "args": [1, [2.0]], "expected": (nan, -inf)},\n'
           '    {"entry": "g", "args": [], "raises": "IndexError"},\n'
           ']\n')
    cases = embedded_cases(src)
    assert cases[0]["entry"] == "f" and np.isnan(cases[0]["expected"][0])
    assert cases[0]["expected"][1] == -np.inf and cases[1]["raises"] == "IndexError"
    with pytest.raises(ValueError):
        embedded_cases('__pyshark_cases__ = [{"entry": "f", "args": [], "raises": "KeyError"}]')


def test_load_cases_merges_embedded_and_json(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text('__pyshark_cases__ = [{"entry": "a", "args": [], "expected": 1}]\n')
    (tmp_path / "m.cases.json").write_text(json.dumps(
        {"cases": [{"entry": "b", "args": [1], "expected": 2.5}]}))
    cases = load_cases(mod)
    assert [c.entry for c in cases] == ["a", "b"]
    assert [c.origin for c in cases] == ["embedded", "m.cases.json"]

