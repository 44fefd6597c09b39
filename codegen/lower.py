"""Core IR -> kernel IR: the driver of the one lowering both native backends
share. It builds the rule table (each family's `register`: the common
rules of lower_scalar.py, lower_control.py and lower_arrays.py, mc/ and
gpu/), hands it to a Lowerer (lower_base.py) per entry, and lays out the
entry's flat ABI (entry_abi) around the lowered body.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional

from pyshark.core import ir
from pyshark.core.types import I64, ScalarType

from . import gpu, lower_arrays, lower_control, lower_scalar, mc
from . import kir as K
from . import scalar as S
from .lower_base import Arr, Lowerer, Options, RuleTable

__all__ = ["Options", "default_rules", "entry_abi", "lower_entry", "lower_program", "symbol"]


@lru_cache(maxsize=None)
def default_rules() -> RuleTable:
    """Every family's rules (families_for in lower_base.py gives the order)."""
    rules = RuleTable()
    for family in (lower_scalar, lower_control, lower_arrays, mc, gpu):
        family.register(rules)
    return rules


def entry_abi(fun: ir.FunDef) -> tuple[list, list]:
    """The flat ABI of an entry: [(kind, type)] for inputs and outputs, where
    kind is "scalar" or "array" (data pointer then one i64 per dimension;
    outputs: a pointer to a data pointer, then a pointer to rank i64s)."""
    ins = [("scalar", p.type) if isinstance(p.type, ScalarType) else ("array", p.type)
           for p in fun.params]
    outs = [("scalar", t) if isinstance(t, ScalarType) else ("array", t) for t in fun.ret]
    return ins, outs


def is_scalar_result_param(v: K.KVar) -> bool:
    """Whether an entry function's parameter is the out-param of a scalar
    result (lower_entry names it out{k}, a pointer to one scalar); the
    opencl host code may hand such a result back where it lies."""
    return (isinstance(v.type, K.Ptr) and isinstance(v.type.elem, ScalarType)
            and v.name.startswith("out") and v.name[3:].isdigit())


def lower_entry(program: ir.Program, name: str, module: K.Module,
                options: Options = Options(), rules: Optional[RuleTable] = None) -> K.Function:
    fun = program.entry_fun(name)
    lw = Lowerer(program, module, options, rules or default_rules())
    params: list[K.KVar] = []
    env: dict = {}
    for p in fun.params:
        if isinstance(p.type, ScalarType):
            v = K.KVar(f"in_{p.name}", p.type)
            params.append(v)
            env[p.name] = v
        else:
            d = K.KVar(f"in_{p.name}", K.Ptr(p.type.elem))
            dims = tuple(K.KVar(f"in_{p.name}_n{k}", I64) for k in range(p.type.rank))
            for dim in dims:
                lw.facts.at_least[dim.name] = 0      # a length is never negative
            params += [d, *dims]
            env[p.name] = Arr(d, d, dims, p.type.elem, frozenset())
    lw.inputs = frozenset(v.base.name for v in env.values() if isinstance(v, Arr))
    outs = []
    for k, t in enumerate(fun.ret):
        if isinstance(t, ScalarType):
            o = K.KVar(f"out{k}", K.Ptr(t))
            params.append(o)
            outs.append((o,))
        else:
            o = K.KVar(f"out{k}", K.Ptr(K.Ptr(t.elem)))
            od = K.KVar(f"out{k}_shape", K.Ptr(I64))
            params += [o, od]
            outs.append((o, od))
    with lw.block() as blk, lw.temp_scope(free=True):
        res = lw.lower_body(fun.body, env)
        given: set = set()
        for (val, owned), o, t in zip(res, outs, fun.ret):
            if isinstance(t, ScalarType):
                lw.emit(K.Store(o[0], S.const(0, I64), val))
                continue
            if not owned or val.data is not val.base or val.base.name in given:
                if owned:
                    lw.own(val.base)
                val = lw.copy_arr(val, "res")
                lw.disown(val.base)
            given.add(val.base.name)
            lw.emit(K.Store(o[0], S.const(0, I64), val.base))
            for d, dim in enumerate(val.shape):
                lw.emit(K.Store(o[1], S.const(d, I64), dim))
    return K.Function(name, tuple(params), blk[0])


def symbol(entry: str) -> str:
    """The exported name of an entry's kernel function (prefixed, so that no
    entry clashes with a C library function such as `exp` or `free`)."""
    return f"pyshark_{entry}"


def lower_program(program: ir.Program, options: Options = Options(),
                  rules: Optional[RuleTable] = None) -> K.Module:
    module = K.Module()
    for name in program.entries:
        f = lower_entry(program, name, module, options, rules)
        module.functions.append(K.Function(symbol(name), f.params, f.body))
    return module
