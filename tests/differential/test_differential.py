"""The golden rule on generated inputs: every backend agrees with Python mode.

Each hypothesis example runs one entry in Python mode and on every other
available backend; results must match under `assert_close` (ints and bools
exactly), or all must raise the same exception class. The kernels cover the
scalar operators per type (scalar_kernels.py) and the prelude's array
functions and SOACs (kernels_arrays.py), with empty arrays, one element,
odd sizes, extreme values and NaN in the inputs.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from pyshark import ShapeError, Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

from scalar_kernels import FLOAT_TYPES, INT_TYPES, kernel_source

HERE = Path(__file__).resolve().parent
COMPILED = [b for b in available_backends() if b != "python"]
# PYSHARK_DIFF_EXAMPLES=1000 (and PYSHARK_DIFF_RANDOM=1 for fresh seeds) for a deeper run
SETTINGS = settings(max_examples=int(os.environ.get("PYSHARK_DIFF_EXAMPLES", "40")), deadline=None,
                    derandomize=not os.environ.get("PYSHARK_DIFF_RANDOM"),
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _wrappers(path: Path) -> dict[str, Wrapper]:
    out = {}
    for backend in ["python", *COMPILED]:
        w = Wrapper(backend=backend)
        w.add_source_file(path)
        w.compile_and_load()
        out[backend] = w
    return out


@pytest.fixture(scope="module")
def scalar_modules(tmp_path_factory) -> dict[str, dict[str, Wrapper]]:
    folder = tmp_path_factory.mktemp("scalar_kernels")
    mods = {}
    for t in INT_TYPES + FLOAT_TYPES:
        path = folder / f"ops_{t}.py"
        path.write_text(kernel_source(t))
        mods[t] = _wrappers(path)
    return mods


@pytest.fixture(scope="module")
def arrays() -> dict[str, Wrapper]:
    return _wrappers(HERE / "kernels_arrays.py")


def _outcome(w: Wrapper, entry: str, args):
    try:
        return w.invoke(entry, *args), None
    except Exception as exc:  # every exception is an outcome to compare
        return None, exc


GOLDEN_ERRORS = (IndexError, ZeroDivisionError, AssertionError, ShapeError)


def agree(wrappers: dict[str, Wrapper], entry: str, *args) -> None:
    """All backends give Python mode's value, or raise its exception class."""
    want, want_exc = _outcome(wrappers["python"], entry, args)
    if want_exc is not None and not isinstance(want_exc, GOLDEN_ERRORS):
        raise want_exc                       # a bug in the test or in Python mode
    for backend in COMPILED:
        got, got_exc = _outcome(wrappers[backend], entry, args)
        if want_exc is not None or got_exc is not None:
            assert type(got_exc) is type(want_exc), (
                f"{entry}{args!r} on {backend}: raised {got_exc!r}, Python mode {want_exc!r}")
            continue
        assert_close(got, want)


def ints_of(t: str):
    info = np.iinfo(np.dtype(_DT[t]))
    return st.integers(int(info.min), int(info.max)).map(getattr(np, _DT[t]))


_DT = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
       "u16": "uint16", "u32": "uint32", "u64": "uint64", "f32": "float32", "f64": "float64"}


def interesting_ints(t: str):
    info = np.iinfo(np.dtype(_DT[t]))
    edges = [int(info.min), int(info.max), 0, 1, -1 if t[0] == "i" else 2, int(info.min) + 1]
    return st.one_of(st.sampled_from(edges), st.integers(int(info.min), int(info.max))).map(
        getattr(np, _DT[t]))


def floats_of(t: str, **kw):
    width = 32 if t == "f32" else 64
    return st.floats(width=width, **kw).map(getattr(np, _DT[t]))


# ---------------------------------------------------------------------------
# Scalar operators, per type


@pytest.mark.parametrize("t", INT_TYPES)
@SETTINGS
@given(data=st.data())
def test_int_operators(scalar_modules, t, data):
    w = scalar_modules[t]
    a, b = data.draw(interesting_ints(t)), data.draw(interesting_ints(t))
    bits = np.dtype(_DT[t]).itemsize * 8
    s = getattr(np, _DT[t])(data.draw(st.integers(0, bits - 1)))
    e = getattr(np, _DT[t])(data.draw(st.integers(0, 9)))
    agree(w, "arith", a, b)
    agree(w, "divmod_floor", a, b)          # b == 0 must raise ZeroDivisionError everywhere
    agree(w, "bits", a, b, s)
    agree(w, "power", a, e)
    agree(w, "compare", a, b)
    agree(w, "convert", a)
    agree(w, "extremes", a, b)
    if int(a) <= int(np.iinfo(np.dtype(_DT[t])).max) - 5:
        agree(w, "literal_mix", a)


@pytest.mark.parametrize("t", INT_TYPES)
def test_int_division_by_zero_raises(scalar_modules, t):
    w = scalar_modules[t]
    for backend, wr in w.items():
        with pytest.raises(ZeroDivisionError):
            wr.invoke("divmod_floor", getattr(np, _DT[t])(7), getattr(np, _DT[t])(0))


@pytest.mark.parametrize("t", FLOAT_TYPES)
@SETTINGS
@given(data=st.data())
def test_float_operators(scalar_modules, t, data):
    w = scalar_modules[t]
    x = data.draw(floats_of(t))
    y = data.draw(floats_of(t))
    agree(w, "arith", x, y)
    if y != 0:                               # float // and % by zero is left open
        agree(w, "divmod_floor", x, y)
    agree(w, "compare", x, y)
    agree(w, "math1", x)
    agree(w, "rounding", x)
    agree(w, "math2", x, y)
    agree(w, "classify", x)
    agree(w, "literal_mix", x)
    agree(w, "to_floats", x)
    z = data.draw(floats_of(t, min_value=0.0, max_value=100.0))
    agree(w, "to_ints", z)                   # NaN / out-of-range float-to-int is left open


# ---------------------------------------------------------------------------
# Arrays and SOACs

small = st.integers(-50, 50)


def arrays_of(t: str, elements=None, max_size=33):
    elements = elements if elements is not None else interesting_ints(t)
    return st.lists(elements, max_size=max_size).map(lambda xs: np.array(xs, dtype=_DT[t]))


@SETTINGS
@given(xs=arrays_of("i32"), a=interesting_ints("i32"), b=interesting_ints("i32"))
def test_map_reduce_scan(arrays, xs, a, b):
    agree(arrays, "map_affine", xs, a, b)
    agree(arrays, "sum_i32", xs)
    agree(arrays, "prefix_i64", xs.astype(np.int64))
    agree(arrays, "insertion_sort", xs)


@SETTINGS
@given(xs=arrays_of("f64", floats_of("f64", allow_nan=False, allow_infinity=False,
                                      min_value=-1e6, max_value=1e6)),
       t=floats_of("f64", allow_nan=False))
def test_float_reductions_and_partition(arrays, xs, t):
    agree(arrays, "sum_f64", xs)
    agree(arrays, "keep_above", xs, t)
    agree(arrays, "any_all", xs)


@SETTINGS
@given(xs=arrays_of("f32", floats_of("f32")), ys=arrays_of("i16"))
def test_extremes_with_nan_and_empty(arrays, xs, ys):
    agree(arrays, "extremes_f32", xs)        # NaN propagates; empty input raises
    agree(arrays, "extremes_i16", ys)
    if len(xs):                                 # (empty: Python's ValueError, tested apart)
        agree(arrays, "builtin_extremes_f32", xs)   # Python's rule for NaN


@pytest.mark.parametrize("xs", [[1.0, np.nan, -2.0], [np.nan, 1.0], [np.inf, np.nan, -np.inf],
                                [0.0, -0.0], [-0.0, 0.0], [np.nan], [3.0, np.nan, np.nan]])
def test_builtin_min_and_max_follow_python_for_nan(arrays, xs):
    # ps.minimum propagates NaN as numpy does; builtin min keeps the first
    # element while no later one is strictly smaller (a NaN never is)
    agree(arrays, "builtin_extremes_f32", np.array(xs, np.float32))


def test_extremes_with_nan_past_par_min(arrays):
    big = np.arange(33_000, dtype=np.float32) - 1.5e4   # past par_min (32768): chunks
    for at in (0, 1, 20_000):
        b = big.copy()
        b[at] = np.nan
        agree(arrays, "builtin_extremes_f32", b)
        agree(arrays, "extremes_f32", b)        # numpy's rule: NaN anywhere gives NaN


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (600, 70)])
def test_builtin_extremes_of_row_extremes(arrays, shape):
    g = np.random.default_rng(shape[0]).standard_normal(shape)
    agree(arrays, "builtin_extremes_of_rows", g)
    for r in (0, shape[0] - 1):
        h = g.copy()
        h[r, -1] = np.nan
        agree(arrays, "builtin_extremes_of_rows", h)


@SETTINGS
@given(xs=arrays_of("u8"))
def test_filter_count(arrays, xs):
    agree(arrays, "count_odd", xs)


@SETTINGS
@given(n=st.integers(0, 12), data=st.data())
def test_histogram_and_scatter(arrays, n, data):
    k = data.draw(st.integers(0, 20))
    idxs = np.array(data.draw(st.lists(st.integers(-3, n + 3), min_size=k, max_size=k)), dtype=np.int64)
    ws = np.array(data.draw(st.lists(st.integers(-100, 100), min_size=k, max_size=k)), dtype=np.int32)
    agree(arrays, "histogram", n, idxs, ws)
    dest = np.arange(n, dtype=np.float32)
    unique = np.array(data.draw(st.lists(st.integers(-3, n + 3), unique=True, max_size=k)), dtype=np.int64)
    vals = np.full(len(unique), -1.5, dtype=np.float32)
    agree(arrays, "scatter_into", dest, unique, vals)
    # duplicates: the last one wins on every backend (LANGUAGE.md)
    ws32 = ws.astype(np.float32)
    agree(arrays, "scatter_into", dest, idxs, ws32)


@SETTINGS
@given(xs=arrays_of("i32"), ys=arrays_of("i32"), n=small, a=small, b=small,
       s=small.filter(lambda s: s != 0), i=small, r=st.integers(-100, 100))
def test_array_functions(arrays, xs, ys, n, a, b, s, i, r):
    agree(arrays, "take_drop", n, xs)        # counts outside 0..len raise IndexError
    agree(arrays, "sliced", xs, a, b, s)
    agree(arrays, "element", xs, i)          # out of range raises IndexError
    agree(arrays, "ends", xs)                # empty raises IndexError
    agree(arrays, "updated", xs, i, np.int32(7))
    agree(arrays, "rotated", r, xs.astype(np.int8))
    agree(arrays, "joined", xs, ys)
    agree(arrays, "counted", n)              # negative sizes raise ShapeError


@SETTINGS
@given(n=st.integers(-2, 5), m=st.integers(-2, 5), data=st.data())
def test_reshape_and_nested(arrays, n, m, data):
    k = data.draw(st.integers(0, 30))
    xs = np.arange(k, dtype=np.int32)
    agree(arrays, "reshaped", n, m, xs)      # n * m != len raises ShapeError
    rows, cols = data.draw(st.integers(0, 6)), data.draw(st.integers(0, 6))
    xss = np.array(data.draw(st.lists(st.integers(-2**40, 2**40), min_size=rows * cols,
                                      max_size=rows * cols)), dtype=np.int64).reshape(rows, cols)
    agree(arrays, "row_sums", xss)
    agree(arrays, "column_max", xss.astype(np.float64))


@SETTINGS
@given(xs=arrays_of("i32"), data=st.data())
def test_tuples_folds_gather(arrays, xs, data):
    ys = np.array(data.draw(st.lists(floats_of("f32"), min_size=len(xs), max_size=len(xs))),
                  dtype=np.float32)
    agree(arrays, "pairs_sorted", xs, ys)
    agree(arrays, "folds", xs.astype(np.int64))
    idxs = np.array(data.draw(st.lists(st.integers(-len(ys) - 2, len(ys) + 2), max_size=8)), dtype=np.int64)
    agree(arrays, "gather", ys, idxs)


@SETTINGS
@given(n=st.integers(-1, 5), m=st.integers(-1, 5))
def test_tabulate_2d_shapes(arrays, n, m):
    """Empty grids keep their other dimension ((0, m), not (0, 0)) everywhere."""
    agree(arrays, "grid", n, m)
    agree(arrays, "grid_pairs", n, m)
    if n >= 0 and m >= 0:
        for w in arrays.values():
            assert w.grid(n, m).shape == (n, m)
            assert w.grid_pairs(n, m).shape == (n, m)
