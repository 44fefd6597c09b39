"""Second-order prelude functions lowered to core SOACs and loops.

Element types come from the arrays and the lambda's result value, never from
data, so empty inputs get the right result type. A weak neutral element takes
the array's element type (as Python mode's `coerce_weak` does).
"""
from __future__ import annotations

from ..core import ir
from ..core.types import BOOL, I64, SArray, SScalar, ScalarType, flatten_stype
from .coerce import coerce, harden
from .prelude_common import PCall, bool_lambda, describe, elem_rebuild, fresh_array
from .values import (ScalarV, flatten_value, or_py, py_flags, rebuild_value, type_name, value_stype,
                     widen_py)


def lower_map(c: PCall):
    c.count(2, None, usage="ps.map(f, xs, ...)")
    arrs = [c.array(i, "arrays after the function") for i in range(1, len(c.args))]
    f = c.fun(0, len(arrs))
    n = c.same_length(arrs, "map")
    # Python mode calls f on the elements as they are: Python numbers from a list of them
    lam, rst = c.lam(f, [a.stype.elem for a in arrs], 0, param_py=[a.part_py() for a in arrs])
    parts = c.bind(ir.Map(n, lam, tuple(p for a in arrs for p in a.parts)), "map")
    return fresh_array(SArray(rst), parts)


def _neutral(c: PCall, i: int, st):
    return coerce(c.value(i), st, c.src, c.arg_node(i), strict=False,
                  what=f"the neutral element of {c.name}")


def _operator_args(c: PCall, usage: str):
    """reduce/scan(op, ne, xs): the element type, neutral, width, operator
    lambda and the accumulator's py flags (Python mode converts the neutral
    element to the element type; the accumulator then holds op's results)."""
    c.count(3, usage=usage)
    f = c.fun(0, 2)
    xs = c.array(2)
    st = xs.stype.elem
    ne = _neutral(c, 1, st)
    lam, acc_py = c.operator_lam(f, st, 0, [False] * len(xs.parts), xs.part_py(), ret=st)
    return xs, st, tuple(flatten_value(ne)), c.size(xs), lam, acc_py


def lower_reduce(c: PCall, commutative: bool):
    xs, st, ne, n, lam, acc_py = _operator_args(c, f"{c.name}(op, ne, xs)")
    res = c.bind(ir.Reduce(n, lam, ne, xs.parts, commutative), "red")
    return rebuild_value(st, res, py=acc_py)


def lower_scan(c: PCall):
    xs, st, ne, n, lam, _ = _operator_args(c, "ps.scan(op, ne, xs)")
    parts = c.bind(ir.Scan(n, lam, ne, xs.parts), "scan")
    return fresh_array(SArray(st), parts)


def lower_filter(c: PCall):
    c.count(2, usage="ps.filter(p, xs)")
    f = c.fun(0, 1)
    xs = c.array(1)
    n = c.size(xs)
    lam = c.pred_lam(f, [xs.stype.elem], 0)
    parts = c.bind(ir.Filter(n, lam, xs.parts), "kept")
    return fresh_array(xs.stype, parts)


def _flag_filter(c: PCall, n, flags: ir.Var, xs, negate: bool):
    """Filter xs by a precomputed bool array (negated for the `no` half)."""
    sub = c.b.sub()
    fv = sub.var(BOOL, "flag")
    params = [fv] + [sub.var(p.type.row(), "x") for p in xs.parts]
    res = sub.bind1(ir.UnOp("not", fv), "flag", c.loc) if negate else fv
    lam = ir.Lambda(tuple(params), sub.body([res]), (BOOL,))
    out = c.bind(ir.Filter(n, lam, (flags,) + tuple(xs.parts)), "part")
    return fresh_array(xs.stype, out[1:])


def lower_partition(c: PCall):
    """One Map evaluates p once per element; two Filters keep the order."""
    from .values import TupleV
    c.count(2, usage="ps.partition(p, xs)")
    f = c.fun(0, 1)
    xs = c.array(1)
    n = c.size(xs)
    lam = c.pred_lam(f, [xs.stype.elem], 0)
    (flags,) = c.bind(ir.Map(n, lam, xs.parts), "flags")
    return TupleV((_flag_filter(c, n, flags, xs, False), _flag_filter(c, n, flags, xs, True)))


def _indices(c: PCall, i: int) -> ir.Var:
    """The index array argument as i64 (converted element-wise if needed)."""
    idxs = c.array(i, f"an array of indices as argument {i + 1}")
    st = idxs.stype.elem
    if not isinstance(st, SScalar) or not st.t.is_int:
        raise c.error(i, f"the indices of {c.name} must be an array of integers, "
                         f"not {describe(idxs)}")
    if st.t is I64:
        return idxs.parts[0]
    sub = c.b.sub()
    x = sub.var(st.t, "i")
    r = sub.bind1(ir.Convert(I64, x), "i", c.loc)
    n = c.size(idxs)
    return c.bind1(ir.Map(n, ir.Lambda((x,), sub.body([r]), (I64,)), (idxs.parts[0],)), "idx")


def _values_like(c: PCall, i: int, dest, what: str):
    vals = c.array(i, f"an array of {what} as argument {i + 1}")
    if vals.stype.elem != dest.stype.elem:
        raise c.error(i, f"the {what} of {c.name} must have the destination's element type "
                         f"{type_name(dest.stype.elem)}, not {type_name(vals.stype.elem)}",
                      hint=f"convert them with ps.map({type_name(dest.stype.elem)}, ...), or build "
                           f"the destination with {type_name(vals.stype.elem)} elements "
                           f"(e.g. ps.replicate(n, {type_name(vals.stype.elem)}(0)))")
    return vals


def lower_reduce_by_index(c: PCall):
    c.count(5, usage="ps.reduce_by_index(dest, op, ne, idxs, vals)")
    dest = c.array(0, "a destination array as argument 1")
    f = c.fun(1, 2)
    st = dest.stype.elem
    ne = _neutral(c, 2, st)
    idx = _indices(c, 3)
    vals = _values_like(c, 4, dest, "values")
    idxs_v = c.args[3]
    n = c.same_length([idxs_v, vals], "reduce_by_index")
    lam, _ = c.lam(f, [st, st], 1, ret=st, strict=False,     # stored into dest: numpy converts
                   param_py=[None, vals.part_py()])
    parts = c.bind(ir.ReduceByIndex(n, dest.parts, lam, tuple(flatten_value(ne)), idx, vals.parts),
                   "hist")
    return fresh_array(dest.stype, parts)


def lower_scatter(c: PCall):
    c.count(3, usage="ps.scatter(dest, idxs, vals)")
    dest = c.array(0, "a destination array as argument 1")
    idx = _indices(c, 1)
    vals = _values_like(c, 2, dest, "values")
    n = c.same_length([c.args[1], vals], "scatter")
    parts = c.bind(ir.Scatter(n, dest.parts, idx, vals.parts), "scat")
    return fresh_array(dest.stype, parts)


def lower_all_any(c: PCall, op: str):
    """Map p, then Reduce with land/lor (every element is evaluated)."""
    c.count(2, usage=f"{c.name}(p, xs)")
    f = c.fun(0, 1)
    xs = c.array(1)
    n = c.size(xs)
    lam = c.pred_lam(f, [xs.stype.elem], 0, param_py=[xs.part_py()])
    (flags,) = c.bind(ir.Map(n, lam, xs.parts), "flags")
    ne = ir.Const(op == "land", BOOL)
    (r,) = c.bind(ir.Reduce(n, bool_lambda(c.ctx, op), (ne,), (flags,), True), op)
    return ScalarV(r)


def lower_fold(c: PCall, right: bool):
    """A sequential ForLoop over xs; the accumulator's type is the initial
    value's (a weak one at its default type) and f's result is coerced to it.
    Python mode passes the initial value as it is, so the accumulator may be
    a Python number where it or f's result may be (a fixed point)."""
    c.count(3, usage=f"{c.name}(f, acc, xs)")
    f = c.fun(0, 2)
    acc0 = harden(c.value(1), c.src, c.arg_node(1))
    xs = c.array(2)
    ast, st = value_stype(acc0), xs.stype.elem
    n = c.size(xs)
    last = c.bind1(ir.BinOp("sub", n, ir.Const(1, I64)), "last") if right else None
    acc_py = py_flags(acc0)
    while True:
        sub = c.ctx.nested()
        params = [sub.b.var(t, "acc") for t in flatten_stype(ast)]
        i = sub.b.var(I64, "i")
        k = sub.b.bind1(ir.BinOp("sub", last, i), "k", c.loc) if right else i
        x_atoms = [sub.b.bind1(ir.Index(p, (k,), wrap_negative=False), "x", c.loc) for p in xs.parts]
        xv = elem_rebuild(st, x_atoms, xs)
        accv = rebuild_value(ast, params, py=acc_py)
        res = f.apply(sub, [xv, accv] if right else [accv, xv], c.node)
        res = coerce(res, ast, c.src, c.arg_node(0), strict=True,
                     what=f"the result of the function passed to {c.name} (the accumulator)")
        more = widen_py(acc_py, or_py(acc_py, py_flags(res)))
        if more == acc_py:
            break
        acc_py = more
    body = sub.b.body(flatten_value(res))
    out = c.bind(ir.Loop(tuple(params), tuple(flatten_value(acc0)), ir.ForLoop(i, n), body), "acc")
    return rebuild_value(ast, out, py=acc_py)


def _iota(c: PCall, i: int, check_negative: bool):
    """(Iota of argument i, its length as a Var)."""
    n = c.count_i64(i, "a size")
    if check_negative:
        nonneg(c, n, f"{c.name[3:]}: negative size", "ShapeError")
    io = c.bind1(ir.Iota(n), "iota")
    return io, c.bind1(ir.Size(io), "n")


def nonneg(c: PCall, n: ir.Atom, msg: str, error: str) -> None:
    """Assert n >= 0 unless n is a non-negative constant."""
    if isinstance(n, ir.Const) and n.value >= 0:
        return
    ok = c.bind1(ir.BinOp("ge", n, ir.Const(0, I64)), "ok")
    c.emit_assert(ok, msg, error)


def lower_tabulate(c: PCall):
    c.count(2, usage="ps.tabulate(n, f)")
    f = c.fun(1, 1)
    io, w = _iota(c, 0, True)
    lam, rst = c.lam(f, [SScalar(I64)], 1)
    parts = c.bind(ir.Map(w, lam, (io,)), "tab")
    return fresh_array(SArray(rst), parts)


def lower_tabulate_2d(c: PCall):
    """f(i, j) over an n x m grid; negative sizes raise ShapeError as in Python
    mode. One flat Map over iota(n * m) with i = k // m, j = k % m, reshaped
    to [n, m, ...]: the result is n x m also when n == 0, the kernel is flat,
    and an empty grid's rows are f(0, 0)'s, as Python mode's one stand-in call
    gives (a Map of Maps would derive each row's from its own i)."""
    c.count(3, usage="ps.tabulate_2d(n, m, f)")
    f = c.fun(2, 2)
    _, wn = _iota(c, 0, True)
    _, wm = _iota(c, 1, True)
    flat = _tabulate_2d_flat(c, f, wn, wm, wm, scalars=True)
    if flat is None:
        # rows of arrays: divide by max(m, 1), so that the stand-in k = 0 is
        # (0, 0) also when m == 0 (scalars keep `// m`, which the lowering
        # turns into a loop over rows and columns)
        m1 = c.bind1(ir.BinOp("max", wm, ir.Const(1, I64)), "m1")
        flat = _tabulate_2d_flat(c, f, wn, wm, m1, scalars=False)
    return flat


def _tabulate_2d_flat(c: PCall, f, wn, wm, divisor, scalars: bool):
    """The flat form (None when `scalars` and f returns arrays)."""
    outer = c.ctx.nested()
    k = outer.b.var(I64, "k")
    i = outer.b.bind1(ir.BinOp("floordiv", k, divisor), "i", c.loc)   # m > 0 whenever k exists
    j = outer.b.bind1(ir.BinOp("mod", k, divisor), "j", c.loc)
    lam, rst = c.lam(f, [], 2, ctx=outer, pre_args=[ScalarV(i), ScalarV(j)])
    if scalars and not all(isinstance(t, ScalarType) for t in lam.ret):
        return None
    body = ir.Body(tuple(outer.b.stms) + lam.body.stms, lam.body.result)
    lam = ir.Lambda((k,), body, lam.ret)
    nm = c.bind1(ir.BinOp("mul", wn, wm), "nm")
    ks = c.bind1(ir.Iota(nm), "k")
    flat = c.bind(ir.Map(nm, lam, (ks,)), "tab")
    parts = []
    for part in flat:
        rows = tuple(c.bind1(ir.Size(part, d), "d") for d in range(1, part.type.rank))
        parts.append(c.bind1(ir.Reshape((wn, wm) + rows, part), "tab"))
    return fresh_array(SArray(SArray(rst)), parts)


def handlers() -> dict:
    P = "pyshark.prelude."
    return {
        P + "map": lower_map,
        P + "reduce": lambda c: lower_reduce(c, False),
        P + "reduce_comm": lambda c: lower_reduce(c, True),
        P + "scan": lower_scan,
        P + "filter": lower_filter,
        P + "partition": lower_partition,
        P + "reduce_by_index": lower_reduce_by_index,
        P + "scatter": lower_scatter,
        P + "all": lambda c: lower_all_any(c, "land"),
        P + "any": lambda c: lower_all_any(c, "lor"),
        P + "foldl": lambda c: lower_fold(c, False),
        P + "foldr": lambda c: lower_fold(c, True),
        P + "tabulate": lower_tabulate,
        P + "tabulate_2d": lower_tabulate_2d,
    }
