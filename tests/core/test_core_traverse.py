"""iter_stms visits statements nested in branches, loops and SOAC lambdas."""
from pyshark.core import ir
from pyshark.core.traverse import iter_stms
from pyshark.translate import translate_source

SRC = '''
import pyshark.prelude as ps

def inc(x: int) -> int:
    return x + 1

@ps.entry
def f(xs: ps.Array[int], n: int) -> int:
    total = 0
    for i in range(n):
        if i > 2:
            total = total + inc(i)
    while total > 100:
        total = total - inc(1)
    return total + ps.sum(ps.map(lambda x: inc(x), xs))
'''


def test_iter_stms_reaches_every_nested_call():
    fun = translate_source(SRC, "t.py").functions["f"]
    calls = [s for s in iter_stms(fun.body) if isinstance(s.exp, ir.Call)]
    # one inside if-in-for, one inside the while body, one inside the map lambda
    assert len(calls) == 3
    assert {c.exp.fn for c in calls} == {"inc"}
    top_level = [s for s in fun.body.stms if isinstance(s.exp, ir.Call)]
    assert top_level == []


# ---------------------------------------------------------------------------
# The generic traversal (children, map_exp, free variables, liveness)

from coreir_build import I64, B, arr, c  # noqa: E402
from pyshark.core import traverse  # noqa: E402


def _loop_and_map():
    """let s = loop (acc = k) for i < n do acc + i * k; let ys = map(\\x -> x + s, xs)"""
    b = B()
    xs, k, n = b.var("xs", arr(I64)), b.var("k", I64), b.var("n", I64)
    acc, i = b.var("acc", I64), b.var("i", I64)
    body = b.block(lambda sb: sb.bin("add", acc, sb.bin("mul", i, k)))
    s = b.let(ir.Loop((acc,), (k,), ir.ForLoop(i, n), body), "s")
    w = b.size(xs)
    ys = b.let(ir.Map(w, b.lam([I64], lambda sb, x: sb.bin("add", x, s)), (xs,)), "ys")
    return b.body(ys, s), (xs, k, n, acc, i, s, w, ys)


def test_free_vars_exclude_binders_and_include_captures():
    body, (xs, k, n, acc, i, s, w, ys) = _loop_and_map()
    loop, size, mp = (st.exp for st in body.stms)
    assert traverse.free_vars(loop) == {k.name, n.name}            # not acc, i
    assert traverse.free_vars(loop.body) == {acc.name, i.name, k.name}
    assert traverse.free_vars(mp.lam) == {s.name}                 # the captured s
    assert traverse.free_vars(mp) == {s.name, w.name, xs.name}
    assert traverse.free_vars(body) == {xs.name, k.name, n.name}
    assert traverse.free_vars(body) is traverse.free_vars(body)   # memoised


def test_live_after_and_use_counts():
    body, (xs, k, n, acc, i, s, w, ys) = _loop_and_map()
    live = traverse.live_after(body)
    # read later (names bound later are harmless: they are unique)
    assert live[0] == {xs.name, s.name, w.name, ys.name}
    assert live[1] == {xs.name, s.name, w.name, ys.name}
    assert live[2] == {ys.name, s.name}
    counts = traverse.use_counts(body)
    assert counts[s.name] == 2 and counts[xs.name] == 2 and counts[k.name] == 1


def test_children_in_evaluation_order_and_binders_apart():
    body, (xs, k, n, acc, i, s, w, ys) = _loop_and_map()
    loop, size, mp = (st.exp for st in body.stms)
    assert traverse.children(loop) == (k, n, loop.body)
    assert traverse.children(mp) == (w, mp.lam, xs)
    assert traverse.children(ir.Slice(xs, (ir.SliceDim(c(1), None, k), n))) == (xs, c(1), k, n)
    assert [v.name for v in traverse.binder_vars(loop)] == [acc.name, i.name,
                                                            loop.body.stms[0].pat[0].name,
                                                            loop.body.stms[1].pat[0].name]


def test_map_exp_rebuilds_operands_and_bodies_only():
    body, (xs, k, n, acc, i, s, w, ys) = _loop_and_map()
    loop = body.stms[0].exp
    k2 = ir.Var("k2", I64)
    new = traverse.map_exp(loop, lambda a: k2 if a == k else a, lambda b: b)
    assert new.inits == (k2,) and new.form.bound == n and new.params == loop.params
    assert new.body is loop.body                # bodies go to the body function only
    assert traverse.map_exp(loop, lambda a: a, lambda b: b) is loop


def test_the_passes_and_the_lowering_share_this_traversal():
    from pyshark.codegen import usage
    from pyshark.codegen.opt import rewrite
    assert usage.free_vars is traverse.free_vars and usage.live_after is traverse.live_after
    assert usage.use_counts is traverse.use_counts
    assert rewrite.map_exp is traverse.map_exp and rewrite.free_vars is traverse.free_vars
