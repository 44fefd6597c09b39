"""Scalar types, extremes, Array annotations and conversion to declared types."""
import typing
from typing import NamedTuple

import numpy as np
import pytest

import pyshark.prelude as ps
from pyshark.errors import ShapeError


class Vec2(NamedTuple):
    x: ps.f32
    y: ps.f32


def test_scalar_types_are_numpy_classes():
    assert ps.f32 is np.float32 and ps.f64 is np.float64
    assert ps.i8 is np.int8 and ps.i16 is np.int16 and ps.i32 is np.int32 and ps.i64 is np.int64
    assert ps.u8 is np.uint8 and ps.u16 is np.uint16 and ps.u32 is np.uint32 and ps.u64 is np.uint64
    assert ps.inf == float("inf") and type(ps.inf) is float
    assert ps.nan != ps.nan and type(ps.nan) is float


@pytest.mark.parametrize("t", [ps.i8, ps.i16, ps.i32, ps.i64, ps.u8, ps.u16, ps.u32, ps.u64])
def test_int_extremes(t):
    hi, lo = ps.highest(t), ps.lowest(t)
    assert type(hi) is t and type(lo) is t
    assert int(hi) == np.iinfo(t).max and int(lo) == np.iinfo(t).min


@pytest.mark.parametrize("t", [ps.f32, ps.f64])
def test_float_extremes_are_infinities(t):
    assert type(ps.lowest(t)) is t and ps.lowest(t) == -np.inf
    assert type(ps.highest(t)) is t and ps.highest(t) == np.inf
    # the neutral element of a max-reduction
    assert ps.reduce(ps.max, ps.lowest(t), np.array([], dtype=t)) == -np.inf


def test_bool_and_python_type_extremes():
    assert ps.highest(bool) == True and ps.lowest(bool) == False  # noqa: E712
    assert ps.highest(int) == np.iinfo(np.int64).max and type(ps.highest(int)) is np.int64
    assert ps.lowest(float) == -np.inf and type(ps.lowest(float)) is np.float64
    with pytest.raises(TypeError):
        ps.highest(str)


def test_array_alias():
    a = ps.Array[ps.f32]
    assert a.elem is ps.f32 and a.rank == 1 and a.base is ps.f32
    m = ps.Array[ps.Array[ps.f32]]
    assert m.elem == a and m.rank == 2 and m.base is ps.f32
    assert a == ps.Array[ps.f32] and hash(a) == hash(ps.Array[ps.f32]) and a != m
    assert {a: 1}[ps.Array[np.float32]] == 1
    assert repr(m) == "Array[Array[float32]]"
    t = ps.Array[tuple[ps.i32, ps.f32]]
    assert t.elem == tuple[ps.i32, ps.f32]
    assert ps.Array[Vec2].base is Vec2
    with pytest.raises(AttributeError):
        a.elem = ps.f64
    with pytest.raises(TypeError):
        ps.Array[ps.f32, ps.f64]


def test_array_annotations_evaluate_in_hints():
    Vector = ps.Array[ps.f32]
    Matrix = ps.Array[Vector]

    def f(m: Matrix, t: tuple[ps.Array[ps.i32], Vec2]) -> ps.Array[Vec2]:
        return m

    hints = typing.get_type_hints(f)
    assert hints["m"] == ps.Array[ps.Array[ps.f32]]
    assert typing.get_args(hints["t"])[0] == ps.Array[ps.i32]
    assert hints["return"].elem is Vec2


def test_string_annotations_resolve():
    src = (
        "from __future__ import annotations\n"
        "import pyshark.prelude as ps\n"
        "Matrix = ps.Array[ps.Array[ps.f64]]\n"
        "def f(m: Matrix, xs: ps.Array[tuple[ps.i32, bool]]) -> ps.Array[ps.f64]:\n"
        "    return m[0]\n"
    )
    ns = {}
    exec(compile(src, "<test>", "exec"), ns)
    hints = typing.get_type_hints(ns["f"])
    assert hints["m"].rank == 2 and hints["xs"].elem == tuple[ps.i32, bool]


def test_array_alias_converts():
    a = ps.Array[ps.f32]([0.1, 2])
    assert a.dtype == np.float32 and a[0] == np.float32(0.1)
    e = ps.Array[ps.Array[ps.i32]]([])
    assert e.shape == (0, 0) and e.dtype == np.int32
    with pytest.raises(ShapeError):
        ps.Array[ps.Array[ps.i32]]([[1, 2], [3]])
    with pytest.raises(ShapeError):
        ps.Array[ps.i32]([[1, 2]])
    pts = ps.Array[Vec2]([[1.0, 2.0], (3.0, 4.0)])
    assert isinstance(pts, ps.TupleArray) and pts[1] == Vec2(np.float32(3.0), np.float32(4.0))
    assert type(pts[1]) is Vec2 and pts.fields[0].dtype == np.float32
    empty = ps.Array[tuple[ps.i64, ps.Array[ps.f32]]]([])
    assert len(empty) == 0 and empty.fields[1].shape == (0, 0) and empty.fields[1].dtype == np.float32
    grid = ps.Array[ps.Array[tuple[ps.i32, bool]]]([[[1, True], [2, False]], [[3, True], [4, True]]])
    assert grid.rank == 2 and grid.shape == (2, 2) and grid[1, 0] == (3, True)
