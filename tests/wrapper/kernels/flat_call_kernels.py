"""Entries whose surface types flatten in the corner cases: one-element
tuples and one-field records (one flat value, but not a leaf), nested
tuples, and arrays of records."""
from typing import NamedTuple

import pyshark.prelude as ps


class One(NamedTuple):
    v: ps.i32


class Pt(NamedTuple):
    x: ps.f64
    y: ps.f64


@ps.entry
def one_tuple_result(a: ps.i64) -> tuple[ps.i64]:
    return (a + 1,)


@ps.entry
def one_tuple_param(p: tuple[ps.i64]) -> ps.i64:
    return p[0] + 1


@ps.entry
def one_field_record_param(r: One) -> ps.i32:
    return r.v * ps.i32(2)


@ps.entry
def one_field_record_result(a: ps.i32) -> One:
    return One(a + ps.i32(1))


@ps.entry
def nested(p: tuple[ps.i64, tuple[ps.f64, ps.i64]], k: ps.i64) -> tuple[ps.f64, tuple[ps.i64]]:
    a, (x, b) = p
    return (x * 2.0, (a + b + k,))


@ps.entry
def shifted(pts: ps.Array[Pt], dx: ps.f64) -> ps.Array[Pt]:
    return ps.map(lambda p: Pt(p.x + dx, p.y), pts)


@ps.entry
def plain(a: ps.i64, xs: ps.Array[ps.f64]) -> ps.f64:
    return ps.sum(xs) + ps.f64(a)
