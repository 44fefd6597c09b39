"""A tiny stand-in for the translator's context, to unit-test the prelude
lowering without module.py: a SourceInfo with one call node, a Builder, and
FunV doubles that build IR directly. `compile_fn` wraps what a lowering
emits into a FunDef, type-checks it and `run` interprets it."""
from __future__ import annotations

import os
import sys
import types

import pyshark

_MODULE = os.path.join(os.path.dirname(pyshark.__file__), "translate", "module.py")
if not os.path.exists(_MODULE) and "pyshark.translate.module" not in sys.modules:
    _stub = types.ModuleType("pyshark.translate.module")
    _stub.translate_file = _stub.translate_source = None
    sys.modules["pyshark.translate.module"] = _stub

from pyshark.core import ir  # noqa: E402
from pyshark.core.check import check_program  # noqa: E402
from pyshark.core.interp import run_function  # noqa: E402
from pyshark.core.types import (BOOL, F32, F64, I32, I64, SArray, SScalar,  # noqa: E402,F401
                                STuple, flatten_stype)
from pyshark.translate import ops  # noqa: E402
from pyshark.translate.builder import Builder  # noqa: E402
from pyshark.translate.coerce import harden  # noqa: E402
from pyshark.translate.prelude_calls import lower_call  # noqa: E402
from pyshark.translate.source import SourceInfo  # noqa: E402
from pyshark.translate.values import FunV, flatten_value, rebuild_value  # noqa: E402


class Ctx:
    def __init__(self, src, b):
        self.src, self.b = src, b

    def loc(self, node):
        return self.src.loc(node)

    def nested(self):
        return Ctx(self.src, self.b.sub())


class PyFun(FunV):
    """fn(ctx, *values) -> Value, building IR with ops.*."""

    def __init__(self, fn, arity):
        self.fn, self._arity = fn, arity

    @property
    def arity(self):
        return self._arity

    def apply(self, ctx, args, node):
        return self.fn(ctx, *args)


def call_node(n: int):
    """(SourceInfo, the cst.Call node of `f(a0, ..., a{n-1})`)."""
    text = "f(" + ", ".join(f"a{i}" for i in range(n)) + ")\n"
    src = SourceInfo.parse(text, "t.py")
    return src, src.module.body[0].body[0].value


def A(t, rank=1):
    st = SScalar(t)
    for _ in range(rank):
        st = SArray(st)
    return st


def fn1(op):
    """\\x -> op(x) via ops.unop/binop-with-constant helpers."""
    return PyFun(op, 1)


def add(ctx, x, y):
    return ops.binop(ctx, "add", x, y, NODE)


def binfun(op):
    return PyFun(lambda ctx, x, y: ops.binop(ctx, op, x, y, NODE), 2)


_, NODE = call_node(1)


def compile_fn(build, param_stypes, nargs=5):
    """build(ctx, node, *param_values) -> Value; returns the checked Program."""
    src, node = call_node(nargs)
    b = Builder()
    ctx = Ctx(src, b)
    params, values = [], []
    for st in param_stypes:
        ps_ = [b.var(t, "p") for t in flatten_stype(st)]
        params += ps_
        values.append(rebuild_value(st, ps_))
    res = harden(build(ctx, node, *values))
    atoms = flatten_value(res)
    fd = ir.FunDef("f", tuple(params), tuple(a.type for a in atoms), b.body(atoms))
    prog = ir.Program({"f": fd}, {})
    check_program(prog)
    return prog


def run(build, param_stypes, *flat_args, nargs=5):
    prog = compile_fn(build, param_stypes, nargs)
    return run_function(prog, "f", list(flat_args))


def call(name, *args):
    """A build function body: lower `ps.<name>(*args)` (args may be callables of
    (ctx, values) -> arg to refer to parameters)."""
    q = name if "." in name else "pyshark.prelude." + name

    def build(ctx, node, *vals):
        real = [a(ctx, vals) if callable(a) and not isinstance(a, FunV) else a for a in args]
        return lower_call(ctx, q, real, node)
    return build


def P(i):
    """Argument placeholder: the i-th parameter value."""
    return lambda ctx, vals: vals[i]
