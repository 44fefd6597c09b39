"""Weak constants, mixed types, literal ranges and strict contexts."""
from __future__ import annotations

import numpy as np

from translate_helpers import compile_src, reject, run


def test_weak_literal_takes_operand_type():
    got = run("""
        @ps.entry
        def f(x: ps.f32) -> ps.f32:
            return x * 2 + 0.5
        """, "f", 1.5)
    assert got.dtype == np.float32 and got == np.float32(3.5)


def test_weak_name_stays_weak_until_it_meets_a_type():
    got = run("""
        @ps.entry
        def f(x: ps.i16) -> ps.i16:
            k = 3
            half = k * 2
            return x * half
        """, "f", 7)
    assert got.dtype == np.int16 and got == 42


def test_weak_int_times_float_constant_folds_with_python_semantics():
    got = run("""
        @ps.entry
        def f(x: float) -> float:
            c = 7 // 2 + 2 ** 3
            return x + c
        """, "f", 0.5)
    assert got == 11.5


def test_module_constants_weak_and_typed():
    src = """
        G = ps.f32(9.81)
        HALF = G * 0.5
        DAYS = 7
        @ps.entry
        def f(t: ps.f32, w: ps.i8) -> tuple[ps.f32, ps.i8]:
            return (HALF * t, w * DAYS)
        """
    a, b = run(src, "f", 2.0, 3)
    assert a.dtype == np.float32 and abs(a - 9.81) < 1e-5
    assert b.dtype == np.int8 and b == 21


def test_mixed_int_types_rejected_with_conversion_hint():
    err = reject("""
        @ps.entry
        def f(a: ps.i32, b: ps.i64) -> ps.i64:
            return a + b  # <-
        """, contains="mixed-type")
    assert err.hint and "ps." in err.hint


def test_mixed_float_types_rejected():
    reject("""
        @ps.entry
        def f(a: ps.f32, b: ps.f64) -> ps.f64:
            return a * b  # <-
        """, contains="mixed-type arithmetic ps.f32 * ps.f64")


def test_literal_out_of_range_for_typed_operand():
    reject("""
        @ps.entry
        def f(x: ps.u8) -> ps.u8:
            return x - 256  # <-
        """, contains="does not fit ps.u8")


def test_weak_float_return_where_f32_expected_is_an_error_with_hint():
    err = reject("""
        def half() -> ps.f32:
            return 0.5  # <-
        @ps.entry
        def f(x: ps.f32) -> ps.f32:
            return x * half()
        """, contains="the return value of helper 'half' must be ps.f32")
    assert "ps.f32(0.5)" in err.hint


def test_weak_float_argument_to_user_function_is_strict():
    err = reject("""
        def g(a: ps.f32) -> ps.f32:
            return a
        @ps.entry
        def f(x: ps.f32) -> ps.f32:
            return g(0.25) + x  # <-
        """, contains="argument 'a' of 'g'")
    assert "ps.f32(0.25)" in err.hint


def test_weak_float_record_field_is_strict():
    reject("""
        class P(NamedTuple):
            x: ps.f32
        @ps.entry
        def f(a: ps.f32) -> P:
            return P(x=1.5)  # <-
        """, contains="field 'x' of P")


def test_int_constant_argument_to_narrow_int_parameter_must_be_converted():
    err = reject("""
        def g(a: ps.i32, b: ps.i32) -> ps.i32:
            return a // b
        @ps.entry
        def f(x: ps.i32) -> ps.i32:
            return g(x, 60)  # <-
        """, contains="argument 'b' of 'g' must be ps.i32")
    assert err.hint == "write ps.i32(60)"
    got = run("""
        def g(a: ps.i32, b: ps.i32) -> ps.i32:
            return a // b
        @ps.entry
        def f(x: ps.i32) -> ps.i32:
            return g(x, ps.i32(60))
        """, "f", 125)
    assert got == 2 and got.dtype == np.int32


def test_conditional_expression_weak_branch_must_have_the_other_type():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            return ps.map(lambda x: x if x > 0.0 else 0.0, xs)  # <-
        """, contains="stays a Python float in Python mode")
    assert err.hint == "write ps.f32(0.0)"
    assert err.col == err.source_line.index("0.0, xs")
    got = run("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            return ps.map(lambda x: x if x > 0.0 else ps.f32(0.0), xs)
        """, "f", [1.0, -2.0])
    assert got.dtype == np.float32 and list(got) == [1.0, 0.0]


def test_len_and_range_index_are_i64():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i32]) -> ps.i32:
            return xs[0] * len(xs)  # <-
        """, contains="mixed-type")


def test_loop_carried_weak_init_takes_default_type():
    got = run("""
        @ps.entry
        def f(n: int) -> float:
            acc = 0.0
            for i in range(n):
                acc = acc + 0.5
            return acc
        """, "f", 3)
    assert got == 1.5 and got.dtype == np.float64


def test_division_of_ints_is_f64():
    got = run("""
        @ps.entry
        def f(a: ps.i32, b: ps.i32) -> float:
            return a / b
        """, "f", 1, 4)
    assert got == 0.25


def test_whole_array_arithmetic_suggests_map():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            return xs * 2  # <-
        """)
    assert "ps.map" in str(err)


def test_entry_and_records_in_program():
    prog = compile_src("""
        class V(NamedTuple):
            x: ps.f32
            y: ps.f32
        @ps.entry
        def f(v: V) -> ps.f32:
            return v.x + v.y
        """)
    assert "V" in prog.records and prog.records["V"].field_names == ("x", "y")
    assert prog.entries["f"].params[0].name == "v"
    assert len(prog.functions["f"].params) == 2
    assert prog.filename == "snippet.py"


def test_weak_loop_init_clash_explains_the_constant():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.f32:
            s = 0.0
            for x in xs:
                s = s + x  # <-
            return s
        """, contains="mixed-type")
    assert "s = ps.f32(0.0)" in err.hint


def test_unexpected_exception_becomes_located_internal_error(monkeypatch):
    import pyshark.translate.stmts as stmts

    def boom(ctx, st):
        raise RuntimeError("boom")
    monkeypatch.setattr(stmts, "translate_assert", boom)
    reject("""
        @ps.entry
        def f(x: int) -> int:
            assert x > 0, "positive"  # <-
            return x
        """, contains="internal error: RuntimeError: boom")


def test_array_returned_where_a_number_is_declared_hints_a_reduction():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.f32:
            return xs
        """)
    assert "must be ps.f32, not ps.Array[ps.f32]" in err.message
    assert "ps.sum(xs)" in err.hint and "ps.Array[ps.f32]" in err.hint


def test_array_of_another_element_type_returned_hints_an_element_wise_conversion():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f64]]:
            return xs
        """)
    assert "ps.map(lambda r1: ps.map(ps.f64, r1), xs)" in err.hint
    # the hint's conversion is itself a program the translator accepts
    got = run("""
        @ps.entry
        def f(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f64]]:
            return ps.map(lambda r1: ps.map(ps.f64, r1), xs)
        """, "f", np.ones((2, 3), np.float32))
    assert got.dtype == np.float64 and got.shape == (2, 3)


def test_number_returned_where_an_array_is_declared_hints_replicate():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            return ps.sum(xs)
        """)
    assert "ps.replicate(n, ps.sum(xs))" in err.hint


def test_reduce_by_index_dtype_hint_names_both_arguments_that_can_change():
    err = reject("""
        @ps.entry
        def f(xs: ps.Array[ps.f32], idx: ps.Array[ps.i64]) -> ps.Array[ps.f64]:
            return ps.reduce_by_index(ps.replicate(10, 0.0), lambda a, b: a + b, 0.0, idx, xs)
        """)
    assert "destination's element type ps.f64, not ps.f32" in err.message
    assert "ps.map(ps.f64, ...)" in err.hint and "ps.replicate(n, ps.f32(0))" in err.hint
