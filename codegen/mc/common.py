"""Pieces the multicore SOAC algorithms share: width checks, element
reading, applying an operator lambda, chunk bounds, code lowered aside to
be looked at (trial)."""
from __future__ import annotations

from typing import Callable

from pyshark.core.types import I64, ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, Delayed, Lowerer

ZERO = S.const(0, I64)
ONE = S.const(1, I64)


def check_width(lw: Lowerer, n: K.Expr, names, vals, loc, what: str) -> None:
    for name, v in zip(names, vals):
        w = v.shape[0]
        if w is n or (isinstance(w, K.KConst) and isinstance(n, K.KConst)
                      and w.value == n.value):
            continue
        # Python mode's words (prelude/soacs.py), never an internal name
        lw.check(S.b("eq", w, n), "ShapeError",
                 f"{what}: arrays of lengths {{}} and {{}}", loc, (n, w))


def elements(lw: Lowerer, arrs: list, i: K.Expr) -> list:
    cache: dict = {}
    return [lw.element(a, i, cache) for a in arrs]


def apply_op(lw: Lowerer, lam, env, args: list, reassoc: bool = False) -> list:
    """Applies an operator lambda to scalar arguments; its scalar results."""
    with lw.reassociating(reassoc):
        res = lw.apply(lam.params, lam.body, env, args, new_frame=True)
    return [r for r, _ in res]


def trial(lw: Lowerer, gen: Callable[[], object]):
    """Runs gen() with statements collected aside and in_par set, returning
    (its result, the block it emitted), so an algorithm can look at code
    (whether it can fail) before choosing. The block is not emitted."""
    with lw.in_parallel(), lw.block() as blk:
        out = gen()
    return out, blk[0]


def chunk_bounds(lw: Lowerer, c: K.Expr, n: K.Expr, nch: K.Expr):
    """[lo, hi) of chunk c of nch contiguous chunks of 0..n-1."""
    lo = lw.let("lo", S.b("div", S.b("mul", c, n), nch))
    hi = lw.let("hi", S.b("div", S.b("mul", S.b("add", c, ONE), n), nch))
    return lo, hi


def all_scalar(types) -> bool:
    return all(isinstance(t, ScalarType) for t in types)


def empty_dims(lw: Lowerer, e, env) -> list[tuple]:
    """Per result of the map e, the inner dimensions of its rows when e is
    empty (e.empty_dims, from core/empty_shapes.py; 0 without them)."""
    atoms = iter(e.empty_dims or ())
    return [() if isinstance(t, ScalarType) else
            tuple(lw.scalar(next(atoms), env) if e.empty_dims is not None else ZERO
                  for _ in range(t.rank))
            for t in e.lam.ret]


def row_dims(lw: Lowerer, e, env) -> list[tuple] | None:
    """Per result of the map e, the inner dimensions of every row when e is
    not empty (e.row_dims, from core/empty_shapes.py), or None when they
    are known only by running a row."""
    if e.row_dims is None:
        return None
    atoms = iter(e.row_dims)
    return [() if isinstance(t, ScalarType) else
            tuple(lw.scalar(next(atoms), env) for _ in range(t.rank))
            for t in e.lam.ret]


#: chunks per thread of a multicore reduce/scan/filter on the CPU: the
#: ParFor over the chunks hands them out dynamically (codegen/cpu/
#: emit_parfor.py), so a thread descheduled mid-chunk holds up the join for
#: a quarter of its share instead of all of it (sum of 10^7 f32 under load:
#: 15.5 -> 12.0 ms, benchmarks/README.md "Under load")
CHUNKS_PER_THREAD = 4

#: bytes between the partial arrays of two chunks that threads update
#: often (mc/seghist.py's private histograms, mc/colred.py's partial rows):
#: no cache line, nor the pair of lines an adjacent-line prefetcher fetches
#: together, then holds data of two threads, whatever the block's alignment
#: (kir.Alloc promises 16 bytes). Measured 2026-11-26 on the 2-core box:
#: 2^24 random bins on 2 threads took 3.6-5.3 ms unpadded (no faster than
#: one thread's 3.4 ms) and 1.86-1.92 ms padded (docs/cpu-backend.md,
#: "False sharing").
PAD_BYTES = 128



def n_chunks(lw: Lowerer, n: K.Expr, min_per_chunk: int, per_thread: int | None = None) -> K.Expr:
    """How many chunks a parallel reduction/scan/filter of n elements uses:
    `per_thread` (default CHUNKS_PER_THREAD; 1 for the gpu family's mc
    fallbacks, whose NumThreads is many per compute unit already) per thread
    when n is large enough to pay for a fork, else 1. Chunk c is indexed by
    c, never by the thread that runs it."""
    if per_thread is None:
        per_thread = 1 if lw.options.target.gpu else CHUNKS_PER_THREAD
    t = K.NumThreads()
    if per_thread > 1:
        t = S.b("mul", t, S.const(per_thread, I64))
    return lw.let("nch", K.Sel(S.b("ge", n, S.const(min_per_chunk, I64)), t, ONE))
