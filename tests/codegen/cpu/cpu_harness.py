"""Helpers for the CPU emitter tests: build kernel IR modules in Python,
compile them to a shared library, and call entries on numpy buffers."""
from __future__ import annotations

import ctypes
import itertools
import re
from pathlib import Path

import numpy as np

from pyshark.codegen import kir as K
from pyshark.codegen.cpu import (PysharkCtx, emit_module, load_library, optimise_and_build,
                                 optimised_ir)
from pyshark.core.types import BOOL, F32, F64, I64, ScalarType

I0 = K.KConst(0, I64)
I1 = K.KConst(1, I64)
_counter = itertools.count()


def c64(v: int) -> K.KConst:
    return K.KConst(v, I64)


def v(name: str, t) -> K.KVar:
    return K.KVar(name, t)


def P(t) -> K.Ptr:
    return K.Ptr(t)


def ptr_arg(a: np.ndarray) -> int:
    return a.ctypes.data


class Built:
    """A compiled module: `call(name, *args, nthreads=0)` -> (rc, ctx)."""

    def __init__(self, m: K.Module, lib, text: str):
        self.module = m
        self.lib = lib
        self.text = text
        self._fns = {}

    def fn(self, name: str):
        f = self._fns.get(name)
        if f is None:
            kf = next(f for f in self.module.functions if f.name == name)
            f = self._fns[name] = self.lib.function(kf)
        return f

    def call(self, name: str, *args, nthreads: int = 0, ctx: PysharkCtx | None = None):
        ctx = ctx if ctx is not None else PysharkCtx()
        ctx.nthreads = nthreads
        ctx.code = -7          # the entry must reset it
        conv = [ptr_arg(a) if isinstance(a, np.ndarray) else a for a in args]
        rc = self.fn(name)(ctypes.byref(ctx), *conv)
        assert rc == ctx.code, (rc, ctx.code)
        return rc, ctx


def build(m: K.Module, tmp_dir: Path, *, fastmath: bool = False, cc="auto") -> Built:
    K.check_module(m)
    text = emit_module(m, fastmath=fastmath)
    K.check_module(m)          # messages the emitter added keep the module valid
    out = Path(tmp_dir) / f"mod{next(_counter)}.so"
    optimise_and_build(text, out, fastmath=fastmath, cc=cc)
    return Built(m, load_library(out), text)


def function_ir(opt_text: str, name: str) -> str:
    """The text of one `define` in (optimised) LLVM IR."""
    m = re.search(r"^define [^\n]*@\"?" + re.escape(name) + r"\"?\(.*?^}", opt_text,
                  re.S | re.M)
    assert m, f"no function {name} in the IR"
    return m.group(0)


def functions_ir(opt_text: str, name: str) -> str:
    """The text of the `define`s of `name` and of the functions it owns
    (`name.parfor0`, `name.parfor0.omp`, ...) in (optimised) LLVM IR."""
    out, keep = [], False
    for line in opt_text.splitlines():
        if line.startswith("define "):
            keep = f"@{name}(" in line or f"@{name}." in line
        if keep:
            out.append(line)
    return "\n".join(out)


def vector_types(ir_text: str) -> set[str]:
    return set(re.findall(r"<\d+ x (?:float|double|i\d+)>", ir_text))


def elementwise(name: str, n_in: int, tin, tout, make, par: bool = False) -> K.Function:
    """out[i] = make(x0[i], x1[i], ...) for i in 0..n-1."""
    xs = [v(f"x{k}", P(tin)) for k in range(n_in)]
    out = v("out", P(tout))
    n = v("n", I64)
    i = v("i", I64)
    body = K.Block((K.Store(out, i, make(*[K.Load(x, i) for x in xs])),))
    loop = K.ParFor(i, n, body) if par else K.For(i, I0, n, body)
    return K.Function(name, tuple(xs) + (out, n), K.Block((loop,)))


def np_same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-exact equality, NaNs equal to NaNs (any payload) for floats."""
    if a.dtype.kind == "f":
        both_nan = np.isnan(a) & np.isnan(b)
        return bool(np.all(both_nan | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))))
    return bool(np.array_equal(a, b))


__all__ = ["K", "np", "BOOL", "F32", "F64", "I64", "ScalarType", "I0", "I1", "c64", "v", "P",
           "Built", "build", "function_ir", "vector_types", "elementwise", "np_same",
           "optimised_ir", "emit_module", "PysharkCtx", "functions_ir"]
