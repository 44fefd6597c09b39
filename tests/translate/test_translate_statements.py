"""Statements: if-merge, guard returns, loops with carried values, owned updates."""
from __future__ import annotations

import numpy as np
import pytest

from pyshark.errors import ShapeError
from translate_helpers import reject, run


def test_if_merges_names_bound_in_every_branch():
    src = """
        @ps.entry
        def f(x: ps.f64) -> ps.f64:
            if x < 0.0:
                y = -1.0
            elif x < 1.0:
                y = x * 2.0
            else:
                y = 10.0
            return y
        """
    assert run(src, "f", -3.0) == -1.0
    assert run(src, "f", 0.25) == 0.5
    assert run(src, "f", 5.0) == 10.0


def test_if_merges_tuples_bound_before():
    src = """
        @ps.entry
        def f(a: int, b: int) -> tuple[int, int]:
            lo, hi = a, b
            if a > b:
                lo, hi = b, a
            return (lo, hi)
        """
    assert run(src, "f", 5, 2) == [2, 5]
    assert run(src, "f", 1, 2) == [1, 2]


def test_name_bound_in_one_branch_is_unbound_after():
    reject("""
        @ps.entry
        def f(x: int) -> int:
            if x > 0:
                y = 1
            else:
                z = 2
            return z  # <-
        """, contains="'z' is bound only when the else branch runs")


def test_guard_clauses_return_early():
    src = """
        @ps.entry
        def f(x: int) -> int:
            if x < 0:
                return -1
            y = x * 2
            if y > 10:
                return 10
            return y
        """
    assert [run(src, "f", v) for v in (-5, 3, 8)] == [-1, 6, 10]


def test_guard_clause_inside_nested_if():
    src = """
        @ps.entry
        def f(x: int, y: int) -> int:
            if x > 0:
                if y > 0:
                    return 1
                z = 2
            else:
                z = 3
            return z
        """
    assert [run(src, "f", a, b) for a, b in ((1, 1), (1, -1), (-1, 0))] == [1, 2, 3]


def test_missing_return_path_located_at_def():
    reject("""
        @ps.entry
        def f(x: int) -> int:  # <-
            if x > 0:
                return 1
            elif x < 0:
                return -1
        """, contains="not every path of 'f' returns a value")


def test_return_inside_loop_rejected():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i64]) -> int:
            for x in xs:
                if x > 0:
                    return x  # <-
            return 0
        """, contains="'return' inside a loop")


def test_for_loop_carries_tuples():
    src = """
        @ps.entry
        def fib(n: int) -> int:
            a, b = 0, 1
            for _ in range(n):
                a, b = b, a + b
            return a
        """
    assert run(src, "fib", 10) == 55


@pytest.mark.parametrize("start,stop,step", [(0, 10, 3), (10, 0, -3), (5, 5, 1), (-4, 7, 2), (3, -8, -1)])
def test_range_with_step_counts_like_python(start, stop, step):
    src = """
        @ps.entry
        def f(a: int, b: int, s: int) -> tuple[int, int]:
            total = 0
            count = 0
            for i in range(a, b, s):
                total = total + i
                count = count + 1
            return (total, count)
        """
    r = range(start, stop, step)
    assert run(src, "f", start, stop, step) == [sum(r), len(r)]


def test_range_zero_step_at_run_time_raises_value_error():
    """Python's own class (range() arg 3 must not be zero), not ShapeError."""
    src = """
        @ps.entry
        def f(s: int) -> int:
            t = 0
            for i in range(0, 5, s):
                t = t + i
            return t

        @ps.entry
        def g(s: int) -> ps.Array[int]:
            return ps.array([i * 2 for i in range(0, 5, s)])
        """
    for entry in ("f", "g"):
        with pytest.raises(ValueError, match="must not be zero") as err:
            run(src, entry, 0)
        assert type(err.value) is ValueError
    assert run(src, "f", 2) == 6


def test_range_constant_zero_step_rejected():
    reject("""
        @ps.entry
        def f(n: int) -> int:
            t = 0
            for i in range(0, n, 0):  # <-
                t = t + i
            return t
        """, contains="must not be zero")


def test_while_loop_and_short_circuit_condition():
    src = """
        @ps.entry
        def f(xs: ps.Array[ps.f32], lim: ps.f32) -> int:
            i = 0
            while i < len(xs) and xs[i] <= lim:
                i = i + 1
            return i
        """
    assert run(src, "f", [1.0, 2.0, 3.0], 10.0) == 3
    assert run(src, "f", [1.0, 20.0, 3.0], 10.0) == 1


def test_enumerate_and_zip_loops():
    src = """
        @ps.entry
        def f(xs: ps.Array[ps.i64], ys: ps.Array[ps.i64]) -> tuple[int, int]:
            s = 0
            for i, x in enumerate(xs):
                s = s + i * x
            d = 0
            for x, y in zip(xs, ys):
                d = d + x * y
            return (s, d)
        """
    # zip stops at the shorter array, as Python's does
    assert run(src, "f", [1, 2, 3], [10, 20]) == [0 + 2 + 6, 10 + 40]


def test_name_first_bound_in_loop_is_local_to_it():
    reject("""
        @ps.entry
        def f(n: int) -> int:
            for i in range(n):
                k = i
            return k  # <-
        """, contains="bound only inside the loop body")


def test_nested_loops_with_if():
    src = """
        @ps.entry
        def inv(xs: ps.Array[ps.i32]) -> int:
            c = 0
            n = len(xs)
            for i in range(n):
                for j in range(i + 1, n):
                    if xs[i] > xs[j]:
                        c = c + 1
            return c
        """
    assert run(src, "inv", [3, 1, 2]) == 2


def test_owned_update_on_copy_and_2d():
    src = """
        @ps.entry
        def f(xs: ps.Array[ps.i64], n: int) -> tuple[ps.Array[ps.i64], ps.Array[ps.Array[ps.f32]]]:
            ys = ps.copy(xs)
            ys[0] = 7
            ys[-1] = ys[-1] * 2
            m = ps.replicate(n, ps.replicate(n, ps.f32(0.0)))
            for i in range(n):
                m[i, i] = 1.0
            return (ys, m)
        """
    ys, m = run(src, "f", [1, 2, 3], 2)
    assert list(ys) == [7, 2, 6]
    assert m.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_update_of_parameter_rejected():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
            xs[0] = 1  # <-
            return xs
        """, contains="in-place update of parameter 'xs'")


def test_update_while_alias_live_rejected_but_dead_alias_ok():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
            ys = ps.copy(xs)
            zs = ys
            ys[0] = 1  # <-
            return zs
        """, contains="while 'zs' still aliases it")
    got = run("""
        @ps.entry
        def f(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
            ys = ps.copy(xs)
            zs = ys
            zs[0] = 5
            return zs
        """, "f", [1, 2])
    assert list(got) == [5, 2]


def test_alias_used_in_enclosing_loop_counts_as_live():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i64]) -> int:
            ys = ps.copy(xs)
            t = 0
            for i in range(len(xs)):
                t = t + ys[0]
                zs = ys
                zs[i] = 1  # <-
            return t
        """, contains="still aliases")


def test_update_of_a_row_view_rejected():
    reject("""
        @ps.entry
        def f(n: int) -> ps.Array[ps.i64]:
            m = ps.replicate(n, ps.replicate(n, 0))
            row = m[0]
            row[0] = 1  # <-
            return row
        """, contains="does not own")


def test_chained_index_update_rejected():
    reject("""
        @ps.entry
        def f(n: int) -> ps.Array[ps.Array[ps.i64]]:
            m = ps.replicate(n, ps.replicate(n, 0))
            m[0][0] = 1  # <-
            return m
        """, contains="xss[i, j] = v")


def test_update_in_branches_and_while():
    src = """
        @ps.entry
        def sieve(n: int) -> ps.Array[bool]:
            p = ps.replicate(n, True)
            if n > 0:
                p[0] = False
            if n > 1:
                p[1] = False
            k = 2
            while k * k < n:
                if p[k]:
                    m = k * k
                    while m < n:
                        p[m] = False
                        m = m + k
                k = k + 1
            return p
        """
    got = run(src, "sieve", 10)
    assert [i for i, v in enumerate(got) if v] == [2, 3, 5, 7]


def test_local_def_captures_with_late_binding():
    got = run("""
        @ps.entry
        def f(xs: ps.Array[ps.f64], a: ps.f64) -> ps.Array[ps.f64]:
            b = a * 2.0
            def g(x: ps.f64) -> ps.f64:
                if x > 0.0:
                    return x * b
                return x
            return ps.map(g, xs)
        """, "f", [1.0, -1.0], 1.5)
    assert list(got) == [3.0, -1.0]
    got = run("""
        @ps.entry
        def f(xs: ps.Array[ps.f64], a: ps.f64) -> ps.Array[ps.f64]:
            b = a * 2.0
            def g(x: ps.f64) -> ps.f64:
                return x * b
            b = 1.0
            return ps.map(g, xs)
        """, "f", [1.0, -1.0], 1.5)
    assert list(got) == [1.0, -1.0]         # g sees b = 1.0 where it is used


def test_assert_raises_assertion_error():
    src = """
        @ps.entry
        def f(x: int) -> int:
            assert x >= 0, "x must be non-negative"
            return x
        """
    assert run(src, "f", 3) == 3
    with pytest.raises(AssertionError):
        run(src, "f", -1)


def test_annotated_local_assignment_is_strict():
    got = run("""
        @ps.entry
        def f(x: ps.i32) -> ps.i32:
            y: ps.i32 = x + 1
            return y
        """, "f", 1)
    assert got == 2 and got.dtype == np.int32


def test_array_rebound_in_loop_stays_owned_and_updates():
    got = run("""
        @ps.entry
        def f(xs: ps.Array[ps.i64], n: int) -> ps.Array[ps.i64]:
            ys = ps.copy(xs)
            for k in range(n):
                ys = ps.map(lambda v: v + 1, ys)
                ys[0] = 0
            return ys
        """, "f", [5, 6], 2)
    assert list(got) == [0, 8]


def test_carried_array_that_becomes_a_parameter_cannot_be_updated():
    reject("""
        @ps.entry
        def f(xs: ps.Array[ps.i64], n: int) -> ps.Array[ps.i64]:
            ys = ps.copy(xs)
            for k in range(n):
                ys[0] = 1  # <-
                ys = xs
            return ys
        """, contains="does not own")


def test_loop_over_rows_and_local_def_in_loop():
    src = """
        @ps.entry
        def f(m: ps.Array[ps.Array[ps.i64]]) -> tuple[int, ps.Array[ps.i64]]:
            t = 0
            for row in m:
                for v in row:
                    t = t + v
            ys = ps.copy(m[0])
            for i in range(len(ys)):
                def g(v: int) -> int:
                    return v + i
                ys[i] = g(ys[i])
            return (t, ys)
        """
    t, ys = run(src, "f", [[1, 2], [3, 4]])
    assert t == 10 and list(ys) == [1, 3]
