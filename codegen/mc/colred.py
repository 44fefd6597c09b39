"""colred: a map of reductions over the columns of a matrix, without the
transpose.

`map(lambda col: reduce(op, ne, map(f, col, v)), transpose(a))`, the
forward pass of Rodinia's backprop as Futhark writes it (a matrix-vector
product through the transposed weights), reads `a` (rows x m, row-major)
column by column. Materialising the transpose costs two extra passes over
`a`; instead the rows are split into chunks, and each task folds the rows
of its chunk into a partial row of accumulators for a block of columns
(the loop over the columns is contiguous and vectorises); the partials of
the chunks are then folded in chunk order, column by column. Each column's
result is the in-order fold of its chunks' in-order folds: exact
reassociation of the sequential fold, which LANGUAGE.md allows for reduce
(as mc/segred.py's chunk partials).

A task folds ROW_STREAMS neighbouring chunks in lockstep: step s folds row
lo_u + s of each chunk u into that chunk's partial row, then each chunk's
leftover rows. With narrow rows (backprop's 16 hidden units: one vector
per row) a task that folded one chunk waited at every row for its previous
row's add to reach the same partial (a load, an add and a store through
memory, about 8-9 cycles a row); four chunks are four independent chains
that the core overlaps. It is still a fold of contiguous row ranges in
order, combined in chunk order (no commutation: `reduce_comm` is not
needed). backprop on the 2-core Zen 5 (alternating processes, ratio to
Numba): small 1.00-1.06 -> 0.74-0.77, medium 0.87-0.92 -> 0.80. Futhark's multicore backend reaches
the same loop by interchanging a map of reductions into a reduction of
vectors (a segmented reduction with a vectorised operator, Henriksen et
al., PPoPP 2019); Numba's expert peer writes it by hand.

The transpose stays in `a`'s memory (lower_base.ColumnsOf) only when every
later use of it in its body is a Size or a map of this shape (`plan`), with
nothing that could write `a` in between; the rule runs at host level on the
multicore target only (lower_base.families_for), so the GPU keeps its own
transpose and the map's work-group reductions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from pyshark.core import ir
from pyshark.core.ops import BINARY
from pyshark.core.types import I64, ArrayType, ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, ColumnsOf, Lowerer
from ..usage import free_vars
from .common import ONE, ZERO, PAD_BYTES, all_scalar, apply_op, chunk_bounds, CHUNKS_PER_THREAD

#: columns per task: a block of partial accumulators stays in L1 (1 KiB of f32)
COLUMN_BLOCK = 256
#: rows a group of chunks has at least, so its partials are worth their combine
MIN_CHUNK_ROWS = 64
#: chunks a task folds in lockstep, one row of each per step: independent
#: accumulator chains (module docstring)
ROW_STREAMS = 4

#: statements that may stand between the transpose and its last reader:
#: none of them can write the transposed array's memory in place
_HARMLESS = (ir.AtomExp, ir.BinOp, ir.UnOp, ir.Convert, ir.Select, ir.Assert, ir.Size,
             ir.Index, ir.Slice, ir.Iota, ir.Replicate, ir.Map, ir.Reduce, ir.Transpose)


@dataclass(frozen=True)
class Plan:
    """How a map over the columns splits: the function's checks (asserts,
    the column's size, scalar statements that cannot fail, all on values
    from outside it), its elementwise maps over the column, the reductions
    of the column or of those maps, and the statements after them, which
    run per column with the reductions' results."""
    k: int
    sizes: tuple           # names the function binds to the column's length
    prefix: tuple          # its scalar statements that cannot fail
    asserts: tuple
    inners: tuple          # maps of f(column element, v[i]...)
    reds: tuple            # reductions of the column or of the inners' results
    rest: tuple


def plan(e: ir.Map, name: str) -> Optional[Plan]:
    """The plan of map `e` over the columns `name` (one of its inputs), or
    None when its function is not `checks; m = map(f, col, v...)...;
    r = reduce(op, ne, m or col)...; rest` with f, op, ne, v from outside
    the function, scalar results, and rest not reading the column or any m."""
    ks = [k for k, a in enumerate(e.arrs) if a.name == name]
    lam = e.lam
    if len(ks) != 1 or name in free_vars(lam) or not all_scalar(lam.ret):
        return None
    col = lam.params[ks[0]].name
    bound = {p.name for p in lam.params} | {v.name for s in lam.body.stms for v in s.pat}

    def outside(x) -> bool:
        return not (free_vars(x) & bound)

    sizes: list = []
    prefix: list = []
    asserts: list = []
    stms = list(lam.body.stms)
    while stms:
        s, x = stms[0], stms[0].exp
        if isinstance(x, ir.Size) and x.arr.name == col and x.dim == 0:
            sizes.append(s.pat[0].name)             # the column's length: a's rows
        elif isinstance(x, ir.Assert) and outside(x):
            asserts.append(s)
        elif _total(s) and outside(x):
            prefix.append(s)
        else:
            break
        bound.difference_update(v.name for v in s.pat)
        stms.pop(0)
    inners: list = []
    reds: list = []
    elements = {col}                    # what the reductions may read per element
    while stms and isinstance(stms[0].exp, (ir.Map, ir.Reduce)):
        s, x = stms[0], stms[0].exp
        if not (all_scalar(x.lam.ret) and outside(x.lam) and outside(x.width)):
            return None
        if isinstance(x, ir.Map):
            if reds or not all(a.name in elements or outside(a) for a in x.arrs):
                return None
            inners.append(s)
            elements |= {v.name for v in s.pat}
        else:
            if not (outside(x.neutral) and all(a.name in elements for a in x.arrs)):
                return None
            reds.append(s)
        stms.pop(0)
    later = free_vars(tuple(s.exp for s in stms)) | {a.name for a in lam.body.result
                                                     if isinstance(a, ir.Var)}
    if not reds or later & elements:
        return None
    return Plan(ks[0], tuple(sizes), tuple(prefix), tuple(asserts), tuple(inners),
                tuple(reds), tuple(stms))


def _total(s: ir.Let) -> bool:
    """A scalar statement that cannot fail (so it may run whether or not the
    map runs): a size, a copy, a select, an operator that raises nothing."""
    if not all(isinstance(v.type, ScalarType) for v in s.pat):
        return False
    x = s.exp
    if isinstance(x, ir.BinOp):
        return not BINARY[x.op].raises
    return isinstance(x, (ir.Size, ir.AtomExp, ir.Select))


def lower_transpose(lw: Lowerer, e: ir.Transpose, env, stm):
    """transpose(a) of a matrix whose every later use is a Size or a map
    of column reductions: no copy (ColumnsOf). Declines otherwise."""
    if lw.in_par or not lw.options.parallel:
        return None
    a = lw.atom(e.arr, env)
    if not isinstance(a, Arr) or a.rank != 2:
        return None
    name = stm.pat[0].name
    total = lw.body_counts.get(name, 0)
    seen = maps = 0
    for s in lw.rest:
        if seen == total:
            break
        if name not in free_vars(s.exp):
            if not isinstance(s.exp, _HARMLESS):
                return None
            continue
        seen += 1
        if isinstance(s.exp, ir.Size) and s.exp.arr.name == name:
            continue
        if isinstance(s.exp, ir.Map) and plan(s.exp, name) is not None:
            maps += 1
            continue
        return None
    if seen != total or maps == 0:
        return None
    return [ColumnsOf(a)]


def lower_columns(lw: Lowerer, e: ir.Map, env, stm, arrs: list, n: K.Expr,
                  lower_map: Callable) -> list:
    """The map `e` whose input arrs[k] is ColumnsOf(a): the reductions of
    every column in one pass over a's rows, then `lower_map` of the rest of
    the function over the columns' results."""
    k = next(i for i, v in enumerate(arrs) if isinstance(v, ColumnsOf))
    p = plan(e, e.arrs[k].name)
    env = dict(env)
    for name in p.sizes:
        env[name] = arrs[k].arr.shape[0]
    for s in p.prefix:
        for v, val in zip(s.pat, lw.lower_exp(s, env)):
            env[v.name] = val
    with lw.walk_state_kept():              # applying the lambdas rebinds the walk
        sums = _column_folds(lw, p, e, env, arrs[k].arr, n)
    # the rest of the function, per column, with the reductions as inputs
    env2 = dict(env)
    names = []
    results = [v for red in p.reds for v in red.pat]
    for v, s in zip(results, sums):
        name = f"{v.name}_cols"
        env2[name] = s
        names.append(ir.Var(name, ArrayType(v.type, 1)))
    params = tuple(results) + tuple(q for i, q in enumerate(e.lam.params) if i != p.k)
    lam = ir.Lambda(params, ir.Body(p.rest, e.lam.body.result), e.lam.ret)
    arrs2 = tuple(names) + tuple(x for i, x in enumerate(e.arrs) if i != p.k)
    e2 = ir.Map(e.width, lam, arrs2, e.empty_dims, e.row_dims)
    return lower_map(lw, e2, env2, ir.Let(stm.pat, e2, stm.loc))


def _check_widths(lw: Lowerer, p: Plan, env, rows: K.Expr, n: K.Expr) -> None:
    """The function's asserts, then every inner SOAC's width against the
    column's length and each input's length against the width (Python
    mode's ShapeErrors), only when the map runs at all (n > 0), before
    anything is read."""
    with lw.block() as blk:
        for s in p.asserts:
            lw.lower_exp(s, env)
        for s in p.inners + p.reds:
            w = lw.scalar(s.exp.width, env)
            what = "map" if isinstance(s.exp, ir.Map) else "reduce"
            lw.check(S.b("eq", rows, w), "ShapeError", f"{what}: arrays of lengths {{}} and {{}}",
                     s.loc, (w, rows))
            for x in s.exp.arrs:
                if x.name in env:      # from outside (the column and the inners' results are not)
                    got = lw.array(x, env).shape[0]
                    lw.check(S.b("eq", got, w), "ShapeError",
                             f"{what}: arrays of lengths {{}} and {{}}", s.loc, (w, got))
    lw.emit(K.If(S.b("gt", n, ZERO), blk[0]))


def _column_folds(lw: Lowerer, p: Plan, e: ir.Map, env, a: Arr, n: K.Expr) -> list:
    """The reductions' results for every column of a (arrays of n = a's
    width), in the order of p.reds and their results."""
    rows, m = a.shape[0], a.shape[1]                    # m == n: check_width
    col = e.lam.params[p.k].name
    _check_widths(lw, p, env, rows, n)
    neutrals = [[lw.atom(x, env) for x in red.exp.neutral] for red in p.reds]
    groups = _row_chunks(lw, rows, m)
    nrc = lw.let("nrc", S.b("mul", groups, S.const(ROW_STREAMS, I64)))
    ncb = lw.let("ncb", S.b("div", S.b("add", m, S.const(COLUMN_BLOCK - 1, I64)),
                           S.const(COLUMN_BLOCK, I64)))
    # the chunks' partial rows PAD_BYTES apart: tasks of neighbouring chunks
    # run on different threads and update their rows once per input row, so
    # a line holding the end of one and the start of the next moved between
    # the cores at every row (mc/seghist.py's private histograms, same fix)
    pad = -(-PAD_BYTES // min(t.bytes for red in p.reds for t in red.exp.lam.ret))
    stride = lw.let("stride", S.b("add", m, S.const(pad, I64)))
    parts = [[lw.alloc("colpart", t, (nrc, stride)) for t in red.exp.lam.ret]
             for red in p.reds]
    # the inputs from outside the function, read once per row
    others = {x.name: lw.array(x, env) for s in p.inners for x in s.exp.arrs if x.name in env}

    def task(t):
        g = lw.let("g", S.b("div", t, ncb))
        j0 = lw.let("j0", S.b("mul", S.b("rem", t, ncb), S.const(COLUMN_BLOCK, I64)))
        j1 = lw.let("j1", S.minimum(S.b("add", j0, S.const(COLUMN_BLOCK, I64)), m))
        # the group's ROW_STREAMS chunks, folded in lockstep (module docstring)
        subs = []
        for u in range(ROW_STREAMS):
            c = lw.let("c", S.b("add", S.b("mul", g, S.const(ROW_STREAMS, I64)),
                                S.const(u, I64)))
            lo, hi = chunk_bounds(lw, c, rows, nrc)
            subs.append((lo, hi, lw.let("pb", S.b("mul", c, stride))))

        def init(j):
            for _, _, base in subs:
                for qs, ne in zip(parts, neutrals):
                    for q, v in zip(qs, ne):
                        lw.emit(K.Store(q.data, S.b("add", base, j), v))
        lw.for_range("j", j0, j1, init)

        def row(i, base):
            data = lw.let("row", K.PtrAdd(a.data, S.b("mul", i, m)))
            cache: dict = {}
            outer = {name: lw.element(v, i, cache) for name, v in others.items()}

            def column(j):
                at = lw.let("pj", S.b("add", base, j))
                vals = dict(outer)
                vals[col] = lw.let("x", K.Load(data, j))
                for s in p.inners:
                    res = apply_op(lw, s.exp.lam, env, [vals[x.name] for x in s.exp.arrs])
                    vals.update((v.name, r) for v, r in zip(s.pat, res))
                for red, qs in zip(p.reds, parts):
                    accs = [lw.let("acc", K.Load(q.data, at)) for q in qs]
                    new = apply_op(lw, red.exp.lam, env,
                                   accs + [vals[x.name] for x in red.exp.arrs], reassoc=True)
                    for q, v in zip(qs, new):
                        lw.emit(K.Store(q.data, at, v))
            lw.for_range("j", j0, j1, column)
        steps = lw.let("steps", _min_all([S.b("sub", hi, lo) for lo, hi, _ in subs]))

        def step(s):
            for lo, _, base in subs:
                row(S.b("add", lo, s), base)
        lw.for_range("s", ZERO, steps, step)
        for lo, hi, base in subs:
            lw.for_range("i", S.b("add", lo, steps), hi, lambda i, base=base: row(i, base))
    lw.par_for("t", lw.let("nt", S.b("mul", groups, ncb)), task,
               space=lw.let("space", S.b("mul", rows, m)))

    sums = [[lw.alloc("colred", t, (m,)) for t in red.exp.lam.ret] for red in p.reds]

    def combine(j):
        for red, qs, ne, outs in zip(p.reds, parts, neutrals, sums):
            accs = [lw.var("acc", t) for t in red.exp.lam.ret]
            for acc, v in zip(accs, ne):
                lw.emit(K.Set(acc, v))

            def chunk(c):
                at = lw.let("pj", S.b("add", S.b("mul", c, stride), j))
                loads = [lw.let("p", K.Load(q.data, at)) for q in qs]
                for acc, v in zip(accs, apply_op(lw, red.exp.lam, env, accs + loads,
                                                 reassoc=True)):
                    lw.emit(K.Set(acc, v))
            lw.for_range("c", ZERO, nrc, chunk)
            for o, acc in zip(outs, accs):
                lw.emit(K.Store(o.data, j, acc))
    lw.par_for("j", m, combine)
    return [o for outs in sums for o in outs]


def _min_all(xs: list) -> K.Expr:
    out = xs[0]
    for x in xs[1:]:
        out = S.minimum(out, x)
    return out


def _row_chunks(lw: Lowerer, rows: K.Expr, m: K.Expr) -> K.Expr:
    """Chunks of rows: CHUNKS_PER_THREAD per thread when the matrix is
    large enough to pay for a fork (par_min elements), at most one per
    MIN_CHUNK_ROWS rows, at least one."""
    big = S.b("ge", S.b("mul", rows, m), S.const(lw.options.par_min, I64))
    by_rows = S.b("div", rows, S.const(MIN_CHUNK_ROWS, I64))
    per = S.b("mul", K.NumThreads(), S.const(CHUNKS_PER_THREAD, I64))
    n = S.maximum(S.minimum(per, by_rows), ONE)
    return lw.let("nrc", K.Sel(big, n, ONE))


HOST_HANDLERS = {ir.Transpose: lower_transpose}
