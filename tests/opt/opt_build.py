"""Shared helpers for the tests of codegen/opt: the hand-written IR builder of
tests/core (coreir_build), and small queries on the IR a pass returns."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

from coreir_build import (BOOL, F32, F64, I8, I16, I32, I64, LOC, U8, U16, U32,  # noqa: E402
                          U64, ArrayType, B, Ctx, arr, c, fun, ir, prog)
from pyshark.core.check import check_program  # noqa: E402
from pyshark.core.interp import run_function  # noqa: E402
from pyshark.core.traverse import iter_stms  # noqa: E402
from pyshark.core.types import SArray, SScalar  # noqa: E402


def stms(f: ir.FunDef, cls=None) -> list[ir.Let]:
    """The top-level statements of f (of class cls)."""
    return [s for s in f.body.stms if cls is None or isinstance(s.exp, cls)]


def all_stms(f: ir.FunDef, cls=None) -> list[ir.Let]:
    """Every statement of f, nested ones too (of class cls)."""
    return [s for s in iter_stms(f.body) if cls is None or isinstance(s.exp, cls)]


def outcome(program: ir.Program, name: str, args: list):
    """("ok", results) or ("raise", exception class) of running FunDef name."""
    try:
        return ("ok", run_function(program, name, [np.copy(a) for a in args]))
    except Exception as exc:       # noqa: BLE001 -- the class is the outcome
        return ("raise", type(exc))


def same_outcome(a, b) -> bool:
    """Equal outcomes: the same exception class, or bit-equal results (NaN == NaN)."""
    if a[0] != b[0]:
        return False
    if a[0] == "raise":
        return a[1] is b[1]
    if len(a[1]) != len(b[1]):
        return False
    for x, y in zip(a[1], b[1]):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            return False
    return True


def check_same(before: ir.Program, after: ir.Program, name: str, *arg_lists) -> None:
    """after type checks, and runs like before on every argument list."""
    check_program(after)
    for args in arg_lists:
        a, b = outcome(before, name, list(args)), outcome(after, name, list(args))
        assert same_outcome(a, b), f"{name}{args}: before {a}, after {b}"


def before_and_after_hoist(source: str, filename: str) -> tuple[ir.Program, ir.Program]:
    """The translated source through every core pass before hoist, and
    then through hoist (type checked): the pair hoist's tests compare."""
    from pyshark.codegen.opt.hoist import hoist_invariants
    from pyshark.codegen.pipeline import PASSES, optimise
    from pyshark.translate import translate_source
    before = optimise(translate_source(source, filename), passes=PASSES[:-1])
    after = hoist_invariants(before)
    check_program(after)
    return before, after


def entry_for(f: ir.FunDef, *stypes, ret) -> ir.Entry:
    """An Entry for FunDef f with the given surface types."""
    return ir.Entry(f.name, tuple(ir.EntryParam(f"p{i}", st) for i, st in enumerate(stypes)),
                    ret)


__all__ = ["BOOL", "F32", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64",
           "ArrayType", "B", "Ctx", "LOC", "arr", "c", "fun", "ir", "prog", "check_program",
           "run_function", "iter_stms", "stms", "all_stms", "outcome", "same_outcome",
           "check_same", "before_and_after_hoist", "entry_for", "SArray", "SScalar", "np"]
