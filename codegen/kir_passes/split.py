"""Index-set splitting of parallel spaces (a kernel IR -> kernel IR pass).

    parfor r in 0..n { ... if r == 0 {A} elif r == n - 1 {B} else {C} ... }
 =>
    sa = clamp(1, 0, n); sb = clamp(n - 1, sa, n)
    parfor r in 0..sa {A}   parfor r in sa..sb {C}   parfor r in sb..n {B}

(a ParFor whose iterations loop, a row each, keeps one region that picks
its piece per row: `parfor r in 0..n { if r < sa {A} elif r < sb {C} else
{B} }`, Splitter.one_region)

Why: a stencil written as Rodinia writes hotspot (a cell function that is
an if/elif chain over corners, edges and interior) or with clamps
(`max(r - 1, 0)`) runs its branches, its negative-index wrap and its bounds
checks in every cell, so the inner loop neither vectorises (cpu) nor runs
branch-free (gpu). Splitting the index set of the loop at the points where
those affine comparisons change value (index-set splitting, as in Polly's
and Futhark's loop transformations and the loop peeling literature; LLVM's
IRCE for the range checks) leaves pieces in which every such comparison is
a constant, so each piece's body folds to straight-line code.

Done here on the kernel IR, not the core IR, because only here are the
comparisons that matter visible: the bounds checks and Python's negative-
index wrap are made by the lowering, and the 2-D space of tabulate_2d is a
ParFor over rows with a For over columns (cpu) or one flat ParFor with
r = i / w (gpu), both of which are split (the flat one by whole rows).

Meaning is kept:
- a ParFor's iterations run in any order and the first failure wins
  (kir.py), so running its index set as consecutive ParFors is one of its
  allowed orders; a For is split into consecutive pieces run in order, so
  its iterations keep their order exactly (nothing is reordered);
- each piece's body is simplified with the range its piece proves (an
  interval analysis over affine forms of i64 values), folding only what the
  range decides, so values, Fails and their messages are unchanged;
- the reasoning is over integers, which i64 arithmetic matches only without
  wrap-around: as Polly does, the split version runs under a run-time
  assumption (every symbol it reasons with lies within +-2^60), else the
  original loop runs.

Inside a split piece, a sequential For whose body still range-checks its
index monotonically (against another array's length) is versioned: the
check is made at both ends of the range once, and a check-free copy runs
when it holds (what vectorises), the checked one otherwise.

At most three pieces a dimension ([lo, a), [a, b), [b, hi)), a and b taken
from the comparison points near the ends of the range (strips of width up
to NEAR), else from the other points (`i < k`); no split when no
comparison on the index is left undecided.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import product
from typing import Optional

from pyshark.core.types import BOOL, I64

from .. import kir as K
from ..kir_traverse import binders, has_loop, map_block, map_expr, map_stm, walk_stms

_SUFFIX = re.compile(r"(_[sabpf][0-9]+)+$")
BIG = 1 << 60          # the run-time assumption's bound on every symbol
UNB = 1 << 63          # the magnitude of an unbounded atom
NEAR = 8               # a split point within NEAR of an end makes a boundary strip
MAX_DIM = 1 << 31      # the flat 2-D space's rows and width (no wrap in R * w)
MAX_BODY = 4000        # statements of a loop body worth copying into pieces


# ---------------------------------------------------------------------------
# Affine forms: sum of coef * atom + const, atoms being i64 variables


@dataclass(frozen=True)
class Aff:
    terms: tuple = ()          # sorted ((name, coef), ...), coef != 0
    const: int = 0

    @staticmethod
    def atom(name: str) -> "Aff":
        return Aff(((name, 1),), 0)

    def __add__(self, o: "Aff") -> "Aff":
        d = dict(self.terms)
        for n, c in o.terms:
            d[n] = d.get(n, 0) + c
        return Aff(tuple(sorted((n, c) for n, c in d.items() if c)), self.const + o.const)

    def scale(self, k: int) -> "Aff":
        if k == 0:
            return Aff((), 0)
        return Aff(tuple((n, c * k) for n, c in self.terms), self.const * k)

    def __sub__(self, o: "Aff") -> "Aff":
        return self + o.scale(-1)

    def shift(self, k: int) -> "Aff":
        return Aff(self.terms, self.const + k)

    def coef(self, name: str) -> int:
        return dict(self.terms).get(name, 0)

    def names(self) -> set:
        return {n for n, _ in self.terms}

    def subst(self, name: str, by: "Aff") -> "Aff":
        c = self.coef(name)
        if not c:
            return self
        return Aff(tuple((n, k) for n, k in self.terms if n != name), self.const) + by.scale(c)


def aff_expr(a: Aff) -> K.Expr:
    """The i64 expression of `a` (no wrap where its magnitude is below 2^63)."""
    e: Optional[K.Expr] = None
    for n, c in a.terms:
        t: K.Expr = K.KVar(n, I64)
        if c != 1:
            t = K.Bin("mul", t, K.KConst(c, I64))
        e = t if e is None else K.Bin("add", e, t)
    if e is None:
        return K.KConst(a.const, I64)
    return K.Bin("add", e, K.KConst(a.const, I64)) if a.const else e


def _representable(p: Aff) -> bool:
    """Whether a split point's i64 expression (aff_expr) cannot wrap under
    the run-time assumption (every symbol within +-BIG). A point beyond it
    (`i <= 2**63 - 1`, the check of ps.u64(i)) lies outside every range the
    split runs under, so it splits nothing; made a piece bound, its constant
    wrapped, and the piece assumed the check false for every index."""
    return abs(p.const) + sum(abs(c) for _, c in p.terms) * BIG < 1 << 62


def _and(a: Optional[K.Expr], b: K.Expr) -> K.Expr:
    return b if a is None else K.Bin("and", a, b)


def _clamp(x: K.Expr, lo: K.Expr, hi: K.Expr) -> K.Expr:
    """min(max(x, lo), hi) as selects."""
    m = K.Sel(K.Bin("lt", x, lo), lo, x)
    return K.Sel(K.Bin("gt", m, hi), hi, m)


# ---------------------------------------------------------------------------
# The analysis state at one program point


@dataclass
class Env:
    vals: dict = field(default_factory=dict)     # name -> bool | Aff (what it holds)
    ranges: dict = field(default_factory=dict)   # index name -> ([lower Aff], [upper excl. Aff])
    mag: dict = field(default_factory=dict)      # atom name -> bound on |value|
    pinned: set = field(default_factory=set)     # names whose facts come from a split
    rewrite: bool = True                         # fold (a piece) or only look (elsewhere)
    collect: Optional[dict] = None               # index name -> [threshold Aff] (dry run)
    variant: dict = field(default_factory=dict)  # index name -> names assigned in its loop
    split: bool = True                           # may split loops met here

    def copy(self) -> "Env":
        return Env(dict(self.vals), dict(self.ranges), type(self.mag)(self.mag), set(self.pinned),
                   self.rewrite, self.collect, dict(self.variant), self.split)


def _assigned(block: K.Block) -> set:
    return {v.name for s in walk_stms(block) for v in binders(s)}


class Splitter:
    """One function's analysis and rewrite (fresh names are its own)."""

    def __init__(self, fn: K.Function):
        self.count: dict = {}
        for s in walk_stms(fn.body):
            for v in binders(s):
                self.count[v.name] = self.count.get(v.name, 0) + 1
        # a loop counter is read-only in its loop and unreadable after it,
        # so it is an atom even where two loops share its name
        self.counters = {s.var.name for s in walk_stms(fn.body)
                         if isinstance(s, (K.For, K.ParFor))}
        self.taken = set(self.count) | {p.name for p in fn.params}
        # names assigned more than once that one loop being versioned does not
        # assign: atoms while its checks are read (version_checks)
        self.invariant: set = set()
        for p in fn.params:
            self.count[p.name] = 1
        self.k = 0

    def fresh(self, v: K.KVar, tag: str = "s") -> K.KVar:
        while True:
            self.k += 1
            name = f"{_SUFFIX.sub('', v.name)}_{tag}{self.k}"
            if name not in self.taken:
                self.taken.add(name)
                self.count[name] = 1
                return K.KVar(name, v.type)

    # -- magnitudes and decisions ------------------------------------------
    def magnitude(self, a: Aff, env: Env) -> int:
        return sum(abs(c) * env.mag.get(n, UNB) for n, c in a.terms) + abs(a.const)

    def _bounds(self, d: Aff, env: Env, low: bool, depth: int = 0) -> Optional[int]:
        """The least (low) or greatest value of d over the ranges in env,
        when the ranges make it a constant; None otherwise."""
        vs = [n for n in d.names() if n in env.ranges]
        if not vs:
            return d.const if not d.terms else None
        if depth > 3:
            return None
        best = None
        choices = []
        for n in vs:
            lows, highs = env.ranges[n]
            use_low = (d.coef(n) > 0) == low
            choices.append([(n, b) for b in lows] if use_low else
                           [(n, b.shift(-1)) for b in highs])
        for combo in product(*choices):
            x = d
            for n, b in combo:
                x = x.subst(n, b)
            v = self._bounds(x, env, low, depth + 1)
            if v is not None:
                best = v if best is None else (max(best, v) if low else min(best, v))
        return best

    def decide(self, op: str, x: Aff, y: Aff, env: Env) -> Optional[bool]:
        d = y - x
        lo, hi = self._bounds(d, env, True), self._bounds(d, env, False)
        # x op y, in terms of d = y - x
        if op == "lt":
            return True if lo is not None and lo >= 1 else False if hi is not None and hi <= 0 else None
        if op == "le":
            return True if lo is not None and lo >= 0 else False if hi is not None and hi <= -1 else None
        if op == "gt":
            return True if hi is not None and hi <= -1 else False if lo is not None and lo >= 0 else None
        if op == "ge":
            return True if hi is not None and hi <= 0 else False if lo is not None and lo >= 1 else None
        ne = (lo is not None and lo >= 1) or (hi is not None and hi <= -1)
        eq = lo == 0 and hi == 0
        if op == "eq":
            return True if eq else False if ne else None
        return False if eq else True if ne else None

    def threshold(self, op: str, x: Aff, y: Aff, env: Env) -> None:
        """Record where `x op y` may change value along each watched index."""
        d = y - x
        for v in d.names():
            if v not in env.collect:
                continue
            s = d.coef(v)
            rest = Aff(tuple((n, c) for n, c in d.terms if n != v), d.const)
            if abs(s) != 1 or rest.names() & (env.variant.get(v, set()) | {v}):
                continue
            # the predicate on e = s*v + rest: e >= k, e <= k or e == 0
            pts = []
            neg = rest.scale(-1)
            if op in ("eq", "ne"):
                pts = [neg, neg.shift(1)] if s == 1 else [rest, rest.shift(1)]
            else:
                k, ge = {"lt": (1, True), "le": (0, True), "gt": (-1, False), "ge": (0, False)}[op]
                if s == 1:
                    pts = [neg.shift(k)] if ge else [neg.shift(k + 1)]
                else:
                    pts = [rest.shift(1 - k)] if ge else [rest.shift(-k)]
            env.collect[v].extend(p for p in pts if _representable(p))

    # -- expressions -------------------------------------------------------
    def atom_ok(self, name: str) -> bool:
        return (self.count.get(name, 0) == 1 or name in self.counters
                or name in self.invariant)

    def expr(self, e: K.Expr, env: Env):
        """(e simplified, what it holds: bool, Aff or None)."""
        if isinstance(e, K.KConst):
            if e.type == BOOL:
                return e, bool(e.value)
            if e.type == I64:
                return e, Aff((), int(e.value))
            return e, None
        if isinstance(e, K.KVar):
            v = env.vals.get(e.name)
            if isinstance(v, bool):
                return K.KConst(v, BOOL), v
            if isinstance(v, Aff):
                return (K.KConst(v.const, I64) if not v.terms else e), v
            if e.type == I64 and self.atom_ok(e.name):
                return e, Aff.atom(e.name)
            return e, None
        if isinstance(e, K.Sel):
            c, ci = self.expr(e.cond, env)
            if isinstance(ci, bool):
                return self.expr(e.x if ci else e.y, env)
            x, _ = self.expr(e.x, env)
            y, _ = self.expr(e.y, env)
            return K.Sel(c, x, y), None
        if isinstance(e, K.Un) and e.op == "not" and K.type_of(e.x) == BOOL:
            x, xi = self.expr(e.x, env)
            if isinstance(xi, bool):
                return K.KConst(not xi, BOOL), not xi
            return K.Un("not", x), None
        if isinstance(e, K.Bin):
            x, xi = self.expr(e.x, env)
            y, yi = self.expr(e.y, env)
            out = e if (x is e.x and y is e.y) else K.Bin(e.op, x, y, e.reassoc, e.contract)
            if e.op in ("and", "or") and K.type_of(e.x) == BOOL:
                for a, ai, other, oi in ((x, xi, y, yi), (y, yi, x, xi)):
                    if isinstance(ai, bool):
                        if ai == (e.op == "and"):
                            return other, oi
                        return K.KConst(ai, BOOL), ai
                return out, None
            if isinstance(xi, Aff) and isinstance(yi, Aff):
                if e.op in K.CMP_PRIMS:
                    r = self.decide(e.op, xi, yi, env)
                    if r is not None:
                        return K.KConst(r, BOOL), r
                    if env.collect is not None:
                        self.threshold(e.op, xi, yi, env)
                    return out, None
                a = None
                if e.op == "add":
                    a = xi + yi
                elif e.op == "sub":
                    a = xi - yi
                elif e.op == "mul" and not xi.terms:
                    a = yi.scale(xi.const)
                elif e.op == "mul" and not yi.terms:
                    a = xi.scale(yi.const)
                # operands that cannot wrap give their exact sum
                if a is not None and self.magnitude(xi, env) + self.magnitude(yi, env) < UNB \
                        and self.magnitude(a, env) < UNB:
                    if e.op != "mul" or self.magnitude(xi, env) * max(1, self.magnitude(yi, env)) < UNB:
                        return (K.KConst(a.const, I64) if not a.terms else out), a
            return out, None
        return map_expr(e, lambda c: self.expr(c, env)[0]), None

    # -- statements --------------------------------------------------------
    def block(self, b: K.Block, env: Env) -> K.Block:
        out: list = []
        for s in b.stms:
            out.extend(self.stm(s, env))
        return K.Block(tuple(out))

    def _forget(self, env: Env, names) -> None:
        for n in names:
            env.vals.pop(n, None)

    def stm(self, s: K.Stm, env: Env) -> list:
        if isinstance(s, K.Set):
            e, info = self.expr(s.value, env)
            if s.var.name in env.pinned or info is None:
                env.vals.pop(s.var.name, None)
            else:
                env.vals[s.var.name] = info
            return [K.Set(s.var, e) if env.rewrite and e is not s.value else s]
        if isinstance(s, K.If):
            c, ci = self.expr(s.cond, env)
            if isinstance(ci, bool) and env.rewrite:
                return list(self.block(s.then if ci else s.orelse, env).stms)
            et, ee = env.copy(), env.copy()
            if _fallback_version(s):
                ee.split = False        # the budget goes to the loop expected to run
            then, orelse = self.block(s.then, et), self.block(s.orelse, ee)
            for n in _assigned(s.then) | _assigned(s.orelse):
                a, b = et.vals.get(n), ee.vals.get(n)
                if a is not None and a == b and type(a) is type(b):
                    env.vals[n] = a
                else:
                    env.vals.pop(n, None)
            if not env.rewrite:
                return [map_stm(s, block=lambda blk: then if blk is s.then else orelse)]
            if not then.stms and not orelse.stms:
                return []
            return [K.If(c, then, orelse)]
        if isinstance(s, (K.For, K.ParFor)):
            return self.loop(s, env)
        if isinstance(s, K.While):
            names = _assigned(s.body)
            self._forget(env, names)
            inner = env.copy()
            c, _ = self.expr(s.cond, inner)
            body = self.block(s.body, inner)
            self._forget(env, names)
            if not env.rewrite:
                return [map_stm(s, block=lambda _b: body)]
            return [K.While(c, body)]
        # other statements: operands simplified, what they declare forgotten
        subs = K.sub_blocks(s)
        new = map_stm(s, expr=(lambda e: self.expr(e, env)[0]) if env.rewrite else None,
                      block=(lambda blk: self.block(blk, env.copy())) if subs else None)
        for v in binders(s):
            env.vals.pop(v.name, None)
        for blk in subs:
            self._forget(env, _assigned(blk))
        return [new]

    # -- loops -------------------------------------------------------------
    def loop(self, s, env: Env) -> list:
        par = isinstance(s, K.ParFor)
        lo_e, lo = (K.KConst(0, I64), Aff()) if par else self.expr(s.lo, env)
        hi_e, hi = self.expr(s.count if par else s.hi, env)
        names = _assigned(s.body) | {s.var.name}
        self._forget(env, names)
        ok = (isinstance(lo, Aff) and isinstance(hi, Aff)
              and not (par and s.group_size is not None))
        if env.split and ok and env.collect is None:
            got = self.try_split(s, env, lo, hi, lo_e, hi_e)
            if got is not None:
                self._forget(env, names)
                return got
        inner = env.copy()
        v = s.var.name
        if ok:
            inner.ranges[v] = ([lo], [hi])
            inner.mag[v] = max(self.magnitude(lo, env), self.magnitude(hi, env))
            inner.variant[v] = names
            if inner.collect is not None:
                inner.collect.setdefault(v, [])
                inner.collect.setdefault(("bounds", v), []).extend([lo, hi])
        body = self.block(s.body, inner)
        self._forget(env, names)
        if not env.rewrite:
            return [map_stm(s, block=lambda _b: body)]
        if par:
            return [K.ParFor(s.var, hi_e, body, s.parallel_if, s.group_size)]
        return [K.For(s.var, lo_e, hi_e, body, s.unroll, max_trip=s.max_trip)]

    def _flat_rows(self, p: K.ParFor, count: Aff, env: Env):
        """(r, c, R, w) when p is a flat 2-D space: count = R * w and the body
        starts with r = i / w (and c = i % w), w and R i64 atoms."""
        if len(count.terms) != 1 or count.const or not p.body.stms:
            return None
        s = p.body.stms[0]
        if not (isinstance(s, K.Set) and isinstance(s.value, K.Bin) and s.value.op == "div"
                and s.value.x == p.var and isinstance(s.value.y, K.KVar)):
            return None
        w = s.value.y
        d = self.defs.get(count.terms[0][0])
        if not (isinstance(d, K.Bin) and d.op == "mul" and w in (d.x, d.y)):
            return None
        R = d.y if d.x == w else d.x
        if not (isinstance(R, K.KVar) and self.atom_ok(R.name) and self.atom_ok(w.name)):
            return None
        c = None
        if len(p.body.stms) > 1:
            t = p.body.stms[1]
            if (isinstance(t, K.Set) and isinstance(t.value, K.Bin) and t.value.op == "rem"
                    and t.value.x == p.var and t.value.y == w):
                c = t.var
        return s.var, c, R, w

    def try_split(self, s, env: Env, lo: Aff, hi: Aff, lo_e, hi_e) -> Optional[list]:
        par = isinstance(s, K.ParFor)
        if sum(1 for _ in walk_stms(s.body)) > MAX_BODY:
            return None
        flat = self._flat_rows(s, hi, env) if par else None
        names = _assigned(s.body) | {s.var.name}
        # dry run: where do comparisons on the index change value?
        dry = env.copy()
        dry.rewrite, dry.collect, dry.split = False, {}, False
        if flat:
            r, c, R, w = flat
            watch, wlo, whi = r.name, Aff(), Aff.atom(R.name)
            dry.pinned |= {r.name} | ({c.name} if c else set())
            if c:
                dry.ranges[c.name] = ([Aff()], [Aff.atom(w.name)])
                dry.mag[c.name] = BIG
        else:
            watch, wlo, whi = s.var.name, lo, hi
        dry.ranges[watch] = ([wlo], [whi])
        dry.mag[watch] = BIG
        dry.variant[watch] = names
        dry.collect[watch] = []
        for n in {a for a in (lo.names() | hi.names() | whi.names())}:
            dry.mag.setdefault(n, BIG)
        self._optimistic(dry, s.body)
        self.block(s.body, dry)
        pts = dry.collect[watch]
        a, b = self._choose(pts, wlo, whi)
        if a is None:
            return None
        # the run-time assumption: every symbol reasoned with is within +-BIG
        syms = set()
        for key, affs in dry.collect.items():
            for x in affs:
                syms |= x.names()
        syms |= wlo.names() | whi.names() | lo.names() | hi.names()
        syms -= names
        syms = {n for n in syms if self.atom_ok(n)
                and not any(n in vs for vs in dry.variant.values())}
        guard = None
        for n in sorted(syms):
            if env.mag.get(n, UNB) > BIG:
                v = K.KVar(n, I64)
                guard = _and(guard, K.Bin("and", K.Bin("le", v, K.KConst(BIG, I64)),
                                          K.Bin("ge", v, K.KConst(-BIG, I64))))
        if flat:
            Rv, wv = K.KVar(R.name, I64), K.KVar(w.name, I64)
            guard = _and(guard, K.Bin("and", K.Bin("and", K.Bin("ge", Rv, K.KConst(0, I64)),
                                                   K.Bin("le", Rv, K.KConst(MAX_DIM, I64))),
                                      K.Bin("and", K.Bin("ge", wv, K.KConst(1, I64)),
                                            K.Bin("le", wv, K.KConst(MAX_DIM, I64)))))
        penv = env.copy()
        penv.rewrite = True
        for n in syms:
            penv.mag[n] = min(penv.mag.get(n, UNB), BIG)
        # the budget: what the split adds, counted once (the inner loops'
        # own splits are part of it), and nothing when it is declined
        saved = self.budget
        # grown = size(pieces) + 1 with a guard (the original stays as its
        # else), size(pieces) - size(s) without
        base = -1 if guard is not None else _size(K.Block((s,)))
        # every piece keeps at least the body's statements outside Ifs
        # (_kept), so a split that must exceed the budget is declined
        # before its pieces are made
        kept = _kept(s.body)
        least = (2 if b is not None else 1) + ((3 if b is not None else 2) * (1 + kept)
                                               if kept else 0)
        if least - base > saved:
            return None
        try:
            out = self.pieces(s, penv, watch, wlo, whi, a, b, flat, (base, saved))
        except _OverBudget:
            self.budget = saved
            return None
        if guard is not None:
            out = [K.If(guard, K.Block(tuple(out)), K.Block((s,)))]
        grown = _size(K.Block(tuple(out))) - _size(K.Block((s,)))
        if grown > saved:
            self.budget = saved
            return None
        self.budget = saved - grown
        return out

    def _optimistic(self, env: Env, body: K.Block) -> None:
        """In a dry run every invariant atom counts as bounded (the split
        guards those it reasons with)."""
        env.mag = _Optimistic(env.mag)

    def _choose(self, pts: list, lo: Aff, hi: Aff):
        near_lo, near_hi, other = [], [], []
        for t in pts:
            dl, dh = t - lo, t - hi
            if not dl.terms and 1 <= dl.const <= NEAR:
                near_lo.append(dl.const)
            elif not dh.terms and -NEAR <= dh.const <= -1:
                near_hi.append(dh.const)
            elif (dl.terms or dl.const > NEAR) and (dh.terms or dh.const < -NEAR) and t not in other:
                other.append(t)
        a = lo.shift(max(near_lo)) if near_lo else None
        b = hi.shift(min(near_hi)) if near_hi else None
        for t in other:
            if a is None and t != b:
                a = t
            elif b is None and t != a:
                b = t
        if a is None:
            a, b = b, None
        return a, b

    def pieces(self, s, env: Env, watch: str, lo: Aff, hi: Aff, a: Aff, b: Optional[Aff],
               flat, limit: tuple = (0, UNB)) -> list:
        """The pieces of s; _OverBudget as soon as those made so far,
        size minus limit[0], exceed the budget limit[1] (the pieces only add
        statements, so the whole split would too: LocVolCalib spent most of
        split's time making pieces of a 1,465-statement loop to decline
        them)."""
        par = isinstance(s, K.ParFor)
        i64 = K.KVar("split", I64)
        sa, sb = self.fresh(i64, "a"), self.fresh(i64, "b")
        lo_x, hi_x = aff_expr(lo), aff_expr(hi)
        out: list = [K.Set(sa, _clamp(aff_expr(a), lo_x, hi_x))]
        # (start, end, extra lower bounds, extra upper bounds) of each piece
        strip_lo = not (a - lo).terms
        spec = [(lo_x, sa, [], [a], not strip_lo)]
        if b is None:
            spec.append((sa, hi_x, [a], [], True))
        else:
            out.append(K.Set(sb, _clamp(aff_expr(b), sa, hi_x)))
            spec += [(sa, sb, [a], [b], True), (sb, hi_x, [a, b], [], bool((hi - b).terms))]
        base, budget = limit
        kept = _kept(s.body)
        made = []
        for k, (start, end, lows, highs, wide) in enumerate(spec):
            got = self.piece(s, env, watch, lo, hi, start, end, lows, highs, flat, wide)
            made.append((start, end, got))
            out += got
            # the pieces still to come add at least 1 + kept each (_kept)
            rest = (len(spec) - 1 - k) * (1 + kept) if kept else 0
            if _size(K.Block(tuple(out))) + rest - base > budget:
                raise _OverBudget
        if par and not flat and has_loop(s.body):
            n_sets = len(out) - sum(len(got) for _, _, got in made)
            return out[:n_sets] + [self.one_region(s, made)]
        return out

    def one_region(self, s: K.ParFor, made: list) -> K.ParFor:
        """The pieces of a ParFor whose iterations loop (a row each) as one
        ParFor over the whole range that picks its piece per iteration:

            parfor q in 0..n { if q < sa {A[p1 := q]} elif q < sb {C[p2 := q - sa]}
                               else {B[p3 := q - sb]} }

        One parallel region where the pieces were three: a boundary strip
        (a row or two) ran as a ParFor of its own, inline on the calling
        thread while the team waited, and each extra region costs a fork
        and a join (hotspot_rodinia on the 2-core Zen 5: 2-3 us of a 24 us
        step). One test per row, nothing per element: the rows' own loops
        are those that were split and vectorise."""
        q = self.fresh(s.var, "q")
        chain: Optional[K.Block] = None
        for start, end, got in reversed(made):
            # a piece that folded to nothing still owns its rows: they do nothing
            body = (K.Block((K.Set(got[0].var, K.Bin("sub", q, start)),) + got[0].body.stms)
                    if got else K.Block(()))
            if chain is None:
                chain = body
            else:
                chain = K.Block((K.If(K.Bin("lt", q, end), body, chain),))
        return K.ParFor(q, s.count, chain, s.parallel_if, s.group_size)

    def piece(self, s, env: Env, watch, lo, hi, start, end, lows, highs, flat, wide) -> list:
        par = isinstance(s, K.ParFor)
        m = self.renaming(s.body, "s")
        v = self.fresh(s.var)
        m[s.var.name] = v
        body = K.rename_block(s.body, m)
        penv = env.copy()
        if not wide:
            # a strip of a constant count (a boundary row): its inner loops
            # run that often only, not worth the budget of splitting them
            penv.split = False
        w_new = m[watch].name if watch in m else v.name
        penv.ranges[w_new] = ([lo] + lows, [hi] + highs)
        penv.mag[w_new] = BIG
        penv.variant[w_new] = set(m[n].name for n in m)
        pre: list = []
        if flat:
            r, c, R, w = flat
            penv.pinned.add(m[r.name].name)
            if c is not None:
                penv.pinned.add(m[c.name].name)
                penv.ranges[m[c.name].name] = ([Aff()], [Aff.atom(w.name)])
                penv.mag[m[c.name].name] = BIG
            wv = K.KVar(w.name, I64)
            p = self.fresh(s.var, "p")
            pre = [K.Set(v, K.Bin("add", p, K.Bin("mul", start, wv)))]
            count = K.Bin("mul", K.Bin("sub", end, start), wv)
        elif par:
            if isinstance(start, K.KConst) and start.value == 0:
                p, count = v, end
            else:
                p = self.fresh(s.var, "p")
                penv.pinned.add(v.name)
                pre = [K.Set(v, K.Bin("add", p, start))]
                count = K.Bin("sub", end, start)
        body = self.block(body, penv)
        if not body.stms:
            return []
        if par:
            return [K.ParFor(p, count, K.Block(tuple(pre) + body.stms), s.parallel_if,
                             s.group_size)]
        f = K.For(v, start, end, body, s.unroll, max_trip=s.max_trip)
        return self.version_checks(f, penv) if wide else [f]

    # -- versioning of the checks left in a sequential piece --------------
    def version_checks(self, f: K.For, env: Env) -> list:
        """`for v in lo..hi { ...; if not(checks) fail; ... }` where every
        check is monotone in v: run a copy without those Fails when the
        checks hold at v = lo and v = hi - 1 (then they hold in between).
        An invariant atom of unknown magnitude (a size a loop carries) is
        reasoned with as within +-BIG, which the guard then checks, as
        try_split's does (srad's interior kept its checks, and its Fails
        kept it from vectorising)."""
        if any(isinstance(t, (K.For, K.While, K.ParFor)) for t in walk_stms(f.body)):
            return [f]
        v = f.var.name
        benv = env.copy()
        benv.mag = _Optimistic(benv.mag)
        benv.ranges.pop(v, None)
        keep, conds = [], []
        body_names = _assigned(f.body)
        self.invariant = {n for n, k in self.count.items() if k > 1} - body_names - {v}
        try:
            for st in f.body.stms:
                leaves = self._monotone_check(st, benv, v, body_names)
                self.stm(st, benv)
                if leaves is None:
                    keep.append(st)
                else:
                    conds += leaves
        finally:
            self.invariant = set()
        if not conds:
            return [f]
        guard: K.Expr = K.Bin("lt", f.lo, f.hi)
        names = {n for _, x, y in conds for n in (x.names() | y.names())} - {v}
        for n in sorted(names):
            if env.mag.get(n, UNB) > BIG:
                nv = K.KVar(n, I64)
                guard = K.Bin("and", guard, K.Bin("and", K.Bin("le", nv, K.KConst(BIG, I64)),
                                                  K.Bin("ge", nv, K.KConst(-BIG, I64))))
        for end in (f.lo, K.Bin("sub", f.hi, K.KConst(1, I64))):
            for op, x, y in conds:
                guard = K.Bin("and", guard, K.Bin(op, _at(x, v, end), _at(y, v, end)))
        fast = self.rename_apart(K.For(f.var, f.lo, f.hi, K.Block(tuple(keep)), f.unroll,
                                       max_trip=f.max_trip))
        return [K.If(guard, K.Block((fast,)), K.Block((f,)))]

    def _monotone_check(self, st, env: Env, v: str, body_names: set):
        """[(op, x, y)] when st is `if not(c1 & c2 ...) { fail }` (or
        `if c { fail }` with c an `or` of negated comparisons) with every ci
        an affine comparison, monotone in v: +-v plus invariants."""
        if not (isinstance(st, K.If) and not st.orelse.stms and len(st.then.stms) == 1
                and isinstance(st.then.stms[0], K.Fail)):
            return None
        c = st.cond
        if not (isinstance(c, K.Un) and c.op == "not"):
            return None
        leaves: list = []
        todo = [c.x]
        while todo:
            e = todo.pop()
            if isinstance(e, K.Bin) and e.op == "and" and K.type_of(e.x) == BOOL:
                todo += [e.x, e.y]
                continue
            if not (isinstance(e, K.Bin) and e.op in ("lt", "le", "gt", "ge")):
                return None
            x, y = self.expr(e.x, env)[1], self.expr(e.y, env)[1]
            if not (isinstance(x, Aff) and isinstance(y, Aff)):
                return None
            d = y - x
            if abs(d.coef(v)) > 1 or (d.names() - {v}) & (body_names | {v}):
                return None
            if self.magnitude(x, env) >= UNB // 4 or self.magnitude(y, env) >= UNB // 4:
                return None
            leaves.append((e.op, x, y))
        return leaves

    def local_types(self, b: K.Block) -> dict:
        """The variables only `b` assigns (renamed apart in a copy); one
        that is also set outside (a sequential loop's accumulator) keeps
        its name, so its value flows from piece to piece."""
        n_in, types = _binder_counts(b)
        return {n: t for n, t in types.items()
                if n_in[n] >= self.count.get(n, 0) or n in self.counters}

    def renaming(self, b: K.Block, tag: str) -> dict:
        """Fresh names for what only `b` assigns, each counted as often as
        the name it replaces is set in b."""
        n_in, _ = _binder_counts(b)
        m = {n: self.fresh(K.KVar(n, t), tag) for n, t in self.local_types(b).items()}
        for n, v in m.items():
            self.count[v.name] = n_in[n]
            if n in self.counters:
                self.counters.add(v.name)
        return m

    def rename_apart(self, f: K.For) -> K.For:
        m = self.renaming(f.body, "f")
        m[f.var.name] = self.fresh(f.var, "f")
        return K.rename_block(K.Block((f,)), m).stms[0]


def _fallback_version(s: K.If) -> bool:
    """`if ok { loop i ... } else { loop i ... }`: two versions of one loop
    (lower_base's bounds versioning), the second run only when a run-time
    check fails."""
    a, b = s.then.stms, s.orelse.stms
    return (len(a) == 1 and len(b) == 1 and isinstance(a[0], (K.For, K.ParFor))
            and type(a[0]) is type(b[0]) and a[0].var.name == b[0].var.name)


def _at(x: Aff, v: str, end: K.Expr) -> K.Expr:
    """x with v replaced by the expression `end`."""
    c = x.coef(v)
    rest = aff_expr(Aff(tuple((n, k) for n, k in x.terms if n != v), x.const))
    if c == 0:
        return rest
    t = end if c == 1 else K.Bin("sub", K.KConst(0, I64), end)
    return K.Bin("add", rest, t)


class _OverBudget(Exception):
    """A split that would add more statements than the budget left."""


class _Optimistic(dict):
    def get(self, k, default=None):
        return dict.get(self, k, BIG)


def _binder_counts(b: K.Block):
    n_in: dict = {}
    types: dict = {}
    for s in walk_stms(b):
        for v in binders(s):
            n_in[v.name] = n_in.get(v.name, 0) + 1
            types[v.name] = v.type
    return n_in, types


def split_function(fn: K.Function, budget: int | None = None) -> K.Function:
    """fn with its loops split, first come first served until `budget`
    statements (default MAX_GROWTH) have been added."""
    sp = Splitter(fn)
    sp.budget = MAX_GROWTH if budget is None else budget
    sp.defs = {s.var.name: s.value for s in walk_stms(fn.body)
               if isinstance(s, K.Set) and sp.count.get(s.var.name) == 1}
    env = Env(rewrite=False)
    body = sp.block(fn.body, env)
    return K.Function(fn.name, fn.params, body)


MAX_GROWTH = 3000      # statements splitting may add to one function (compile time)


def split_index_sets(m: K.Module) -> K.Module:
    """The pass: every function's loops split where it pays (see above),
    in order, until the function has grown by MAX_GROWTH statements; a loop
    whose split would go beyond keeps its form (LocVolCalib's 2,971
    statements had become 11,713, and its cold compile 3x longer: LLVM's
    time follows the code's size; hotspot grows by about 1,000). Code that
    comes in versions puts the one expected to run first (mc/segmap.py)."""
    return K.Module([split_function(f) for f in m.functions], list(m.messages))


def _size(b: K.Block) -> int:
    return sum(1 for _ in walk_stms(b))


def _kept(b: K.Block) -> int:
    """A lower bound on the statements of b after Splitter.block in any
    environment: only an If may fold away (to a branch or to nothing); a
    loop stays a loop (or pieces of one, each at least as big) and every
    other statement stays."""
    n = 0
    for s in b.stms:
        if isinstance(s, K.If):
            continue
        n += 1
        for sb in K.sub_blocks(s):
            n += _kept(sb)
    return n


__all__ = ["split_index_sets", "Aff"]
