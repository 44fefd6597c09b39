"""Bounds-check elimination: proving an index in range from what the
lowering knows (symbolic interval analysis on kernel-IR expressions).

An i64 expression gets an interval [lo, hi] whose ends are small symbolic
terms: a leaf `base + off` (base a kir variable name, or None for a
constant), or Min/Max of terms. Intervals come from loop counters (i in
[lo, hi - 1] of its For/ParFor), constants, `+`/`-` of a constant, and
selects (min/max when the select is a clamp `c = p < q; c ? p : q`, the
hull of both arms otherwise). Variables assigned once by the lowering are
followed to their definition. Inside a loop over [0, n) the count n is at
least 1, every other length at least 0. `0 <= e` and `e <= n - 1` are then
proved leaf by leaf (Min needs one side, Max both, or the other way round).

This is what lets a stencil such as `prev[max(j - 1, 0)]` or
`prev[min(j + 1, n - 1)]` inside `map` over `iota(n)` run with no check (and
so vectorize: a check is an early exit).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from . import kir as K


@dataclass(frozen=True)
class Leaf:
    base: Optional[str]     # a variable, or None for a constant
    off: int


@dataclass(frozen=True)
class Min:
    a: "Term"
    b: "Term"


@dataclass(frozen=True)
class Max:
    a: "Term"
    b: "Term"


Term = Union[Leaf, Min, Max]


def _shift(t: Term, k: int) -> Term:
    if isinstance(t, Leaf):
        return Leaf(t.base, t.off + k)
    return type(t)(_shift(t.a, k), _shift(t.b, k))


class Facts:
    """What the lowering knows at one point: definitions of variables set
    once, ranges of loop counters, lower bounds of loop counts."""

    def __init__(self):
        self.defs: dict[str, K.Expr] = {}
        self.ranges: dict[str, tuple[K.Expr, K.Expr]] = {}   # counter -> (lo, hi excl.)
        self.at_least: dict[str, int] = {}                   # variable -> minimum

    # -- intervals -----------------------------------------------------------
    def interval(self, e: K.Expr, depth: int = 0) -> Optional[tuple[Term, Term]]:
        if depth > 40:
            return None
        if isinstance(e, K.KConst) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return Leaf(None, e.value), Leaf(None, e.value)
        if isinstance(e, K.KVar):
            if e.name in self.ranges:
                lo, hi = self.ranges[e.name]
                ilo, ihi = self.interval(lo, depth + 1), self.interval(hi, depth + 1)
                if ilo is None or ihi is None:
                    return None
                return ilo[0], _shift(ihi[1], -1)
            d = self.defs.get(e.name)
            if d is not None:
                got = self.interval(d, depth + 1)
                if got is not None:
                    return got
            return Leaf(e.name, 0), Leaf(e.name, 0)
        if isinstance(e, K.Bin) and e.op in ("add", "sub"):
            k = _const(e.y)
            if k is not None:
                x = self.interval(e.x, depth + 1)
                if x is None:
                    return None
                k = k if e.op == "add" else -k
                return _shift(x[0], k), _shift(x[1], k)
            if e.op == "add" and _const(e.x) is not None:
                y = self.interval(e.y, depth + 1)
                if y is None:
                    return None
                return _shift(y[0], _const(e.x)), _shift(y[1], _const(e.x))
            return None
        if isinstance(e, K.Bin) and e.op in ("div", "rem") and isinstance(e.y, K.KVar):
            return self._divrem_interval(e, depth)
        if isinstance(e, K.Sel):
            a, b = self.interval(e.x, depth + 1), self.interval(e.y, depth + 1)
            if a is None or b is None:
                return None
            kind = self._clamp_kind(e)
            if kind == "min":
                return Min(a[0], b[0]), Min(a[1], b[1])
            if kind == "max":
                return Max(a[0], b[0]), Max(a[1], b[1])
            return Min(a[0], b[0]), Max(a[1], b[1])
        return None

    def _divrem_interval(self, e: K.Bin, depth: int):
        """x / y and x % y for x >= 0 and y >= 1: [0, y - 1] for the
        remainder; [0, A - 1] for the quotient when x < A * y (a flat index
        over an A x y space, as tabulate_2d makes)."""
        if not (self.non_negative(e.x) and self.positive(e.y)):
            return None
        zero = Leaf(None, 0)
        if e.op == "rem":
            return zero, Leaf(e.y.name, -1)
        x = self.interval(e.x, depth + 1)
        hi = x[1] if x is not None else None
        if isinstance(hi, Leaf) and hi.base is not None and hi.off == -1:
            d = self.defs.get(hi.base)
            if isinstance(d, K.Bin) and d.op == "mul":
                for a, b in ((d.x, d.y), (d.y, d.x)):
                    if _same(b, e.y) and isinstance(a, K.KVar):
                        return zero, Leaf(a.name, -1)
        return zero, Leaf(None, 2 ** 62)

    def split_by(self, x: K.Expr, y: K.Expr):
        """(a, b) when x is a * y + b with 0 <= b < y provably (a flat index
        r * m + c over an n x m space): then x // y is a and x % y is b."""
        d = self.defs.get(x.name) if isinstance(x, K.KVar) else x
        if not (isinstance(d, K.Bin) and d.op == "add"):
            return None
        for prod, b in ((d.x, d.y), (d.y, d.x)):
            p = self.defs.get(prod.name) if isinstance(prod, K.KVar) else prod
            if not (isinstance(p, K.Bin) and p.op == "mul"):
                continue
            for a, m in ((p.x, p.y), (p.y, p.x)):
                if _same(m, y) and self.non_negative(b) and self.below(b, y):
                    return a, b
        return None

    def positive(self, e: K.Expr) -> bool:
        """e >= 1."""
        if isinstance(e, K.KVar) and self.at_least.get(e.name, 0) >= 1:
            return True
        iv = self.interval(e)
        return iv is not None and self._le(iv[0], Leaf(None, 1), upper=False)

    def _clamp_kind(self, e: K.Sel) -> Optional[str]:
        """'min' / 'max' when e is `p < q ? p : q`-like, else None."""
        c = e.cond
        if isinstance(c, K.KVar) and c.name in self.defs:
            c = self.defs[c.name]
        if not (isinstance(c, K.Bin) and c.op in ("lt", "le", "gt", "ge")):
            return None
        p, q = c.x, c.y
        if _same(e.x, p) and _same(e.y, q):
            return "min" if c.op in ("lt", "le") else "max"
        if _same(e.x, q) and _same(e.y, p):
            return "max" if c.op in ("lt", "le") else "min"
        return None

    def positive_names(self, n: K.KVar) -> list[str]:
        """Variables that are >= 1 when n >= 1: n itself, and X where n is
        max(X, c) for a constant c <= 0 (iota's and replicate's clamp)."""
        out = [n.name]
        d = self.defs.get(n.name)
        if (isinstance(d, K.Bin) and d.op == "mul" and isinstance(d.x, K.KVar)
                and isinstance(d.y, K.KVar) and self.at_least.get(d.x.name, -1) >= 0
                and self.at_least.get(d.y.name, -1) >= 0):
            out += [d.x.name, d.y.name]      # a product of lengths >= 1: both >= 1
        if isinstance(d, K.Sel) and self._clamp_kind(d) == "max":
            for side, other in ((d.x, d.y), (d.y, d.x)):
                k = _const(other)
                if isinstance(side, K.KVar) and k is not None and k <= 0:
                    out.append(side.name)
        return out

    # -- proofs --------------------------------------------------------------
    def _min_of(self, base: Optional[str]) -> Optional[int]:
        if base is None:
            return 0
        return self.at_least.get(base)

    def _leaf_le(self, a: Leaf, b: Leaf) -> bool:
        """a <= b for every value of their variables that the facts allow."""
        if a.base == b.base:
            return a.off <= b.off
        if a.base is None:
            m = self._min_of(b.base)
            return m is not None and a.off <= m + b.off
        return False

    def _le(self, t: Term, bound: Leaf, upper: bool) -> bool:
        if isinstance(t, Leaf):
            return self._leaf_le(t, bound) if upper else self._leaf_le(bound, t)
        both = isinstance(t, Max) if upper else isinstance(t, Min)
        if both:
            return self._le(t.a, bound, upper) and self._le(t.b, bound, upper)
        return self._le(t.a, bound, upper) or self._le(t.b, bound, upper)

    def non_negative(self, e: K.Expr) -> bool:
        iv = self.interval(e)
        return iv is not None and self._le(iv[0], Leaf(None, 0), upper=False)

    def below(self, e: K.Expr, n: K.Expr) -> bool:
        """e <= n - 1 (n a variable or a constant)."""
        iv = self.interval(e)
        if iv is None:
            return False
        if isinstance(n, K.KVar):
            bound = Leaf(n.name, -1)
        else:
            k = _const(n)
            if k is None:
                return False
            bound = Leaf(None, k - 1)
        return self._le(iv[1], bound, upper=True)


def _const(e) -> Optional[int]:
    if isinstance(e, K.KConst) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _same(a, b) -> bool:
    if isinstance(a, K.KVar) and isinstance(b, K.KVar):
        return a.name == b.name
    if isinstance(a, K.KConst) and isinstance(b, K.KConst):
        return a.value == b.value and a.type == b.type
    return a == b
