"""Per-chunk scratch (the cpu target): an array local to one element of a
parallel loop is allocated once per chunk of iterations and reused, not
once per element.

    parfor i in 0..n {                n0 = max(n, 0)
      t = alloc(c)                    B  = clamp(n0 / (8 * NumThreads), 1, CHUNK)
      ... t ...                 =>    parfor c in 0..ceil(n0 / B) {
      free(t)                           lo = c * B; hi = min(lo + B, n0)
    }                                   t = alloc(c)
                                        for i in lo..hi { ... t ... }
                                        free(t)
                                      }

This is strip-mining the ParFor (Allen and Kennedy, "Optimizing Compilers
for Modern Architectures", ch. 8) so that memory.py's loop-invariant
allocation hoisting applies to the strip loop; the same conditions decide
what moves (an Alloc at the top level of the body, set once, with a size
that reads no memory and nothing the iteration computes but loop-invariant
top-level definitions, freed at the top level of the same iteration), and
the pointer must not escape the iteration (never the value of a Store,
itself or a pointer derived from it). Futhark's allocation expansion
(expand.py, the gpu target) gives each iteration a slice of one big block;
a CPU thread runs its iterations one after another, so one block per strip
suffices.

Why a kir -> kir pass and not a per-thread prologue in the emitter
(codegen/cpu/emit_parfor.py, whose outlined function runs the body
function on each block it claims): the strips are ordinary kernel IR, so
the kir interpreter checks them (shuffled chunks, use-after-free, leaks)
and the emitter's failure paths need nothing new: an Alloc in the chunk
body is in the body function's unwind table (emit_unwind.py), so a Fail
in any iteration of the strip frees it. What it keeps of the emitter:
- Scheduling: B is about n / (8 T), the emitter's own block length, capped
  at CHUNK iterations; the emitter then deals out strips in blocks of about
  ceil(n / B) / (8 T) strips, so threads claim work at the same grain as
  before and a descheduled thread still holds up the join by one block.
- Ctrl-C: the chunk body loops, so the emitter polls every 16 strips, i.e.
  every 16 * CHUNK = 1024 iterations (before: every 16; the cap bounds it).
- Vectorisation: the strip's For runs the old body as the body function's
  loop did, with the same noalias captures; the inner loops that fill the
  scratch (what vectorises in such bodies) are unchanged. The pass runs
  before stream-stores, which marks stores only at the top of a ParFor
  body: a strip-mined body is never streamed (it holds a loop anyway).
- Errors: the same iterations run, in strips; which iteration's failure
  wins was already the first of any order. An Alloc that fails
  (MemoryError) now fails before the strip's first iteration instead of in
  it, as memory.py's hoisting already does for sequential loops.
Gain: one malloc/free per strip instead of per element. For small
blocks glibc's per-thread cache made those cheap already (the pricer of
issue 17 at n = 100000, m = 64 ran within noise); it matters for blocks
past the cache and the mmap threshold, which cost a system call and page
faults per element.
"""
from __future__ import annotations

from dataclasses import replace

from pyshark.core.types import I64

from .. import kir as K
from ..kir_traverse import ParForRewriter, map_bodies, walk_stms
from .memory import hoist_from_loop

CHUNK = 64              # at most this many iterations per strip (Ctrl-C grain)
_PER_THREAD = 8         # about this many strips' worth of blocks per thread


def _derived(body: K.Block, p: str) -> set[str]:
    """p and the pointer variables the body sets from it (aliases, offsets)."""
    out = {p}
    changed = True
    while changed:
        changed = False
        for s in walk_stms(body):
            if (isinstance(s, K.Set) and isinstance(s.var.type, K.Ptr)
                    and s.var.name not in out and K.expr_vars(s.value) & out):
                out.add(s.var.name)
                changed = True
    return out


def _escapes(body: K.Block, p: str) -> bool:
    """Whether the block of pointer p may outlive the iteration: p or a
    pointer derived from it is stored into memory."""
    names = _derived(body, p)
    return any(isinstance(s, (K.Store, K.AtomicUpdate)) and K.expr_vars(s.value) & names
               for s in walk_stms(body))


class _Strips(ParForRewriter):
    def __init__(self):
        self.k = 0

    def var(self, hint: str) -> K.KVar:
        self.k += 1
        return K.KVar(f"{hint}_s{self.k}", I64)

    def parfor(self, p: K.ParFor):
        if p.group_size is not None or any(isinstance(t, K.Store) and t.nontemporal
                                           for t in p.body.stms):
            return p
        lo, hi = self.var("lo"), self.var("hi")
        before, loop, after = hoist_from_loop(K.For(p.var, lo, hi, p.body))
        moved = [t.var.name for t in before if isinstance(t, K.Alloc)]
        if not moved or any(_escapes(p.body, name) for name in moved):
            return p
        host, c, n0, b = strip_header(self.var, p.count, CHUNK)
        end = K.Bin("add", lo, b)
        body = K.Block((K.Set(lo, K.Bin("mul", c, b)),
                        K.Set(hi, K.Sel(K.Bin("lt", end, n0), end, n0)),
                        *before, loop, *after))
        return host + [K.ParFor(c, host[-1].var, body, p.parallel_if)]


def strip_header(var, count: K.Expr, cap: int, limit: K.Expr = None):
    """The host statements that cut `count` iterations into strips of B =
    clamp(min(n0 / (8 * NumThreads), limit), 1, cap) (n0 = max(count, 0)):
    (statements, the strip counter, n0, B); the last statement sets the
    number of strips."""
    one, zero = K.KConst(1, I64), K.KConst(0, I64)
    n0, per, b = var("n"), var("per"), var("strip")
    nc, c = var("strips"), var("c")
    capc = K.KConst(cap, I64)
    share = K.Bin("div", n0, K.Bin("mul", K.NumThreads(), K.KConst(_PER_THREAD, I64)))
    if limit is not None:
        share = K.Sel(K.Bin("lt", limit, share), limit, share)
    host = [
        K.Set(n0, K.Sel(K.Bin("lt", count, zero), zero, count)),
        K.Set(per, share),
        K.Set(b, K.Sel(K.Bin("lt", per, one), one, K.Sel(K.Bin("gt", per, capc), capc, per))),
        K.Set(nc, K.Bin("add", K.Bin("div", n0, b),
                        K.Cast(I64, K.Bin("ne", K.Bin("rem", n0, b), zero)))),
    ]
    return host, c, n0, b


def chunk_scratch(m: K.Module) -> K.Module:
    """`m` with the per-iteration scratch of its ParFors allocated once per
    strip of iterations (see the module docstring)."""
    return map_bodies(m, _Strips().block)


__all__ = ["chunk_scratch", "strip_header", "CHUNK"]
