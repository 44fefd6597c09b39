"""flatten (gpu target only): map distribution and map-loop interchange, so
that a host-level map whose function runs a sequential loop over inner
parallel work becomes a sequential loop over maps.

This is the kernel extraction of moderate flattening (Henriksen, Serup,
Elsman, Henglein, Oancea: "Futhark: purely functional GPU-programming with
nested parallelism and in-place updates", PLDI 2017, section 5), for the
common shape: an outer map whose function is straight-line statements and
for-loops with an invariant trip count (LocVolCalib's map over strikes of a
time loop over maps of the grid).

    map(k -> s1; ...; sN; r)        distribution: each statement (or a run
                                    of cheap statements ending in one with
                                    inner parallelism) becomes its own map
                                    over k, its values arrays over k
    map(k -> loop (x = x0_k) for g < n: body)
                                    interchange (n invariant): loop (X = X0)
                                    for g < n: distribute(body)
    statements that do not depend on k  are hoisted out of the map (computed
                                    once instead of once per element)

After it, the inner maps are perfect nests over k x ... that codegen/gpu/
segmap.py runs as one work-item per element, and the sequential loops
inside them (tridiagonal solves) run one per (k, row).

Why it keeps the golden rule:
- Values: every statement instance (statement, k) runs on the same inputs
  as before; data dependencies are kept (a statement's map runs after the
  maps of the statements it reads).
- Errors: each element's statements still run in their order; only the
  interleaving across elements changes, and a parallel map already runs its
  elements in any interleaving (kir.py: "inside a ParFor the first failure
  wins"), so the error raised is one the map could already raise. Hoisting
  a statement that may raise out of the map must not run it before an
  earlier statement of the element that may raise: it is hoisted only when
  no statement still waiting to be emitted in the current map (the pending
  group) may raise, else it joins that map; and
  since the map might be empty, code that hoists such a statement runs
  under `width > 0` (the map's width assertions run first, unconditionally,
  as the map checks its inputs before any element).
- Shapes: a map over k of array values stacks them, which raises ShapeError
  when the rows differ; every map the pass makes must provably have regular
  rows (dimensions invariant across k: RegularResults, with loops and branches).
- Ownership: a statement that updates an array in place that it did not
  create itself would consume a row of a map input after distribution;
  declined.
- Termination: maps containing while loops are left alone.

Versions (incremental flattening's run-time choice, Henriksen et al.,
PPoPP 2019, in its simplest form): a map whose function runs several SOACs
and no loop (LocVolCalib's time step over the strikes, written
loop-outside) is worth distributing only when the map itself is too narrow
to fill the device; a wide one runs best as it is, one work-item per
element. With `distribute_below` (the target's; PYSHARK_OPENCL_DISTRIBUTE_BELOW)
such a map becomes `if 0 < width < below: distributed else: the map`, both
computing the same values (the argument above), so which one runs is a
question of speed only. Maps with a loop are distributed unconditionally, as
before.

Declines (the map is left unchanged) wherever one of these does not hold,
and on maps that have no for-loop with inner parallelism at the top of
their function (nothing to gain).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from pyshark.core import ir
from pyshark.core.empty_shapes import empty_dims_of, returns_arrays
from pyshark.core.traverse import binder_vars, free_vars, iter_stms
from pyshark.core.types import ArrayType, BOOL, I64, ScalarType, array_of

from .analysis import Facts, RegularResults, consumable_names, may_raise
from .rewrite import NameGen, binders, fundef_names, map_functions, subst

_SOACS = (ir.Map, ir.Reduce, ir.Scan, ir.Filter, ir.ReduceByIndex, ir.Scatter)


class _Decline(Exception):
    pass


def flatten(program: ir.Program, distribute_below: int = 0) -> ir.Program:
    """`distribute_below` > 0: also distribute host-level maps whose function
    is several SOACs and no loop, when their width is below it (a run-time
    choice between the two versions, see "Versions" below)."""
    return map_functions(program, lambda f: _flatten_fun(f, distribute_below))


def _flatten_fun(fun: ir.FunDef, below: int = 0) -> ir.FunDef:
    names = NameGen(fundef_names(fun))
    body = _host_body(fun.body, names, below)
    return fun if body is fun.body else replace(fun, body=body)


def _host_body(body: ir.Body, names: NameGen, below: int = 0) -> ir.Body:
    """body with its host-level maps distributed (host-level loop bodies and
    branches too; never inside a lambda)."""
    out: list[ir.Let] = []
    changed = False
    for s in body.stms:
        e = s.exp
        if e.__class__ is ir.Map and (_worth(e) or (below and _worth_versions(e))):
            try:
                new = _Distribute(names, s, None if _worth(e) else below).run()
            except _Decline:
                new = None
            if new is not None:
                out.extend(new)
                changed = True
                continue
        elif e.__class__ is ir.Loop:
            b = _host_body(e.body, names, below)
            if b is not e.body:
                s = replace(s, exp=replace(e, body=b))
                changed = True
        elif e.__class__ is ir.If:
            t, f = _host_body(e.then_body, names, below), _host_body(e.else_body, names, below)
            if t is not e.then_body or f is not e.else_body:
                s = replace(s, exp=replace(e, then_body=t, else_body=f))
                changed = True
        out.append(s)
    return ir.Body(tuple(out), body.result) if changed else body


def _worth(m: ir.Map) -> bool:
    """The map's function has, at its top level, a for-loop with a trip count
    invariant across the map whose body holds a SOAC; and no while loops."""
    lam = m.lam
    if not m.arrs:
        return False
    for s in iter_stms(lam.body):
        if s.exp.__class__ is ir.Loop and s.exp.form.__class__ is not ir.ForLoop:
            return False
    variant = {p.name for p in lam.params}
    for s in lam.body.stms:
        e = s.exp
        fv = free_vars(e)
        if (e.__class__ is ir.Loop and e.form.__class__ is ir.ForLoop
                and fv & variant and not (free_vars(e.form.bound) & variant)
                and any(x.exp.__class__ in _SOACS for x in e.body.stms)):
            return True
        if fv & variant:
            variant.update(v.name for v in s.pat)
    return False


def _worth_versions(m: ir.Map) -> bool:
    """The map's function runs, at its top level, SOACs over arrays (inner
    parallelism a narrow map would leave sequential, e.g. one LocVolCalib
    time step over the strikes, written loop-outside), no loop at its top
    level (_worth's case) and no while loop; a function that is one SOAC
    returning its results is a nest the gpu lowering runs flat already."""
    if not m.arrs:
        return False
    for s in iter_stms(m.lam.body):
        if s.exp.__class__ is ir.Loop and s.exp.form.__class__ is not ir.ForLoop:
            return False
    top = m.lam.body.stms
    if any(s.exp.__class__ is ir.Loop for s in top):
        return False
    soacs = [s for s in top if s.exp.__class__ in _SOACS and not _feeds_reduction(s, top, m)]
    if len(soacs) >= 2:
        return True
    # one SOAC: worth it unless the function is that SOAC and cheap statements
    # feeding it (a level of a perfect nest, which the lowering runs flat):
    # a reduction followed by scalar work (backprop's squashed sums), or a map
    # whose rows are reshaped (tabulate_2d's flat map, crystal's frames)
    if not soacs:
        return False
    last = top[-1]
    if last is soacs[0] and tuple(v.name for v in last.pat) == tuple(
            a.name for a in m.lam.body.result if a.__class__ is ir.Var):
        return False
    # a reduction over arrays shared by every element (n-body's forces) is
    # the tiled map-reduce's (gpu/segmap.tiled_map_reduce); one over the
    # element's own row is a segmented reduction once distributed
    return (soacs[0].exp.__class__ is ir.Map
            or any(isinstance(p.type, ArrayType) for p in m.lam.params))


def _feeds_reduction(s: ir.Let, top, m: ir.Map) -> bool:
    """A map whose results only a later reduce or scan of the same body reads
    (a map-reduce, which the lowering fuses: one SOAC, not two)."""
    if s.exp.__class__ is not ir.Map:
        return False
    names = {v.name for v in s.pat}
    if names & {a.name for a in m.lam.body.result if a.__class__ is ir.Var}:
        return False
    readers = [t for t in top if names & free_vars(t.exp)]
    return (len(readers) == 1 and readers[0].exp.__class__ in (ir.Reduce, ir.Scan)
            and names <= {a.name for a in readers[0].exp.arrs}
            and not names & free_vars(readers[0].exp.lam))


def _may_raise(e: ir.Exp) -> bool:
    return may_raise(e, Facts())


class _Distribute:
    def __init__(self, names: NameGen, stm: ir.Let, below: Optional[int] = None):
        self.names = names
        self.below = below          # versions: distribute only when width < below
        self.stm = stm
        self.m: ir.Map = stm.exp
        self.w = self.m.width
        # an empty map of arrays keeps its rows' dimensions (empty_shapes.py):
        # the distributed maps would not know them, so width 0 takes the guard
        self.need_guard = returns_arrays(self.m)
        self.loc = stm.loc
        self.remat: dict[str, ir.Let] = {}     # variant, cheap, cannot fail
        self.order: dict[str, int] = {}

    # -- the whole map -----------------------------------------------------
    def run(self) -> list[ir.Let]:
        m, w = self.m, self.w
        lam = m.lam
        pre: list[ir.Let] = []
        # the map's width check, before anything else (as the map does)
        for a in m.arrs:
            n = self.names.var(ir.Var("n", I64))
            ok = self.names.var(ir.Var("same", BOOL))
            pre += [self._let((n,), ir.Size(a, 0)),
                    self._let((ok,), ir.BinOp("eq", n, w)),
                    self._let((), ir.Assert(ok, "map: arrays differ in length", "ShapeError"))]
        expanded = {p.name: a for p, a in zip(lam.params, m.arrs)}
        inputs = {a.name for a in m.arrs}
        out, expanded = self.body(lam.body.stms, lam.body.result, expanded)
        results = []
        for r, t, v in zip(lam.body.result, lam.ret, self.stm.pat):
            x = self.expand(r, expanded, out)
            if x is not None:
                if x.name in inputs:          # a map's result is a fresh array
                    y = self.names.var(v)
                    out.append(self._let((y,), ir.Copy(x)))
                    x = y
                results.append(x)
            else:
                y = self.names.var(v)
                out.append(self._let((y,), ir.Replicate(w, r)))
                results.append(y)
        if self.below is not None:
            return self._versions(pre, out, results)
        if not self.need_guard:
            return pre + out + [self._let((v,), ir.AtomExp(x))
                                for v, x in zip(self.stm.pat, results)]
        # width 0: the map ran nothing; its results are empty arrays
        cond = self.names.var(ir.Var("nonempty", BOOL))
        pre.append(self._let((cond,), ir.BinOp("gt", w, ir.Const(0, I64))))
        then_body = ir.Body(tuple(out), tuple(results))
        else_body = self._empty_map()
        pre.append(self._let(self.stm.pat, ir.If(cond, then_body, else_body,
                                                 tuple(v.type for v in self.stm.pat))))
        return pre

    def _versions(self, pre: list, out: list, results: list) -> list[ir.Let]:
        """if 0 < width < below: the map's width checks and the distributed
        statements, else the map as it was (which also runs an empty map,
        keeping its rows' dimensions)."""
        w = self.w
        pos, narrow, cond = (self.names.var(ir.Var("nonempty", BOOL)),
                             self.names.var(ir.Var("narrow", BOOL)),
                             self.names.var(ir.Var("distribute", BOOL)))
        head = [self._let((pos,), ir.BinOp("gt", w, ir.Const(0, I64))),
                self._let((narrow,), ir.BinOp("lt", w, ir.Const(self.below, I64))),
                self._let((cond,), ir.BinOp("land", pos, narrow))]
        then_body = ir.Body(tuple(pre + out), tuple(results))
        pat = tuple(self.names.var(v) for v in self.stm.pat)
        # the map as it was, its binders renamed (the distributed statements
        # reuse them, and names are bound once per function)
        fresh = {v.name: self.names.var(v) for v in binder_vars(self.m)}
        else_body = ir.Body((self._let(pat, subst(self.m, fresh)),), pat)
        return head + [self._let(self.stm.pat, ir.If(cond, then_body, else_body,
                                                     tuple(v.type for v in self.stm.pat)))]

    def _empty_map(self) -> ir.Body:
        """The map's results when its width is 0: a map with the same inputs
        whose function builds values of the result types, and the original
        map's empty dimensions."""
        lam = self.m.lam
        params = tuple(self.names.var(p) for p in lam.params)
        stms: list[ir.Let] = []
        res: list[ir.Atom] = []
        for t in lam.ret:
            if isinstance(t, ScalarType):
                res.append(ir.Const(False if t == BOOL else 0, t))
                continue
            x: ir.Atom = ir.Const(False if t.elem == BOOL else 0, t.elem)
            for r in range(1, t.rank + 1):
                v = self.names.var(ir.Var("empty", ArrayType(t.elem, r)))
                stms.append(self._let((v,), ir.Replicate(ir.Const(0, I64), x)))
                x = v
            res.append(x)
        pat = tuple(self.names.var(v) for v in self.stm.pat)
        sizes, dims = [], self.m.empty_dims
        if dims is None and returns_arrays(self.m):
            # the original function's empty dimensions (the final pass would
            # see only this map's function)
            sizes, dims = empty_dims_of(self.m, lambda t: self.names.var(ir.Var("es", t)),
                                        self.loc)
        new = ir.Map(self.w, ir.Lambda(params, ir.Body(tuple(stms), tuple(res)), lam.ret),
                     self.m.arrs, dims)
        return ir.Body(tuple(sizes) + (self._let(pat, new),), pat)

    def _let(self, pat, exp) -> ir.Let:
        return ir.Let(tuple(pat), exp, self.loc)

    # -- a body: distribution ----------------------------------------------
    def variant(self, n: str, expanded: dict) -> bool:
        return n in expanded or n in self.remat

    def body(self, stms, result, expanded: dict) -> tuple[list[ir.Let], dict]:
        """The statements that compute stms for every k, and the expanded
        names after them (name -> its array over k)."""
        expanded = dict(expanded)
        out: list[ir.Let] = []
        group: list[ir.Let] = []
        group_names: set[str] = set()
        inv_ok = True           # no pending statement of the group may raise
        live_after = _live_after(stms, result)

        def flush(i: int):
            nonlocal inv_ok
            if group:
                out.extend(self.group_map(group, live_after[i], expanded))
                group.clear()
                group_names.clear()
            inv_ok = True

        for i, s in enumerate(stms):
            fv = free_vars(s.exp)
            variant = any(self.variant(n, expanded) or n in group_names for n in fv)
            if not variant:
                mr = _may_raise(s.exp)
                if not mr or inv_ok:
                    if mr:
                        self.need_guard = True
                    out.append(s)
                    continue
            e = s.exp
            if variant and not (fv & group_names) and _rematerialisable(s):
                # cheap and cannot fail: recomputed in each map that reads it
                for v in s.pat:
                    self.remat[v.name] = s
                    self.order[v.name] = len(self.order)
                continue
            if (variant and e.__class__ is ir.Loop and e.form.__class__ is ir.ForLoop
                    and not any(self.variant(n, expanded) or n in group_names
                                for n in free_vars(e.form.bound))
                    and any(x.exp.__class__ in _SOACS for x in e.body.stms)):
                flush(i - 1)
                out.extend(self.interchange(s, expanded))
                continue
            group.append(s)
            group_names.update(v.name for v in s.pat)
            if _may_raise(e):
                inv_ok = False
            if e.__class__ in _SOACS or e.__class__ is ir.Loop:
                flush(i)
        if group:
            flush(len(stms) - 1)
        return out, expanded

    def expand(self, a: ir.Atom, expanded: dict, out: list) -> Optional[ir.Var]:
        """The array over k of a variant atom (None when a is invariant);
        a rematerialisable name gets a map of its own."""
        if a.__class__ is not ir.Var:
            return None
        if a.name in expanded:
            return expanded[a.name]
        if a.name in self.remat:
            out.extend(self.group_map([], frozenset(), expanded, want=(a.name,)))
            return expanded[a.name]
        return None

    def group_map(self, group: list[ir.Let], live: frozenset, expanded: dict,
                  want: tuple = ()) -> list[ir.Let]:
        """One map over k computing the statements of group (after the
        rematerialised statements they read); its live results, and the
        rematerialisable names in want, become expanded names."""
        bound = {v.name for s in group for v in s.pat}
        body = ir.Body(tuple(group), ())
        if consumable_names(body) - bound - binders(body):
            raise _Decline("a statement consumes an array it did not create")
        # the rematerialised statements read, renamed apart
        pulled: set[str] = set()
        todo = [n for n in free_vars(body) if n in self.remat] + list(want)
        while todo:
            n = todo.pop()
            if n in pulled:
                continue
            pulled.add(n)
            todo.extend(x for x in free_vars(self.remat[n].exp) if x in self.remat)
        defs: list[ir.Let] = []
        for n in sorted(pulled, key=self.order.__getitem__):
            if self.remat[n] not in defs:
                defs.append(self.remat[n])
        ren = {v.name: self.names.var(v) for d in defs for v in d.pat}
        stms = [subst(d, ren) for d in defs] + [subst(x, ren) for x in group]
        full = ir.Body(tuple(stms), ())
        needed = sorted(n for n in free_vars(full) if n in expanded)
        if not needed:
            needed = [self.m.lam.params[0].name]
        params, arrs, m = [], [], {}
        for n in needed:
            a = expanded[n]
            p = self.names.var(ir.Var(n, a.type.row()))
            params.append(p)
            arrs.append(a)
            m[n] = p
        outs = [v for s in group for v in s.pat if v.name in live]
        keys = [v.name for v in outs] + list(want)
        outs += [ren[n] for n in want]
        if not outs:
            if not any(_may_raise(s.exp) for s in group):
                return []
            outs = [v for s in group for v in s.pat if isinstance(v.type, ScalarType)][:1]
            keys = [v.name for v in outs]
            if not outs:
                raise _Decline("a group that may raise has no scalar value to return")
        lam = ir.Lambda(tuple(params), subst(ir.Body(tuple(stms), tuple(outs)), m),
                        tuple(v.type for v in outs))
        new = ir.Map(self.w, lam, tuple(arrs))
        if not _RegularLoops(new).results_ok():
            raise _Decline("rows of a distributed map may differ in shape")
        pat = []
        for k, v in zip(keys, outs):
            x = self.names.var(ir.Var(k, array_of(v.type)))
            expanded[k] = x
            pat.append(x)
        return [ir.Let(tuple(pat), new, (group or defs)[0].loc)]

    # -- a loop: interchange -----------------------------------------------
    def interchange(self, s: ir.Let, expanded: dict) -> list[ir.Let]:
        e: ir.Loop = s.exp
        vp = {p.name for p, a in zip(e.params, e.inits)
              if a.__class__ is ir.Var and self.variant(a.name, expanded)}
        while True:
            var = set(expanded) | set(self.remat) | vp
            for x in e.body.stms:
                if free_vars(x.exp) & var:
                    var.update(v.name for v in x.pat)
            new = {p.name for p, r in zip(e.params, e.body.result)
                   if r.__class__ is ir.Var and r.name in var}
            if new <= vp:
                break
            vp |= new
        out: list[ir.Let] = []
        params, inits, inner = [], [], dict(expanded)
        for p, a in zip(e.params, e.inits):
            if p.name not in vp:
                params.append(p)
                inits.append(a)
                continue
            P = self.names.var(ir.Var(p.name, array_of(p.type)))
            params.append(P)
            x = self.expand(a, expanded, out)
            if x is None:
                x = self.names.var(P)
                out.append(ir.Let((x,), ir.Replicate(self.w, a), s.loc))
            inits.append(x)
            inner[p.name] = P
        stms, inner = self.body(e.body.stms, e.body.result, inner)
        stms = list(stms)
        res = []
        for p, r in zip(e.params, e.body.result):
            if p.name not in vp:
                res.append(r)
                continue
            x = self.expand(r, inner, stms)
            if x is None:
                x = self.names.var(ir.Var(p.name, array_of(p.type)))
                stms.append(ir.Let((x,), ir.Replicate(self.w, r), s.loc))
            res.append(x)
        pat = []
        for p, v in zip(e.params, s.pat):
            if p.name in vp:
                x = self.names.var(ir.Var(v.name, array_of(v.type)))
                expanded[v.name] = x
                pat.append(x)
            else:
                pat.append(v)
        loop = ir.Loop(tuple(params), tuple(inits), e.form,
                       ir.Body(tuple(stms), tuple(res)))
        out.append(ir.Let(tuple(pat), loop, s.loc))
        return out


_REMAT = (ir.Size, ir.Transpose, ir.AtomExp, ir.Convert, ir.UnOp, ir.Select, ir.BinOp)


def _rematerialisable(s: ir.Let) -> bool:
    """Cheap statements that cannot fail: sizes, transposed views, scalar
    arithmetic."""
    return s.exp.__class__ in _REMAT and not _may_raise(s.exp)


def _live_after(stms, result) -> list[frozenset]:
    live = frozenset(a.name for a in result if a.__class__ is ir.Var)
    out = [frozenset()] * len(stms)
    for k in range(len(stms) - 1, -1, -1):
        out[k] = live
        live = live | free_vars(stms[k].exp)
    return out


class _RegularLoops(RegularResults):
    """analysis.RegularResults (dimensions of a map's array results invariant
    across its elements) extended through for-loops (a carried array whose
    dimension is invariant initially and after each iteration, assuming it
    is before) and branches (both sides invariant)."""

    def __init__(self, m: ir.Map):
        super().__init__(m)
        self.params: dict[str, tuple] = {}
        for stm in iter_stms(m.lam.body):
            if stm.exp.__class__ is ir.Loop:
                for i, p in enumerate(stm.exp.params):
                    self.params[p.name] = (stm.exp, i)
        self.assumed: set = set()

    def dim(self, v: ir.Var, d: int, depth: int) -> bool:
        if v.name not in self.varying:
            return True
        if v.name in self.params:
            e, i = self.params[v.name]
            return self._loop_dim(e, i, d, depth)
        stm = self.defs.get(v.name)
        if stm is not None and stm.exp.__class__ is ir.Loop and v.name not in self.rows:
            e = stm.exp
            if e.form.__class__ is not ir.ForLoop:
                return False
            return self._loop_dim(e, stm.pat.index(v), d, depth)
        if stm is not None and stm.exp.__class__ is ir.If and v.name not in self.rows:
            e = stm.exp
            i = stm.pat.index(v)
            return all(r.__class__ is ir.Var and self.dim(r, d, depth + 1)
                       for r in (e.then_body.result[i], e.else_body.result[i]))
        return super().dim(v, d, depth)

    def _loop_dim(self, e: ir.Loop, i: int, d: int, depth: int) -> bool:
        if depth > 64:
            return False
        key = (id(e), i, d)
        if key in self.assumed:
            return True
        init, res = e.inits[i], e.body.result[i]
        if init.__class__ is not ir.Var or res.__class__ is not ir.Var:
            return False
        if not self.dim(init, d, depth + 1):
            return False
        self.assumed.add(key)
        try:
            return self.dim(res, d, depth + 1)
        finally:
            self.assumed.discard(key)
