"""empty_shapes: the inner dimensions of every prelude map's empty result.

An empty result keeps its inner dimensions (docs/language.md, "Empty
results"): they are the shape the map's function gives for a stand-in
argument, the zero element of each mapped array (index 0 for tabulate), and
0 where the function raises for it. This pass gives every Map that returns
arrays and has no `empty_dims` yet (the translator sets zeros for
comprehensions) those dimensions, as atoms computed by statements hoisted
out of the map: Futhark's way of knowing a map's result size without
running it (core/stand_in.py evaluates the function abstractly on the
stand-in). A dimension that depends on data is 0.

It is the first pass (codegen/pipeline.py; the core backend runs it after
translation), so the dimensions come from the maps as the user wrote them,
each function on its own stand-in as in Python mode; fusion then keeps
them. The hoisted statements cannot raise and are placed as early as their
operands allow; a mapped array that another map computed is read through
that map's empty_dims (it is empty when this map is), never through its
size, so the statements do not keep the two maps from fusing.
"""
from __future__ import annotations

from dataclasses import replace

from . import ir
from .sizes import Syms
from .stand_in_arrays import ArrayStandIn
from .traverse import binder_vars, children, map_exp
from .types import ScalarType


def derive_empty_shapes(program: ir.Program) -> ir.Program:
    """The program with `empty_dims` set on every Map of arrays that has none."""
    funs = {name: _Pass(program, f).fundef() for name, f in program.functions.items()}
    return ir.Program(funs, dict(program.entries), dict(program.records), program.filename)


def returns_arrays(m: ir.Map) -> bool:
    return any(not isinstance(t, ScalarType) for t in m.lam.ret)


def _per_result(m: ir.Map) -> list:
    """m.empty_dims split by result (() for a scalar result)."""
    atoms = iter(m.empty_dims)
    return [() if isinstance(t, ScalarType) else tuple(next(atoms) for _ in range(t.rank))
            for t in m.lam.ret]


def keep_empty_dims(m: ir.Map, keep: list):
    """m.empty_dims of the results in `keep` (a pass dropping the others)."""
    if m.empty_dims is None:
        return None
    parts = _per_result(m)
    return tuple(a for i in keep for a in parts[i])


def concat_empty_dims(m1: ir.Map, m2: ir.Map) -> tuple[bool, object]:
    """(possible, empty_dims) of one map computing m1's results then m2's:
    impossible when one has its dimensions (a comprehension's zeros) and
    the other, returning arrays, is still to be given them."""
    d1, d2 = m1.empty_dims, m2.empty_dims
    if d1 is None and d2 is None:
        return True, None
    if (d1 is None and returns_arrays(m1)) or (d2 is None and returns_arrays(m2)):
        return False, None
    return True, (d1 or ()) + (d2 or ())


def keep_row_dims(m: ir.Map, keep: list):
    """m.row_dims of the results in `keep`."""
    if m.row_dims is None:
        return None
    parts = _per_result(replace(m, empty_dims=m.row_dims))
    return tuple(a for i in keep for a in parts[i])


def concat_row_dims(m1: ir.Map, m2: ir.Map):
    """row_dims of one map computing m1's results then m2's (None unless
    both are known)."""
    d1 = m1.row_dims if returns_arrays(m1) else ()
    d2 = m2.row_dims if returns_arrays(m2) else ()
    if d1 is None or d2 is None or not (d1 or d2):
        return None
    return d1 + d2


def row_dims_of(m: ir.Map, fresh, loc=None, program=None, known=None):
    """(statements, atoms) of the inner dimensions every row of m has, or
    None when they depend on an element's values: m's function evaluated
    on an element known only by its shape (StandIn.map_rows, opaque).
    `known` maps names of m's arrays to their rows' dimensions."""
    syms = Syms(fresh, loc)
    res, _ = ArrayStandIn(syms, program).map_rows(m, known, opaque=True)
    dims = []
    for r, t in zip(res, m.lam.ret):
        if isinstance(t, ScalarType):
            continue
        if r is None or any(d is None for d in r.shape):
            return None
        for d in r.shape:
            # a row that returns has dimensions >= 0; max(d, 0) keeps the
            # allocation made before the rows run valid when every row raises
            dims.append(d if syms.nonneg(d) else syms.nonneg_or_zero(d))
    return syms.stms, tuple(syms.atom(d) for d in dims)


def empty_dims_of(m: ir.Map, fresh, loc=None, program=None, known=None) -> tuple[list, tuple]:
    """(statements, atoms): m's empty inner dimensions, computed by the
    statements (to be placed before m) from names m can read. `fresh(t)`
    makes a new Var of type t; `known` maps names of m's arrays to their
    own empty dimensions (StandIn.map_rows)."""
    syms = Syms(fresh, loc)
    res, ok = ArrayStandIn(syms, program).map_rows(m, known)
    zero = syms.i64(0)
    dims = []
    for r, t in zip(res, m.lam.ret):
        if isinstance(t, ScalarType):
            continue
        for d in r.shape:
            if d is None:
                dims.append(zero)
                continue
            if not syms.nonneg(d):
                d = syms.nonneg_or_zero(d)
            dims.append(syms.select(ok, d, zero))
    atoms = tuple(syms.atom(d) for d in dims)
    return syms.stms, atoms


class FreshNames:
    """New names `es_N`, unique in a FunDef."""

    def __init__(self, fun: ir.FunDef):
        self.taken = {v.name for v in binder_vars(fun)}
        self.n = 0

    def __call__(self, t) -> ir.Var:
        while True:
            self.n += 1
            name = f"es_{self.n}"
            if name not in self.taken:
                self.taken.add(name)
                return ir.Var(name, t)


class _Pass:
    def __init__(self, program: ir.Program, fun: ir.FunDef):
        self.program = program
        self.fun = fun
        self.fresh = FreshNames(fun)
        self.rows: dict = {}        # array name -> its empty rows' dimensions (atoms)
        self.full_rows: dict = {}   # array name -> its rows' dimensions (row_dims atoms)
        self.from_map: set = set()  # names of arrays a map computed

    def fundef(self) -> ir.FunDef:
        body = self.body(self.fun.body)
        return self.fun if body is self.fun.body else replace(self.fun, body=body)

    def body(self, b: ir.Body) -> ir.Body:
        out: list[ir.Let] = []
        changed = False
        for stm in b.stms:
            e = map_exp(stm.exp, _same, self.body)      # nested maps first
            if e.__class__ is ir.Map and e.empty_dims is None and returns_arrays(e):
                known = {a.name: self.rows[a.name] for a in e.arrs if a.name in self.rows}
                stms, dims = empty_dims_of(e, self.fresh, stm.loc, self.program, known)
                for h in stms:
                    _place(out, h)
                e = replace(e, empty_dims=dims)
            if e.__class__ is ir.Map and e.row_dims is None and returns_arrays(e):
                e = self.with_row_dims(e, stm.loc, out)
            if e is not stm.exp:
                stm = ir.Let(stm.pat, e, stm.loc)
                changed = True
            out.append(stm)
            self.note_rows(stm)
        return ir.Body(tuple(out), b.result) if changed else b

    def with_row_dims(self, e: ir.Map, loc, out: list) -> ir.Map:
        """e with its row_dims, when they are known. A mapped array that
        another map computed is read through that map's row_dims, never
        through its size (which would keep the two maps from fusing); one
        whose map has none leaves e without."""
        known = {}
        for a in e.arrs:
            if a.name in self.full_rows:
                known[a.name] = self.full_rows[a.name]
            elif a.name in self.from_map:
                return e
        got = row_dims_of(e, self.fresh, loc, self.program, known)
        if got is None:
            return e
        stms, dims = got
        for h in stms:
            _place(out, h)
        return replace(e, row_dims=dims)

    def note_rows(self, stm: ir.Let) -> None:
        e = stm.exp
        if e.__class__ is ir.Map:
            self.from_map.update(v.name for v in stm.pat)
            for dims, table in ((e.empty_dims, self.rows), (e.row_dims, self.full_rows)):
                if dims is None:
                    continue
                atoms = iter(dims)
                for v, t in zip(stm.pat, e.lam.ret):
                    if not isinstance(t, ScalarType):
                        table[v.name] = tuple(next(atoms) for _ in range(t.rank))
        elif e.__class__ is ir.AtomExp and isinstance(e.atom, ir.Var):
            name, new = e.atom.name, stm.pat[0].name
            for table in (self.rows, self.full_rows):
                if name in table:
                    table[new] = table[name]
            if name in self.from_map:
                self.from_map.add(new)


def _place(out: list, h: ir.Let) -> None:
    """Inserts h into out right after the last statement binding a name it reads."""
    need = {a.name for a in children(h.exp) if isinstance(a, ir.Var)}
    pos = 0
    for k, s in enumerate(out):
        if any(v.name in need for v in s.pat):
            pos = k + 1
    out.insert(pos, h)


def _same(a):
    return a
