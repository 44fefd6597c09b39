"""Type checker of the core IR.

The translator and every pass must produce IR that passes this check; a
failure is a bug in PyShark, reported as InternalCompilerError naming the
function, the offending statement (pretty-printed) and its source location.

Besides typing it checks SSA (each name bound once per FunDef) and a simple
uniqueness discipline for Update: an array an Update consumes (directly, or
through an alias made by AtomExp/Index/Slice/Transpose/Reshape/If) must not be
used afterwards in the same body; loop bodies and lambdas may not consume
arrays bound outside them (except loop parameters, which then consume their
initial values); parameters of functions and lambdas are not owned.
"""
from __future__ import annotations

from typing import Optional

from . import ir, ops
from ..errors import InternalCompilerError
from .pretty import pretty_atom, pretty_stm
from .traverse import uses
from .typeof import exp_types, index_result
from .types import BOOL, I64, ArrayType, ScalarType, flatten_stype


def _is_int(t) -> bool:
    return isinstance(t, ScalarType) and t.is_int


def _short(text: str, max_lines: int = 12) -> str:
    lines = text.split("\n")
    if len(lines) > max_lines:
        lines = lines[:max_lines] + ["    ..."]
    return "\n".join(lines)


class _Fail(Exception):
    """A check failure below statement level; the statement is added above."""


def _fail(msg: str):
    raise _Fail(msg)


class _FunChecker:
    def __init__(self, fun: ir.FunDef, program: Optional[ir.Program]):
        self.fun = fun
        self.program = program
        self.bound: set[str] = set()
        # May-alias roots of array names (a name's storage may be that of these).
        self.roots: dict[str, frozenset] = {}
        # Names that are not owned: function and lambda parameters.
        self.unowned: set[str] = set()

    # -- errors --------------------------------------------------------------
    def error(self, msg: str, stm: Optional[ir.Let] = None):
        text = f"core IR check failed in function '{self.fun.name}': {msg}"
        if stm is not None:
            text += "\n  in: " + _short(pretty_stm(stm, "      "))
            loc = stm.loc
        else:
            loc = self.fun.loc
        if loc is not None:
            text += f"\n  at {loc}"
        raise InternalCompilerError(text)

    # -- binding -------------------------------------------------------------
    def bind(self, v, scope: dict, unowned: bool = False):
        if not isinstance(v, ir.Var):
            _fail(f"expected a Var to bind, got {v!r}")
        if not isinstance(v.type, (ScalarType, ArrayType)):
            _fail(f"name {v.name} has a non-type {v.type!r}")
        if v.name in self.bound:
            _fail(f"name {v.name} is bound more than once (the IR must be in SSA form)")
        self.bound.add(v.name)
        scope[v.name] = v.type
        if isinstance(v.type, ArrayType):
            self.roots[v.name] = frozenset((v.name,))
            if unowned:
                self.unowned.add(v.name)

    def atom(self, a, scope: dict, what: str = "operand"):
        if isinstance(a, ir.Var):
            if a.name not in scope:
                _fail(f"{what} {a.name} is not bound here")
            if scope[a.name] != a.type:
                _fail(f"{what} {a.name} is used with type {a.type} but bound with type "
                      f"{scope[a.name]}")
            return a.type
        if isinstance(a, ir.Const):
            self.const(a)
            return a.type
        _fail(f"{what} {a!r} is not an atom")

    def const(self, c: ir.Const):
        t = c.type
        if not isinstance(t, ScalarType):
            _fail(f"constant {c!r} has non-scalar type {t!r}")
        v = c.value
        if t.is_bool:
            if not isinstance(v, bool):
                _fail(f"bool constant {v!r} is not a bool")
        elif t.is_int:
            if isinstance(v, bool) or not isinstance(v, int):
                _fail(f"{t} constant {v!r} is not an int")
            lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed \
                else (0, (1 << t.bits) - 1)
            if not lo <= v <= hi:
                _fail(f"constant {v} is out of range for {t}")
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            _fail(f"{t} constant {v!r} is not a number")

    def array(self, a, scope, what="array") -> ArrayType:
        if not isinstance(a, ir.Var):
            _fail(f"{what} {a!r} must be a Var")
        t = self.atom(a, scope, what)
        if not isinstance(t, ArrayType):
            _fail(f"{what} {a.name} has type {t}, expected an array")
        return t

    def int_atom(self, a, scope, what):
        t = self.atom(a, scope, what)
        if not _is_int(t):
            _fail(f"{what} {pretty_atom(a)} has type {t}, expected an integer type")

    def scalar(self, a, scope, what="operand") -> ScalarType:
        t = self.atom(a, scope, what)
        if not isinstance(t, ScalarType):
            _fail(f"{what} {pretty_atom(a)} has type {t}, expected a scalar")
        return t

    def bool_atom(self, a, scope, what):
        t = self.atom(a, scope, what)
        if t != BOOL:
            _fail(f"{what} {pretty_atom(a)} has type {t}, expected bool")

    def alias_roots(self, name: str) -> frozenset:
        return self.roots.get(name, frozenset())

    # -- bodies --------------------------------------------------------------
    def body(self, body: ir.Body, scope: dict, ret, what: str) -> set:
        """Checks a body in a copy of scope; returns the outer names it consumes."""
        if not isinstance(body, ir.Body):
            _fail(f"{what} is not a Body: {body!r}")
        scope = dict(scope)
        local: set[str] = set()
        consumed: dict[str, ir.Let] = {}       # alias roots -> consuming statement
        for stm in body.stms:
            try:
                cons = self.stm(stm, scope)
                used = uses(stm.exp)
                self.check_not_consumed(used, consumed)
            except _Fail as ex:
                self.error(str(ex), stm)
            for v in stm.pat:
                local.add(v.name)
            for name in cons:
                for r in self.alias_roots(name) | {name}:
                    consumed.setdefault(r, stm)
        try:
            got = tuple(self.atom(a, scope, f"result of {what}") for a in body.result)
            self.check_not_consumed(uses(body.result), consumed)
        except _Fail as ex:
            self.error(f"{ex} (in the result of {what})")
        if ret is not None and got != tuple(ret):
            self.error(f"{what} returns {_tys(got)} but {_tys(ret)} is expected"
                       f" (result: {', '.join(map(pretty_atom, body.result))})")
        outer = set()
        for name, stm in consumed.items():
            if name not in local and name in scope:
                outer.add(name)
        return outer

    def check_not_consumed(self, used: set, consumed: dict):
        for name in sorted(used):
            for r in sorted(self.alias_roots(name) | {name}):
                if r in consumed:
                    c = consumed[r]
                    where = f" at {c.loc}" if c.loc else ""
                    via = "" if r == name else f" (which aliases {r})"
                    _fail(f"array {name}{via} is used after being consumed by "
                          f"`{_short(pretty_stm(c), 1)}`{where}")

    def lambda_(self, lam: ir.Lambda, scope: dict, param_types, ret, what: str):
        if not isinstance(lam, ir.Lambda):
            _fail(f"{what} is not a Lambda")
        if len(lam.params) != len(param_types):
            _fail(f"{what} takes {len(lam.params)} parameters, expected {len(param_types)}")
        for i, (p, t) in enumerate(zip(lam.params, param_types)):
            if not isinstance(p, ir.Var) or p.type != t:
                _fail(f"parameter {i} of {what} ({_bindtext(p)}) should have type {t}")
        if ret is not None and tuple(lam.ret) != tuple(ret):
            _fail(f"{what} declares result {_tys(lam.ret)}, expected {_tys(ret)}")
        inner = dict(scope)
        for p in lam.params:
            self.bind(p, inner, unowned=True)
        cons = self.body(lam.body, inner, lam.ret, what)
        if cons:
            _fail(f"{what} consumes {', '.join(sorted(cons))}, which it does not own"
                  " (a lambda may not update its parameters or captured arrays in place)")

    # -- statements ----------------------------------------------------------
    def stm(self, stm: ir.Let, scope: dict) -> set:
        if not isinstance(stm, ir.Let):
            _fail(f"not a Let: {stm!r}")
        e = stm.exp
        f = _CHECKS.get(type(e))
        if f is None:
            _fail(f"unknown expression {type(e).__name__}")
        cons = f(self, e, scope) or set()
        try:
            want = tuple(exp_types(e))
        except Exception as ex:        # malformed beyond what the rules above catch
            _fail(f"cannot type the expression: {type(ex).__name__}: {ex}")
        got = tuple(v.type for v in stm.pat)
        if got != want:
            _fail(f"the pattern has types {_tys(got)} but the expression gives {_tys(want)}")
        for v in stm.pat:
            self.bind(v, scope)
        # Aliases the new names carry.
        if isinstance(e, ir.AtomExp) and isinstance(e.atom, ir.Var) \
                or isinstance(e, (ir.Index, ir.Slice, ir.Transpose, ir.Reshape)):
            src = e.atom if isinstance(e, ir.AtomExp) else e.arr
            if isinstance(stm.pat[0].type, ArrayType):
                self.roots[stm.pat[0].name] = self.alias_roots(src.name) | {stm.pat[0].name}
                if self.alias_roots(src.name) & self.unowned:
                    self.unowned.add(stm.pat[0].name)
        elif isinstance(e, ir.If):
            for i, v in enumerate(stm.pat):
                if not isinstance(v.type, ArrayType):
                    continue
                extra = set()
                for b in (e.then_body, e.else_body):
                    r = b.result[i]
                    if isinstance(r, ir.Var) and r.name in scope and r.name not in cons:
                        extra |= self.alias_roots(r.name) - cons
                self.roots[v.name] = frozenset(extra | {v.name})
        for name in cons:
            owners = (self.alias_roots(name) | {name}) & self.unowned
            if owners:
                _fail(f"in-place update of {name}, which aliases the parameter "
                      f"{sorted(owners)[0]} that this function does not own (copy it first)")
        return cons


def _tys(ts) -> str:
    return "(" + ", ".join(str(t) for t in ts) + ")"


def _bindtext(p) -> str:
    return f"{p.name}: {p.type}" if isinstance(p, ir.Var) else repr(p)


# ---------------------------------------------------------------------------
# Per-expression rules. Each returns the set of outer names it consumes.


def _c_atomexp(c: _FunChecker, e: ir.AtomExp, s):
    c.atom(e.atom, s)


def _c_binop(c, e: ir.BinOp, s):
    op = ops.BINARY.get(e.op)
    if op is None:
        _fail(f"unknown binary operator {e.op!r}")
    tx, ty = c.scalar(e.x, s), c.scalar(e.y, s)
    if tx != ty:
        _fail(f"operands of {e.op} have different types {tx} and {ty}")
    if not op.accepts(tx):
        _fail(f"operator {e.op} is not defined on {tx}")


def _c_unop(c, e: ir.UnOp, s):
    op = ops.UNARY.get(e.op)
    if op is None:
        _fail(f"unknown unary operator {e.op!r}")
    t = c.scalar(e.x, s)
    if not op.accepts(t):
        _fail(f"operator {e.op} is not defined on {t}")


def _c_convert(c, e: ir.Convert, s):
    if not isinstance(e.to, ScalarType):
        _fail(f"conversion target {e.to!r} is not a scalar type")
    c.scalar(e.x, s)


def _c_select(c, e: ir.Select, s):
    c.bool_atom(e.cond, s, "select condition")
    tx, ty = c.atom(e.x, s), c.atom(e.y, s)
    if tx != ty:
        _fail(f"select branches have different types {tx} and {ty}")


def _c_call(c, e: ir.Call, s):
    if c.program is None or e.fn not in c.program.functions:
        _fail(f"call of unknown function {e.fn!r}")
    callee = c.program.functions[e.fn]
    if len(e.args) != len(callee.params):
        _fail(f"{e.fn} takes {len(callee.params)} arguments, got {len(e.args)}")
    for i, (a, p) in enumerate(zip(e.args, callee.params)):
        t = c.atom(a, s, f"argument {i}")
        if t != p.type:
            _fail(f"argument {i} of {e.fn} has type {t}, parameter {p.name} has {p.type}")
    if tuple(e.ret) != tuple(callee.ret):
        _fail(f"call declares result {_tys(e.ret)} but {e.fn} returns {_tys(callee.ret)}")


def _c_if(c, e: ir.If, s):
    c.bool_atom(e.cond, s, "if condition")
    a = c.body(e.then_body, s, e.ret, "the then branch")
    b = c.body(e.else_body, s, e.ret, "the else branch")
    return a | b


def _c_loop(c, e: ir.Loop, s):
    if len(e.params) != len(e.inits):
        _fail(f"loop has {len(e.params)} parameters but {len(e.inits)} initial values")
    for p, a in zip(e.params, e.inits):
        t = c.atom(a, s, "loop initial value")
        if not isinstance(p, ir.Var) or t != p.type:
            _fail(f"loop parameter {_bindtext(p)} is initialised with "
                  f"{pretty_atom(a)} of type {t}")
    inner = dict(s)
    for p in e.params:
        c.bind(p, inner)
    if isinstance(e.form, ir.ForLoop):
        t = c.atom(e.form.bound, s, "loop bound")
        if t != I64:
            _fail(f"for-loop bound {pretty_atom(e.form.bound)} has type {t}, expected i64")
        if e.form.index.type != I64:
            _fail(f"for-loop index {e.form.index.name} has type {e.form.index.type}, "
                  "expected i64")
        c.bind(e.form.index, inner)
    elif isinstance(e.form, ir.WhileLoop):
        cons = c.body(e.form.cond, inner, (BOOL,), "the while condition")
        if cons:
            _fail(f"the while condition consumes {', '.join(sorted(cons))}")
    else:
        _fail(f"unknown loop form {e.form!r}")
    cons = c.body(e.body, inner, tuple(p.type for p in e.params), "the loop body")
    out = set()
    pnames = {p.name: a for p, a in zip(e.params, e.inits)}
    for name in cons:
        if name in pnames:
            if isinstance(pnames[name], ir.Var):
                out.add(pnames[name].name)
        else:
            _fail(f"the loop body consumes {name}, bound outside the loop (it would be "
                  "updated on every iteration); make it a loop parameter")
    return out


def _c_assert(c, e: ir.Assert, s):
    c.bool_atom(e.cond, s, "assert condition")
    if e.error not in ir.ERROR_KINDS:
        _fail(f"unknown error kind {e.error!r} (one of {sorted(ir.ERROR_KINDS)})")
    if not isinstance(e.msg, str):
        _fail(f"assert message {e.msg!r} is not a string")


def _c_index(c, e: ir.Index, s):
    t = c.array(e.arr, s)
    if not 1 <= len(e.idxs) <= t.rank:
        _fail(f"{len(e.idxs)} indices into {e.arr.name} of rank {t.rank}")
    for a in e.idxs:
        c.int_atom(a, s, "index")


def _c_slice(c, e: ir.Slice, s):
    t = c.array(e.arr, s)
    if len(e.dims) > t.rank:
        _fail(f"{len(e.dims)} slice dimensions into {e.arr.name} of rank {t.rank}")
    for d in e.dims:
        if isinstance(d, ir.SliceDim):
            for a in (d.start, d.stop, d.step):
                if a is not None:
                    c.int_atom(a, s, "slice bound")
        else:
            c.int_atom(d, s, "index")


def _c_update(c, e: ir.Update, s):
    t = c.array(e.arr, s)
    if not 1 <= len(e.idxs) <= t.rank:
        _fail(f"{len(e.idxs)} indices into {e.arr.name} of rank {t.rank}")
    for a in e.idxs:
        c.int_atom(a, s, "index")
    vt = c.atom(e.value, s, "update value")
    want = index_result(t, len(e.idxs))
    if vt != want:
        _fail(f"update value {pretty_atom(e.value)} has type {vt}, expected {want}")
    return {e.arr.name}


def _c_size(c, e: ir.Size, s):
    t = c.array(e.arr, s)
    if not isinstance(e.dim, int) or not 0 <= e.dim < t.rank:
        _fail(f"size of dimension {e.dim} of {e.arr.name} of rank {t.rank}")


def _c_arraylit(c, e: ir.ArrayLit, s):
    if not isinstance(e.type, ArrayType):
        _fail(f"array literal type {e.type!r} is not an array type")
    row = e.type.row()
    for a in e.elems:
        t = c.atom(a, s, "array literal element")
        if t != row:
            _fail(f"array literal element {pretty_atom(a)} has type {t}, expected {row}")


def _c_iota(c, e: ir.Iota, s):
    c.int_atom(e.n, s, "iota length")


def _c_replicate(c, e: ir.Replicate, s):
    c.int_atom(e.n, s, "replicate count")
    c.atom(e.value, s, "replicate value")


def _c_copy(c, e, s):
    c.array(e.arr, s)


def _c_concat(c, e: ir.Concat, s):
    if not e.arrs:
        _fail("concat of no arrays")
    ts = [c.array(a, s) for a in e.arrs]
    if any(t != ts[0] for t in ts):
        _fail(f"concat of arrays of different types {_tys(ts)}")


def _c_rotate(c, e: ir.Rotate, s):
    c.int_atom(e.r, s, "rotation")
    c.array(e.arr, s)


def _c_transpose(c, e: ir.Transpose, s):
    t = c.array(e.arr, s)
    if t.rank < 2:
        _fail(f"transpose of {e.arr.name} of rank {t.rank}")


def _c_reshape(c, e: ir.Reshape, s):
    c.array(e.arr, s)
    if not e.shape:
        _fail("reshape to an empty shape")
    for a in e.shape:
        c.int_atom(a, s, "reshape dimension")


def _rows(c, arrs, s, what="input"):
    return [c.array(a, s, what).row() for a in arrs]


def _c_map(c, e: ir.Map, s):
    c.int_atom(e.width, s, "map width")
    rows = _rows(c, e.arrs, s)
    c.lambda_(e.lam, s, rows, None, "the map lambda")
    want = sum(t.rank for t in e.lam.ret if not isinstance(t, ScalarType))
    for dims, what in ((e.empty_dims, "empty"), (e.row_dims, "row")):
        if dims is None:
            continue
        if len(dims) != want:
            _fail(f"map has {len(dims)} {what} dimensions for results of "
                  f"{want} inner dimensions")
        for a in dims:
            c.int_atom(a, s, f"{what} dimension")


def _c_reduce_like(c, e, s, name):
    c.int_atom(e.width, s, f"{name} width")
    rows = _rows(c, e.arrs, s)
    if len(e.neutral) != len(e.arrs):
        _fail(f"{name} has {len(e.neutral)} neutral elements for {len(e.arrs)} arrays")
    nts = [c.atom(a, s, "neutral element") for a in e.neutral]
    for i, (nt, rt) in enumerate(zip(nts, rows)):
        if nt != rt:
            _fail(f"neutral element {i} has type {nt} but the elements have type {rt}")
    c.lambda_(e.lam, s, nts + rows, nts, f"the {name} operator")


def _c_reduce(c, e: ir.Reduce, s):
    _c_reduce_like(c, e, s, "reduce")


def _c_scan(c, e: ir.Scan, s):
    _c_reduce_like(c, e, s, "scan")


def _c_filter(c, e: ir.Filter, s):
    c.int_atom(e.width, s, "filter width")
    if not e.arrs:
        _fail("filter of no arrays")
    rows = _rows(c, e.arrs, s)
    c.lambda_(e.lam, s, rows, (BOOL,), "the filter predicate")


def _c_dests(c, e, s, name):
    c.int_atom(e.width, s, f"{name} width")
    if not e.dests:
        _fail(f"{name} with no destination arrays")
    if len(e.vals) != len(e.dests):
        _fail(f"{name} has {len(e.dests)} destinations but {len(e.vals)} value arrays")
    it = c.array(e.idxs, s, "index array")
    if it.rank != 1 or not it.elem.is_int:
        _fail(f"index array {e.idxs.name} has type {it}, expected a 1-D integer array")
    dts = [c.array(a, s, "destination") for a in e.dests]
    vts = [c.array(a, s, "value array") for a in e.vals]
    for i, (d, v) in enumerate(zip(dts, vts)):
        if d != v:
            _fail(f"value array {e.vals[i].name} has type {v} but destination "
                  f"{e.dests[i].name} has {d}")
    return [d.row() for d in dts]


def _c_rbi(c, e: ir.ReduceByIndex, s):
    rows = _c_dests(c, e, s, "reduce_by_index")
    if len(e.neutral) != len(rows):
        _fail(f"reduce_by_index has {len(e.neutral)} neutral elements for "
              f"{len(rows)} destinations")
    for i, (a, r) in enumerate(zip(e.neutral, rows)):
        t = c.atom(a, s, "neutral element")
        if t != r:
            _fail(f"neutral element {i} has type {t}, expected {r}")
    c.lambda_(e.lam, s, rows + rows, rows, "the reduce_by_index operator")


def _c_scatter(c, e: ir.Scatter, s):
    _c_dests(c, e, s, "scatter")


_CHECKS = {
    ir.AtomExp: _c_atomexp, ir.BinOp: _c_binop, ir.UnOp: _c_unop, ir.Convert: _c_convert,
    ir.Select: _c_select, ir.Call: _c_call, ir.If: _c_if, ir.Loop: _c_loop,
    ir.Assert: _c_assert, ir.Index: _c_index, ir.Slice: _c_slice, ir.Update: _c_update,
    ir.Size: _c_size, ir.ArrayLit: _c_arraylit, ir.Iota: _c_iota,
    ir.Replicate: _c_replicate, ir.Copy: _c_copy, ir.Concat: _c_concat,
    ir.Rotate: _c_rotate, ir.Transpose: _c_transpose, ir.Reshape: _c_reshape,
    ir.Map: _c_map, ir.Reduce: _c_reduce, ir.Scan: _c_scan, ir.Filter: _c_filter,
    ir.ReduceByIndex: _c_rbi, ir.Scatter: _c_scatter,
}


# ---------------------------------------------------------------------------
# Public API


def check_fundef(fun: ir.FunDef, program: Optional[ir.Program] = None) -> None:
    """Raises InternalCompilerError on the first problem in fun."""
    c = _FunChecker(fun, program)
    scope: dict = {}
    try:
        for p in fun.params:
            c.bind(p, scope, unowned=True)
        ret = tuple(fun.ret)
        for t in ret:
            if not isinstance(t, (ScalarType, ArrayType)):
                _fail(f"result type {t!r} is not a core type")
    except _Fail as ex:
        c.error(str(ex))
    c.body(fun.body, scope, ret, "the function body")


def check_program(program: ir.Program) -> None:
    """Checks every FunDef and that each Entry matches its FunDef."""
    for name, fun in program.functions.items():
        if fun.name != name:
            raise InternalCompilerError(
                f"core IR check failed: function {fun.name!r} is registered as {name!r}")
        check_fundef(fun, program)
    for name, entry in program.entries.items():
        where = f" (at {entry.loc})" if entry.loc else ""
        if entry.name != name:
            raise InternalCompilerError(
                f"core IR check failed: entry {entry.name!r} is registered as {name!r}{where}")
        fun = program.functions.get(name)
        if fun is None:
            raise InternalCompilerError(
                f"core IR check failed: entry {name!r} has no FunDef{where}")
        want = [t for p in entry.params for t in flatten_stype(p.stype)]
        got = [p.type for p in fun.params]
        if got != want:
            raise InternalCompilerError(
                f"core IR check failed: entry {name!r} flattens its parameters to "
                f"{_tys(want)} but its FunDef takes {_tys(got)}{where}")
        want_ret = tuple(flatten_stype(entry.ret))
        if tuple(fun.ret) != want_ret:
            raise InternalCompilerError(
                f"core IR check failed: entry {name!r} flattens its result to "
                f"{_tys(want_ret)} but its FunDef returns {_tys(fun.ret)}{where}")
