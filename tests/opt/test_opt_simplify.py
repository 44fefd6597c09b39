"""simplify: copy propagation, constant folding, dead code, facts from sizes,
assertions and branches."""
from __future__ import annotations

import math

import pytest

from opt_build import (BOOL, F32, F64, I8, I32, I64, U8, B, all_stms, arr, c, check_same,
                       fun, ir, np, prog, run_function, stms)
from pyshark.codegen.opt.simplify import fold_const, simplify


def _simp(f: ir.FunDef):
    p = prog(f)
    q = simplify(p)
    return p, q, q.functions[f.name]


def test_copy_propagation():
    def body(b: B, x):
        y = b.let(ir.AtomExp(x), "y")
        z = b.let(ir.AtomExp(y), "z")
        return b.bin("add", z, c(1))
    p, q, f = _simp(fun("f", [I64], body))
    (s,) = f.body.stms
    assert s.exp == ir.BinOp("add", f.params[0], c(1))
    check_same(p, q, "f", [np.int64(41)])


def test_copy_propagation_reaches_nested_bodies_and_results():
    def body(b: B, xs, k):
        k2 = b.let(ir.AtomExp(k), "k")
        n = b.size(xs)
        lam = b.lam([I64], lambda sb, x: sb.bin("mul", x, k2))
        ys = b.let(ir.Map(n, lam, (xs,)), "map")
        return b.let(ir.AtomExp(ys), "alias")
    p, q, f = _simp(fun("f", [arr(I64), I64], body))
    assert not all_stms(f, ir.AtomExp)
    (m,) = stms(f, ir.Map)
    assert f.body.result == m.pat
    assert m.exp.lam.body.stms[0].exp.y == f.params[1]
    check_same(p, q, "f", [np.array([1, 2]), np.int64(3)])


FOLDS = [
    ("add", 127, 1, I8), ("mul", 200, 2, U8), ("sub", -(2**63), 1, I64),
    ("floordiv", -7, 2, I64), ("mod", -7, 2, I64), ("mod", 7, -2, I32),
    ("floordiv", -7.5, 2.0, F64), ("mod", -1.0, 3.0, F32), ("div", 1.0, 0.0, F64),
    ("div", 0.0, 0.0, F64), ("pow", 3, 41, I64), ("pow", 2.0, 0.5, F32),
    ("shr", -16, 2, I32), ("shl", 1, 7, I8), ("band", 12, 10, U8), ("bxor", True, True, BOOL),
    ("min", math.nan, 1.0, F64), ("max", -0.0, 0.0, F64), ("atan2", 1.0, -1.0, F32),
    ("lt", 1, 2, I64), ("eq", math.nan, math.nan, F64), ("ge", 3.0, 3.0, F32),
    ("land", True, False, BOOL), ("lor", False, True, BOOL),
]


@pytest.mark.parametrize("op,x,y,t", FOLDS)
def test_binop_folds_exactly_as_the_interpreter_computes(op, x, y, t):
    f = fun("f", [], lambda b: b.bin(op, ir.Const(x, t), ir.Const(y, t)))
    p, q, g = _simp(f)
    assert not g.body.stms
    (r,) = g.body.result
    assert isinstance(r, ir.Const)
    check_same(p, q, "f", [])


UNFOLDS = [("add", 1.0, math.inf), ("sqrt", -1.0, None), ("neg", 0.0, None),
           ("abs", -128, I8), ("neg", 1, U8), ("round", 2.5, None), ("sign", -3, I32),
           ("isnan", math.nan, None), ("not", True, BOOL), ("bnot", 5, U8), ("log", 0.0, None)]


@pytest.mark.parametrize("op,x,t", [(o, x, t) for o, x, t in UNFOLDS if o != "add"])
def test_unop_folds(op, x, t):
    t = t or F64
    p, q, g = _simp(fun("f", [], lambda b: b.un(op, ir.Const(x, t))))
    assert not g.body.stms and isinstance(g.body.result[0], ir.Const)
    check_same(p, q, "f", [])


@pytest.mark.parametrize("x,src,dst", [(300, I64, U8), (-1, I32, U8), (2.9, F64, I32),
                                        (-2.9, F32, I8), (1e300, F64, F32), (0.0, F64, BOOL),
                                        (-0.0, F64, F32), (True, BOOL, F64)])
def test_convert_folds(x, src, dst):
    p, q, g = _simp(fun("f", [], lambda b: b.let(ir.Convert(dst, ir.Const(x, src)))))
    assert not g.body.stms and g.body.result[0].type == dst
    check_same(p, q, "f", [])


@pytest.mark.parametrize("exp", [
    ir.BinOp("floordiv", c(7), c(0)), ir.BinOp("mod", c(7), c(0)),
    ir.BinOp("pow", c(2), c(-1)), ir.BinOp("shl", c(1), c(64)), ir.BinOp("shr", c(1), c(-1)),
    ir.Convert(I32, ir.Const(math.nan, F64)), ir.Convert(I32, ir.Const(1e10, F64)),
    ir.Convert(I64, ir.Const(-math.inf, F32)),
])
def test_no_folding_of_what_raises_or_is_undefined(exp):
    assert fold_const(exp) is None
    p, q, g = _simp(fun("f", [], lambda b: b.let(exp)))
    assert [s.exp for s in g.body.stms] == [exp]
    check_same(p, q, "f", [])


def test_folding_cascades_and_selects_fold():
    def body(b: B, x):
        t = b.bin("add", c(2), c(3))
        u = b.bin("mul", t, c(4))
        cond = b.bin("gt", u, c(10))
        return b.let(ir.Select(cond, x, c(0)))
    p, q, g = _simp(fun("f", [I64], body))
    assert not g.body.stms and g.body.result == (g.params[0],)
    check_same(p, q, "f", [np.int64(9)])


def test_identities_on_integers_only():
    def body(b: B, i, x):
        a = b.bin("add", i, c(0))
        m = b.bin("mul", c(1), a)
        e = b.bin("le", m, m)
        fx = b.bin("add", x, ir.Const(0.0, F64))     # -0.0 + 0.0 is 0.0: kept
        fe = b.bin("eq", fx, fx)                     # NaN != NaN: kept
        return m, e, fe
    p, q, g = _simp(fun("f", [I64, F64], body))
    assert g.body.result[0] == g.params[0]
    assert g.body.result[1] == ir.Const(True, BOOL)
    assert [s.exp.op for s in g.body.stms] == ["add", "eq"]
    check_same(p, q, "f", [np.int64(3), np.float64(-0.0)], [np.int64(3), np.float64(np.nan)])


def test_dead_code_keeps_what_may_raise():
    def body(b: B, x, xs, d):
        b.bin("add", x, c(1))                         # pure: dropped
        b.bin("floordiv", x, c(2))                    # divisor not zero: dropped
        b.bin("floordiv", x, d)                       # may divide by zero: kept
        b.bin("pow", x, d)                            # may be a negative power: kept
        b.let(ir.Index(xs, (x,)), "elem")             # may be out of range: kept
        b.let(ir.Iota(x), "iota")                     # never raises: dropped
        b.let(ir.Slice(xs, (ir.SliceDim(x, None, c(2)),)), "sl")   # dropped
        b.let(ir.Slice(xs, (ir.SliceDim(None, None, d),)), "sl")   # step may be 0: kept
        return x
    p, q, g = _simp(fun("f", [I64, arr(I64), I64], body))
    kept = [type(s.exp).__name__ + getattr(s.exp, "op", "") for s in g.body.stms]
    assert kept == ["BinOpfloordiv", "BinOppow", "Index", "Slice"]
    for args in ([5, [1, 2, 3], 0], [1, [1, 2], 1], [-1, [1], -1], [7, [1], 2]):
        check_same(p, q, "f", [np.int64(args[0]), np.array(args[1]), np.int64(args[2])])


def test_dead_code_keeps_an_integer_power_that_may_raise():
    def body(b: B, x, d):
        b.bin("power", x, d)                          # ps.pow(x, d): may be a negative power
        return x
    p, q, g = _simp(fun("f", [I64, I64], body))
    assert [s.exp.op for s in g.body.stms] == ["power"]
    check_same(p, q, "f", [np.int64(2), np.int64(-1)])


def _map(b: B, n, xs, fn, types=(I64,)):
    return b.let(ir.Map(n, b.lam(list(types), fn), tuple(xs)), "map")


def test_unused_soacs_are_dropped_only_when_they_cannot_raise():
    def body(b: B, xs, ys, n):
        m = b.size(xs)
        _map(b, m, [xs], lambda sb, x: sb.bin("add", x, c(1)))            # dropped
        red = b.lam([I64, I64], lambda sb, a, x: sb.bin("add", a, x))
        b.let(ir.Reduce(m, red, (c(0),), (xs,)), "red")                   # dropped
        _map(b, n, [ys], lambda sb, x: sb.bin("add", x, c(1)))            # width unknown
        _map(b, m, [xs], lambda sb, x: sb.let(ir.Index(ys, (x,))))        # may index out
        _map(b, m, [xs], lambda sb, x: sb.let(ir.Iota(x)))                # irregular rows
        return m
    p, q, g = _simp(fun("f", [arr(I64), arr(I64), I64], body))
    assert len(stms(g, ir.Map)) == 3 and not stms(g, ir.Reduce)
    for xs, ys, n in (([0, 1], [5, 6], 2), ([0, 1], [5], 2), ([1, 1], [1, 2, 3], 3),
                      ([], [], 0), ([0], [1, 2], 1)):
        check_same(p, q, "f", [np.array(xs, np.int64), np.array(ys, np.int64), np.int64(n)])


def test_unused_results_of_a_map_and_an_if_are_removed():
    def body(b: B, xs, k):
        n = b.size(xs)

        def lam(sb, x):
            return sb.bin("add", x, c(1)), sb.bin("mul", x, c(2)), sb.bin("sub", x, k)
        r = b.let(ir.Map(n, b.lam([I64], lam), (xs,)), "map")

        def br(sb, v):
            return sb.bin("add", k, c(v)), sb.let(ir.Index(xs, (k,)))
        cond = b.bin("gt", k, c(0))
        i = b.let(ir.If(cond, b.block(br, 1), b.block(br, 2), (I64, I64)), "if")
        return r[1], i[0]
    p, q, g = _simp(fun("f", [arr(I64), I64], body))
    (m,) = stms(g, ir.Map)
    assert len(m.pat) == 1 and len(m.exp.lam.body.stms) == 1
    (i,) = stms(g, ir.If)
    assert len(i.pat) == 1 and len(i.exp.ret) == 1
    assert i.exp.then_body.stms[-1].exp.__class__ is ir.Index      # may raise: kept
    for k in (0, 1, 5):
        check_same(p, q, "f", [np.array([3, 4]), np.int64(k)])


def test_if_on_a_constant_is_the_branch_taken():
    def body(b: B, x):
        cond = b.bin("lt", c(1), c(2))
        then = b.block(lambda sb: sb.bin("mul", x, c(3)))
        other = b.block(lambda sb: sb.bin("floordiv", x, c(0)))
        return b.let(ir.If(cond, then, other, (I64,)))
    p, q, g = _simp(fun("f", [I64], body))
    assert [s.exp for s in g.body.stms] == [ir.BinOp("mul", g.params[0], c(3))]
    check_same(p, q, "f", [np.int64(5)])


def test_if_computing_nothing_becomes_selects_and_knows_its_condition():
    def body(b: B, cond, x, y):
        r = b.let(ir.If(cond, b.block(lambda sb: (x, cond)), b.block(lambda sb: (y, cond)),
                        (I64, BOOL)))
        same = b.let(ir.If(cond, b.block(lambda sb: x), b.block(lambda sb: x), (I64,)))
        return r[0], r[1], same
    p, q, g = _simp(fun("f", [BOOL, I64, I64], body))
    assert [type(s.exp) for s in g.body.stms] == [ir.Select]
    assert g.body.result[1:] == (g.params[0], g.params[1])
    for cond in (True, False):
        check_same(p, q, "f", [np.bool_(cond), np.int64(1), np.int64(2)])


def test_sizes_become_known_lengths_and_equal_sizes_one_name():
    def body(b: B, xs, ys):
        n = b.size(xs)
        m = b.size(ys)
        same = b.bin("eq", n, m)
        b.let(ir.Assert(same, "differ", "ShapeError"))
        ok = b.bin("ge", n, c(0))                         # a size is >= 0: true
        b.let(ir.Assert(ok, "negative", "ShapeError"))    # assert(true): dropped
        zs = _map(b, n, [xs, ys], lambda sb, x, y: sb.bin("add", x, y), (I64, I64))
        k = b.size(zs)
        return b.bin("add", k, m)
    p, q, g = _simp(fun("f", [arr(I64), arr(I64)], body))
    n = g.body.stms[0].pat[0]
    assert len(stms(g, ir.Assert)) == 1 and not stms(g, ir.Map)   # the map cannot raise
    (last,) = stms(g, ir.BinOp)[-1:]
    assert last.exp == ir.BinOp("add", n, n)
    for xs, ys in (([1, 2], [3, 4]), ([1], [1, 2]), ([], [])):
        check_same(p, q, "f", [np.array(xs, np.int64), np.array(ys, np.int64)])


def test_for_loop_with_no_iteration_is_its_initial_values():
    def body(b: B, xs, x):
        i = b.var("i", I64)
        acc, ys = b.var("acc", I64), b.var("ys", arr(I64))
        loop_body = b.block(lambda sb: (sb.bin("add", acc, i),
                                        sb.let(ir.Update(ys, (i,), i))))
        r = b.let(ir.Loop((acc, ys), (x, xs), ir.ForLoop(i, c(0)), loop_body), "loop")
        return r
    p, q, g = _simp(fun("f", [arr(I64), I64], body))
    assert [type(s.exp) for s in g.body.stms] == [ir.Copy]
    assert g.body.result[0] == g.params[1]
    check_same(p, q, "f", [np.array([1, 2]), np.int64(3)])


def test_while_loops_are_never_dropped():
    def body(b: B, x):
        v = b.var("v", I64)
        cond = b.block(lambda sb: sb.bin("gt", v, c(0)))
        step = b.block(lambda sb: sb.bin("sub", v, c(1)))
        b.let(ir.Loop((v,), (x,), ir.WhileLoop(cond), step), "loop")
        return x
    p, q, g = _simp(fun("f", [I64], body))
    assert stms(g, ir.Loop)


def test_input_program_is_not_changed():
    def body(b: B, x):
        return b.bin("add", b.bin("add", c(1), c(2)), x)
    f = fun("f", [I64], body)
    p = prog(f)
    simplify(p)
    assert p.functions["f"] is f and len(f.body.stms) == 2
    assert run_function(p, "f", [np.int64(1)])[0] == 4


SIZE_OF_MAP = '''
import pyshark.prelude as ps

M = ps.Array[ps.Array[ps.f32]]

def mult(a: M, b: M) -> M:
    return ps.map(lambda r: ps.map(lambda c: ps.sum(ps.map(lambda x, y: x * y, r, c)),
                                   ps.transpose(b)), a)

@ps.entry
def scaled(a: M, b: M, c: M, alpha: ps.f32, beta: ps.f32) -> M:
    # parboil sgemm as Futhark writes it: add(scale(c), scale(mult(a, b)))
    p = ps.map(lambda r: ps.map(lambda x: x * alpha, r), mult(a, b))
    q = ps.map(lambda r: ps.map(lambda x: x * beta, r), c)
    return ps.map(lambda r, s: ps.map(lambda x, y: x + y, r, s), q, p)
'''


def test_size_of_a_map_result_is_its_row_dimension_so_the_maps_fuse():
    """`size(m, 1)` of a map whose rows' shape is known becomes that
    dimension (a select on the width when the empty map's differs); the
    scaling maps then fuse into the product and the sum, and the sum into
    the product across the zip's length assert (1 map, not 5), with the
    interpreter's results and errors at every shape, empty ones included."""
    from pyshark.codegen.pipeline import PASSES, optimise
    from pyshark.core.check import check_program
    from pyshark.translate import translate_source

    # the program as Python mode runs it: with its empty maps' row shapes
    before = optimise(translate_source(SIZE_OF_MAP, "<test>"), check=True, passes=PASSES[:1])
    check_program(before)
    after = optimise(before, check=True)
    g = after.functions["scaled"]
    assert not [s for s in g.body.stms if isinstance(s.exp, ir.Size)
                and any(s.exp.arr.name == t.pat[0].name for t in g.body.stms
                        if isinstance(t.exp, ir.Map))]
    assert len([s for s in g.body.stms if isinstance(s.exp, ir.Map)]) == 1
    rng = np.random.default_rng(1)

    def mats(n, m, p, pc=None):
        f = np.float32
        return [rng.standard_normal((n, m)).astype(f), rng.standard_normal((m, p)).astype(f),
                rng.standard_normal((n, pc if pc is not None else p)).astype(f),
                f(2.0), f(0.5)]
    check_same(before, after, "scaled", mats(3, 4, 5), mats(1, 1, 1), mats(0, 4, 5),
               mats(3, 0, 5), mats(3, 4, 0), mats(0, 0, 0), mats(3, 4, 5, pc=4),
               mats(0, 4, 5, pc=2))
    f = np.float32
    # c's rows differ from a's, alone and with a's columns differing from
    # b's rows too: ShapeError either way, whichever check comes first
    for (n, m), (m2, p), nc in (((3, 4), (4, 5), 2), ((3, 4), (5, 5), 2), ((3, 4), (5, 5), 3)):
        check_same(before, after, "scaled",
                   [np.ones((n, m), f), np.ones((m2, p), f), np.ones((nc, p), f), f(2), f(1)])
