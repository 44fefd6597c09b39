"""Thread coarsening of streaming ParFors: each work-item runs F consecutive
iterations, every load of the F before any store.

    parfor i in 0..n { body(i) }
 =>
    cnt = n
    parfor g in 0..ceil(cnt / F) {
      i0 = g * F
      if i0 <= cnt - F {            # a whole group of F
        body(i0) .. body(i0+F-1)      without their stores, renamed apart
        the stores of body(i0) .. body(i0+F-1)
      } else {
        for i in i0..min(i0 + F, cnt) { body(i) }
      }
    }

Why: on an NVIDIA H100, saxpy over 2^28 f32 as one element per work-item
moved 2.74 TB/s; four consecutive elements per work-item with the eight
loads issued before the four stores moved 3.05 TB/s (more bytes in flight
per thread, and 128-bit-friendly access), the same as float4 vector loads;
four elements with each store before the next element's loads moved only
1.9 TB/s (the stores may alias the later loads, so the loads wait). This is
the "thread coarsening" of GPU compilers (e.g. Magni, Dubach, O'Boyle,
"Automatic optimization of thread-coarsening for GPUs", PACT 2014), here
only for bodies where moving the stores is plainly sound:

- the body is straight-line code: Set, Store at its top level, If and Fail
  (no loops, atomics, allocation or copies), of modest size;
- every store goes through a pointer that the function allocated itself
  (fresh memory, which no parameter can alias), that the body never loads
  through, directly or through a pointer computed from it, and that is
  never stored as a value (it cannot come back under another name).

A Fail moved before an earlier iteration's store changes nothing a caller
sees: the entry raises, and what the kernel wrote is not returned. Applied
to kernel IR for an OpenCL device (the last stage of the gpu pipeline,
codegen/stages.py), with F from the target record (Target.coarsen; 1 turns
it off).
"""
from __future__ import annotations

from dataclasses import replace

from pyshark.core.types import I64

from .. import kir as K
from ..kir_traverse import block_exprs, map_block, map_stm, walk_stms

# body statements (sub-blocks included) above which a ParFor is left alone:
# F copies of a large body cost registers and instruction cache
MAX_BODY = 96


def _base(p: K.Expr):
    while isinstance(p, K.PtrAdd):
        p = p.ptr
    return p.name if isinstance(p, K.KVar) else None


class _Function:
    """What one function tells about its pointers: which it allocates, which
    are computed from which (Set), and which escape: stored as a value
    anywhere but into an out-param (a pointer parameter the function never
    loads a pointer from: the entry ABI's results)."""

    def __init__(self, f: K.Function):
        self.allocated: set[str] = set()
        self.derived: dict[str, set[str]] = {}      # v -> variables set from v
        self.escaped: set[str] = set()
        params = {p.name for p in f.params}
        stms = list(walk_stms(f.body))
        ptr_sources = {_base(x.ptr) for x in block_exprs(f.body)
                       if isinstance(x, K.Load) and isinstance(K.type_of(x), K.Ptr)}
        for s in stms:
            if isinstance(s, K.Alloc):
                self.allocated.add(s.var.name)
            elif isinstance(s, K.Set) and isinstance(s.var.type, K.Ptr):
                for v in K.expr_vars(s.value):
                    self.derived.setdefault(v, set()).add(s.var.name)
            elif isinstance(s, K.Store) and isinstance(K.type_of(s.value), K.Ptr):
                into = _base(s.ptr)
                if into not in params or into in ptr_sources:
                    self.escaped |= K.expr_vars(s.value)
            elif isinstance(s, K.AtomicUpdate):
                self.escaped |= K.expr_vars(s.value)

    def aliases(self, name: str) -> set[str]:
        out, todo = {name}, [name]
        while todo:
            for w in self.derived.get(todo.pop(), ()):
                if w not in out:
                    out.add(w)
                    todo.append(w)
        return out


def _qualifies(p: K.ParFor, fn: _Function) -> bool:
    if p.group_size is not None:
        return False
    stms = list(walk_stms(p.body))
    if not stms or len(stms) > MAX_BODY:
        return False
    if not all(isinstance(s, (K.Set, K.Store, K.If, K.Fail)) for s in stms):
        return False
    top = set(map(id, p.body.stms))
    stores = [s for s in stms if isinstance(s, K.Store)]
    if not stores or any(id(s) not in top for s in stores):
        return False
    loaded = {_base(x.ptr) for x in block_exprs(p.body) if isinstance(x, K.Load)}
    if not loaded:
        return False            # nothing to batch (zero-fills and the like)
    for s in stores:
        b = _base(s.ptr)
        if b is None or b not in fn.allocated or b in fn.escaped:
            return False
        if fn.aliases(b) & (loaded | fn.escaped):
            return False
    return True


class _Coarsen:
    def __init__(self, f: K.Function, factor: int):
        self.fn = _Function(f)
        self.factor = factor
        self.taken = {p.name for p in f.params} | {
            v for s in f.body.stms for v in K.declared_vars(s)}
        self.k = 0

    def fresh(self, v: K.KVar, tag: str) -> K.KVar:
        self.k += 1
        name = f"{v.name}_{tag}{self.k}"
        while name in self.taken:
            self.k += 1
            name = f"{v.name}_{tag}{self.k}"
        self.taken.add(name)
        return K.KVar(name, v.type)

    def block(self, b: K.Block) -> K.Block:
        return map_block(b, self.stm)

    def stm(self, s: K.Stm):
        if isinstance(s, K.ParFor):         # ParFors do not nest
            return self.coarsen(s) if _qualifies(s, self.fn) else s
        return map_stm(s, block=self.block)

    def coarsen(self, p: K.ParFor) -> list:
        F = self.factor
        cF = K.KConst(F, I64)
        cnt = self.fresh(K.KVar("cnt", I64), "c")
        g = self.fresh(p.var, "g")
        i0 = self.fresh(p.var, "i0")
        declared = set()
        for s in p.body.stms:
            declared |= K.declared_vars(s)
        work, stores = [], []
        for k in range(F):
            m = {p.var.name: self.fresh(p.var, f"k{k}_")}
            for s in walk_stms(p.body):
                if isinstance(s, K.Set) and s.var.name not in m:
                    m[s.var.name] = self.fresh(s.var, f"k{k}_")
            work.append(K.Set(m[p.var.name], K.Bin("add", i0, K.KConst(k, I64))))
            for s in K.rename_block(p.body, m).stms:
                (stores if isinstance(s, K.Store) else work).append(s)
        end = K.Bin("add", i0, cF)
        hi = K.Sel(K.Bin("lt", end, cnt), end, cnt)
        whole = K.Bin("le", i0, K.Bin("sub", cnt, cF))
        body = K.Block((K.Set(i0, K.Bin("mul", g, cF)),
                        K.If(whole, K.Block(tuple(work + stores)),
                             K.Block((K.For(p.var, i0, hi, p.body),))),))
        count = K.Bin("div", K.Bin("add", cnt, K.KConst(F - 1, I64)), cF)
        return [K.Set(cnt, p.count), K.ParFor(g, count, body, p.parallel_if)]


def coarsen_parfors(m: K.Module, factor: int) -> K.Module:
    """m with every qualifying plain ParFor coarsened by `factor` (module
    docstring); factor <= 1 returns m."""
    if factor <= 1:
        return m
    fns = [replace(f, body=_Coarsen(f, factor).block(f.body)) for f in m.functions]
    return K.Module(fns, m.messages)


__all__ = ["coarsen_parfors", "MAX_BODY"]
