"""Kernels for test_soac_sizes.py: every SOAC, and nested SOACs, on integer
data (so that any regrouping of a reduction or scan gives the exact
result)."""
import pyshark.prelude as ps


@ps.entry
def map_affine(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.map(lambda x: 3 * x - 7, xs)


@ps.entry
def map_float(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.map(lambda x: x * 0.5 + 1.0, xs)


@ps.entry
def reduce_sum(xs: ps.Array[ps.i64]) -> ps.i64:
    return ps.reduce(lambda a, b: a + b, 0, xs)


@ps.entry
def reduce_max_map(xs: ps.Array[ps.i32]) -> ps.i32:
    return ps.reduce(lambda a, b: ps.max(a, b), ps.lowest(ps.i32),
                     ps.map(lambda x: x ^ 5, xs))


@ps.entry
def scan_sum(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scan(lambda a, b: a + b, 0, xs)


@ps.entry
def filter_odd(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.filter(lambda x: x % 2 == 1, xs)


@ps.entry
def histogram(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.reduce_by_index(ps.replicate(17, 0), lambda a, b: a + b, 0,
                              ps.map(lambda x: x % 19 - 1, xs), ps.map(lambda x: x, xs))


@ps.entry
def scatter_rev(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    n = len(xs)
    return ps.scatter(ps.replicate(n, -1), ps.map(lambda i: n - 1 - i, ps.iota(n)), xs)


@ps.entry
def rows_reduce(xss: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.i64]:
    return ps.map(lambda row: ps.reduce(lambda a, b: a + b, 0, row), xss)


@ps.entry
def rows_scan(xss: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.Array[ps.i64]]:
    return ps.map(lambda row: ps.scan(lambda a, b: a + b, 0, row), xss)


@ps.entry
def rows_map(xss: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.Array[ps.i64]]:
    return ps.map(lambda row: ps.map(lambda x: x * x, row), xss)
