"""segmap: a map as a parallel loop over its width (Futhark's SegMap).

Scalar results: one output per result, written at index i by iteration i;
when each result feeds exactly one later SOAC of the same body the map is
not materialised at all (a Delayed array, fused into its consumer).
Array results: when the rows' shape is known without running one (the
map's row_dims, core/empty_shapes.py), the result is allocated first and
every row runs in the parallel loop; else iteration 0 runs first to learn
it (sizes are needed before the allocation; an empty map's rows have its
empty_dims) and the rest run in parallel. Each row checks it has that
shape (an irregular result is a ShapeError, as in Python mode) and is
copied into its place. When the rows are too few to fill the threads and
the function has parallel work of its own, they run one after another with
that work parallel instead (_rows_in_versions).
"""
from __future__ import annotations

from contextlib import contextmanager

from pyshark.core import ir
from pyshark.core.types import I64, ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, ColumnsOf, Delayed, DelayedGroup, Lowerer
from ..kir_passes.streaming import STREAM_MIN_BYTES
from ..lower_arrays import can_delay, tile_bounds, tile_count
from ..usage import free_vars
from .common import ONE, ZERO, all_scalar, check_width, elements, empty_dims, row_dims
from .colred import lower_columns
from .stream_tile import elements_memory_bound, result_unread, stream_tile
from .tile import register_tiled


def lower_map(lw: Lowerer, e: ir.Map, env, stm):
    n = lw.scalar(e.width, env)
    arrs = [lw.array(a, env) for a in e.arrs]
    check_width(lw, n, e.arrs, arrs, stm.loc, "map")
    if any(isinstance(v, ColumnsOf) for v in arrs):
        return lower_columns(lw, e, env, stm, arrs, n, lower_map)
    lam = e.lam

    def row(i):
        return lw.apply(lam.params, lam.body, env, elements(lw, arrs, i), new_frame=True)

    if not lw.in_par and lw.options.parallel:
        nest = _perfect_nest(lw, e, env)
        if nest is not None:
            return _tiled_nest(lw, e, env, n, arrs, nest, stm)
    if all_scalar(lam.ret):
        names = [v.name for v in stm.pat]
        if can_delay(lw, names) and not _fusion_duplicates_loops(lw, lam, names):
            group = DelayedGroup(n, lambda i: [r for r, _ in row(i)], (lam, env, arrs))
            return [Delayed(group, k, t) for k, t in enumerate(lam.ret)]
        outs = [lw.alloc("map", t, (n,)) for t in lam.ret]
        rows = row_split(lw, e, env, n)
        if rows is not None:
            # a flat index over an A x B space that the function splits with
            # // B and % B: loop over rows and columns instead, so that the
            # division disappears (bounds.split_by) and the inner loop is
            # contiguous
            a, m = rows

            def row_body(r):
                base = lw.let("rb", S.b("mul", r, m))

                def col(c):
                    i = lw.let("fi", S.b("add", base, c))
                    for o, (x, _) in zip(outs, row(i)):
                        lw.emit(K.Store(o.data, i, x))
                lw.for_range("c", ZERO, m, col)
            lw.par_for("r", a, row_body)
            return outs

        def body(i):
            for o, (r, _) in zip(outs, row(i)):
                lw.emit(K.Store(o.data, i, r))
        lw.par_for("i", n, body)
        return outs
    rows = row_dims(lw, e, env)
    if rows is not None:
        return _map_of_known_rows(lw, lam, n, row, stm, empty_dims(lw, e, env), rows)
    return _map_of_arrays(lw, lam, n, row, stm, empty_dims(lw, e, env))


_HEAVY = (ir.Map, ir.Reduce, ir.Scan, ir.Filter, ir.ReduceByIndex, ir.Scatter, ir.Loop,
          ir.Call)


def _has_inner_loops(body: ir.Body) -> bool:
    for s in body.stms:
        if isinstance(s.exp, _HEAVY):
            return True
        if isinstance(s.exp, ir.If) and (_has_inner_loops(s.exp.then_body)
                                         or _has_inner_loops(s.exp.else_body)):
            return True
    return False


def _has_nested_loops(body: ir.Body) -> bool:
    """A SOAC or loop whose own function (or body) loops again: a row's
    work that is more than one flat parallel loop."""
    for s in body.stms:
        e = s.exp
        if isinstance(e, ir.If):
            if _has_nested_loops(e.then_body) or _has_nested_loops(e.else_body):
                return True
        elif isinstance(e, ir.Loop):
            if _has_inner_loops(e.body):
                return True
        elif isinstance(e, ir.Call):
            return True
        elif getattr(e, "lam", None) is not None and _has_inner_loops(e.lam.body):
            return True
    return False


def _fusion_duplicates_loops(lw: Lowerer, lam: ir.Lambda, names: list) -> bool:
    """True when the results of a map would be fused into more than one
    consumer and its function loops (an inner SOAC or loop): each consumer
    would recompute every element, loops included (n-body's three
    accelerations, one reduction, fused into three velocity maps, ran the
    O(n^2) reduction three times). Such a map is materialised once."""
    if len(names) < 2 or not _has_inner_loops(lam.body):
        return False
    consumers = set()
    for name in names:
        for k, s in enumerate(lw.rest):
            if name in free_vars(s.exp) and not isinstance(s.exp, ir.Size):
                consumers.add(k)
                break
    return len(consumers) > 1


# Tile of a two-dimensional map nest: rows of the outer map x columns of the
# inner one. 16 x 16 keeps a tile's rows and columns (e.g. 32 rows of a
# 1024-long f32 matrix: 128 KiB) in the L2 cache while they are reused.
TILE_I = 16
TILE_J = 16
# An element without loops of its own (a stencil's update, an elementwise
# step) reads a few neighbours contiguous in j: blocking j buys no reuse, and
# 16-wide tile rows cost a row's set-up (row pointers, shape checks, the
# split pieces' bounds) per 16 elements and a vector loop of two iterations
# (srad's update nest: 79 instructions of set-up per 16 elements). Such
# nests get tile rows of TILE_J_FLAT elements: 16 x 256 tiles, a vector loop
# of 32 iterations, still many tiles for the threads (256 at 1024 x 1024).
TILE_J_FLAT = 256


def _perfect_nest(lw: Lowerer, e: ir.Map, env):
    """(inner Map statement index, inner width) when e's function ends in a
    map of scalars whose result it returns and whose width is known outside
    the nest (a constant, a free name, or the size of a free array or of a
    row); else None."""
    lam = e.lam
    if len(lam.ret) != 1 or isinstance(lam.ret[0], ScalarType) or lam.ret[0].rank != 1:
        return None
    body = lam.body
    if not body.stms or len(body.result) != 1:
        return None
    last = body.stms[-1]
    inner = last.exp
    if (not isinstance(inner, ir.Map) or len(last.pat) != 1
            or not isinstance(body.result[0], ir.Var)
            or last.pat[0].name != body.result[0].name or not all_scalar(inner.lam.ret)):
        return None
    w = inner.width
    if isinstance(w, ir.Const):
        return len(body.stms) - 1, S.const(w.value, I64)
    bound = {v.name: s for s in body.stms for v in s.pat}
    if w.name not in bound:
        v = env.get(w.name)
        return (len(body.stms) - 1, v) if v is not None else None
    d = bound[w.name].exp
    if not isinstance(d, ir.Size):
        return None
    if d.arr.name in env and d.arr.name not in bound:
        return len(body.stms) - 1, lw.array(d.arr, env).shape[d.dim]
    params = [p.name for p in lam.params]
    if d.arr.name in params:
        outer = lw.array(e.arrs[params.index(d.arr.name)], env)
        if d.dim + 1 < outer.rank:
            return len(body.stms) - 1, outer.shape[d.dim + 1]
    return None


def _tiled_nest(lw: Lowerer, e: ir.Map, env, n, arrs, nest, stm):
    """A perfect nest map(i) { ...; map(j) scalar } as one parallel loop over
    TILE_I x TILE_J tiles of the (i, j) space (moderate flattening into a
    two-dimensional segmap, with cache blocking). The outer function's
    other statements run once per row of a tile."""
    upto, nj = nest
    lam = e.lam
    inner = lam.body.stms[upto].exp
    tj = TILE_J if _has_inner_loops(inner.lam.body) else TILE_J_FLAT
    nj = lw.let("nj", nj)
    # an empty outer map has the rows its empty_dims say (Python mode's stand-in)
    (ej,) = empty_dims(lw, e, env)
    out = lw.alloc("map", inner.lam.ret[0],
                   (n, lw.let("nr", K.Sel(S.b("gt", n, ZERO), nj, ej[0]))))

    @contextmanager
    def open_row(i):
        with lw.open_body(lam.body, upto, dict(zip((p.name for p in lam.params),
                                                   elements(lw, arrs, i))) | env) as renv:
            cols = [lw.array(a, renv) for a in inner.arrs]
            check_width(lw, nj, inner.arrs, cols, stm.loc, "map")
            yield renv, cols

    def store(i, j, x):
        lw.emit(K.Store(out.data, S.b("add", S.b("mul", i, nj), j), x))

    def rows(i0, i1, j0, j1, store):
        def element(renv, cols, i, j):
            res = lw.apply(inner.lam.params, inner.lam.body, renv, elements(lw, cols, j),
                           new_frame=True)
            store(i, j, res[0][0])
        if register_tiled(lw, inner, i0, i1, j0, j1, open_row, element, store):
            return

        def row(i):
            with open_row(i) as (renv, cols):
                lw.for_range("j", j0, j1, lambda j: element(renv, cols, i, j), max_trip=tj)
        lw.for_range("i", i0, i1, row)

    def tile(t):
        rows(*tile_bounds(lw, t, n, nj, TILE_I, tj), store)

    def streamed_tile(t):
        i0, i1, j0, j1 = tile_bounds(lw, t, n, nj, TILE_I, tj)
        with lw.temp_scope(free=True):     # j0 = 0, j1 = nj (nj <= tj)
            buf = lw.alloc("tile", out.elem, (S.const(TILE_I * tj, I64),))
            rows(i0, i1, j0, j1, lambda i, j, x: lw.emit(K.Store(
                buf.data, S.b("add", S.b("mul", S.b("sub", i, i0), nj), j), x)))
            stream_tile(lw, out, buf, nj, i0, i1)
    count = tile_count(lw, n, nj, TILE_I, tj)
    space = lw.let("space", S.b("mul", n, nj))
    with lw.block() as tiles:
        lw.par_for("t", count, tile, space=space)
    if tj == TILE_J_FLAT and result_unread(lw, stm) and elements_memory_bound(tiles[0]):
        with lw.block() as streamed:
            lw.par_for("t", count, streamed_tile, space=space)
        big = S.land(S.b("ge", space, S.const(-(-STREAM_MIN_BYTES // out.elem.bytes), I64)),
                     S.b("le", nj, S.const(tj, I64)))
        tiles = [K.Block((K.If(big, streamed[0], tiles[0]),))]
    # With rows of width 0 there are no tiles, but Python mode still runs the
    # outer function's statements for every row (the check that zipped rows
    # have one length, say): when they can fail, such a nest runs them alone.
    def empty_row(i):
        with open_row(i):
            pass
    with lw.block() as empty:
        lw.par_for("i", n, empty_row)
    if K.block_can_fail(empty[0]):
        lw.emit(K.If(S.b("eq", nj, ZERO), empty[0], tiles[0]))
    else:
        for s in tiles[0].stms:
            lw.emit(s)
    return [out]


def row_split(lw: Lowerer, e: ir.Map, env, n):
    """(A, B) when the width n is A * B and the map's function divides or
    takes the remainder of its first (index) parameter by B."""
    if lw.in_par or not lw.options.parallel or not isinstance(n, K.KVar):
        return None
    d = lw.facts.defs.get(n.name)
    if isinstance(d, K.Sel):                       # iota's max(n, 0)
        kind = lw.facts._clamp_kind(d)
        if kind == "max":
            d = next((lw.facts.defs.get(s.name) for s in (d.x, d.y)
                      if isinstance(s, K.KVar) and s.name in lw.facts.defs), None)
    if not (isinstance(d, K.Bin) and d.op == "mul"):
        return None
    if not e.lam.params:
        return None
    p = e.lam.params[0].name
    for s in e.lam.body.stms:
        x = s.exp
        if (isinstance(x, ir.BinOp) and x.op in ("floordiv", "mod")
                and isinstance(x.x, ir.Var) and x.x.name == p and isinstance(x.y, ir.Var)):
            y = env.get(x.y.name)
            for a, b in ((d.x, d.y), (d.y, d.x)):
                if isinstance(y, K.KVar) and isinstance(b, K.KVar) and y.name == b.name:
                    return a, b
    return None


def store_row(lw: Lowerer, out: Arr, r: Arr, owned: bool, shape: tuple, i: K.Expr,
              size: K.Expr, loc) -> None:
    """Row i of out (`size` elements) = r, which must have `shape` (else a
    ShapeError: the map's result is irregular, as in Python mode); r is
    freed when the caller owns it."""
    same = None
    for x, y in zip(r.shape, shape):
        c = S.b("eq", x, y)
        same = c if same is None else S.land(same, c)
    lw.check(same, "ShapeError", "map produced rows of different shapes (irregular array)", loc)
    lw.emit(K.CopyMem(K.PtrAdd(out.data, S.b("mul", i, size)), r.data, size))
    if owned:
        lw.emit(K.Free(r.base))


def _map_of_known_rows(lw: Lowerer, lam: ir.Lambda, n, row, stm, empty, rows):
    """A map of arrays whose rows' shape is known before any row runs (its
    row_dims): the result is allocated first and every row, the first too,
    runs in the parallel loop, checking its shape."""
    nonempty = lw.let("ne", S.b("gt", n, ZERO))
    shapes = [tuple(lw.let("rn", K.Sel(nonempty, d, ed)) for d, ed in zip(rd, ed_))
              for rd, ed_ in zip(rows, empty)]
    outs = [lw.alloc("map", t if isinstance(t, ScalarType) else t.elem, (n,) + sh)
            for t, sh in zip(lam.ret, shapes)]

    _rows_in_versions(lw, lam, n, lambda i: _store_rows(lw, lam, outs, row(i), shapes, i,
                                                        stm.loc))
    return outs


def _store_rows(lw: Lowerer, lam: ir.Lambda, outs, res, shapes, i, loc) -> None:
    """Row i of every result: a scalar stored, an array checked and copied."""
    for o, (r, owned), sh, t in zip(outs, res, shapes, lam.ret):
        if isinstance(t, ScalarType):
            lw.emit(K.Store(o.data, i, r))
            continue
        store_row(lw, o, r, owned, sh, i, lw.row_size(o), loc)


def _rows_in_versions(lw: Lowerer, lam: ir.Lambda, count, body) -> None:
    """The rows `body(k)` for k < count, in two versions chosen at run time
    when the function has nested parallel work of its own (incremental
    flattening's guard, Henriksen et al. PPoPP 2019): when the rows would
    fill at most half of the threads, one after another, each with its own
    SOACs parallel (a tabulate of two frames had run its second frame on one
    thread); else in parallel, each sequential inside. A row that is one
    flat loop (srad's pixels) gets one version: the second copy had cost the
    index-set splitting budget (kir_passes/split.py) the loops that run."""
    if lw.in_par or not lw.options.parallel or not _has_nested_loops(lam.body):
        lw.par_for("k", count, body)
        return
    many = lw.let("many", S.b("gt", S.b("mul", count, S.const(2, I64)), K.NumThreads()))
    with lw.block() as par_rows:
        lw.par_for("k", count, body)
    with lw.block() as host_rows:
        lw.for_range("k", ZERO, count, body)
    # the parallel rows first: passes with a size budget (kir_passes/split.py)
    # spend it on the version expected to run
    lw.emit(K.If(many, par_rows[0], host_rows[0]))


def _map_of_arrays(lw: Lowerer, lam: ir.Lambda, n, row, stm, empty):
    # row shapes: the map's empty_dims when it is empty (Python mode's stand-in)
    shapes = [tuple(lw.var("rn", I64) for _ in range(t.rank)) if not isinstance(t, ScalarType)
              else () for t in lam.ret]
    for sh, ed in zip(shapes, empty):
        for v, d in zip(sh, ed):
            lw.emit(K.Set(v, d))
    nonempty = lw.let("ne", S.b("gt", n, ZERO))
    rest = lw.let("m", K.Sel(nonempty, S.b("sub", n, ONE), ZERO))
    first, peel = _peel_first_row(lw, lam, row, shapes)
    if not lw.in_par and lw.options.parallel and _has_nested_loops(lam.body):
        # The first row in the versions of the others (_rows_in_versions):
        # with its SOACs parallel when the rows are few, else sequential (its
        # inner parallel loops, tiny and many, had cost more in forks and
        # joins on 16 threads than the row itself)
        many = lw.let("many1", S.b("gt", S.b("mul", rest, S.const(2, I64)), K.NumThreads()))
        with lw.in_parallel():
            seq = _peel_first_row(lw, lam, row, shapes, first)
        if seq is not None:
            peel = K.Block((K.If(many, seq[1], peel),))
    lw.emit(K.If(nonempty, peel))
    outs = []
    for t, sh in zip(lam.ret, shapes):
        elem = t if isinstance(t, ScalarType) else t.elem
        outs.append(lw.alloc("map", elem, (n,) + sh))
    with lw.block() as b1:
        for o, (data, base), t in zip(outs, first, lam.ret):
            if isinstance(t, ScalarType):
                lw.emit(K.Store(o.data, ZERO, data))
                continue
            lw.emit(K.CopyMem(o.data, data, lw.row_size(o)))
            if base is not None:
                lw.emit(K.Free(base))
    lw.emit(K.If(nonempty, b1[0]))

    def body(k):
        i = lw.let("i", S.b("add", k, ONE))
        _store_rows(lw, lam, outs, row(i), shapes, i, stm.loc)
    _rows_in_versions(lw, lam, rest, body)
    return outs


def _peel_first_row(lw: Lowerer, lam: ir.Lambda, row, shapes, into=None):
    """(per result (value or data, base to free or None), the block that
    computes row 0 into them and its shape into `shapes`); `into` gives the
    variables of another lowering of the same row to fill instead, and then
    None is returned when this lowering owns different results."""
    first = []
    nonempty_row = []
    with lw.block() as b0:
        res0 = row(ZERO)
        for k, ((r, owned), sh, t) in enumerate(zip(res0, shapes, lam.ret)):
            if isinstance(t, ScalarType):
                keep = into[k][0] if into else lw.var("r0", t)
                lw.emit(K.Set(keep, r))
                first.append((keep, None))
                continue
            if into is not None and owned != (into[k][1] is not None):
                nonempty_row = None
                break
            for v, d in zip(sh, r.shape):
                lw.emit(K.Set(v, d))
            data = into[k][0] if into else lw.var("r0d", K.type_of(r.data))
            lw.emit(K.Set(data, r.data))
            base = None
            if owned:
                base = into[k][1] if into else lw.var("r0b", K.type_of(r.base))
                lw.emit(K.Set(base, r.base))
            first.append((data, base))
    if nonempty_row is None:
        return None
    return first, b0[0]
