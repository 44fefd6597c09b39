"""for and while loops -> ir.Loop with loop-carried values.

The carried names are those bound before the loop and assigned (or updated
in place) in its body, found syntactically before the body is translated.
A weak initial value takes its default type (i64, f64, bool). Names first
bound inside the body stay inside it. A carried value may be a plain Python
number in Python mode (ScalarV.py) when its initial value or a value the
body assigns may be one: the body is translated again until those PyInfos
are stable (a growing value set widens to True). An array carried through
the loop is
owned in the body only if it is owned before the loop and the body keeps
it owned (otherwise the body is translated again with it not owned, which
reports an in-place update of it).
"""
from __future__ import annotations

import libcst as cst

from ..core import ir
from ..core.types import BOOL, I64, flatten_stype
from ..errors import CompileError
from .coerce import coerce, harden, has_weak, is_weak
from .context import Ctx, LocalDef, Unbound
from .exprs import translate_condition
from .iteration import ArraySource, iter_source
from .stmts import bind_target, block_stmts, translate_block
from .values import (ArrayV, ScalarV, TupleV, Value, flatten_value, or_py, py_flags, rebuild_value,
                     type_name, value_stype, widen_py, with_py)


class _Assigned(cst.CSTVisitor):
    """Names assigned anywhere in a loop body (not inside nested defs/lambdas)."""

    def __init__(self):
        self.names: list[str] = []
        self.updated: set[str] = set()

    def _target(self, t):
        if isinstance(t, cst.Name):
            self.names.append(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            for e in t.elements:
                self._target(e.value)
        elif isinstance(t, cst.StarredElement):
            self._target(t.value)
        elif isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name):
            self.names.append(t.value.value)
            self.updated.add(t.value.value)

    def visit_Assign(self, node):
        for t in node.targets:
            self._target(t.target)

    def visit_AnnAssign(self, node):
        self._target(node.target)

    def visit_AugAssign(self, node):
        self._target(node.target)

    def visit_FunctionDef(self, node):
        return False

    def visit_Lambda(self, node):
        return False


def carried_names(ctx: Ctx, body, targets=None) -> tuple[list[str], set[str]]:
    """The names bound before the loop that the body (or, for a for loop, its
    `targets`) assigns, and the names the body updates in place."""
    v = _Assigned()
    if targets is not None:
        v._target(targets)
    body.visit(v)
    out = []
    for n in dict.fromkeys(v.names):
        b = ctx.scope.lookup(n)
        if b is not None and not isinstance(b, (Unbound, LocalDef)):
            out.append(n)
    return out, v.updated


def _disowned(v: Value) -> Value:
    if isinstance(v, ArrayV):
        return ArrayV(v.stype, v.parts, 0, v.from_list, v.py)
    if isinstance(v, TupleV):
        return TupleV(tuple(_disowned(e) for e in v.elems), v.record)
    return v


def _owned_arrays(v: Value, out: list):
    if isinstance(v, ArrayV):
        out.append(v.buffer)
    elif isinstance(v, TupleV):
        for e in v.elems:
            _owned_arrays(e, out)
    return out


def _with_meta(v: Value, like: Value) -> Value:
    """v with the buffers/from_list/py flags of `like` (same structure)."""
    if isinstance(v, ArrayV):
        return ArrayV(v.stype, v.parts, like.buffer, like.from_list, like.py)
    if isinstance(v, TupleV):
        return TupleV(tuple(_with_meta(a, b) for a, b in zip(v.elems, like.elems)), v.record)
    if isinstance(v, ScalarV) and not v.weak:
        return ScalarV(v.atom, py=like.py)
    return v


def run_loop(ctx: Ctx, st, body_block, make_form, bind_iter, targets=None):
    """Shared by for and while. make_form(ctx, params_scope) -> (form, index or None);
    bind_iter(body_ctx, index) binds the loop target. A for loop's target
    names that are bound before the loop are carried too, so after the loop
    they hold the last element (or their old value when there was none), as
    in Python."""
    names, updated = carried_names(ctx, body_block, targets)
    weak_inits = {n: ctx.scope.lookup(n) for n in names if is_weak(ctx.scope.lookup(n))}
    inits = {n: harden(ctx.scope.lookup(n), ctx.src, ctx.scope.origin(n) or st) for n in names}
    disown: set[str] = set()
    carried_py = {n: py_flags(inits[n]) for n in names}
    # each retry disowns an array or widens the PyInfo of a carried part: finitely many
    for _attempt in range(3 + 3 * sum(len(f) for f in carried_py.values())):
        try:
            result = _try_loop(ctx, st, body_block, names, inits, disown, carried_py, make_form,
                               bind_iter)
        except CompileError as err:
            explain_weak_init(err, weak_inits)
            raise
        if isinstance(result, set):
            disown |= result
            continue
        if isinstance(result, dict):
            carried_py = result
            continue
        break
    else:
        raise ctx.error(st, "internal error: the loop's carried values do not settle",
                        hint="this is a bug in PyShark; please report it")
    loop, params_vals, bctx = result
    outs = list(ctx.b.bind(loop, loc=ctx.loc(st), hints=[p.name.rsplit("_", 1)[0] for p in loop.params]))
    for n in names:
        pv = params_vals[n]
        k = len(flatten_value(pv))
        ctx.scope.set(n, _with_meta(rebuild_value(value_stype(pv), outs[:k]), pv), st)
        outs = outs[k:]
    for n, v in bctx.scope.vars.items():
        if n not in names and ctx.scope.bound(n) is None:
            ctx.scope.set(n, Unbound(f"'{n}' is bound only inside the loop body (Python would fail "
                                     f"if the loop ran zero times); bind it before the loop"))


def explain_weak_init(err: CompileError, weak_inits: dict) -> None:
    """A type clash inside a loop often comes from a carried constant that
    started at its default type (`s = 0.0` is f64): say so in the hint."""
    if not weak_inits or "mixed-type" not in err.message:
        return
    line = err.source_line or ""
    for n, v in weak_inits.items():
        if n in line and isinstance(v, ScalarV):
            default = type_name(v.type)
            other = next((t.strip(";,") for t in err.message.split()
                          if t.startswith("ps.") and t.strip(";,") != default), None)
            want = other or "the type you need"
            err.hint = (f"'{n}' is carried through the loop and starts as the constant "
                        f"{v.atom.value!r}, which is {default}; write {n} = {want}({v.atom.value!r}) "
                        f"before the loop")
            return


def _try_loop(ctx, st, body_block, names, inits, disown, carried_py, make_form, bind_iter):
    """The ir.Loop, its parameters' values and the body context; or the set
    of carried arrays the body does not keep owned, or the carried PyInfos
    when the body may assign Python numbers (or values) the parameters did
    not have (the caller then translates the body again)."""
    params: list[ir.Var] = []
    params_vals: dict[str, Value] = {}
    for n in names:
        init = inits[n]
        if n in disown:
            init = _disowned(init)
        vs = [ctx.b.var(t, n) for t in flatten_stype(value_stype(init))]
        params += vs
        params_vals[n] = with_py(_with_meta(rebuild_value(value_stype(init), vs), init),
                                 carried_py[n])
    pscope = ctx.scope.child()
    for n in names:
        pscope.set(n, params_vals[n])
    form, index = make_form(ctx.with_scope(pscope, b=ctx.b.sub()), pscope)
    bctx = ctx.with_scope(pscope.child(), b=ctx.b.sub())
    ctx.frame.loop_depth += 1
    ctx.fs.followers.append([st])
    try:
        bind_iter(bctx, index)
        translate_block(bctx, block_stmts(body_block), False)
    finally:
        ctx.frame.loop_depth -= 1
        ctx.fs.followers.pop()
    results = []
    lose = set()
    grown = dict(carried_py)
    for n in names:
        v = bctx.scope.lookup(n)
        if isinstance(v, Unbound):
            raise ctx.error(st, f"'{n}' is rebound only on some paths through the loop body "
                                f"({v.message})")
        if isinstance(v, LocalDef):
            raise ctx.error(st, f"'{n}' changes from a value to a function in the loop")
        want = value_stype(params_vals[n])
        if has_weak(v):
            # a constant assigned in the body stays a Python number in Python mode
            v = coerce(v, want, ctx.src, bctx.scope.origin(n) or st, strict=True,
                       what=f"loop-carried '{n}' (carried as {type_name(want)})")
        try:
            v = coerce(v, want, ctx.src, st, strict=True, what=f"loop-carried '{n}'")
        except CompileError:
            raise ctx.error(st, f"the loop changes the type of '{n}' from {type_name(want)} to "
                                f"{type_name(value_stype(v))}",
                            hint=f"give '{n}' its final type before the loop, e.g. "
                                 f"{type_name(value_stype(v))}(...)") from None
        before = _owned_arrays(params_vals[n], [])
        after = _owned_arrays(v, [])
        if any(b > 0 and a <= 0 for b, a in zip(before, after)) and n not in disown:
            lose.add(n)
        grown[n] = widen_py(carried_py[n], or_py(carried_py[n], py_flags(v)))
        results += flatten_value(v)
    if lose:
        return lose
    if grown != carried_py:
        return grown
    body = bctx.b.body(results)
    init_atoms = [a for n in names for a in flatten_value(inits[n])]
    return ir.Loop(tuple(params), tuple(init_atoms), form, body), params_vals, bctx


def translate_for(ctx: Ctx, st: cst.For) -> None:
    if st.orelse is not None:
        raise ctx.error(st.orelse, "'for ... else' is not supported")
    if st.asynchronous is not None:
        raise ctx.error(st, "'async for' is not supported")
    src = iter_source(ctx, st.iter)
    if isinstance(src, ArraySource):
        _, updated = carried_names(ctx, st.body)
        iterated = {abs(a.buffer) for a in src.arrays if a.buffer}
        for n in updated:
            v = ctx.scope.lookup(n)
            if isinstance(v, ArrayV) and v.buffer and abs(v.buffer) in iterated:
                raise ctx.error(st.iter, f"the loop iterates over '{n}' while updating it in place",
                                hint=f"iterate over range(len({n})) and index {n}[i]")

    def make_form(fctx, pscope):
        k = ctx.b.var(I64, "k")
        return ir.ForLoop(k, src.width), k

    def bind_iter(bctx, k):
        bind_target(bctx, st.target, src.element_at(bctx, k), st.target)
    run_loop(ctx, st, st.body, make_form, bind_iter, st.target)


def translate_while(ctx: Ctx, st: cst.While) -> None:
    if st.orelse is not None:
        raise ctx.error(st.orelse, "'while ... else' is not supported")

    def make_form(cctx, pscope):
        c = translate_condition(cctx, st.test)
        return ir.WhileLoop(cctx.b.body([c.atom])), None

    def bind_iter(bctx, _):
        pass
    run_loop(ctx, st, st.body, make_form, bind_iter)
