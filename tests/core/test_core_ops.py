"""The operator table (pyshark/core/ops.py): it matches ir.BINOPS/UNOPS, its
claims (operand kinds, result types, which operators raise what) hold for
its reference functions, and the checker, the interpreter, the
pretty-printer and codegen/scalar.py all follow it."""
from __future__ import annotations

import contextlib
import itertools
import warnings

import numpy as np
import pytest

import pyshark.prelude as ps
from pyshark.codegen import kir as K
from pyshark.codegen import scalar as S
from pyshark.core import interp, ir, ops
from pyshark.core.check import check_fundef
from pyshark.core.pretty import pretty_exp
from pyshark.core.types import ScalarType
from pyshark.errors import InternalCompilerError

TYPES = list(ScalarType)
BIN = sorted(ops.BINARY)
UN = sorted(ops.UNARY)


def edge_values(t: ScalarType) -> list:
    if t.is_bool:
        vals = [False, True]
    elif t.is_float:
        vals = [0.0, -0.0, 0.5, 1.0, -1.5, 2.0, 1e30, np.inf, -np.inf, np.nan]
    else:
        info = np.iinfo(t.dtype)
        vals = sorted({0, 1, 2, 3, t.bits, int(info.max), int(info.min),
                       *([-1, -2] if t.is_signed else [])})
    return [t.numpy_type(v) for v in vals]


@contextlib.contextmanager
def quiet():
    """numpy's overflow and invalid-value warnings off (they are not errors)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_the_table_is_exactly_the_ir_operators():
    assert set(ops.BINARY) == ir.BINOPS and set(ops.UNARY) == ir.UNOPS
    assert all(o.arity == 2 for o in ops.BINARY.values())
    assert all(o.arity == 1 for o in ops.UNARY.values())
    assert ops.COMPARISONS == ir.COMPARISONS == {"eq", "ne", "lt", "le", "gt", "ge"}
    assert {n for n, o in ops.UNARY.items() if o.result == ops.BOOL} == ir.BOOL_RESULT_UNOPS
    for o in [*ops.BINARY.values(), *ops.UNARY.values()]:
        assert o.kinds and o.kinds <= set(ops.KINDS), o.name
        assert set(o.ref) == o.kinds, o.name
        assert set(o.raises) <= o.kinds, o.name
        assert all(r.error in ir.ERROR_KINDS for r in o.raises.values())


def test_only_integer_division_modulo_and_powers_can_raise():
    raising = {(n, k) for n, o in ops.BINARY.items() for k in o.raises}
    assert raising == {("floordiv", "int"), ("mod", "int"), ("pow", "int"), ("power", "int")}
    assert not any(o.raises for o in ops.UNARY.values())
    assert ops.BINARY["floordiv"].raises_on(ScalarType.U8).error == "ZeroDivisionError"
    assert ops.BINARY["pow"].raises_on(ScalarType.I32).error == "ValueError"
    assert ops.BINARY["pow"].raises_on(ScalarType.U32) is None       # no negative exponent
    assert ops.BINARY["pow"].raises_on(ScalarType.F64) is None


@pytest.mark.parametrize("name", BIN)
def test_binary_references_follow_the_table(name):
    """On every accepted type and every pair of edge values: the result has
    the table's result type, and only the table's error is raised, exactly
    when its condition holds."""
    op = ops.BINARY[name]
    for t in TYPES:
        if not op.accepts(t):
            continue
        f, err = op.reference(t), op.raises_on(t)
        for x, y in itertools.product(edge_values(t), repeat=2):
            should_fail = err is not None and (y == 0 if err.error == "ZeroDivisionError"
                                               else y < 0)
            with quiet():
                if should_fail:
                    with pytest.raises(err.exception, match=err.message[:20]):
                        f(x, y)
                    continue
                r = f(x, y)
            assert type(r) is op.result_type(t).numpy_type, (name, t, x, y, r)


@pytest.mark.parametrize("name", UN)
def test_unary_references_follow_the_table(name):
    op = ops.UNARY[name]
    for t in TYPES:
        if not op.accepts(t):
            continue
        for x in edge_values(t):
            with quiet():
                r = op.reference(t)(x)
            assert type(r) is op.result_type(t).numpy_type, (name, t, x, r)


def _one_op_fun(op: str, t: ScalarType, binary: bool) -> ir.FunDef:
    x, y = ir.Var("x", t), ir.Var("y", t)
    e = ir.BinOp(op, x, y) if binary else ir.UnOp(op, x)
    table = ops.BINARY if binary else ops.UNARY
    rt = table[op].result_type(t) if op in table else t
    r = ir.Var("r", rt)
    body = ir.Body((ir.Let((r,), e, ir.Loc("ops.py", 3, 4)),), (r,))
    return ir.FunDef("f", (x, y), (rt,), body)


@pytest.mark.parametrize("binary", [True, False])
def test_checker_accepts_exactly_the_tables_types(binary):
    table = ops.BINARY if binary else ops.UNARY
    for name, op in table.items():
        for t in TYPES:
            f = _one_op_fun(name, t, binary)
            if op.accepts(t):
                check_fundef(f)
            else:
                with pytest.raises(InternalCompilerError, match=f"{name} is not defined on {t}"):
                    check_fundef(f)
    with pytest.raises(InternalCompilerError, match="unknown"):
        check_fundef(_one_op_fun("hypot", ScalarType.F64, binary))


def _run_binop(name, t, x, y, loc=None):
    e = ir.BinOp(name, ir.Const(x.item(), t), ir.Const(y.item(), t))
    it = interp.Interpreter(ir.Program({}, {}))
    with quiet():
        (r,) = interp._DISPATCH[ir.BinOp](it, e, {}, loc)
    return r


@pytest.mark.parametrize("name", BIN)
def test_interpreter_runs_the_tables_references(name):
    op = ops.BINARY[name]
    for t in TYPES:
        if not op.accepts(t):
            continue
        vals = edge_values(t)
        for x, y in zip(vals, vals[::-1] + vals[:1]):
            if op.raises_on(t) and (y == 0 or y < 0):
                continue
            with quiet():
                want = op.reference(t)(x, y)
            got = _run_binop(name, t, x, y)
            assert type(got) is type(want)
            assert np.array_equal(got, want, equal_nan=True), (name, t, x, y)


def test_interpreter_errors_are_the_tables_with_the_location():
    loc = ir.Loc("prog.py", 3, 4)
    i32 = ScalarType.I32
    for name, y in [("floordiv", 0), ("mod", 0), ("pow", -1), ("power", -2)]:
        err = ops.BINARY[name].raises_on(i32)
        with pytest.raises(err.exception) as info:
            _run_binop(name, i32, np.int32(7), np.int32(y), loc)
        assert str(info.value) == f"{err.message} (at prog.py:3:5)"


def test_pretty_printer_spells_operators_as_the_table():
    x, y = ir.Var("x", ScalarType.I64), ir.Var("y", ScalarType.I64)
    for name, op in ops.BINARY.items():
        text = pretty_exp(ir.BinOp(name, x, y))
        assert text == (f"x {op.symbol} y" if op.symbol else f"{name}(x, y)")
    for name, op in ops.UNARY.items():
        text = pretty_exp(ir.UnOp(name, x))
        assert text == (f"{op.symbol}x" if op.symbol else f"{name}(x)")
    assert pretty_exp(ir.BinOp("power", x, y)) == "power(x, y)"
    assert pretty_exp(ir.BinOp("land", x, y)) == "x && y"


def test_spellings_name_real_python_operators_and_prelude_functions():
    assert ops.PYTHON_BINARY["+"] == "add" and ops.PYTHON_BINARY["**"] == "pow"
    assert ops.PYTHON_BINARY["/"] == "div" and ops.PYTHON_BINARY["and"] == "land"
    assert ops.PYTHON_UNARY == {"-": "neg", "not": "not", "~": "bnot"}
    assert ops.BINARY["power"].spelling == "ps.pow"
    for o in [*ops.BINARY.values(), *ops.UNARY.values()]:
        assert o.python or o.prelude, o.name
        if o.prelude and o.prelude.startswith("ps."):
            assert callable(getattr(ps, o.prelude[3:])), o.prelude
    assert ops.FLOAT_ONLY_UNARY == ir.UNOPS - {"neg", "not", "bnot", "abs", "sign"}


class _Lowering:
    """The callbacks scalar.binop takes; records the guards it emits."""

    def __init__(self):
        self.stms, self.fails, self.n = [], [], 0

    def emit(self, s):
        self.stms.append(s)

    def fail(self, kind, text):
        self.fails.append((kind, text))
        return K.Fail(kind, 0)

    def new_var(self, t):
        self.n += 1
        return K.KVar(f"v{self.n}", t)


@pytest.mark.parametrize("name", BIN)
def test_scalar_lowering_covers_the_table(name):
    """Every operator lowers on every type the table accepts, to a kernel
    expression of the table's result type, guarded by the table's error
    exactly where the table says it may raise."""
    op = ops.BINARY[name]
    for t in TYPES:
        if not op.accepts(t):
            continue
        lw = _Lowering()
        x, y = K.KVar("x", t), K.KVar("y", t)
        r = S.binop(name, x, y, emit=lw.emit, fail=lw.fail, new_var=lw.new_var)
        assert K.type_of(r) == op.result_type(t), (name, t)
        err = op.raises_on(t)
        assert lw.fails == ([(err.error, err.message)] if err else []), (name, t)
    for name in UN:
        for t in TYPES:
            if ops.UNARY[name].accepts(t):
                r = S.unop(name, K.KVar("x", t))
                assert K.type_of(r) == ops.UNARY[name].result_type(t), (name, t)
    with pytest.raises(NotImplementedError):
        S.binop("hypot", x, y, emit=lw.emit, fail=lw.fail, new_var=lw.new_var)
