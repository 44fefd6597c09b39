"""Every dispatch table of pyshark/core covers every class of ir.Exp -- the
checker's, the interpreter's, the pretty-printer's and the traversal's --
and each one handles a program that uses every class. (The lowering's
tables: tests/codegen/test_lower_dispatch.py; the operator table:
test_core_ops.py.)"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import every_exp
from pyshark.core import check, interp, ir, pretty, traverse
from pyshark.core.interp import run_entry

EXPS = set(every_exp.EXP_CLASSES)


@pytest.mark.parametrize("table", [check._CHECKS, interp._DISPATCH, pretty._EXP,
                                   traverse.FIELDS],
                         ids=["check", "interp", "pretty", "traverse"])
def test_table_has_every_expression_class(table):
    assert set(table) == EXPS
    assert len(EXPS) == 27          # a new class: add it to every table


def test_traverse_table_names_every_field_in_order():
    for cls, roles in {**traverse.FIELDS, **traverse.STRUCT_FIELDS}.items():
        assert tuple(n for n, _ in roles) == tuple(f.name for f in dataclasses.fields(cls)), cls


def test_the_program_uses_every_class_and_checks():
    p = every_exp.program()
    assert every_exp.classes_used(p) == EXPS
    check.check_program(p)


def test_interpreter_runs_every_class():
    res = run_entry(every_exp.program(), "every", every_exp.args())
    (s, u, f, sel, call, iff, for_sum, wl, ix, sl, up, al, io, rp, cc, rt, tr, rs,
     mp, rd, sc, fl, rbi, sct) = res
    assert (s, u, f, sel, call, iff, for_sum, wl, ix, rd) == (5, -5, -5.0, 5, 10, 6, 6, 3, 5, 18)
    for got, want in [(sl, [1, 2, 7, 3]), (up, [42, 1, 2, 7, 3]), (al, [5, -5]),
                      (io, [0, 1, 2, 3]), (rp, [-5.0] * 4), (cc, [5, 1, 2, 7, 3, 0, 1, 2, 3]),
                      (rt, [1, 2, 7, 3, 5]), (tr, [[0, 3], [1, 4], [2, 5]]),
                      (rs, [0, 1, 2, 3, 4, 5]), (mp, [20, 4, 8, 28, 12]),
                      (sc, [5, 6, 8, 15, 18]), (fl, [5, 2, 7, 3]), (rbi, [3, 8, 7]),
                      (sct, [1, 2, 7, 3, -1])]:
        assert np.array_equal(got, want)


def test_pretty_printer_prints_every_class():
    p = every_exp.program()
    text = pretty.pretty_program(p)
    assert "<unknown" not in text
    for stm in traverse.iter_stms(p.functions["every"].body):
        line = pretty.pretty_stm(stm)
        assert line.startswith("let (") and "<unknown" not in line
    for word in ("size(", "select(", "twice(", "if ", "loop (", "while", "assert(",
                 "with [", "iota(", "replicate(", "concat(", "rotate(", "transpose(",
                 "reshape(", "map[", "reduce[", "scan[", "filter[", "reduce_by_index[",
                 "scatter[", "copy(", "[1i64:]", "f64("):
        assert word in text, word


# ---------------------------------------------------------------------------
# The traversal against a naive walk over every dataclass field


def _naive(node, used: set, bound: set):
    if isinstance(node, ir.Var):
        used.add(node.name)
    elif isinstance(node, (tuple, list)):
        for x in node:
            _naive(x, used, bound)
    elif dataclasses.is_dataclass(node) and not isinstance(node, (ir.Const, ir.Loc)):
        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            if (type(node), f.name) in {(ir.Let, "pat"), (ir.Lambda, "params"),
                                        (ir.Loop, "params"), (ir.ForLoop, "index")}:
                bound.update(p.name for p in (v if isinstance(v, tuple) else (v,)))
            else:
                _naive(v, used, bound)


def _stms():
    p = every_exp.program()
    return [s for f in p.functions.values() for s in traverse.iter_stms(f.body)]


def test_free_vars_uses_and_binders_agree_with_a_naive_walk():
    seen = set()
    for stm in _stms():
        used, bound = set(), set()
        _naive(stm.exp, used, bound)
        seen.add(type(stm.exp))
        assert traverse.uses(stm.exp) == used, stm
        assert {v.name for v in traverse.binder_vars(stm.exp)} == bound, stm
        assert traverse.free_vars(stm.exp) == used - bound, stm
        assert traverse.free_vars(stm) == used - bound
    assert seen == EXPS


def test_children_and_map_exp_see_every_operand():
    def rename(a):
        return ir.Var(a.name + "_r", a.type) if isinstance(a, ir.Var) else a

    for stm in _stms():
        e = stm.exp
        kids = traverse.children(e)
        nested = [k for k in kids if isinstance(k, (ir.Body, ir.Lambda))]
        atoms = [k for k in kids if not isinstance(k, (ir.Body, ir.Lambda))]
        assert all(isinstance(a, (ir.Var, ir.Const)) for a in atoms)
        # the operands of e itself are what it uses outside its nested code
        inner = set().union(*(traverse.free_vars(k) for k in nested)) if nested else set()
        assert {a.name for a in atoms if isinstance(a, ir.Var)} | inner >= \
            traverse.free_vars(e)
        assert traverse.map_exp(e, lambda a: a, lambda b: b) is e
        bodies = []
        new = traverse.map_exp(e, rename, lambda b: bodies.append(b) or b)
        assert bodies == traverse.sub_bodies(e)
        assert list(traverse.children(new)) == [
            rename(k) if k in atoms else k for k in kids]
        assert type(new) is type(e)
        if not atoms:
            assert new is e
