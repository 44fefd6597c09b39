"""One hand-written core program that uses every expression class of ir.Exp,
for the tests that each dispatch table (checker, interpreter, pretty-printer,
traversal, lowering) handles every class -- not only names it."""
from __future__ import annotations

import typing

import numpy as np

from coreir_build import F64, I64, B, arr, c, ir
from pyshark.core.traverse import iter_stms
from pyshark.core.types import ArrayType, SArray, SScalar, STuple

EXP_CLASSES = typing.get_args(ir.Exp)


def _add(sb: B, a, b):
    return sb.bin("add", a, b)


def _body(b: B, xs, m, n):
    n0 = b.size(xs)                                             # Size
    a = b.let(ir.AtomExp(n), "a")                               # AtomExp
    s = b.bin("add", a, c(1))                                   # BinOp
    u = b.un("neg", s)                                          # UnOp
    f = b.let(ir.Convert(F64, u), "f")                          # Convert
    pos = b.bin("gt", n, c(0))
    sel = b.let(ir.Select(pos, s, u), "sel")                    # Select
    call = b.let(ir.Call("twice", (sel,), (I64,)), "call")      # Call
    iff = b.let(ir.If(pos, b.block(lambda sb: sb.bin("add", s, c(1))),  # If
                      b.block(lambda sb: sb.bin("sub", s, c(1))), (I64,)), "if")
    acc, i = b.var("acc", I64), b.var("i", I64)
    for_sum = b.let(ir.Loop((acc,), (c(0),), ir.ForLoop(i, n),   # Loop (for)
                            b.block(lambda sb: _add(sb, acc, i))), "for")
    k = b.var("k", I64)
    wl = b.let(ir.Loop((k,), (c(0),),                           # Loop (while)
                       ir.WhileLoop(b.block(lambda sb: sb.bin("lt", k, c(3)))),
                       b.block(lambda sb: _add(sb, k, c(1)))), "while")
    b.let(ir.Assert(b.bin("ge", n0, c(1)), "xs is empty", "IndexError"))   # Assert
    ix = b.let(ir.Index(xs, (c(0),)), "ix")                     # Index
    sl = b.let(ir.Slice(xs, (ir.SliceDim(c(1), None, None),)), "sl")  # Slice
    cp = b.let(ir.Copy(xs), "cp")                               # Copy
    up = b.let(ir.Update(cp, (c(0),), c(42)), "up")             # Update
    al = b.let(ir.ArrayLit((s, u), arr(I64)), "al")             # ArrayLit
    io = b.let(ir.Iota(n), "io")                                # Iota
    rp = b.let(ir.Replicate(n, f), "rp")                        # Replicate
    cc = b.let(ir.Concat((xs, io)), "cc")                       # Concat
    rt = b.let(ir.Rotate(c(1), xs), "rt")                       # Rotate
    tr = b.let(ir.Transpose(m), "tr")                           # Transpose
    mm = b.bin("mul", b.size(m, 0), b.size(m, 1))
    rs = b.let(ir.Reshape((mm,), m), "rs")                      # Reshape
    mp = b.let(ir.Map(n0, b.lam([I64], lambda sb, x: sb.bin("mul", x, n)), (xs,)), "mp")
    rd = b.let(ir.Reduce(n0, b.lam([I64, I64], _add), (c(0),), (xs,)), "rd")
    sc = b.let(ir.Scan(n0, b.lam([I64, I64], _add), (c(0),), (xs,)), "sc")
    fl = b.let(ir.Filter(n0, b.lam([I64], lambda sb, x: sb.bin("gt", x, c(1))), (xs,)), "fl")
    idx = b.let(ir.Map(n0, b.lam([I64], lambda sb, x: sb.bin("mod", x, c(3))), (xs,)), "idx")
    hist = b.let(ir.Replicate(c(3), c(0)), "hist")
    rbi = b.let(ir.ReduceByIndex(n0, (hist,), b.lam([I64, I64], _add), (c(0),), idx, (xs,)),
                "rbi")
    dest = b.let(ir.Replicate(c(5), c(-1)), "dest")
    sct = b.let(ir.Scatter(n, (dest,), io, (sl,)), "sct")       # Scatter (n == len(sl))
    return (s, u, f, sel, call, iff, for_sum, wl, ix, sl, up, al, io, rp, cc, rt, tr, rs,
            mp, rd, sc, fl, rbi, sct)


def _surface(t):
    if not isinstance(t, ArrayType):
        return SScalar(t)
    st = SScalar(t.elem)
    for _ in range(t.rank):
        st = SArray(st)
    return st


def program() -> ir.Program:
    """Entry `every(xs: Array[i64], m: Array[i64, 2], n: i64)` returning one
    value per expression; `twice` is the function it calls."""
    b = B()
    xs, m, n = b.var("xs", arr(I64)), b.var("m", arr(I64, 2)), b.var("n", I64)
    res = _body(b, xs, m, n)
    every = ir.FunDef("every", (xs, m, n), tuple(r.type for r in res), b.body(*res))
    tb = B(b.ctx)
    x = tb.var("x", I64)
    twice = ir.FunDef("twice", (x,), (I64,), tb.body(tb.bin("mul", x, c(2))))

    entry = ir.Entry("every", (ir.EntryParam("xs", _surface(xs.type)),
                               ir.EntryParam("m", _surface(m.type)),
                               ir.EntryParam("n", _surface(I64))),
                     STuple(tuple(_surface(r.type) for r in res)))
    return ir.Program({"every": every, "twice": twice}, {"every": entry}, {}, "every.py")


def args() -> list:
    return [np.array([5, 1, 2, 7, 3], dtype=np.int64),
            np.arange(6, dtype=np.int64).reshape(2, 3), np.int64(4)]


def classes_used(p: ir.Program) -> set:
    return {s.exp.__class__ for f in p.functions.values() for s in iter_stms(f.body)}


__all__ = ["program", "args", "classes_used", "EXP_CLASSES"]
