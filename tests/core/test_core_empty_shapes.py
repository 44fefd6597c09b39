"""core/empty_shapes.py (and the abstract evaluation it runs, core/stand_in.py):
a pass from core IR to core IR that gives every prelude map of arrays the
inner dimensions of its empty result, as checked, non-raising statements
placed before the map; the interpreter then gives Python mode's shapes."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from pyshark.core import ir
from pyshark.core.check import check_program
from pyshark.core.empty_shapes import derive_empty_shapes
from pyshark.core.interp import run_entry
from pyshark.core.traverse import iter_stms
from pyshark.core.types import I64
from pyshark.translate import translate_source

SRC = textwrap.dedent('''
    import pyshark.prelude as ps

    @ps.entry
    def twice(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
        return ps.map(lambda r: ps.map(lambda x: x * 2.0, r), xs)

    @ps.entry
    def scaled(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        return ps.map(lambda x: x * 2.0, xs)

    @ps.entry
    def rep(xs: ps.Array[ps.f32], k: int) -> ps.Array[ps.Array[ps.f32]]:
        return ps.map(lambda x: ps.replicate(2 * k + 1, x), xs)

    @ps.entry
    def by_data(xs: ps.Array[ps.f32], ks: ps.Array[ps.i64]) -> ps.Array[ps.Array[ps.f32]]:
        return ps.map(lambda x: ps.replicate(ks[0], x), xs)

    @ps.entry
    def divided(xs: ps.Array[ps.f32], k: int) -> ps.Array[ps.Array[ps.f32]]:
        return ps.map(lambda x: ps.replicate(12 // k, x), xs)

    @ps.entry
    def listed(xs: ps.Array[ps.f32]) -> ps.Array[ps.Array[ps.f32]]:
        return [ps.replicate(3, x) for x in xs]

    def helper(r: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        return ps.concat(r, ps.replicate(2, r[0]))

    @ps.entry
    def called(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
        return ps.map(helper, xs)

    @ps.entry
    def by_value(ns: ps.Array[ps.i64]) -> ps.Array[ps.Array[ps.i64]]:
        return ps.map(lambda n: ps.iota(n), ns)

    @ps.entry
    def by_index(m: int) -> ps.Array[ps.Array[ps.i64]]:
        return ps.tabulate(m, lambda i: ps.iota(i * 0 + 2 * (i // (i + 1))))
''')


@pytest.fixture(scope="module")
def programs():
    before = translate_source(SRC, "empty_shapes_src.py")
    return before, derive_empty_shapes(before)


def _maps(program, name):
    return [s.exp for s in iter_stms(program.functions[name].body) if isinstance(s.exp, ir.Map)]


def _run(program, name, *args):
    return run_entry(program, name, list(args))[0]


def test_is_a_pass_that_checks(programs):
    before, after = programs
    assert after is not before
    check_program(after)
    assert derive_empty_shapes(after).functions == after.functions     # nothing left to do


def test_translated_maps_have_none_and_the_pass_fills_them(programs):
    before, after = programs
    assert all(m.empty_dims is None for m in _maps(before, "twice"))
    outer, inner = _maps(after, "twice")
    assert len(outer.empty_dims) == 1
    assert inner.empty_dims is None                     # scalar rows need none


def test_hoisted_statements_cannot_raise(programs):
    """Sizes, arithmetic, selects; an integer division only by a positive
    constant or by `select(d != 0, d, 1)` (the stand-in's ZeroDivisionError
    is part of the condition instead)."""
    _, after = programs
    for fun in after.functions.values():
        defs = {s.pat[0].name: s.exp for s in iter_stms(fun.body) if len(s.pat) == 1}
        for stm in iter_stms(fun.body):
            if not any(v.name.startswith("es_") for v in stm.pat):
                continue
            e = stm.exp
            assert isinstance(e, (ir.Size, ir.BinOp, ir.UnOp, ir.Convert, ir.Select))
            if isinstance(e, ir.BinOp) and e.op in ("floordiv", "mod") and e.x.type.is_int:
                y = e.y if isinstance(e.y, ir.Const) else defs[e.y.name]
                assert (isinstance(y, ir.Const) and y.value > 0
                        or isinstance(y, ir.Select) and y.y == ir.Const(1, y.y.type))


@pytest.mark.parametrize("name, args, shape", [
    ("twice", [np.zeros((0, 7), np.float32)], (0, 7)),
    ("rep", [np.zeros(0, np.float32), np.int64(3)], (0, 7)),
    ("rep", [np.zeros(0, np.float32), np.int64(-4)], (0, 0)),
    ("by_data", [np.zeros(0, np.float32), np.array([5])], (0, 0)),   # data: not derived
    ("divided", [np.zeros(0, np.float32), np.int64(4)], (0, 3)),
    ("divided", [np.zeros(0, np.float32), np.int64(0)], (0, 0)),     # 12 // 0 raises
    ("listed", [np.zeros(0, np.float32)], (0, 0)),                   # the list []
    ("called", [np.zeros((0, 4), np.float32)], (0, 6)),              # through a call
    ("called", [np.zeros((0, 0), np.float32)], (0, 0)),              # r[0] raises
])
def test_interpreter_gives_the_stand_in_shape(programs, name, args, shape):
    before, after = programs
    assert _run(after, name, *args).shape == shape
    assert _run(before, name, *args).shape == (0,) * len(shape)      # without the pass


def test_comprehension_keeps_its_zeros(programs):
    _, after = programs
    (m,) = _maps(after, "listed")
    assert m.empty_dims == (ir.Const(0, I64),)


def test_non_empty_maps_are_unchanged(programs):
    before, after = programs
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert np.array_equal(_run(after, "twice", xs), _run(before, "twice", xs))
    assert np.array_equal(_run(after, "scaled", xs[0]), xs[0] * 2)


@pytest.mark.parametrize("name, rows", [
    ("twice", True), ("rep", True), ("divided", True), ("listed", True), ("called", True),
    ("by_data", False),       # an element of a captured array
    ("by_value", False),      # the element itself
    ("by_index", False),      # the index
])
def test_row_dims_only_where_no_element_data_decides(programs, name, rows):
    """row_dims: the rows' dimensions for every element, known before any
    row runs (the stand-in with the element's values unknown)."""
    _, after = programs
    outer = _maps(after, name)[0]
    assert (outer.row_dims is not None) == rows
    if rows:
        assert len(outer.row_dims) == len(outer.empty_dims)


def test_row_dims_of_a_raising_stand_in_are_the_rows(programs):
    """12 // k raises for the stand-in only when k == 0: the empty result
    is then (0, 0), but a row that returns has 12 // k elements; row_dims
    say so, with no statement that can raise (a select guards the divisor)."""
    _, after = programs
    (m,) = _maps(after, "divided")
    assert m.row_dims != m.empty_dims
