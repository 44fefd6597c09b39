"""What a map's function returns for the stand-in element, evaluated without
running it: the shapes of its results as sizes outside the map.

Python mode gives an empty map (or tabulate) result the inner dimensions of
what its function returns for a stand-in argument, the zero element of each
mapped array's element type and shape (index 0 for tabulate), or 0 where the
function raises for it (docs/language.md, "Empty results"). Compiled code
must know those dimensions before (and without) running anything, so this
module evaluates the function abstractly, statement by statement, the way
Futhark computes the size of a map's result: by hoisting the size
expressions out of the map. A value is

- a scalar: a sym (core/sizes.py: an expression over names bound outside
  the map: captured scalars, the mapped arrays' and captured arrays'
  dimensions, constants), or None where it depends on data (an element of
  a captured array, a reduction's result);
- an array (`Arr`): its shape, one sym or None per dimension, and, where
  known, the value of every element (`fill`: the stand-in's zeros,
  replicate's value) and the value a function mapped over it sees first
  (`first`: element 0, or the stand-in 0 when the array is empty).

The stand-in's scalars are 0, so the function's own element and index are
known. Checks whose conditions are syms (a length assertion, an index
bound, a zero divisor, concat's inner shapes) are collected into `ok`, the
condition that the call does not raise; what depends on data cannot be
checked (docs/language.md writes that edge down). Nested functions are
evaluated the same way (a nested map's rows: its function on its first
element, or its own stand-in when it is empty); loops until their shapes
stop changing.
"""
from __future__ import annotations

from typing import Optional

from . import ir, ops
from .sizes import Lit, Sym, Syms
from .types import ScalarType


class Arr:
    """An array value: its shape (a sym or None per dimension), its element
    type, the value of all its elements (`fill`) and the value a function
    mapped over it is given (`first`), each a sym or None."""
    __slots__ = ("shape", "elem", "fill", "first")

    def __init__(self, shape: tuple, elem: ScalarType, fill=None, first=None):
        self.shape = tuple(shape)
        self.elem = elem
        self.fill = fill
        self.first = first

    def row(self) -> "Arr":
        return Arr(self.shape[1:], self.elem, self.fill, self.first)

    def __repr__(self) -> str:
        return f"Arr{self.shape!r}"


_OUTSIDE = object()


class Env(dict):
    """Names -> values; `outside` tells whether a name missing here is bound
    outside the map (a function called from it has no outside)."""

    def __init__(self, vals=(), outside: bool = True):
        super().__init__(vals)
        self.outside = outside


class StandIn:
    """Abstract evaluation of bodies on the stand-in; `ok` accumulates the
    conditions under which they do not raise."""

    def __init__(self, syms: Syms, program: Optional[ir.Program] = None):
        self.s = syms
        self.program = program
        self.ok: Sym = syms.true

    # -- the entry point ------------------------------------------------------------
    def map_rows(self, m: ir.Map, known=None, opaque: bool = False) -> tuple[list, Sym]:
        """The values m's function returns for the stand-in element of m's
        arrays (arrays of zeros of their row shape, scalars 0), and the
        condition that it does not raise. `known`: the row dimensions (atoms)
        of some of m's arrays (another map's empty_dims, or its row_dims),
        used instead of their sizes. `opaque`: the element's values are not
        known (only its shape), so what is known of the results holds for
        every element the function returns for."""
        env = Env()
        for p, a in zip(m.lam.params, m.arrs):
            dims = (known or {}).get(a.name)
            row = (Arr(tuple(self.value(d, env) for d in dims), p.type) if dims is not None
                   else self.outside(a).row())
            env[p.name] = (unknown_of(row, p.type) if opaque else self.stand_in(row, p.type))
        saved, self.ok = self.ok, self.s.true
        res = self.body(m.lam.body, env)
        ok, self.ok = self.ok, saved
        return res, ok

    def stand_in(self, row, t):
        """The stand-in for an element of type t and (array) shape row.shape."""
        if isinstance(t, ScalarType):
            return self.s.zero(t)
        z = self.s.zero(t.elem)
        return Arr(row.shape, t.elem, z, z)

    # -- values ---------------------------------------------------------------------
    def outside(self, v: ir.Var):
        if isinstance(v.type, ScalarType):
            return self.s.var(v)
        return Arr(tuple(self.s.size(v, d) for d in range(v.type.rank)), v.type.elem)

    def value(self, a: ir.Atom, env: Env):
        if isinstance(a, ir.Const):
            return self.s.const(a)
        got = env.get(a.name, _OUTSIDE)
        if got is not _OUTSIDE:
            return got
        return self.outside(a) if env.outside else unknown(a.type)

    def require(self, cond: Optional[Sym]) -> None:
        """The body raises unless cond (None: a condition on data, not checked)."""
        if cond is not None and not self.s.implies(self.ok, cond):
            self.ok = self.s.and_(self.ok, cond)

    def guarded(self, body: ir.Body, env: Env) -> tuple[list, Sym]:
        """body's values and its own condition (not added to self.ok)."""
        saved, self.ok = self.ok, self.s.true
        try:
            return self.body(body, env), self.ok
        finally:
            self.ok = saved

    def body(self, body: ir.Body, env: Env) -> list:
        for stm in body.stms:
            e = stm.exp
            vals = self.RULES[e.__class__](self, e, env)
            for v, x in zip(stm.pat, vals):
                env[v.name] = x
        return [self.value(a, env) for a in body.result]

    # -- small helpers ----------------------------------------------------------------
    def eq(self, x, y) -> Optional[Sym]:
        return None if x is None or y is None else self.s.bin("eq", x, y)

    def same_shape(self, a: Arr, b: Arr) -> Optional[Sym]:
        """The condition that two shapes are equal (None: not known)."""
        if len(a.shape) != len(b.shape):
            return self.s.false
        cond = self.s.true
        for x, y in zip(a.shape, b.shape):
            c = self.eq(x, y)
            if c is None:
                return None
            cond = self.s.and_(cond, c)
        return cond

    def in_range(self, i, n, wrap: bool) -> Optional[Sym]:
        if i is None or n is None:
            return None
        s = self.s
        hi = s.bin("lt", i, n)
        if s.nonneg(i):
            return hi
        lo = s.bin("ge", i, s.bin("sub", s.i64(0), n) if wrap else s.i64(0))
        return s.and_(lo, hi)

    def first_of(self, n, fill, elem: ScalarType):
        """`first` of an array of length n whose elements are all fill."""
        if fill is None:
            return None
        z = self.s.zero(elem)
        if fill is z:
            return z
        return None if n is None else self.s.select(self.s.bin("gt", n, self.s.i64(0)), fill, z)

    def arr(self, shape, elem, fill=None, first=_OUTSIDE) -> Arr:
        if first is _OUTSIDE:
            first = self.first_of(shape[0] if shape else None, fill, elem)
        return Arr(shape, elem, fill, first)

    def product(self, dims) -> Optional[Sym]:
        out = self.s.i64(1)
        for d in dims:
            if d is None:
                return None
            out = self.s.bin("mul", out, d)
        return out


def unknown_of(row: Arr, t):
    """An element of shape row.shape whose values are not known."""
    if isinstance(t, ScalarType):
        return None
    return Arr(row.shape, t.elem)


def unknown(t):
    if isinstance(t, ScalarType):
        return None
    return Arr((None,) * t.rank, t.elem)


def join(s: Syms, a, b):
    """What both a and b are (per dimension), None where they differ."""
    if isinstance(a, Arr) and isinstance(b, Arr):
        shape = tuple(x if x is y else None for x, y in zip(a.shape, b.shape))
        return Arr(shape, a.elem, a.fill if a.fill is b.fill else None,
                   a.first if a.first is b.first else None)
    return a if a is b else None


def pick(s: Syms, c: Sym, a, b):
    """`a if c else b` for values (c known)."""
    if isinstance(a, Arr) and isinstance(b, Arr):
        def sel(x, y):
            return None if x is None or y is None else s.select(c, x, y)
        return Arr(tuple(sel(x, y) for x, y in zip(a.shape, b.shape)), a.elem,
                   sel(a.fill, b.fill), sel(a.first, b.first))
    return None if a is None or b is None else s.select(c, a, b)


def same_value(a, b) -> bool:
    if isinstance(a, Arr) and isinstance(b, Arr):
        return (all(x is y for x, y in zip(a.shape, b.shape)) and a.fill is b.fill
                and a.first is b.first)
    return a is b


# ---------------------------------------------------------------------------
# Scalars and control flow

def _atom(si: StandIn, e: ir.AtomExp, env):
    return [si.value(e.atom, env)]


def _binop(si: StandIn, e: ir.BinOp, env):
    s = si.s
    x, y = si.value(e.x, env), si.value(e.y, env)
    t = e.x.type
    r = ops.binary(e.op).raises_on(t)
    if r is not None:
        if y is None:
            return [None]
        fine = s.bin("ne" if r.error == "ZeroDivisionError" else "ge", y, s.zero(t))
        si.require(fine)
        y = s.select(fine, y, s.lit(1, t))
        if fine is s.false:
            return [None]
    return [None if x is None or y is None else s.bin(e.op, x, y)]


def _unop(si: StandIn, e: ir.UnOp, env):
    x = si.value(e.x, env)
    return [None if x is None else si.s.un(e.op, x)]


def _convert(si: StandIn, e: ir.Convert, env):
    x = si.value(e.x, env)
    return [None if x is None else si.s.convert(e.to, x)]


def _select(si: StandIn, e: ir.Select, env):
    c, x, y = (si.value(a, env) for a in (e.cond, e.x, e.y))
    if c is None:
        return [x if x is y else None]
    if isinstance(c, Lit):
        return [x if c.value else y]
    return [pick(si.s, c, x, y)]


def _call(si: StandIn, e: ir.Call, env):
    fun = si.program.functions.get(e.fn) if si.program is not None else None
    if fun is None:
        return [unknown(t) for t in e.ret]
    inner = Env({p.name: si.value(a, env) for p, a in zip(fun.params, e.args)}, outside=False)
    return si.body(fun.body, inner)


def _if(si: StandIn, e: ir.If, env):
    c = si.value(e.cond, env)
    if isinstance(c, Lit):
        return si.body(e.then_body if c.value else e.else_body, env)
    a, ok_a = si.guarded(e.then_body, env)
    b, ok_b = si.guarded(e.else_body, env)
    if c is None:
        if ok_a is ok_b:
            si.require(ok_a)
        return [join(si.s, x, y) for x, y in zip(a, b)]
    si.require(si.s.select(c, ok_a, ok_b))
    return [pick(si.s, c, x, y) for x, y in zip(a, b)]


WIDEN = 4      # loop evaluations before giving up on the loop's shapes


def _loop(si: StandIn, e: ir.Loop, env):
    s = si.s
    vals = [si.value(a, env) for a in e.inits]
    form = e.form
    if isinstance(form, ir.ForLoop):
        n = si.value(form.bound, env)
        if isinstance(n, Lit) and n.value <= 0:
            return vals
        env[form.index.name] = None
    else:
        n = None
    ok_cond = None
    for _ in range(WIDEN):
        for p, v in zip(e.params, vals):
            env[p.name] = v
        if isinstance(form, ir.WhileLoop) and ok_cond is None:
            ok_cond = si.guarded(form.cond, env)[1]     # on the initial values
        res, ok_body = si.guarded(e.body, env)
        new = [join(s, v, r) for v, r in zip(vals, res)]
        if all(same_value(a, b) for a, b in zip(new, vals)):
            if ok_cond is not None:
                si.require(ok_cond)          # the condition runs at least once
            elif n is not None:
                si.require(s.or_(s.bin("le", n, s.i64(0)), ok_body))
            return vals
        vals = new
    return [unknown(p.type) for p in e.params]


def _assert(si: StandIn, e: ir.Assert, env):
    si.require(si.value(e.cond, env))
    return []


EVAL_SCALAR = {
    ir.AtomExp: _atom, ir.BinOp: _binop, ir.UnOp: _unop, ir.Convert: _convert,
    ir.Select: _select, ir.Call: _call, ir.If: _if, ir.Loop: _loop, ir.Assert: _assert,
}

#: the rules StandIn itself knows; stand_in_arrays.ArrayStandIn adds the array ones
StandIn.RULES = EVAL_SCALAR
