"""TupleArray: arrays of tuples and records as a struct of arrays."""
from typing import NamedTuple

import numpy as np
import pytest

import pyshark.prelude as ps
from pyshark.errors import ShapeError
from pyshark.prelude import TupleArray


class Vec3(NamedTuple):
    x: ps.f32
    y: ps.f32
    z: ps.f32


class Particle(NamedTuple):
    position: Vec3
    mass: ps.f32
    ident: ps.i32


def particles():
    return TupleArray.from_elements([
        Particle(Vec3(ps.f32(0), ps.f32(1), ps.f32(2)), ps.f32(1.5), ps.i32(7)),
        Particle(Vec3(ps.f32(3), ps.f32(4), ps.f32(5)), ps.f32(2.5), ps.i32(8)),
        Particle(Vec3(ps.f32(6), ps.f32(7), ps.f32(8)), ps.f32(3.5), ps.i32(9)),
    ])


def test_from_elements_tuples_index_to_tuples():
    xs = TupleArray.from_elements([(ps.i32(1), ps.f32(0.5)), (ps.i32(2), ps.f32(1.5))])
    assert len(xs) == 2 and xs.shape == (2,) and xs.rank == 1 and xs.make is tuple
    assert xs.fields[0].dtype == np.int32 and xs.fields[1].dtype == np.float32
    assert xs[0] == (1, 0.5) and type(xs[0]) is tuple and type(xs[0][0]) is np.int32
    assert xs[-1] == (2, 1.5) and xs[-2] == xs[0]
    with pytest.raises(IndexError):
        xs[2]
    with pytest.raises(IndexError):
        xs[-3]
    assert list(xs) == [(1, 0.5), (2, 1.5)]
    assert xs[np.int64(1)] == (2, 1.5)


def test_records_nested():
    ps_ = particles()
    assert ps_.make is Particle and isinstance(ps_.fields[0], TupleArray)
    p = ps_[1]
    assert type(p) is Particle and type(p.position) is Vec3
    assert p.position == Vec3(3, 4, 5) and p.mass == 2.5 and p.ident == 8
    sub = ps_[1:]
    assert isinstance(sub, TupleArray) and len(sub) == 2 and sub[0] == p
    assert ps_[::-1][0].ident == 9
    assert ps_[np.array([2, 0])][0].ident == 9
    assert ps_[np.array([False, True, True])][0] == p


def test_array_valued_fields_and_rank2():
    rows = TupleArray([np.arange(6, dtype=np.int64).reshape(3, 2), np.array([1.0, 2.0, 3.0])], tuple, 1)
    assert rows.shape == (3,)
    r, v = rows[1]
    assert list(r) == [2, 3] and v == 2.0
    grid = TupleArray([np.arange(6).reshape(2, 3), np.ones((2, 3), dtype=np.float32)], tuple, 2)
    assert grid.shape == (2, 3) and len(grid) == 2
    row = grid[1]
    assert isinstance(row, TupleArray) and row.rank == 1 and row[2] == (5, 1.0)
    assert grid[1, 2] == grid[1][2] == (5, 1.0)
    assert grid[-1, -1] == (5, 1.0)
    col = grid[:, 1]
    assert isinstance(col, TupleArray) and col.rank == 1 and list(col) == [(1, 1.0), (4, 1.0)]
    with pytest.raises(IndexError):
        grid[2, 0]
    with pytest.raises(IndexError):
        grid[0, 0, 0]


def test_constructor_checks():
    with pytest.raises(ShapeError):
        TupleArray([np.zeros(2), np.zeros(3)])
    with pytest.raises(ValueError):
        TupleArray([])
    with pytest.raises(ValueError):
        TupleArray([np.zeros(2), np.zeros(2)], Vec3)
    with pytest.raises(TypeError):
        TupleArray([[1, 2]])


def test_to_structured_tuples_and_records():
    xs = TupleArray([np.array([1, 2], dtype=np.int32), np.array([0.5, 1.5], dtype=np.float32)])
    s = xs.to_structured()
    assert s.dtype.names == ("f0", "f1") and s.dtype["f0"] == np.int32 and s.dtype["f1"] == np.float32
    assert s["f0"].tolist() == [1, 2] and s["f1"].tolist() == [0.5, 1.5]
    p = particles().to_structured()
    assert p.dtype.names == ("position", "mass", "ident")
    assert p.dtype["position"].names == ("x", "y", "z")
    assert p["position"]["y"].tolist() == [1, 4, 7] and p["ident"].tolist() == [7, 8, 9]
    back = TupleArray.from_structured(p, Particle)
    assert back == particles() and back[2].position == Vec3(6, 7, 8)
    rows = TupleArray([np.arange(6, dtype=np.int64).reshape(3, 2), np.array([1.0, 2.0, 3.0])])
    rs = rows.to_structured()
    assert rs.dtype["f0"].shape == (2,) and rs["f0"].tolist() == [[0, 1], [2, 3], [4, 5]]
    assert TupleArray.from_structured(rs) == rows


def test_from_structured_matches_record_fields_by_name():
    p = particles().to_structured()
    order = ["ident", "position", "mass"]
    swapped = np.zeros(p.shape, dtype=[(n, p.dtype[n]) for n in order])
    for n in order:
        swapped[n] = p[n]
    assert TupleArray.from_structured(swapped, Particle) == particles()
    other = np.zeros(2, dtype=[("a", "f4"), ("b", "f4"), ("c", "i4")])
    with pytest.raises(TypeError, match="Particle"):
        TupleArray.from_structured(other, Particle)
    assert len(TupleArray.from_structured(other).fields) == 3      # plain tuples: by position


def test_setitem_and_copy_are_independent():
    xs = TupleArray([np.array([1, 2], dtype=np.int32), np.array([0.5, 1.5])])
    ys = xs.copy()
    ys[0] = (ps.i32(9), 9.5)
    assert ys[0] == (9, 9.5) and xs[0] == (1, 0.5)
    ys[-1] = (ps.i32(3), 3.5)
    assert ys[1] == (3, 3.5)
    with pytest.raises(IndexError):
        ys[2] = (ps.i32(0), 0.0)
    with pytest.raises(TypeError):
        ys[0] = 5
    ps_ = particles()
    ps_[0] = Particle(Vec3(9, 9, 9), 0.0, 1)
    assert ps_[0].position == Vec3(9, 9, 9) and ps_.fields[0].fields[0].dtype == np.float32


def test_tolist_and_from_elements_like():
    assert particles().tolist()[0] == Particle(Vec3(0.0, 1.0, 2.0), 1.5, 7)
    e = TupleArray.from_elements([], like=Vec3)
    assert len(e) == 0 and e.make is Vec3 and e.fields[0].dtype == np.float32
    with pytest.raises(TypeError):
        TupleArray.from_elements([])
    two = TupleArray.from_elements([[(1, 2.0)], [(3, 4.0)]])
    assert two.rank == 2 and two[1, 0] == (3, 4.0)


def test_zip_unzip_map_roundtrip():
    a = np.array([1, 2, 3], dtype=np.int32)
    b = np.array([0.5, 1.5, 2.5], dtype=np.float32)
    z = ps.zip(a, b)
    assert isinstance(z, TupleArray) and z[2] == (3, 2.5)
    ua, ub = ps.unzip(z)
    assert np.array_equal(ua, a) and ua.dtype == a.dtype and ub.dtype == b.dtype
    swapped = ps.map(lambda p: (p[1], p[0]), z)
    assert swapped[0] == (0.5, 1) and swapped.fields[0].dtype == np.float32
    recs = ps.map(lambda x, y: Vec3(y, y, y), a, b)
    assert recs.make is Vec3 and ps.unzip(recs)[2].dtype == np.float32
    xs, ys, zs = ps.unzip(recs)
    assert xs.tolist() == [0.5, 1.5, 2.5]
    pairs = ps.map(lambda x: (ps.replicate(2, x), x), a)
    rows, vals = ps.unzip(pairs)
    assert rows.shape == (3, 2) and rows.dtype == np.int32 and vals.tolist() == [1, 2, 3]
