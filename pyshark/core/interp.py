"""Reference interpreter of the core IR.

It defines what compiled code must compute: the semantics in ir.py's
docstrings, which are numpy 2 / Python semantics. Values are numpy scalars of
the exact dtype and numpy arrays of the exact dtype and rank.

Ownership: an Update mutates its array in place only when nothing else can
observe it -- the array owns its buffer (`base is None`) and the environment
held its only reference (CPython reference count, calibrated at import).
Otherwise it copies first. So the interpreter stays correct even on IR that
breaks the uniqueness rules, and a loop of updates is still O(1) per update.
To make that work, names go out of scope when their body ends, and the name
an Update consumes is removed from the environment.
"""
from __future__ import annotations

import math
import sys
import warnings
from itertools import repeat

import numpy as np

from ..errors import RUNTIME_ERRORS, InternalCompilerError, ShapeError
from . import ir, ops
from .types import ScalarType, Type

# ---------------------------------------------------------------------------
# Helpers


def _at(loc) -> str:
    return f" (at {loc})" if loc is not None else ""


def _refcount_after_pop(env: dict, name: str):
    a = env.pop(name)
    return a, sys.getrefcount(a)


# The reference count of an array whose only owner was the environment entry.
_SOLE = _refcount_after_pop({"x": np.empty(1)}, "x")[1]


def _take(env: dict, name: str) -> np.ndarray:
    """Consumes env[name]: the array itself when it is unshared, else a copy."""
    a, rc = _refcount_after_pop(env, name)
    if a.base is None and rc <= _SOLE and a.flags.writeable:
        return a
    return a.copy()


def _bind_all(env: dict, params, vals) -> None:
    # A function, so that no local outlives the binding (reference counts).
    for p, v in zip(params, vals):
        env[p.name] = v


def _norm_index(i, n: int, wrap: bool, loc, dim: int) -> int:
    i = int(i)
    j = i + n if (wrap and i < 0) else i
    if j < 0 or j >= n:
        d = f" in dimension {dim}" if dim else ""
        raise IndexError(f"index {i} out of range for length {n}{d}{_at(loc)}")
    return j


def _stack(vals: list, t: Type, loc, what: str, inner=None) -> np.ndarray:
    """Stacks the values of type t into an array (one more dimension)."""
    if isinstance(t, ScalarType):
        return np.array(vals, dtype=t.dtype) if vals else np.zeros((0,), t.dtype)
    if not vals:
        shape = (0,) + (tuple(inner) if inner is not None else (0,) * t.rank)
        return np.zeros(shape, t.elem.dtype)
    shape = vals[0].shape
    for v in vals:
        if v.shape != shape:
            raise ShapeError(f"{what} produced rows of different shapes {shape} and "
                             f"{v.shape} (irregular array){_at(loc)}")
    return np.stack(vals)


def _check_width(w: int, arrs, vals, loc, what: str):
    for a, v in zip(arrs, vals):
        if v.shape[0] != w:
            raise ShapeError(f"{what}: arrays of lengths {w} and {v.shape[0]}{_at(loc)}")


# ---------------------------------------------------------------------------
# Scalar operators: the reference functions of the operator table (ops.py),
# with the statement's location added to the errors they raise


def _located(f, exc):
    def g(x, y, loc):
        try:
            return f(x, y)
        except exc as ex:
            if loc is None:
                raise
            raise exc(f"{ex}{_at(loc)}") from None
    return g


def _plain(f):
    return lambda x, y, loc: f(x, y)


def _bin_table(kinds) -> dict:
    """op -> handler(x, y, loc) for operands of the given kinds."""
    out = {}
    for name, op in ops.BINARY.items():
        for k in kinds:
            if k in op.kinds:
                r = op.raises.get(k)
                h = _located(op.ref[k], r.exception) if r else _plain(op.ref[k])
                assert name not in out or op.ref[k] is op.ref[out[name][0]]
                out.setdefault(name, (k, h))
    return {name: h for name, (k, h) in out.items()}


_BIN_INT = _bin_table([ops.INT])
_BIN_OTHER = _bin_table([ops.FLOAT, ops.BOOL])     # floats and bools share references
_UN = {name: op.ref[min(op.kinds)] for name, op in ops.UNARY.items()}
assert all(len(set(op.ref.values())) == 1 for op in ops.UNARY.values())


def _no_binop(e: ir.BinOp):
    raise InternalCompilerError(f"core interpreter: operator {e.op} is not defined on "
                                f"{e.x.type}")


# ---------------------------------------------------------------------------
# The interpreter


class Interpreter:
    """Evaluates FunDefs of one program. Environments map names to values."""

    def __init__(self, program: ir.Program):
        self.program = program
        self._consts: dict[int, tuple] = {}

    # -- atoms and bodies ------------------------------------------------------
    def const(self, c: ir.Const):
        hit = self._consts.get(id(c))
        if hit is None:
            hit = (c, c.type.dtype.type(c.value))
            self._consts[id(c)] = hit
        return hit[1]

    def atom(self, a, env: dict):
        if a.__class__ is ir.Var:
            return env[a.name]
        return self.const(a)

    def body(self, body: ir.Body, env: dict, scoped: bool = True) -> list:
        """Evaluates a body and returns its results; its names then go out of scope."""
        stm = None
        try:
            for stm in body.stms:
                e = stm.exp
                pat = stm.pat
                if len(pat) == 1:
                    env[pat[0].name] = _DISPATCH[e.__class__](self, e, env, stm.loc)[0]
                else:
                    _bind_all(env, pat, _DISPATCH[e.__class__](self, e, env, stm.loc))
            res = [env[a.name] if a.__class__ is ir.Var else self.const(a)
                   for a in body.result]
        except KeyError as ex:
            where = _at(stm.loc) if stm is not None else ""
            raise InternalCompilerError(
                f"core interpreter: name {ex.args[0]!r} is not bound (unbound, out of "
                f"scope, or already consumed by an Update){where}") from None
        if scoped:
            for s in body.stms:
                for v in s.pat:
                    env.pop(v.name, None)
        return res

    def call(self, fun: ir.FunDef, args: list) -> list:
        if len(args) != len(fun.params):
            raise TypeError(f"{fun.name} takes {len(fun.params)} arguments, "
                            f"got {len(args)}")
        env = {p.name: a for p, a in zip(fun.params, args)}
        return self.body(fun.body, env, scoped=False)

    def apply(self, lam: ir.Lambda, env: dict, args) -> list:
        _bind_all(env, lam.params, args)
        return self.body(lam.body, env)

    def end_lambda(self, lam: ir.Lambda, env: dict) -> None:
        for p in lam.params:
            env.pop(p.name, None)


I = Interpreter  # short alias for the handlers below


# ---------------------------------------------------------------------------
# Expression handlers: (interp, exp, env, loc) -> list of values


def _h_atom(it: I, e: ir.AtomExp, env, loc):
    return (it.atom(e.atom, env),)


def _h_binop(it: I, e: ir.BinOp, env, loc):
    x = it.atom(e.x, env)
    y = it.atom(e.y, env)
    h = (_BIN_INT if e.x.type.is_int else _BIN_OTHER).get(e.op)
    if h is None:
        _no_binop(e)
    return (h(x, y, loc),)


def _h_unop(it: I, e: ir.UnOp, env, loc):
    return (_UN[e.op](it.atom(e.x, env)),)


def _h_convert(it: I, e: ir.Convert, env, loc):
    return (it.atom(e.x, env).astype(e.to.dtype),)


def _h_select(it: I, e: ir.Select, env, loc):
    return (it.atom(e.x, env) if it.atom(e.cond, env) else it.atom(e.y, env),)


def _h_call(it: I, e: ir.Call, env, loc):
    fun = it.program.functions[e.fn]
    return it.call(fun, [it.atom(a, env) for a in e.args])


def _h_if(it: I, e: ir.If, env, loc):
    return it.body(e.then_body if it.atom(e.cond, env) else e.else_body, env)


def _h_loop(it: I, e: ir.Loop, env, loc):
    params = e.params
    _bind_all(env, params, [it.atom(a, env) for a in e.inits])
    form = e.form
    body = e.body
    if form.__class__ is ir.ForLoop:
        n = int(it.atom(form.bound, env))
        idx = form.index.name
        for i in range(n):
            env[idx] = np.int64(i)
            _bind_all(env, params, it.body(body, env))
        env.pop(idx, None)
    else:
        cond = form.cond
        while it.body(cond, env)[0]:
            _bind_all(env, params, it.body(body, env))
    return [env.pop(p.name) for p in params]


_ERRORS = {name: cls for name, (_, cls) in RUNTIME_ERRORS.items()}


def _h_assert(it: I, e: ir.Assert, env, loc):
    if not it.atom(e.cond, env):
        cls = _ERRORS.get(e.error, AssertionError)
        if loc is None:
            raise cls(e.msg)
        raise cls(f"{e.msg} (at {loc})" if e.msg else f"assertion failed (at {loc})")
    return ()


def _index_key(it: I, arr, idxs, wrap, env, loc):
    shape = arr.shape
    return tuple(_norm_index(it.atom(a, env), shape[d], wrap, loc, d)
                 for d, a in enumerate(idxs))


def _h_index(it: I, e: ir.Index, env, loc):
    arr = env[e.arr.name]
    return (arr[_index_key(it, arr, e.idxs, e.wrap_negative, env, loc)],)


def _h_slice(it: I, e: ir.Slice, env, loc):
    arr = env[e.arr.name]
    key = []
    for d, dim in enumerate(e.dims):
        if dim.__class__ is ir.SliceDim:
            parts = [None if a is None else int(it.atom(a, env))
                     for a in (dim.start, dim.stop, dim.step)]
            if parts[2] == 0:
                raise ValueError(f"slice step cannot be zero{_at(loc)}")
            key.append(slice(*parts))
        else:
            key.append(_norm_index(it.atom(dim, env), arr.shape[d], True, loc, d))
    return (arr[tuple(key)],)


def _h_update(it: I, e: ir.Update, env, loc):
    value = it.atom(e.value, env)
    arr = _take(env, e.arr.name)
    key = _index_key(it, arr, e.idxs, e.wrap_negative, env, loc)
    if len(key) < arr.ndim:
        want = arr.shape[len(key):]
        if value.shape != want:
            raise ShapeError(f"cannot update a row of shape {want} with a value of "
                             f"shape {value.shape}{_at(loc)}")
    arr[key] = value
    return (arr,)


def _h_size(it: I, e: ir.Size, env, loc):
    return (np.int64(env[e.arr.name].shape[e.dim]),)


def _h_arraylit(it: I, e: ir.ArrayLit, env, loc):
    vals = [it.atom(a, env) for a in e.elems]
    return (_stack(vals, e.type.row(), loc, "array literal"),)


def _h_iota(it: I, e: ir.Iota, env, loc):
    return (np.arange(max(int(it.atom(e.n, env)), 0), dtype=np.int64),)


def _h_replicate(it: I, e: ir.Replicate, env, loc):
    n = max(int(it.atom(e.n, env)), 0)
    v = it.atom(e.value, env)
    if isinstance(v, np.ndarray):
        return (np.broadcast_to(v, (n,) + v.shape).copy(),)
    return (np.full(n, v, dtype=v.dtype),)


def _h_copy(it: I, e: ir.Copy, env, loc):
    return (env[e.arr.name].copy(),)


def _h_concat(it: I, e: ir.Concat, env, loc):
    vals = [env[a.name] for a in e.arrs]
    full = [v for v in vals if v.shape[0] > 0]
    if not full:
        return (vals[0].copy(),)
    inner = full[0].shape[1:]
    for a, v in zip(e.arrs, vals):
        if v.shape[0] > 0 and v.shape[1:] != inner:
            raise ShapeError(f"concat: inner shapes {inner} and {v.shape[1:]} differ{_at(loc)}")
    return (np.concatenate(full),)


def _h_rotate(it: I, e: ir.Rotate, env, loc):
    arr = env[e.arr.name]
    n = arr.shape[0]
    if n == 0:
        return (arr.copy(),)
    r = int(it.atom(e.r, env)) % n
    return (np.concatenate((arr[r:], arr[:r])),)


def _h_transpose(it: I, e: ir.Transpose, env, loc):
    return (np.swapaxes(env[e.arr.name], 0, 1),)


def _h_reshape(it: I, e: ir.Reshape, env, loc):
    arr = env[e.arr.name]
    shape = tuple(int(it.atom(a, env)) for a in e.shape)
    if any(d < 0 for d in shape) or math.prod(shape) != arr.size:
        raise ShapeError(f"cannot reshape an array of shape {arr.shape} into "
                         f"{shape}{_at(loc)}")
    return (arr.reshape(shape),)


def _h_map(it: I, e: ir.Map, env, loc):
    w = int(it.atom(e.width, env))
    arrs = [env[a.name] for a in e.arrs]
    _check_width(w, e.arrs, arrs, loc, "map")
    lam = e.lam
    outs = [[] for _ in lam.ret]
    rows = zip(*arrs) if arrs else repeat((), max(w, 0))
    body, params = lam.body, lam.params
    for row in rows:
        _bind_all(env, params, row)
        for o, r in zip(outs, it.body(body, env)):
            o.append(r)
    it.end_lambda(lam, env)
    inner = _empty_dims(it, e, env) if w <= 0 else repeat(None)
    return [_stack(o, t, loc, "map", inner=d) for o, t, d in zip(outs, lam.ret, inner)]


def _empty_dims(it: I, e: ir.Map, env) -> list:
    """Per result of an empty map, the inner dimensions of its rows (None: 0)."""
    if e.empty_dims is None:
        return [None] * len(e.lam.ret)
    dims = iter([int(it.atom(a, env)) for a in e.empty_dims])
    return [None if isinstance(t, ScalarType) else [next(dims) for _ in range(t.rank)]
            for t in e.lam.ret]


def _h_reduce(it: I, e: ir.Reduce, env, loc):
    w = int(it.atom(e.width, env))
    arrs = [env[a.name] for a in e.arrs]
    _check_width(w, e.arrs, arrs, loc, "reduce")
    acc = [it.atom(a, env) for a in e.neutral]
    lam = e.lam
    for row in zip(*arrs):
        acc = it.apply(lam, env, (*acc, *row))
    it.end_lambda(lam, env)
    return acc


def _h_scan(it: I, e: ir.Scan, env, loc):
    w = int(it.atom(e.width, env))
    arrs = [env[a.name] for a in e.arrs]
    _check_width(w, e.arrs, arrs, loc, "scan")
    acc = [it.atom(a, env) for a in e.neutral]
    shapes = [getattr(a, "shape", ()) for a in acc]
    lam = e.lam
    outs = [[] for _ in acc]
    for row in zip(*arrs):
        acc = it.apply(lam, env, (*acc, *row))
        for o, r in zip(outs, acc):
            o.append(r)
    it.end_lambda(lam, env)
    return [_stack(o, t, loc, "scan", inner=s) for o, t, s in zip(outs, lam.ret, shapes)]


def _h_filter(it: I, e: ir.Filter, env, loc):
    w = int(it.atom(e.width, env))
    arrs = [env[a.name] for a in e.arrs]
    _check_width(w, e.arrs, arrs, loc, "filter")
    lam = e.lam
    keep = [bool(it.apply(lam, env, row)[0]) for row in zip(*arrs)]
    it.end_lambda(lam, env)
    mask = np.array(keep, dtype=bool)
    return [a[mask] for a in arrs]


def _dest_setup(it: I, e, env, loc, what):
    w = int(it.atom(e.width, env))
    idxs = env[e.idxs.name]
    vals = [env[a.name] for a in e.vals]
    _check_width(w, (e.idxs, *e.vals), (idxs, *vals), loc, what)
    res = [env[d.name].copy() for d in e.dests]
    n = res[0].shape[0]
    for d, r, a, v in zip(e.dests, res, e.vals, vals):
        if r.shape[0] != n:
            raise ShapeError(f"{what}: destinations of lengths {n} and {r.shape[0]}{_at(loc)}")
        if w > 0 and v.shape[1:] != r.shape[1:]:
            raise ShapeError(f"{what}: values have rows of shape {v.shape[1:]} but the "
                             f"destination has rows of shape {r.shape[1:]}{_at(loc)}")
    return idxs, vals, res, n


def _h_rbi(it: I, e: ir.ReduceByIndex, env, loc):
    idxs, vals, res, n = _dest_setup(it, e, env, loc, "reduce_by_index")
    lam = e.lam
    for j, i in enumerate(idxs.tolist()):
        if 0 <= i < n:
            out = it.apply(lam, env, [r[i] for r in res] + [v[j] for v in vals])
            for r, o in zip(res, out):
                if r.ndim > 1 and o.shape != r.shape[1:]:
                    raise ShapeError(f"reduce_by_index: the operator returned shape "
                                     f"{o.shape}, expected {r.shape[1:]}{_at(loc)}")
                r[i] = o
    it.end_lambda(lam, env)
    return res


def _h_scatter(it: I, e: ir.Scatter, env, loc):
    idxs, vals, res, n = _dest_setup(it, e, env, loc, "scatter")
    with np.errstate(all="ignore"):
        idx = idxs.astype(np.int64)
    ok = (idx >= 0) & (idx < n)
    if (idxs.dtype.kind == "u"):
        ok &= idxs < n
    sel = idx[ok]
    # last wins (LANGUAGE.md): numpy does not promise which of duplicate
    # fancy-assignment indices wins, so keep only each index's last position
    _, first_rev = np.unique(sel[::-1], return_index=True)
    last = len(sel) - 1 - first_rev
    pos = np.flatnonzero(ok)[last]
    for r, v in zip(res, vals):
        r[sel[last]] = v[pos]
    return res


_DISPATCH = {
    ir.AtomExp: _h_atom, ir.BinOp: _h_binop, ir.UnOp: _h_unop, ir.Convert: _h_convert,
    ir.Select: _h_select, ir.Call: _h_call, ir.If: _h_if, ir.Loop: _h_loop,
    ir.Assert: _h_assert, ir.Index: _h_index, ir.Slice: _h_slice, ir.Update: _h_update,
    ir.Size: _h_size, ir.ArrayLit: _h_arraylit, ir.Iota: _h_iota,
    ir.Replicate: _h_replicate, ir.Copy: _h_copy, ir.Concat: _h_concat,
    ir.Rotate: _h_rotate, ir.Transpose: _h_transpose, ir.Reshape: _h_reshape,
    ir.Map: _h_map, ir.Reduce: _h_reduce, ir.Scan: _h_scan, ir.Filter: _h_filter,
    ir.ReduceByIndex: _h_rbi, ir.Scatter: _h_scatter,
}


# ---------------------------------------------------------------------------
# Public API


def coerce_value(v, t: Type, what: str = "argument"):
    """v as a value of core type t: a numpy scalar or ndarray of the exact dtype."""
    if isinstance(t, ScalarType):
        if isinstance(v, np.ndarray):
            if v.ndim != 0:
                raise TypeError(f"{what}: expected a {t} scalar, got an array of rank {v.ndim}")
            v = v[()]
        if isinstance(v, np.generic) and v.dtype == t.dtype:
            return v
        return t.dtype.type(v)
    arr = np.asarray(v, dtype=t.elem.dtype)
    if arr.ndim != t.rank:
        if arr.size == 0 and arr.ndim < t.rank:
            return arr.reshape(arr.shape + (0,) * (t.rank - arr.ndim))
        raise TypeError(f"{what}: expected an array of rank {t.rank} ({t}), got rank {arr.ndim}")
    return arr


def _run(it: Interpreter, fun: ir.FunDef, args: list) -> list:
    if len(args) != len(fun.params):
        raise TypeError(f"{fun.name} takes {len(fun.params)} arguments, got {len(args)}")
    vals = [coerce_value(a, p.type, f"argument {p.name} of {fun.name}")
            for a, p in zip(args, fun.params)]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return it.call(fun, vals)


def run_function(program: ir.Program, name: str, args: list) -> list:
    """Runs FunDef `name` on args (coerced to the parameter types); its results."""
    if name not in program.functions:
        raise KeyError(f"no function {name!r} in the program")
    return _run(Interpreter(program), program.functions[name], list(args))


def run_entry(program: ir.Program, name: str, flat_args: list) -> list:
    """Runs entry `name` on its flattened arguments; the flattened results."""
    if name not in program.entries:
        raise KeyError(f"no entry {name!r} in the program")
    return _run(Interpreter(program), program.entry_fun(name), list(flat_args))
