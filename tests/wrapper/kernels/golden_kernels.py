"""Kernels for the golden-rule tests: what Python mode must compute as the
contract says, exactly as compiled code does (tests/wrapper/test_golden_rule.py)."""
from typing import NamedTuple

import pyshark.prelude as ps


class Pair(NamedTuple):
    lo: ps.i32
    hi: ps.f32


# -- class 1: arithmetic and errors ---------------------------------------------------

@ps.entry
def float_divisions(a: ps.f64, b: ps.f64) -> tuple[ps.f64, ps.f64, ps.f64]:
    return (a // b, a % b, (a + 1.0) // (b * 2.0))


@ps.entry
def float32_divisions(xs: ps.Array[ps.f32], d: ps.f32) -> ps.Array[ps.f32]:
    return ps.map(lambda x: x // d + x % d, xs)


@ps.entry
def int_divisions(a: ps.i16, b: ps.i16) -> tuple[ps.i16, ps.i16]:
    return (a // b, a % b)


@ps.entry
def powers(x: ps.f64, y: ps.f64) -> tuple[ps.f64, ps.f64]:
    return (ps.pow(x, y), x ** y)


@ps.entry
def int_power(x: ps.i64, y: ps.i64) -> tuple[ps.i64, ps.i64]:
    return (x ** y, ps.pow(x, y))


@ps.entry
def stepped(xs: ps.Array[ps.i64], k: int) -> ps.Array[ps.i64]:
    return xs[1::k]


@ps.entry
def range_sum(n: int, k: int) -> int:
    total = 0
    for i in range(0, n, k):
        total = total + i
    return total


@ps.entry
def range_comprehension(n: int, k: int) -> ps.Array[int]:
    return ps.array([i * 10 for i in range(n, 0, k)])


# -- class 2: empty results have the compiled types -------------------------------------

@ps.entry
def total_step(xs: ps.Array[ps.i32]) -> ps.i32:
    steps = ps.map(lambda i: xs[i + 1] - xs[i], ps.iota(len(xs) - 1))
    return ps.sum(steps)


@ps.entry
def step_pairs(xs: ps.Array[ps.i32], ys: ps.Array[ps.f32]) -> tuple[ps.i32, ps.f32]:
    # pairwise: (x0, x1), (x2, x3), ...; with one element no made-up index works
    both = ps.map(lambda i: (xs[2 * i + 1] - xs[2 * i], ys[2 * i + 1] * ys[2 * i]),
                  ps.iota(len(xs) // 2))
    a, b = ps.unzip(both)
    return (ps.sum(a), ps.sum(b))


@ps.entry
def step_records(xs: ps.Array[ps.i32]) -> ps.Array[Pair]:
    return ps.map(lambda i: Pair(xs[2 * i + 1], ps.f32(xs[2 * i])), ps.iota(len(xs) // 2))


@ps.entry
def grid_steps(xs: ps.Array[ps.u8], n: int) -> ps.u8:
    g = ps.tabulate_2d(n, len(xs) // 2, lambda i, j: xs[2 * j + 1] - xs[2 * j])
    return ps.sum(ps.flatten(g))


@ps.entry
def tab_steps(xs: ps.Array[ps.i16]) -> ps.i16:
    return ps.product(ps.tabulate(len(xs) // 2, lambda i: xs[2 * i + 1] // xs[2 * i]))


@ps.entry
def kept_sum(xs: ps.Array[ps.i32]) -> tuple[ps.i32, ps.i32, ps.i32]:
    big = [x for x in xs if x > 100]
    return (ps.sum(big), ps.product([x * 2 for x in xs if x > 100]),
            ps.reduce(lambda a, b: a + b, 0, [x for x in xs if x > 100]))


@ps.entry
def kept_arrays(xs: ps.Array[ps.i16]) -> tuple[ps.i16, ps.i16, ps.i16, ps.i16]:
    big = [x for x in xs if x > 100]
    yes, no = ps.partition(lambda x: x > 200, big)
    return (ps.sum(ps.filter(lambda x: x > 150, big)), ps.sum(ps.concat(yes, no)),
            ps.sum(ps.reverse(big)), ps.sum(ps.scan(lambda a, b: a + b, 0, big)))


@ps.entry
def kept_take(xs: ps.Array[ps.u16]) -> tuple[ps.u16, ps.u16]:
    big = [x for x in xs if x > 100]
    return (ps.sum(ps.take(0, big)), ps.sum(ps.copy(ps.drop(0, big))))


@ps.entry
def kept_array(xs: ps.Array[ps.i8]) -> tuple[ps.i8, ps.i8, ps.i8]:
    a = ps.array([x for x in xs if x > 100])
    b, c = ps.unzip(ps.zip([x for x in xs if x > 100], ps.array([ps.i8(2) * x for x in xs if x > 100])))
    return (ps.sum(a), ps.sum(b), ps.sum(c))


# -- class 3: inputs ----------------------------------------------------------------------

@ps.entry
def first_row_total(xss: ps.Array[ps.Array[ps.f64]]) -> ps.f64:
    return ps.sum(xss[0])


@ps.entry
def masked_total(xs: ps.Array[ps.f64]) -> ps.f64:
    return ps.sum(xs)


@ps.entry
def spreads(ps_: ps.Array[Pair]) -> ps.Array[ps.f32]:
    return ps.map(lambda p: p.hi - ps.f32(p.lo), ps_)


@ps.entry
def scaled(x: ps.f64, y: ps.f32) -> tuple[ps.f64, ps.f32]:
    return (x * 2.0, y * 2.0)


# -- issue 15, item 11: divergences closed ------------------------------------------------

@ps.entry
def builtin_extremes(xs: ps.Array[ps.f32]) -> tuple[ps.f32, ps.f32]:
    return (min(xs), max(xs))


@ps.entry
def to_python_int(x: ps.f64) -> int:
    return int(x)


@ps.entry
def to_python_ints(xs: ps.Array[ps.f32]) -> ps.Array[int]:
    return ps.map(lambda x: int(x) * 2, xs)


# -- issue 15, item 6: ps.unzip of a 2-D array of tuples ----------------------------------

@ps.entry
def pair_rows(xss: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[tuple[ps.f32, ps.f32]]]:
    return ps.map(lambda xs: ps.map(lambda x: (x, x + 1.0), xs), xss)


@ps.entry
def unzip_rows(xss: ps.Array[ps.Array[tuple[ps.f32, ps.f32]]]
               ) -> tuple[ps.Array[ps.Array[ps.f32]], ps.Array[ps.Array[ps.f32]]]:
    return ps.unzip(xss)


@ps.entry
def unzip_then_sum(xss: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.f32]:
    a, b = ps.unzip(ps.map(lambda xs: ps.map(lambda x: (x, x * 2.0), xs), xss))
    return ps.map(lambda r, s: ps.sum(r) + ps.sum(s), a, b)
