"""Copies of an array, one entry per element type and rank: how the benchmark runner puts
inputs on the device for a backend with device-resident arrays (the copy such a backend
returns stays there, and later calls take it without a transfer)."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "copy_f32", "args": [[1.5, -2.0]], "expected": [1.5, -2.0]},
    {"entry": "copy_i32", "args": [[3, -4]], "expected": [3, -4]},
    {"entry": "copy_f32_2d", "args": [[[1.0, 2.0], [3.0, 4.0]]], "expected": [[1.0, 2.0], [3.0, 4.0]]},
    {"entry": "copy_i32_2d", "args": [[[1, 2, 3]]], "expected": [[1, 2, 3]]},
    {"entry": "copy_f64", "args": [[0.1, -2.0]], "expected": [0.1, -2.0]},
    {"entry": "copy_i64", "args": [[3, -1099511627776]], "expected": [3, -1099511627776]},
    {"entry": "copy_u8", "args": [[0, 255]], "expected": [0, 255]},
    {"entry": "copy_f64_2d", "args": [[[0.1], [0.2]]], "expected": [[0.1], [0.2]]},
    {"entry": "copy_i64_2d", "args": [[[1099511627776, -1]]], "expected": [[1099511627776, -1]]},
    {"entry": "copy_u8_2d", "args": [[[7, 8], [9, 255]]], "expected": [[7, 8], [9, 255]]},
]


@ps.entry
def copy_f32(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x: x, xs)


@ps.entry
def copy_i32(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    return ps.map(lambda x: x, xs)


@ps.entry
def copy_f32_2d(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda row: ps.map(lambda x: x, row), xs)


@ps.entry
def copy_i32_2d(xs: ps.Array[ps.Array[ps.i32]]) -> ps.Array[ps.Array[ps.i32]]:
    return ps.map(lambda row: ps.map(lambda x: x, row), xs)


@ps.entry
def copy_f64(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.map(lambda x: x, xs)


@ps.entry
def copy_f64_2d(xs: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.Array[ps.f64]]:
    return ps.map(lambda row: ps.map(lambda x: x, row), xs)


@ps.entry
def copy_i64(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.map(lambda x: x, xs)


@ps.entry
def copy_i64_2d(xs: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.Array[ps.i64]]:
    return ps.map(lambda row: ps.map(lambda x: x, row), xs)


@ps.entry
def copy_u8(xs: ps.Array[ps.u8]) -> ps.Array[ps.u8]:
    return ps.map(lambda x: x, xs)


@ps.entry
def copy_u8_2d(xs: ps.Array[ps.Array[ps.u8]]) -> ps.Array[ps.Array[ps.u8]]:
    return ps.map(lambda row: ps.map(lambda x: x, row), xs)
