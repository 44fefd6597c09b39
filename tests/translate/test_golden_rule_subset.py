"""Only the subset compiles (attributes of builtins and functions are
errors, nested record fields work), no input reaches the user as an internal
error (constants outside i64), and the messages of issue 5."""
from __future__ import annotations

import numpy as np
import pytest

from translate_helpers import reject, run

# -- attributes -----------------------------------------------------------------


@pytest.mark.parametrize("expr", [
    "int.bit_length(x)",
    "float.__neg__(ps.f64(x))",
    "ps.i64.__add__(x, x)",
    "ps.map.__name__",
    "abs.__call__(x)",
    "g.__name__",
    "P._make((x,)).n",
    "Num.bit_length(x)",
])
def test_attribute_of_a_builtin_or_function_is_an_error(expr):
    reject(f"""
        class P(NamedTuple):
            n: int
        Num = int
        def g(v: int) -> int:
            return v
        @ps.entry
        def f(x: int) -> int:
            y = {expr}  # <-
            return x
        """, contains="attributes of builtins, functions and types")


def test_attribute_of_a_local_def_is_an_error():
    reject("""
        @ps.entry
        def f(x: int) -> int:
            def h(v: int) -> int:
                return v
            return h.__call__(x)  # <-
        """, contains="attributes of builtins, functions and types (h.__call__)")


def test_attribute_of_a_builtin_passed_to_a_prelude_function():
    reject("""
        @ps.entry
        def f(xs: ps.Array[float]) -> ps.Array[float]:
            return ps.map(float.__neg__, xs)  # <-
        """, contains="attributes of builtins")


def test_attribute_of_a_builtin_is_not_a_type():
    reject("""
        @ps.entry
        def f(x: int.real) -> int:  # <-
            return x
        """, contains="not a PyShark type")


def test_module_members_still_resolve():
    got = run("""
        import pyshark.prelude
        from pyshark import prelude as pre
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> tuple[ps.f32, ps.f32]:
            return (pyshark.prelude.sum(xs), pre.maximum(pre.map(lambda x: pre.abs(x), xs)))
        """, "f", [1.0, -3.0])
    assert list(got) == [-2.0, 3.0] and got[0].dtype == np.float32


def test_nested_record_fields():
    got = run("""
        class P(NamedTuple):
            x: ps.f64
            y: ps.f64
        class S(NamedTuple):
            a: P
            b: P
        class T(NamedTuple):
            s: S
            w: int
        @ps.entry
        def f(t: T) -> tuple[ps.f64, ps.f64, int]:
            s = t.s
            return (t.s.b.x - t.s.a.x, s.a.y, t.w)
        """, "f", (((1.5, 2.0), (4.0, -1.0)), 7))
    assert list(got) == [2.5, 2.0, 7]


def test_nested_record_field_errors():
    reject("""
        class P(NamedTuple):
            x: ps.f64
        class S(NamedTuple):
            a: P
        @ps.entry
        def f(s: S) -> ps.f64:
            return s.a.z  # <-
        """, contains="record P has no field 'z'")
    reject("""
        class P(NamedTuple):
            x: ps.f64
        class S(NamedTuple):
            a: P
        @ps.entry
        def f(s: S) -> ps.f64:
            return s.a.norm()  # <-
        """, contains="methods are not supported")
    reject("""
        class P(NamedTuple):
            x: ps.f64
        K = P(1.0)
        @ps.entry
        def f(s: P) -> ps.f64:
            return K.x.real  # <-
        """, contains="has no attribute 'real'")


# -- constants outside i64 ----------------------------------------------------------


@pytest.mark.parametrize("expr", [
    "min(x, 2**70)",
    "max(2**63, x)",
    "ps.replicate(3, 2**70)[0]",
    "ps.iota(2**64)[0]",
    "[x, 2**63][0]",
    "[2**64 for i in range(2)][0]",
    "ps.map(lambda v: 2**70, ps.iota(2))[0]",
    "ps.foldl(lambda a, b: a + b, 2**70, ps.iota(2))",
    "ps.min(2**70, 3)",
    "ps.take(2**65, ps.iota(3))[0]",
])
def test_int_constant_outside_i64_is_a_located_error(expr):
    reject(f"""
        @ps.entry
        def f(x: int) -> int:
            y = {expr}  # <-
            return x
        """, contains="does not fit int")


def test_int_constant_outside_i64_in_a_loop_carried_initial_value():
    reject("""
        @ps.entry
        def f(n: int) -> int:
            acc = 2**64  # <-
            for i in range(n):
                acc = acc - i
            return acc
        """, contains="does not fit int")


@pytest.mark.parametrize("expr, fragment", [
    ("x * 2**2000", "too large for ps.f64"),
    ("ps.f32(10**400)", "too large for ps.f32"),
    ("ps.sqrt(10**400)", "is too large for ps.f64"),
    ("ps.abs(10**400)", "(401 digits) does not fit int"),
    ("ps.atan2(x, 10**400)", "is too large for ps.f64"),
    ("2 ** 100000", "far too large"),
    ("1 << 100000", "far too large"),
    ("x + 10**400 / 3", "cannot be evaluated"),
])
def test_huge_constants_are_located_errors(expr, fragment):
    err = reject(f"""
        @ps.entry
        def f(x: float) -> float:
            y = {expr}  # <-
            return x
        """, contains=fragment)
    assert "internal error" not in err.message


def test_big_constant_arithmetic_that_ends_in_range_is_fine():
    got = run("""
        @ps.entry
        def f(x: int) -> int:
            return x + 2**70 // 2**60
        """, "f", 1)
    assert got == 1025


# -- messages -----------------------------------------------------------------


def test_update_of_an_alias_of_a_parameter_names_both():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[int]) -> ps.Array[int]:
            ys = xs
            ys[0] = 1  # <-
            return ys
        """, contains="in-place update of 'ys', which aliases parameter 'xs'")
    assert err.hint == "ys = ps.copy(xs) before the update"


def test_enumerate_of_zip_says_nesting_is_unsupported():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[int], ys: ps.Array[int]) -> int:
            s = 0
            for i, (x, y) in enumerate(zip(xs, ys)):  # <-
                s = s + x * y + i
            return s
        """, contains="nesting zip(...) inside enumerate(...) is not supported")
    assert "enumerate(ps.zip(...))" in err.hint
    reject("""
        @ps.entry
        def f(xs: ps.Array[int], ys: ps.Array[int]) -> ps.Array[int]:
            return [i for i, p in zip(enumerate(xs), ys)]  # <-
        """, contains="nesting enumerate(...) inside zip(...) is not supported")


def test_the_suggested_enumerate_of_ps_zip_works():
    got = run("""
        @ps.entry
        def f(xs: ps.Array[int], ys: ps.Array[int]) -> int:
            s = 0
            for i, (x, y) in enumerate(ps.zip(xs, ys)):
                s = s + x * y + i
            return s
        """, "f", [1, 2], [3, 4])
    assert got == 3 + 8 + 1


def test_local_def_in_both_branches_is_not_called_defined_in_one_branch():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[int], c: bool) -> ps.Array[int]:
            if c:
                def g(x: int) -> int:
                    return x + 1
            else:
                def g(x: int) -> int:
                    return x - 1
            return ps.map(g, xs)  # <-
        """, contains="the local function 'g' is defined in both branches of the if at line 6")
    assert "only" not in err.message
    assert "define one 'g' before the if" in err.hint
    reject("""
        @ps.entry
        def f(xs: ps.Array[int], c: bool) -> ps.Array[int]:
            if c:
                def g(x: int) -> int:
                    return x + 1
            return ps.map(g, xs)  # <-
        """, contains="the local function 'g' is defined only in the if branch")


def test_builtin_min_message_grammar():
    err = reject("""
        @ps.entry
        def f(x: ps.i32) -> ps.i32:
            return min(x, 5)  # <-
        """)
    assert "so this int constant (a Python int in Python mode) must already be ps.i32" in err.message
    assert "this a" not in err.message


def test_attribute_of_a_builtin_as_a_loop_iterable():
    reject("""
        @ps.entry
        def f(n: int) -> int:
            s = 0
            for i in range.x(n):  # <-
                s = s + i
            return s
        """, contains="attributes of builtins, functions and types (range.x)")


def test_a_tuple_is_not_a_record():
    # Python mode: a helper returning a plain tuple for a record type gives
    # the caller no fields (AttributeError), so it must build the record
    err = reject("""
        class P(NamedTuple):
            a: ps.i8
        def g(x: ps.i8) -> P:
            return (x,)  # <-
        @ps.entry
        def f(x: ps.i8) -> ps.i8:
            return g(x).a
        """, contains="must be a P record, not a tuple")
    assert err.hint == "build the record: P(...)"


# -- lists passed to top-level defs (issue 15 item 11d) ---------------------------


def test_a_list_argument_indexed_with_a_tuple_inside_the_def_is_located_at_the_argument():
    """In Python mode a list literal stays a list inside the def it is passed
    to, where `a[i, j]` raises TypeError; compiled, it would work."""
    err = reject("""
        def get(a: ps.Array[ps.Array[float]], i: int, j: int) -> float:
            return a[i, j]
        @ps.entry
        def f(i: int) -> float:
            return get([[1.0, 2.0], [3.0, 4.0]], i, 1)  # <-
        """)
    assert "argument 'a' of 'get' is a list in Python mode" in err.message
    assert "a[i, j]" in err.message and err.hint == "pass a numpy array: ps.array([...])"


def test_a_list_argument_indexed_one_dimension_at_a_time_or_a_numpy_array_is_fine():
    got = run("""
        def get(a: ps.Array[ps.Array[float]], i: int, j: int) -> float:
            return a[i][j]
        def get2(a: ps.Array[ps.Array[float]], i: int, j: int) -> float:
            return a[i, j]
        @ps.entry
        def f(i: int) -> float:
            return get([[1.0, 2.0], [3.0, 4.0]], i, 1) + get2(ps.array([[1.0, 2.0], [3.0, 4.0]]), i, 0)
        """, "f", 1)
    assert got == 7.0
