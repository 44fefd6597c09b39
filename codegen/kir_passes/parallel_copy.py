"""Large copies on the host run by the whole team (a kernel IR -> kernel IR
pass of the mc family).

    CopyMem(dst, src, n)                      # outside every ParFor
 =>
    parfor k in 0..ceil(n / B) if n * size >= MIN_BYTES {
        CopyMem(dst + k * B, src + k * B, min(B, n - k * B))
    }

Why: a CopyMem on the host is one memcpy on the calling thread while the
team waits. The lowering makes such copies where a value changes owner: a
loop's initial array that the loop may not take over (the caller's input;
lower_control._lower_loop), a loop's result that is not provably a whole
block (an entry result must be one), an array an If's branches disagree on.
An iterated stencil pays two per call, of its whole grid: hotspot_rodinia
at 512^2 (1 MiB grids) copied in and out on one thread of the H100 machine's
Xeon host (about 10 GB/s for one thread against 90 GB/s for sixteen, the
suite's copy bandwidth) while its Numba peer copies once (docs/
cpu-backend.md, "Memory"). Split into chunks of B = CHUNK_BYTES, every
thread copies its share; below MIN_BYTES the ParFor runs inline (the
emitter's sequential path: one memcpy per chunk).

A copy of STREAM_MIN_BYTES or more (streaming.py's threshold for fresh
results: past the caches of common machines) is a ParFor over its elements
with streaming stores instead, `parfor i { dst[i] = src[i] }` (x86's
movnt: the line is written without being read first, and nothing is left
in the caches that the copy's later part would evict anyway). glibc's
memcpy does that itself for one large copy, but not for 64 KiB chunks: a
scatter into a copy of its 64 MiB destination (scatter_dups medium on the
2-core Zen 5) paid the chunks' reads for ownership, 12.7 against Numba's
10.6 ms (its one memcpy); with the streaming copy 10.6 against 11.0
(session 37).

Meaning is kept: the chunks are disjoint pieces of the one non-overlapping
copy, and a CopyMem cannot fail, so any order of them is the copy itself.
Copies inside a ParFor body stay as they are (the team is already running).
"""
from __future__ import annotations

from pyshark.core.types import I64, ScalarType

from .. import kir as K
from .. import scalar as S
from ..kir_traverse import map_block, map_bodies, map_stm
from .streaming import STREAM_MIN_BYTES

CHUNK_BYTES = 64 << 10        # bytes per chunk: a few chunks per thread of a MiB copy
MIN_BYTES = 256 << 10         # smaller copies: one memcpy beats waking the team


class _Copies:
    def __init__(self):
        self.n = 0

    def fresh(self, hint: str) -> K.KVar:
        self.n += 1
        return K.KVar(f"{hint}_pc{self.n}", I64)

    def block(self, b: K.Block) -> K.Block:
        return map_block(b, self.stm)

    def stm(self, s: K.Stm):
        if isinstance(s, K.ParFor):
            return s                                  # already parallel: left alone
        if isinstance(s, K.CopyMem):
            return self.copy(s)
        return map_stm(s, block=self.block)

    def copy(self, s: K.CopyMem) -> list:
        ptr = K.type_of(s.dst)
        size = ptr.elem.bytes
        chunk = max(1, CHUNK_BYTES // size)
        n = self.fresh("cpn")
        k = self.fresh("cpk")
        off = S.b("mul", k, S.const(chunk, I64))
        left = S.b("sub", n, off)
        piece = S.sel(S.b("lt", left, S.const(chunk, I64)), left, S.const(chunk, I64))
        body = K.Block((K.CopyMem(K.PtrAdd(s.dst, off), K.PtrAdd(s.src, off), piece),))
        chunks = S.b("div", S.b("add", n, S.const(chunk - 1, I64)), S.const(chunk, I64))
        # n <= 0 copies nothing, as CopyMem of a count <= 0 does
        count = S.sel(S.b("gt", n, S.const(0, I64)), chunks, S.const(0, I64))
        big = S.b("ge", n, S.const(max(1, MIN_BYTES // size), I64))
        chunked = K.ParFor(k, count, body, parallel_if=big)
        if not isinstance(ptr.elem, ScalarType) or ptr.elem.is_bool or ptr.space != "global":
            return [K.Set(n, s.count), chunked]
        # a large copy: element by element with streaming stores
        d, src, i = self.fresh("cpd"), self.fresh("cps"), self.fresh("cpi")
        d, src = K.KVar(d.name, ptr), K.KVar(src.name, K.type_of(s.src))
        x = K.KVar(self.fresh("cpx").name, ptr.elem)
        streamed = K.ParFor(i, n, K.Block((K.Set(x, K.Load(src, i)),
                                           K.Store(d, i, x, nontemporal=True))))
        huge = S.b("ge", n, S.const(max(1, STREAM_MIN_BYTES // size), I64))
        return [K.Set(n, s.count), K.Set(d, s.dst), K.Set(src, s.src),
                K.If(huge, K.Block((streamed,)), K.Block((chunked,)))]


def parallel_copies(m: K.Module) -> K.Module:
    """The module with every host-level CopyMem split over the team."""
    return map_bodies(m, _Copies().block)


__all__ = ["parallel_copies", "CHUNK_BYTES", "MIN_BYTES"]
