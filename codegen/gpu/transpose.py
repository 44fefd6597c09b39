"""transpose of a matrix on a GPU through local memory: the coalesced
transpose of Ruetsch and Micikevicius, "Optimizing Matrix Transpose in
CUDA" (NVIDIA, 2009; the CUDA samples' transposeCoalesced).

A work-group of G work-items (32 x G/32) moves one 32 x 32 tile: it reads
the tile's rows of the input (consecutive work-items, consecutive columns:
coalesced) into local memory, a barrier, and writes the tile's columns as
rows of the output (coalesced again), reading local memory down a column
(rows padded to 33 elements: no bank conflicts). Elements past the edges
are neither read nor written. The shared lowering (lower_arrays.py) is a
cache-blocked loop with one work-item per tile, whose reads or writes are
strided on a GPU. Arrays of rank above 2, and groups smaller than 32
work-items, decline to it.
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import I64

from .. import kir as K
from .. import scalar as S
from ..lower_base import Delayed, Lowerer
from .common import group_for, group_size, local_alloc

T = 32


def _c(v: int) -> K.KConst:
    return S.const(v, I64)


def lower_transpose(lw: Lowerer, e: ir.Transpose, env, stm):
    if lw.in_par or not lw.options.parallel:
        return None
    a = lw.array(e.arr, env)
    G = group_size(lw)
    if (isinstance(a, Delayed) or a.rank != 2 or G < T or G & (G - 1)
            or T * (T + 1) * a.elem.dtype.itemsize > lw.options.target.local_mem):
        return None
    n0, n1 = a.shape
    out = lw.alloc("tr", a.elem, (n1, n0))
    P = G // T                                      # tile rows per pass
    ntj = lw.let("ntj", S.b("shr", S.b("add", n1, _c(T - 1)), _c(5)))
    nti = lw.let("nti", S.b("shr", S.b("add", n0, _c(T - 1)), _c(5)))
    count = lw.let("gw", S.b("mul", S.b("mul", nti, ntj), _c(G)))

    def body(gi):
        tile = local_alloc(lw, "tt", a.elem, T * (T + 1))
        lid = lw.let("lid", K.LocalId())
        tx = lw.let("tx", S.b("and", lid, _c(T - 1)))
        ty = lw.let("ty", S.b("shr", lid, _c(5)))
        grp = lw.let("grp", K.GroupId())
        bi = lw.let("bi", K.Bin("div", grp, ntj))
        i0 = lw.let("i0", S.b("shl", bi, _c(5)))
        j0 = lw.let("j0", S.b("shl", S.b("sub", grp, S.b("mul", bi, ntj)), _c(5)))
        for p in range(T // P):                     # a[i0 + r][j0 + tx] -> tile[r][tx]
            r = S.b("add", ty, _c(P * p))
            i, j = lw.let("i", S.b("add", i0, r)), lw.let("j", S.b("add", j0, tx))
            st = K.Store(tile, S.b("add", S.b("mul", r, _c(T + 1)), tx),
                         K.Load(a.data, S.b("add", S.b("mul", i, n1), j)))
            lw.emit(K.If(S.land(S.b("lt", i, n0), S.b("lt", j, n1)), K.Block((st,))))
        lw.emit(K.Barrier())
        for p in range(T // P):                     # out[j0 + r][i0 + tx] = tile[tx][r]
            r = S.b("add", ty, _c(P * p))
            j, i = lw.let("j", S.b("add", j0, r)), lw.let("i", S.b("add", i0, tx))
            st = K.Store(out.data, S.b("add", S.b("mul", j, n0), i),
                         K.Load(tile, S.b("add", S.b("mul", tx, _c(T + 1)), r)))
            lw.emit(K.If(S.land(S.b("lt", j, n1), S.b("lt", i, n0)), K.Block((st,))))

    with lw.block() as launch:
        group_for(lw, "t", count, body)
    lw.emit(K.If(S.b("gt", count, _c(0)), launch[0]))
    return [out]
