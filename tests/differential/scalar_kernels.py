"""Generates one PyShark module of scalar-operator kernels per scalar type.

The source is a template instantiated per type, so every operator is checked
for i8 ... u64, f32 and f64 with the same code.
"""
from __future__ import annotations

INT_TEMPLATE = '''
import pyshark.prelude as ps


@ps.entry
def arith(a: ps.{t}, b: ps.{t}) -> tuple[ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}]:
    return (a + b, a - b, a * b, -a, abs(a))


@ps.entry
def divmod_floor(a: ps.{t}, b: ps.{t}) -> tuple[ps.{t}, ps.{t}]:
    return (a // b, a % b)


@ps.entry
def bits(a: ps.{t}, b: ps.{t}, s: ps.{t}) -> tuple[ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}]:
    return (a & b, a | b, a ^ b, ~a, a << s, a >> s)


@ps.entry
def power(a: ps.{t}, e: ps.{t}) -> ps.{t}:
    return a ** e


@ps.entry
def compare(a: ps.{t}, b: ps.{t}) -> tuple[bool, bool, bool, bool, bool, bool]:
    return (a < b, a <= b, a > b, a >= b, a == b, a != b)


@ps.entry
def literal_mix(a: ps.{t}) -> tuple[ps.{t}, ps.{t}, bool]:
    return (a + 1, a * 3 - 2, a > 5)


@ps.entry
def convert(a: ps.{t}) -> tuple[ps.i8, ps.u8, ps.i16, ps.u16, ps.i32, ps.u32, ps.i64, ps.u64, ps.f32, ps.f64, bool]:
    return (ps.i8(a), ps.u8(a), ps.i16(a), ps.u16(a), ps.i32(a), ps.u32(a), ps.i64(a), ps.u64(a),
            ps.f32(a), ps.f64(a), bool(a))


@ps.entry
def extremes(a: ps.{t}, b: ps.{t}) -> tuple[ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}]:
    return (min(a, b), max(a, b), ps.min(a, b), ps.max(a, b), ps.highest(ps.{t}), ps.lowest(ps.{t}))
'''

FLOAT_TEMPLATE = '''
import pyshark.prelude as ps


@ps.entry
def arith(a: ps.{t}, b: ps.{t}) -> tuple[ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}]:
    return (a + b, a - b, a * b, a / b, -a, abs(a))


@ps.entry
def divmod_floor(a: ps.{t}, b: ps.{t}) -> tuple[ps.{t}, ps.{t}]:
    return (a // b, a % b)


@ps.entry
def compare(a: ps.{t}, b: ps.{t}) -> tuple[bool, bool, bool, bool, bool, bool]:
    return (a < b, a <= b, a > b, a >= b, a == b, a != b)


@ps.entry
def math1(x: ps.{t}) -> tuple[ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}]:
    return (ps.sqrt(x), ps.exp(x), ps.log(x), ps.sin(x), ps.cos(x), ps.tanh(x), ps.atan(x), ps.sign(x))


@ps.entry
def rounding(x: ps.{t}) -> tuple[ps.{t}, ps.{t}, ps.{t}, ps.{t}]:
    return (ps.floor(x), ps.ceil(x), ps.round(x), ps.trunc(x))


@ps.entry
def math2(x: ps.{t}, y: ps.{t}) -> tuple[ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}, ps.{t}]:
    return (ps.atan2(x, y), ps.pow(x, y), ps.min(x, y), ps.max(x, y), min(x, y), max(x, y))


@ps.entry
def classify(x: ps.{t}) -> tuple[bool, bool]:
    return (ps.isnan(x), ps.isinf(x))


@ps.entry
def literal_mix(a: ps.{t}) -> tuple[ps.{t}, ps.{t}, bool]:
    return (a * 0.5 + 1, 2.0 - a / 3, a > 0.25)


@ps.entry
def to_ints(x: ps.{t}) -> tuple[ps.i8, ps.i32, ps.i64, ps.u8, ps.u32]:
    return (ps.i8(x), ps.i32(x), ps.i64(x), ps.u8(x), ps.u32(x))


@ps.entry
def to_floats(x: ps.{t}) -> tuple[ps.f32, ps.f64, bool]:
    return (ps.f32(x), ps.f64(x), bool(x))
'''

INT_TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOAT_TYPES = ["f32", "f64"]


def kernel_source(t: str) -> str:
    template = FLOAT_TEMPLATE if t in FLOAT_TYPES else INT_TEMPLATE
    return f'"""Scalar operators on {t}."""' + template.replace("{t}", t)
