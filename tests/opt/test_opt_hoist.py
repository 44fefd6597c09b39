"""hoist (codegen/opt/hoist.py): a map's element-invariant array statements
and SOACs move out of its function when they cannot raise and nothing
overwrites them. Values and raised exception classes are the interpreter's
before the pass (the whole corpus runs through it in test_opt_corpus.py)."""
from __future__ import annotations

import numpy as np
import pytest

from opt_build import before_and_after_hoist, same_outcome
from pyshark.codegen.opt.hoist import hoist_invariants
from pyshark.codegen.pipeline import PASSES
from pyshark.core import ir
from pyshark.core.interp import run_entry

SRC = '''
import pyshark.prelude as ps
M = ps.Array[ps.Array[ps.f32]]

@ps.entry
def sgemm_shape(a: M, b: M) -> M:
    return ps.map(lambda xs: ps.map(lambda ys: ps.sum(ps.map(lambda x, y: x * y, xs, ys)),
                                    ps.transpose(b)), a)

@ps.entry
def owned(xs: ps.Array[ps.f32]) -> M:
    def row(x: ps.f32) -> ps.Array[ps.f32]:
        z = ps.replicate(3, ps.f32(0.0))
        z[0] = x
        return z
    return ps.map(row, xs)

@ps.entry
def may_raise(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32], k: int) -> M:
    return ps.map(lambda x: ps.map(lambda y: y + x, ps.take(k, ys)), xs)

@ps.entry
def two_levels(a: M, b: ps.Array[ps.f32]) -> M:
    return ps.map(lambda r: ps.map(lambda v: v + ps.sum(ps.map(lambda y: y * y, b)), r), a)
'''


def _programs():
    return before_and_after_hoist(SRC, "hoist_cases.py")


def _inside_maps(fun: ir.FunDef, cls) -> int:
    """How many cls statements sit inside a map's function (at any depth)."""
    from pyshark.core.traverse import iter_stms
    count = 0
    for s in fun.body.stms:
        if isinstance(s.exp, ir.Map):
            count += sum(isinstance(x.exp, cls) for x in iter_stms(s.exp.lam.body))
    return count


def _outcome(program, entry, args):
    try:
        return ("ok", run_entry(program, entry, [np.copy(a) for a in args]))
    except Exception as exc:       # noqa: BLE001 -- the class is the outcome
        return ("raise", type(exc))


def _same(before, after, entry, *arg_lists):
    for args in arg_lists:
        a, b = _outcome(before, entry, args), _outcome(after, entry, args)
        assert same_outcome(a, b), f"{entry}{args}: before {a}, after {b}"


def test_the_pass_is_last_of_the_core_passes():
    assert PASSES[-1] == ("hoist", hoist_invariants)


def test_an_invariant_transpose_leaves_the_map_over_rows():
    before, after = _programs()
    assert _inside_maps(before.functions["sgemm_shape"], ir.Transpose) == 1
    assert _inside_maps(after.functions["sgemm_shape"], ir.Transpose) == 0
    r = np.random.default_rng(1)
    f = np.float32
    _same(before, after, "sgemm_shape",
          [r.random((3, 4), dtype=f), r.random((4, 5), dtype=f)],
          [np.zeros((0, 4), f), r.random((4, 5), dtype=f)],      # no row: computed, dropped
          [r.random((1, 1), dtype=f), r.random((1, 1), dtype=f)],
          [r.random((2, 0), dtype=f), np.zeros((0, 3), f)],
          [r.random((2, 3), dtype=f), r.random((4, 2), dtype=f)])  # ShapeError either way


def test_an_array_the_function_updates_stays():
    before, after = _programs()
    assert _inside_maps(after.functions["owned"], ir.Replicate) == 1
    out = run_entry(after, "owned", [np.array([1, 2, 3], np.float32)])
    assert np.asarray(out[0]).tolist() == [[1, 0, 0], [2, 0, 0], [3, 0, 0]]


@pytest.mark.parametrize("k", [0, 2, 5, -1])
def test_a_statement_that_may_raise_stays(k):
    before, after = _programs()
    assert (_inside_maps(after.functions["may_raise"], ir.Map)
            == _inside_maps(before.functions["may_raise"], ir.Map))
    f = np.float32
    _same(before, after, "may_raise", [np.ones(3, f), np.arange(4, dtype=f), k],
          [np.ones(0, f), np.arange(4, dtype=f), k])


def test_an_invariant_climbs_out_of_both_maps():
    before, after = _programs()
    fun = after.functions["two_levels"]
    assert _inside_maps(fun, ir.Reduce) == 0 < _inside_maps(before.functions["two_levels"],
                                                             ir.Reduce)
    f = np.float32
    _same(before, after, "two_levels", [np.ones((2, 3), f), np.arange(4, dtype=f)],
          [np.ones((0, 3), f), np.arange(4, dtype=f)], [np.ones((2, 3), f), np.ones(0, f)])
