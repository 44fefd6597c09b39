"""Outer-loop vectorisation of a map over independent sequential recurrences
(a kernel IR -> kernel IR pass, cpu).

A map whose element runs a sequential loop (a tridiagonal solve per row:
`parfor k { bb = copy(b[k]); for i: bb[i] = f(bb[i-1], ...); ... }`) runs
one latency-bound chain at a time, and LLVM's loop vectoriser, which widens
innermost loops only, finds nothing to widen. Here the map's loop is
strip-mined by W (a ParFor, or a For the lowering marks `independent`),
its body is split at its loops (loop fission) and every piece runs for the
W systems of the strip in turn (loop interchange), so the `for s` loop
over systems is innermost and vectorises, W chains in the lanes:

    parfor k in 0..n {                 parfor g in 0..n / W {
      pre(k)                             for s in 0..W { k = g*W + s; pre(k) }
      for i in lo..hi { body(k, i) }  => for i in lo..hi { for s in 0..W { k = g*W + s; body(k, i) } }
      post(k)                            for s in 0..W { k = g*W + s; post(k) }
    }                                  }
                                       parfor r in 0..n mod W { k = n - n mod W + r; pre; loop; post }

The same strips serve a map whose element is a reduction down a column
(`sum(a[i][t] * b[t][j] for t)` per entry j, a matrix product written per
entry): along t the loop strides through b, which LLVM's vectoriser can
only gather, while across the W entries of a strip the loads of one t are
consecutive, so the interchanged loop is the i-t-j order an expert writes
(_Plan._column_walk). Session 36: 4096 products of 16 x 16 f32 matrices,
2-core Zen 5, 2.14 -> 0.37 ms; Numba's i-k-j peer 0.52 ms.

This is outer-loop vectorisation by strip-mining and interchange (Allen and
Kennedy, "Optimizing Compilers for Modern Architectures", 2001, ch. 5-6;
Nuzman and Zaks, "Outer-loop vectorization: revisited for short SIMD
architectures", PACT 2008), as an expert writes it by hand
(benchmarks/peers/numba_locvolcalib.py). What it needs:

- scalar expansion: a variable of the element set in one piece and read in
  another becomes a W-element array indexed by s; a variable set once at
  the top of the body from k, constants and outer values only (a row
  pointer `in + k * n1`) is recomputed in each piece instead; one that does
  not read k at all (a row length, the lowering's loop-versioning test
  `inb`) is computed once per strip, so an `if inb {loop} else {checked
  loop}` is unswitched around the `for s` loop;
- a per-element allocation of a size the strip shares (`ps.copy`), reached
  through the aliases a loop carries (`nb = bb; bb = nb`), becomes one block
  per strip, interleaved `arena[e * W + s]` (expand.py's alias classes), so
  the lanes touch consecutive addresses;
- the remainder elements (n mod W) run the original body.

Values are bit-identical: each element runs its own operations in its own
order; only the interleaving between elements changes, which a map allows
(its elements are independent: a ParFor's contract, and For.independent's).

Errors: every statement of an element still runs after all of that
element's earlier statements, with the same values, so the first Fail
reached in the new order is one that its element reaches first when it runs
alone: an error, with its message, that this element raises in Python mode.
Which element's error wins may change, as it already may inside a ParFor
("the first failure wins", kir.py; codegen/opt/flatten.py argues the same
for its map-loop interchange). A per-strip statement (hoisted, or an
unswitched test) is an expression, which never fails; integer divisions in
one keep the lowering's guarded form (a Sel or a constant divisor).

Declined (the loop stays as it was): a body with a While, a nested ParFor,
atomics or work-group operations; an allocation that is not at the top
level, is zeroed, has a size that depends on the element, or whose pointer
escapes plain loads, stores and copies; a body with no loop whose bounds
are strip-invariant and whose body is straight-line (Set, Store, If, Fail);
an independent For whose body's variables are read after it.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from pyshark.core.types import I64

from .. import kir as K
from ..kir import ALLOC_FAIL_MESSAGE
from ..kir_traverse import (binders, block_exprs, has_expr, map_block, map_bodies, map_stm,
                            walk_exprs, walk_stms)
from .expand import Interleave, alias_class, direct_only

WIDTH = 8           # systems per strip: 8 f32 lanes of AVX2
_LIMIT = 1 << 62
_REJECT = (K.While, K.ParFor, K.AtomicUpdate, K.AtomicLoad, K.Barrier, K.LocalAlloc)
_LOOP_BODY = (K.Set, K.Store, K.If, K.Fail)


def _c(v: int) -> K.KConst:
    return K.KConst(v, I64)


def _reads(e: K.Expr) -> set:
    return {x.name for x in walk_exprs(e) if x.__class__ is K.KVar}


def _stm_reads(s: K.Stm) -> set:
    return {x.name for x in block_exprs(K.Block((s,))) if x.__class__ is K.KVar}


def _guarded_divs(e: K.Expr) -> bool:
    """Integer divisions only by a nonzero constant or a Sel (scalar.py's
    guarded divisor): safe to evaluate where the element did not."""
    for x in walk_exprs(e):
        if (isinstance(x, K.Bin) and x.op in ("div", "rem") and not K.type_of(x.x).is_float
                and not (isinstance(x.y, K.Sel) or (isinstance(x.y, K.KConst)
                                                    and x.y.value not in (0, -1)))):
            return False
    return True


def _unit_in(index: K.Expr, k: str, deps: dict) -> bool:
    """index is k, or k plus terms that do not read k: consecutive elements
    load consecutive addresses."""
    if isinstance(index, K.KVar):
        return index.name == k
    if isinstance(index, K.Bin) and index.op == "add":
        for a, b in ((index.x, index.y), (index.y, index.x)):
            if isinstance(a, K.KVar) and a.name == k and not any(
                    n == k or k in deps.get(n, ()) for n in _reads(b)):
                return True
    return False


@dataclass
class _Leaf:
    """A piece of the body: scalar statements (`for s: stms`) or one loop
    (`for i: for s: body`)."""
    stms: list
    loop: bool
    path: tuple                     # ((if number, branch), ...) of the enclosing _Ifs
    sets: set = field(default_factory=set)
    reads: set = field(default_factory=set)


@dataclass
class _If:
    """An If on a strip-invariant condition with a loop inside: unswitched."""
    cond: K.Expr
    then: list
    orelse: list


class _Plan:
    """The analysis of one loop body for the element variable k; `ok` is
    False when the loop must stay as it is."""

    def __init__(self, body: K.Block, k: K.KVar, width: int):
        self.body, self.k, self.w = body, k, width
        self.ok = False
        if any(isinstance(s, _REJECT) for s in walk_stms(body)):
            return
        counts = Counter(v.name for s in walk_stms(body) for v in binders(s))
        self.local = set(counts) | {k.name}
        self.uniform: set = set()
        self.remat: set = set()
        self.uniform_sets: list = []
        self.remat_sets: list = []
        self.dropped: set = set()           # ids of top-level statements that go away
        for s in body.stms:
            if not (isinstance(s, K.Set) and counts[s.var.name] == 1) or s.var.name == k.name:
                continue
            v = s.value
            if has_expr(v, (K.Load, K.NumThreads)) or not _guarded_divs(v):
                continue
            r = _reads(v) & self.local
            if r <= self.uniform:
                self.uniform.add(s.var.name)
                self.uniform_sets.append(s)
                self.dropped.add(id(s))
            elif r <= self.uniform | self.remat | {k.name}:
                self.remat.add(s.var.name)
                self.remat_sets.append(s)
                self.dropped.add(id(s))
        self.classes: list = []             # (Alloc, names of its alias class)
        self.arena_of: dict = {}
        for s in walk_stms(body):
            if isinstance(s, K.Alloc):
                cls = self._arena_class(s)
                if cls is None:
                    return
                self.classes.append((s, cls))
                self.arena_of.update(dict.fromkeys(cls, s.var.name))
        for s in body.stms:
            if isinstance(s, K.Free) and isinstance(s.ptr, K.KVar) and s.ptr.name in self.arena_of:
                self.dropped.add(id(s))
        if any(isinstance(s, K.Free) and id(s) not in self.dropped for s in walk_stms(body)):
            return
        self.nif = 0
        self.units = self._units(body.stms, ())
        self.leaves = list(self._leaves(self.units))
        if not any(leaf.loop for leaf in self.leaves):
            return
        self._expansion()
        self.ok = True

    # -- what qualifies

    def uniform_expr(self, e: K.Expr) -> bool:
        return (not has_expr(e, (K.Load, K.NumThreads)) and _guarded_divs(e)
                and (_reads(e) & self.local) <= self.uniform)

    def _arena_class(self, a: K.Alloc) -> Optional[set]:
        if (not any(a is t for t in self.body.stms) or a.zeroed
                or isinstance(a.var.type.elem, K.Ptr) or not self.uniform_expr(a.count)):
            return None
        if sum(1 for s in walk_stms(self.body)
               if isinstance(s, (K.Set, K.Alloc)) and s.var.name == a.var.name) != 1:
            return None
        cls = alias_class(self.body, a)
        k = self.body.stms.index(a)
        frees = [s for s in walk_stms(self.body)
                 if isinstance(s, K.Free) and isinstance(s.ptr, K.KVar) and s.ptr.name in cls]
        top = [s for s in self.body.stms[k + 1:] if any(s is f for f in frees)]
        if len(frees) != 1 or len(top) != 1 or not direct_only(self.body, cls):
            return None
        return cls

    def _loop_ok(self, f: K.For) -> bool:
        """A sequential loop with strip-invariant bounds and a straight-line
        body that carries a recurrence through the element's own buffer (it
        loads and stores one alias class), or a reduction down a column
        (_column_walk). Other loops stay inside their piece: an independent
        one (an inner map) or a reduction along a row vectorises along its
        own index already, over contiguous memory."""
        if f.independent or not (self.uniform_expr(f.lo) and self.uniform_expr(f.hi)):
            return False
        if not all(isinstance(s, _LOOP_BODY) for s in walk_stms(f.body)):
            return False
        stored = {s.ptr.name for s in walk_stms(f.body)
                  if isinstance(s, K.Store) and isinstance(s.ptr, K.KVar)}
        loaded = {e.ptr.name for e in block_exprs(f.body)
                  if isinstance(e, K.Load) and isinstance(e.ptr, K.KVar)}
        return (any(a in self.arena_of and self.arena_of[a] == self.arena_of.get(b)
                    for a in stored for b in loaded)
                or self._column_walk(f))

    def _column_walk(self, f: K.For) -> bool:
        """A reduction that walks columns: `acc += a[i, t] * b[t, k]` over t
        for the element k (a matrix product written as a sum per entry). Its
        own index strides through b, which LLVM's vectoriser gathers; across
        the elements the loads of one t are consecutive (the i-k-j order an
        expert writes). Taken when the loop stores nothing, some load's index
        is k (plus what the strip shares) through a pointer that moves with
        the loop, and no load both moves with the loop's index and varies with
        k (a row walk, contiguous along the loop already)."""
        if any(isinstance(s, K.Store) for s in walk_stms(f.body)):
            return False
        k, t = self.k.name, f.var.name
        deps: dict = {}                 # a body variable -> the names among k, t it reads

        def of(e: K.Expr) -> set:
            out: set = set()
            for n in _reads(e):
                if n in (k, t):
                    out.add(n)
                elif n in deps:
                    out |= deps[n]
                elif n in self.remat:
                    out.add(k)
            return out
        for s in walk_stms(f.body):
            if isinstance(s, K.Set):
                deps[s.var.name] = deps.get(s.var.name, set()) | of(s.value)
        column = False
        for e in block_exprs(f.body):
            if not isinstance(e, K.Load):
                continue
            at, via = of(e.index), of(e.ptr)
            if k in at | via and t in at | via and not (k in at and t not in at and k not in via):
                return False            # a row walk, or a pointer from both
            if k in at and t in via and k not in via and _unit_in(e.index, k, deps):
                column = True
        return column

    # -- the pieces

    def _units(self, stms, path: tuple) -> list:
        out: list = []
        cur = None
        for s in stms:
            if id(s) in self.dropped or (isinstance(s, (K.Set, K.Alloc))
                                         and s.var.name in self.arena_of):
                continue
            if isinstance(s, K.For) and self._loop_ok(s):
                out.append(_Leaf([s], True, path))
                cur = None
            elif (isinstance(s, K.If) and self.uniform_expr(s.cond)
                  and any(isinstance(t, K.For) and self._loop_ok(t)
                          for t in walk_stms(K.Block((s,))))):
                self.nif += 1
                n = self.nif
                out.append(_If(s.cond, self._units(s.then.stms, path + ((n, 0),)),
                               self._units(s.orelse.stms, path + ((n, 1),))))
                cur = None
            else:
                if cur is None:
                    cur = _Leaf([], False, path)
                    out.append(cur)
                cur.stms.append(s)
        return out

    def _leaves(self, units):
        for u in units:
            if isinstance(u, _Leaf):
                yield u
            else:
                yield from self._leaves(u.then)
                yield from self._leaves(u.orelse)

    def _expansion(self) -> None:
        """Scalar expansion: a variable of the element that a piece reads
        and an earlier piece sets (not in another branch of a common
        unswitched If) gets a W-element array; `loads[j]`: those piece j
        reads."""
        skip = self.uniform | self.remat | set(self.arena_of) | {self.k.name}
        for leaf in self.leaves:
            for s in leaf.stms:
                for t in walk_stms(K.Block((s,))):
                    leaf.sets |= {v.name for v in binders(t)}
                leaf.reads |= _stm_reads(s)
            leaf.sets -= skip
            leaf.reads = (leaf.reads & self.local) - skip
        self.loads: list = []
        for j, leaf in enumerate(self.leaves):
            mine = dict(leaf.path)
            before: set = set()
            for other in self.leaves[:j]:
                if all(mine.get(n, b) == b for n, b in other.path):
                    before |= other.sets
            self.loads.append(sorted(leaf.reads & before))
        self.expanded = set().union(*self.loads)
        self.types: dict = {}
        for s in walk_stms(self.body):
            for v in binders(s):
                if v.name in self.expanded:
                    self.types[v.name] = v.type


# ---------------------------------------------------------------------------
# the rewrite


class _Emit(Interleave):
    """Spells one strip of a planned loop: `base` is the first element."""

    def __init__(self, plan: _Plan, base: K.KVar, fresh, module: K.Module):
        self.p, self.base, self.fresh, self.m = plan, base, fresh, module
        self.w = plan.w
        self.n = _c(plan.w)         # Interleave's slot: e * W + s
        self.arenas: dict = {}      # alias-class name -> arena variable
        self.arrays: dict = {}      # expanded name -> its W-element array
        self.s: Optional[K.KVar] = None
        self.leaf_no = 0

    # setup and teardown of a strip

    def strip(self) -> list:
        p = self.p
        one = _c(1)
        out: list = list(p.uniform_sets)
        after: list = []
        for a, cls in p.classes:
            elem = a.var.type.elem
            size = elem.bytes
            c, c1 = self.fresh("c", I64), self.fresh("c1", I64)
            arena = self.fresh("arena", a.var.type)
            out += [K.Set(c, a.count), K.Set(c1, K.Sel(K.Bin("ge", c, one), c, one)),
                    K.If(K.Bin("gt", c1, _c(_LIMIT // size // self.w)), K.Block((
                        K.Fail("MemoryError", self.m.message(ALLOC_FAIL_MESSAGE),
                               (c, _c(size))),))),
                    K.Alloc(arena, K.Bin("mul", c1, _c(self.w)))]
            after.append(K.Free(arena))
            self.arenas.update(dict.fromkeys(cls, arena))
        for name in sorted(p.expanded):
            arr = self.fresh(f"{name}_sx", K.Ptr(p.types[name]))
            out.append(K.Alloc(arr, _c(self.w)))
            after.append(K.Free(arr))
            self.arrays[name] = arr
        return out + self.units(p.units) + after

    def units(self, units: list) -> list:
        out: list = []
        for u in units:
            if isinstance(u, _If):
                out.append(K.If(u.cond, K.Block(tuple(self.units(u.then))),
                                K.Block(tuple(self.units(u.orelse)))))
                continue
            loads = self.p.loads[self.leaf_no]
            self.leaf_no += 1
            self.s = self.fresh("s", I64)
            head = [K.Set(self.p.k, K.Bin("add", self.base, self.s))] + list(self.p.remat_sets)
            head += [K.Set(K.KVar(n, self.p.types[n]), K.Load(self.arrays[n], self.s))
                     for n in loads]
            if u.loop:
                f = u.stms[0]
                inner = K.For(self.s, _c(0), _c(self.w),
                              K.Block(tuple(head) + self.block(f.body).stms))
                out.append(K.For(f.var, f.lo, f.hi, K.Block((inner,))))
            else:
                body = map_block(K.Block(tuple(u.stms)), self.stm)
                out.append(K.For(self.s, _c(0), _c(self.w), K.Block(tuple(head) + body.stms)))
        return out

    # statements of a piece, for element s of the strip: expand.Interleave's
    # rewriting, with the strip's slot e * W + s, and each expanded scalar
    # stored to its W-element array where it is set

    @property
    def i(self) -> Optional[K.KVar]:
        return self.s

    def stm(self, s: K.Stm):
        out = Interleave.stm(self, s)
        if (isinstance(s, K.Set) and s.var.name in self.arrays
                and s.var.name not in self.arenas):
            return [out, K.Store(self.arrays[s.var.name], self.s, s.var)]
        return out


class _Pass:
    def __init__(self, m: K.Module, width: int):
        self.m, self.w, self.n = m, width, 0

    def fresh(self, hint: str, t) -> K.KVar:
        self.n += 1
        return K.KVar(f"{hint}_si{self.n}", t)

    def strips(self, body: K.Block, k: K.KVar, base_of) -> Optional[tuple]:
        """(strip counter, strip body) for a loop body, or None (declined)."""
        plan = _Plan(body, k, self.w)
        if not plan.ok:
            return None
        g, base = self.fresh("g", I64), self.fresh("base", I64)
        em = _Emit(plan, base, self.fresh, self.m)
        return g, K.Block(tuple([K.Set(base, base_of(g))] + em.strip()))

    def parfor(self, p: K.ParFor) -> Optional[list]:
        if p.group_size is not None:
            return None
        nn, nf = self.fresh("nn", I64), self.fresh("nf", I64)
        full = K.Bin("mul", nf, _c(self.w))
        got = self.strips(p.body, p.var, lambda g: K.Bin("mul", g, _c(self.w)))
        if got is None:
            return None
        g, body = got
        r = self.fresh("r", I64)
        rest = K.Block((K.Set(p.var, K.Bin("add", full, r)),) + p.body.stms)
        return [K.Set(nn, K.Sel(K.Bin("gt", p.count, _c(0)), p.count, _c(0))),
                K.Set(nf, K.Bin("div", nn, _c(self.w))),
                K.ParFor(g, nf, body, p.parallel_if),
                K.ParFor(r, K.Bin("sub", nn, full), rest, p.parallel_if)]

    def for_(self, f: K.For, escaped: set) -> Optional[list]:
        if not f.independent or (K.declared_vars(f) - {f.var.name}) & escaped:
            return None
        lo, nf = self.fresh("lo", I64), self.fresh("nf", I64)
        got = self.strips(f.body, f.var,
                          lambda g: K.Bin("add", lo, K.Bin("mul", g, _c(self.w))))
        if got is None:
            return None
        g, body = got
        cnt = K.Bin("sub", f.hi, lo)
        return [K.Set(lo, f.lo),
                K.Set(nf, K.Bin("div", K.Sel(K.Bin("gt", cnt, _c(0)), cnt, _c(0)), _c(self.w))),
                K.For(g, _c(0), nf, body),
                K.For(f.var, K.Bin("add", lo, K.Bin("mul", nf, _c(self.w))), f.hi, f.body,
                      f.unroll, True)]

    def block(self, b: K.Block, after: frozenset) -> K.Block:
        """b with its loops rewritten; `after`: the variables that code
        running after b reads (an independent For's variables must not be
        among them: kir.For says the lowering never does that)."""
        stms = list(b.stms)
        later = [after] * (len(stms) + 1)
        for j in range(len(stms) - 1, -1, -1):
            later[j] = later[j + 1] | _stm_reads(stms[j])
        out: list = []
        for j, s in enumerate(stms):
            new = None
            if isinstance(s, K.ParFor):
                new = self.parfor(s)
            elif isinstance(s, K.For):
                new = self.for_(s, later[j + 1])
            if new is None:
                new = map_stm(s, block=lambda sb: self.block(sb, later[j + 1]))
            out.extend(new if isinstance(new, list) else [new])
        return K.Block(tuple(out))


def simd_interchange(m: K.Module, width: int = WIDTH) -> K.Module:
    """`m` with every qualifying map loop strip-mined by `width` and
    interchanged (see above); may add ALLOC_FAIL_MESSAGE to m.messages
    (shared with the result)."""
    p = _Pass(m, width)
    return map_bodies(m, lambda b: p.block(b, frozenset()), messages=m.messages)


__all__ = ["simd_interchange", "WIDTH"]
