"""The pretty-printer: readable, typed, deterministic text."""
import numpy as np

from coreir_build import BOOL, F32, I64, B, c, arr, fun, ir, prog
from pyshark.core.pretty import pretty_exp, pretty_fun, pretty_program, pretty_stm
from pyshark.core.types import SArray, SRecord, SScalar


def small_program():
    def f(b, xs, a):
        lam = b.lam([F32], lambda s, x: s.bin("add", s.bin("mul", a, x), c(1.0, F32)))
        ys = b.let(ir.Map(b.size(xs), lam, (xs,)), "ys")
        tot = b.let(ir.Reduce(b.size(ys), b.lam([F32, F32], lambda s, p, q: s.bin("add", p, q)),
                              (c(0.0, F32),), (ys,)), "tot")
        pos = b.bin("gt", tot, c(0.0, F32))
        r = b.let(ir.If(pos, b.block(lambda s: s.un("sqrt", tot)),
                        b.block(lambda s: c(float("nan"), F32)), (F32,)), "r")
        acc, i = b.ctx.fresh("acc", I64), b.ctx.fresh("i", I64)
        n = b.let(ir.Loop((acc,), (c(0),), ir.ForLoop(i, c(10)),
                          b.block(lambda s: s.bin("add", acc, i))), "n")
        b.let(ir.Assert(c(True, BOOL), "never", "IndexError"))
        sl = b.let(ir.Slice(xs, (ir.SliceDim(c(1), None, c(-1)),)), "sl")
        return (ys, r, n, sl)
    rec = SRecord("Vec", (("x", SScalar(F32)), ("y", SScalar(F32))))
    p = prog(fun("saxpy", [arr(F32), F32], f),
             entries=(ir.Entry("saxpy", (ir.EntryParam("xs", SArray(SScalar(F32))),
                                         ir.EntryParam("a", SScalar(F32))),
                               SScalar(F32)),))
    p.records["Vec"] = rec
    return p


def test_pretty_program_text():
    text = pretty_program(small_program())
    print(text)
    assert "record Vec {x: f32, y: f32}" in text
    assert "fun saxpy(x_1: []f32, x_2: f32): ([]f32, f32, i64, []f32) =" in text
    assert "  let (n_6: i64) = size(x_1, 0)\n" in text
    assert "  let (ys_7: []f32) = map[n_6](\\(p_3: f32): (f32) ->\n" in text
    assert "      let (t_4: f32) = x_2 * p_3\n      let (t_5: f32) = t_4 + 1.0f32\n" in text
    assert "      in t_5\n    , x_1)\n" in text
    assert "let (tot_12: f32) = reduce[n_8](\\(p_9: f32, p_10: f32): (f32) ->" in text
    assert "    , (0.0f32), ys_7)\n" in text
    assert "let (r_15: f32) = if t_13: (f32)\n    then\n      let (t_14: f32) = sqrt(tot_12)" in text
    assert "    else\n      f32.nan\n" in text
    assert "let (n_19: i64) = loop (acc_16: i64 = 0i64) for i_17: i64 < 10i64 do" in text
    assert "let () = assert(true, 'never', IndexError)" in text
    assert "let (sl_20: []f32) = x_1[1i64::-1i64]" in text
    assert "  in (ys_7, r_15, n_19, sl_20)\n" in text
    assert "entry saxpy(xs: Array[f32], a: f32): f32" in text


def test_pretty_is_deterministic_and_indented():
    a, b = pretty_program(small_program()), pretty_program(small_program())
    assert a == b
    lines = a.splitlines()
    assert any(l.startswith("      let (t_5: f32)") for l in lines)   # lambda body indented


def test_pretty_exp_and_stm():
    xs = ir.Var("xs_1", arr(I64, 2))
    assert pretty_exp(ir.Index(xs, (c(0), c(-1)))) == "xs_1[0i64, -1i64]"
    assert pretty_exp(ir.Index(xs, (c(0),), False)) == "xs_1[0i64 (nonneg)]"
    assert pretty_exp(ir.Update(xs, (c(0),), ir.Var("r", arr(I64)))) == "xs_1 with [0i64] = r"
    assert pretty_exp(ir.Convert(F32, c(3))) == "f32(3i64)"
    assert pretty_exp(ir.UnOp("neg", c(-np.inf, F32))) == "--f32.inf"
    assert pretty_exp(ir.BinOp("min", c(1), c(2))) == "min(1i64, 2i64)"
    s = ir.Let((ir.Var("t", I64),), ir.Size(xs, 1))
    assert pretty_stm(s) == "let (t: i64) = size(xs_1, 1)"
