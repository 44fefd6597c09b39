"""The helpers the passes share: generic rewriting (rewrite.py) and the
analyses (analysis.py)."""
from __future__ import annotations

from opt_build import F64, I64, B, arr, c, fun, ir
from pyshark.codegen.opt import analysis, rewrite


def _map_fun():
    def body(b: B, xs, k):
        n = b.size(xs)
        lam = b.lam([I64], lambda sb, x: sb.bin("add", x, k))
        return b.let(ir.Map(n, lam, (xs,)), "map")
    return fun("f", [arr(I64), I64], body)


def test_map_exp_touches_operands_and_bodies_not_binders():
    f = _map_fun()
    m = f.body.stms[1].exp
    seen = []
    same = rewrite.map_exp(m, lambda a: seen.append(a) or a, lambda b: b)
    assert same is m                                   # nothing changed: the same object
    assert [a.name for a in seen] == [f.body.stms[0].pat[0].name, f.params[0].name]
    k2 = ir.Var("k_99", I64)
    renamed = rewrite.map_exp(m, lambda a: a, lambda b: rewrite.subst(b, {f.params[1].name: k2}))
    assert renamed.lam.params == m.lam.params
    assert renamed.lam.body.stms[0].exp.y == k2


def test_uses_binders_free_vars_and_fresh_names():
    f = _map_fun()
    assert rewrite.free_vars(f.body) == {p.name for p in f.params}
    assert rewrite.binders(f.body) == {"n_3", "p_4", "t_5", "map_6"}
    names = rewrite.NameGen(rewrite.fundef_names(f))
    assert names.name("t_5") == "t_7" and names.name("xs") == "xs_8"
    everything = {"x": ir.Var("y", I64)}
    assert rewrite.subst(ir.Var("x", I64), everything) == ir.Var("y", I64)


def test_facts_lengths_through_views_and_soacs():
    f = _map_fun()
    facts = analysis.Facts()
    for s in f.body.stms:
        facts.record(s)
    n = f.body.stms[0].pat[0]
    (ys,) = f.body.stms[1].pat
    assert facts.length(ys.name) == n and facts.length(f.params[0].name) == n
    assert facts.is_nonneg(n) and not facts.is_nonneg(f.params[1])
    # without the size fact the width check of the map is not provable
    assert analysis.may_raise(f.body.stms[1].exp, analysis.Facts())
    before = analysis.Facts()
    before.record(f.body.stms[0])
    assert not analysis.may_raise(f.body.stms[1].exp, before)


def test_rows_regular():
    def rows(fn):
        def body(b: B, xss, k):
            n = b.size(xss)
            lam = b.lam([arr(F64)], fn(k))
            return b.let(ir.Map(n, lam, (xss,)), "map")
        return fun("f", [arr(F64, 2), I64], body).body.stms[1].exp

    def inner_map(k):
        def lam(sb, r):
            m = sb.size(r)
            inner = sb.lam([F64], lambda s2, v: v)
            return sb.let(ir.Map(m, inner, (r,)), "map")
        return lam
    assert analysis.rows_regular(rows(inner_map))
    assert analysis.rows_regular(rows(lambda k: lambda sb, r: sb.let(ir.Replicate(k, c(0)))))
    assert not analysis.rows_regular(rows(
        lambda k: lambda sb, r: sb.let(ir.Iota(sb.let(ir.Convert(I64, sb.let(
            ir.Index(r, (c(0),)))))))))


def test_consumable_names_follow_aliases_back():
    def body(b: B, n):
        a = b.let(ir.Iota(n), "a")
        v = b.let(ir.AtomExp(a), "v")
        u = b.let(ir.Update(v, (c(0),), c(1)), "u")
        other = b.let(ir.Iota(n), "o")
        return u, other
    f = fun("f", [I64], body)
    names = analysis.consumable_names(f.body)
    assert names == {f.body.stms[0].pat[0].name, f.body.stms[1].pat[0].name}


def test_exp_keys():
    x, y = ir.Var("x", I64), ir.Var("y", I64)
    assert analysis.exp_key(ir.BinOp("add", x, y)) == analysis.exp_key(ir.BinOp("add", y, x))
    assert analysis.exp_key(ir.BinOp("sub", x, y)) != analysis.exp_key(ir.BinOp("sub", y, x))
    z, mz = ir.Const(0.0, F64), ir.Const(-0.0, F64)
    assert analysis.exp_key(ir.UnOp("neg", z)) != analysis.exp_key(ir.UnOp("neg", mz))
    assert analysis.exp_key(ir.If(ir.Const(True, ir.ScalarType.BOOL), ir.Body((), (x,)),
                                  ir.Body((), (y,)), (I64,))) is None
