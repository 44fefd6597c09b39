"""Python mode's rule for an empty result's inner dimensions (docs/language.md,
"Empty results"): map, tabulate and tabulate_2d call the function once on
the stand-in argument (zeros of each element's type and shape, index 0)
and keep the dimensions of what it returns; 0 where it raises."""
from __future__ import annotations

import warnings

import numpy as np

import pyshark.prelude as ps


def rows_of(n: ps.i64) -> ps.Array[ps.f32]:
    return ps.replicate(n + 3, ps.f32(1.0))


def test_map_of_rows_keeps_their_width():
    xs = np.zeros((0, 4), np.float32)
    assert ps.map(lambda r: ps.map(lambda x: x * 2.0, r), xs).shape == (0, 4)
    assert ps.map(lambda r: ps.concat(r, r), xs).shape == (0, 8)
    assert ps.map(lambda r: [1.0, 2.0], xs).shape == (0, 2)          # a list row
    assert ps.map(rows_of, np.zeros(0, np.int64)).shape == (0, 3)    # annotated: types, and
    assert ps.map(rows_of, np.zeros(0, np.int64)).dtype == np.float32  # dims from the call


def test_stand_in_is_zeros_of_the_element_shape():
    seen = []

    def keep(r: ps.Array[ps.Array[ps.i16]]) -> ps.Array[ps.Array[ps.i16]]:   # annotated: no probe
        seen.append(r)
        return r
    assert ps.map(keep, np.zeros((0, 2, 3), np.int16)).shape == (0, 2, 3)
    (r,) = seen                                     # called once
    assert r.shape == (2, 3) and r.dtype == np.int16 and not r.any()


def test_a_raise_for_the_stand_in_gives_zero_dimensions():
    xs = np.zeros((0, 4), np.float32)

    def first_positive(r):
        assert r[0] > 0.0
        return r
    assert ps.map(first_positive, xs).shape == (0, 0)
    assert ps.map(lambda r: r[0:1], np.zeros((0, 0), np.float32)).shape == (0, 0)


def test_numpy_warnings_are_off_for_the_stand_in():
    xs = np.zeros((0, 3), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ps.map(lambda r: ps.map(lambda x: 1.0 / x, r), xs).shape == (0, 3)


def test_tabulate_uses_index_zero():
    assert ps.tabulate(0, lambda i: ps.replicate(5, ps.f32(i))).shape == (0, 5)
    assert ps.tabulate(0, lambda i: ps.iota(i)).shape == (0, 0)
    assert ps.tabulate_2d(0, 4, lambda i, j: ps.replicate(3, i + j)).shape == (0, 4, 3)
    assert ps.tabulate_2d(2, 0, lambda i, j: ps.replicate(3, i + j)).shape == (2, 0, 3)


def test_tuples_of_arrays_per_field():
    t = ps.map(lambda r: (ps.sum(r), ps.concat(r, r)), np.zeros((0, 4), np.float64))
    assert isinstance(t, ps.TupleArray)
    assert t.fields[0].shape == (0,) and t.fields[1].shape == (0, 8)


def test_integer_division_by_zero_raises_in_the_stand_in():
    xs = np.zeros((0, 0), np.int64)
    with ps.python_semantics():
        got = ps.map(lambda r: ps.replicate(3, ps.i64(12) // ps.i64(len(r))), xs)
    assert got.shape == (0, 0)
    xs = np.zeros((0, 4), np.int64)
    assert ps.map(lambda r: ps.replicate(3, ps.i64(12) // ps.i64(len(r))), xs).shape == (0, 3)
