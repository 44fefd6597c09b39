"""Functions: FunV implementations (lambdas, local defs, top-level defs,
record constructors), local `def` statements and top-level FunDefs.

Lambdas and local defs are inlined where they are applied (they may capture
names of the enclosing function, with Python's late binding: a local def's
body is translated in a scope below the scope of its use site, so a captured
name has the value it holds there, not at the def); top-level defs become FunDefs and are
called with ir.Call after strict coercion of the arguments. Where an
argument may be a plain Python number in Python mode (pynum.py), the def is
also checked with it (function_summary), which gives the result's PyInfos.
"""
from __future__ import annotations

import dataclasses

from dataclasses import dataclass
from typing import Optional, Sequence

import libcst as cst

from ..core import ir
from ..core.types import SRecord, SType, flatten_stype
from .annotations import parse_type
from ..errors import CompileError
from .builder import Builder, NameGen
from .coerce import coerce
from .context import Ctx, Frame, FunState, LocalDef, Scope
from .scoping import check_no_code_after_return, local_names
from .values import (RUNTIME, ArrayV, FunV, ScalarV, TupleV, Value, flatten_value, py_flags,
                     rebuild_value)


def _arg_nodes(node, n: int) -> list:
    if isinstance(node, cst.Call) and len(node.args) == n:
        return [a.value for a in node.args]
    return [node] * n


class UserFunV(FunV):
    """Common shape: named params, optional declared types, `call` with arg nodes."""

    def param_names(self) -> list[str]:
        raise NotImplementedError

    @property
    def arity(self) -> Optional[int]:
        return len(self.param_names())

    def apply(self, ctx, args: Sequence[Value], node) -> Value:
        return self.call(ctx, list(args), _arg_nodes(node, len(args)), node)

    def check_arity(self, ctx, args, node):
        if len(args) != len(self.param_names()):
            raise ctx.error(node, f"'{self.name}' takes {len(self.param_names())} arguments, "
                                  f"got {len(args)}")


def check_plain_params(src, p: cst.Parameters, what: str) -> list[cst.Param]:
    """Positional parameters only: no *args, **kwargs, keyword-only or defaults."""
    if isinstance(p.star_arg, cst.Param):
        raise src.error(p.star_arg, f"'*{p.star_arg.name.value}' parameters (*args) are not "
                                    f"supported; pass an array instead")
    if p.kwonly_params or isinstance(p.star_arg, cst.ParamStar):
        bad = p.kwonly_params[0] if p.kwonly_params else p.star_arg
        raise src.error(bad, f"keyword-only parameters of {what} are not supported",
                        hint="make them ordinary positional parameters")
    if p.star_kwarg is not None:
        raise src.error(p.star_kwarg, f"'**{p.star_kwarg.name.value}' parameters are not supported")
    out = list(p.posonly_params) + list(p.params)
    for q in out:
        if q.default is not None:
            raise src.error(q, f"default parameter values are not supported ('{q.name.value}')",
                            hint="pass every argument explicitly")
    return out


class LambdaFunV(UserFunV):
    def __init__(self, node: cst.Lambda, scope: Scope, src):
        self.node = node
        self.scope = scope
        self.name = "<lambda>"
        self._params = [q.name.value for q in check_plain_params(src, node.params, "lambdas")]
        self._locals = local_names(src, node)

    def param_names(self):
        return self._params

    def call(self, ctx, args, arg_nodes, node) -> Value:
        self.check_arity(ctx, args, node)
        scope = self.scope.child(boundary=True, local_names=self._locals)
        for n, v in zip(self._params, args):
            scope.set(n, v)
        from .exprs import translate_expr
        return translate_expr(ctx.with_scope(scope), self.node.body)


class LocalDefFunV(UserFunV):
    def __init__(self, env, node: cst.FunctionDef, scope: Scope):
        self.node = node
        self.scope = scope
        self.name = node.name.value
        self._params = []
        self._stypes = []
        for q in check_plain_params(env.src, node.params, "local functions"):
            self._params.append(q.name.value)
            self._stypes.append(parse_type(env, q.annotation.annotation) if q.annotation else None)
        self._ret = parse_type(env, node.returns.annotation) if node.returns else None
        self._locals = local_names(env.src, node, env)
        self.home = scope.function_boundary()      # the body the def belongs to

    def param_names(self):
        return self._params

    def param_stypes(self):
        return list(self._stypes)

    def ret_stype(self):
        return self._ret

    def call(self, ctx, args, arg_nodes, node) -> Value:
        from .stmts import block_stmts, translate_block
        self.check_arity(ctx, args, node)
        if self in ctx.fs.inlining:
            raise ctx.error(node, f"recursive local function '{self.name}' is not supported")
        # late binding: the enclosing names as they are where the def is used
        at = ctx.scope.entry_scope(self.home) or self.scope
        scope = at.child(boundary=True, local_names=self._locals, kind="def")
        for n, st, v, an in zip(self._params, self._stypes, args, arg_nodes):
            if st is not None:
                v = coerce(v, st, ctx.src, an, strict=True, what=f"argument '{n}' of '{self.name}'")
            scope.set(n, v)
        frame = Frame(self.name, self._ret, self.node)
        ctx.fs.inlining.append(self)
        try:
            v = translate_block(ctx.with_scope(scope, frame=frame), block_stmts(self.node.body), True)
        finally:
            ctx.fs.inlining.pop()
        if v is None:
            raise missing_return(ctx, self.node, ctx.fs)
        return v


class TopFunV(UserFunV):
    """A call of a top-level def (ir.Call of its FunDef)."""

    def __init__(self, top):
        self.top = top
        self.name = top.name
        self.node = top.node

    def param_names(self):
        return [p[0] for p in self.top.params]

    def param_stypes(self):
        return [p[1] for p in self.top.params]

    def ret_stype(self):
        return self.top.ret

    def call(self, ctx, args, arg_nodes, node) -> Value:
        self.check_arity(ctx, args, node)
        if self.top.is_entry:
            ctx.env.entry_calls.append((self.top, node))
        atoms = []
        values = []
        for (pname, st, _), v, an in zip(self.top.params, args, arg_nodes):
            v = coerce(v, st, ctx.src, an, strict=True, what=f"argument '{pname}' of '{self.name}'")
            values.append(v)
            atoms += flatten_value(v)
        check_list_arguments(ctx, self.top, values, arg_nodes)
        ret_py = call_summary(ctx, self.top, values, arg_nodes, node)
        ret = tuple(flatten_stype(self.top.ret))
        fn = specialization(ctx.env, self.top, [f for v in values for f in py_flags(v)])
        outs = ctx.b.bind(ir.Call(fn, tuple(atoms), ret), self.name, ctx.loc(node))
        return rebuild_value(self.top.ret, outs, 0, py=ret_py)


class RecordFunV(UserFunV):
    """A record class passed as a function: builds the record."""

    def __init__(self, rec: SRecord, node):
        self.rec = rec
        self.node = node
        self.name = rec.name

    def param_names(self):
        return list(self.rec.field_names)

    def param_stypes(self):
        return list(self.rec.field_types)

    def ret_stype(self):
        return self.rec

    def call(self, ctx, args, arg_nodes, node) -> Value:
        self.check_arity(ctx, args, node)
        elems = tuple(coerce(v, t, ctx.src, n, strict=True, what=f"field '{f}' of {self.rec.name}")
                      for v, t, n, f in zip(args, self.rec.field_types, arg_nodes, self.rec.field_names))
        return TupleV(elems, self.rec)


def missing_return(ctx, def_node: cst.FunctionDef, fs: FunState):
    detail = ""
    if getattr(fs, "falloff", None):
        detail = f" (when {fs.falloff} is false it falls off the end)"
    return ctx.src.error(def_node.name, f"not every path of '{def_node.name.value}' returns a "
                                        f"value{detail}; add a final return")


# ---------------------------------------------------------------------------
# Local defs


class _Names(cst.CSTVisitor):
    def __init__(self):
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name):
        self.names.add(node.value)


def names_in(node: cst.CSTNode) -> set[str]:
    v = _Names()
    node.visit(v)
    return v.names


def translate_local_def(ctx: Ctx, node: cst.FunctionDef) -> None:
    """Binds a local def. Nothing is translated here: the body is inlined
    where the def is used (called or passed to a prelude function), with
    the enclosing names as they are there (Python's late binding), so
    rebinding a captured name after the def is fine."""
    if node.asynchronous is not None:
        raise ctx.error(node, "async functions are not supported")
    if node.decorators:
        raise ctx.error(node.decorators[0], "decorators on local functions are not supported")
    funv = LocalDefFunV(ctx.env, node, ctx.scope)
    ctx.scope.set(node.name.value, LocalDef(node, ctx.scope, funv), node.name)


# ---------------------------------------------------------------------------
# Top-level functions


def _translate_top(env, top, pattern: Optional[Sequence[bool]] = None, lists: tuple = ()):
    """The body of a top-level def: (parameter Vars, Builder, returned value).
    `pattern` gives the PyInfos of the parameters' atoms (None: numpy values);
    `lists` says which parameters are Python lists in Python mode."""
    from .stmts import block_stmts, translate_block
    names = NameGen()
    b = Builder(names)
    fs = FunState(names, top.name)
    check_no_code_after_return(env.src, top.node)
    scope = Scope(boundary=True, local_names=local_names(env.src, top.node, env))
    params = []
    for k, (pname, st, _) in enumerate(top.params):
        vs = [b.var(t, pname) for t in flatten_stype(st)]
        flags = None
        if pattern is not None:
            flags = pattern[len(params):len(params) + len(vs)]
        params += vs
        fs.param_vars.update({v.name: pname for v in vs})
        value = rebuild_value(st, vs, 0, py=flags)
        if k < len(lists) and lists[k] and isinstance(value, ArrayV):
            value = dataclasses.replace(value, from_list=True)
        scope.set(pname, value)
    frame = Frame(top.name, top.ret, top.node)
    ctx = Ctx(env, env.src, b, scope, fs, frame)
    v = translate_block(ctx, block_stmts(top.node.body), True)
    if v is None:
        raise missing_return(ctx, top.node, fs)
    b.python_checks = fs.python_checks
    return params, b, v


def translate_fundef(env, top, pattern=None, name=None) -> ir.FunDef:
    """The FunDef of a top-level def; with a `pattern` (PyInfos of the
    parameters' atoms), the specialization `name` for those arguments."""
    params, b, v = _translate_top(env, top, pattern)
    if pattern is None:
        env.summaries.setdefault((top.name, (False,) * len(params)), Summary(py_flags(v), None))
    body = b.body(flatten_value(v))
    return ir.FunDef(name or top.name, tuple(params), tuple(flatten_stype(top.ret)), body,
                     env.src.loc(top.node.name))


def specialization(env, top, flags) -> str:
    """The name of the FunDef a call of `top` with arguments of PyInfos
    `flags` uses. Arguments that are run-time Python numbers in Python mode
    (RUNTIME: len(), float(x), a range index) get a copy of the def in which
    they are such numbers too, so that its run-time checks (pynum.py: a zero
    divisor raises ZeroDivisionError as in Python) apply to them; every other
    call uses the def itself. env.specializations collects the copies that
    translate_source then translates."""
    mask = tuple(f is RUNTIME for f in flags)
    if not any(mask):
        return top.name
    key = (top.name, mask)
    if key not in env.specializations:
        env.specializations[key] = top.name
        pattern = tuple(RUNTIME if m else False for m in mask)
        if _python_checks(env, top, pattern) > _python_checks(env, top, None):
            bits = "".join("1" if m else "0" for m in mask)
            env.specializations[key] = f"{top.name}__pyrt{int(bits, 2)}"
    return env.specializations[key]


def _python_checks(env, top, pattern) -> int:
    """How many run-time checks of Python numbers the def has with
    parameters of PyInfos `pattern` (0 where it does not translate: that
    error is reported elsewhere). A copy is made only where it has more."""
    try:
        _, b, _ = _translate_top(env, top, pattern)
    except CompileError:
        return 0
    return b.python_checks


# ---------------------------------------------------------------------------
# Plain Python numbers across calls of top-level defs


@dataclass(frozen=True)
class Summary:
    """What a top-level def does with arguments of given PyInfos (plain
    Python numbers in Python mode, pynum.py): the PyInfos of its result,
    or the CompileError that translating it with such arguments gives."""
    ret_py: tuple
    error: Optional[CompileError]


def function_summary(env, top, pattern: tuple) -> Summary:
    """The def translated (and thrown away) with parameters of PyInfos
    `pattern`, memoized. A def already being summarized (recursion, which is
    reported elsewhere) is assumed to return numpy values."""
    key = (top.name, pattern)
    hit = env.summaries.get(key)
    if hit is not None:
        return hit
    n_ret = len(flatten_stype(top.ret))
    if key in env.summarizing:
        return Summary((False,) * n_ret, None)
    env.summarizing.add(key)
    try:
        _, _, v = _translate_top(env, top, pattern)
        out = Summary(py_flags(v), None)
    except CompileError as err:
        out = Summary((False,) * n_ret, err)
    finally:
        env.summarizing.discard(key)
    env.summaries[key] = out
    return out


def check_list_arguments(ctx, top, values: list, arg_nodes: list) -> None:
    """A located error at an argument that is a Python list in Python mode
    (a list literal or comprehension) when `top` does with it what a list
    cannot do there (`a[i, j]`, `a[:, j]`): the def translated with that
    parameter marked as a list fails where the def itself does not."""
    env = ctx.env
    for i, v in enumerate(values):
        if not (isinstance(v, ArrayV) and v.from_list):
            continue
        lists = tuple(j == i for j in range(len(values)))
        key = (top.name, "list", lists)
        if key not in env.summaries:
            try:
                _translate_top(env, top, None, lists)
                env.summaries[key] = None
            except CompileError as err:
                env.summaries[key] = err
        err = env.summaries[key]
        n_atoms = sum(len(flatten_value(w)) for w in values)
        if err is not None and function_summary(env, top, (False,) * n_atoms).error is None:
            pname = top.params[i][0]
            raise ctx.error(arg_nodes[i], f"argument '{pname}' of '{top.name}' is a list in Python "
                                          f"mode, and then in '{top.name}', line {err.line}: "
                                          f"{err.message}",
                            hint="pass a numpy array: ps.array([...])")


def call_summary(ctx, top, values: list, arg_nodes: list, node) -> tuple:
    """The PyInfos of the result of calling `top` with `values`; a located
    error at an argument when one that may be a plain Python number makes
    the def compute something Python computes differently from numpy (the
    def translated with numpy arguments is fine)."""
    env = ctx.env
    flags = [py_flags(v) for v in values]
    pattern = tuple(f for fl in flags for f in fl)
    base = function_summary(env, top, (False,) * len(pattern))
    if not any(pattern):
        return base.ret_py
    if base.error is not None:
        return base.ret_py           # an error of the def itself, reported there
    # first with the arguments' values unknown (one translation serves most calls), then
    # with the values known (constants the def divides by may be nonzero, ...)
    got = function_summary(env, top, tuple(f if f is RUNTIME else bool(f) for f in pattern))
    if got.error is None:
        return got.ret_py
    got = function_summary(env, top, pattern)
    if got.error is None:
        return got.ret_py
    blamed = []
    for i, fl in enumerate(flags):
        if any(fl):
            alone = tuple(f if j == i else False for j, fls in enumerate(flags) for f in fls)
            if function_summary(env, top, alone).error is not None:
                blamed.append(i)
    if not blamed:
        blamed = [i for i, fl in enumerate(flags) if any(fl)]
    i = blamed[0]
    raise python_number_argument_error(ctx, top, i, values[i], arg_nodes[i], got.error,
                                       via_prelude=arg_nodes[i] is node)


def python_number_argument_error(ctx, top, i: int, v: Value, node, inner: CompileError,
                                 via_prelude: bool = False):
    """The error at an argument that may be a plain Python number and makes
    `top` compute what Python and numpy compute differently (`inner`, the
    error translating `top` with it). `via_prelude`: a prelude function
    (`node`) calls `top` with list elements or a constant accumulator."""
    from .pynum import conversion_hint, what_python_numbers
    pname = top.params[i][0]
    what = getattr(inner, "pynum_summary", None) or inner.message
    if via_prelude:
        return ctx.error(node, f"this call passes '{top.name}' an argument '{pname}' that may be a "
                               f"plain Python number in Python mode {what_python_numbers()}, and "
                               f"then in '{top.name}', line {inner.line}, {what}",
                         hint="pass numpy values: a list of constants as ps.array([...]), a "
                              "constant as ps.f64(...) or another scalar type")
    what_arg = "be a plain Python number" if isinstance(v, ScalarV) else "hold plain Python numbers"
    return ctx.error(node, f"argument '{pname}' of '{top.name}' may {what_arg} in "
                           f"Python mode {what_python_numbers()}, "
                           f"and then in '{top.name}', line {inner.line}, {what}",
                     hint=conversion_hint(ctx, v, node))
