"""Late binding (LANGUAGE.md, "Statements in a function body"): a name that a
local def or lambda captures has the value it holds where the function is
used, as in Python. Each loop-carried form runs in Python mode and on every
compiled backend, and all of them must agree (the golden rule)."""
from __future__ import annotations

import numpy as np
import pytest

from pyshark.testing import assert_close
from pyshark.wrapper import available_backends
from translate_helpers import agrees_with_python as agrees, backend_wrappers

KERNELS = '''
import pyshark.prelude as ps


@ps.entry
def stencil_for(grid: ps.Array[ps.f64], steps: int) -> ps.Array[ps.f64]:
    m = len(grid)
    for t in range(steps):
        grid = ps.tabulate(m, lambda i: grid[i - 1] + grid[i])
    return grid


@ps.entry
def doubling_while(xs: ps.Array[ps.i64], limit: ps.i64) -> tuple[ps.Array[ps.i64], ps.i64]:
    k = ps.i64(1)
    while k < limit:
        xs = ps.map(lambda x: x + k * ps.length(xs), xs)
        k = k * 2
    return xs, k


@ps.entry
def nested_loops(xs: ps.Array[ps.f32], outer: int, inner: int) -> ps.Array[ps.f32]:
    c = ps.f32(0.5)
    for i in range(outer):
        for j in range(inner):
            xs = ps.map(lambda x: x * c + ps.f32(j), xs)
            c = c + ps.f32(0.25)
        xs = ps.scan(lambda a, b: ps.max(a, b), ps.f32(0), ps.map(lambda x: x - c, xs))
    return xs


@ps.entry
def def_before_loop(xs: ps.Array[ps.i32], steps: int) -> ps.Array[ps.i32]:
    k = ps.i32(1)

    def bump(x: ps.i32) -> ps.i32:
        return x * k + ps.i32(ps.length(xs))

    for _ in range(steps):
        xs = ps.map(bump, ps.filter(lambda x: x % k == 0, xs))
        k = k + 1
    return xs


@ps.entry
def def_used_before_and_after(xs: ps.Array[ps.f64], k: ps.f64) -> tuple[ps.Array[ps.f64], ps.Array[ps.f64]]:
    def scale(x: ps.f64) -> ps.f64:
        return x * k
    a = ps.map(scale, xs)
    k = k - 1.0
    return a, ps.map(scale, xs)


@ps.entry
def tuple_rebinding(a: ps.Array[ps.i64], b: ps.Array[ps.i64], steps: int) -> tuple[ps.Array[ps.i64], ps.Array[ps.i64]]:
    for _ in range(steps):
        a, b = ps.unzip(ps.map(lambda x, y: (x + y * ps.length(b), y - a[0]), a, b))
    return a, b


@ps.entry
def both_branches(xs: ps.Array[ps.f64], c: bool) -> ps.Array[ps.f64]:
    k = 0.0

    def shift(x: ps.f64) -> ps.f64:
        return x + k

    if c:
        k = 1.5
    else:
        k = -2.0
    return ps.map(shift, xs)


@ps.entry
def both_branches_in_loop(xs: ps.Array[ps.i64], steps: int) -> ps.Array[ps.i64]:
    k = ps.i64(0)

    def shift(x: ps.i64) -> ps.i64:
        return x + k

    for t in range(steps):
        if t % 2 == 0:
            k = k + 3
        else:
            k = k * 2
        xs = ps.map(shift, xs)
    return xs


@ps.entry
def reduce_with_late_neutral(xs: ps.Array[ps.f64], steps: int) -> ps.f64:
    s = 0.0
    for _ in range(steps):
        s = ps.reduce(lambda a, b: a + b, 0.0, ps.map(lambda x: x + s, xs))
    return s

@ps.entry
def shadow(xs: ps.Array[ps.i64], k: ps.i64) -> ps.Array[ps.i64]:
    def g(v: ps.i64) -> ps.i64:
        return v * 10 + k
    return ps.map(lambda k: g(k), xs)


@ps.entry
def nested_defs(xs: ps.Array[ps.i64], k: ps.i64) -> ps.Array[ps.i64]:
    def h(v: ps.i64) -> ps.i64:
        m = v * 2
        def g(w: ps.i64) -> ps.i64:
            return w + m + k
        m = m + 1
        return g(v)
    a = ps.map(h, xs)
    k = k + 100
    return ps.concat(a, ps.map(h, xs))


@ps.entry
def def_in_loop(xs: ps.Array[ps.i64], n: int) -> ps.Array[ps.i64]:
    for t in range(n):
        def step(v: ps.i64) -> ps.i64:
            return v + t + ps.length(xs)
        xs = ps.map(step, xs)
        t = t * 3
        xs = ps.map(step, xs)
    return xs


@ps.entry
def lambda_in_def_sees_use(xs: ps.Array[ps.i64]) -> ps.i64:
    def total() -> ps.i64:
        return ps.sum(ps.map(lambda x: x * s, xs))
    s = ps.i64(2)
    a = total()
    s = s + 1
    xs = ps.map(lambda x: x + 1, xs)
    return a * 1000 + total()
'''

BACKENDS = available_backends()
# 20011: above the compiled backends' parallel thresholds; the interpreters
# (core, kir: references, slow per element) sit out the largest size
BIG = 20011
SIZES = [0, 1, 7, 4099, BIG]


@pytest.fixture(scope="module")
def wrappers(tmp_path_factory):
    return backend_wrappers(KERNELS, tmp_path_factory.mktemp("late") / "late_binding_kernels.py",
                            BACKENDS)


def agrees_with_python(wrappers, entry, *args):
    """translate_helpers.agrees_with_python, the interpreters (core, kir)
    sitting out the largest size; returns Python mode's result."""
    big = any(isinstance(a, np.ndarray) and a.size >= BIG for a in args)
    return agrees(wrappers, entry, *args, skip=("core", "kir") if big else ())[0]


def test_the_python_backend_is_there():
    assert "python" in BACKENDS and len(BACKENDS) > 1, BACKENDS


@pytest.mark.parametrize("n", SIZES)
def test_for_loop_stencil_reads_the_previous_grid(wrappers, n):
    g = np.linspace(-1.0, 1.0, n)
    got = agrees_with_python(wrappers, "stencil_for", g, 3)
    want = g.copy()
    for _ in range(3):
        want = np.roll(want, 1) + want
    assert_close(got, want)


def test_for_loop_stencil_with_nan(wrappers):
    g = np.array([1.0, np.nan, 2.0, 3.0, 4.0])
    got = agrees_with_python(wrappers, "stencil_for", g, 2)
    assert np.isnan(got).sum() == 3


@pytest.mark.parametrize("n", SIZES)
def test_while_loop(wrappers, n):
    xs = np.arange(n, dtype=np.int64) % 5
    got, k = agrees_with_python(wrappers, "doubling_while", xs, 40)
    assert k == 64
    assert_close(got, xs + n * (1 + 2 + 4 + 8 + 16 + 32))


@pytest.mark.parametrize("n", [0, 1, 7, 4099])
def test_nested_loops(wrappers, n):
    xs = (np.arange(n, dtype=np.float32) % 3) / np.float32(4)
    agrees_with_python(wrappers, "nested_loops", xs, 2, 3)


@pytest.mark.parametrize("n", SIZES)
def test_local_def_defined_before_the_loop(wrappers, n):
    xs = np.arange(n, dtype=np.int32) % 11
    agrees_with_python(wrappers, "def_before_loop", xs, 3)


@pytest.mark.parametrize("n", [0, 1, 7, BIG])
def test_local_def_used_before_and_after_a_rebinding(wrappers, n):
    xs = np.linspace(0.0, 5.0, n)
    a, b = agrees_with_python(wrappers, "def_used_before_and_after", xs, 3.0)
    assert_close(a, xs * 3.0)
    assert_close(b, xs * 2.0)


@pytest.mark.parametrize("n", [0, 1, 7, 4099])
def test_tuple_rebinding(wrappers, n):
    a = np.arange(n, dtype=np.int64)
    b = np.arange(n, dtype=np.int64)[::-1].copy() * 2
    agrees_with_python(wrappers, "tuple_rebinding", a, b, 3)


@pytest.mark.parametrize("c", [True, False])
@pytest.mark.parametrize("n", [0, 1, 7, 4099])
def test_def_capturing_a_name_rebound_in_both_branches(wrappers, c, n):
    xs = np.linspace(-1.0, 1.0, n)
    got = agrees_with_python(wrappers, "both_branches", xs, c)
    assert_close(got, xs + (1.5 if c else -2.0))


@pytest.mark.parametrize("n", [0, 1, 7, 4099])
def test_def_capturing_a_name_rebound_in_both_branches_of_a_loop(wrappers, n):
    xs = np.arange(n, dtype=np.int64)
    got = agrees_with_python(wrappers, "both_branches_in_loop", xs, 4)
    assert_close(got, xs + 3 + 6 + 9 + 18)


@pytest.mark.parametrize("n", [0, 1, 7, 4099])
def test_reduce_reading_the_previous_result(wrappers, n):
    xs = np.linspace(0.0, 1.0, n)
    agrees_with_python(wrappers, "reduce_with_late_neutral", xs, 3)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_lambda_parameter_does_not_shadow_a_defs_capture(wrappers, n):
    xs = np.arange(n, dtype=np.int64)
    got = agrees_with_python(wrappers, "shadow", xs, 5)
    assert_close(got, xs * 10 + 5)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_def_inside_a_def_and_defs_in_a_loop_body(wrappers, n):
    xs = np.arange(n, dtype=np.int64)
    agrees_with_python(wrappers, "nested_defs", xs, 5)
    agrees_with_python(wrappers, "def_in_loop", xs, 3)
    agrees_with_python(wrappers, "lambda_in_def_sees_use", xs)
