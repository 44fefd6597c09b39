"""Map fusion within a body: vertical (producer-consumer) and horizontal.

Vertical (map-map): `ys = map(f, xs); zs = map(g, ys, ...)` where every result
of the producer is used only as an input of the consumer becomes one Map at
the consumer's place whose lambda runs f's statements then g's, g's
parameters for the producer's results replaced by f's result atoms (an input
both maps read is read once).

Horizontal: two Maps of the same width that share an input array and do not
depend on each other become one Map with the results of both (the shared
input traversed once), placed where the second stands, or where the first
stands when a statement between them uses the first one's results.

Horizontal reductions: two Reduces of the same width, the second not
reading the first's results, become one Reduce of both operators side by
side (accumulators of both, then elements of both), placed where the
second stands: one pass and one parallel loop where there were two
(srad's sum and sum of squares). A map feeding one of them is fused into
the reduction by the lowering (redomap), so a shared input is read once.

All repeat to a fixpoint in every body, nested bodies first; a fused
lambda's body is fused again (two inner maps may now meet). Map into
reduce/scan (redomap) is left to the lowering; no new IR node is introduced.

Guards, so that a fused program raises what the original raises (the class;
analysis.may_raise with the length facts, analysis.raise_classes where two
errors meet: reordering errors of one class cannot be observed,
docs/decisions.md):
- the widths are the same atom (simplify makes `size` of equal arrays one
  name), or equal once an assert between the two has passed (a zip's
  length check: sgemm's sum of the product and `beta * c`);
- no statement between the two contains an in-place update (moving a map
  across it could change what the map reads);
- not both lambdas may raise, unless both raise only one and the same class
  (interleaving would change which error comes first), and when the first
  map's lambda may raise, the second map's other inputs must provably have
  the width's length (the fused map checks every input's length before
  running any element);
- a map that moves, unless it provably raises nothing (lambda and width
  check), may only move across statements that cannot raise, or that raise
  only the one class it may raise itself.
"""
from __future__ import annotations

from typing import Optional

from pyshark.core import ir
from pyshark.core.empty_shapes import concat_empty_dims, concat_row_dims

from .analysis import (Facts, body_may_raise, body_raise_classes, contains_update, may_raise,
                       one_class, raise_classes, rows_regular, same_atom)
from .rewrite import map_exp, map_functions, subst, use_counts, uses
from .simplify import simplify_body


def fuse(program: ir.Program) -> ir.Program:
    """The program with map-map fusion applied in every FunDef."""
    return map_functions(program, fuse_fun)


def fuse_fun(fun: ir.FunDef) -> ir.FunDef:
    body = _Fuser().body(fun.body, Facts())
    if body is fun.body:
        return fun
    return ir.FunDef(fun.name, fun.params, fun.ret, body, fun.loc)


def _ident(a):
    return a


class _Fuser:
    # -- bodies ----------------------------------------------------------------
    def body(self, b: ir.Body, outer: Facts) -> ir.Body:
        facts = outer.child()
        stms: list[ir.Let] = []
        changed = False
        for stm in b.stms:
            e = stm.exp
            e2 = map_exp(e, _ident, lambda nb: self.body(nb, facts.for_body(e)))
            if e2 is not e:
                stm = ir.Let(stm.pat, e2, stm.loc)
                changed = True
            stms.append(stm)
            facts.record(stm)
        while True:
            # A name bound in this body is used only here (SSA): count here.
            counts = use_counts(ir.Body(tuple(stms), b.result))
            new = self.vertical(stms, outer, counts)
            if new is None:
                new = self.horizontal(stms, outer)
            if new is None:
                new = self.horizontal_reduces(stms, outer)
            if new is None:
                break
            stms = new
            changed = True
        return ir.Body(tuple(stms), b.result) if changed else b

    # -- facts at a position ------------------------------------------------------
    @staticmethod
    def facts_at(stms, k: int, outer: Facts, skip: int = -1) -> Facts:
        """The facts holding before stms[k] (without those of stms[skip])."""
        f = outer.child()
        for i in range(k):
            if i != skip:
                f.record(stms[i])
        return f

    def lam_may_raise(self, stms, k: int, outer: Facts) -> bool:
        """The map at k may raise while or after computing its elements (its
        lambda raises, or its rows are not regular), not counting its width check."""
        e = stms[k].exp
        if not rows_regular(e):
            return True
        return body_may_raise(e.lam.body, self.facts_at(stms, k, outer).for_body(e))

    def lam_classes(self, stms, k: int, outer: Facts):
        """What lam_may_raise covers, as exception classes (None: unknown)."""
        e = stms[k].exp
        classes = body_raise_classes(e.lam.body, self.facts_at(stms, k, outer).for_body(e))
        if classes is not None and not rows_regular(e):
            classes = classes | {"ShapeError"}
        return classes

    def interleavable(self, stms, i: int, j: int, outer: Facts) -> bool:
        """The lambdas of the maps at i and j may both raise, but only one
        class between them: interleaving their elements cannot be observed."""
        return one_class(self.lam_classes(stms, i, outer), self.lam_classes(stms, j, outer))

    def silent(self, stms, k: int, outer: Facts) -> bool:
        """Neither the width check nor the lambda of the map at k can raise."""
        return not may_raise(stms[k].exp, self.facts_at(stms, k, outer))

    def between_ok(self, stms, i: int, j: int, outer: Facts, moved: int) -> bool:
        """No statement strictly between i and j updates in place; and, unless the
        map at `moved` is silent, none of them may raise."""
        if any(contains_update(stms[k].exp) for k in range(i + 1, j)):
            return False
        if j - i <= 1 or self.silent(stms, moved, outer):
            return True
        f = self.facts_at(stms, i + 1, outer, skip=i)
        mine = None
        for k in range(i + 1, j):
            if may_raise(stms[k].exp, f):
                # the same single class either way (a zip's length assert
                # passed by its producer): the order cannot be observed
                if mine is None:
                    mine = raise_classes(stms[moved].exp, self.facts_at(stms, moved, outer))
                if not one_class(mine, raise_classes(stms[k].exp, f)):
                    return False
            f.record(stms[k])
        return True

    def inputs_provable(self, stms, k: int, skip: int, outer: Facts, width, arrs,
                        covered) -> bool:
        """Every array in arrs is in covered or, by the facts before stms[k]
        (less those of stms[skip]), has length `width`."""
        f = self.facts_at(stms, k, outer, skip)
        return all(a.name in covered or f.has_length(a, width) for a in arrs)

    # -- vertical ----------------------------------------------------------------
    def vertical(self, stms: list, outer: Facts, counts) -> Optional[list]:
        where = {v.name: i for i, s in enumerate(stms) for v in s.pat}
        for j, cs in enumerate(stms):
            if cs.exp.__class__ is not ir.Map:
                continue
            for a in cs.exp.arrs:
                i = where.get(a.name)
                if i is None or stms[i].exp.__class__ is not ir.Map:
                    continue
                fused = self.try_vertical(stms, i, j, outer, counts)
                if fused is not None:
                    return stms[:i] + stms[i + 1:j] + [fused] + stms[j + 1:]
        return None

    def try_vertical(self, stms, i: int, j: int, outer: Facts, counts) -> Optional[ir.Let]:
        ps, cs = stms[i], stms[j]
        p, c = ps.exp, cs.exp
        if not same_atom(p.width, c.width) and not self.facts_at(stms, j, outer).same_value(
                p.width, c.width):
            return None          # (equal once an assert between them has passed)
        if not rows_regular(p):
            return None          # its ShapeError would vanish with the stacking
        names = {v.name for v in ps.pat}
        for v in ps.pat:
            if counts[v.name] != sum(1 for a in c.arrs if a.name == v.name):
                return None
        if not self.between_ok(stms, i, j, outer, moved=i):
            return None
        if self.lam_may_raise(stms, i, outer):
            others = [a for a in c.arrs if a.name not in names]
            if (self.lam_may_raise(stms, j, outer) and not self.interleavable(stms, i, j, outer)
                    or not self.inputs_provable(stms, j, i, outer, c.width, others,
                                                {a.name for a in p.arrs})):
                return None
        lam, arrs = _compose(p, ps.pat, c)
        fused = ir.Map(c.width, lam, arrs, c.empty_dims, c.row_dims)      # c's results
        lam = self.refuse(fused, self.facts_at(stms, j, outer, skip=i))
        return ir.Let(cs.pat, ir.Map(c.width, lam, arrs, c.empty_dims, c.row_dims), cs.loc)

    def refuse(self, m: ir.Map, facts: Facts) -> ir.Lambda:
        """m's lambda with its new, concatenated body simplified (sizes of the
        inner arrays become one name) and fused again."""
        body = self.body(simplify_body(m.lam.body), facts.for_body(m))
        return m.lam if body is m.lam.body else ir.Lambda(m.lam.params, body, m.lam.ret)

    # -- horizontal ----------------------------------------------------------------
    def horizontal(self, stms: list, outer: Facts) -> Optional[list]:
        for i, s1 in enumerate(stms):
            if s1.exp.__class__ is not ir.Map:
                continue
            ins1 = {a.name for a in s1.exp.arrs}
            for j in range(i + 1, len(stms)):
                s2 = stms[j]
                if s2.exp.__class__ is not ir.Map or not same_atom(s1.exp.width, s2.exp.width):
                    continue
                if not ins1 & {a.name for a in s2.exp.arrs}:
                    continue
                new = self.try_horizontal(stms, i, j, outer)
                if new is not None:
                    return new
        return None

    def try_horizontal(self, stms, i: int, j: int, outer: Facts) -> Optional[list]:
        s1, s2 = stms[i], stms[j]
        out1 = {v.name for v in s1.pat}
        if uses(s2.exp) & out1:
            return None                                   # s2 depends on s1
        between = stms[i + 1:j]
        if not any(uses(s.exp) & out1 for s in between):
            at, moved = j, i                              # s1 moves down to s2
        else:
            bound = {v.name for s in between for v in s.pat}
            if uses(s2.exp) & bound:
                return None
            at, moved = i, j                              # s2 moves up to s1
        if not self.between_ok(stms, i, j, outer, moved):
            return None
        r1 = self.lam_may_raise(stms, i, outer)
        if r1 and self.lam_may_raise(stms, j, outer):
            return None
        if r1 and not self.inputs_provable(stms, i, -1, outer, s2.exp.width, s2.exp.arrs,
                                           {a.name for a in s1.exp.arrs}):
            return None
        ok, dims = concat_empty_dims(s1.exp, s2.exp)
        if not ok:
            return None       # a comprehension's rows beside a prelude map's
        lam, arrs = _side_by_side(s1.exp, s2.exp)
        rows = concat_row_dims(s1.exp, s2.exp)
        m = ir.Map(s1.exp.width, lam, arrs, dims, rows)
        lam = self.refuse(m, self.facts_at(stms, i, outer))
        fused = ir.Let(s1.pat + s2.pat, ir.Map(m.width, lam, arrs, dims, rows), s1.loc)
        rest = stms[:i] + between + stms[j + 1:]
        pos = i if at == i else j - 1
        return rest[:pos] + [fused] + rest[pos:]

    # -- horizontal, reductions --------------------------------------------------
    def horizontal_reduces(self, stms: list, outer: Facts) -> Optional[list]:
        for i, s1 in enumerate(stms):
            if s1.exp.__class__ is not ir.Reduce:
                continue
            for j in range(i + 1, len(stms)):
                s2 = stms[j]
                if (s2.exp.__class__ is ir.Reduce
                        and same_atom(s1.exp.width, s2.exp.width)):
                    new = self.try_horizontal_reduce(stms, i, j, outer)
                    if new is not None:
                        return new
        return None

    def try_horizontal_reduce(self, stms, i: int, j: int, outer: Facts) -> Optional[list]:
        """Two reductions of one width, the second not reading the first,
        as one reduction of both (the first moves down to the second):
        srad's sum and sum of squares of the image, one pass and one
        parallel region instead of two."""
        s1, s2 = stms[i], stms[j]
        out1 = {v.name for v in s1.pat}
        between = stms[i + 1:j]
        if uses(s2.exp) & out1 or any(uses(s.exp) & out1 for s in between):
            return None
        if not self.between_ok(stms, i, j, outer, moved=i):
            return None
        f1 = self.facts_at(stms, i, outer)
        r1 = body_may_raise(s1.exp.lam.body, f1.for_body(s1.exp))
        if r1 and (body_may_raise(s2.exp.lam.body, self.facts_at(stms, j, outer).for_body(s2.exp))
                   or not self.inputs_provable(stms, j, -1, outer, s2.exp.width, s2.exp.arrs,
                                               {a.name for a in s1.exp.arrs})):
            return None
        e1, e2 = s1.exp, s2.exp
        k1, k2 = len(e1.neutral), len(e2.neutral)
        p1, p2 = e1.lam.params, e2.lam.params
        body = ir.Body(e1.lam.body.stms + e2.lam.body.stms,
                       e1.lam.body.result + e2.lam.body.result)
        lam = ir.Lambda(p1[:k1] + p2[:k2] + p1[k1:] + p2[k2:], body, e1.lam.ret + e2.lam.ret)
        red = ir.Reduce(e1.width, lam, e1.neutral + e2.neutral, e1.arrs + e2.arrs,
                        e1.commutative and e2.commutative)
        fused = ir.Let(s1.pat + s2.pat, red, s2.loc)
        return stms[:i] + between + [fused] + stms[j + 1:]


def _merge_inputs(params: list, arrs: list, qs, ins) -> dict:
    """Appends the parameters qs and inputs ins not read yet; returns the
    substitution of parameters for inputs already read."""
    sub: dict = {}
    for q, a in zip(qs, ins):
        for k, b in enumerate(arrs):
            if b.name == a.name:
                sub[q.name] = params[k]
                break
        else:
            params.append(q)
            arrs.append(a)
    return sub


def _compose(p: ir.Map, ppat, c: ir.Map):
    """The lambda and inputs of map(c.lam . p.lam) (vertical fusion)."""
    res = {v.name: r for v, r in zip(ppat, p.lam.body.result)}
    params, arrs = list(p.lam.params), list(p.arrs)
    pairs = [(q, a) for q, a in zip(c.lam.params, c.arrs) if a.name not in res]
    sub = {q.name: res[a.name] for q, a in zip(c.lam.params, c.arrs) if a.name in res}
    sub.update(_merge_inputs(params, arrs, [q for q, _ in pairs], [a for _, a in pairs]))
    cb = subst(c.lam.body, sub)
    body = ir.Body(p.lam.body.stms + cb.stms, cb.result)
    return ir.Lambda(tuple(params), body, c.lam.ret), tuple(arrs)


def _side_by_side(m1: ir.Map, m2: ir.Map):
    """The lambda and inputs of one map computing both m1's and m2's results."""
    params, arrs = list(m1.lam.params), list(m1.arrs)
    sub = _merge_inputs(params, arrs, m2.lam.params, m2.arrs)
    b2 = subst(m2.lam.body, sub)
    b1 = m1.lam.body
    body = ir.Body(b1.stms + b2.stms, b1.result + b2.result)
    return ir.Lambda(tuple(params), body, m1.lam.ret + m2.lam.ret), tuple(arrs)
