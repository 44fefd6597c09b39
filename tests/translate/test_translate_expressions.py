"""Expressions: short-circuit logic, chained comparisons, indexing, slices,
tuples, records, array literals and comprehensions."""
from __future__ import annotations

import numpy as np

from translate_helpers import compile_src, reject, run


def test_and_or_do_not_evaluate_the_right_side():
    src = """
        @ps.entry
        def f(xs: ps.Array[ps.i64], i: int) -> tuple[bool, bool]:
            return (i < len(xs) and xs[i] > 0, i >= len(xs) or xs[i] > 0)
        """
    assert run(src, "f", [1, 2], 5) == [False, True]
    assert run(src, "f", [1, -2], 1) == [False, False]


def test_conditional_expression_does_not_evaluate_untaken_branch():
    src = """
        @ps.entry
        def f(xs: ps.Array[ps.i64]) -> int:
            return xs[-1] if len(xs) > 0 else 0
        """
    assert run(src, "f", []) == 0
    assert run(src, "f", [4, 9]) == 9


def test_chained_comparison_short_circuits_and_evaluates_middle_once():
    src = """
        @ps.entry
        def f(xs: ps.Array[ps.i64], i: int) -> bool:
            return 0 <= i < len(xs) < xs[i]
        """
    assert run(src, "f", [1, 2], -1) is not None
    assert not run(src, "f", [1, 2], -1)
    assert run(src, "f", [5, 9], 1)


def test_negative_indexes_and_2d_indexing():
    src = """
        @ps.entry
        def f(xss: ps.Array[ps.Array[ps.i32]]) -> tuple[ps.i32, ps.i32, ps.i32]:
            return (xss[-1, -1], xss[0][-1], xss[-2][0])
        """
    assert run(src, "f", [[1, 2], [3, 4]]) == [4, 2, 1]


def test_slices_clamp_like_python():
    src = """
        @ps.entry
        def f(xs: ps.Array[ps.i64]) -> tuple[ps.Array[ps.i64], ps.Array[ps.i64], ps.Array[ps.i64]]:
            return (xs[1:100], xs[::-2], xs[-2:])
        """
    a, b, c = run(src, "f", [1, 2, 3, 4, 5])
    assert list(a) == [2, 3, 4, 5] and list(b) == [5, 3, 1] and list(c) == [4, 5]


def test_column_and_row_slices():
    src = """
        @ps.entry
        def f(m: ps.Array[ps.Array[ps.f32]]) -> tuple[ps.Array[ps.f32], ps.Array[ps.f32]]:
            return (m[:, 1], m[0, :])
        """
    col, row = run(src, "f", [[1.0, 2.0], [3.0, 4.0]])
    assert list(col) == [2.0, 4.0] and list(row) == [1.0, 2.0]


def test_constant_zero_slice_step_rejected():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
            return xs[::0]  # <-
        """, contains="slice step cannot be zero")


def test_float_index_rejected():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i64], x: float) -> int:
            return xs[x]  # <-
        """, contains="must be an integer")


def test_tuple_constant_index_and_unpacking():
    src = """
        @ps.entry
        def f(t: tuple[tuple[ps.i32, ps.i32], ps.f32]) -> tuple[ps.i32, ps.f32]:
            (a, b), c = t
            return (t[0][-1] + a * b, c)
        """
    assert run(src, "f", [[2, 3], 1.5]) == [9, 1.5]


def test_tuple_index_must_be_constant():
    reject("""
        @ps.entry
        def f(t: tuple[int, int], i: int) -> int:
            return t[i]  # <-
        """, contains="constant integer")


def test_records_keyword_construction_and_fields():
    src = """
        class V(NamedTuple):
            x: ps.f32
            y: ps.f32
        @ps.entry
        def f(a: ps.f32) -> V:
            v = V(y=a, x=a * 2.0)
            return V(v.x + 1.0, v.y)
        """
    assert run(src, "f", 1.0) == [3.0, 1.0]


def test_field_of_array_of_records_rejected():
    reject("""
        class V(NamedTuple):
            x: ps.f32
        @ps.entry
        def f(vs: ps.Array[V]) -> ps.Array[ps.f32]:
            return vs.x  # <-
        """, contains="array of V records")


def test_array_literal_weak_element_beside_typed_ones_must_be_converted():
    err = reject("""
        @ps.entry
        def f(a: ps.i32) -> ps.Array[ps.i32]:
            return [a,
                    0,  # <-
                    a + 1]
        """, contains="the elements of this list mix ps.i32 and a constant")
    assert err.hint == "write ps.i32(0)"
    got = run("""
        @ps.entry
        def f(a: ps.i32) -> ps.Array[ps.i32]:
            return [a, ps.i32(0), a + 1]
        """, "f", 4)
    assert got.dtype == np.int32 and list(got) == [4, 0, 5]


def test_nested_array_literal_is_rank_2_and_indexing_one_at_a_time():
    got = run("""
        @ps.entry
        def f(a: int) -> tuple[ps.Array[ps.Array[int]], int]:
            m = [[a, 1], [2, 3]]
            return (m, m[0][0])
        """, "f", 9)
    assert got[0].tolist() == [[9, 1], [2, 3]] and got[1] == 9


def test_multi_index_on_list_needs_ps_array():
    reject("""
        @ps.entry
        def f(a: int) -> int:
            m = [[a, 1], [2, 3]]
            return m[0, 1]  # <-
        """, contains="ps.array")


def test_empty_list_needs_a_known_type():
    reject("""
        @ps.entry
        def f(a: int) -> int:
            xs = []  # <-
            return a
        """, contains="empty list")
    got = run("""
        @ps.entry
        def f(a: int) -> ps.Array[ps.f32]:
            return []
        """, "f", 1)
    assert got.size == 0 and got.dtype == np.float32


def test_comprehensions_map_filter_enumerate_zip_range():
    src = """
        @ps.entry
        def f(xs: ps.Array[ps.i64], ys: ps.Array[ps.i64]) -> tuple[ps.Array[ps.i64], ps.Array[ps.i64], ps.Array[ps.i64], ps.Array[ps.i64]]:
            a = [x * 2 for x in xs if x % 2 == 1]
            b = [i * x for i, x in enumerate(xs)]
            c = [x + y for x, y in zip(xs, ys)]
            d = [i for i in range(10, 0, -3)]
            return (a, b, c, d)
        """
    a, b, c, d = run(src, "f", [1, 2, 3, 5], [10, 20, 30])
    assert list(a) == [2, 6, 10]
    assert list(b) == [0, 2, 6, 15]
    assert list(c) == [11, 22, 33]
    assert list(d) == [10, 7, 4, 1]


def test_comprehension_filter_guards_the_element():
    got = run("""
        @ps.entry
        def f(xs: ps.Array[ps.i64], n: int) -> ps.Array[ps.i64]:
            return [xs[i] for i in range(n) if i < len(xs)]
        """, "f", [4, 5], 5)
    assert list(got) == [4, 5]


def test_nested_comprehension_is_2d():
    got = run("""
        @ps.entry
        def f(n: int) -> ps.Array[ps.Array[int]]:
            return [[i * 10 + j for j in range(n)] for i in range(n)]
        """, "f", 2)
    assert got.tolist() == [[0, 1], [10, 11]]


def test_two_for_clauses_rejected():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
            return [x * y for x in xs for y in xs]  # <-
        """, contains="two 'for' clauses")


def test_lambda_capture_and_named_functions_as_prelude_arguments():
    got = run("""
        def sq(x: ps.f64) -> ps.f64:
            return x * x
        @ps.entry
        def f(xs: ps.Array[ps.f64], k: ps.f64) -> ps.Array[ps.f64]:
            return ps.map(lambda x: sq(x) + k, xs)
        """, "f", [1.0, 2.0], 0.5)
    assert list(got) == [1.5, 4.5]


def test_every_let_has_a_location():
    prog = compile_src("""
        @ps.entry
        def f(xs: ps.Array[ps.f64]) -> ps.f64:
            s = 0.0
            for x in xs:
                s = s + x * 2.0
            return s
        """)
    def walk(body):
        for stm in body.stms:
            assert stm.loc is not None and stm.loc.line > 0, stm
            e = stm.exp
            for attr in ("then_body", "else_body", "body"):
                sub = getattr(e, attr, None)
                if sub is not None and hasattr(sub, "stms"):
                    walk(sub)
    walk(prog.functions["f"].body)
