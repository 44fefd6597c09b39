"""filter: keeps, in order, the elements whose predicate holds.

Sequential compaction into an output of the input's length (an upper
bound); the result's length is the number kept. (The parallel version is
count per chunk, exclusive scan of the counts, then a compaction per chunk;
it comes with the parallel-filter work.)
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import I64

from .. import kir as K
from .. import scalar as S
from ..lower import Arr, Delayed, Lowerer
from .common import ONE, ZERO, apply_op, check_width, elements


def lower_filter(lw: Lowerer, e: ir.Filter, env, stm):
    n = lw.scalar(e.width, env)
    arrs = [lw.array(a, env) for a in e.arrs]
    check_width(lw, n, e.arrs, arrs, stm.loc, "filter")
    outs = []
    for a in arrs:
        shape = (n,) + tuple(a.shape[1:]) if isinstance(a, Arr) else (n,)
        outs.append(lw.alloc("filt", a.elem, shape))
    cnt = lw.var("kept", I64)
    lw.emit(K.Set(cnt, ZERO))

    def body(i):
        elems = elements(lw, arrs, i)
        keep = apply_op(lw, e.lam, env, elems)[0]
        with lw.block() as blk:
            for o, x in zip(outs, elems):
                if isinstance(x, Arr):
                    rs = lw.row_size(o)
                    lw.emit(K.CopyMem(K.PtrAdd(o.data, S.b("mul", cnt, rs)), x.data, rs))
                else:
                    lw.emit(K.Store(o.data, cnt, x))
            lw.emit(K.Set(cnt, S.b("add", cnt, ONE)))
        lw.emit(K.If(keep, blk[0]))
    lw.for_range("i", ZERO, n, body)
    final = lw.let("nkept", cnt)
    return [Arr(o.base, o.data, (final,) + tuple(o.shape[1:]), o.elem, o.aliases)
            for o in outs]
