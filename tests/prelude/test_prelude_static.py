"""Empty results in Python mode: the compiled program's types when a site
table is active (pyshark/prelude/static.py), the probe's fallback otherwise."""
from __future__ import annotations

import os

import numpy as np
import pytest

import pyshark.prelude as ps
from pyshark.prelude import static
from pyshark.prelude.build import result_template, template_from_flat

I32 = np.dtype(np.int32).str
F32 = np.dtype(np.float32).str
HERE = os.path.abspath(__file__)


def pairwise(xs):
    return ps.map(lambda i: xs[2 * i + 1] - xs[2 * i], ps.iota(len(xs) // 2))


def pairwise_records(xs):
    return ps.map(lambda i: (xs[2 * i + 1], ps.f32(xs[2 * i])), ps.iota(len(xs) // 2))


def kept(xs):
    return ps.sum([x for x in xs if x > 100])


def _site(fn, prefix="    return "):
    """(line, col) of the prelude call on the line after fn's def."""
    return fn.__code__.co_firstlineno + 1, len(prefix)


def test_without_a_table_a_failing_probe_falls_back_to_float64():
    xs = np.array([5], np.int32)
    got = pairwise(xs)
    assert got.shape == (0,) and got.dtype == np.float64      # a guess, but no error
    assert static.call_site() is None


def test_probe_tries_minus_one_for_signed_and_float_elements():
    xs = np.array([5], np.int32)
    got = ps.map(lambda i: xs[i + 1] - xs[i], ps.iota(0))     # i = -1 runs: xs[0] - xs[-1]
    assert got.dtype == np.int32
    us = np.array([5], np.int32)
    got = ps.map(lambda u: us[u + 1], np.zeros(0, np.uint8))  # -1 is no uint8: not tried
    assert got.dtype == np.float64


def test_an_active_table_types_a_map_whose_function_cannot_run():
    xs = np.array([5], np.int32)
    table = {_site(pairwise): [("Map", ((I32, 1),))]}
    with static.active(HERE, table):
        got = pairwise(xs)
    assert got.shape == (0,) and got.dtype == np.int32
    assert pairwise(np.array([1, 4], np.int32)).tolist() == [3]


def test_several_values_take_the_probe_structure_else_a_plain_tuple():
    xs = np.array([5], np.int32)
    table = {_site(pairwise_records): [("Map", ((I32, 1), (F32, 1)))]}
    with static.active(HERE, table):
        got = pairwise_records(xs)
    assert isinstance(got, ps.TupleArray) and got.make is tuple and len(got) == 0
    assert [f.dtype for f in got.fields] == [np.int32, np.float32]

    structure = template_from_flat([(np.dtype(np.int64), 0), (np.dtype(np.int64), 0)])
    tpl = template_from_flat([(np.dtype(np.int8), 0), (np.dtype(np.float32), 1)], structure)
    assert [f.dtype for f in tpl.fields] == [np.int8, np.float32] and tpl.fields[1].inner == (0,)


def test_the_highest_rank_let_of_the_right_kind_wins_and_disagreement_is_unknown():
    xs = np.array([5], np.int32)
    site = _site(pairwise)
    table = {site: [("Index", ((F32, 0),)), ("Map", ((I32, 1),)), ("Map", ((F32, 0),))]}
    with static.active(HERE, table):
        assert pairwise(xs).dtype == np.int32
    table = {site: [("Map", ((I32, 1),)), ("Map", ((F32, 1),))]}   # e.g. a def used twice
    with static.active(HERE, table):
        assert pairwise(xs).dtype == np.float64                      # unknown: the guess
    with static.active("/elsewhere.py", {site: [("Map", ((I32, 1),))]}):
        assert pairwise(xs).dtype == np.float64                      # another module's table


def test_an_empty_comprehension_passed_to_sum_gets_the_reduction_type():
    xs = np.array([1, 2], np.int32)
    assert kept(xs).dtype == np.float64                              # no table: a guess
    with static.active(HERE, lambda: {_site(kept): [("Reduce", ((I32, 0),))]}):
        got = kept(xs)
    assert type(got) is np.int32 and got == 0
    assert kept(np.array([1, 200], np.int32)) == 200


def test_annotation_comes_before_the_table():
    def f(i: ps.i64) -> ps.u8:
        return ps.u8(i)
    tpl = result_template(f, [None], lambda: [(np.dtype(np.int32), 0)])
    assert tpl.dtype == np.uint8


def test_site_table_of_a_translated_program():
    from pyshark.translate import translate_source
    from wrapper.python_backend import site_table
    src = ("import pyshark.prelude as ps\n"
           "@ps.entry\n"
           "def f(xs: ps.Array[ps.i32]) -> ps.i32:\n"
           "    steps = ps.map(lambda i: xs[i + 1] - xs[i], ps.iota(len(xs) - 1))\n"
           "    return ps.sum([x for x in steps if x > 0])\n")
    table = site_table(translate_source(src, "snippet.py"))
    assert ("Map", ((I32, 1),)) in table[(4, 12)]
    assert ("Reduce", ((I32, 0),)) in table[(5, 11)]
    assert any(kind == "Map" for kind, _ in table[(5, 18)])          # the comprehension


def listed(xs):
    return ps.array(
        [x for x in xs if x > 100])


def test_ps_array_of_an_empty_comprehension_looks_at_its_argument():
    xs = np.array([1], np.int64)
    line = listed.__code__.co_firstlineno + 2
    table = {(line, 8): [("Filter", ((np.dtype(np.int64).str, 1),)), ("Map", ((I32, 1),))],
             (line - 1, 11): [("Index", ((F32, 0),))]}
    with static.active(HERE, table):
        got = listed(xs)
    assert got.shape == (0,) and got.dtype == np.int32
    assert listed(xs).dtype == np.float64
