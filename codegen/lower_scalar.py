"""Lowering rules of the core IR's scalar expressions and of calls (a
"common" family: the same on every target). Integer floor division and
modulo use what codegen/bounds.py proves (a divisor >= 1, a dividend that
is a * y + b) to drop the zero check or the division itself; the rest is
codegen/scalar.py's operator code."""
from __future__ import annotations

from pyshark.core import ir
from pyshark.errors import InternalCompilerError

from . import kir as K
from . import scalar as S
from .lower_base import Arr, Delayed, Lowerer, RuleTable


def _h_atom(lw: Lowerer, e: ir.AtomExp, env, stm):
    return [lw.atom(e.atom, env)]


def _binop(lw: Lowerer, op: str, x: K.Expr, y: K.Expr, loc, reassoc=False) -> K.Expr:
    t = K.type_of(x)
    if op in ("floordiv", "mod") and t.is_int:
        split = lw.facts.split_by(x, y)
        if split is not None:           # x == a * y + b with 0 <= b < y
            return split[0] if op == "floordiv" else split[1]
    if op in ("floordiv", "mod") and t.is_int and lw.facts.positive(y):
        # y >= 1: no zero check; and for x >= 0 floor division is C division
        if lw.facts.non_negative(x):
            return K.Bin("div" if op == "floordiv" else "rem", x, y)
        return S.int_floordiv(x, y) if op == "floordiv" else S.int_mod(x, y)
    return S.binop(op, x, y, emit=lw.emit,
                   fail=lambda kind, text: lw.fail(kind, text, loc),
                   new_var=lambda t: lw.var("p", t), reassoc=reassoc)


def _h_binop(lw: Lowerer, e: ir.BinOp, env, stm):
    x, y = lw.scalar(e.x, env), lw.scalar(e.y, env)
    return [lw.let("t", _binop(lw, e.op, x, y, stm.loc, lw.reassoc))]


def _h_unop(lw: Lowerer, e: ir.UnOp, env, stm):
    return [lw.let("t", S.unop(e.op, lw.scalar(e.x, env)))]


def _h_convert(lw: Lowerer, e: ir.Convert, env, stm):
    return [lw.let("c", S.convert(e.to, lw.scalar(e.x, env)))]


def _h_select(lw: Lowerer, e: ir.Select, env, stm):
    c, x, y = (lw.atom(a, env) for a in (e.cond, e.x, e.y))
    if isinstance(x, (Arr, Delayed)) or isinstance(y, (Arr, Delayed)):
        raise InternalCompilerError("lowering: select of arrays")
    return [lw.let("s", K.Sel(c, x, y))]


def _h_assert(lw: Lowerer, e: ir.Assert, env, stm):
    msg = e.msg or "assertion failed"
    lw.check(lw.scalar(e.cond, env), e.error, msg, stm.loc)
    return []


def _h_call(lw: Lowerer, e: ir.Call, env, stm):
    fun = lw.program.functions[e.fn]
    args = [lw.atom(a, env) for a in e.args]
    res = lw.lower_body(fun.body, {p.name: a for p, a in zip(fun.params, args)}, lw.live)
    return lw.adopt(res)


HANDLERS = {
    ir.AtomExp: _h_atom, ir.BinOp: _h_binop, ir.UnOp: _h_unop, ir.Convert: _h_convert,
    ir.Select: _h_select, ir.Assert: _h_assert, ir.Call: _h_call,
}


def register(rules: RuleTable) -> None:
    rules.register_all("common", HANDLERS)
