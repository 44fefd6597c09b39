"""The small core programs that put a partitioned entry's pieces together,
built from the entry's own operator (its Lambda, reused as it is) and
neutral element: never Python code of the user's, so they compile with the
entry's own backend (wrapper Backend.compile_program) and run compiled on
the workers.

- reduce: `combine(ps...) = reduce(op, ne, ps...)` over the partial
  results (one per chunk, or per group of partials in Dask's tree); with
  reduce_comm the combine is commutative too. Dask's tree keeps the
  chunks' order, so a non-commutative operator is fine.
- scan: `offset(c..., ys...) = map(\\y. op(c, y), ys...)`: a chunk's own
  scan with the carried total c of the chunks before it put in front
  (op(c, scan_chunk[i]) is the scan of the whole at that row, by
  associativity); the carried totals themselves are offset() of one
  element.
- reduce_by_index: `combine(H...) = map(\\col. reduce(op, ne, col),
  transpose(H)...)` over partial histograms stacked as the rows of H.

Each program has one entry named after the step; its parameters are the
scalar parameters of the user's entry the operator reads (plan.needs),
then the pieces. The statements of the entry body that compute what the
operator and neutral element read (plan.closure: scalars only) are
copied in front. Names stay unique (SSA): the new ones get a prefix no
translator name has.
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.traverse import walk_names
from pyshark.core.types import I64, ArrayType

from .plan import Plan, result_stype, surface_of

COMBINE, OFFSET = "pyshark_dask_combine", "pyshark_dask_offset"


class _Names:
    """Fresh names that no name of the entry's function uses."""

    def __init__(self, fun: ir.FunDef):
        self.taken: set[str] = set()
        walk_names(fun, self.taken.add, lambda v: self.taken.add(v.name))
        self.n = 0

    def var(self, stem: str, t) -> ir.Var:
        while True:
            self.n += 1
            name = f"dask_{stem}{self.n}"
            if name not in self.taken:
                self.taken.add(name)
                return ir.Var(name, t)


def _program(plan: Plan, name: str, pieces: list[ir.Var], stms: list[ir.Let],
             results: tuple[ir.Var, ...]) -> ir.Program:
    fun = plan.fun
    sparams = [fun.params[k] for k in plan.needs]
    params = tuple(sparams) + tuple(pieces)
    body = ir.Body(tuple(plan.closure) + tuple(stms), results)
    fdef = ir.FunDef(name, params, tuple(v.type for v in results), body, fun.loc)
    eparams = tuple(ir.EntryParam(p.name, surface_of(p.type)) for p in params)
    entry = ir.Entry(name, eparams, result_stype(v.type for v in results), fun.loc)
    return ir.Program({name: fdef}, {name: entry}, {}, f"<pyshark.dask: {plan.entry}>")


def combine_program(plan: Plan) -> ir.Program:
    """The combine step of a "reduce" or "reduce_by_index" plan."""
    if plan.kind == "reduce":
        return _combine_reduce(plan)
    if plan.kind == "reduce_by_index":
        return _combine_hist(plan)
    raise ValueError(f"a {plan.kind} plan has no combine step")


def _combine_reduce(plan: Plan) -> ir.Program:
    e: ir.Reduce = plan.op
    names = _Names(plan.fun)
    parts = [names.var("part", ArrayType(t, 1)) for t in plan.acc_types]
    n = names.var("n", I64)
    outs = tuple(names.var("red", t) for t in plan.acc_types)
    stms = [ir.Let((n,), ir.Size(parts[0], 0)),
            ir.Let(outs, ir.Reduce(n, e.lam, e.neutral, tuple(parts), e.commutative))]
    return _program(plan, COMBINE, parts, stms, outs)


def _combine_hist(plan: Plan) -> ir.Program:
    e: ir.ReduceByIndex = plan.op
    names = _Names(plan.fun)
    hs = [names.var("hist", ArrayType(t, 2)) for t in plan.acc_types]
    ts = [names.var("cols", ArrayType(t, 2)) for t in plan.acc_types]
    cols = tuple(names.var("col", ArrayType(t, 1)) for t in plan.acc_types)
    m, r = names.var("m", I64), names.var("r", I64)
    reds = tuple(names.var("red", t) for t in plan.acc_types)
    inner = ir.Lambda(cols, ir.Body((
        ir.Let((r,), ir.Size(cols[0], 0)),
        ir.Let(reds, ir.Reduce(r, e.lam, e.neutral, cols, True))), reds), plan.acc_types)
    outs = tuple(names.var("out", ArrayType(t, 1)) for t in plan.acc_types)
    stms = [ir.Let((t,), ir.Transpose(h)) for t, h in zip(ts, hs)]
    stms += [ir.Let((m,), ir.Size(hs[0], 1)),
             ir.Let(outs, ir.Map(m, inner, tuple(ts)))]
    return _program(plan, COMBINE, hs, stms, outs)


def offset_program(plan: Plan) -> ir.Program:
    """The carried-offset step of a "scan" plan: offset(c..., ys...)."""
    if plan.kind != "scan":
        raise ValueError(f"a {plan.kind} plan has no offset step")
    e: ir.Scan = plan.op
    k = len(e.neutral)
    names = _Names(plan.fun)
    carry = [names.var("carry", t) for t in plan.acc_types]
    ys = [names.var("ys", ArrayType(t, 1)) for t in plan.acc_types]
    n = names.var("n", I64)
    outs = tuple(names.var("out", ArrayType(t, 1)) for t in plan.acc_types)
    acc, elems = e.lam.params[:k], e.lam.params[k:]
    binds = tuple(ir.Let((a,), ir.AtomExp(c)) for a, c in zip(acc, carry))
    inner = ir.Lambda(elems, ir.Body(binds + e.lam.body.stms, e.lam.body.result), e.lam.ret)
    stms = [ir.Let((n,), ir.Size(ys[0], 0)), ir.Let(outs, ir.Map(n, inner, tuple(ys)))]
    return _program(plan, OFFSET, carry + ys, stms, outs)
