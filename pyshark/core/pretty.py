"""A readable, deterministic, Futhark-like text form of the core IR.

Used by `pyshark show --ir core`, by the type checker's error messages and in
tests, so the output only depends on the IR (never on dict/set order or ids).
Every bound name is shown with its type; nested bodies are indented.
"""
from __future__ import annotations

import math

from . import ir, ops
from .types import ScalarType, SType, Type

_IND = "  "

# Operator symbols from the operator table; the others print as name(x, ...)
_INFIX = {name: op.symbol for name, op in ops.BINARY.items() if op.symbol}
_PREFIX = {name: op.symbol for name, op in ops.UNARY.items() if op.symbol}


def pretty_type(t: Type) -> str:
    return str(t)


def pretty_const(c: ir.Const) -> str:
    t = c.type
    v = c.value
    if t is ScalarType.BOOL:
        return "true" if v else "false"
    if t.is_float:
        v = float(v)
        if math.isnan(v):
            return f"{t.value}.nan"
        if math.isinf(v):
            return f"{'-' if v < 0 else ''}{t.value}.inf"
        return f"{v!r}{t.value}"
    return f"{int(v)}{t.value}"


def pretty_atom(a) -> str:
    if isinstance(a, ir.Const):
        return pretty_const(a)
    if isinstance(a, ir.Var):
        return a.name
    return repr(a)


def _atoms(atoms) -> str:
    return ", ".join(pretty_atom(a) for a in atoms)


def _tuple(atoms) -> str:
    return f"({_atoms(atoms)})"


def _bind(v: ir.Var) -> str:
    return f"{v.name}: {v.type}"


def _types(ts) -> str:
    return "(" + ", ".join(str(t) for t in ts) + ")"


def pretty_pat(pat) -> str:
    return "(" + ", ".join(_bind(v) for v in pat) + ")"


def _result(body: ir.Body) -> str:
    r = body.result
    return pretty_atom(r[0]) if len(r) == 1 else _tuple(r)


def _body(body: ir.Body, ind: str) -> str:
    """A body as lines at indentation `ind`, with a leading newline."""
    out = []
    for s in body.stms:
        out.append("\n" + ind + _stm(s, ind))
    out.append("\n" + ind + ("in " if body.stms else "") + _result(body))
    return "".join(out)


def _lambda(lam: ir.Lambda, ind: str) -> str:
    head = "\\(" + ", ".join(_bind(p) for p in lam.params) + f"): {_types(lam.ret)} ->"
    if not lam.body.stms:
        return f"{head} {_result(lam.body)}"
    return head + _body(lam.body, ind + _IND * 2) + "\n" + ind + _IND


def _stm(s: ir.Let, ind: str) -> str:
    return f"let {pretty_pat(s.pat)} = {_exp(s.exp, ind)}"


def _idx(idxs, wrap_negative: bool) -> str:
    text = _atoms(idxs)
    return text if wrap_negative else text + " (nonneg)"


def _slice_dim(d) -> str:
    if isinstance(d, ir.SliceDim):
        s = "" if d.start is None else pretty_atom(d.start)
        e = "" if d.stop is None else pretty_atom(d.stop)
        if d.step is None:
            return f"{s}:{e}"
        return f"{s}:{e}:{pretty_atom(d.step)}"
    return pretty_atom(d)


def _exp(e, ind: str) -> str:
    f = _EXP.get(type(e))
    if f is None:
        return f"<unknown expression {e!r}>"
    return f(e, ind)


def _binop(e: ir.BinOp, ind):
    if e.op in _INFIX:
        return f"{pretty_atom(e.x)} {_INFIX[e.op]} {pretty_atom(e.y)}"
    return f"{e.op}({pretty_atom(e.x)}, {pretty_atom(e.y)})"


def _unop(e: ir.UnOp, ind):
    if e.op in _PREFIX:
        return f"{_PREFIX[e.op]}{pretty_atom(e.x)}"
    return f"{e.op}({pretty_atom(e.x)})"


def _if(e: ir.If, ind):
    inner = ind + _IND * 2
    return (f"if {pretty_atom(e.cond)}: {_types(e.ret)}\n{ind}{_IND}then"
            + _body(e.then_body, inner) + f"\n{ind}{_IND}else" + _body(e.else_body, inner))


def _loop(e: ir.Loop, ind):
    params = ", ".join(f"{_bind(p)} = {pretty_atom(a)}" for p, a in zip(e.params, e.inits))
    inner = ind + _IND * 2
    if isinstance(e.form, ir.ForLoop):
        form = f"for {_bind(e.form.index)} < {pretty_atom(e.form.bound)}"
    else:
        form = "while" + _body(e.form.cond, inner) + "\n" + ind + _IND
    return f"loop ({params}) {form} do" + _body(e.body, inner)


def _soac_args(name, e, parts, ind):
    return f"{name}[{pretty_atom(e.width)}](" + ", ".join(parts) + ")"


def _map(e: ir.Map, ind):
    text = _soac_args("map", e, [_lambda(e.lam, ind)] + [a.name for a in e.arrs], ind)
    if e.empty_dims is not None:
        text = f"{text} empty [{_atoms(e.empty_dims)}]"
    if e.row_dims is not None:
        text = f"{text} rows [{_atoms(e.row_dims)}]"
    return text


def _reduce(e: ir.Reduce, ind):
    name = "reduce_comm" if e.commutative else "reduce"
    return _soac_args(name, e, [_lambda(e.lam, ind), _tuple(e.neutral)]
                      + [a.name for a in e.arrs], ind)


def _scan(e: ir.Scan, ind):
    return _soac_args("scan", e, [_lambda(e.lam, ind), _tuple(e.neutral)]
                      + [a.name for a in e.arrs], ind)


def _filter(e: ir.Filter, ind):
    return _soac_args("filter", e, [_lambda(e.lam, ind)] + [a.name for a in e.arrs], ind)


def _rbi(e: ir.ReduceByIndex, ind):
    return _soac_args("reduce_by_index", e,
                      [_tuple(e.dests), _lambda(e.lam, ind), _tuple(e.neutral),
                       e.idxs.name, _tuple(e.vals)], ind)


def _scatter(e: ir.Scatter, ind):
    return _soac_args("scatter", e, [_tuple(e.dests), e.idxs.name, _tuple(e.vals)], ind)


_EXP = {
    ir.AtomExp: lambda e, ind: pretty_atom(e.atom),
    ir.BinOp: _binop,
    ir.UnOp: _unop,
    ir.Convert: lambda e, ind: f"{e.to.value}({pretty_atom(e.x)})",
    ir.Select: lambda e, ind: f"select({_atoms((e.cond, e.x, e.y))})",
    ir.Call: lambda e, ind: f"{e.fn}({_atoms(e.args)}): {_types(e.ret)}",
    ir.If: _if,
    ir.Loop: _loop,
    ir.Assert: lambda e, ind: f"assert({pretty_atom(e.cond)}, {e.msg!r}, {e.error})",
    ir.Index: lambda e, ind: f"{e.arr.name}[{_idx(e.idxs, e.wrap_negative)}]",
    ir.Slice: lambda e, ind: f"{e.arr.name}[{', '.join(_slice_dim(d) for d in e.dims)}]",
    ir.Update: lambda e, ind: (f"{e.arr.name} with [{_idx(e.idxs, e.wrap_negative)}]"
                               f" = {pretty_atom(e.value)}"),
    ir.Size: lambda e, ind: f"size({e.arr.name}, {e.dim})",
    ir.ArrayLit: lambda e, ind: f"[{_atoms(e.elems)}]: {e.type}",
    ir.Iota: lambda e, ind: f"iota({pretty_atom(e.n)})",
    ir.Replicate: lambda e, ind: f"replicate({pretty_atom(e.n)}, {pretty_atom(e.value)})",
    ir.Copy: lambda e, ind: f"copy({e.arr.name})",
    ir.Concat: lambda e, ind: f"concat({_atoms(e.arrs)})",
    ir.Rotate: lambda e, ind: f"rotate({pretty_atom(e.r)}, {e.arr.name})",
    ir.Transpose: lambda e, ind: f"transpose({e.arr.name})",
    ir.Reshape: lambda e, ind: f"reshape({_tuple(e.shape)}, {e.arr.name})",
    ir.Map: _map,
    ir.Reduce: _reduce,
    ir.Scan: _scan,
    ir.Filter: _filter,
    ir.ReduceByIndex: _rbi,
    ir.Scatter: _scatter,
}


def pretty_exp(exp, indent: str = "") -> str:
    """One expression; nested bodies continue on indented lines."""
    return _exp(exp, indent)


def pretty_stm(stm: ir.Let, indent: str = "") -> str:
    return _stm(stm, indent)


def pretty_body(body: ir.Body, indent: str = "") -> str:
    return _body(body, indent).lstrip("\n")


def pretty_fun(fun: ir.FunDef) -> str:
    params = ", ".join(_bind(p) for p in fun.params)
    return f"fun {fun.name}({params}): {_types(fun.ret)} =" + _body(fun.body, _IND)


def _stype(st: SType) -> str:
    return repr(st)


def pretty_entry(entry: ir.Entry) -> str:
    params = ", ".join(f"{p.name}: {_stype(p.stype)}" for p in entry.params)
    return f"entry {entry.name}({params}): {_stype(entry.ret)}"


def pretty_program(program: ir.Program) -> str:
    parts = []
    for name, rec in program.records.items():
        fields = ", ".join(f"{n}: {_stype(t)}" for n, t in rec.fields)
        parts.append(f"record {name} {{{fields}}}")
    for fun in program.functions.values():
        parts.append(pretty_fun(fun))
    for entry in program.entries.values():
        parts.append(pretty_entry(entry))
    return "\n\n".join(parts) + "\n"
