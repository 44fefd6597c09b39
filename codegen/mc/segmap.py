"""segmap: a map as a parallel loop over its width (Futhark's SegMap).

Scalar results: one output per result, written at index i by iteration i;
when each result feeds exactly one later SOAC of the same body the map is
not materialised at all (a Delayed array, fused into its consumer).
Array results: iteration 0 runs first to learn the row shape (sizes are
needed before the allocation), the rest run in parallel, each checking
its row has that shape (an irregular result is a ShapeError, as in Python
mode) and copying it into its row.
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import I64, ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower import Arr, Delayed, DelayedGroup, Lowerer
from ..lower_arrays import can_delay
from .common import ONE, ZERO, all_scalar, check_width, elements


def lower_map(lw: Lowerer, e: ir.Map, env, stm):
    n = lw.scalar(e.width, env)
    arrs = [lw.array(a, env) for a in e.arrs]
    check_width(lw, n, e.arrs, arrs, stm.loc, "map")
    lam = e.lam

    def row(i):
        return lw.apply(lam.params, lam.body, env, elements(lw, arrs, i), new_frame=True)

    if all_scalar(lam.ret):
        if can_delay(lw, [v.name for v in stm.pat]):
            group = DelayedGroup(n, lambda i: [r for r, _ in row(i)])
            return [Delayed(group, k, t) for k, t in enumerate(lam.ret)]
        outs = [lw.alloc("map", t, (n,)) for t in lam.ret]

        def body(i):
            for o, (r, _) in zip(outs, row(i)):
                lw.emit(K.Store(o.data, i, r))
        lw.par_for("i", n, body)
        return outs
    return _map_of_arrays(lw, lam, n, row, stm)


def _map_of_arrays(lw: Lowerer, lam: ir.Lambda, n, row, stm):
    # row shapes: 0 when the map is empty (as Python mode's empty result)
    shapes = [tuple(lw.var("rn", I64) for _ in range(t.rank)) if not isinstance(t, ScalarType)
              else () for t in lam.ret]
    for sh in shapes:
        for v in sh:
            lw.emit(K.Set(v, ZERO))
    first = []
    nonempty = lw.let("ne", S.b("gt", n, ZERO))
    with lw.block() as b0:
        res0 = row(ZERO)
        for (r, owned), sh, t in zip(res0, shapes, lam.ret):
            if isinstance(t, ScalarType):
                keep = lw.var("r0", t)
                lw.emit(K.Set(keep, r))
                first.append((keep, None, None))
                continue
            for v, d in zip(sh, r.shape):
                lw.emit(K.Set(v, d))
            data = lw.var("r0d", K.type_of(r.data))
            lw.emit(K.Set(data, r.data))
            base = None
            if owned:
                base = lw.var("r0b", K.type_of(r.base))
                lw.emit(K.Set(base, r.base))
            first.append((data, base, r))
    lw.emit(K.If(nonempty, b0[0]))
    outs = []
    for t, sh in zip(lam.ret, shapes):
        elem = t if isinstance(t, ScalarType) else t.elem
        outs.append(lw.alloc("map", elem, (n,) + sh))
    with lw.block() as b1:
        for o, (data, base, r), t in zip(outs, first, lam.ret):
            if isinstance(t, ScalarType):
                lw.emit(K.Store(o.data, ZERO, data))
                continue
            lw.emit(K.CopyMem(o.data, data, lw.row_size(o)))
            if base is not None:
                lw.emit(K.Free(base))
    lw.emit(K.If(nonempty, b1[0]))

    def body(k):
        i = lw.let("i", S.b("add", k, ONE))
        res = row(i)
        for o, (r, owned), sh, t in zip(outs, res, shapes, lam.ret):
            if isinstance(t, ScalarType):
                lw.emit(K.Store(o.data, i, r))
                continue
            same = None
            for x, y in zip(r.shape, sh):
                c = S.b("eq", x, y)
                same = c if same is None else S.land(same, c)
            lw.check(same, "ShapeError",
                     "map produced rows of different shapes (irregular array)", stm.loc)
            rs = lw.row_size(o)
            lw.emit(K.CopyMem(K.PtrAdd(o.data, S.b("mul", i, rs)), r.data, rs))
            if owned:
                lw.emit(K.Free(r.base))
    rest = lw.let("m", K.Sel(nonempty, S.b("sub", n, ONE), ZERO))
    lw.par_for("k", rest, body)
    return outs
