"""Indexing and slicing: `xs[i]`, `xss[i, j]`, `xss[i][j]`, slices with
Python clamping, `xss[:, j]`, and constant indexes of tuples.

Rows and slices of an array are views of it: never owned (buffer -|b|), so
an in-place update of either is refused while the other is live.
"""
from __future__ import annotations

import libcst as cst

from ..core import ir
from ..core.types import I64, SArray, SType
from .coerce import weak_to
from .context import Ctx, view_buffer
from .exprs import translate_expr
from .values import ArrayV, ScalarV, TupleV, Value, rebuild_value, type_name, value_stype


def index_atom(ctx: Ctx, node) -> ir.Atom:
    """An index or slice bound: any integer type; constants as i64."""
    v = translate_expr(ctx, node)
    if isinstance(v, ScalarV) and v.type.is_int:
        if v.weak:
            return weak_to(v, I64, ctx.src, node).atom
        return v.atom
    if isinstance(v, ArrayV):
        raise ctx.error(node, "indexing with an array is not supported",
                        hint="gather with ps.map(lambda i: xs[i], idxs)")
    got = type_name(value_stype(v))
    hint = "convert with int(...)" if isinstance(v, ScalarV) and v.type.is_float else None
    raise ctx.error(node, f"an array index must be an integer, not {got}", hint)


def strip(st: SType, k: int) -> SType:
    for _ in range(k):
        st = st.elem
    return st


def wrap(st: SType, k: int) -> SType:
    for _ in range(k):
        st = SArray(st)
    return st


def translate_subscript(ctx: Ctx, node: cst.Subscript) -> Value:
    v = translate_expr(ctx, node.value)
    if isinstance(v, TupleV):
        return tuple_index(ctx, v, node)
    if not isinstance(v, ArrayV):
        raise ctx.error(node, f"a {type_name(value_stype(v))} value cannot be indexed")
    elems = list(node.slice)
    if len(elems) > v.rank:
        raise ctx.error(node, f"too many indices ({len(elems)}) for a rank-{v.rank} array")
    if len(elems) > 1 and v.from_list:
        code = ctx.src.code(node.value)
        raise ctx.error(node, f"'{code}' is a list in Python mode, where {code}[i, j] and "
                              f"{code}[:, j] do not work",
                        hint=f"wrap it in ps.array(...), or index one dimension at a time: {code}[i][j]")
    dims = []
    for el in elems:
        s = el.slice
        if isinstance(s, cst.Index):
            if s.star is not None:
                raise ctx.error(el, "star-expressions are not supported in indexes")
            dims.append(index_atom(ctx, s.value))
        else:
            parts = []
            for b in (s.lower, s.upper, s.step):
                parts.append(None if b is None else index_atom(ctx, b))
            if isinstance(parts[2], ir.Const) and parts[2].value == 0:
                raise ctx.error(s.step, "slice step cannot be zero")
            dims.append(ir.SliceDim(*parts))
    loc = ctx.loc(node)
    if all(not isinstance(d, ir.SliceDim) for d in dims):
        st = strip(v.stype, len(dims))
        atoms = [ctx.b.bind1(ir.Index(p, tuple(dims)), "elem", loc) for p in v.parts]
        # an element of a list is what the list holds (Python numbers where it may hold them)
        res = rebuild_value(st, atoms, view_buffer(v.buffer), py=v.part_py())
        if isinstance(res, ArrayV):
            res = ArrayV(res.stype, res.parts, res.buffer, v.from_list, res.py)
        return res
    dropped = sum(1 for d in dims if not isinstance(d, ir.SliceDim))
    st = wrap(strip(v.stype, v.rank), v.rank - dropped)
    parts = tuple(ctx.b.bind1(ir.Slice(p, tuple(dims)), "slice", loc) for p in v.parts)
    return ArrayV(st, parts, view_buffer(v.buffer), v.from_list, v.py)


def tuple_index(ctx: Ctx, v: TupleV, node: cst.Subscript) -> Value:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        raise ctx.error(node, "a tuple takes one constant index, e.g. t[0]")
    inode = node.slice[0].slice.value
    i = translate_expr(ctx, inode)
    if not (isinstance(i, ScalarV) and i.weak and i.type.is_int):
        raise ctx.error(inode, "a tuple index must be a constant integer such as t[0]",
                        hint="unpack the tuple instead: a, b = t")
    n = len(v.elems)
    k = i.atom.value
    if not -n <= k < n:
        raise ctx.error(inode, f"tuple index {k} out of range for a tuple of {n} elements")
    return v.elems[k]
