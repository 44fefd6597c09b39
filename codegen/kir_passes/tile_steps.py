"""Tiling of a parallel loop around a sequential step loop (the cpu target):
the second half of opt/interchange.py's map of the loop.

A ParFor whose body is `pre(i); for k in a..b: step(i, k); post(i)` runs
each element's steps as one dependent chain: LLVM vectorises innermost
loops only, so the step loop runs in scalar code, latency-bound (measured:
a 10-step particle update over 10M elements took as long as the ten
memory-bound vector passes it replaced). Here the ParFor is strip-mined
(strips of at most TILE elements, scratch.strip_header) and, within a
strip, the element loop is interchanged with the step loop:

    parfor c {                       per strip: V = the scalars pre sets
      for i in strip: pre(i); save V(i)            that step or post read
      for k in a..b:                 (one TILE-element scratch array each,
        for i in strip: load V(i); step(i, k); save V(i)     in L1)
      for i in strip: load V(i); post(i)
    }

which is loop tiling of the (element, step) space (Wolf and Lam, PLDI
1991; "time tiling" without skew, since no element reads another): the
inner loop over the strip's elements is straight-line code over
contiguous scratch, so the loop vectoriser widens it, and memory is read
and written once (pre's loads, post's stores) instead of once per step.

Each element still performs exactly its own statements in order on its
own values, so results are bit for bit the same. Only the interleaving of
elements changes, as inside any ParFor; a Fail in `step` fails the ParFor
with that element's error, one a ParFor of the untiled body could raise
(its first failure wins, in any order). Applied only when: `pre` and
`step` are Sets, Fails and Ifs of those (no stores, allocations or
loops), `post` adds Stores; `step` loads only through pointers that no
Store of the body writes (the order of elements is then invisible) and
never at an index that reads the step counter (a reduction over a row or
over all bodies walks memory contiguously already, and across a strip it
would walk it with a stride; loops of that shape are left alone); the
step loop's bounds read only what the ParFor captures; every variable of
V is a scalar set at pre's top level. A strip holds at most STEP_BUDGET
element-steps (one element when its steps alone exceed it), which bounds
the time between the emitter's Ctrl-C polls (every 16 strips) to 16 *
max(STEP_BUDGET, steps) element-steps, as before for long step loops.
"""
from __future__ import annotations

from pyshark.core.types import I64

from .. import kir as K
from ..kir_traverse import ParForRewriter, block_exprs, map_bodies, walk_stms
from .scratch import strip_header

TILE = 256              # elements per strip: V's scratch stays in L1
STEP_BUDGET = 1 << 16   # element-steps per strip, at most (unless one element has more)


def _only(b: K.Block, allowed: tuple) -> bool:
    return all(isinstance(s, allowed) for s in walk_stms(b))


def _reads(b: K.Block) -> set[str]:
    return {x.name for x in block_exprs(b) if x.__class__ is K.KVar}


class _Tiler(ParForRewriter):
    def __init__(self):
        self.k = 0

    def var(self, hint: str, t=I64) -> K.KVar:
        self.k += 1
        return K.KVar(f"{hint}_t{self.k}", t)

    def parfor(self, p: K.ParFor):
        if p.group_size is not None:
            return p
        stms = p.body.stms
        loops = [j for j, s in enumerate(stms) if isinstance(s, K.For)]
        if len(loops) != 1:
            return p
        j = loops[0]
        pre, f, post = K.Block(stms[:j]), stms[j], K.Block(stms[j + 1:])
        simple = (K.Set, K.Fail, K.If)
        if not (_only(pre, simple) and _only(f.body, simple)
                and _only(post, simple + (K.Store,))):
            return p
        if any(isinstance(s, K.Store) and s.nontemporal for s in post.stms):
            return p
        declared: set[str] = {p.var.name}
        for s in stms:
            declared |= K.declared_vars(s)
        if (K.expr_vars(f.lo) | K.expr_vars(f.hi)) & declared:
            return p                        # the trip count varies by element
        stored = set()
        for s in walk_stms(post):
            if isinstance(s, K.Store):
                stored |= K.expr_vars(s.ptr)
        for e in block_exprs(f.body):
            if isinstance(e, K.Load) and K.expr_vars(e.ptr) & stored:
                return p
            if isinstance(e, K.Load) and f.var.name in K.expr_vars(e.index):
                return p                    # a row's walk (a reduction): contiguous as it is
        top = {s.var.name: s.var for s in pre.stms if isinstance(s, K.Set)}
        pre_decl = set()
        for s in pre.stms:
            pre_decl |= K.declared_vars(s)
        wanted = (_reads(f.body) | _reads(post)) & pre_decl
        step_decl = set()
        for s in f.body.stms:
            step_decl |= K.declared_vars(s)
        if (_reads(post) & step_decl) - pre_decl:
            return p                        # post reads a temporary of the last step
        if not wanted <= set(top) or any(isinstance(top[v].type, K.Ptr) for v in wanted):
            return p
        if not wanted:
            return p
        state = [top[v] for v in sorted(wanted)]
        return self.tile(p, pre, f, post, state, step_decl)

    def tile(self, p, pre, f, post, state, step_decl):
        # at most STEP_BUDGET element-steps a strip (when steps allow): the
        # emitter polls for Ctrl-C every 16 strips, and before tiling every
        # 16 elements; the poll interval grows to 16 * max(STEP_BUDGET, steps)
        steps = self.var("steps")
        one = K.KConst(1, I64)
        span = K.Bin("sub", f.hi, f.lo)
        limit = K.Bin("div", K.KConst(STEP_BUDGET, I64), steps)
        host, c, n0, b = strip_header(self.var, p.count, TILE, limit)
        host = [K.Set(steps, K.Sel(K.Bin("lt", span, one), one, span))] + host
        lo, hi = self.var("lo"), self.var("hi")
        i = p.var
        slot = K.Bin("sub", i, lo)
        bufs = {v.name: self.var(v.name + "_tile", K.Ptr(v.type)) for v in state}
        save = [K.Store(bufs[v.name], slot, v) for v in state]
        save_step = [K.Store(bufs[v.name], slot, v) for v in state if v.name in step_decl]
        load = [K.Set(v, K.Load(bufs[v.name], slot)) for v in state]
        end = K.Bin("add", lo, b)
        body = (
            [K.Set(lo, K.Bin("mul", c, b)), K.Set(hi, K.Sel(K.Bin("lt", end, n0), end, n0))]
            + [K.Alloc(bufs[v.name], b) for v in state]
            + [K.For(i, lo, hi, K.Block(pre.stms + tuple(save))),
               K.For(f.var, f.lo, f.hi,
                     K.Block((K.For(i, lo, hi, K.Block(tuple(load) + f.body.stms
                                                       + tuple(save_step))),))),
               K.For(i, lo, hi, K.Block(tuple(load) + post.stms))]
            + [K.Free(bufs[v.name]) for v in state])
        return host + [K.ParFor(c, host[-1].var, K.Block(tuple(body)), p.parallel_if)]


def tile_steps(m: K.Module) -> K.Module:
    """`m` with its ParFors around a step loop tiled (see the module docstring)."""
    return map_bodies(m, _Tiler().block)


__all__ = ["tile_steps", "TILE"]
