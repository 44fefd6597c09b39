"""hoist: a statement in a map's function that does not depend on the mapped
element, cannot raise and runs a SOAC or copies memory is computed once,
before the map, instead of once per element (loop-invariant code motion
for SOAC lambdas, the hoisting Futhark's simplifier does).

The shape it is for: Parboil's sgemm as Futhark writes it,
`map (\\xs -> map (\\ys -> dotprod xs ys) (transpose yss)) xss`, whose
`transpose yss` sits inside the map over the rows of xss: lowered as
written, every row of xss copied all of yss (2,000x NumPy's time at
1024^2 on the H200 host). Scalars are left where they are (LLVM's LICM
hoists them, and the lowering's size facts read them in place).

Why it keeps the golden rule:
- Values: the statement reads only names bound outside the map (or hoisted
  before it), so every element computed the same value; it now computes it
  once.
- Errors: only statements that cannot raise (analysis.may_raise) move, so
  no error can appear, vanish or change order; a map of width 0 now computes
  the statement once and drops it (time, not meaning). While loops never
  move (they might not terminate where the empty map never ran them).
- Ownership: a statement whose array, or an alias of it, an update in the
  function may overwrite (analysis.consumable_names) stays: each element
  needs its own copy then.
Nested maps are processed inside out, so an invariant of an inner map that
is also invariant of the outer one climbs out of both.

Before that, the math-library part of an inner map that does not depend on
the outer element is split off as a table (tables.py: loop-invariant code
motion with scalar expansion); the split is kept only when every table then
moves out.
"""
from __future__ import annotations

from dataclasses import replace

from pyshark.core import ir
from pyshark.core.traverse import free_vars, iter_stms, map_exp

from .analysis import Facts, consumable_names, may_raise
from .rewrite import NameGen, fundef_names, map_functions
from .tables import split_tables

_SOACS = (ir.Map, ir.Reduce, ir.Scan, ir.Filter, ir.ReduceByIndex, ir.Scatter)


def hoist_invariants(program: ir.Program) -> ir.Program:
    return map_functions(program, lambda f: replace(
        f, body=_body(f.body, Facts(), NameGen(fundef_names(f)))))


def _identity(a):
    return a


def _body(body: ir.Body, facts: Facts, names: NameGen) -> ir.Body:
    """body with its maps' invariants hoisted; `facts` (array lengths, known
    before body) let may_raise see that a map's widths agree."""
    out: list[ir.Let] = []
    changed = False
    for s in body.stms:
        e = map_exp(s.exp, _identity, lambda b: _body(b, facts.child(), names))
        if e.__class__ is ir.Map:
            moved, e = _hoist_from(e, facts, names)
            for t in moved:
                facts.record(t)
            out.extend(moved)
            changed = changed or bool(moved)
        if e is not s.exp:
            s = replace(s, exp=e)
            changed = True
        facts.record(s)
        out.append(s)
    return ir.Body(tuple(out), body.result) if changed else body


# What is worth computing once: SOACs and the statements that copy memory.
# Scalars stay (LLVM hoists them), and so do the arrays the lowering never
# builds inside a map (an iota, a replicate, a slice or a reshape is index
# arithmetic there; hoisted, an iota of 10^6 became a real array, and
# crystal's pixel map over it a map over memory: 1.4x slower on cpu).
_WORTH = _SOACS + (ir.Transpose, ir.Copy, ir.Concat)


def _worth(s: ir.Let) -> bool:
    return s.exp.__class__ in _WORTH


def _has_while(e: ir.Exp) -> bool:
    if e.__class__ is ir.Loop and e.form.__class__ is not ir.ForLoop:
        return True
    return any(_has_while(x.exp) for b in _bodies(e) for x in iter_stms(b))


def _bodies(e: ir.Exp) -> list:
    found: list = []
    map_exp(e, _identity, lambda b: found.append(b) or b)
    return found


def _hoist_from(m: ir.Map, outer: Facts, names: NameGen) -> tuple[list[ir.Let], ir.Map]:
    """(statements moved out of m's function, m without them): the worthy
    invariant statements and the invariant ones they read (a size, say),
    after splitting the tables out of its inner maps (tables.py) when every
    table then moves."""
    split, tables = split_tables(m.lam.body.stms, _variant_test(m.lam), names, outer.child())
    if tables:
        lam = replace(m.lam, body=ir.Body(split, m.lam.body.result))
        moved, rest = _hoist_plain(replace(m, lam=lam), outer)
        if tables <= {v.name for s in moved for v in s.pat}:
            return moved, rest
    return _hoist_plain(m, outer)


def _variant_test(lam: ir.Lambda):
    """names -> whether any depends on the element of lam's map (its
    parameters, through the statements of its function)."""
    dep = {p.name for p in lam.params}
    for s in lam.body.stms:
        if free_vars(s.exp) & dep:
            dep |= {v.name for v in s.pat}
    return lambda names: bool(set(names) & dep)


def _hoist_plain(m: ir.Map, outer: Facts) -> tuple[list[ir.Let], ir.Map]:
    lam = m.lam
    variant = {p.name for p in lam.params}
    consumed = consumable_names(lam.body)
    stms = lam.body.stms
    invariant: list[bool] = []
    facts = outer.child()
    for s in stms:
        names = {v.name for v in s.pat}
        inv = (not (free_vars(s.exp) & variant) and not (names & consumed)
               and not may_raise(s.exp, facts) and not _has_while(s.exp))
        invariant.append(inv)
        if not inv:
            variant |= names
        facts.record(s)
    move = [inv and _worth(s) for s, inv in zip(stms, invariant)]
    if not any(move):
        return [], m
    needed = set().union(*(free_vars(s.exp) for s, mv in zip(stms, move) if mv))
    for k in range(len(stms) - 1, -1, -1):       # the invariant statements they read
        if invariant[k] and not move[k] and any(v.name in needed for v in stms[k].pat):
            move[k] = True
            needed |= free_vars(stms[k].exp)
    body = ir.Body(tuple(s for s, mv in zip(stms, move) if not mv), lam.body.result)
    return [s for s, mv in zip(stms, move) if mv], replace(m, lam=replace(lam, body=body))


__all__ = ["hoist_invariants"]
