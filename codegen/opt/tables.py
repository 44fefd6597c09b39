"""tables: the costly part of an inner map that does not depend on the
outer map's element becomes a table, computed before the outer map (part
of codegen/opt/hoist.py's loop-invariant code motion).

    map(\\p -> ... map(\\x -> let c = cos(f(x) * k)    -- k: not from p
                              in g(c, p)) xs) ps
 => let tbl = map(\\x -> cos(f(x) * k)) xs            -- hoist.py moves it out
    in map(\\p -> ... map(\\c -> g(c, p)) tbl) ps

This is loop-invariant code motion with scalar expansion (Allen and
Kennedy, "Optimizing Compilers for Modern Architectures", ch. 5): the
invariant values of the inner loop are different for each of its
iterations, so they move out as an array indexed like the inner loop. The
shape it is for: Accelerate's quasicrystal as Futhark writes it, whose wave
function computes the cosine and sine of each wave's angle inside the map
over the pixels, three math-library calls per pixel and wave where NumPy's
array formulation makes one (on the 2-core Zen 5 box crystal small took 63
ms against NumPy's 40 ms).

What moves: the statements of the inner map's function that read only its
parameters and names from outside the outer map, that cannot raise, and
that the rest of the function needs, as long as at least one of them calls
the math library (scalar arithmetic is cheaper to recompute than to load).
The inner map's width and arrays must come from outside the outer map too.
Values and errors are those of the original: the moved statements compute
the same values for the same elements, and none can raise; an empty outer
map now computes the table (time, not meaning).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from pyshark.core import ir
from pyshark.core.traverse import free_vars
from pyshark.core.types import I64, ArrayType, ScalarType

from .analysis import Facts, may_raise
from .rewrite import NameGen, subst

#: the unary operators and binary ones that call the math library
COSTLY_UNARY = frozenset({"exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
                          "atan", "sinh", "cosh", "tanh"})
COSTLY_BINARY = frozenset({"pow", "power", "atan2"})


def _costly(e: ir.Exp) -> bool:
    if e.__class__ is ir.UnOp:
        return e.op in COSTLY_UNARY
    return e.__class__ is ir.BinOp and e.op in COSTLY_BINARY


def split_tables(stms: tuple, variant: Callable[[set], bool], names: NameGen,
                 facts: Facts) -> tuple[tuple, set]:
    """(the outer map function's statements with each inner map split into a
    table and the rest, the tables' names) (module docstring);
    `variant(names)`: whether any of the names depends on the outer map's
    element."""
    out: list[ir.Let] = []
    made: set[str] = set()
    sizes: dict = {}                   # arr name -> a name bound to its length, so far
    for s in stms:
        e = s.exp
        if e.__class__ is ir.Size and e.dim == 0:
            sizes.setdefault(e.arr.name, s.pat[0])
        if (e.__class__ is ir.Map and e.arrs
                and not variant({a.name for a in (e.width, *e.arrs) if a.__class__ is ir.Var})):
            split = _split(s, e, variant, names, facts, sizes)
            if split is not None:
                out.extend(split)
                made |= {v.name for v in split[-2].pat}
                continue
        out.append(s)
    return (tuple(out), made) if made else (stms, made)


def _split(s: ir.Let, m: ir.Map, variant, names: NameGen, facts: Facts, sizes: dict):
    """[table, rest] (with the table's width first when it needs a Size) for
    the inner map statement s, or None."""
    lam = m.lam
    own = {p.name for p in lam.params}  # the parameters and what the moved statements bind
    local: set[str] = set()            # names the function binds that depend on the outer element
    moved: list[bool] = []
    for t in lam.body.stms:
        reads = free_vars(t.exp)
        ok = (all(isinstance(v.type, ScalarType) for v in t.pat)
              and not (reads & local) and not variant(reads - own)
              and not may_raise(t.exp, facts))
        moved.append(ok)
        (own if ok else local).update(v.name for v in t.pat)
    stms = lam.body.stms
    # only what the rest needs leaves; the rest keeps what nothing else needs
    kept_reads = set().union(*(free_vars(t.exp) for t, mv in zip(stms, moved) if not mv),
                             {a.name for a in lam.body.result if isinstance(a, ir.Var)})
    outs = [v for t, mv in zip(stms, moved) if mv for v in t.pat if v.name in kept_reads]
    if not outs or not any(_costly(t.exp) for t, mv in zip(stms, moved) if mv):
        return None
    table_lam = ir.Lambda(lam.params, ir.Body(tuple(t for t, mv in zip(stms, moved) if mv),
                                              tuple(outs)),
                          tuple(v.type for v in outs))
    tables = [ir.Var(names.name("tbl"), ArrayType(v.type, 1)) for v in outs]
    # the table's width is its first array's length, so that it cannot fail
    # a width check where the inner map could (a negative width is checked
    # where it was, by the rest)
    width = sizes.get(m.arrs[0].name)
    pre = []
    if width is None:
        width = ir.Var(names.name("tw"), I64)
        pre = [ir.Let((width,), ir.Size(m.arrs[0], 0), s.loc)]
    table = ir.Let(tuple(tables), ir.Map(width, table_lam, m.arrs), s.loc)
    # the rest maps over the tables too; the outputs are its new parameters
    params = [names.var(v) for v in outs]
    ren = {v.name: p for v, p in zip(outs, params)}
    rest_stms = tuple(subst(t, ren) for t, mv in zip(stms, moved) if not mv)
    rest_result = tuple(ren.get(a.name, a) if isinstance(a, ir.Var) else a
                        for a in lam.body.result)
    rest_body = ir.Body(rest_stms, rest_result)
    still = free_vars(rest_body)
    keep = [(p, a) for p, a in zip(lam.params, m.arrs) if p.name in still]
    rest_lam = replace(lam, params=tuple(p for p, _ in keep) + tuple(params), body=rest_body)
    rest = replace(m, lam=rest_lam, arrs=tuple(a for _, a in keep) + tuple(tables))
    return pre + [table, replace(s, exp=rest)]


__all__ = ["split_tables", "COSTLY_UNARY", "COSTLY_BINARY"]
