"""Plain Python numbers in Python mode (pyshark/translate/pynum.py): a value
the translator types but that stays a Python int/float when the module runs
as Python -- a constant, and what is computed only from constants (branches,
list elements, loop-carried values, arguments and results of functions) --
follows Python's arithmetic there, not numpy's. Where the two differ for two
such operands (a zero divisor, a negative int exponent, a float power that
overflows, a negative shift, an int-float comparison beyond 2**53, a numpy
conversion that does not fit), the program is a located compile error whose
hint makes an operand a numpy value; everything else compiles and runs the
same in Python mode and on the core and cpu backends.

Each rejected program is also shown to diverge: translated with the checks
switched off, Python mode and the core backend disagree on a witness input.
"""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper import available_backends
from translate_helpers import HEADER, compile_src, reject

BACKENDS = [b for b in ("python", "core", "cpu") if b in available_backends()]
INF = math.inf


def load(tmp_path, body: str, backends=BACKENDS) -> dict:
    path = tmp_path / "mod.py"
    path.write_text(HEADER + textwrap.dedent(body))
    out = {}
    for b in backends:
        w = Wrapper(backend=b, cache_dir=str(tmp_path / f"cache-{b}"))
        w.add_source_file(path)
        out[b] = w.compile_and_load()
    return out


def outcome(w, entry, *args):
    try:
        return w.invoke(entry, *args), None
    except Exception as exc:      # noqa: BLE001 -- the exception is the outcome
        return None, exc


def same_everywhere(loaded: dict, entry: str, *args, want=None, raises=None):
    """Every backend gives what Python mode gives (and `want` / `raises`)."""
    ref, ref_exc = outcome(loaded["python"], entry, *args)
    if raises is not None:
        assert type(ref_exc) is raises, f"python: {entry}{args} gave {ref!r} / {ref_exc!r}"
    else:
        assert ref_exc is None, f"python: {entry}{args} raised {ref_exc!r}"
        if want is not None:
            assert_close(ref, want)
    for b, w in loaded.items():
        got, exc = outcome(w, entry, *args)
        if ref_exc is not None:
            assert type(exc) is type(ref_exc), f"{b}: {entry}{args} gave {got!r} / {exc!r}"
        else:
            assert exc is None, f"{b}: {entry}{args} raised {exc!r}"
            assert_close(got, ref)


def unchecked(monkeypatch):
    """Switch the Python-number checks off (to show what they prevent)."""
    from pyshark.translate import ops, prelude_scalars
    monkeypatch.setattr(ops, "check_binop", lambda *a, **k: None)
    monkeypatch.setattr(prelude_scalars, "check_conversion", lambda *a, **k: None)


def diverges(tmp_path, monkeypatch, body: str, entry: str, *args):
    """Python mode and the core backend disagree on args when the program is
    translated without the checks."""
    unchecked(monkeypatch)
    loaded = load(tmp_path, body.replace("# <-", ""), ["python", "core"])
    (py, py_exc), (core, core_exc) = (outcome(loaded[b], entry, *args) for b in ("python", "core"))
    if py_exc is not None or core_exc is not None:
        assert type(py_exc) is not type(core_exc), (py, py_exc, core, core_exc)
        return py_exc, core if core_exc is None else core_exc
    with pytest.raises(AssertionError):
        assert_close(core, py)
    return py, core


def at(err, locator: str) -> bool:
    """The error's column is where `locator` (unique on its line) starts."""
    line = err.source_line
    assert line.count(locator) == 1, (locator, line)
    return err.col == line.index(locator)


# ---------------------------------------------------------------------------
# Rejected: the programs whose Python-mode result can differ


REJECTED = {
    "branch_zero_divisor": ("""
        @ps.entry
        def f(c: bool) -> float:
            y = 1.5 if c else 0.0
            return 3.0 / y  # <-
        """, "y  #", "ps.f64(y)", (False,)),
    "branch_mod_by_constant_zero": ("""
        @ps.entry
        def f(c: bool) -> float:
            y = 1.5 if c else 2.5
            return y % 0.0  # <-
        """, "y % 0.0", "ps.f64(y)", (True,)),
    "loop_carried_accumulator": ("""
        @ps.entry
        def f(xs: ps.Array[float]) -> float:
            acc = 0.0
            for x in xs:
                acc = acc + x
            return 1.0 / acc  # <-
        """, "acc  #", "ps.f64(acc)", ([],)),
    "while_counter_floordiv": ("""
        @ps.entry
        def f(n: int, x: float) -> float:
            k = 0
            while k < n:
                k = k + 1
            return x + 1.0 // k  # <-
        """, "k  #", "ps.i64(k)", (0, 1.0)),
    "list_element_negative_int_power": ("""
        @ps.entry
        def f(i: int) -> float:
            ks = [2, 4]
            return ps.f64(ks[i] ** -1)  # <-
        """, "ks[i]", "ps.i64(ks[i])", (0,)),
    "list_element_float_power_overflow": ("""
        @ps.entry
        def f(i: int) -> float:
            scale = [1e200, 2.0]
            return scale[i] ** 2  # <-
        """, "scale[i]", "ps.f64(scale[i])", (0,)),
    "negative_shift_count": ("""
        @ps.entry
        def f(c: bool) -> int:
            k = 2 if c else -1
            return 8 >> k  # <-
        """, "k  #", "ps.i64(k)", (False,)),
    "int_float_comparison_beyond_2_53": ("""
        @ps.entry
        def f(c: bool) -> bool:
            big = 9007199254740993 if c else 0
            return big == 9007199254740992.0  # <-
        """, "big", "ps.i64(big)", (True,)),
    "helper_returning_a_constant": ("""
        def zero() -> float:
            return 0.0
        @ps.entry
        def f(x: float) -> float:
            return x + 1.0 / zero()  # <-
        """, "zero()", "ps.f64(zero())", (2.0,)),
    "record_field_constant": ("""
        class Cfg(NamedTuple):
            eps: float
        @ps.entry
        def f(x: float) -> float:
            cfg = Cfg(0.0)
            return x + 1.0 / cfg.eps  # <-
        """, "cfg.eps", "ps.f64(cfg.eps)", (2.0,)),
    "map_over_a_list_of_constants": ("""
        @ps.entry
        def f(x: float) -> ps.Array[float]:
            return ps.map(lambda v: x + 1.0 / v, [1.0, 0.0])  # <-
        """, "v, [1.0", "ps.f64(v)", (2.0,)),
    "foldl_keeps_its_constant_accumulator": ("""
        @ps.entry
        def f(xs: ps.Array[float]) -> float:
            last = ps.foldl(lambda acc, x: acc, 0.0, xs)
            return 1.0 / last  # <-
        """, "last  #", "ps.f64(last)", ([1.0],)),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_at_the_operand_with_the_conversion_as_hint(name):
    body, locator, conversion, _ = REJECTED[name]
    err = reject(body, contains="plain Python numbers in Python mode")
    assert at(err, locator), err
    assert err.hint == f"make this operand a numpy value: write {conversion}"


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_programs_do_diverge_without_the_check(name, tmp_path, monkeypatch):
    body, _, _, args = REJECTED[name]
    diverges(tmp_path, monkeypatch, body, "f", *args)


def test_a_numpy_conversion_of_a_python_int_that_may_not_fit():
    body = """
        @ps.entry
        def f(c: bool) -> ps.i8:
            n = 100 if c else 300
            return ps.i8(n)  # <-
        """
    err = reject(body, contains="may be a plain Python int in Python mode")
    assert "numpy 2 raises OverflowError" in err.message
    assert at(err, "n)  #")
    assert err.hint == "convert a numpy value: write ps.i8(ps.i64(n))"


def test_a_numpy_conversion_of_a_python_int_that_may_not_fit_diverges(tmp_path, monkeypatch):
    exc, got = diverges(tmp_path, monkeypatch, """
        @ps.entry
        def f(c: bool) -> ps.i8:
            n = 100 if c else 300
            return ps.i8(n)
        """, "f", False)
    assert isinstance(exc, OverflowError) and got == 44


def test_a_float_that_may_not_fit_an_int_type():
    reject("""
        @ps.entry
        def f(c: bool) -> ps.i32:
            y = 2.5 if c else 1e10
            return ps.i32(y)  # <-
        """, contains="may be a plain Python float")


def test_a_constant_argument_of_a_top_level_def_is_located_at_the_argument():
    err = reject("""
        def inv(a: float) -> float:
            return 1.0 / a
        @ps.entry
        def f(x: float) -> float:
            return inv(x) + inv(0.0)  # <-
        """, contains="argument 'a' of 'inv' may be a plain Python number in Python mode")
    assert "in 'inv', line 5, '1.0 / a' differs: for a zero divisor" in err.message
    assert at(err, "0.0)")
    assert err.hint == "make it a numpy value: write ps.f64(0.0)"


def test_a_list_argument_of_a_top_level_def():
    err = reject("""
        def first_inverse(xs: ps.Array[float]) -> float:
            return 1.0 / xs[0]
        @ps.entry
        def f(x: float) -> float:
            return first_inverse([0.0, x])  # <-
        """, contains="argument 'xs' of 'first_inverse' may hold plain Python numbers")
    assert err.hint == "make it a numpy array: write ps.array([0.0, x])"


def test_a_top_level_def_mapped_over_a_list_of_constants():
    err = reject("""
        def inv(a: float) -> float:
            return 1.0 / a
        @ps.entry
        def f(x: float) -> ps.Array[float]:
            return ps.map(inv, [1.0, 0.0])  # <-
        """, contains="this call passes 'inv' an argument 'a' that may be a plain Python number")
    assert "ps.array([...])" in err.hint


def test_a_constant_passed_on_through_two_defs():
    reject("""
        def inv(a: float) -> float:
            return 1.0 / a
        def twice(a: float) -> float:
            return 2.0 * inv(a)
        @ps.entry
        def f(x: float) -> float:
            return twice(x) + twice(0.0)  # <-
        """, contains="argument 'a' of 'twice'")


# ---------------------------------------------------------------------------
# Accepted: the same result in Python mode and compiled


ACCEPTED = """
def inv(a: float) -> float:
    return 1.0 / a

def first_inverse(xs: ps.Array[float]) -> float:
    return 1.0 / xs[0]

@ps.entry
def branches(c: bool) -> tuple[float, float, float, float]:
    y = 1.5 if c else 2.5
    return (1.0 / y, y // 0.5, y ** 2, y % 1.0)

@ps.entry
def accumulator(xs: ps.Array[float], d: float) -> tuple[float, float, float]:
    acc = 0.0
    for x in xs:
        acc = acc + x
    return (acc / 2.0, acc // 3.0, acc / d)

@ps.entry
def converted(c: bool) -> tuple[float, float]:
    y = 1.5 if c else 0.0
    return (1.0 / ps.f64(y), ps.f64(y) % 0.0)

@ps.entry
def lists(x: float, i: int) -> tuple[ps.Array[float], ps.Array[float], int, float]:
    ks = [2, 4]
    return (ps.map(lambda v: 1.0 / v, [1.0, 2.0]), ps.map(lambda v: x / v, ps.array([1.0, 0.0])),
            ks[i] ** 2, first_inverse([2.0, x]))

@ps.entry
def calls(x: float) -> float:
    return inv(2.0) + inv(x)

@ps.entry
def fitting_conversion(c: bool) -> ps.i8:
    n = 100 if c else 3
    return ps.i8(n)

@ps.entry
def int_floordiv_by_zero(c: bool) -> int:
    k = 0 if c else 2
    return 7 // k

@ps.entry
def comparisons(c: bool) -> tuple[bool, bool]:
    n = 3 if c else 4
    y = 0.5 if c else 2.0
    return (n < 3.5, y >= 1)

@ps.entry
def shifts(c: bool) -> int:
    k = 1 if c else 2
    return (16 >> k) + (1 << k)

@ps.entry
def numpy_operand(x: float, n: int) -> tuple[float, float, float]:
    y = 1.5 if n > 0 else 0.0
    return (x / y, y / x, 2.0 ** ps.f64(n))

@ps.entry
def folded(xs: ps.Array[float]) -> float:
    return ps.foldl(lambda acc, x: x + 1.0 / acc, 1.0, xs)

@ps.entry
def hinted(c: bool, i: int) -> tuple[float, int, bool, ps.i8]:
    scale = [1e200, 2.0]
    k = 2 if c else -1
    big = 9007199254740993 if c else 0
    n = 100 if c else 300
    return (ps.f64(scale[i]) ** 2, 8 >> ps.i64(k), ps.i64(big) == 9007199254740992.0,
            ps.i8(ps.i64(n)))

@ps.entry
def hinted_power(i: int) -> int:
    ks = [2, 4]
    return ps.i64(ks[i]) ** -1

@ps.entry
def powers(c: bool) -> tuple[float, float, float]:
    y = -8.0 if c else 1e300
    return (y ** 1.0, y ** 0, 1.0 ** y)
"""


@pytest.fixture(scope="module")
def accepted(tmp_path_factory):
    return load(tmp_path_factory.mktemp("pynum"), ACCEPTED)


def test_branches_of_nonzero_constants(accepted):
    for c in (True, False):
        y = 1.5 if c else 2.5
        same_everywhere(accepted, "branches", c, want=(1.0 / y, y // 0.5, y ** 2, y % 1.0))


def test_loop_carried_constant_with_constant_or_numpy_divisors(accepted):
    same_everywhere(accepted, "accumulator", [], 0.0, want=(0.0, 0.0, math.nan))
    same_everywhere(accepted, "accumulator", [1.0, 2.5], 0.0, want=(1.75, 1.0, INF))
    same_everywhere(accepted, "accumulator", [3.0], 2.0, want=(1.5, 1.0, 1.5))


def test_the_hint_makes_it_numpy(accepted):
    same_everywhere(accepted, "converted", False, want=(INF, math.nan))
    same_everywhere(accepted, "converted", True, want=(1.0 / 1.5, math.nan))


def test_the_other_hints_make_it_numpy(accepted):
    same_everywhere(accepted, "hinted", True, 0,
                    want=(INF, np.int64(2), np.True_, np.int8(100)))
    same_everywhere(accepted, "hinted", False, 1,
                    want=(4.0, np.int64(0), np.False_, np.int8(44)))
    same_everywhere(accepted, "hinted_power", 0, raises=ValueError)


def test_lists_of_nonzero_constants_and_numpy_arrays(accepted):
    same_everywhere(accepted, "lists", 0.0, 1)
    same_everywhere(accepted, "lists", 4.0, 0)


def test_nonzero_constant_arguments(accepted):
    same_everywhere(accepted, "calls", 0.0, want=INF)
    same_everywhere(accepted, "calls", 4.0, want=0.75)


def test_conversion_of_constants_that_fit(accepted):
    for c in (True, False):
        same_everywhere(accepted, "fitting_conversion", c, want=np.int8(100 if c else 3))


def test_integer_floordiv_by_zero_raises_everywhere(accepted):
    same_everywhere(accepted, "int_floordiv_by_zero", True, raises=ZeroDivisionError)
    same_everywhere(accepted, "int_floordiv_by_zero", False, want=np.int64(3))


def test_comparisons_and_shifts_that_cannot_differ(accepted):
    for c in (True, False):
        same_everywhere(accepted, "comparisons", c)
        same_everywhere(accepted, "shifts", c)


def test_a_numpy_operand_makes_it_numpy(accepted):
    same_everywhere(accepted, "numpy_operand", 0.0, 0, want=(math.nan, math.nan, 1.0))
    same_everywhere(accepted, "numpy_operand", 3.0, 2, want=(2.0, 0.5, 4.0))


def test_a_constant_accumulator_that_is_never_zero(accepted):
    same_everywhere(accepted, "folded", [], want=1.0)
    same_everywhere(accepted, "folded", [1.0, 2.0], want=2.5)


def test_float_powers_that_cannot_overflow(accepted):
    same_everywhere(accepted, "powers", True, want=(-8.0, 1.0, 1.0))
    same_everywhere(accepted, "powers", False, want=(1e300, 1.0, 1.0))


# ---------------------------------------------------------------------------
# Values computed at run time


RUN_TIME = """
    @ps.entry
    def mean(xs: ps.Array[ps.i32]) -> float:
        return float(ps.sum(xs)) / float(len(xs))

    @ps.entry
    def floor_mod(a: ps.f64, b: ps.i64) -> tuple[float, float]:
        y = float(b)
        return (float(a) // y, float(a) % y)

    @ps.entry
    def int_div(xs: ps.Array[ps.f32], k: ps.i64) -> float:
        return len(xs) / int(k)

    @ps.entry
    def scaled_indices(n: int) -> ps.Array[ps.i32]:
        out = ps.replicate(n, ps.i32(0))
        for i in range(n):
            out[i] = ps.i32(i * 1000000)
        return out

    @ps.entry
    def to_u8(x: ps.f64) -> ps.u8:
        return ps.u8(float(x))

    @ps.entry
    def to_i64(x: ps.f32) -> ps.i64:
        return ps.i64(float(x))

    def safe_div(a: float, b: float) -> float:
        return a / b

    def mean_of(xs: ps.Array[ps.f64]) -> float:
        return safe_div(float(ps.sum(xs)), float(len(xs)))

    @ps.entry
    def means(xs: ps.Array[ps.f64]) -> tuple[float, float]:
        return (mean_of(xs), safe_div(ps.sum(xs), 2.0))

    @ps.entry
    def powers_of_two(n: int) -> int:
        s = 0
        for i in range(n):
            s = s + 2 ** i
        return s
    """


@pytest.fixture(scope="module")
def run_time(tmp_path_factory):
    return load(tmp_path_factory.mktemp("pynum-run-time"), RUN_TIME,
                backends=[b for b in ("python", "core", "cpu", "opencl") if b in available_backends()])


def test_a_run_time_python_divisor_of_zero_raises_zero_division_everywhere(run_time):
    """len(), int()/float() of numpy values and range indices are Python
    numbers in Python mode: `/` (and float `//`, `%`) of two of them raises
    ZeroDivisionError there, so compiled code checks the divisor at run time
    (issue 15 item 11a; conformance/conversions.py mean_i32 is this program)."""
    same_everywhere(run_time, "mean", np.zeros(0, np.int32), raises=ZeroDivisionError)
    same_everywhere(run_time, "mean", np.arange(4, dtype=np.int32), want=1.5)
    same_everywhere(run_time, "floor_mod", 1.0, 0, raises=ZeroDivisionError)
    same_everywhere(run_time, "floor_mod", -7.0, 2, want=(-4.0, 1.0))
    same_everywhere(run_time, "floor_mod", 7.0, -0, raises=ZeroDivisionError)
    same_everywhere(run_time, "int_div", np.ones(3, np.float32), 0, raises=ZeroDivisionError)
    same_everywhere(run_time, "int_div", np.ones(3, np.float32), 2, want=1.5)
    for b, w in run_time.items():
        with pytest.raises(ZeroDivisionError, match="float division by zero"):
            w.invoke("mean", np.zeros(0, np.int32))


def test_a_run_time_python_number_passed_to_a_def_is_checked_inside_it(run_time):
    """safe_div divides numpy values when `means` calls it directly, and
    run-time Python numbers when mean_of does: that call uses a copy of
    safe_div with the zero-divisor check (funcs.specialization)."""
    same_everywhere(run_time, "means", np.zeros(0), raises=ZeroDivisionError)
    same_everywhere(run_time, "means", np.arange(3.0), want=(1.0, 1.5))


def test_a_numpy_conversion_of_a_run_time_python_number_raises_what_numpy_raises(run_time):
    same_everywhere(run_time, "scaled_indices", 3, want=np.array([0, 10 ** 6, 2 * 10 ** 6], np.int32))
    same_everywhere(run_time, "scaled_indices", 2200, raises=OverflowError)
    same_everywhere(run_time, "to_u8", 255.9, want=255)
    same_everywhere(run_time, "to_u8", -0.5, want=0)
    for bad, exc in ((256.0, OverflowError), (-1.0, OverflowError), (math.nan, ValueError),
                     (math.inf, OverflowError), (-math.inf, OverflowError)):
        same_everywhere(run_time, "to_u8", bad, raises=exc)
    same_everywhere(run_time, "to_i64", np.float32(-2.0 ** 63), want=-2 ** 63)
    same_everywhere(run_time, "to_i64", np.float32(2.0 ** 63), raises=OverflowError)


def test_other_divergences_of_run_time_python_numbers_are_left_as_documented(run_time):
    """`2 ** i` for a range index is accepted (Python gives a float for a
    negative i, compiled code raises ValueError; docs/language.md says so)."""
    same_everywhere(run_time, "powers_of_two", 10, want=1023)
