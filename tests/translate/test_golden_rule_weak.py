"""Weak values (LANGUAGE.md): a constant takes the type of a typed operand of
a binary operator or prelude call, and anywhere else must already have the
expected type, because in Python mode it stays a Python number. Each context
LANGUAGE.md lists is a located error whose hint is the conversion."""
from __future__ import annotations

import numpy as np
import pytest

from translate_helpers import reject, run


def test_issue_example_weak_branch_then_arithmetic():
    # Python mode: 200; an i8 branch would give -56 compiled
    err = reject("""
        @ps.entry
        def f(x: ps.i8) -> ps.i64:
            return ps.i64((x if x > 0 else 100) * 2)  # <-
        """, contains="stays a Python int in Python mode")
    assert err.hint == "write ps.i8(100)"
    assert err.col == err.source_line.index("100")
    got = run("""
        @ps.entry
        def f(x: ps.i8) -> ps.i64:
            return ps.i64((x if x > 0 else ps.i8(100)) * 2)
        """, "f", -3)
    assert got == -56 and got.dtype == np.int64


@pytest.mark.parametrize("then, other, hint", [
    ("x", "0.5", "ps.f32(0.5)"),
    ("0.5", "x", "ps.f32(0.5)"),
    ("(x, 1)", "(x, n)", "ps.i16(1)"),
])
def test_conditional_expression_branches(then, other, hint):
    err = reject(f"""
        @ps.entry
        def f(x: ps.f32, n: ps.i16, c: bool) -> ps.f32:
            y = {then} if c else {other}  # <-
            return x
        """)
    assert err.hint == f"write {hint}"


def test_conditional_expression_of_two_constants_keeps_default_type():
    got = run("""
        @ps.entry
        def f(c: bool) -> tuple[int, float]:
            return (1 if c else 2, 0.5 if c else 1)
        """, "f", False)
    assert got[0] == 2 and got[0].dtype == np.int64
    assert got[1] == 1.0 and got[1].dtype == np.float64


def test_if_statement_weak_value_in_the_branch():
    err = reject("""
        @ps.entry
        def f(x: ps.i8, c: bool) -> ps.i64:
            y = x
            if c:
                y = 100  # <-
            return ps.i64(y * 2)
        """, contains="the values 'y' gets in the two branches mix ps.i8 and a constant")
    assert err.hint == "write ps.i8(100)"


def test_if_statement_weak_value_bound_before_the_if():
    err = reject("""
        @ps.entry
        def f(x: ps.f32, c: bool) -> ps.f32:
            y = 0.0  # <-
            if c:
                y = x
            return y
        """, contains="stays a Python float")
    assert err.hint == "write ps.f32(0.0)"


def test_if_elif_else_weak_value_in_the_else_branch():
    reject("""
        @ps.entry
        def f(x: ps.u8, k: int) -> ps.u8:
            if k == 0:
                y = x
            elif k == 1:
                y = x + 1
            else:
                y = 7  # <-
            return y
        """, contains="stays a Python int")


def test_if_statement_with_both_branches_weak_keeps_default_type():
    got = run("""
        @ps.entry
        def f(c: bool) -> int:
            if c:
                y = 1
            else:
                y = 2
            return y * 3
        """, "f", True)
    assert got == 3 and got.dtype == np.int64


def test_guard_returns_of_an_unannotated_local_def():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i16]) -> ps.Array[ps.i16]:
            def clip(v):
                if v > 100:
                    return 100  # <-
                return v
            return ps.map(clip, xs)
        """, contains="the values 'clip' returns mix ps.i16 and a constant")


def test_array_literal_float_element_beside_f32():
    err = reject("""
        @ps.entry
        def f(x: ps.f32) -> ps.Array[ps.f32]:
            return [x, 1.0]  # <-
        """, contains="the elements of this list")
    assert err.hint == "write ps.f32(1.0)"


def test_array_literal_of_constants_and_i64_elements_is_fine():
    got = run("""
        @ps.entry
        def f(n: int) -> ps.Array[int]:
            return [n, 0, -1]
        """, "f", 5)
    assert list(got) == [5, 0, -1] and got.dtype == np.int64


@pytest.mark.parametrize("decl, ret, hint", [
    ("ps.i8", "100", "ps.i8(100)"),
    ("ps.u16", "1", "ps.u16(1)"),
    ("ps.f32", "2.5", "ps.f32(2.5)"),
    ("float", "2", "ps.f64(2)"),
])
def test_helper_returns_a_constant(decl, ret, hint):
    err = reject(f"""
        def k() -> {decl}:
            return {ret}  # <-
        @ps.entry
        def f(x: {decl}) -> {decl}:
            return x + k()
        """, contains="the return value of helper 'k'")
    assert err.hint == f"write {hint}"


def test_annotated_local_def_returns_a_constant():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
            def one(v: ps.i32) -> ps.i32:
                return 1  # <-
            return ps.map(one, xs)
        """, contains="the return value of local function 'one' must be ps.i32")


def test_tuple_return_locates_the_constant_element():
    err = reject("""
        def pair(x: ps.i8) -> tuple[ps.i8, ps.i8]:
            return (x,
                    0)  # <-
        @ps.entry
        def f(x: ps.i8) -> ps.i8:
            a, b = pair(x)
            return a + b
        """)
    assert err.hint == "write ps.i8(0)"


def test_record_field_and_user_function_argument():
    err = reject("""
        class P(NamedTuple):
            n: ps.i16
            w: ps.f32
        @ps.entry
        def f(a: ps.i16) -> P:
            return P(a, 0.25)  # <-
        """, contains="field 'w' of P must be ps.f32")
    assert err.hint == "write ps.f32(0.25)"
    reject("""
        class P(NamedTuple):
            n: ps.i16
        @ps.entry
        def f(a: ps.i16) -> P:
            return P(n=3)  # <-
        """, contains="field 'n' of P must be ps.i16")
    reject("""
        def g(a: float) -> float:
            return a / 2
        @ps.entry
        def f(x: float) -> float:
            return x + g(3)  # <-
        """, contains="argument 'a' of 'g' must be ps.f64")


def test_annotated_local_is_strict():
    reject("""
        @ps.entry
        def f(x: ps.i8) -> ps.i8:
            y: ps.i8 = 100  # <-
            return x + y
        """, contains="the value of 'y' must be ps.i8")


def test_loop_carried_value_assigned_a_constant_in_the_body():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.f32:
            s = ps.f32(0.0)
            for x in xs:
                if x > s:
                    s = x
                else:
                    s = 0.5  # <-
            return s
        """)
    assert err.hint == "write ps.f32(0.5)"
    err = reject("""
        @ps.entry
        def f(n: int, x: ps.i16) -> ps.i16:
            s = x
            for i in range(n):
                s = 3  # <-
            return s
        """, contains="loop-carried 's' (carried as ps.i16)")
    assert err.hint == "write ps.i16(3)"


def test_loop_carried_weak_initial_value_starts_at_its_default_type():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i8]) -> ps.i8:
            s = 0
            for x in xs:
                s = s + x  # <-
            return s
        """, contains="mixed-type")
    assert "s = ps.i8(0)" in err.hint


def test_builtin_min_max_beside_a_typed_operand():
    err = reject("""
        @ps.entry
        def f(x: ps.f32) -> ps.f32:
            return max(x, 0.0)  # <-
        """, contains="so this float constant (a Python float in Python mode) must already be ps.f32")
    assert "ps.f32(0.0)" in err.hint and "ps.max(x, 0.0)" in err.hint
    reject("""
        @ps.entry
        def f(x: ps.i32) -> ps.i32:
            return min(100, x)  # <-
        """, contains="must already be ps.i32")
    got = run("""
        @ps.entry
        def f(x: ps.f32, n: int) -> tuple[ps.f32, int]:
            return (ps.max(x, 0.0), min(n, 3))
        """, "f", -2.0, 7)
    assert got[0] == 0.0 and got[0].dtype == np.float32 and got[1] == 3


def test_operators_and_prelude_calls_still_give_constants_the_operand_type():
    got = run("""
        def add(a: ps.f32, b: ps.f32) -> ps.f32:
            return a + b
        @ps.entry
        def f(x: ps.f32, xs: ps.Array[ps.f32]) -> tuple[ps.f32, ps.f32, ps.f32]:
            return (x * 2 + 0.5, ps.max(x, 0.0), ps.reduce(add, 0.0, xs))
        """, "f", 1.5, [1.0, 2.0])
    assert [v.dtype for v in got] == [np.float32] * 3
    assert list(got) == [3.5, 1.5, 3.0]


def test_reduce_and_fold_operator_results_must_have_the_element_type():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i8]) -> ps.i8:
            return ps.reduce(lambda a, b: 100, ps.i8(0), xs)  # <-
        """, contains="the result of the function passed to ps.reduce must be ps.i8")
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            return ps.scan(lambda a, b: 1.0, ps.f32(0.0), xs)  # <-
        """, contains="stays a Python float")
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i16]) -> ps.i16:
            return ps.foldl(lambda acc, x: 7, ps.i16(0), xs)  # <-
        """, contains="(the accumulator) must be ps.i16")


def test_reduce_by_index_operator_result_is_stored_so_it_converts():
    got = run("""
        @ps.entry
        def f(dest: ps.Array[ps.i8], idxs: ps.Array[int], vals: ps.Array[ps.i8]) -> ps.Array[ps.i8]:
            return ps.reduce_by_index(dest, lambda a, b: 5, 0, idxs, vals)
        """, "f", [1, 1], [0, 0], [3, 3])
    assert list(got) == [5, 1] and got.dtype == np.int8


def test_update_of_a_list_is_strict_update_of_an_array_converts():
    reject("""
        @ps.entry
        def f(a: ps.i32, b: ps.i32) -> ps.Array[ps.i32]:
            ys = [a, b]
            ys[0] = 100  # <-
            return ys
        """, contains="(a list in Python mode) must be ps.i32")
    got = run("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            ys = ps.copy(xs)
            ys[0] = 0.5
            return ys
        """, "f", [2.0, 3.0])
    assert list(got) == [0.5, 3.0] and got.dtype == np.float32


def test_entry_may_return_a_constant_converted_at_the_boundary():
    got = run("""
        @ps.entry
        def f(x: ps.f32) -> tuple[ps.f32, ps.i8]:
            return (0.5, 100)
        """, "f", 1.0)
    assert got[0] == 0.5 and got[0].dtype == np.float32
    assert got[1] == 100 and got[1].dtype == np.int8


def test_entry_returning_a_converted_constant_cannot_be_called_from_pyshark_code():
    err = reject("""
        @ps.entry
        def cap(x: ps.i8) -> ps.i8:
            if x > 100:
                return 100
            return x
        @ps.entry
        def twice(x: ps.i8) -> ps.i64:
            return ps.i64(cap(x) * 2)  # <-
        """, contains="'cap' is an entry whose return value 100 (line 7) holds the constant 100")
    assert err.hint == "write ps.i8(100) in 'cap'"
    got = run("""
        @ps.entry
        def one() -> int:
            return 1
        @ps.entry
        def two() -> int:
            return one() + one()
        """, "two")
    assert got == 2


def test_entry_returning_a_tuple_with_a_converted_constant_names_the_constant():
    err = reject("""
        @ps.entry
        def e(x: ps.i8) -> tuple[ps.i8, ps.f32]:
            return (x, 0.5)
        @ps.entry
        def g(x: ps.i8) -> ps.f32:
            a, b = e(x)  # <-
            return b
        """, contains="holds the constant 0.5, converted to ps.f32 only at the entry boundary")
    assert err.hint == "write ps.f32(0.5) in 'e'"
