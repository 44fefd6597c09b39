"""fuse: vertical map-map fusion and horizontal fusion of maps over one input,
with the guards that keep run-time errors as they were."""
from __future__ import annotations

from opt_build import (F64, I64, B, all_stms, arr, c, check_same, fun, ir, np, prog, stms)
from pyshark.codegen.opt.fuse import fuse


def _fuse(f: ir.FunDef):
    p = prog(f)
    q = fuse(p)
    return p, q, q.functions[f.name]


def _map(b: B, n, xs, fn, types=None):
    types = types or [a.type.row() for a in xs]
    return b.let(ir.Map(n, b.lam(list(types), fn), tuple(xs)), "map")


def _inc(sb, x):
    return sb.bin("add", x, c(1))


def _dbl(sb, x):
    return sb.bin("mul", x, c(2))


def _ints(*xs):
    return np.array(xs, np.int64)


def test_vertical_chain_becomes_one_map():
    def body(b: B, xs, ys):
        n = b.size(xs)
        a = _map(b, n, [xs], _inc)
        d = _map(b, n, [a], _dbl)
        return _map(b, n, [d, ys, xs], lambda sb, x, y, z: sb.bin("sub", sb.bin("add", x, y), z))
    p, q, g = _fuse(fun("f", [arr(I64), arr(I64)], body))
    (m,) = stms(g, ir.Map)
    assert [a.name for a in m.exp.arrs] == [g.params[0].name, g.params[1].name]
    assert len(m.exp.lam.params) == 2                  # xs is read once
    check_same(p, q, "f", [_ints(1, 2, 3), _ints(4, 5, 6)], [_ints(1, 2), _ints(4)],
               [_ints(), _ints()])


def test_no_vertical_fusion_when_the_producer_is_used_elsewhere_or_widths_differ():
    def body(b: B, xs, k):
        n = b.size(xs)
        a = _map(b, n, [xs], _inc)
        d = _map(b, n, [a], _dbl)                        # a is also a result
        e = _map(b, n, [xs], _inc)
        f = _map(b, k, [e], _dbl)                        # another width
        return a, d, f
    p, q, g = _fuse(fun("f", [arr(I64), I64], body))
    assert len(stms(g, ir.Map)) == 4 - 1                 # only a and e, side by side
    check_same(p, q, "f", [_ints(1, 2), np.int64(2)], [_ints(1, 2), np.int64(3)])


def test_raising_producer_fuses_only_with_a_consumer_that_cannot_raise():
    def index(ys):
        return lambda sb, i: sb.let(ir.Index(ys, (i,)))

    def body(b: B, xs, ys):
        n = b.size(xs)
        a = _map(b, n, [xs], index(ys))
        d = _map(b, n, [a], _dbl)                        # fused
        e = _map(b, n, [xs], index(ys))
        f = _map(b, n, [e], index(ys))                   # both may raise: kept apart
        return d, f
    p, q, g = _fuse(fun("f", [arr(I64), arr(I64)], body))
    maps = stms(g, ir.Map)
    assert len(maps) == 3
    assert [type(s.exp) for s in maps[0].exp.lam.body.stms] == [ir.Index, ir.BinOp]
    for xs, ys in (([0, 1], [5, 6]), ([0, 2], [5, 6]), ([1, 0], [7])):
        check_same(p, q, "f", [_ints(*xs), _ints(*ys)])


def test_moving_a_raising_map_past_a_raising_statement_is_refused():
    def body(b: B, xs, ys, k):
        n = b.size(xs)
        a = _map(b, n, [xs], lambda sb, i: sb.let(ir.Index(ys, (i,))))
        ok = b.bin("gt", k, c(0))
        b.let(ir.Assert(ok, "k must be positive", "AssertionError"))
        return _map(b, n, [a], _dbl)
    p, q, g = _fuse(fun("f", [arr(I64), arr(I64), I64], body))
    assert len(stms(g, ir.Map)) == 2
    check_same(p, q, "f", [_ints(0, 9), _ints(1), np.int64(0)])


def test_silent_producer_moves_past_anything_but_updates():
    def body(b: B, xs, k):
        n = b.size(xs)
        a = _map(b, n, [xs], _inc)
        ok = b.bin("gt", k, c(0))
        b.let(ir.Assert(ok, "k must be positive", "AssertionError"))
        d = _map(b, n, [a], _dbl)
        e = _map(b, n, [xs], _inc)
        cp = b.let(ir.Copy(xs), "cp")
        upd = b.let(ir.Update(cp, (c(0),), k), "upd")
        f = _map(b, n, [e], _dbl)                        # an update in between: kept
        return d, f, upd
    p, q, g = _fuse(fun("f", [arr(I64), I64], body))
    maps = stms(g, ir.Map)
    assert len(maps) == 2
    assert g.body.stms.index(maps[0]) > 2                # moved below the assert
    check_same(p, q, "f", [_ints(1, 2), np.int64(1)], [_ints(1, 2), np.int64(0)])


def test_irregular_producer_rows_are_not_fused_away():
    def body(b: B, xs):
        n = b.size(xs)
        rows = _map(b, n, [xs], lambda sb, x: sb.let(ir.Iota(x)))
        return _map(b, n, [rows], lambda sb, r: sb.size(r))
    p, q, g = _fuse(fun("f", [arr(I64)], body))
    assert len(stms(g, ir.Map)) == 2
    check_same(p, q, "f", [_ints(2, 3)], [_ints(2, 2)])


def test_horizontal_fusion_of_maps_over_one_input():
    def body(b: B, xs, ys):
        n = b.size(xs)
        a = _map(b, n, [xs], _inc)
        s = b.bin("add", n, c(1))                        # uses neither map
        d = _map(b, n, [ys, xs], lambda sb, y, x: sb.bin("mul", x, y))
        other = _map(b, n, [ys], _dbl)                   # shares no input with a: kept...
        return a, s, d, other
    p, q, g = _fuse(fun("f", [arr(I64), arr(I64)], body))
    maps = stms(g, ir.Map)
    fused = [m for m in maps if len(m.pat) > 1]
    assert len(fused) == 1
    assert len(fused[0].exp.lam.params) == 2             # xs read once
    check_same(p, q, "f", [_ints(1, 2), _ints(3, 4)], [_ints(1, 2), _ints(3)])


def test_horizontal_fusion_moves_the_second_map_up_when_the_first_is_used():
    def body(b: B, xs):
        n = b.size(xs)
        a = _map(b, n, [xs], _inc)
        red = b.lam([I64, I64], lambda sb, x, y: sb.bin("add", x, y))
        s = b.let(ir.Reduce(n, red, (c(0),), (a,)), "sum")
        d = _map(b, n, [xs], _dbl)
        return s, d
    p, q, g = _fuse(fun("f", [arr(I64)], body))
    (m,) = stms(g, ir.Map)
    assert len(m.pat) == 2 and g.body.stms.index(m) < g.body.stms.index(stms(g, ir.Reduce)[0])
    check_same(p, q, "f", [_ints(1, 2, 3)], [_ints()])


def test_dependent_maps_are_not_fused_side_by_side():
    def body(b: B, xs):
        n = b.size(xs)
        a = _map(b, n, [xs], _inc)
        s = b.let(ir.Index(a, (c(0),)), "first")
        d = _map(b, n, [xs], lambda sb, x: sb.bin("add", x, s))
        return a, d
    p, q, g = _fuse(fun("f", [arr(I64)], body))
    assert len(stms(g, ir.Map)) == 2
    check_same(p, q, "f", [_ints(1, 2)], [_ints()])


def test_inner_maps_meet_and_fuse_after_outer_fusion():
    def row_map(fn):
        def lam(sb, r):
            m = sb.size(r)
            return _map(sb, m, [r], fn)
        return lam

    def body(b: B, xss):
        n = b.size(xss)
        a = _map(b, n, [xss], row_map(lambda sb, v: sb.bin("add", v, ir.Const(1.0, F64))))
        return _map(b, n, [a], row_map(lambda sb, v: sb.bin("mul", v, ir.Const(3.0, F64))))
    p, q, g = _fuse(fun("f", [arr(F64, 2)], body))
    assert len(all_stms(g, ir.Map)) == 2                 # one outer, one inner
    check_same(p, q, "f", [np.arange(6.0).reshape(2, 3)], [np.zeros((0, 4))])


def _sum(b: B, n, xs):
    red = b.lam([I64, I64], lambda sb, x, y: sb.bin("add", x, y))
    return b.let(ir.Reduce(n, red, (c(0),), (xs,), True), "sum")


def test_two_reductions_of_one_width_become_one():
    """srad's sum and sum of squares: one Reduce of both operators, its
    results those of both, the map between them still feeding the second."""
    def body(b: B, xs):
        n = b.size(xs)
        s1 = _sum(b, n, xs)
        sq = _map(b, n, [xs], lambda sb, x: sb.bin("mul", x, x))
        mx = b.lam([I64, I64], lambda sb, x, y: sb.bin("max", x, y))
        s2 = b.let(ir.Reduce(n, mx, (c(-7),), (sq,)), "max")
        return s1, s2
    p, q, g = _fuse(fun("f", [arr(I64)], body))
    (r,) = stms(g, ir.Reduce)
    assert len(r.pat) == 2 and len(r.exp.neutral) == 2 and not r.exp.commutative
    check_same(p, q, "f", [_ints(1, -2, 3)], [_ints(5)], [_ints()])


def test_a_reduction_reading_the_other_or_another_width_stays_apart():
    def body(b: B, xs, ys):
        n = b.size(xs)
        m = b.size(ys)
        s1 = _sum(b, n, xs)
        plus = _map(b, n, [xs], lambda sb, x: sb.bin("add", x, s1))
        s2 = _sum(b, n, plus)                  # reads s1 through the map
        s3 = _sum(b, m, ys)                    # another width
        return s1, s2, s3
    p, q, g = _fuse(fun("f", [arr(I64), arr(I64)], body))
    assert len(stms(g, ir.Reduce)) == 3
    check_same(p, q, "f", [_ints(1, 2), _ints(3)], [_ints(), _ints()])


def test_two_raising_reductions_are_not_interleaved():
    """Both operators may raise (integer division): fusing them would
    change which error comes first."""
    def body(b: B, xs, ys):
        n = b.size(xs)
        def dv():
            return b.lam([I64, I64], lambda sb, x, y: sb.bin("floordiv", x, y))
        s1 = b.let(ir.Reduce(n, dv(), (c(100),), (xs,)), "q1")
        s2 = b.let(ir.Reduce(n, dv(), (c(100),), (ys,)), "q2")
        return s1, s2
    p, q, g = _fuse(fun("f", [arr(I64), arr(I64)], body))
    assert len(stms(g, ir.Reduce)) == 2
    check_same(p, q, "f", [_ints(1, 0), _ints(0, 1)], [_ints(2, 3), _ints(1, 1)])


def _zipped_after_assert(b: B, xs, ys, check, error: str):
    """map(*, ys, map(f, xs)) with the zip's `len(ys) == len(xs)` assert
    (ShapeError) between the maps; f asserts check(x) (raising `error`)
    and adds 1."""
    n, k = b.size(xs), b.size(ys)

    def row(sb, x):
        sb.let(ir.Assert(check(sb, x), "the producer's check", error))
        return sb.bin("add", x, c(1))
    a = _map(b, n, [xs], row)
    b.let(ir.Assert(b.bin("eq", k, n), "map: arrays differ in length", "ShapeError"))
    return _map(b, k, [ys, a], lambda sb, y, x: sb.bin("mul", x, y))


def test_producer_fuses_across_the_zips_length_assert():
    """sgemm's `add(scale(c), mult(a, b))`: the sum's width is c's length,
    the product's a's, and the zip's assert that they are equal stands
    between them. Once it has passed the widths are one, and producer and
    assert may each raise only ShapeError, so the producer moves below it."""
    def body(b: B, xs, ys, zs):
        m = b.size(zs)
        return _zipped_after_assert(b, xs, ys, lambda sb, x: sb.bin("eq", m, c(2)),
                                    "ShapeError")
    p, q, g = _fuse(fun("f", [arr(I64), arr(I64), arr(I64)], body))
    (mp,) = stms(g, ir.Map)
    assert mp.exp.lam.body.stms and len(mp.exp.arrs) == 2
    for xs, ys, zs in (([1, 2], [3, 4], [0, 0]), ([1, 2], [3], [0, 0]), ([1, 2], [3], [0]),
                       ([1, 2], [3, 4], [0]), ([], [], [0])):
        check_same(p, q, "f", [_ints(*xs), _ints(*ys), _ints(*zs)])


def test_producer_raising_another_class_stays_above_the_zips_assert():
    """An AssertionError in the producer and the zip's ShapeError: which comes
    first is observable, so the producer is not moved."""
    def body(b: B, xs, ys):
        return _zipped_after_assert(b, xs, ys, lambda sb, x: sb.bin("gt", x, c(0)),
                                    "AssertionError")
    p, q, g = _fuse(fun("f", [arr(I64), arr(I64)], body))
    assert len(stms(g, ir.Map)) == 2
    for xs, ys in (([1, 2], [3, 4]), ([0, 2], [3]), ([1, 2], [3])):
        check_same(p, q, "f", [_ints(*xs), _ints(*ys)])
