"""The golden rule for the classes of issue 5: Python mode follows the contract
(float // and % by zero, numpy.power, ValueError for zero steps and negative
integer powers, typed empty results) and every backend gives the same
value or exception class."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pyshark import ShapeError, Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper import available_backends

KERNELS = Path(__file__).parent / "kernels" / "golden_kernels.py"
BACKENDS = [b for b in available_backends()]
INF, NAN = math.inf, math.nan


@pytest.fixture(scope="module")
def wrappers():
    out = {}
    for b in BACKENDS:
        w = Wrapper(backend=b)
        w.add_source_file(KERNELS)
        out[b] = w.compile_and_load()
    return out


def outcome(w, entry, *args):
    try:
        return w.invoke(entry, *args), None
    except Exception as exc:      # noqa: BLE001 -- the exception is the outcome
        return None, exc


def same_everywhere(wrappers, entry, *args, want=None, raises=None):
    """Every backend gives `want` (compared with assert_close, dtypes included)
    or raises exactly `raises`."""
    for b, w in wrappers.items():
        got, exc = outcome(w, entry, *args)
        if raises is not None:
            assert type(exc) is raises, f"{b}: {entry}{args} gave {got!r} / {exc!r}"
        else:
            assert exc is None, f"{b}: {entry}{args} raised {exc!r}"
            assert_close(got, want)


# -- class 1 -------------------------------------------------------------------------

@pytest.mark.parametrize("a,b,want", [
    (7.0, 2.0, (3.0, 1.0, 2.0)), (1.0, 0.0, (INF, NAN, INF)), (-1.0, 0.0, (-INF, NAN, NAN)), (-3.0, 0.0, (-INF, NAN, -INF)),
    (0.0, 0.0, (NAN, NAN, INF))])
def test_float_floordiv_and_mod_by_zero(wrappers, a, b, want):
    same_everywhere(wrappers, "float_divisions", a, b,
                    want=tuple(np.float64(v) for v in want))


def test_float32_floordiv_by_zero_in_a_map(wrappers):
    same_everywhere(wrappers, "float32_divisions", [1.0, -2.0, 0.0], 0.0,
                    want=np.array([NAN, NAN, NAN], np.float32))
    same_everywhere(wrappers, "float32_divisions", [7.0, -7.0], 2.0,
                    want=np.array([4.0, -3.0], np.float32))


def test_integer_floordiv_by_zero_still_raises(wrappers):
    same_everywhere(wrappers, "int_divisions", 7, 0, raises=ZeroDivisionError)
    same_everywhere(wrappers, "int_divisions", -7, 2, want=(np.int16(-4), np.int16(1)))


@pytest.mark.parametrize("x,y", [(-INF, 0.5), (-0.0, 0.5), (4.0, 0.5), (INF, 0.5), (-4.0, 0.5),
                                 (2.0, 10.0), (-8.0, 1.0 / 3.0), (0.0, -1.0), (NAN, 0.0)])
def test_ps_pow_is_numpy_power_and_star_star_is_scalar_power(wrappers, x, y):
    with np.errstate(all="ignore"):
        want = (np.power(np.float64(x), np.float64(y)), np.float64(x) ** np.float64(y))
    same_everywhere(wrappers, "powers", x, y, want=want)
    for w in wrappers.values():
        p, _ = w.powers(x, y)
        assert math.copysign(1.0, p) == math.copysign(1.0, want[0])


def test_negative_integer_power_is_value_error(wrappers):
    same_everywhere(wrappers, "int_power", 2, -1, raises=ValueError)
    same_everywhere(wrappers, "int_power", 3, 3, want=(np.int64(27), np.int64(27)))


def test_zero_steps_are_value_error_everywhere(wrappers):
    same_everywhere(wrappers, "stepped", [1, 2, 3, 4], 0, raises=ValueError)
    same_everywhere(wrappers, "range_sum", 5, 0, raises=ValueError)
    same_everywhere(wrappers, "range_comprehension", 5, 0, raises=ValueError)
    same_everywhere(wrappers, "stepped", [1, 2, 3, 4], 2, want=np.array([2, 4]))
    same_everywhere(wrappers, "range_sum", 5, 2, want=np.int64(6))
    same_everywhere(wrappers, "range_comprehension", 5, -2, want=np.array([50, 30, 10]))
    assert not issubclass(ValueError, ShapeError)


# -- class 2 -------------------------------------------------------------------------

def test_map_whose_function_cannot_run_on_a_probe_value(wrappers):
    same_everywhere(wrappers, "total_step", [5], want=np.int32(0))
    same_everywhere(wrappers, "total_step", [1, 4, 9, 16], want=np.int32(15))
    same_everywhere(wrappers, "step_pairs", [5], [1.5], want=(np.int32(0), np.float32(0.0)))
    same_everywhere(wrappers, "step_pairs", [1, 3, 5], [2.0, 4.0, 1.0],
                    want=(np.int32(2), np.float32(8.0)))
    for w in wrappers.values():
        out = w.step_records([5])
        assert out.shape == (0,) and out.dtype.names == ("lo", "hi")
        assert (out.dtype["lo"], out.dtype["hi"]) == (np.dtype(np.int32), np.dtype(np.float32))
        out = w.step_records([5, 7])
        assert out["lo"].tolist() == [7] and out["hi"].tolist() == [5.0]


def test_tabulate_results_with_failing_probes(wrappers):
    same_everywhere(wrappers, "grid_steps", [3], 4, want=np.uint8(0))
    same_everywhere(wrappers, "grid_steps", [3, 1, 9], 2, want=np.uint8(252))   # wraps
    same_everywhere(wrappers, "tab_steps", [7], want=np.int16(1))
    same_everywhere(wrappers, "tab_steps", [2, 6, 3, 12], want=np.int16(12))


def test_empty_comprehensions_passed_to_the_prelude(wrappers):
    same_everywhere(wrappers, "kept_sum", [1, 2], want=(np.int32(0), np.int32(1), np.int32(0)))
    same_everywhere(wrappers, "kept_sum", [1, 200], want=(np.int32(200), np.int32(400), np.int32(200)))
    same_everywhere(wrappers, "kept_arrays", [1, 2], want=tuple(np.int16(0) for _ in range(4)))
    same_everywhere(wrappers, "kept_arrays", [160, 300, 1],
                    want=(np.int16(460), np.int16(460), np.int16(460), np.int16(620)))
    same_everywhere(wrappers, "kept_take", [1], want=(np.uint16(0), np.uint16(0)))
    same_everywhere(wrappers, "kept_take", [1, 300, 400], want=(np.uint16(0), np.uint16(700)))
    same_everywhere(wrappers, "kept_array", [1, 2], want=tuple(np.int8(0) for _ in range(3)))
    same_everywhere(wrappers, "kept_array", [1, 120], want=(np.int8(120), np.int8(120), np.int8(-16)))


# -- class 3 -------------------------------------------------------------------------

def test_ndarray_subclasses_are_plain_arrays_on_every_backend(wrappers):
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    same_everywhere(wrappers, "first_row_total", m, want=np.float64(3.0))
    rec = np.rec.array([(1, 4.5), (2, 1.0)], dtype=[("lo", "i4"), ("hi", "f4")])
    same_everywhere(wrappers, "spreads", rec, want=np.array([3.5, -1.0], np.float32))


def test_masked_arrays_are_refused_on_every_backend(wrappers):
    xs = np.ma.array([1.0, 100.0], mask=[False, True])
    for w in wrappers.values():
        with pytest.raises(TypeError, match="'xs'.*masked"):
            w.masked_total(xs)
    same_everywhere(wrappers, "masked_total", xs.filled(0.0), want=np.float64(1.0))


def test_structured_record_arrays_match_by_name_on_every_backend(wrappers):
    swapped = np.array([(4.5, 1), (1.0, 2)], dtype=[("hi", "f4"), ("lo", "i4")])
    same_everywhere(wrappers, "spreads", swapped, want=np.array([3.5, -1.0], np.float32))
    other = np.array([(1, 4.5)], dtype=[("a", "i4"), ("b", "f4")])
    for w in wrappers.values():
        with pytest.raises(TypeError, match="'ps_'.*lo, hi"):
            w.spreads(other)


def test_a_huge_python_int_for_a_float_parameter(wrappers):
    for w in wrappers.values():
        with pytest.raises(OverflowError, match="'x'.*too large"):
            w.scaled(10 ** 400, 1.0)
        with pytest.raises(OverflowError, match="'y'.*too large"):
            w.scaled(1.0, -10 ** 400)
    same_everywhere(wrappers, "scaled", 2 ** 64, 10 ** 39,
                    want=(np.float64(2.0 ** 65), np.float32(np.inf)))


# -- issue 15, item 11: divergences closed ------------------------------------------------

def test_builtin_min_max_of_an_empty_array_is_pythons_value_error(wrappers):
    same_everywhere(wrappers, "builtin_extremes", np.zeros(0, np.float32), raises=ValueError)
    try:
        min([])
    except ValueError as exc:           # the running Python's words (they changed in 3.12)
        words = str(exc)
    for w in wrappers.values():
        with pytest.raises(ValueError) as info:
            w.builtin_extremes([])
        assert str(info.value).startswith(words)
    same_everywhere(wrappers, "builtin_extremes", [3.0, -1.0, 2.0],
                    want=(np.float32(-1.0), np.float32(3.0)))


@pytest.mark.parametrize("x,raises", [(NAN, ValueError), (INF, OverflowError),
                                      (-INF, OverflowError)])
def test_int_of_nan_or_inf_raises_what_python_raises(wrappers, x, raises):
    same_everywhere(wrappers, "to_python_int", x, raises=raises)
    n = 70_001                                           # above the parallel thresholds
    xs = np.linspace(-5.0, 5.0, n).astype(np.float32)
    xs[n - 3] = np.float32(x)
    same_everywhere(wrappers, "to_python_ints", xs, raises=raises)


def test_int_of_finite_floats_truncates(wrappers):
    same_everywhere(wrappers, "to_python_int", -3.7, want=-3)
    same_everywhere(wrappers, "to_python_ints", np.array([1.5, -2.5, 0.0], np.float32),
                    want=np.array([2, -4, 0], np.int64))


@pytest.mark.parametrize("shape", [(5, 7), (1, 1), (0, 3), (3, 0)])
def test_unzip_of_a_2d_array_of_tuples(wrappers, shape):
    xss = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    pairs = np.zeros(shape, dtype=[("f0", np.float32), ("f1", np.float32)])
    pairs["f0"], pairs["f1"] = xss, xss + 1
    want = (xss, xss + 1) if 0 not in shape else None
    for w in wrappers.values():
        a, b = w.unzip_rows(pairs)
        assert a.shape == b.shape and a.ndim == 2
        if want is not None:
            assert_close((a, b), want)
    same_everywhere(wrappers, "unzip_then_sum", xss, want=(xss.sum(axis=1) * 3).astype(np.float32))
    if 0 not in shape:
        same_everywhere(wrappers, "unzip_rows", wrappers["python"].pair_rows(xss), want=want)
