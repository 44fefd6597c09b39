"""Lowering of the core IR's array expressions (indexing, slicing, updates,
literals, iota/replicate, copy, concat, rotate, transpose, reshape).

Arrays are contiguous and row-major (see lower.py); what stays contiguous
is a view, the rest is copied with one loop nest per result.
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import ArrayType, I64, ScalarType

from . import kir as K
from . import scalar as S
from .kir_traverse import has_loop
from .lower_base import (Arr, Delayed, DelayedGroup, Lowerer, RuleTable, never_holds,
                         shape_size)
from .usage import free_vars

ZERO = S.const(0, I64)
ONE = S.const(1, I64)


def _i64(lw: Lowerer, v: K.Expr) -> K.Expr:
    return lw.let("ix", S.convert(I64, v))


def norm_index(lw: Lowerer, i: K.Expr, n: K.Expr, wrap: bool, loc, dim: int) -> K.Expr:
    """Python's index rules: negative counts from the end (when `wrap`);
    IndexError when out of range (dropped with unsafe=True)."""
    i = _i64(lw, i)
    nonneg = lw.facts.non_negative(i)
    j = lw.let("j", K.Sel(S.b("lt", i, ZERO), S.b("add", i, n), i)) if wrap and not nonneg else i
    if nonneg and lw.facts.below(i, n):
        return j                         # proved in range (codegen/bounds.py)
    v = lw.version
    if v is not None and not lw.options.unsafe:
        if v["mode"] == "collect":
            cond = _invariant_in_range(lw, i, n)
            if cond is not None:
                v["conds"].append(cond)
        else:
            # the same checks come in the same order: skip the ones whose
            # condition the versioned loop tests up front
            cond = _invariant_in_range(lw, i, n)
            if cond is not None and v["k"] < len(v["conds"]):
                v["k"] += 1
                return i                 # 0 <= i < n holds: no wrap either
    if not lw.options.unsafe:
        ok = S.land(S.b("ge", j, ZERO), S.b("lt", j, n))
        where = f" in dimension {dim}" if dim else ""
        lw.check(ok, "IndexError", "index {} out of range for length {}" + where, loc,
                 (i, n))
    return j


def versioned_for(lw: Lowerer, i: K.KVar, lo: K.Expr, hi: K.Expr, make_body) -> None:
    """Emits `for i in lo..hi: make_body()`. Inside a parallel loop, an
    innermost loop whose index checks have loop-invariant bounds is
    versioned as par_for versions a ParFor: the bounds are tested once
    before the loop, which runs a copy without those checks when they hold
    and the checked loop otherwise (the checked loop raises the same error
    at the same iteration). A check is an early exit, and LLVM neither
    vectorizes a loop with several exits nor forwards a value stored in one
    iteration to the next (a tridiagonal solver's recurrence went through
    memory)."""
    if not lw.in_par or lw.options.unsafe or not lw.options.versions:
        with lw.loop_facts(i, lo, hi):
            blk = make_body()
        lw.emit(K.For(i, lo, hi, blk))
        return

    def lower(mode: str, conds: list):
        with lw.versioning(mode, conds, (i, lo, hi)) as version, lw.loop_facts(i, lo, hi):
            blk = make_body()
        return blk, version["conds"]
    checked, conds = lower("collect", [])
    assigned = set().union(*(K.declared_vars(s) for s in checked.stms)) if checked.stms else set()
    if (not conds or has_loop(checked) or any(never_holds(c) for c in conds)
            or any(K.expr_vars(c) & assigned for c in conds)):
        lw.emit(K.For(i, lo, hi, checked))
        return
    fast, _ = lower("assume", conds)
    ok = conds[0]
    for c in conds[1:]:
        ok = S.land(ok, c)
    ok = lw.let_shared("inb", ok)
    lw.emit(K.If(ok, K.Block((K.For(i, lo, hi, fast),)), K.Block((K.For(i, lo, hi, checked),))))


def _invariant_in_range(lw: Lowerer, i: K.Expr, n: K.Expr):
    """A condition, over values fixed before the current parallel loop, that
    implies 0 <= i < n at every iteration; None if there is none."""
    iv = lw.facts.interval(i)
    local = set(lw.created[lw.version["start"]:])
    if iv is None:
        if isinstance(n, K.KVar) and n.name in local:
            return None
        return _affine_in_range(lw, i, n, local)
    if isinstance(n, K.KVar) and n.name in local:
        return None
    try:
        lo, hi = _bound_expr(iv[0], local), _bound_expr(iv[1], local)
    except LookupError:
        return _affine_in_range(lw, i, n, local)
    return S.land(S.b("ge", lo, ZERO), S.b("lt", hi, n))


# (The walks below are module functions, not recursive closures: each such
# closure is a reference cycle that keeps what it sees for Python's cyclic
# collector.)

def _bound_expr(t, local: set) -> K.Expr:
    """A bounds.py bound as an expression; LookupError where it reads a
    variable of the current loop (`local`)."""
    from .bounds import Leaf, Min
    if isinstance(t, Leaf):
        if t.base is None:
            return S.const(t.off, I64)
        if t.base in local:
            raise LookupError
        base = K.KVar(t.base, I64)
        return base if t.off == 0 else S.b("add", base, S.const(t.off, I64))
    a, b = _bound_expr(t.a, local), _bound_expr(t.b, local)
    return (S.minimum if isinstance(t, Min) else S.maximum)(a, b)


def _affine_in_range(lw: Lowerer, i: K.Expr, n: K.Expr, local: set):
    """The condition for an index that is an affine function of the
    versioned loop's counter (a loop counting down, say): such an index is
    monotone, so it is in range at every iteration when it is at the first
    and the last (or when the loop runs no iteration)."""
    loop = lw.version.get("loop")
    if loop is None:
        return None
    var, lo, hi = loop
    try:
        x = _expand(i, var.name, local, lw.facts.defs, 0)
    except LookupError:
        return None
    if var.name not in K.expr_vars(x) or not _affine(x, var.name):
        return None
    last = S.b("sub", hi, ONE)
    ok = None
    for end in (_at(x, var.name, lo), _at(x, var.name, last)):
        c = S.land(S.b("ge", end, ZERO), S.b("lt", end, n))
        ok = c if ok is None else S.land(ok, c)
    return S.lor(S.b("le", hi, lo), ok)


def _expand(e: K.Expr, var: str, local: set, defs: dict, depth: int) -> K.Expr:
    """`e` with the current loop's variables other than `var` replaced by
    their definitions; LookupError where that is not a sum of products."""
    if depth > 30:
        raise LookupError
    if isinstance(e, K.KVar):
        if e.name == var:
            return e
        if e.name in local:
            d = defs.get(e.name)
            if d is None:
                raise LookupError
            return _expand(d, var, local, defs, depth + 1)
        return e
    if isinstance(e, K.KConst):
        return e
    if isinstance(e, K.Bin) and e.op in ("add", "sub", "mul"):
        return K.Bin(e.op, _expand(e.x, var, local, defs, depth + 1),
                     _expand(e.y, var, local, defs, depth + 1))
    raise LookupError


def _affine(e: K.Expr, var: str) -> bool:
    if isinstance(e, K.Bin) and e.op in ("add", "sub"):
        return _affine(e.x, var) and _affine(e.y, var)
    if isinstance(e, K.Bin) and e.op == "mul":
        return ((_affine(e.x, var) and var not in K.expr_vars(e.y))
                or (_affine(e.y, var) and var not in K.expr_vars(e.x)))
    return isinstance(e, (K.KVar, K.KConst))


def _at(e: K.Expr, var: str, value: K.Expr) -> K.Expr:
    """`e` with `value` for the variable `var`."""
    if isinstance(e, K.KVar) and e.name == var:
        return value
    if isinstance(e, K.Bin):
        return K.Bin(e.op, _at(e.x, var, value), _at(e.y, var, value))
    return e


def strides(a) -> list:
    """Row-major strides (in elements) of each dimension."""
    out = []
    for d in range(len(a.shape)):
        out.append(shape_size(a.shape[d + 1:]))
    return out


def _offset(lw: Lowerer, a: Arr, idxs: list) -> K.Expr:
    st = strides(a)
    off: K.Expr = ZERO
    for j, s in zip(idxs, st):
        term = j if isinstance(s, K.KConst) and s.value == 1 else S.b("mul", j, s)
        off = term if off is ZERO else S.b("add", off, term)
    return lw.let("off", off)


def index_value(lw: Lowerer, a, idxs: list, wrap: bool, loc):
    """a[idxs]: a scalar or a view of the sub-array."""
    if isinstance(a, Delayed):
        a = lw.materialise(a)
    js = [norm_index(lw, i, a.shape[d], wrap, loc, d) for d, i in enumerate(idxs)]
    off = _offset(lw, a, js)
    if len(js) == a.rank:
        return lw.let("x", K.Load(a.data, off))
    return Arr(a.base, lw.let("v", K.PtrAdd(a.data, off)), a.shape[len(js):], a.elem,
               a.aliases)


def _h_index(lw: Lowerer, e: ir.Index, env, stm):
    a = lw.array(e.arr, env)
    return [index_value(lw, a, [lw.scalar(i, env) for i in e.idxs], e.wrap_negative,
                        stm.loc)]


def _h_size(lw: Lowerer, e: ir.Size, env, stm):
    a = lw.array(e.arr, env)
    return [a.shape[e.dim]]


def _slice_dim(lw: Lowerer, d: ir.SliceDim, n: K.Expr, env, loc):
    """(start, length, step) of a Python slice of a dimension of length n
    (PySlice_AdjustIndices). A whole dimension (`:`) is (0, n, 1) itself:
    an array's dimensions are never negative, and the general formula,
    max(n, 0) to anyone who does not know that, kept checks that compare
    the slice's length with n (a row zipped with another) in every row."""
    if d.start is None and d.stop is None and d.step is None:
        return ZERO, n, ONE
    step = _i64(lw, lw.scalar(d.step, env)) if d.step is not None else ONE
    if not isinstance(step, K.KConst):
        lw.check(S.b("ne", step, ZERO), "ValueError", "slice step cannot be zero", loc)
    neg = lw.let("neg", S.b("lt", step, ZERO))
    m1 = S.const(-1, I64)
    lower = K.Sel(neg, m1, ZERO)
    upper = lw.let("up", K.Sel(neg, S.b("sub", n, ONE), n))

    def adjust(v, default):
        if v is None:
            return lw.let("sd", default)
        x = _i64(lw, lw.scalar(v, env))
        x = lw.let("sx", K.Sel(S.b("lt", x, ZERO), S.b("add", x, n), x))
        x = lw.let("sx", K.Sel(S.b("lt", x, lower), lower, x))
        return lw.let("sx", K.Sel(S.b("gt", x, upper), upper, x))
    start = adjust(d.start, K.Sel(neg, upper, lower))
    stop = adjust(d.stop, K.Sel(neg, lower, upper))
    # length: step > 0: (stop - start - 1) // step + 1 when start < stop
    pos_len = S.b("add", S.b("div", S.b("sub", S.b("sub", stop, start), ONE),
                             K.Sel(neg, ONE, step)), ONE)
    neg_len = S.b("add", S.b("div", S.b("sub", S.b("sub", start, stop), ONE),
                             K.Sel(neg, K.Un("neg", step), ONE)), ONE)
    length = K.Sel(neg, K.Sel(S.b("lt", stop, start), neg_len, ZERO),
                   K.Sel(S.b("lt", start, stop), pos_len, ZERO))
    return start, lw.let("len", length), step


def _h_slice(lw: Lowerer, e: ir.Slice, env, stm):
    a = lw.array(e.arr, env)
    if isinstance(a, Delayed):
        a = lw.materialise(a)
    # per dimension: ("idx", j) or ("rng", start, len, step)
    parts = []
    for d in range(a.rank):
        dim = e.dims[d] if d < len(e.dims) else ir.SliceDim(None, None, None)
        if isinstance(dim, ir.SliceDim):
            parts.append(("rng",) + _slice_dim(lw, dim, a.shape[d], env, stm.loc))
        else:
            parts.append(("idx", norm_index(lw, lw.scalar(dim, env), a.shape[d], True,
                                            stm.loc, d)))
    st = strides(a)
    # A view when: leading indexed dims, then at most one range of step 1,
    # then whole dims only (contiguous memory).
    view = True
    seen_range = False
    for d, p in enumerate(parts):
        dim = e.dims[d] if d < len(e.dims) else None
        whole = dim is None or (isinstance(dim, ir.SliceDim) and dim.start is None
                                and dim.stop is None and dim.step is None)
        if p[0] == "idx":
            if seen_range:
                view = False
        else:
            if seen_range and not whole:
                view = False
            if not whole and not (isinstance(p[3], K.KConst) and p[3].value == 1):
                view = False
            seen_range = seen_range or True
    base_off: K.Expr = ZERO
    for p, s in zip(parts, st):
        first = p[1]
        base_off = S.b("add", base_off, S.b("mul", first, s))
    base_off = lw.let("off", base_off)
    out_shape = tuple(p[2] for p in parts if p[0] == "rng")
    if view:
        return [Arr(a.base, lw.let("v", K.PtrAdd(a.data, base_off)), out_shape, a.elem,
                    a.aliases)]
    out = lw.alloc("slice", a.elem, out_shape)
    rng = [(p[3], s) for p, s in zip(parts, st) if p[0] == "rng"]

    def nest(level: int, src_off: K.Expr, dst_off: K.Expr):
        if level == len(rng):
            lw.emit(K.Store(out.data, dst_off, K.Load(a.data, src_off)))
            return
        step, s = rng[level]
        dst_stride = shape_size(out_shape[level + 1:])

        def body(i):
            nest(level + 1,
                 lw.let("so", S.b("add", src_off, S.b("mul", S.b("mul", i, step), s))),
                 lw.let("do", S.b("add", dst_off, S.b("mul", i, dst_stride))))
        lw.for_range("k", ZERO, out_shape[level], body)
    try:
        nest(0, base_off, ZERO)
    finally:
        nest = None                     # a recursive closure is a reference cycle
    return [out]


def _copy_into(lw: Lowerer, dst: Arr, dst_off: K.Expr, src, loc, what: str):
    """dst[dst_off : dst_off + count(src)] = src, after checking src's shape
    equals dst's row shape."""
    row_shape = dst.shape[1:]
    if isinstance(src, Delayed):
        src = lw.materialise(src)
    if len(src.shape) != len(row_shape):
        raise AssertionError("rank mismatch in lowering")
    same = None
    for x, y in zip(src.shape, row_shape):
        c = S.b("eq", x, y)
        same = c if same is None else S.land(same, c)
    if same is not None:
        lw.check(same, "ShapeError", what, loc)
    lw.emit(K.CopyMem(K.PtrAdd(dst.data, dst_off), src.data, shape_size(row_shape)))


def _h_update(lw: Lowerer, e: ir.Update, env, stm):
    a = lw.array(e.arr, env)
    if isinstance(a, Delayed):
        a = lw.materialise(a)
    value = lw.atom(e.value, env)
    in_place = (lw.owned_here(a.base) is not None and a.aliases == frozenset({a.base.name})
                and not any(isinstance(env.get(n), Arr) and env[n].base == a.base
                            and n != e.arr.name for n in lw.live))
    if not in_place:
        a = lw.copy_arr(a, "upd")
    js = [norm_index(lw, lw.scalar(i, env), a.shape[d], e.wrap_negative, stm.loc, d)
          for d, i in enumerate(e.idxs)]
    off = _offset(lw, a, js)
    if len(js) == a.rank:
        lw.emit(K.Store(a.data, off, value))
    else:
        sub = Arr(a.base, a.data, a.shape[len(js) - 1:], a.elem, a.aliases)
        _copy_into(lw, sub, off, value, stm.loc,
                   "cannot update a row with a value of another shape")
    return [a]


def _h_arraylit(lw: Lowerer, e: ir.ArrayLit, env, stm):
    vals = [lw.atom(x, env) for x in e.elems]
    t = e.type
    n = S.const(len(vals), I64)
    if t.rank == 1:
        out = lw.alloc("lit", t.elem, (n,))
        for k, v in enumerate(vals):
            lw.emit(K.Store(out.data, S.const(k, I64), v))
        return [out]
    if not vals:
        return [lw.alloc("lit", t.elem, (ZERO,) * t.rank)]
    first = vals[0] if not isinstance(vals[0], Delayed) else lw.materialise(vals[0])
    vals[0] = first
    out = lw.alloc("lit", t.elem, (n,) + tuple(first.shape))
    rs = lw.row_size(out)
    for k, v in enumerate(vals):
        _copy_into(lw, out, lw.let("o", S.b("mul", S.const(k, I64), rs)), v, stm.loc,
                   "array literal rows differ in shape (irregular array)")
    return [out]


def _fill(lw: Lowerer, out: Arr, value_at) -> None:
    def body(i):
        lw.emit(K.Store(out.data, i, value_at(i)))
    lw.par_for("i", out.shape[0], body)


def _clamp0(lw: Lowerer, n: K.Expr) -> K.Expr:
    n = _i64(lw, n)
    return lw.let("n", K.Sel(S.b("lt", n, ZERO), ZERO, n))


def delay_consumer_ok(e, name: str) -> bool:
    """Can `e` read its input `name` element by element (so a producer of
    `name` may be fused into it)? Every family's rule for these SOACs reads
    its inputs with Lowerer.element."""
    if isinstance(e, (ir.Map, ir.Reduce, ir.Scan, ir.Filter)):
        return (any(a.name == name for a in e.arrs)
                and name not in free_vars(e.lam)
                and not any(isinstance(a, ir.Var) and a.name == name
                            for a in getattr(e, "neutral", ())))
    if isinstance(e, (ir.ReduceByIndex, ir.Scatter)):
        inputs = [e.idxs, *e.vals]
        lam = getattr(e, "lam", None)
        return (any(a.name == name for a in inputs)
                and not any(d.name == name for d in e.dests)
                and (lam is None or name not in free_vars(lam)))
    return False


def can_delay(lw: Lowerer, names: list, shared: bool = False) -> bool:
    """True when each name is used only as a SOAC input (or by Size) in later
    statements of this body, by exactly one SOAC (any number when `shared`:
    a producer that costs nothing to recompute, as iota), with no Update
    before it."""
    for name in names:
        total = lw.body_counts.get(name, 0)
        seen = 0
        consumers = 0
        for s in lw.rest:
            if isinstance(s.exp, ir.Update):
                if consumers == 0:
                    return False
            if name not in free_vars(s.exp):
                continue
            seen += 1
            if isinstance(s.exp, ir.Size) and s.exp.arr.name == name:
                continue
            if delay_consumer_ok(s.exp, name):
                consumers += 1
                continue
            return False
        if seen != total or (consumers != 1 and not shared):
            return False
    return True


def _h_iota(lw: Lowerer, e: ir.Iota, env, stm):
    n = _clamp0(lw, lw.scalar(e.n, env))
    # every SOAC that reads it computes it (element i is i): no memory, and
    # what it indexes is known to be in range (LocVolCalib's stencils)
    if can_delay(lw, [stm.pat[0].name], shared=True):
        return [Delayed(DelayedGroup(n, lambda i: [i]), 0, I64)]
    out = lw.alloc("iota", I64, (n,))
    _fill(lw, out, lambda i: i)
    return [out]


def _h_replicate(lw: Lowerer, e: ir.Replicate, env, stm):
    n = _clamp0(lw, lw.scalar(e.n, env))
    v = lw.atom(e.value, env)
    if not isinstance(v, (Arr, Delayed)) and can_delay(lw, [stm.pat[0].name]):
        # read where consumed, as iota: a histogram's replicate(n, 1) of
        # weights costs no memory traffic
        return [Delayed(DelayedGroup(n, lambda i: [v]), 0, K.type_of(v))]
    if not isinstance(v, (Arr, Delayed)):
        out = lw.alloc("rep", K.type_of(v), (n,))
        _fill(lw, out, lambda i: v)
        return [out]
    if isinstance(v, Delayed):
        v = lw.materialise(v)
    out = lw.alloc("rep", v.elem, (n,) + tuple(v.shape))
    rs = lw.row_size(out)

    def body(i):
        lw.emit(K.CopyMem(K.PtrAdd(out.data, S.b("mul", i, rs)), v.data, rs))
    lw.par_for("i", n, body)
    return [out]


def _h_copy(lw: Lowerer, e: ir.Copy, env, stm):
    return [lw.copy_arr(lw.array(e.arr, env))]


def _h_concat(lw: Lowerer, e: ir.Concat, env, stm):
    arrs = []
    for a in e.arrs:
        v = lw.array(a, env)
        arrs.append(lw.materialise(v) if isinstance(v, Delayed) else v)
    rank = arrs[0].rank
    total: K.Expr = ZERO
    for a in arrs:
        total = S.b("add", total, a.shape[0])
    total = lw.let("n", total)
    # inner shape: the first non-empty array's (or the first array's)
    inner = []
    for d in range(1, rank):
        pick = arrs[-1].shape[d]
        for a in reversed(arrs):
            pick = K.Sel(S.b("gt", a.shape[0], ZERO), a.shape[d], pick)
        inner.append(lw.let("in", K.Sel(S.b("eq", total, ZERO), arrs[0].shape[d], pick)))
    for name, a in zip(e.arrs, arrs):
        for d in range(1, rank):
            ok = S.lor(S.b("eq", a.shape[0], ZERO), S.b("eq", a.shape[d], inner[d - 1]))
            lw.check(ok, "ShapeError", f"concat: inner shapes differ (dimension {d} "
                     f"of the rows: {{}} and {{}})", stm.loc, (inner[d - 1], a.shape[d]))
    out = lw.alloc("cat", arrs[0].elem, (total, *inner))
    rs = lw.row_size(out)
    off: K.Expr = ZERO
    for a in arrs:
        cnt = lw.let("c", S.b("mul", a.shape[0], rs))
        lw.emit(K.CopyMem(K.PtrAdd(out.data, off), a.data, cnt))
        off = lw.let("o", S.b("add", off, cnt))
    return [out]


def _h_rotate(lw: Lowerer, e: ir.Rotate, env, stm):
    a = lw.array(e.arr, env)
    if isinstance(a, Delayed):
        a = lw.materialise(a)
    n = a.shape[0]
    out = lw.alloc("rot", a.elem, tuple(a.shape))
    rs = lw.row_size(a)
    r = _i64(lw, lw.scalar(e.r, env))
    nz = K.Sel(S.b("eq", n, ZERO), ONE, n)
    rr = lw.let("r", K.Sel(S.b("eq", n, ZERO), ZERO, S.int_mod(r, nz)))
    tail = lw.let("t", S.b("mul", S.b("sub", n, rr), rs))
    head = lw.let("h", S.b("mul", rr, rs))
    lw.emit(K.CopyMem(out.data, K.PtrAdd(a.data, head), tail))
    lw.emit(K.CopyMem(K.PtrAdd(out.data, tail), a.data, head))
    return [out]


TRANSPOSE_TILE = 32

#: the work of one transposed scalar element in par_work's units (a unit
#: is ELEMENTS_PER_UNIT = 2 iterations of a loop-free parallel map; the
#: tiles' space counts units, lower_base.parallel_if): a strided load and a
#: store that do not vectorise cost about four map elements. Measured
#: (session 32): sgemm small's 96 x 160 transpose took 13.3 us on one
#: thread of the H100 machine's 16-core Intel host, 0.87 ns an element,
#: against 0.23 ns an element for a map of 128 x 160; on the 2-core Zen 5
#: 0.29 against 0.08 ns. Counted as one unit, it stayed on one thread below
#: 16384 elements and was half of sgemm small's time on that host.
TRANSPOSE_ELEMENT_WORK = 2


def tile_bounds(lw: Lowerer, t: K.Expr, n: K.Expr, m: K.Expr, ti: int, tj: int):
    """[i0, i1) x [j0, j1): tile t of an n x m space cut in ti x tj tiles,
    numbered row by row (the tiles of a 2-D parallel loop)."""
    ntj = lw.let("ntj", S.b("div", S.b("add", m, S.const(tj - 1, I64)), S.const(tj, I64)))
    q = lw.let("q", K.Sel(S.b("eq", ntj, ZERO), ONE, ntj))
    i0 = lw.let("i0", S.b("mul", S.b("div", t, q), S.const(ti, I64)))
    j0 = lw.let("j0", S.b("mul", S.b("rem", t, q), S.const(tj, I64)))
    i1 = lw.let("i1", S.minimum(S.b("add", i0, S.const(ti, I64)), n))
    j1 = lw.let("j1", S.minimum(S.b("add", j0, S.const(tj, I64)), m))
    return i0, i1, j0, j1


def tile_count(lw: Lowerer, n: K.Expr, m: K.Expr, ti: int, tj: int) -> K.Expr:
    nti = S.b("div", S.b("add", n, S.const(ti - 1, I64)), S.const(ti, I64))
    ntj = S.b("div", S.b("add", m, S.const(tj - 1, I64)), S.const(tj, I64))
    return lw.let("nt", S.b("mul", nti, ntj))


def _h_transpose(lw: Lowerer, e: ir.Transpose, env, stm):
    """Swaps dimensions 0 and 1 into a fresh array, in TRANSPOSE_TILE square
    tiles (a cache-blocked transpose: both sides of a tile stay in cache), the
    tiles in parallel at host level."""
    a = lw.array(e.arr, env)
    if isinstance(a, Delayed):
        a = lw.materialise(a)
    n0, n1 = a.shape[0], a.shape[1]
    rest = a.shape[2:]
    out = lw.alloc("tr", a.elem, (n1, n0) + tuple(rest))
    inner = lw.let("rs", shape_size(rest))
    def one_tile(t):
        i0, i1, j0, j1 = tile_bounds(lw, t, n1, n0, TRANSPOSE_TILE, TRANSPOSE_TILE)

        def row(i):      # row i of the result = column i of a
            def col(j):
                src = S.b("mul", S.b("add", S.b("mul", j, n1), i), inner)
                dst = S.b("mul", S.b("add", S.b("mul", i, n0), j), inner)
                if rest:
                    lw.emit(K.CopyMem(K.PtrAdd(out.data, dst), K.PtrAdd(a.data, src), inner))
                else:
                    lw.emit(K.Store(out.data, dst, K.Load(a.data, src)))
            lw.for_range("j", j0, j1, col)
        lw.for_range("i", i0, i1, row)
    # rows of a higher-rank array move by CopyMem (contiguous); scalars one
    # strided load at a time (TRANSPOSE_ELEMENT_WORK)
    weight = S.const(1 if rest else TRANSPOSE_ELEMENT_WORK, I64)
    lw.par_for("t", tile_count(lw, n1, n0, TRANSPOSE_TILE, TRANSPOSE_TILE), one_tile,
               space=lw.let("space", S.b("mul", S.b("mul", S.b("mul", n0, n1), inner),
                                         weight)))
    return [out]


def _h_reshape(lw: Lowerer, e: ir.Reshape, env, stm):
    a = lw.array(e.arr, env)
    if isinstance(a, Delayed):
        a = lw.materialise(a)
    shape = tuple(_i64(lw, lw.scalar(x, env)) for x in e.shape)
    ok = S.b("eq", shape_size(shape), shape_size(a.shape))
    for d in shape:
        ok = S.land(ok, S.b("ge", d, ZERO))
    lw.check(ok, "ShapeError", "cannot reshape an array into a shape of another size",
             stm.loc)
    return [Arr(a.base, a.data, shape, a.elem, a.aliases)]


HANDLERS = {
    ir.Index: _h_index, ir.Size: _h_size, ir.Slice: _h_slice, ir.Update: _h_update,
    ir.ArrayLit: _h_arraylit, ir.Iota: _h_iota, ir.Replicate: _h_replicate,
    ir.Copy: _h_copy, ir.Concat: _h_concat, ir.Rotate: _h_rotate,
    ir.Transpose: _h_transpose, ir.Reshape: _h_reshape,
}


def register(rules: RuleTable) -> None:
    rules.register_all("common", HANDLERS)
