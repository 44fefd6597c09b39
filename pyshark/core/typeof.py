"""The result types of a core expression, computed from its operands.

Shared by the translator (to type the names it binds) and the type checker (to
compare with what a Let declares). Assumes well-typed operands; the checker
validates those separately.
"""
from __future__ import annotations

from . import ir
from .types import BOOL, I64, ArrayType, ScalarType, Type, array_of


def atom_type(a: ir.Atom) -> Type:
    return a.type


def index_result(arr_t: ArrayType, n_idx: int) -> Type:
    """Type of arr[i0, ..., i_{n-1}]."""
    left = arr_t.rank - n_idx
    return arr_t.elem if left == 0 else ArrayType(arr_t.elem, left)


def exp_types(e: ir.Exp) -> tuple[Type, ...]:
    if isinstance(e, ir.AtomExp):
        return (e.atom.type,)
    if isinstance(e, ir.BinOp):
        return (BOOL,) if e.op in ir.COMPARISONS else (e.x.type,)
    if isinstance(e, ir.UnOp):
        return (BOOL,) if e.op in ir.BOOL_RESULT_UNOPS else (e.x.type,)
    if isinstance(e, ir.Convert):
        return (e.to,)
    if isinstance(e, ir.Select):
        return (e.x.type,)
    if isinstance(e, (ir.Call, ir.If)):
        return tuple(e.ret)
    if isinstance(e, ir.Loop):
        return tuple(p.type for p in e.params)
    if isinstance(e, ir.Assert):
        return ()
    if isinstance(e, ir.Index):
        return (index_result(e.arr.type, len(e.idxs)),)
    if isinstance(e, ir.Slice):
        t = e.arr.type
        dropped = sum(1 for d in e.dims if not isinstance(d, ir.SliceDim))
        return (index_result(t, dropped),)
    if isinstance(e, ir.Update):
        return (e.arr.type,)
    if isinstance(e, ir.Size):
        return (I64,)
    if isinstance(e, ir.ArrayLit):
        return (e.type,)
    if isinstance(e, ir.Iota):
        return (ArrayType(I64, 1),)
    if isinstance(e, ir.Replicate):
        return (array_of(e.value.type),)
    if isinstance(e, (ir.Copy, ir.Rotate, ir.Transpose)):
        return (e.arr.type,)
    if isinstance(e, ir.Concat):
        return (e.arrs[0].type,)
    if isinstance(e, ir.Reshape):
        return (ArrayType(e.arr.type.elem, len(e.shape)),)
    if isinstance(e, ir.Map):
        return tuple(array_of(t) for t in e.lam.ret)
    if isinstance(e, ir.Reduce):
        return tuple(e.lam.ret)
    if isinstance(e, ir.Scan):
        return tuple(array_of(t) for t in e.lam.ret)
    if isinstance(e, ir.Filter):
        return tuple(a.type for a in e.arrs)
    if isinstance(e, (ir.ReduceByIndex, ir.Scatter)):
        return tuple(d.type for d in e.dests)
    raise TypeError(f"not a core expression: {e!r}")


def is_scalar(t: Type) -> bool:
    return isinstance(t, ScalarType)
