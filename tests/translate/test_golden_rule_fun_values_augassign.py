"""Builtins, prelude scalar functions and scalar types passed where a function
is expected, augmented assignment (`x op= e`, `xs[i] op= e`) and f-string
assert messages (LANGUAGE.md, 2026-11-25): Python mode and every compiled
backend agree (value and dtype, or exception class)."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from pyshark import CompileError
from pyshark.testing import assert_close
from pyshark.translate import translate_source
from pyshark.wrapper import available_backends
from translate_helpers import agrees_with_python, backend_wrappers, outcome

KERNELS = '''
import pyshark.prelude as ps


@ps.entry
def scan_max(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.scan(max, ps.lowest(ps.f32), xs)


@ps.entry
def reduce_min(xs: ps.Array[ps.i32]) -> ps.i32:
    return ps.reduce(min, ps.highest(ps.i32), xs)


@ps.entry
def map_abs(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.map(abs, xs)


@ps.entry
def map_math(xs: ps.Array[ps.f64]) -> tuple[ps.Array[ps.f64], ps.Array[ps.f64], ps.Array[ps.f64]]:
    return ps.map(ps.sqrt, xs), ps.map(ps.exp, xs), ps.map(ps.abs, xs)


@ps.entry
def map_ps_max(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(ps.max, xs, ys)


@ps.entry
def conversions(xs: ps.Array[ps.i32]) -> tuple[ps.Array[ps.f32], ps.Array[ps.i64], ps.Array[ps.f64]]:
    return ps.map(ps.f32, xs), ps.map(ps.i64, xs), ps.tabulate(len(xs), ps.f64)


@ps.entry
def nan_filter(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.filter(ps.isnan, xs)


@ps.entry
def fold_max(xs: ps.Array[ps.i64]) -> ps.i64:
    return ps.foldl(max, ps.i64(-7), xs)


@ps.entry
def reduce_ps_max(xs: ps.Array[ps.f64]) -> ps.f64:
    return ps.reduce(ps.max, -ps.inf, xs)


@ps.entry
def hist_min(n: int, idxs: ps.Array[ps.i64], vals: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    return ps.reduce_by_index(ps.replicate(n, ps.highest(ps.i32)), min, ps.highest(ps.i32), idxs, vals)


@ps.entry
def aug_floats(a: ps.f64, b: ps.f64) -> tuple[ps.f64, ps.f64, ps.f64, ps.f64, ps.f64, ps.f64]:
    x = a
    x += b
    y = a
    y -= b
    z = a
    z *= b
    w = a
    w /= b
    v = a
    v //= b
    u = a
    u %= b
    return x, y, z, w, v, u


@ps.entry
def aug_ints(a: ps.i32, b: ps.i32) -> tuple[ps.i32, ps.i32, ps.i32, ps.i32, ps.i32, ps.i32, ps.i32]:
    x = a
    x **= ps.i32(2)
    y = a
    y &= b
    z = a
    z |= b
    w = a
    w ^= b
    v = a
    v >>= ps.i32(1)
    u = a
    u <<= ps.i32(3)
    t = a
    t //= b
    return x, y, z, w, v, u, t


@ps.entry
def aug_loop(xs: ps.Array[ps.f32]) -> tuple[ps.f32, ps.f32]:
    s = ps.f32(0)
    p = ps.f32(1)
    for x in xs:
        s += x
        p *= ps.f32(0.5) + x
    return s, p


@ps.entry
def aug_counts(n: int, idxs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    out = ps.replicate(n, 0)
    for i in idxs:
        out[i] += 1
    return out


@ps.entry
def aug_grid(g: ps.Array[ps.Array[ps.f64]], r: int, c: int, k: ps.f64) -> ps.Array[ps.Array[ps.f64]]:
    out = ps.copy(g)
    out[r, c] -= k
    out[-1, -1] **= 2.0
    return out


@ps.entry
def checked(xs: ps.Array[ps.f32], i: int) -> ps.f32:
    assert len(xs) > 0, f"need at least one value, got {len(xs)}"
    assert i < len(xs), f"index {i} out of range for {len(xs)} values (first {xs[0]:.3f})"
    return xs[i]
'''

BACKENDS = available_backends()


@pytest.fixture(scope="module")
def wrappers(tmp_path_factory):
    return backend_wrappers(KERNELS, tmp_path_factory.mktemp("funv") / "fun_values_kernels.py",
                            BACKENDS)


SIZES = [0, 1, 7, 4099]


@pytest.mark.parametrize("n", SIZES)
def test_builtin_max_and_min_as_operators(wrappers, n):
    xs = np.sin(np.arange(n, dtype=np.float32))
    got, _ = agrees_with_python(wrappers, "scan_max", xs)
    assert_close(got, np.maximum.accumulate(xs) if n else xs)
    ys = (np.arange(n, dtype=np.int32) * 7919) % 1013 - 500
    got, _ = agrees_with_python(wrappers, "reduce_min", ys)
    assert got == (ys.min() if n else np.iinfo(np.int32).max)
    got, _ = agrees_with_python(wrappers, "fold_max", ys.astype(np.int64))
    assert got == max([-7] + list(ys))


@pytest.mark.parametrize("n", SIZES)
def test_abs_math_and_conversions_as_map_functions(wrappers, n):
    agrees_with_python(wrappers, "map_abs", np.arange(n, dtype=np.int64) - n // 2)
    xs = np.linspace(-1.0, 4.0, n)
    if n > 2:
        xs[2] = np.nan
    sq, ex, ab = agrees_with_python(wrappers, "map_math", xs)[0]
    assert sq.dtype == np.float64 and np.isnan(sq[xs < 0]).all()
    a = np.linspace(-2, 2, n, dtype=np.float32)
    agrees_with_python(wrappers, "map_ps_max", a, a[::-1].copy())
    f, i, t = agrees_with_python(wrappers, "conversions", np.arange(n, dtype=np.int32) - 3)[0]
    assert f.dtype == np.float32 and i.dtype == np.int64 and t.dtype == np.float64


def test_predicate_and_nan(wrappers):
    got, _ = agrees_with_python(wrappers, "nan_filter", np.array([1.0, np.nan, 2.0, np.nan]))
    assert len(got) == 2
    agrees_with_python(wrappers, "nan_filter", np.array([], dtype=np.float64))
    got, _ = agrees_with_python(wrappers, "reduce_ps_max", np.array([1.0, np.nan, 2.0]))
    assert np.isnan(got)


def test_reduce_by_index_with_builtin_min(wrappers):
    idxs = np.array([0, 3, 3, -1, 9, 1, 0], dtype=np.int64)
    vals = np.array([5, 2, -4, 8, 1, 7, 6], dtype=np.int32)
    got, _ = agrees_with_python(wrappers, "hist_min", 4, idxs, vals)
    big = np.iinfo(np.int32).max
    assert list(got) == [5, 7, big, -4]


@pytest.mark.parametrize("a,b", [(7.5, 2.0), (-7.5, 2.0), (1.0, 0.0), (0.0, 0.0), (np.nan, 1.0)])
def test_augmented_assignment_on_floats(wrappers, a, b):
    agrees_with_python(wrappers, "aug_floats", a, b)


@pytest.mark.parametrize("a,b", [(13, 5), (-13, 5), (13, -5), (7, 0)])
def test_augmented_assignment_on_ints(wrappers, a, b):
    _, exc = agrees_with_python(wrappers, "aug_ints", a, b)
    assert (exc is not None) == (b == 0)


@pytest.mark.parametrize("n", SIZES)
def test_augmented_assignment_in_loops(wrappers, n):
    agrees_with_python(wrappers, "aug_loop", np.linspace(0, 1, n, dtype=np.float32))


def test_augmented_update_of_array_elements(wrappers):
    idxs = np.array([0, 2, 2, -1, 2, 1], dtype=np.int64)
    got, _ = agrees_with_python(wrappers, "aug_counts", 3, idxs)
    assert list(got) == [1, 1, 4]                # -1 is the last element, as in Python
    agrees_with_python(wrappers, "aug_counts", 3, np.array([3], dtype=np.int64))   # IndexError
    agrees_with_python(wrappers, "aug_counts", 0, np.array([], dtype=np.int64))
    g = np.arange(12, dtype=np.float64).reshape(3, 4)
    got, _ = agrees_with_python(wrappers, "aug_grid", g, 1, 2, 0.5)
    assert got[1, 2] == 5.5 and got[2, 3] == 121.0
    agrees_with_python(wrappers, "aug_grid", g, 3, 0, 0.5)                         # IndexError


def test_fstring_assert_messages(wrappers):
    xs = np.array([1.5, 2.5], dtype=np.float32)
    got, _ = agrees_with_python(wrappers, "checked", xs, 1)
    assert got == np.float32(2.5)
    _, exc = agrees_with_python(wrappers, "checked", np.array([], dtype=np.float32), 0)
    assert isinstance(exc, AssertionError)
    _, exc = agrees_with_python(wrappers, "checked", xs, 5)
    assert isinstance(exc, AssertionError)
    # Python mode interpolates; compiled backends carry the f-string's text
    _, py_exc = outcome(wrappers["python"], "checked", (xs, 5))
    assert str(py_exc) == "index 5 out of range for 2 values (first 1.500)"
    for b in BACKENDS:
        if b != "python":
            _, exc = outcome(wrappers[b], "checked", (xs, 5))
            assert "out of range for" in str(exc), (b, str(exc))


HEADER = "import pyshark.prelude as ps\n"


def rejected(body: str, contains: str):
    with pytest.raises(CompileError) as info:
        translate_source(HEADER + textwrap.dedent(body), "snippet.py")
    assert contains in str(info.value), str(info.value)


def test_rejections_that_stay():
    rejected("""
        @ps.entry
        def f(x: ps.i32) -> ps.i32:
            double = lambda v: v * 2
            return double(x)
        """, "functions are not values")
    rejected("""
        @ps.entry
        def f(x: ps.f64) -> ps.f64:
            g = ps.sqrt
            return g(x)
        """, "ps.sqrt is not a value here")
    rejected("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            return ps.map(max, xs)
        """, "max of a single ps.f32")
    rejected("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.f32:
            assert len(xs) > 0, f"bad {xs}"
            return xs[0]
        """, "an assert message may interpolate scalars only")
    rejected("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            xs[0] += 1.0
            return xs
        """, "in-place update of parameter 'xs'")
