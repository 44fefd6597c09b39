"""A tiny builder for hand-written core IR in tests: fresh SSA names, Lets
typed with exp_types, lambdas and nested bodies from Python callables."""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.check import check_program
from pyshark.core.interp import run_function
from pyshark.core.typeof import exp_types
from pyshark.core.types import (BOOL, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64,
                                ArrayType, ScalarType)

LOC = ir.Loc("prog.py", 7, 4)


def arr(t: ScalarType, rank: int = 1) -> ArrayType:
    return ArrayType(t, rank)


def c(v, t: ScalarType = I64) -> ir.Const:
    return ir.Const(v, t)


class Ctx:
    def __init__(self):
        self.n = 0

    def fresh(self, hint: str, t) -> ir.Var:
        self.n += 1
        return ir.Var(f"{hint}_{self.n}", t)


class B:
    """Collects the statements of one body."""

    def __init__(self, ctx: Ctx | None = None):
        self.ctx = ctx or Ctx()
        self.stms: list[ir.Let] = []

    def var(self, hint, t):
        return self.ctx.fresh(hint, t)

    def let(self, exp, hint="t", loc=LOC, types=None):
        ts = exp_types(exp) if types is None else types
        pat = tuple(self.ctx.fresh(hint, t) for t in ts)
        self.stms.append(ir.Let(pat, exp, loc))
        return pat[0] if len(pat) == 1 else pat

    def sub(self) -> "B":
        return B(self.ctx)

    def body(self, *res) -> ir.Body:
        return ir.Body(tuple(self.stms), tuple(res))

    def block(self, fn, *args) -> ir.Body:
        sb = self.sub()
        res = fn(sb, *args)
        return sb.body(*_tup(res))

    def lam(self, types, fn) -> ir.Lambda:
        sb = self.sub()
        params = tuple(sb.var("p", t) for t in types)
        res = _tup(fn(sb, *params))
        return ir.Lambda(params, sb.body(*res), tuple(r.type for r in res))

    # shortcuts
    def bin(self, op, x, y):
        return self.let(ir.BinOp(op, x, y))

    def un(self, op, x):
        return self.let(ir.UnOp(op, x))

    def size(self, a, dim=0):
        return self.let(ir.Size(a, dim), "n")


def _tup(res):
    if isinstance(res, (tuple, list)):
        return tuple(res)
    return (res,)


def fun(name, types, fn, ret=None, ctx=None) -> ir.FunDef:
    b = B(ctx)
    params = tuple(b.var("x", t) for t in types)
    res = _tup(fn(b, *params))
    if ret is None:
        ret = tuple(r.type for r in res)
    return ir.FunDef(name, params, tuple(ret), b.body(*res), LOC)


def prog(*funs, entries=()) -> ir.Program:
    return ir.Program({f.name: f for f in funs}, {e.name: e for e in entries}, {}, "prog.py")


def run(types, fn, *args, extra=()):
    """Builds `f(types) = fn(...)`, type checks it and runs it."""
    p = prog(fun("f", types, fn), *extra)
    check_program(p)
    return run_function(p, "f", list(args))


def run1(types, fn, *args, extra=()):
    (r,) = run(types, fn, *args, extra=extra)
    return r


__all__ = ["ir", "B", "Ctx", "c", "arr", "fun", "prog", "run", "run1", "LOC",
           "BOOL", "F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64",
           "ArrayType", "ScalarType"]
