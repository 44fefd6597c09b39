"""The core IR type checker: accepts well-typed IR, rejects each kind of bad IR
with a message naming the function, the statement and its location."""
import dataclasses

import numpy as np
import pytest

from coreir_build import (BOOL, F32, F64, I32, I64, U8, B, Ctx, LOC, c, arr, fun, ir,
                          prog)
from pyshark.core.check import check_fundef, check_program
from pyshark.core.types import SArray, SRecord, SScalar, STuple
from pyshark.errors import InternalCompilerError

A64 = arr(I64)
V = ir.Var


def bad(fn, types, match, extra=()):
    p = prog(fun("f", types, fn), *extra)
    with pytest.raises(InternalCompilerError, match=match) as ex:
        check_program(p)
    return str(ex.value)


def ok(fn, types, extra=()):
    check_program(prog(fun("f", types, fn), *extra))


def raw(b, pat, exp):
    """Appends a Let with a hand-written pattern (no exp_types)."""
    b.stms.append(ir.Let(tuple(pat), exp, LOC))
    return pat[0] if len(pat) == 1 else tuple(pat)


def test_message_names_function_statement_and_loc():
    msg = bad(lambda b, x: b.bin("add", x, V("nope_9", I64)), [I64], "not bound")
    assert "function 'f'" in msg
    assert "let (t_2: i64) = x_1 + nope_9" in msg
    assert "at prog.py:7:5" in msg


def test_good_program_with_everything_is_accepted():
    def f(b, xs, n):
        k = b.bin("mul", n, c(2))
        lam = b.lam([I64], lambda s, x: s.bin("add", x, k))      # k is free
        ys = b.let(ir.Map(b.size(xs), lam, (xs,)))
        ctx = b.ctx
        acc, i = ctx.fresh("acc", A64), ctx.fresh("i", I64)

        def body(s):
            j = s.bin("mod", i, s.size(acc))
            cond = s.bin("gt", j, c(0))
            then = s.block(lambda t: t.let(ir.Update(acc, (j,), c(1))))
            return s.let(ir.If(cond, then, s.block(lambda t: acc), (A64,)))
        ys2 = b.let(ir.Copy(ys))
        zs = b.let(ir.Loop((acc,), (ys2,), ir.ForLoop(i, n), b.block(body)))
        total = b.let(ir.Reduce(b.size(zs), b.lam([I64, I64], lambda s, a, x: s.bin("add", a, x)),
                                (c(0),), (zs,), True))
        b.let(ir.Assert(b.bin("ge", total, c(0)), "negative", "AssertionError"))
        return (zs, total)
    ok(f, [A64, I64])


def test_unbound_and_wrongly_typed_vars():
    bad(lambda b, x: b.let(ir.AtomExp(V("x_1", I32))), [I64], "used with type i32 but bound with type i64")
    bad(lambda b, x: (V("zz", I64),), [I64], "zz is not bound")

    def f(b, x):                                   # a name bound in a branch, used after
        then = b.block(lambda s: s.bin("add", x, c(1)))
        b.let(ir.If(c(True, BOOL), then, b.block(lambda s: x), (I64,)))
        return b.bin("add", then.stms[0].pat[0], c(1))
    bad(f, [I64], "is not bound")


def test_lambda_free_variable_must_be_in_scope():
    def f(b, xs):
        later = V("later_99", I64)
        lam = b.lam([I64], lambda s, x: s.bin("add", x, later))
        r = b.let(ir.Map(b.size(xs), lam, (xs,)))
        raw(b, [later], ir.AtomExp(c(1)))
        return r
    bad(f, [A64], "later_99 is not bound")


def test_ssa_names_bound_once():
    def f(b, x):
        raw(b, [V("y", I64)], ir.AtomExp(x))
        return raw(b, [V("y", I64)], ir.AtomExp(x))
    bad(f, [I64], "bound more than once")

    def g(b, xs):                                  # the same lambda used twice
        lam = b.lam([I64], lambda s, x: s.bin("add", x, c(1)))
        b.let(ir.Map(b.size(xs), lam, (xs,)))
        return b.let(ir.Map(b.size(xs), lam, (xs,)))
    bad(g, [A64], "bound more than once")


def test_pattern_must_match_exp_types():
    bad(lambda b, x: raw(b, [V("y", I32)], ir.BinOp("add", x, x)), [I64],
        r"pattern has types \(i32\) but the expression gives \(i64\)")


@pytest.mark.parametrize("op,t,match", [
    ("add", BOOL, "not defined on bool"), ("div", I64, "not defined on i64"),
    ("shl", F32, "not defined on f32"), ("land", I32, "not defined on i32"),
    ("atan2", I32, "not defined"), ("frob", I64, "unknown binary operator"),
])
def test_binop_rules(op, t, match):
    bad(lambda b, x: b.let(ir.BinOp(op, x, x), types=(t,)), [t], match)


def test_binop_operands_of_one_type():
    bad(lambda b, x, y: b.let(ir.BinOp("add", x, y)), [I32, I64], "different types i32 and i64")


@pytest.mark.parametrize("op,t", [("sqrt", I64), ("not", I32), ("bnot", F64), ("neg", BOOL),
                                  ("isnan", I32)])
def test_unop_rules(op, t):
    bad(lambda b, x: b.let(ir.UnOp(op, x), types=(BOOL if op == "isnan" else t,)), [t],
        "not defined")


def test_constants_checked():
    bad(lambda b: b.let(ir.AtomExp(c(300, U8))), [], "out of range for u8")
    bad(lambda b: b.let(ir.AtomExp(c(1.5, I32))), [], "not an int")


def test_select_and_if_rules():
    bad(lambda b, x: b.let(ir.Select(x, x, x)), [I64], "select condition .* expected bool")
    bad(lambda b, x, y: b.let(ir.Select(c(True, BOOL), x, y)), [I64, I32], "different types")
    bad(lambda b, x: b.let(ir.If(x, b.block(lambda s: x), b.block(lambda s: x), (I64,))),
        [I64], "if condition")
    bad(lambda b, x: b.let(ir.If(c(True, BOOL), b.block(lambda s: x),
                                 b.block(lambda s: c(1.0, F64)), (I64,))),
        [I64], r"else branch returns \(f64\) but \(i64\)")


def test_loop_rules():
    ctx = Ctx()

    def mk(init, bound_t=I64, idx_t=I64, res=None):
        def f(b, x):
            acc, i = b.ctx.fresh("acc", I64), b.ctx.fresh("i", idx_t)
            bound = b.let(ir.AtomExp(c(3, bound_t)))
            body = b.block(lambda s: res if res is not None else s.bin("add", acc, c(1)))
            return b.let(ir.Loop((acc,), (init(x),), ir.ForLoop(i, bound), body))
        return f
    bad(mk(lambda x: c(0, I32)), [I64], "initialised with 0i32 of type i32")
    bad(mk(lambda x: c(0), bound_t=I32), [I64], "bound .* expected i64")
    bad(mk(lambda x: c(0), idx_t=I32), [I64], "index .* expected i64")
    bad(mk(lambda x: c(0), res=c(1.0, F32)), [I64], r"loop body returns \(f32\)")

    def w(b, x):
        acc = b.ctx.fresh("acc", I64)
        cond = b.block(lambda s: acc)
        return b.let(ir.Loop((acc,), (x,), ir.WhileLoop(cond), b.block(lambda s: acc)))
    bad(w, [I64], r"while condition returns \(i64\) but \(bool\)")


def test_array_rules():
    m = arr(I64, 2)
    bad(lambda b, xs: b.let(ir.Index(xs, (c(0), c(0), c(0))), types=(I64,)), [m], "3 indices")
    bad(lambda b, xs: b.let(ir.Index(xs, (c(1.0, F32),))), [A64], "expected an integer type")
    ok(lambda b, xs: b.let(ir.Index(xs, (c(1, U8),))), [A64])
    bad(lambda b, xs: b.let(ir.Size(xs, 2)), [m], "dimension 2")
    bad(lambda b, x: b.let(ir.Size(x)), [I64], "expected an array")
    bad(lambda b, xs: b.let(ir.Update(xs, (c(0),), c(1.0, F32))), [A64], "update value")
    bad(lambda b, xs: b.let(ir.Transpose(xs)), [A64], "transpose")
    bad(lambda b, x, y: b.let(ir.Concat((x, y))), [A64, arr(F32)], "different types")
    bad(lambda b, x: b.let(ir.ArrayLit((x, c(1.0, F64)), A64)), [I64], "array literal element")
    bad(lambda b, xs: b.let(ir.Slice(xs, (c(0), c(0))), types=(I64,)), [A64], "2 slice dimensions")


def test_call_rules():
    g = fun("g", [I64], lambda b, x: x)
    bad(lambda b, x: b.let(ir.Call("h", (x,), (I64,))), [I64], "unknown function 'h'")
    bad(lambda b, x: b.let(ir.Call("g", (c(1, I32),), (I64,))), [I64], "argument 0", extra=(g,))
    bad(lambda b, x: b.let(ir.Call("g", (x,), (F64,))), [I64], "g returns", extra=(g,))
    bad(lambda b, x: b.let(ir.Call("g", (), (I64,))), [I64], "takes 1 arguments", extra=(g,))
    ok(lambda b, x: b.let(ir.Call("g", (x,), (I64,))), [I64], extra=(g,))


def test_soac_lambda_rules():
    bad(lambda b, xs: b.let(ir.Map(b.size(xs), b.lam([F32], lambda s, x: x), (xs,))),
        [A64], "parameter 0 of the map lambda .* should have type i64")
    add = lambda s, a, x: s.bin("add", a, x)
    bad(lambda b, xs: b.let(ir.Reduce(b.size(xs), b.lam([I64], lambda s, a: a), (c(0),), (xs,))),
        [A64], "takes 1 parameters, expected 2")
    bad(lambda b, xs: b.let(ir.Reduce(b.size(xs), b.lam([I64, I64], add), (c(0, I32),), (xs,))),
        [A64], "neutral element 0 has type i32")
    bad(lambda b, xs: b.let(ir.Scan(b.size(xs), b.lam([I64, I64], lambda s, a, x: s.bin("lt", a, x)),
                                    (c(0),), (xs,))), [A64], "declares result")
    bad(lambda b, xs: b.let(ir.Filter(b.size(xs), b.lam([I64], lambda s, x: x), (xs,))),
        [A64], "filter predicate declares result")
    bad(lambda b, xs: b.let(ir.Map(c(1, F32), b.lam([I64], lambda s, x: x), (xs,))),
        [A64], "map width")


def test_scatter_and_rbi_rules():
    sc = lambda idx_t, val_t: (lambda b, d, i, v: b.let(ir.Scatter(b.size(i), (d,), i, (v,))))
    ok(sc(None, None), [A64, arr(I32), A64])
    bad(sc(None, None), [A64, arr(F32), A64], "1-D integer array")
    bad(sc(None, None), [A64, arr(I64, 2), A64], "1-D integer array")
    bad(sc(None, None), [A64, A64, arr(F64)], "value array")
    add = lambda s, a, x: s.bin("add", a, x)
    rbi = lambda b, d, i, v: b.let(ir.ReduceByIndex(b.size(i), (d,), b.lam([I64, I64], add),
                                                    (c(0),), i, (v,)))
    ok(rbi, [A64, A64, A64])
    bad(lambda b, d, i, v: b.let(ir.ReduceByIndex(b.size(i), (d,), b.lam([I64, I64], add),
                                                  (c(0.0, F64),), i, (v,))),
        [A64, A64, A64], "neutral element 0 has type f64")


def test_assert_rules():
    bad(lambda b, x: b.let(ir.Assert(c(True, BOOL), "m", "KeyError")), [I64], "unknown error kind")
    for kind in ("AssertionError", "IndexError", "ZeroDivisionError", "ShapeError", "ValueError"):
        ok(lambda b, x: b.let(ir.Assert(c(True, BOOL), "m", kind)) or x, [I64])
    assert "ValueError" in ir.ERROR_KINDS
    ok(lambda b, x: b.bin("power", x, x), [F32])
    bad(lambda b, x: b.bin("power", x, x), [BOOL], "power is not defined on bool")
    bad(lambda b, x: b.let(ir.Assert(x, "m")), [I64], "assert condition")


def test_entries():
    rec = SRecord("P", (("a", SScalar(F32)), ("b", SArray(SScalar(I64)))))
    good = fun("e", [F32, A64], lambda b, x, y: (y, x))
    e = ir.Entry("e", (ir.EntryParam("p", rec),), STuple((SArray(SScalar(I64)), SScalar(F32))))
    check_program(prog(good, entries=(e,)))
    wrong = fun("e", [A64, F32], lambda b, y, x: (y, x))
    with pytest.raises(InternalCompilerError, match="flattens its parameters"):
        check_program(prog(wrong, entries=(e,)))
    e2 = dataclasses.replace(e, ret=SArray(SScalar(I64)))
    with pytest.raises(InternalCompilerError, match="flattens its result"):
        check_program(prog(good, entries=(e2,)))
    with pytest.raises(InternalCompilerError, match="no FunDef"):
        check_program(prog(entries=(e,)))


# -- uniqueness ------------------------------------------------------------------

def test_use_after_update_is_reported():
    def f(b, xs):
        ys = b.let(ir.Copy(xs))
        b.let(ir.Update(ys, (c(0),), c(1)))
        return b.let(ir.Index(ys, (c(0),)))
    msg = bad(f, [A64], "used after being consumed")
    assert "with [0i64] = 1i64" in msg


def test_use_of_alias_after_update_is_reported():
    def f(b, xs):
        ys = b.let(ir.Copy(xs))
        zs = b.let(ir.AtomExp(ys))
        b.let(ir.Update(zs, (c(0),), c(1)))
        return ys
    bad(f, [A64], "t_2 is used after being consumed")


def test_update_of_parameter_is_reported():
    bad(lambda b, xs: b.let(ir.Update(xs, (c(0),), c(1))), [A64], "does not own")

    def f(b, xss):
        row = b.let(ir.Index(xss, (c(0),)))
        return b.let(ir.Update(row, (c(0),), c(1)))
    bad(f, [arr(I64, 2)], "aliases the parameter")


def test_loop_body_consuming_outer_array_is_reported():
    def f(b, xs):
        ys = b.let(ir.Copy(xs))
        acc, i = b.ctx.fresh("acc", I64), b.ctx.fresh("i", I64)

        def body(s):
            s.let(ir.Update(ys, (c(0),), c(1)))
            return acc
        return b.let(ir.Loop((acc,), (c(0),), ir.ForLoop(i, c(3)), b.block(body)))
    bad(f, [A64], "bound outside the loop")


def test_loop_consumes_its_init():
    def f(b, xs):
        ys = b.let(ir.Copy(xs))
        acc, i = b.ctx.fresh("acc", A64), b.ctx.fresh("i", I64)
        body = b.block(lambda s: s.let(ir.Update(acc, (i,), i)))
        r = b.let(ir.Loop((acc,), (ys,), ir.ForLoop(i, c(3)), body))
        return (r, b.let(ir.Index(ys, (c(0),))))
    bad(f, [A64], "t_2 is used after being consumed by `let .* = loop")


def test_lambda_consuming_is_reported():
    def f(b, xs):
        ys = b.let(ir.Copy(xs))
        lam = b.lam([I64], lambda s, x: s.let(ir.Update(ys, (c(0),), x)))
        return b.let(ir.Map(b.size(xs), lam, (xs,)))
    bad(f, [A64], "map lambda consumes t_2, which it does not own")


def test_update_in_branch_then_use_of_if_result_is_fine():
    def f(b, xs, cnd):
        ys = b.let(ir.Copy(xs))
        then = b.block(lambda s: s.let(ir.Update(ys, (c(0),), c(9))))
        r = b.let(ir.If(cnd, then, b.block(lambda s: ys), (A64,)))
        return b.let(ir.Update(r, (c(1),), c(2)))
    ok(f, [A64, BOOL])


def test_check_fundef_alone():
    check_fundef(fun("g", [I64], lambda b, x: b.bin("add", x, c(1))))
