"""scatter: result = copy of dest; result[idxs[j]] = vals[j] for indices
in range (others ignored). A parallel loop over j; with duplicate indices
one of the values wins, as LANGUAGE.md allows."""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import I64

from .. import kir as K
from .. import scalar as S
from ..lower import Arr, Lowerer
from .common import ONE, ZERO, check_width, elements


def dest_setup(lw: Lowerer, e, env, stm, what: str):
    """Width checks, and owned copies of the destinations."""
    n = lw.scalar(e.width, env)
    idxs = lw.array(e.idxs, env)
    vals = [lw.array(a, env) for a in e.vals]
    check_width(lw, n, (e.idxs, *e.vals), (idxs, *vals), stm.loc, what)
    dests = [lw.copy_arr(lw.array(d, env), "dst") for d in e.dests]
    m = dests[0].shape[0]
    for name, d, v in zip(e.dests, dests, vals):
        lw.check(S.b("eq", d.shape[0], m), "ShapeError",
                 f"{what}: destination {name.name} has another length", stm.loc)
        for x, y in zip(d.shape[1:], getattr(v, "shape", ())[1:]):
            lw.check(S.lor(S.b("eq", n, ZERO), S.b("eq", x, y)), "ShapeError",
                     f"{what}: values have rows of another shape than the destination",
                     stm.loc)
    return n, idxs, vals, dests, m


def in_range(lw: Lowerer, idx: K.Expr, m: K.Expr):
    """(index as i64, 0 <= index < m) for an index of any integer type."""
    t = K.type_of(idx)
    j = lw.let("j", S.convert(I64, idx))
    ok = S.land(S.b("ge", j, ZERO), S.b("lt", j, m))
    if t.is_unsigned and t.bits == 64:
        ok = S.land(ok, S.b("lt", idx, S.const(1 << 63, t)))
    return j, lw.let("ok", ok)


def store_at(lw: Lowerer, d: Arr, j: K.Expr, v) -> None:
    if isinstance(v, Arr):
        rs = lw.row_size(d)
        lw.emit(K.CopyMem(K.PtrAdd(d.data, S.b("mul", j, rs)), v.data, rs))
    else:
        lw.emit(K.Store(d.data, j, v))


def lower_scatter(lw: Lowerer, e: ir.Scatter, env, stm):
    n, idxs, vals, dests, m = dest_setup(lw, e, env, stm, "scatter")

    def body(i):
        xs = elements(lw, [idxs, *vals], i)
        j, ok = in_range(lw, xs[0], m)
        with lw.block() as blk:
            for d, v in zip(dests, xs[1:]):
                store_at(lw, d, j, v)
        lw.emit(K.If(ok, blk[0]))
    lw.par_for("i", n, body)
    return dests
