"""How far a stencil reads: the reach of an entry's index expressions, to
check a stated halo (plan.stencil) and refuse what no halo can run.

A stencil, after inline + simplify, is `map(f, iota(n), ...)` (tabulate)
whose function indexes the partitioned arrays at positions i + d, clamped
at the ends with min/max (`select(0 > t, 0, t)`), and may compare its
position with the ends (`i == 0`, `i + 1 < n`). Chunk by chunk the entry
sees a chunk extended by k rows each side (graph.overlapped), and its
position i is local; a kept row's result is the whole array's when

- every index is i + d with |d| <= k (the rows it reads are in the
  extension),
- an index that can be negative (d < 0 unclamped) never is: Python's
  negative index wraps to the array's end, which in a chunk is the
  chunk's end (a periodic stencil needs the whole array; refused),
- a comparison of the position with the start (i + d OP c) or the end
  (i + d OP n - c) has the same truth for every kept row of an inner chunk
  as in the whole: both positions are >= k from the ends there, so the
  threshold must be within k rows of the end,
- the position is used for nothing else (a value `f64(i)`, a loop bound):
  that is the absolute position, which differs per chunk (refused).

The walk is an abstract interpretation over positions POS(d_lo, d_hi,
clamped), end offsets END(c) = n - c, integer constants, and comparisons
of those; it decides or says it cannot (None): an If/Loop reading a
position, a shape it does not know. Undecided, the stated halo is
trusted (plan.stencil says so).
"""
from __future__ import annotations

from dataclasses import dataclass

from pyshark.core import ir
from pyshark.core.traverse import free_vars


class Refuse(Exception):
    """What no halo can run, with the statement's location."""

    def __init__(self, why: str, loc=None):
        super().__init__(why)
        self.why, self.loc = why, loc


class Undecided(Exception):
    pass


@dataclass(frozen=True)
class Pos:
    lo: int                     # i + d for d in [lo, hi]
    hi: int
    clamped: bool = False       # max(., 0) applied: never negative


@dataclass(frozen=True)
class End:
    c: int                      # n - c


@dataclass(frozen=True)
class Cmp:
    exp: ir.BinOp               # a position compared with the start or the end


LEN = "len"
_CMP = {"gt", "ge", "lt", "le", "eq", "ne"}
_FLIP = {"gt": "lt", "lt": "gt", "ge": "le", "le": "ge", "eq": "eq", "ne": "ne"}


def _need_start(op: str, t: int) -> int:
    """The halo that keeps `i OP t` the same for every i >= halo (positions
    of kept rows of inner chunks, locally and globally)."""
    if op in ("ge", "lt"):
        return max(t, 0)
    return max(t + 1, 0)


def reach(fun: ir.FunDef, arrays: tuple[int, ...]) -> int | None:
    """The halo the entry needs (Refuse if none works, None: undecided)."""
    try:
        return _Walk(fun, arrays).run()
    except Undecided:
        return None


class _Walk:
    def __init__(self, fun, arrays):
        self.fun = fun
        self.arrays = {fun.params[k].name for k in arrays}
        self.val: dict = {}
        self.need = 0

    def run(self) -> int:
        iotas, derived, checks, maps = set(), set(), set(), 0
        for stm in self.fun.body.stms:
            e = stm.exp
            used = set(free_vars(e))
            if isinstance(e, ir.Size) and e.arr.name in self.arrays and e.dim == 0:
                self.val[stm.pat[0].name] = LEN
            elif isinstance(e, ir.Iota) and self.atom(e.n) == LEN:
                iotas.add(stm.pat[0].name)
            elif isinstance(e, ir.Map) and self.atom(e.width) == LEN and all(
                    a.name in iotas or a.name in self.arrays for a in e.arrs):
                env = {p.name: Pos(0, 0) for p, a in zip(e.lam.params, e.arrs)
                       if a.name in iotas}
                self.body(e.lam.body, env, stm.loc)
                derived.update(v.name for v in stm.pat)
                maps += 1
            elif isinstance(e, ir.BinOp) and e.op in ("eq", "ne", "ge", "le") and \
                    used and all(self.val.get(v) == LEN or v in checks for v in used):
                checks.add(stm.pat[0].name)     # the translator's length checks
            elif isinstance(e, ir.Assert) and used <= checks:
                continue
            elif used & (self.arrays | derived | iotas | set(self.val) | checks):
                raise Undecided         # more than maps over the rows: not a stencil's shape
        if not maps or not all(isinstance(a, ir.Var) and a.name in derived
                               for a in self.fun.body.result):
            raise Undecided
        return self.need

    def atom(self, a, env=None):
        if isinstance(a, ir.Const):
            return a.value if isinstance(a.value, int) and not isinstance(a.value, bool) \
                else None
        if env is not None and a.name in env:
            return env[a.name]
        return self.val.get(a.name)

    def body(self, body: ir.Body, env: dict, loc) -> None:
        env = dict(env)
        for stm in body.stms:
            loc_s = stm.loc or loc
            out = self.exp(stm.exp, env, loc_s)
            for v, o in zip(stm.pat, out if isinstance(out, tuple) else (out,) * len(stm.pat)):
                if o is not None:
                    env[v.name] = o
        for a in body.result:
            self.plain(self.atom(a, env), loc)

    def plain(self, v, loc) -> None:
        """v is used as a value: a position or the length may not be."""
        if isinstance(v, Pos):
            raise Refuse("a row's value depends on its absolute position (the index of "
                         "tabulate/iota used as a number), which differs per chunk", loc)
        if v == LEN or isinstance(v, End):
            raise Refuse("a row's value depends on the arrays' length, which differs per "
                         "chunk", loc)

    def exp(self, e, env, loc):
        marked = {v: env.get(v, self.val.get(v)) for v in free_vars(e)}
        special = {v: m for v, m in marked.items()
                   if isinstance(m, (Pos, End, Cmp)) or m == LEN}
        if isinstance(e, ir.AtomExp):
            return self.atom(e.atom, env) if not isinstance(e.atom, ir.Const) else None
        if set(marked) & self.arrays and not (isinstance(e, ir.Index) and e.idxs and isinstance(
                self.atom(e.idxs[0], env), (Pos, End, int))):
            raise Undecided             # a gather by data, a whole array passed on, ...
        if not special and not isinstance(e, ir.Index):
            return None                 # no position or length read: nothing to check
        if isinstance(e, ir.BinOp):
            return self.binop(e, env, loc)
        if isinstance(e, ir.Select):
            return self.select(e, env, loc)
        if isinstance(e, ir.Index):
            if e.arr.name not in self.arrays or len(e.idxs) < 1:
                raise Undecided
            p = self.atom(e.idxs[0], env)
            for a in e.idxs[1:]:
                self.plain(self.atom(a, env), loc)
            if isinstance(p, Pos):
                if p.lo < 0 and not p.clamped and e.wrap_negative:
                    raise Refuse(f"an index i - {-p.lo} is negative in the first rows: "
                                 f"Python's negative index wraps to the array's end (a "
                                 f"periodic boundary needs the whole array; clamp it: "
                                 f"max(i - {-p.lo}, 0))", loc)
                self.need = max(self.need, abs(p.lo), abs(p.hi))
                return None
            if isinstance(p, (int, End)):
                raise Refuse("every row reads one fixed row of the array (an index that "
                             "does not follow the row's position): a chunk has its own "
                             "rows there", loc)
            raise Undecided
        if isinstance(e, ir.SOACS):
            lam = getattr(e, "lam", None)
            if lam is None:
                raise Undecided
            for a in getattr(e, "arrs", ()):
                if a.name in special:
                    raise Undecided
            self.body(lam.body, env, loc)
            return None
        if isinstance(e, ir.Size) and not any(isinstance(m, Pos) for m in special.values()):
            return None
        if isinstance(e, (ir.Convert, ir.UnOp)):
            self.plain(self.atom(e.x, env), loc)
        raise Undecided                  # If, Loop, ... of a position

    def binop(self, e: ir.BinOp, env, loc):
        x, y = self.atom(e.x, env), self.atom(e.y, env)
        isint = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
        if e.op in ("add", "sub"):
            sign = 1 if e.op == "add" else -1
            if isinstance(x, Pos) and isint(y):
                return Pos(x.lo + sign * y, x.hi + sign * y)
            if e.op == "add" and isint(x) and isinstance(y, Pos):
                return Pos(y.lo + x, y.hi + x)
            if x == LEN and isint(y):
                return End(-sign * y)
            if isinstance(x, End) and isint(y):
                return End(x.c - sign * y)
            if x is None or y is None:
                raise Undecided         # i + s with s from data or a parameter
        if e.op in _CMP:
            op, (a, b) = e.op, (x, y)
            if not isinstance(a, Pos):
                op, (a, b) = _FLIP[op], (y, x)
            if isinstance(a, Pos) and a.lo == a.hi:
                if isint(b):                 # i + d OP c  <=>  i OP c - d
                    self.need = max(self.need, _need_start(op, b - a.lo))
                    return Cmp(e)
                if isinstance(b, End):       # i + d OP n - c: distance from the end
                    j = b.c + a.lo - 1       # i OP n-1-j  <=>  (n-1-i) OP' j
                    self.need = max(self.need, _need_start(_FLIP[op], j))
                    return Cmp(e)
            raise Undecided
        for v in (x, y):
            self.plain(v, loc)          # i * 2, n // 2, ...: absolute
        raise Undecided

    def select(self, e: ir.Select, env, loc):
        c = self.atom(e.cond, env)
        x, y = self.atom(e.x, env), self.atom(e.y, env)
        if not isinstance(c, Cmp):
            if isinstance(c, (Pos, End)) or c == LEN:
                raise Undecided
            if isinstance(x, Pos) or isinstance(y, Pos):
                raise Undecided          # a data-dependent choice of position
            return None
        if isinstance(x, Pos) or isinstance(y, Pos):
            cmp = c.exp
            if not isinstance(cmp, ir.BinOp) or cmp.op not in ("gt", "ge", "lt", "le"):
                raise Undecided
            same = (cmp.x, cmp.y) == (e.x, e.y)
            if not (same or (cmp.x, cmp.y) == (e.y, e.x)):
                raise Undecided          # a choice between positions that is no clamp
            is_max = (cmp.op in ("gt", "ge")) == same
            ps = [v for v in (x, y) if isinstance(v, Pos)]
            lo, hi = min(p.lo for p in ps), max(p.hi for p in ps)
            clamped = all(p.clamped or p.lo >= 0 for p in ps) or (
                is_max and any(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                               for v in (x, y)))
            return Pos(lo, hi, clamped)
        if isinstance(x, End) or isinstance(y, End) or x == LEN or y == LEN:
            raise Undecided
        return None
