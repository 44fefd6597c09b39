"""Streamed tiles: a large fresh result of a two-dimensional map nest
(segmap.py's tiled nests) written past the caches.

Why: each tile of such a nest stores its elements straight into the
result, an ordinary store to a line not in the cache reads the line first
(write-allocate), so a result larger than the caches is moved twice.
kir_passes/streaming.py streams the stores of a one-dimensional loop, but
a tile's rows are inner loops with indices i * nj + j, which x86's
streaming stores (aligned whole-line vectors only) cannot take one by
one. So, as cache blocking's copy optimisation (Lam, Rothberg and Wolf,
ASPLOS 1991) turned around, a tile is computed into a buffer of its own
(TILE_I x tj elements: 16 KiB of f32 at 16 x 256, L1/L2-resident, one
per chunk of tiles once kir_passes/scratch.py hoists it) and then copied
out by one nontemporal copy (kir.CopyMem `nontemporal`, cpu/emit_stream.py).
Only where a tile spans whole rows (nj <= tj, a run-time test: backprop's
16-column weights), so that the tile is one contiguous block of the result:
with wide rows (4096 x 4096 f32, an elementwise nest) a copy per 1 KiB row
piece made the nest 5-8% slower than ordinary stores on the 2-core Zen 5,
where the narrow 2^20 x 16 one went from 4.0-4.2 to 3.55 ms (Numba's prange
over rows 4.2-4.6 ms). C model of backprop's 64 MiB weight update there, 2
threads: 4.2-4.9 ms ordinary, 3.3-3.5 ms streamed.

segmap.py builds the streamed version only where streaming.py would
stream a one-dimensional map: the result is read by nothing after the nest
(result_unread), the element does a few operations per byte
(streaming.memory_bound) and has no loop of its own, and the version runs
only from STREAM_MIN_BYTES of result on and with rows of at most tj
elements (run-time tests)."""
from __future__ import annotations

from pyshark.core.types import I64

from .. import kir as K
from .. import scalar as S
from ..kir_passes.streaming import memory_bound
from ..kir_traverse import has_loop, walk_stms
from ..lower_base import Arr, Lowerer
from ..usage import free_vars


def result_unread(lw: Lowerer, stm) -> bool:
    """Whether nothing after the statement `stm` (bound at the top level of
    the entry, outside every loop: a loop would read its result in the next
    iteration) reads what it binds: the entry returns it, or nothing uses it."""
    if lw.in_par or any(sc.carried for sc in lw.scopes) or lw.options.target.gpu:
        return False
    names = {v.name for v in stm.pat}
    return not any(names & free_vars(s.exp) for s in lw.rest)


def elements_memory_bound(tiles: K.Block) -> bool:
    """Whether the innermost loops of a nest's tiles (the elements of a row)
    do few enough operations per byte for memory to bound them
    (streaming.memory_bound; the tile's set-up, once per row or tile, is
    not counted)."""
    inner = [s.body for s in walk_stms(tiles) if isinstance(s, K.For) and not has_loop(s.body)]
    return bool(inner) and all(memory_bound(b) for b in inner)


def stream_tile(lw: Lowerer, out: Arr, buf: Arr, nj, i0, i1) -> None:
    """out[i0:i1, :] = buf[0:(i1 - i0) * nj] by one nontemporal copy (the
    tile spans whole rows, which are contiguous in out)."""
    lw.emit(K.CopyMem(K.PtrAdd(out.data, S.b("mul", i0, nj)), buf.data,
                      S.b("mul", S.b("sub", i1, i0), nj), nontemporal=True))
