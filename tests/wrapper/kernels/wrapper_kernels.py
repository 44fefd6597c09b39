"""Small kernels for the wrapper tests: every kind of parameter and result."""
from typing import NamedTuple

import pyshark.prelude as ps


class Vec3(NamedTuple):
    x: ps.f32
    y: ps.f32
    z: ps.f32


@ps.entry
def scale(a: ps.f32, xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x: a * x, xs)


@ps.entry
def identity(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return xs


@ps.entry
def total(xss: ps.Array[ps.Array[ps.i32]]) -> ps.i32:
    return ps.sum(ps.map(lambda row: ps.sum(row), xss))


@ps.entry
def negate_if(n: ps.i8, flag: bool) -> ps.i8:
    return -n if flag else n


@ps.entry
def make_vec(x: ps.f32) -> Vec3:
    return Vec3(x, x + 1.0, x + 2.0)


@ps.entry
def vecs(xs: ps.Array[ps.f32]) -> ps.Array[Vec3]:
    return ps.map(lambda x: Vec3(x, 2.0 * x, 3.0 * x), xs)


@ps.entry
def pairs(xs: ps.Array[ps.i32]) -> ps.Array[tuple[ps.i32, ps.f64]]:
    return ps.map(lambda x: (x, ps.f64(x) * 0.5), xs)


@ps.entry
def div_mod(a: ps.i64, b: ps.i64) -> tuple[ps.i64, ps.i64]:
    return (a // b, a % b)


@ps.entry
def norms(vs: ps.Array[Vec3]) -> ps.Array[ps.f32]:
    return ps.map(lambda v: ps.sqrt(v.x * v.x + v.y * v.y + v.z * v.z), vs)
