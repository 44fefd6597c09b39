"""inline: every call replaced by the callee's body, names kept unique."""
from __future__ import annotations

import pytest

from opt_build import (I64, F64, B, Ctx, SArray, SScalar, all_stms, arr, c, check_program,
                       check_same, entry_for, fun, ir, np, prog)
from pyshark.codegen.opt.inline import inline
from pyshark.codegen.opt.rewrite import fundef_names
from pyshark.errors import InternalCompilerError


def _g():
    # g(x) = x * 2 + 1
    def body(b: B, x):
        t = b.bin("mul", x, c(2))
        return b.bin("add", t, c(1))
    return fun("g", [I64], body)


def _call(b: B, name, *args, ret=(I64,)):
    return b.let(ir.Call(name, tuple(args), tuple(ret)), "call")


def test_calls_in_lambdas_are_inlined_and_helpers_dropped():
    def body(b: B, xs):
        n = b.size(xs)
        lam = b.lam([I64], lambda sb, x: _call(sb, "g", x))
        return b.let(ir.Map(n, lam, (xs,)), "map")
    f = fun("f", [arr(I64)], body)
    p = prog(f, _g(), entries=[entry_for(f, SArray(SScalar(I64)), ret=SArray(SScalar(I64)))])
    q = inline(p)
    assert set(q.functions) == {"f"}
    assert not all_stms(q.functions["f"], ir.Call)
    check_same(p, q, "f", [np.array([1, 2, -3])], [np.zeros(0, np.int64)])


def test_two_calls_of_one_function_get_distinct_names():
    def body(b: B, x):
        y = b.bin("add", x, c(1))
        return b.bin("sub", _call(b, "g", x), _call(b, "g", y))
    p = prog(fun("f", [I64], body), _g())
    q = inline(p)
    f = q.functions["f"]
    assert not all_stms(f, ir.Call)
    names = [v.name for s in all_stms(f) for v in s.pat] + [v.name for v in f.params]
    assert len(names) == len(set(names))
    check_same(p, q, "f", [np.int64(5)], [np.int64(-7)])


def test_call_chains_are_inlined_bottom_up():
    def k(b: B, x):
        return b.bin("mul", x, x)

    def h(b: B, x):
        return _call(b, "k", b.bin("add", x, c(3)))

    def f(b: B, x):
        return b.bin("add", _call(b, "h", x), _call(b, "k", x))
    p = prog(fun("f", [I64], f), fun("h", [I64], h), fun("k", [I64], k))
    q = inline(p)
    # no entries: every FunDef is kept, each free of calls
    assert set(q.functions) == {"f", "h", "k"}
    for fd in q.functions.values():
        assert not all_stms(fd, ir.Call)
    check_same(p, q, "f", [np.int64(4)])
    check_same(p, q, "h", [np.int64(4)])


def test_input_program_is_not_changed():
    def body(b: B, x):
        return _call(b, "g", x)
    f = fun("f", [I64], body)
    g = _g()
    p = prog(f, g)
    inline(p)
    assert p.functions == {"f": f, "g": g}
    assert all_stms(p.functions["f"], ir.Call)


def test_fresh_names_do_not_clash_with_the_callers():
    ctx = Ctx()
    f = fun("f", [I64], lambda b, x: _call(b, "g", b.bin("add", x, c(1))), ctx=ctx)
    g = fun("g", [I64], lambda b, x: b.bin("mul", x, x), ctx=ctx)   # shares f's counter
    q = inline(prog(f, g))
    fd = q.functions["f"]
    assert fundef_names(fd) >= fundef_names(f)
    check_program(q)


def test_result_aliasing_an_argument_is_copied_when_the_caller_updates_it():
    # ident(xs) = xs; f(xs) = let zs = copy xs; ys = ident(zs); ys[0] = 9 in (ys, zs)
    ident = fun("ident", [arr(F64)], lambda b, xs: xs)

    def body(b: B, xs):
        zs = b.let(ir.Copy(xs), "zs")
        ys = b.let(ir.Call("ident", (zs,), (arr(F64),)), "ys")
        ys2 = b.let(ir.Update(ys, (c(0),), ir.Const(9.0, F64)), "ys")
        return ys2, zs
    p = prog(fun("f", [arr(F64)], body), ident)
    check_program(p)
    q = inline(p)
    f = q.functions["f"]
    assert len(all_stms(f, ir.Copy)) == 2
    check_same(p, q, "f", [np.array([1.0, 2.0])])


def test_result_not_updated_is_bound_without_a_copy():
    ident = fun("ident", [arr(F64)], lambda b, xs: xs)
    f = fun("f", [arr(F64)], lambda b, xs: b.let(ir.Call("ident", (xs,), (arr(F64),))))
    q = inline(prog(f, ident))
    assert [type(s.exp) for s in q.functions["f"].body.stms] == [ir.AtomExp]


def test_recursion_is_an_internal_error():
    f = fun("f", [I64], lambda b, x: _call(b, "f", x))
    with pytest.raises(InternalCompilerError, match="recursive"):
        inline(prog(f))


def test_one_array_returned_twice_is_copied_for_the_update():
    # twice(n) = let a = iota n in (a, a); f(n) = let (x, y) = twice(n); x[0] = 5 in (x, y)
    def twice(b: B, n):
        a = b.let(ir.Iota(n), "a")
        return a, a

    def body(b: B, n):
        x, y = b.let(ir.Call("twice", (n,), (arr(I64), arr(I64))), "r")
        return b.let(ir.Update(x, (c(0),), c(5)), "x"), y
    p = prog(fun("f", [I64], body), fun("twice", [I64], twice))
    check_program(p)
    q = inline(p)
    assert len(all_stms(q.functions["f"], ir.Copy)) == 1
    check_same(p, q, "f", [np.int64(3)])
