"""Sequential reduce/scan whose accumulators include arrays (a reduction
of rows, say): the accumulator is carried like a loop parameter, owned by
the fold; each step's result replaces it and the old one is freed."""
from __future__ import annotations

from pyshark.core.types import ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, Delayed, Lowerer
from ..lower_control import assign_stms, carried_like
from .common import ONE, ZERO, elements


def fold_arrays(lw: Lowerer, lam, env, arrs, neutral, n, stm, scan_outs):
    accs = []
    for v, t in zip(neutral, lam.ret):
        if isinstance(t, ScalarType):
            a = lw.var("acc", t)
            lw.emit(K.Set(a, v))
            accs.append(a)
        else:
            c = lw.copy_arr(v, "acc")
            lw.disown(c.base)
            a = carried_like(lw, c)
            for s in assign_stms(lw, a, c):
                lw.emit(s)
            accs.append(a)
    outs = None
    if scan_outs:
        outs = []
        for v, t in zip(accs, lam.ret):
            if isinstance(t, ScalarType):
                outs.append(lw.alloc("scan", t, (n,)))
            else:
                outs.append(lw.alloc("scan", t.elem, (n,) + tuple(v.shape)))

    def step(i):
        res = lw.apply(lam.params, lam.body, env, list(accs) + elements(lw, arrs, i),
                       new_frame=True)
        news = []
        for (r, owned), a in zip(res, accs):
            if isinstance(a, Arr):
                same = None
                for x, y in zip(r.shape, a.shape):
                    c = S.b("eq", x, y)
                    same = c if same is None else S.land(same, c)
                if same is not None:
                    lw.check(same, "ShapeError",
                             "the operator returned an array of another shape", stm.loc)
                if not owned:
                    with lw.temp_scope():
                        r = lw.copy_arr(r, "acc")
            news.append(r)
        for a in accs:
            if isinstance(a, Arr):
                lw.emit(K.Free(a.base))
        for a, r in zip(accs, news):
            for s in assign_stms(lw, a, r):
                lw.emit(s)
        if outs is not None:
            for o, a in zip(outs, accs):
                if isinstance(a, Arr):
                    rs = lw.row_size(o)
                    lw.emit(K.CopyMem(K.PtrAdd(o.data, S.b("mul", i, rs)), a.data, rs))
                else:
                    lw.emit(K.Store(o.data, i, a))
    lw.for_range("i", ZERO, n, step)
    if outs is not None:
        for a in accs:
            if isinstance(a, Arr):
                lw.emit(K.Free(a.base))
        return outs
    for a in accs:
        if isinstance(a, Arr):
            lw.own(a.base)
    return accs
