"""Array prelude functions and the array builtins (len, sum, min/max of one
array), lowered to core array expressions, one per struct-of-arrays part.

Run-time checks match Python mode (pyshark/prelude/arrays.py): negative
iota/replicate counts raise ShapeError, take/drop/split counts outside
0..len raise IndexError, head/last/tail/init of an empty array raise
IndexError, minimum/maximum/argmin/argmax of an empty array raise ShapeError.
Results that may share storage with an argument (slices, rotations,
transposes, reshapes, zip/unzip) get -|buffer| of the argument: an alias,
never owned, so the ownership check of in-place updates sees it.
"""
from __future__ import annotations

import builtins
import dataclasses

from ..core import ir
from ..core.types import I64, SArray, SRecord, SScalar, STuple, ArrayType
from .coerce import coerce, harden
from .prelude_common import PCall, describe, elem_rebuild, fresh_array, view_array
from .prelude_scalars import extreme_const
from .pynum import runtime_py
from .prelude_soacs import nonneg
from .values import ArrayV, ScalarV, TupleV, flatten_value, type_name, value_stype
from ..core.types import flatten_stype


def lower_iota(c: PCall):
    c.count(1, usage="ps.iota(n)")
    n = c.count_i64(0)
    nonneg(c, n, "iota: negative count", "ShapeError")
    return fresh_array(SArray(SScalar(I64)), [c.bind1(ir.Iota(n), "iota")])


def lower_replicate(c: PCall):
    c.count(2, usage="ps.replicate(n, x)")
    n = c.count_i64(0)
    x = harden(c.value(1), c.src, c.arg_node(1))
    nonneg(c, n, "replicate: negative count", "ShapeError")
    parts = [c.bind1(ir.Replicate(n, a), "rep") for a in flatten_value(x)]
    return fresh_array(SArray(value_stype(x)), parts)


def lower_length(c: PCall):
    """ps.length is a numpy i64; the builtin len a Python int (pynum.runtime_py)."""
    c.count(1, usage=f"{c.name}(xs)")
    py = c.qualname == "builtins.len" and runtime_py()
    v = c.args[0]
    if isinstance(v, TupleV):         # len of a tuple: a constant (a Python int)
        n = len(v.elems)
        return ScalarV(ir.Const(n, I64), py=frozenset((n,)) if c.qualname == "builtins.len" else False)
    xs = c.array(0)
    return ScalarV(c.size(xs), py=py)


def _nonempty(c: PCall, xs: ArrayV, what: str, error: str, message: str = "") -> ir.Var:
    n = c.size(xs)
    ok = c.bind1(ir.BinOp("gt", n, ir.Const(0, I64)), "nonempty")
    c.emit_assert(ok, message or f"{what} of an empty array", error)
    return n


def lower_head_last(c: PCall, last: bool):
    c.count(1, usage=f"{c.name}(xs)")
    xs = c.array(0)
    n = _nonempty(c, xs, c.name[3:], "IndexError")
    i = c.bind1(ir.BinOp("sub", n, ir.Const(1, I64)), "i") if last else ir.Const(0, I64)
    atoms = [c.bind1(ir.Index(p, (i,), wrap_negative=False), "x") for p in xs.parts]
    return elem_rebuild(xs.stype.elem, atoms, xs)       # an element of a list: as it is there


def _slice(c: PCall, xs: ArrayV, dim: ir.SliceDim) -> ArrayV:
    parts = [c.bind1(ir.Slice(p, (dim,)), "sl") for p in xs.parts]
    return view_array(xs.stype, parts, xs)


def lower_tail_init(c: PCall, init: bool):
    c.count(1, usage=f"{c.name}(xs)")
    xs = c.array(0)
    n = _nonempty(c, xs, c.name[3:], "IndexError")
    if init:
        stop = c.bind1(ir.BinOp("sub", n, ir.Const(1, I64)), "stop")
        return _slice(c, xs, ir.SliceDim(None, stop, None))
    return _slice(c, xs, ir.SliceDim(ir.Const(1, I64), None, None))


def _split_count(c: PCall):
    n = c.count_i64(0)
    xs = c.array(1)
    length = c.size(xs)
    ge = c.bind1(ir.BinOp("ge", n, ir.Const(0, I64)), "ok")
    le = c.bind1(ir.BinOp("le", n, length), "ok")
    ok = c.bind1(ir.BinOp("land", ge, le), "ok")
    c.emit_assert(ok, f"{c.name[3:]}: count outside 0..len(xs)", "IndexError")
    return n, xs


def lower_take_drop_split(c: PCall, which: str):
    c.count(2, usage=f"{c.name}(n, xs)")
    n, xs = _split_count(c)
    front = lambda: _slice(c, xs, ir.SliceDim(None, n, None))
    back = lambda: _slice(c, xs, ir.SliceDim(n, None, None))
    if which == "take":
        return front()
    if which == "drop":
        return back()
    return TupleV((front(), back()))


def lower_reverse(c: PCall):
    c.count(1, usage="ps.reverse(xs)")
    return _slice(c, c.array(0), ir.SliceDim(None, None, ir.Const(-1, I64)))


def lower_concat(c: PCall):
    c.count(1, None, usage="ps.concat(xs, ys, ...)")
    arrs = [c.array(i) for i in range(len(c.args))]
    for i, a in enumerate(arrs[1:], 1):
        if a.stype != arrs[0].stype:
            raise c.error(i, f"ps.concat joins arrays of one type: argument {i + 1} is "
                             f"{describe(a)}, argument 1 is {describe(arrs[0])}")
    parts = [c.bind1(ir.Concat(tuple(a.parts[k] for a in arrs)), "cat")
             for k in range(len(arrs[0].parts))]
    return fresh_array(arrs[0].stype, parts)


def lower_rotate(c: PCall):
    c.count(2, usage="ps.rotate(r, xs)")
    r = c.count_i64(0, "the rotation")
    xs = c.array(1)
    return view_array(xs.stype, [c.bind1(ir.Rotate(r, p), "rot") for p in xs.parts], xs)


def _rank2(c: PCall, i: int) -> ArrayV:
    xs = c.array(i)
    if not isinstance(xs.stype.elem, SArray):
        raise c.error(i, f"{c.name} needs an array of rank 2 or more, not {describe(xs)}")
    return xs


def lower_transpose(c: PCall):
    c.count(1, usage="ps.transpose(xss)")
    xs = _rank2(c, 0)
    return view_array(xs.stype, [c.bind1(ir.Transpose(p), "tr") for p in xs.parts], xs)


def _inner_dims(c: PCall, p: ir.Var, start: int) -> list[ir.Atom]:
    return [c.bind1(ir.Size(p, d), "d") for d in range(start, p.type.rank)]


def lower_flatten(c: PCall):
    c.count(1, usage="ps.flatten(xss)")
    xs = _rank2(c, 0)
    n, m = c.size(xs, 0), c.size(xs, 1)
    nm = c.bind1(ir.BinOp("mul", n, m), "nm")
    parts = [c.bind1(ir.Reshape((nm, *_inner_dims(c, p, 2)), p), "flat") for p in xs.parts]
    return view_array(xs.stype.elem, parts, xs)


def lower_unflatten(c: PCall):
    """Reshape to [n, m, ...]; the Reshape itself raises ShapeError on bad sizes."""
    c.count(3, usage="ps.unflatten(n, m, xs)")
    n, m = c.count_i64(0), c.count_i64(1)
    xs = c.array(2)
    parts = [c.bind1(ir.Reshape((n, m, *_inner_dims(c, p, 1)), p), "unflat") for p in xs.parts]
    return view_array(SArray(xs.stype), parts, xs)


def lower_copy(c: PCall):
    c.count(1, usage="ps.copy(xs)")
    v = c.value(0)
    if not isinstance(v, ArrayV):
        return v                      # scalars and tuples are values already
    return fresh_array(v.stype, [c.bind1(ir.Copy(p), "copy") for p in v.parts])


def lower_update(c: PCall):
    """Functional update: Copy then an in-place Update (Python index rules)."""
    c.count(3, usage="ps.update(xs, i, v)")
    xs = c.array(0)
    i = c.count_i64(1, "an index")
    v = coerce(c.value(2), xs.stype.elem, c.src, c.arg_node(2), strict=False,
               what="the new element of ps.update")
    parts = []
    for p, a in zip(xs.parts, flatten_value(v)):
        cp = c.bind1(ir.Copy(p), "copy")
        parts.append(c.bind1(ir.Update(cp, (i,), a), "upd"))
    return fresh_array(xs.stype, parts)


def lower_array(c: PCall):
    c.count(1, usage="ps.array(xs)")
    xs = c.array(0, "a list or an array as its argument")
    return dataclasses.replace(xs, from_list=False, py=())


def lower_zip(c: PCall):
    """No code: the parts of the inputs side by side (plus a length check)."""
    c.count(1, None, usage="ps.zip(xs, ys, ...)")
    arrs = [c.array(i) for i in range(len(c.args))]
    c.same_length(arrs, "zip")
    buffers = [a.buffer for a in arrs if a.buffer]
    st = SArray(STuple(tuple(a.stype.elem for a in arrs)))
    return ArrayV(st, tuple(p for a in arrs for p in a.parts), -abs(buffers[0]) if buffers else 0)


def lower_unzip(c: PCall):
    """ps.unzip(xs): the field arrays of an array (of any rank) of tuples or
    records; a 2-D array of pairs gives two 2-D arrays. The parts are
    already one array per field (struct of arrays): only the types change."""
    c.count(1, usage="ps.unzip(xs)")
    xs = c.array(0, "an array of tuples or records as its argument")
    st, depth = xs.stype.elem, 1
    while isinstance(st, SArray):
        st, depth = st.elem, depth + 1
    if not isinstance(st, (STuple, SRecord)):
        raise c.error(0, f"ps.unzip needs an array of tuples or records, not {describe(xs)}")
    fields = st.elems if isinstance(st, STuple) else st.field_types
    out, k = [], 0
    for ft in fields:
        n = len(flatten_stype(ft))
        t = ft
        for _ in range(depth):
            t = SArray(t)
        out.append(view_array(t, xs.parts[k:k + n], xs))
        k += n
    return TupleV(tuple(out))


# ---------------------------------------------------------------------------
# Reductions (sum product minimum maximum argmin argmax)


def _numeric(c: PCall, what: str, allow_bool: bool) -> tuple[ArrayV, ir.Var]:
    xs = c.array(0, "an array of numbers as its argument")
    base = xs.stype
    while isinstance(base, SArray):
        base = base.elem
    if not isinstance(base, SScalar) or (base.t.is_bool and not allow_bool):
        raise c.error(0, f"{c.name} needs an array of numbers, not {describe(xs)}",
                      hint="use ps.reduce with your own operator" if not isinstance(base, SScalar)
                      else "convert the elements first, e.g. ps.map(lambda b: int(b), xs)")
    return xs, xs.parts[0]


def _elementwise_lambda(c: PCall, op: str, t) -> ir.Lambda:
    """\\a b -> a op b, element-wise (nested Maps) when t is an array type."""
    sub = c.b.sub()
    a, b = sub.var(t, "a"), sub.var(t, "b")
    if isinstance(t, ArrayType):
        w = sub.bind1(ir.Size(a), "n", c.loc)
        r = sub.bind1(ir.Map(w, _elementwise_lambda(c, op, t.row()), (a, b)), "r", c.loc)
    else:
        r = sub.bind1(ir.BinOp(op, a, b), "r", c.loc)
    return ir.Lambda((a, b), sub.body([r]), (t,))


def _reduce_with(c: PCall, xs: ArrayV, p: ir.Var, op: str, ne: ir.Const, n: ir.Var):
    """Reduce along dimension 0 with a scalar operator; rows of a 2-D array
    are combined element-wise (numpy's axis=0), with a neutral row."""
    row_t = p.type.row()
    neutral: ir.Atom = ne
    for d in range(p.type.rank - 1, 0, -1):
        neutral = c.bind1(ir.Replicate(c.bind1(ir.Size(p, d), "d"), neutral), "ne")
    (r,) = c.bind(ir.Reduce(n, _elementwise_lambda(c, op, row_t), (neutral,), (p,), True), op)
    if isinstance(row_t, ArrayType):
        return fresh_array(xs.stype.elem, [r])
    return ScalarV(r)


def lower_sum_product(c: PCall, op: str):
    if len(c.args) == 2 and c.qualname == "builtins.sum":
        raise c.error(1, "sum with a start value is not supported",
                      hint="write sum(xs) + start")
    c.count(1, usage=f"{c.name}(xs)")
    xs, p = _numeric(c, c.name, False)
    t = p.type.elem
    ne = ir.Const((0.0 if op == "add" else 1.0) if t.is_float else (0 if op == "add" else 1), t)
    res = _reduce_with(c, xs, p, op, ne, c.size(xs))
    if c.qualname == "builtins.sum" and isinstance(res, ScalarV):
        # Python's sum adds from the int 0: of a list of Python numbers it is
        # one (and of an empty array the int 0, see pynum.runtime_py)
        res = ScalarV(res.atom, py=bool(xs.part_py()[0]) or runtime_py())
    return res


def _empty_message(op: str) -> str:
    """The running Python's own message for min()/max() of an empty sequence
    ("max() arg is an empty sequence" in 3.11, "max() iterable argument is
    empty" in 3.12): compiled code says what Python mode says."""
    try:
        getattr(builtins, op)([])
    except ValueError as exc:
        return str(exc)
    return f"{op}() arg is an empty sequence"


def lower_extreme(c: PCall, op: str):
    """ps.minimum / ps.maximum (and builtin min/max of one array): NaN
    propagates; an empty array raises what Python mode raises: ShapeError
    for the prelude's, ValueError with Python's own message for the
    builtins ("max() arg is an empty sequence")."""
    c.count(1, usage=f"{c.name}(xs)")
    xs, p = _numeric(c, c.name, True)
    what = {"min": "minimum", "max": "maximum"}[op]
    if c.qualname.startswith("builtins."):
        n = _nonempty(c, xs, what, "ValueError", _empty_message(op))
        if p.type.rank == 1 and p.type.elem.is_float:
            return ScalarV(_python_extreme(c, p, op, n), py=xs.part_py()[0])
    else:
        # numpy's rule: a Reduce with the NaN-propagating min / max, which the
        # cpu backend spells as LLVM's llvm.minimum / maximum (kir.py), a
        # reduction LLVM vectorises (session 37: 10^7 f32 in 0.9 ms, numpy
        # 0.95; the compare-and-select with a separate NaN flag it replaces,
        # session 36's, stayed scalar: 2.4 ms)
        n = _nonempty(c, xs, what, "ShapeError")
    res = _reduce_with(c, xs, p, op, extreme_const(p.type.elem, op == "min"), n)
    if c.qualname.startswith("builtins.") and isinstance(res, ScalarV):
        res = ScalarV(res.atom, py=xs.part_py()[0])     # Python's min/max give an element
    return res


def _python_extreme(c: PCall, p: ir.Var, op: str, n: ir.Var) -> ir.Var:
    """Builtin min/max of a 1-D float array as Python computes it: the first
    element, replaced by each later one that is strictly smaller (larger).
    A NaN never is, so NaNs after a number are passed over, and a NaN first
    stays (Python mode runs the builtin itself; ps.minimum propagates NaN,
    as numpy does). As a reduction: numpy's fmin / fmax (the core BinOps
    that pass a NaN over, kir's fmin / fmax, LLVM's llvm.minnum / maxnum: a
    reduction LLVM vectorises) from +inf / -inf, which is the extreme of the
    elements that are not NaN; then the first element where that is NaN.
    Python keeps the first of equal values, fmin either: they differ only
    in the sign of a zero, which the golden rule does not compare."""
    t = p.type.elem
    sub = c.b.sub()
    a, b = sub.var(t, "a"), sub.var(t, "b")
    v = sub.bind1(ir.BinOp("fmin" if op == "min" else "fmax", a, b), op, c.loc)
    lam = ir.Lambda((a, b), sub.body([v]), (t,))
    (r,) = c.bind(ir.Reduce(n, lam, (extreme_const(t, op == "min"),), (p,), True), op)
    first = c.bind1(ir.Index(p, (ir.Const(0, I64),), wrap_negative=False), "first")
    nan = c.bind1(ir.UnOp("isnan", first), "nan")
    return c.bind1(ir.Select(nan, first, r), op)


def _arg_lambda(c: PCall, t, op: str) -> ir.Lambda:
    """(v1, i1) (v2, i2) -> the pair with the smaller (larger) value, NaN
    counting as the extreme, the smaller index on ties: a selection by a
    total order, hence associative and commutative."""
    sub = c.b.sub()
    v1, i1, v2, i2 = sub.var(t, "v"), sub.var(I64, "i"), sub.var(t, "v"), sub.var(I64, "i")
    L = c.loc
    better = sub.bind1(ir.BinOp("lt" if op == "min" else "gt", v2, v1), "better", L)
    tie = sub.bind1(ir.BinOp("eq", v2, v1), "tie", L)
    if t.is_float:
        n1 = sub.bind1(ir.UnOp("isnan", v1), "nan", L)
        n2 = sub.bind1(ir.UnOp("isnan", v2), "nan", L)
        not_n1 = sub.bind1(ir.UnOp("not", n1), "num", L)
        nan_wins = sub.bind1(ir.BinOp("land", n2, not_n1), "nanwins", L)
        better = sub.bind1(ir.BinOp("lor", better, nan_wins), "better", L)
        both = sub.bind1(ir.BinOp("land", n1, n2), "bothnan", L)
        tie = sub.bind1(ir.BinOp("lor", tie, both), "tie", L)
    earlier = sub.bind1(ir.BinOp("lt", i2, i1), "earlier", L)
    tie_earlier = sub.bind1(ir.BinOp("land", tie, earlier), "tie", L)
    pick2 = sub.bind1(ir.BinOp("lor", better, tie_earlier), "pick", L)
    v = sub.bind1(ir.Select(pick2, v2, v1), "v", L)
    i = sub.bind1(ir.Select(pick2, i2, i1), "i", L)
    return ir.Lambda((v1, i1, v2, i2), sub.body([v, i]), (t, I64))


def lower_argextreme(c: PCall, op: str):
    c.count(1, usage=f"{c.name}(xs)")
    xs, p = _numeric(c, c.name, True)
    if p.type.rank != 1:
        raise c.error(0, f"{c.name} needs a 1-D array of numbers, not {describe(xs)}",
                      hint=f"apply it to each row with ps.map")
    t = p.type.elem
    n = _nonempty(c, xs, c.name[3:], "ShapeError")
    io = c.bind1(ir.Iota(n), "iota")
    ne = (extreme_const(t, op == "min"), ir.Const(int(2 ** 63 - 1), I64))
    _, i = c.bind(ir.Reduce(n, _arg_lambda(c, t, op), ne, (p, io), True), "arg")
    return ScalarV(i)


def lower_builtin_range_like(c: PCall):
    raise c.error(None, f"{c.name}(...) is only allowed as the iterable of a for loop or a "
                        f"comprehension",
                  hint="use ps.zip(xs, ys) for an array of pairs" if c.name == "zip"
                  else "use ps.iota(n) for an array of indices")


def handlers() -> dict:
    P = "pyshark.prelude."
    return {
        P + "iota": lower_iota,
        P + "replicate": lower_replicate,
        P + "length": lower_length,
        "builtins.len": lower_length,
        P + "head": lambda c: lower_head_last(c, False),
        P + "last": lambda c: lower_head_last(c, True),
        P + "tail": lambda c: lower_tail_init(c, False),
        P + "init": lambda c: lower_tail_init(c, True),
        P + "take": lambda c: lower_take_drop_split(c, "take"),
        P + "drop": lambda c: lower_take_drop_split(c, "drop"),
        P + "split": lambda c: lower_take_drop_split(c, "split"),
        P + "reverse": lower_reverse,
        P + "concat": lower_concat,
        P + "rotate": lower_rotate,
        P + "transpose": lower_transpose,
        P + "flatten": lower_flatten,
        P + "unflatten": lower_unflatten,
        P + "copy": lower_copy,
        P + "update": lower_update,
        P + "array": lower_array,
        P + "zip": lower_zip,
        P + "unzip": lower_unzip,
        P + "sum": lambda c: lower_sum_product(c, "add"),
        "builtins.sum": lambda c: lower_sum_product(c, "add"),
        P + "product": lambda c: lower_sum_product(c, "mul"),
        P + "minimum": lambda c: lower_extreme(c, "min"),
        P + "maximum": lambda c: lower_extreme(c, "max"),
        P + "argmin": lambda c: lower_argextreme(c, "min"),
        P + "argmax": lambda c: lower_argextreme(c, "max"),
        "builtins.range": lower_builtin_range_like,
        "builtins.zip": lower_builtin_range_like,
        "builtins.enumerate": lower_builtin_range_like,
    }
