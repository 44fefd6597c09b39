"""cse: repeated pure expressions computed once, outer values reused inside
nested bodies, never the other way round."""
from __future__ import annotations

from opt_build import (BOOL, F64, I64, B, all_stms, arr, c, check_same, fun, ir, np, prog,
                       stms)
from pyshark.codegen.opt.cse import cse


def _cse(f: ir.FunDef):
    p = prog(f)
    q = cse(p)
    return p, q, q.functions[f.name]


def test_repeated_expressions_are_computed_once():
    def body(b: B, x, y, xs):
        a = b.bin("add", x, y)
        a2 = b.bin("add", y, x)                       # commutative: the same
        d = b.bin("sub", x, y)
        d2 = b.bin("sub", y, x)                       # not the same
        e = b.let(ir.Index(xs, (a,)))
        e2 = b.let(ir.Index(xs, (a2,)))               # now the same index
        n, n2 = b.size(xs), b.size(xs)
        return b.bin("add", b.bin("add", e, e2), b.bin("add", n, n2)), d, d2
    p, q, g = _cse(fun("f", [I64, I64, arr(I64)], body))
    ops = [s.exp.op for s in stms(g, ir.BinOp)]
    assert ops.count("sub") == 2 and ops.count("add") == 4     # a2 merged into a
    assert len(stms(g, ir.Index)) == 1 and len(stms(g, ir.Size)) == 1
    for x, y in ((0, 1), (2, 5), (-3, 3)):
        check_same(p, q, "f", [np.int64(x), np.int64(y), np.arange(4)])


def test_constants_compare_bit_for_bit():
    def body(b: B, x):
        a = b.bin("add", x, ir.Const(0.0, F64))
        a2 = b.bin("add", x, ir.Const(-0.0, F64))     # differs for x == -0.0
        m = b.bin("min", x, ir.Const(1.0, F64))
        m2 = b.bin("min", ir.Const(1.0, F64), x)      # float min is not commutative (NaN)
        return a, a2, m, m2
    p, q, g = _cse(fun("f", [F64], body))
    assert len(g.body.stms) == 4
    check_same(p, q, "f", [np.float64(-0.0)], [np.float64(np.nan)])


def test_nested_bodies_reuse_outer_values_not_the_reverse():
    def body(b: B, xs, k):
        k2 = b.bin("mul", k, k)
        n = b.size(xs)

        def lam(sb, x):
            kk = sb.bin("mul", k, k)                  # reuses k2
            return sb.bin("add", kk, sb.bin("mul", x, x))
        ys = b.let(ir.Map(n, b.lam([I64], lam), (xs,)), "map")
        cond = b.bin("gt", k, c(0))
        then = b.block(lambda sb: sb.bin("add", k, c(1)))
        r = b.let(ir.If(cond, then, b.block(lambda sb: k), (I64,)))
        after = b.bin("add", k, c(1))                 # not dominated by the branch
        return ys, k2, r, after
    p, q, g = _cse(fun("f", [arr(I64), I64], body))
    (m,) = stms(g, ir.Map)
    assert all(s.exp.op != "mul" or s.exp.x != g.params[1] for s in m.exp.lam.body.stms)
    assert len([s for s in stms(g, ir.BinOp) if s.exp.op == "add"]) == 1
    check_same(p, q, "f", [np.arange(3), np.int64(2)], [np.arange(3), np.int64(-2)])


def test_fresh_arrays_are_merged_only_when_not_updated():
    def body(b: B, n):
        r1 = b.let(ir.Replicate(n, c(0)), "rep")
        r2 = b.let(ir.Replicate(n, c(0)), "rep")      # merged with r1
        i1 = b.let(ir.Iota(n), "iota")
        i2 = b.let(ir.Iota(n), "iota")                # i2 is updated: kept apart
        u = b.let(ir.Update(i2, (c(0),), c(7)), "upd")
        cp1 = b.let(ir.Copy(r1), "cp")
        cp2 = b.let(ir.Copy(r1), "cp")                # copies are never merged
        return r1, r2, i1, u, cp1, cp2
    p, q, g = _cse(fun("f", [I64], body))
    assert len(stms(g, ir.Replicate)) == 1
    assert len(stms(g, ir.Iota)) == 2 and len(stms(g, ir.Copy)) == 2
    check_same(p, q, "f", [np.int64(3)])


def test_duplicate_asserts_go():
    def body(b: B, x):
        ok = b.bin("gt", x, c(0))
        b.let(ir.Assert(ok, "positive", "AssertionError"))
        ok2 = b.bin("gt", x, c(0))
        b.let(ir.Assert(ok2, "positive", "AssertionError"))
        return x
    p, q, g = _cse(fun("f", [I64], body))
    assert len(stms(g, ir.Assert)) == 1 and len(stms(g, ir.BinOp)) == 1
    check_same(p, q, "f", [np.int64(1)], [np.int64(0)])


def test_soacs_and_loops_are_left_alone():
    def body(b: B, xs):
        n = b.size(xs)
        lam = b.lam([I64], lambda sb, x: sb.bin("add", x, c(1)))
        a = b.let(ir.Map(n, lam, (xs,)), "map")
        lam2 = b.lam([I64], lambda sb, x: sb.bin("add", x, c(1)))
        a2 = b.let(ir.Map(n, lam2, (xs,)), "map")
        return a, a2
    p, q, g = _cse(fun("f", [arr(I64)], body))
    assert len(all_stms(g, ir.Map)) == 2
    check_same(p, q, "f", [np.arange(3)])


def test_unchanged_function_is_returned_as_is():
    f = fun("f", [I64, BOOL], lambda b, x, y: b.let(ir.Select(y, x, c(0))))
    assert cse(prog(f)).functions["f"] is f
