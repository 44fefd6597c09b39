"""seghist: reduce_by_index (a generalised histogram).

result = copy of dest; for each j with idxs[j] in range, result[idxs[j]] =
op(result[idxs[j]], vals[j]). Sequential for now (the per-thread
sub-histogram and atomic strategies come with the parallel-histogram work);
rows (2-D histograms) apply the operator to row views and copy the result.
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower import Arr, Lowerer
from .common import ZERO, apply_op, elements
from .scatter import dest_setup, in_range, store_at


def lower_reduce_by_index(lw: Lowerer, e: ir.ReduceByIndex, env, stm):
    n, idxs, vals, dests, m = dest_setup(lw, e, env, stm, "reduce_by_index")
    lam = e.lam

    def body(i):
        xs = elements(lw, [idxs, *vals], i)
        j, ok = in_range(lw, xs[0], m)
        with lw.block() as blk:
            olds = [lw.element(d, j) for d in dests]
            if all(isinstance(t, ScalarType) for t in lam.ret):
                new = apply_op(lw, lam, env, olds + xs[1:], True)
                for d, v in zip(dests, new):
                    store_at(lw, d, j, v)
            else:
                res = lw.apply(lam.params, lam.body, env, olds + xs[1:], new_frame=True)
                for d, (v, owned) in zip(dests, res):
                    if isinstance(v, Arr):
                        same = None
                        for x, y in zip(v.shape, d.shape[1:]):
                            c = S.b("eq", x, y)
                            same = c if same is None else S.land(same, c)
                        lw.check(same, "ShapeError", "reduce_by_index: the operator "
                                 "returned a row of another shape", stm.loc)
                    store_at(lw, d, j, v)
                    if owned:
                        lw.emit(K.Free(v.base))
        lw.emit(K.If(ok, blk[0]))
    lw.for_range("i", ZERO, n, body)
    return dests
