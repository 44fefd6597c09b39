"""What `for` loops and comprehensions iterate over: range(...), arrays,
enumerate(xs) and zip(xs, ys, ...).

One description serves both users: a comprehension maps a lambda over
`map_arrays()` and rebuilds the element from the lambda's parameters; a loop
indexes the arrays at the trip counter. `range` lengths follow Python
(`len(range(a, b, s))`); a step that is zero at run time raises ValueError, as
Python's "range() arg 3 must not be zero" does.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..core import ir
from ..core.types import BOOL, I64
from .coerce import weak_to
from .pynum import runtime_py
from .context import Ctx, view_buffer
from .values import ArrayV, ScalarV, TupleV, Value, rebuild_value, type_name


def int_binop(ctx: Ctx, op: str, x: ir.Atom, y: ir.Atom, node) -> ir.Atom:
    """An i64 operation on atoms, folded when both are constants."""
    if isinstance(x, ir.Const) and isinstance(y, ir.Const) and op in ("add", "sub", "mul"):
        v = {"add": x.value + y.value, "sub": x.value - y.value, "mul": x.value * y.value}[op]
        if -(1 << 63) <= v < (1 << 63):
            return ir.Const(v, I64)
    if op in ("add", "sub") and isinstance(y, ir.Const) and y.value == 0:
        return x
    if op == "mul" and isinstance(y, ir.Const) and y.value == 1:
        return x
    return ctx.b.bind1(ir.BinOp(op, x, y), "n", ctx.loc(node))


def as_i64(ctx: Ctx, v: Value, node, what: str) -> ir.Atom:
    """An integer value as an i64 atom (what `range` and indices count in)."""
    from .ops import convert
    if not isinstance(v, ScalarV) or v.type.is_float or v.type.is_bool:
        got = "an array" if isinstance(v, ArrayV) else type_name(v.stype) if isinstance(v, ScalarV) else "a tuple"
        raise ctx.error(node, f"{what} must be an integer, not {got}")
    if v.weak:
        return weak_to(v, I64, ctx.src, node).atom
    if v.type is I64:
        return v.atom
    return convert(ctx, I64, v, node).atom


def size_of(ctx: Ctx, arr: ArrayV, node) -> ir.Atom:
    return ctx.b.bind1(ir.Size(arr.parts[0], 0), "len", ctx.loc(node))


class RangeSource:
    def __init__(self, ctx: Ctx, start: ir.Atom, stop: ir.Atom, step: ir.Atom, node):
        self.start, self.stop, self.step, self.node = start, stop, step, node
        if isinstance(step, ir.Const):
            sgn = ir.Const(1 if step.value > 0 else -1, I64)
        else:
            nonzero = ctx.b.bind1(ir.BinOp("ne", step, ir.Const(0, I64)), "step_ok", ctx.loc(node))
            ctx.b.emit(ir.Assert(nonzero, "range() arg 3 must not be zero", "ValueError"), (), ctx.loc(node))
            pos = ctx.b.bind1(ir.BinOp("gt", step, ir.Const(0, I64)), "pos", ctx.loc(node))
            sgn = ctx.b.bind1(ir.Select(pos, ir.Const(1, I64), ir.Const(-1, I64)), "sgn", ctx.loc(node))
        if isinstance(step, ir.Const) and step.value == 1:
            self.width = int_binop(ctx, "sub", stop, start, node)
        else:
            span = int_binop(ctx, "sub", stop, start, node)
            span = int_binop(ctx, "add", span, step, node)
            span = int_binop(ctx, "sub", span, sgn, node)
            if isinstance(span, ir.Const) and isinstance(step, ir.Const):
                self.width = ir.Const(span.value // step.value, I64)
            else:
                self.width = ctx.b.bind1(ir.BinOp("floordiv", span, step), "count", ctx.loc(node))
        self._iota: Optional[ir.Var] = None

    def map_arrays(self, ctx: Ctx) -> list[ir.Var]:
        if self._iota is None:
            self._iota = ctx.b.bind1(ir.Iota(self.width), "iota", ctx.loc(self.node))
        return [self._iota]

    def param_types(self):
        return [I64]

    def _index(self, ctx: Ctx, k: ir.Atom) -> Value:
        """The index: a Python int in Python mode (pynum.runtime_py)."""
        scaled = int_binop(ctx, "mul", k, self.step, self.node)
        if isinstance(self.start, ir.Const) and self.start.value == 0:
            return ScalarV(scaled, py=runtime_py())
        return ScalarV(int_binop(ctx, "add", scaled, self.start, self.node), py=runtime_py())

    def element_from_params(self, ctx: Ctx, params) -> Value:
        return self._index(ctx, params[0])

    def element_at(self, ctx: Ctx, k: ir.Atom) -> Value:
        return self._index(ctx, k)


class ArraySource:
    """xs, zip(xs, ys, ...) or enumerate(xs): `tuple_kind` is None for a plain array."""

    def __init__(self, ctx: Ctx, arrays: list[ArrayV], node, tuple_kind: Optional[str] = None,
                 enum_start: ir.Atom = ir.Const(0, I64)):
        self.node = node
        self.tuple_kind = tuple_kind
        self.enum_start = enum_start
        widths = [size_of(ctx, a, node) for a in arrays]
        width = widths[0]
        for w in widths[1:]:
            width = ctx.b.bind1(ir.BinOp("min", width, w), "len", ctx.loc(node))
        if len(arrays) > 1:      # zip stops at the shortest array, as Python's does
            arrays = [ArrayV(a.stype, tuple(
                ctx.b.bind1(ir.Slice(p, (ir.SliceDim(None, width, None),)), "zipped", ctx.loc(node))
                for p in a.parts), view_buffer(a.buffer), a.from_list, a.py) for a in arrays]
        self.arrays = arrays
        self.width = width
        self._iota: Optional[ir.Var] = None

    def map_arrays(self, ctx: Ctx) -> list[ir.Var]:
        out = [p for a in self.arrays for p in a.parts]
        if self.tuple_kind == "enumerate":
            if self._iota is None:
                self._iota = ctx.b.bind1(ir.Iota(self.width), "iota", ctx.loc(self.node))
            out = [self._iota] + out
        return out

    def param_types(self):
        ts = [p.type.row() for a in self.arrays for p in a.parts]
        return ([I64] if self.tuple_kind == "enumerate" else []) + ts

    def _assemble(self, ctx, index: Optional[ir.Atom], rows: list[Value]) -> Value:
        if self.tuple_kind == "enumerate":
            i = int_binop(ctx, "add", index, self.enum_start, self.node)
            return TupleV((ScalarV(i, py=runtime_py()), rows[0]))    # a Python int in Python mode
        if self.tuple_kind == "zip":
            return TupleV(tuple(rows))
        return rows[0]

    def element_from_params(self, ctx: Ctx, params) -> Value:
        params = list(params)
        index = params.pop(0) if self.tuple_kind == "enumerate" else None
        rows = []
        for a in self.arrays:
            n = len(a.parts)
            rows.append(rebuild_value(a.stype.elem, params[:n], 0, py=a.part_py()))
            params = params[n:]
        return self._assemble(ctx, index, rows)

    def element_at(self, ctx: Ctx, k: ir.Atom) -> Value:
        rows = []
        for a in self.arrays:
            atoms = [ctx.b.bind1(ir.Index(p, (k,), False), "elem", ctx.loc(self.node)) for p in a.parts]
            rows.append(rebuild_value(a.stype.elem, atoms, view_buffer(a.buffer), py=a.part_py()))
        return self._assemble(ctx, k, rows)


def _call_name(ctx: Ctx, node) -> Optional[str]:
    if isinstance(node, cst.Call) and isinstance(node.func, (cst.Name, cst.Attribute)):
        if isinstance(node.func, cst.Name) and ctx.scope.lookup(node.func.value) is not None:
            return None
        for q in ctx.src.qualified_names(node.func):
            if q in ("builtins.range", "builtins.zip", "builtins.enumerate"):
                return q.split(".")[1]
    return None


def iter_source(ctx: Ctx, node: cst.BaseExpression):
    """The iteration a `for ... in node` describes (emitting its setup into ctx.b)."""
    from .exprs import translate_expr
    kind = _call_name(ctx, node)
    if kind is not None:
        if any(a.keyword is not None or a.star for a in node.args):
            raise ctx.error(node, f"{kind}() takes positional arguments only here")
        args = [a.value for a in node.args]
    if kind == "range":
        if not 1 <= len(args) <= 3:
            raise ctx.error(node, f"range() takes 1 to 3 arguments, got {len(args)}")
        vals = [as_i64(ctx, translate_expr(ctx, a), a, "a range() argument") for a in args]
        if len(vals) == 1:
            start, stop, step = ir.Const(0, I64), vals[0], ir.Const(1, I64)
        elif len(vals) == 2:
            (start, stop), step = vals, ir.Const(1, I64)
        else:
            start, stop, step = vals
            if isinstance(step, ir.Const) and step.value == 0:
                raise ctx.error(args[2], "range() step must not be zero")
        return RangeSource(ctx, start, stop, step, node)
    if kind in ("zip", "enumerate"):
        if kind == "zip" and not args:
            raise ctx.error(node, "zip() needs at least one array")
        if kind == "enumerate" and len(args) not in (1, 2):
            raise ctx.error(node, "enumerate() takes an array and an optional start")
        arr_nodes = args if kind == "zip" else args[:1]
        arrays = []
        for a in arr_nodes:
            inner = _call_name(ctx, a)
            if inner == "range":
                raise ctx.error(a, f"{kind}() over range(...) is not supported",
                                hint="use ps.iota(n) for the indices")
            if inner in ("zip", "enumerate"):
                raise ctx.error(a, f"nesting {inner}(...) inside {kind}(...) is not supported (one "
                                   f"level of range/zip/enumerate per loop or comprehension)",
                                hint=f"iterate over range(len(xs)) and index the arrays, or use "
                                     f"{kind}(ps.{inner}(...)) when the arrays have equal lengths"
                                if inner == "zip" else "iterate over range(len(xs)) and index")
            v = translate_expr(ctx, a)
            if not isinstance(v, ArrayV):
                raise ctx.error(a, f"{kind}() needs arrays, not {type_name(v.stype)}")
            arrays.append(v)
        start = ir.Const(0, I64)
        if kind == "enumerate" and len(args) == 2:
            start = as_i64(ctx, translate_expr(ctx, args[1]), args[1], "the start of enumerate()")
        return ArraySource(ctx, arrays, node, kind, start)
    v = translate_expr(ctx, node)
    if not isinstance(v, ArrayV):
        raise ctx.error(node, f"cannot iterate over a value of type {type_name(v.stype)}",
                        hint="iterate over an array, range(...), enumerate(...) or zip(...)")
    return ArraySource(ctx, [v], node)
