"""interchange (cpu target): a sequential loop of elementwise maps over
loop-carried arrays becomes one map of a sequential loop over scalars, so
each element's state stays in registers across the steps and memory is
read and written once instead of once per step.

    loop (xs = xs0, vs = vs0) for k < steps do        if steps > 0:
      (checks of sizes)                                 (checks, on xs0, vs0)
      ys, ws = map(f, xs, vs)              =>           map(\\(x0, v0) ->
      in (ys, ws)                                         loop (x = x0, v = v0) for k < steps do
                                                            (y, w) = f(x, v) in (y, w), xs0, vs0)
                                                      else: the loop as written

The inverse of flatten.py's map-loop interchange (Henriksen et al., PLDI
2017, section 5, read backwards); on a CPU the map already fills the cores,
and the win is loop fusion across the time steps (the "time loop inside"
formulation that stencil and particle codes use; Numba's prange users
write it by hand).

The exact condition (else the loop is left alone):
- a for loop (trip count evaluated before the loop, so invariant of every
  element) whose parameters are all 1-D arrays of scalars, and whose body
  has only: sizes (`size(a, 0)`) of a parameter, of an array the body made
  or of an array defined before the loop; `==` of two sizes and ShapeError
  asserts of such comparisons; aliases of those arrays; scalar statements
  that cannot raise and read no array the body makes or carries (they are
  recomputed in each element's loop); and maps of scalar functions;
- every map is elementwise: its inputs are parameters, results of earlier
  maps of the body or arrays defined before the loop; its function returns
  scalars and reads no parameter or array of the body as a free variable
  (no element reads another element; arrays defined before the loop are
  read-only tables and may be read anywhere);
- one length for everything: every parameter, every map input, every map
  width and every body result is provably of the same length. Lengths are
  equated by the asserts (a "real" check: its two sides were not yet known
  equal) and by a map (its results have its width; its inputs must already
  be known equal to it, so the map's own check never fails). Every real
  check comes before the first map, and each parameter's next value is the
  result of a map or a parameter of that length.
- the maps' functions may raise errors of at most one class (the checks
  above are ShapeErrors, run before any element as before) and contain no
  while loop.

Why it keeps the golden rule:
- Values: element e's state after step s depends only on its own state
  after step s-1 (elementwise maps, invariant tables and the step index),
  so running e's steps one after another computes the same values.
- Lengths: the checks of step 0 run first, in order, on the initial
  arrays. When they pass, everything has one length n; each step's maps
  produce arrays of length n, so every later step's checks pass too and no
  map of any step can fail a width check: running them once is running
  them all. With n = 0 every map is empty.
- Errors: the original raises at the first (step, map) where some element
  fails, the error of any element failing there (a map runs its elements
  in any order, kir.py: the first failure wins). After the interchange an
  element may run ahead of the others, so the error raised is that of an
  element failing at some step, possibly a later one than the original's
  first. It is an error of the same class (only one class can be raised
  by the maps' functions), and the interchanged program raises exactly
  when the original does: if element e fails at step s in the new form,
  the original either failed earlier or reaches step s and fails there
  with e. So the class is the original's, and the message is that of a
  failing element, as a parallel map's already is; with one failing
  element it is that element's, as before. A while loop in a map's
  function could make the original diverge where the new form raises,
  hence the exclusion. flatten.py argues the same for the opposite
  direction, where every error of the new form is one the old could raise.
- Ctrl-C: the host loop polled at every step; an element's own loop does
  not poll (docs/cpu-backend.md). So the map of the loop runs only for
  1 <= steps <= MAX_STEPS (a run-time test; otherwise the loop as written
  runs, zero steps included), where kir_passes/tile_steps.py's strips keep
  the work between two polls of the ParFor's threads bounded.
- Ownership: the new map only reads the initial arrays; its results are
  fresh arrays, as the loop's results were.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from pyshark.core import ir
from pyshark.core.traverse import binder_vars, free_vars
from pyshark.core.types import ArrayType, BOOL, I64, ScalarType

from .analysis import Facts, may_raise, rows_regular
from .rewrite import NameGen, binders, fundef_names, map_functions, subst

_SCALAR_EXPS = (ir.BinOp, ir.UnOp, ir.Convert, ir.Select, ir.AtomExp)
MAX_STEPS = 4096        # more steps than this: the loop as written (Ctrl-C, docstring)


def interchange(program: ir.Program) -> ir.Program:
    return map_functions(program, _fun)


def _fun(fun: ir.FunDef) -> ir.FunDef:
    names = NameGen(fundef_names(fun))
    body = _host_body(fun.body, names)
    return fun if body is fun.body else replace(fun, body=body)


def _host_body(body: ir.Body, names: NameGen) -> ir.Body:
    """body with its host-level loops of elementwise maps interchanged
    (host-level loop bodies and branches too; never inside a lambda)."""
    out: list[ir.Let] = []
    changed = False
    for s in body.stms:
        e = s.exp
        if e.__class__ is ir.Loop:
            plan = _Plan.of(e)
            if plan is not None:
                out.extend(plan.rewrite(s, names))
                changed = True
                continue
            b = _host_body(e.body, names)
            if b is not e.body:
                s = replace(s, exp=replace(e, body=b))
                changed = True
        elif e.__class__ is ir.If:
            t, f = _host_body(e.then_body, names), _host_body(e.else_body, names)
            if t is not e.then_body or f is not e.else_body:
                s = replace(s, exp=replace(e, then_body=t, else_body=f))
                changed = True
        out.append(s)
    return ir.Body(tuple(out), body.result) if changed else body


def _rank1(t) -> bool:
    return isinstance(t, ArrayType) and t.rank == 1


# ---------------------------------------------------------------------------
# Which errors a map's function may raise


def _raises(body: ir.Body, facts: Facts) -> Optional[set]:
    """The classes of the errors body may raise (None: unknown, or it may
    not terminate)."""
    out: set = set()
    for s in body.stms:
        e = s.exp
        if may_raise(e, facts):
            k = _exp_raises(e, facts)
            if k is None:
                return None
            out |= k
        facts.record(s)
    return out


def _exp_raises(e: ir.Exp, facts: Facts) -> Optional[set]:
    cls = e.__class__
    if cls is ir.Index:
        return {"IndexError"}
    if cls is ir.Assert:
        return {e.error}
    if cls is ir.BinOp:
        return {"ZeroDivisionError"} if e.op in ("floordiv", "mod") else {"ValueError"}
    if cls is ir.If:
        a, b = _raises(e.then_body, facts.child()), _raises(e.else_body, facts.child())
        return None if a is None or b is None else a | b
    if cls is ir.Loop:
        if e.form.__class__ is not ir.ForLoop:
            return None
        return _raises(e.body, facts.for_body(e))
    if cls in (ir.Map, ir.Reduce, ir.Scan, ir.Filter):
        inner = _raises(e.lam.body, facts.for_body(e))
        if inner is None:
            return None
        ok = facts.widths_ok(e.width, e.arrs) and rows_regular(e)
        return inner if ok else inner | {"ShapeError"}
    return None


# ---------------------------------------------------------------------------
# The analysis


class _Plan:
    """What a qualifying loop needs for its rewrite (see the module docstring)."""

    def __init__(self, loop: ir.Loop):
        self.loop = loop
        self.parent: dict[str, str] = {}       # union-find over array names
        self.size_of: dict[str, str] = {}      # size var -> its array
        self.eqs: dict[str, tuple] = {}        # bool var -> (size var, size var)
        self.alias: dict[str, str] = {}        # array alias -> array
        self.made: set[str] = set()            # arrays the body makes (map results)
        self.tables: list[str] = []            # map inputs defined before the loop
        self.prechecks: list[ir.Let] = []      # step 0's checks, in order
        self.widths: list[str] = []
        self.raised: set = set()

    def find(self, a: str) -> str:
        while self.parent.get(a, a) != a:
            a = self.parent[a]
        return a

    def array(self, a: ir.Atom) -> Optional[str]:
        """The node of an array the loop may use (None: not one of them)."""
        if a.__class__ is not ir.Var or not _rank1(a.type):
            return None
        n = self.alias.get(a.name, a.name)
        if n in self.params or n in self.made or n not in self.bound:
            return n
        return None

    @classmethod
    def of(cls, loop: ir.Loop) -> Optional["_Plan"]:
        p = cls(loop)
        return p if p.analyse() else None

    def analyse(self) -> bool:
        e = self.loop
        if e.form.__class__ is not ir.ForLoop or not e.params:
            return False
        if not all(_rank1(p.type) and isinstance(p.type.elem, ScalarType) for p in e.params):
            return False
        if not all(a.__class__ is ir.Var for a in e.inits):
            return False
        self.params = {p.name for p in e.params}
        self.bound = binders(e.body) | self.params | {e.form.index.name}
        carried = self.params.copy()        # arrays no element may read whole
        maps = False
        for s in e.body.stms:
            x = s.exp
            cls = x.__class__
            if cls is ir.Size:
                a = self.array(x.arr)
                if a is None or x.dim != 0:
                    return False
                self.size_of[s.pat[0].name] = a
                if not maps:
                    self.prechecks.append(s)
            elif (cls is ir.BinOp and x.op == "eq" and x.x.__class__ is ir.Var
                  and x.y.__class__ is ir.Var and x.x.name in self.size_of
                  and x.y.name in self.size_of):
                self.eqs[s.pat[0].name] = (x.x.name, x.y.name)
                if not maps:
                    self.prechecks.append(s)
            elif cls is ir.Assert:
                if x.cond.__class__ is not ir.Var or x.cond.name not in self.eqs:
                    return False
                a, b = (self.find(self.size_of[v]) for v in self.eqs[x.cond.name])
                if a != b:
                    if maps:
                        return False        # a real check after a map
                    self.parent[a] = b
                if not maps:
                    self.prechecks.append(s)
            elif cls is ir.AtomExp and _rank1(s.pat[0].type):
                a = self.array(x.atom)
                if a is None:
                    return False
                self.alias[s.pat[0].name] = a
                carried.add(s.pat[0].name)
            elif cls is ir.Map:
                if not self.elementwise(x, carried):
                    return False
                maps = True
                w = self.find(self.size_of[x.width.name])
                for v in s.pat:
                    self.made.add(v.name)
                    carried.add(v.name)
                    self.parent[v.name] = w
            elif cls in _SCALAR_EXPS and all(isinstance(v.type, ScalarType) for v in s.pat):
                if may_raise(x, Facts()) or free_vars(x) & carried:
                    return False
            else:
                return False
        if not maps or len(self.raised) > 1:
            return False
        c = self.find(next(iter(self.params)))
        if any(self.find(p) != c for p in self.params):
            return False
        if any(self.find(w) != c for w in self.widths):
            return False
        for r in e.body.result:
            a = self.array(r)
            if a is None or self.find(a) != c:
                return False
        self.node = c
        return True

    def elementwise(self, m: ir.Map, carried: set) -> bool:
        if m.width.__class__ is not ir.Var or m.width.name not in self.size_of:
            return False
        w = self.find(self.size_of[m.width.name])
        self.widths.append(self.size_of[m.width.name])
        if not all(isinstance(t, ScalarType) for t in m.lam.ret):
            return False
        for a in m.arrs:
            n = self.array(a)
            if n is None or self.find(n) != w:
                return False
            if n not in self.params and n not in self.made and n not in self.tables:
                self.tables.append(n)
        if free_vars(m.lam) & carried:
            return False                    # an element reads a whole carried array
        k = _raises(m.lam.body, Facts().for_body(m))
        if k is None:
            return False
        self.raised |= k
        return True

    # -- the rewrite ---------------------------------------------------------
    def rewrite(self, s: ir.Let, names: NameGen) -> list[ir.Let]:
        e = self.loop
        loc = s.loc
        inits = {p.name: a for p, a in zip(e.params, e.inits)}
        # the new map's width and its element parameters
        n = names.var(ir.Var("n", I64))
        elem: dict[str, ir.Atom] = {}
        lam_params, arrs, loop_params, loop_inits = [], [], [], []
        for p, a in zip(e.params, e.inits):
            x0 = names.var(ir.Var(p.name, p.type.elem))
            x = names.var(ir.Var(p.name, p.type.elem))
            lam_params.append(x0)
            arrs.append(a)
            loop_params.append(x)
            loop_inits.append(x0)
            elem[p.name] = x
        for t in self.tables:
            v = next(a for a in _vars_of(e) if a.name == t)
            y = names.var(ir.Var(t, v.type.elem))
            lam_params.append(y)
            arrs.append(v)
            elem[t] = y
        stms: list[ir.Let] = []
        for st in e.body.stms:
            x = st.exp
            cls = x.__class__
            if cls is ir.Size:
                if self.find(self.size_of[st.pat[0].name]) == self.node:
                    stms.append(ir.Let(st.pat, ir.AtomExp(n), st.loc))
                else:
                    stms.append(st)             # a table's length: read inside
            elif cls is ir.Assert:
                continue                        # true at every step (docstring)
            elif cls is ir.AtomExp and st.pat[0].name in self.alias:
                elem[st.pat[0].name] = elem[self.alias[st.pat[0].name]]
            elif cls is ir.Map:
                m = {p.name: elem[self.alias.get(a.name, a.name)]
                     for p, a in zip(x.lam.params, x.arrs)}
                body = subst(x.lam.body, m)
                stms.extend(body.stms)
                for v, r in zip(st.pat, body.result):
                    elem[v.name] = r
            else:
                stms.append(st)
        res = [elem[self.alias.get(r.name, r.name)] for r in e.body.result]
        outs = [names.var(ir.Var(p.name, p.type.elem)) for p in e.params]
        inner = ir.Loop(tuple(loop_params), tuple(loop_inits), e.form,
                        ir.Body(tuple(stms), tuple(res)))
        lam = ir.Lambda(tuple(lam_params),
                        ir.Body((ir.Let(tuple(outs), inner, loc),), tuple(outs)),
                        tuple(p.type.elem for p in e.params))
        # step 0's checks on the initial arrays, then the map
        ren: dict[str, ir.Atom] = dict(inits)
        pre: list[ir.Let] = []
        for st in self.prechecks:
            for v in st.pat:
                ren[v.name] = names.var(v)
            pre.append(subst(st, ren))
        first = e.inits[0]
        results = [names.var(v) for v in s.pat]
        then = ir.Body(tuple(pre) + (
            ir.Let((n,), ir.Size(first, 0), loc),
            ir.Let(tuple(results), ir.Map(n, lam, tuple(arrs)), loc)), tuple(results))
        # the names the loop binds are the loop's again in the other branch
        old = binders(e)
        then = subst(then, {v.name: names.var(v) for v in binder_vars(then) if v.name in old})
        pat = tuple(names.var(v) for v in s.pat)
        other = ir.Body((ir.Let(pat, e, loc),), pat)
        bound = e.form.bound
        some, few, go = (names.var(ir.Var("steps", BOOL)) for _ in range(3))
        return [ir.Let((some,), ir.BinOp("gt", bound, ir.Const(0, bound.type)), loc),
                ir.Let((few,), ir.BinOp("le", bound, ir.Const(MAX_STEPS, bound.type)), loc),
                ir.Let((go,), ir.BinOp("land", some, few), loc),
                ir.Let(s.pat, ir.If(go, then, other, tuple(v.type for v in s.pat)), loc)]


def _vars_of(e: ir.Loop):
    """Every Var the loop's body reads (to find a table's Var by name)."""
    seen: dict = {}

    def visit(x):
        if x.__class__ is ir.Var:
            seen.setdefault(x.name, x)
        elif isinstance(x, tuple):
            for y in x:
                visit(y)
        elif hasattr(x, "__dataclass_fields__"):
            for f in x.__dataclass_fields__:
                visit(getattr(x, f))
    try:
        visit(e.body)
    finally:
        visit = None                    # a recursive closure is a reference cycle
    return list(seen.values())


__all__ = ["interchange"]
