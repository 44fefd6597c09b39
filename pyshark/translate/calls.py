"""Calls: user functions (top-level defs are called, local defs inlined),
record construction, and prelude/builtin calls handed to prelude_calls.

Arguments of prelude calls may be functions (lambdas, local or top-level
defs, record classes) which become FunVs, or types (`ps.highest(ps.f32)`)
which become TypeArgs; everything else is a translated Value.
"""
from __future__ import annotations

import libcst as cst

from ..core.types import SArray, SRecord, SScalar
from .annotations import parse_type
from .coerce import coerce
from .context import Ctx, LocalDef, Unbound
from .exprs import (FUNCTION_NOT_VALUE, attribute_root, check_module_attribute, rooted_at_value,
                    translate_expr)
from .values import FunV, TupleV, TypeArg, Value

NON_VALUE_BUILTINS = {
    "print": ("I/O is not supported in PyShark code", "return the value from an entry instead"),
    "input": ("I/O is not supported in PyShark code", None),
    "open": ("I/O is not supported in PyShark code", None),
    "range": ("range(...) is only supported as the iterable of a for loop or comprehension",
              "use ps.iota(n) for an array of indices"),
    "zip": ("zip(...) is only supported as the iterable of a for loop or comprehension",
            "use ps.zip(xs, ys) for an array of pairs"),
    "enumerate": ("enumerate(...) is only supported as the iterable of a for loop or comprehension",
                  None),
    "list": ("list(...) is not supported", "use ps.copy(xs) or a comprehension"),
}



#: numpy functions a kernel writer reaches for -> how the prelude says it
#: (np.sum -> ps.sum and the other same-named ones are found by name)
NUMPY_SPELLINGS = {
    "empty": "ps.replicate(n, ps.f32(0))", "zeros": "ps.replicate(n, ps.f32(0))",
    "ones": "ps.replicate(n, ps.f32(1))", "full": "ps.replicate(n, value)",
    "zeros_like": "ps.replicate(len(xs), ps.f32(0))", "arange": "ps.iota(n)",
    "float32": "ps.f32(x)", "float64": "ps.f64(x)", "int32": "ps.i32(x)", "int64": "ps.i64(x)",
    "uint8": "ps.u8(x)", "uint32": "ps.u32(x)", "bool_": "bool(x)",
    "max": "ps.maximum(xs), or ps.max(a, b) for two scalars",
    "amax": "ps.maximum(xs)", "min": "ps.minimum(xs), or ps.min(a, b) for two scalars",
    "amin": "ps.minimum(xs)", "maximum": "ps.max(a, b) (inside ps.map for arrays)",
    "minimum": "ps.min(a, b) (inside ps.map for arrays)",
    "cumsum": "ps.scan(lambda a, b: a + b, 0, xs)", "mean": "ps.sum(xs) / len(xs)",
    "dot": "ps.sum(ps.map(lambda x, y: x * y, xs, ys))",
    "where": "ps.map(lambda c, x, y: x if c else y, cs, xs, ys)",
    "concatenate": "ps.concat(xs, ys)", "roll": "ps.rotate(-r, xs) (numpy.roll(xs, r))",
    "bincount": "ps.reduce_by_index(ps.replicate(m, 0), lambda a, b: a + b, 0, idxs, ones)",
    "reshape": "ps.unflatten(n, m, xs)", "ravel": "ps.flatten(xss)",
    "array": "ps.array([...]) or a list", "asarray": "the array itself (arguments are arrays)",
}

def prelude():
    from . import prelude_calls
    return prelude_calls


def translate_call(ctx: Ctx, node: cst.Call) -> Value:
    func = node.func
    env = ctx.env
    if isinstance(func, cst.Name):
        name = func.value
        b = ctx.scope.lookup(name)
        if isinstance(b, Unbound):
            raise ctx.error(func, b.message, b.hint)
        if isinstance(b, LocalDef):
            return call_user(ctx, b.fun, node)
        if b is not None:
            raise ctx.error(func, f"'{name}' is a value, not a function")
        if name in env.functions:
            return call_user(ctx, env.functions[name].funv, node)
        if name in env.records:
            return construct_record(ctx, env.records[name], node)
        if name in env.aliases:
            st = env.aliases[name]
            if isinstance(st, SRecord):
                return construct_record(ctx, st, node)
            if isinstance(st, SScalar):
                builtin = builtin_alias(env, name)
                if builtin is not None:        # `Count = int`: Count(x) is int(x), a Python int
                    return call_prelude(ctx, builtin, node)
                return call_prelude(ctx, f"pyshark.prelude.{st.t.value}", node)
            raise ctx.error(func, f"the type '{name}' cannot be called")
        if name in env.constants:
            raise ctx.error(func, f"'{name}' is a value, not a function")
    if isinstance(func, cst.Attribute):
        if rooted_at_value(ctx, func):
            root = attribute_root(func)
            if root is not None:
                translate_expr(ctx, root)        # a local read before it is bound says so first
            raise ctx.error(func.attr, f"methods are not supported ('.{func.attr.value}(...)')",
                            hint="records are NamedTuples with fields only; call a top-level "
                                 "function or a prelude function instead")
        check_module_attribute(ctx, func)
    if isinstance(func, (cst.Name, cst.Attribute)):
        quals = ctx.src.qualified_names(func)
        pc = prelude()
        for q in quals:
            if pc.is_prelude_name(q):
                return call_prelude(ctx, q, node)
        for q in quals:
            if q.startswith("pyshark.prelude."):
                raise ctx.error(func, f"ps.{q.rsplit('.', 1)[1]} is not a prelude function")
            if q.startswith("builtins."):
                short = q[len("builtins."):]
                msg, hint = NON_VALUE_BUILTINS.get(short, (f"the builtin '{short}' is not supported",
                                                           None))
                raise ctx.error(func, msg, hint)
        for q in quals:
            if "<locals>" in q:
                continue
            mod = q.split(".")[0]
            last = q.rsplit(".", 1)[-1]
            if mod == "numpy" and last in NUMPY_SPELLINGS:
                hint = f"the prelude spelling: {NUMPY_SPELLINGS[last]}"
            elif pc.is_prelude_name(f"pyshark.prelude.{last}"):
                hint = f"use ps.{last}"
            else:
                hint = "only pyshark.prelude functions may be called"
            raise ctx.error(func, f"call into non-prelude module '{mod}'; {hint}",
                            hint="import pyshark.prelude as ps")
        if isinstance(func, cst.Name):
            raise ctx.error(func, f"name '{func.value}' is not defined")
    raise ctx.error(func, "only functions can be called: a top-level or local def, a record "
                          "class or a prelude function")


def builtin_alias(env, name: str, depth: int = 0):
    """'builtins.int' (float, bool) when the alias `name` is bound to that
    builtin type, directly or through other aliases; else None."""
    node = env.alias_nodes.get(name)
    if not isinstance(node, (cst.Name, cst.Attribute)) or depth > 32:
        return None
    if isinstance(node, cst.Name) and node.value in env.aliases and node.value != name:
        return builtin_alias(env, node.value, depth + 1)
    for q in env.src.qualified_names(node):
        if q in ("builtins.int", "builtins.float", "builtins.bool"):
            return q
    return None


def call_prelude(ctx: Ctx, qualname: str, node: cst.Call) -> Value:
    args = []
    for a in node.args:
        if a.star:
            raise ctx.error(a, "*args in calls are not supported")
        if a.keyword is not None:
            raise ctx.error(a, f"keyword argument '{a.keyword.value}' in a prelude call",
                            hint="pass the arguments by position")
        args.append(prelude_arg(ctx, a.value))
    return prelude().lower_call(ctx, qualname, args, node)


def prelude_arg(ctx: Ctx, node: cst.BaseExpression):
    """A prelude argument: FunV for functions, TypeArg for types, else a Value."""
    from .funcs import LambdaFunV, RecordFunV
    env = ctx.env
    if isinstance(node, cst.Lambda):
        return LambdaFunV(node, ctx.scope, ctx.src)
    if isinstance(node, cst.Name):
        b = ctx.scope.lookup(node.value)
        if isinstance(b, LocalDef):
            return b.fun
        if isinstance(b, Unbound):
            raise ctx.error(node, b.message, b.hint)
        if b is not None:
            return b
        if node.value in env.functions:
            return env.functions[node.value].funv
        if node.value in env.records:
            return RecordFunV(env.records[node.value], node)
        if node.value in env.aliases and isinstance(env.aliases[node.value], SRecord):
            return RecordFunV(env.aliases[node.value], node)
    if isinstance(node, (cst.Name, cst.Attribute)) and not (isinstance(node, cst.Attribute)
                                                            and rooted_at_value(ctx, node)):
        quals = ctx.src.qualified_names(node)
        for q in quals:
            if q in FUNCTION_VALUES:
                return PreludeFunV(q, node)
    if isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
        st = parse_type(env, node, quiet=True)
        if st is not None:
            conv = None
            if isinstance(st, SScalar) and isinstance(node, (cst.Name, cst.Attribute)):
                name = f"pyshark.prelude.{st.t.value}"
                if name in ctx.src.qualified_names(node) and prelude().is_prelude_name(name):
                    conv = name
            return TypeArg(st, conv, node)
    return translate_expr(ctx, node)


# builtins and prelude scalar functions that may be passed where a function
# is expected (LANGUAGE.md: `ps.scan(max, ...)`, `ps.map(ps.sqrt, xs)`)
FUNCTION_VALUES = frozenset(
    ["builtins.min", "builtins.max", "builtins.abs"]
    + [f"pyshark.prelude.{n}" for n in
       ("sqrt exp log log2 log10 sin cos tan asin acos atan atan2 sinh cosh tanh pow floor "
        "ceil round trunc abs sign min max isnan isinf").split()])


class PreludeFunV(FunV):
    """A builtin or prelude scalar function (or a scalar type's conversion)
    passed as a function: applying it lowers the call `name(*args)` as if it
    were written out, so it types exactly like a direct call (the builtin
    `max` on two f32 values gives f32; Python's max is not numpy's)."""

    def __init__(self, qualname: str, node: cst.CSTNode):
        from .prelude_common import display_name
        self.qualname = qualname
        self.node = node
        self.name = display_name(qualname)

    @property
    def arity(self):
        return None          # the lowering checks its own argument count

    def apply(self, ctx, args, node) -> Value:
        return prelude().lower_call(ctx, self.qualname, list(args), self.node)


def bind_call_args(ctx: Ctx, fname: str, pnames: list[str], pstypes: list, node: cst.Call):
    """Positional and keyword arguments of a user-function call, in parameter order."""
    values: list = [None] * len(pnames)
    nodes: list = [None] * len(pnames)
    pos = 0
    for a in node.args:
        if a.star:
            raise ctx.error(a, "*args in calls are not supported")
        if a.keyword is None:
            if pos >= len(pnames):
                raise ctx.error(a, f"{fname}() takes {len(pnames)} arguments, got more")
            i = pos
            pos += 1
        else:
            k = a.keyword.value
            if k not in pnames:
                raise ctx.error(a, f"{fname}() has no parameter '{k}'")
            i = pnames.index(k)
            if values[i] is not None:
                raise ctx.error(a, f"{fname}() got parameter '{k}' twice")
        st = pstypes[i] if pstypes else None
        values[i] = translate_expr(ctx, a.value, st)
        nodes[i] = a.value
    missing = [p for p, v in zip(pnames, values) if v is None]
    if missing:
        raise ctx.error(node, f"{fname}() is missing argument '{missing[0]}'")
    return values, nodes


def call_user(ctx: Ctx, funv: FunV, node: cst.Call) -> Value:
    pnames = funv.param_names()
    values, nodes = bind_call_args(ctx, funv.name, pnames, funv.param_stypes(), node)
    return funv.call(ctx, values, nodes, node)


def construct_record(ctx: Ctx, rec: SRecord, node: cst.Call) -> TupleV:
    names = list(rec.field_names)
    values, nodes = bind_call_args(ctx, rec.name, names, list(rec.field_types), node)
    elems = tuple(coerce(v, t, ctx.src, n, strict=True, what=f"field '{f}' of {rec.name}")
                  for v, t, n, f in zip(values, rec.field_types, nodes, names))
    return TupleV(elems, rec)
