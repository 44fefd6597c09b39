"""FMA contraction of a product into a reduction operator's `+`
(codegen/kir_passes/contract.py, LANGUAGE.md's one default exception):
the pass marks exactly what the rule allows, both backends spell it, dot
and matrix products agree with Python mode within the reduction's
tolerance, and a product outside a reduction stays bit-exact."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K
from pyshark.codegen import stages as ST
from pyshark.codegen.kir_passes.contract import contract_products
from pyshark.codegen.kir_traverse import block_exprs
from pyshark.codegen.target import gpu_target
from pyshark.core.check import check_program
from pyshark.core.types import F32, F64, I64
from pyshark.translate import translate_source

GPU = gpu_target(256, 32768, False)


def v(name, t=F32):
    return K.KVar(name, t)


def fn(*stms, params=()):
    return K.Module([K.Function("f", tuple(params), K.Block(tuple(stms)))])


def body(m: K.Module) -> tuple:
    return m.functions[0].body.stms


X, Y, ACC, T, S = v("x"), v("y"), v("acc"), v("t"), v("s")
PROD = K.Set(T, K.Bin("mul", X, Y))
INIT = (K.Set(X, K.KConst(2.0, F32)), K.Set(Y, K.KConst(3.0, F32)),
        K.Set(ACC, K.KConst(1.0, F32)))


def test_product_into_an_operator_add_is_fused_and_marked():
    m = contract_products(fn(*INIT, PROD, K.Set(S, K.Bin("add", ACC, T, reassoc=True))))
    K.check_module(m)
    *_, last = body(m)
    assert len(body(m)) == 4                    # the product's Set is gone
    assert last.value == K.Bin("add", ACC, K.Bin("mul", X, Y, contract=True), reassoc=True,
                               contract=True)


def test_other_sets_between_are_allowed_but_not_a_reassigned_operand():
    ok = contract_products(fn(*INIT, PROD, K.Set(v("u"), K.Bin("add", ACC, ACC)),
                              K.Set(S, K.Bin("add", T, ACC, reassoc=True))))
    assert body(ok)[-1].value.contract and body(ok)[-1].value.x.op == "mul"
    x2 = K.Set(X, K.KConst(5.0, F32))
    kept = fn(*INIT, PROD, x2, K.Set(S, K.Bin("add", ACC, T, reassoc=True)))
    assert contract_products(kept).functions[0].body == kept.functions[0].body


@pytest.mark.parametrize("case", ["plain add", "operator mul", "read twice", "int",
                                  "store between", "sub"])
def test_what_the_rule_does_not_allow_stays_as_written(case):
    add = K.Set(S, K.Bin("add", ACC, T, reassoc=True))
    stms = [*INIT, PROD, add]
    if case == "plain add":                     # a*b + c outside a reduction operator
        stms[-1] = K.Set(S, K.Bin("add", ACC, T))
    elif case == "operator mul":                # a product inside an operator
        stms[-2] = K.Set(T, K.Bin("mul", X, Y, reassoc=True))
    elif case == "read twice":                  # the product goes elsewhere too
        stms.append(K.Set(v("w"), K.Bin("add", T, T)))
    elif case == "int":
        a, b, c, t = v("a", I64), v("b", I64), v("c", I64), v("t", I64)
        stms = [K.Set(a, K.KConst(2, I64)), K.Set(b, K.KConst(3, I64)),
                K.Set(c, K.KConst(1, I64)), K.Set(t, K.Bin("mul", a, b)),
                K.Set(v("s", I64), K.Bin("add", c, t))]
    elif case == "store between":
        p = K.KVar("p", K.Ptr(F32))
        stms.insert(-1, K.Store(p, K.KConst(0, I64), X))
        m = fn(*stms, params=(p,))
        assert contract_products(m).functions[0].body == m.functions[0].body
        return
    elif case == "sub":
        stms[-1] = K.Set(S, K.Bin("sub", ACC, T, reassoc=True))
    m = fn(*stms)
    assert contract_products(m).functions[0].body == m.functions[0].body


@pytest.mark.parametrize("spelled", ["loaded variable", "load itself"])
def test_an_accumulator_from_memory_is_not_contracted(spelled):
    """acc = q[k]; s = acc + x*y; q[k] = s: the chain runs through memory
    and an FMA would lengthen it (contract.py's docstring); a register
    accumulator beside it in the same block is still contracted."""
    q = K.KVar("q", K.Ptr(F32))
    k = K.KConst(0, I64)
    load = K.Load(q, k)
    if spelled == "loaded variable":
        stms = [*INIT, K.Set(v("a"), load), PROD,
                K.Set(S, K.Bin("add", v("a"), T, reassoc=True))]
    else:
        stms = [*INIT, PROD, K.Set(S, K.Bin("add", load, T, reassoc=True))]
    stms += [K.Store(q, k, S), K.Set(v("t2"), K.Bin("mul", X, Y)),
             K.Set(v("s2"), K.Bin("add", ACC, v("t2"), reassoc=True))]
    m = contract_products(fn(*stms, params=(q,)))
    K.check_module(m)
    adds = [e for e in block_exprs(m.functions[0].body)
            if isinstance(e, K.Bin) and e.op == "add" and e.reassoc]
    assert [a.contract for a in adds] == [False, True]
    nested = fn(*INIT, K.Set(v("a"), load),
                K.Set(S, K.Bin("add", v("a"), K.Bin("mul", X, Y), reassoc=True)),
                params=(q,))
    assert contract_products(nested).functions[0].body == nested.functions[0].body


def test_a_column_reduction_of_products_is_not_contracted():
    """A matrix-vector product by columns (mc/colred.py: each chunk's
    partial sums are loaded, added to and stored per row) keeps its add and
    multiply apart; its result agrees with Python mode (test_colred.py)."""
    src = textwrap.dedent("""
        import pyshark.prelude as ps

        @ps.entry
        def colsum(l1: ps.Array[ps.f32], m: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.f32]:
            t = ps.transpose(m)
            return ps.map(lambda row: ps.sum(ps.map(lambda a, b: a * b, row, l1)), t)
    """)
    program = translate_source(src, "<test>")
    check_program(program)
    m = ST.run_stages(program, ST.pipeline_for(None), check=True)
    assert _marked(m, "colsum") == 0
    loads_added = [e for e in block_exprs(m.functions[0].body)
                   if isinstance(e, K.Bin) and e.op == "add" and e.reassoc]
    assert loads_added, "the column reduction's operator add is there"


def test_checker_refuses_contract_off_float_add_and_mul():
    bad = fn(K.Set(v("a", I64), K.Bin("add", K.KConst(1, I64), K.KConst(2, I64),
                                      contract=True)))
    with pytest.raises(Exception, match="contract"):
        K.check_module(bad)


SRC = """
import pyshark.prelude as ps

@ps.entry
def dot(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), ps.map(lambda x, y: x * y, xs, ys))

@ps.entry
def dot64(xs: ps.Array[ps.f64], ys: ps.Array[ps.f64]) -> ps.f64:
    return ps.sum(ps.map(lambda x, y: x * y, xs, ys))

@ps.entry
def cumdot(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.scan(lambda a, b: a + b, ps.f32(0.0), ps.map(lambda x, y: x * y, xs, ys))

@ps.entry
def mm(a: ps.Array[ps.Array[ps.f32]], b: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: ps.sum(ps.map(lambda x, y: x * y, row, col)), bt), a)

@ps.entry
def mm64(a: ps.Array[ps.Array[ps.f64]], b: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.Array[ps.f64]]:
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: ps.sum(ps.map(lambda x, y: x * y, row, col)), bt), a)

@ps.entry
def axpy(a: ps.Array[ps.f32], b: ps.Array[ps.f32], c: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x, y, z: x * y + z, a, b, c)

@ps.entry
def axpy64(a: ps.Array[ps.f64], b: ps.Array[ps.f64], c: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.map(lambda x, y, z: x * y + z, a, b, c)
"""


def _kernels(target) -> K.Module:
    program = translate_source(textwrap.dedent(SRC), "<test>")
    check_program(program)
    return ST.run_stages(program, ST.pipeline_for(target), check=True)


def _marked(m: K.Module, name: str) -> int:
    fn_ = next(f for f in m.functions if f.name.endswith(name))
    return sum(1 for e in block_exprs(fn_.body)
               if isinstance(e, K.Bin) and e.op == "add" and e.contract)


@pytest.mark.parametrize("target", [None, GPU], ids=["cpu", "gpu"])
def test_reductions_of_products_are_contracted_and_maps_are_not(target):
    m = _kernels(target)
    for name in ("dot", "dot64", "cumdot", "mm", "mm64"):
        assert _marked(m, name) >= 1, name
    assert _marked(m, "axpy") == 0 and _marked(m, "axpy64") == 0


def _fma_differs(a, b, c) -> np.ndarray:
    """Where one rounding of a*b + c differs from two (f32 via exact f64)."""
    fused = (a.astype(np.float64) * b + c).astype(np.float32)
    return fused != (a * b + c)


@pytest.fixture(scope="module", params=["cpu", "opencl"])
def pair(request, tmp_path_factory):
    return python_and(request.param, SRC, tmp_path_factory, "contract")


def test_product_outside_a_reduction_is_bit_exact(pair):
    py, w = pair
    rng = np.random.default_rng(7)
    n = 1003
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    assert _fma_differs(a, b, c).sum() > 50     # an FMA would show
    assert np.array_equal(w.axpy(a, b, c), py.axpy(a, b, c))
    a64, b64, c64 = (x.astype(np.float64) + rng.standard_normal(n) * 1e-9 for x in (a, b, c))
    assert np.array_equal(w.axpy64(a64, b64, c64), py.axpy64(a64, b64, c64))


@pytest.mark.parametrize("n", [0, 1, 7, 256, 1000, 4099])
def test_contracted_reductions_agree_within_tolerance(pair, n):
    py, w = pair
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    tol = 1e-5 * max(n, 1)
    assert abs(float(w.dot(x, y)) - float(py.dot(x, y))) <= tol * (1 + np.abs(x * y).sum())
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    assert abs(float(w.dot64(x64, y64)) - float(py.dot64(x64, y64))) <= 1e-12 * (1 + n)
    np.testing.assert_allclose(w.cumdot(x, y), py.cumdot(x, y), rtol=1e-4, atol=tol)


@pytest.mark.parametrize("n,k,m", [(0, 3, 2), (1, 1, 1), (5, 7, 9), (33, 17, 18), (70, 45, 131),
                                   (129, 64, 65)])
def test_contracted_matmul_agrees_within_tolerance(pair, n, k, m):
    py, w = pair
    rng = np.random.default_rng(n * 1000 + m)
    a = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal((k, m)).astype(np.float32)
    got, want = w.mm(a, b), py.mm(a, b)
    assert got.shape == want.shape == (n, m)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(k, 1))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(w.mm64(a64, b64), py.mm64(a64, b64), rtol=1e-12,
                               atol=1e-12 * max(k, 1))
