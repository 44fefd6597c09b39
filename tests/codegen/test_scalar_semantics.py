"""The target-independent scalar semantics that codegen/scalar.py builds once
from kernel-IR primitives -- guarded integer // and % (ZeroDivisionError,
INT_MIN // -1), numpy's float -> int conversion (NaN, infinities, out of
range, to every int type), NaN and -0.0 in min/max, floor division and
comparisons -- run on their edge values in the reference interpreter, on the
CPU backend (LLVM) and on OpenCL (kernels and host code), against numpy,
bit for bit. And the spelling tables of every emitter against the
primitives kir.py lists: an emitter spells each of them, nothing else."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyshark.codegen import kir as K, scalar as S
from pyshark.codegen.kir_interp import Buffer, run_function
from pyshark.core.types import BOOL, F32, F64, FLOAT_TYPES, I64, INT_TYPES, ScalarType

ZERO_DIV = K.ERROR_CODES["ZeroDivisionError"]


def _fail(kind, text):
    return K.Fail(kind, 0)


def _no_var(t):
    raise AssertionError("no loop expected")


def binop(op):
    """core BinOp `op` as scalar.py builds it (guards emitted before the store)."""
    return lambda x, y, emit: S.binop(op, x, y, emit=emit, fail=_fail, new_var=_no_var)


def elementwise(name, tins, outs, par):
    """outs[k][i] = make_k(ins[0][i], ..., emit) for i < n, all in one loop
    (a ParFor, or a For of host code); `outs` is [(type, make)]."""
    xs = [K.KVar(f"x{k}", K.Ptr(t)) for k, t in enumerate(tins)]
    os_ = [K.KVar(f"o{k}", K.Ptr(t)) for k, (t, _) in enumerate(outs)]
    n, i = K.KVar("n", I64), K.KVar("i", I64)
    loads = [K.Load(x, i) for x in xs]
    stms: list = []
    for o, (_, make) in zip(os_, outs):
        stms.append(K.Store(o, i, make(*loads, emit=stms.append)))
    body = K.Block(tuple(stms))
    loop = K.ParFor(i, n, body) if par else K.For(i, K.KConst(0, I64), n, body)
    return K.Function(name, tuple(xs) + tuple(os_) + (n,), K.Block((loop,)))


# ---------------------------------------------------------------------------
# Edge values and what numpy gives for them


def float_edges(t):
    """NaN, infinities, signed zeros, and every int type's limits +- 1/2, 1."""
    vals = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, -0.9999, 1.5, -1.5, 2.5, -7.0,
            1e20, -1e20, 3e9, -3e9, 5e9, -5e9, 2.0 ** 53, 2.0 ** 64 - 2048, 2.0 ** 64,
            2.0 ** 63, -2.0 ** 63, -2.0 ** 63 - 4096, float(np.finfo(t.dtype).max),
            float(np.finfo(t.dtype).smallest_subnormal)]
    for it in INT_TYPES:
        info = np.iinfo(it.dtype)
        vals += [float(info.min) + d for d in (-1.0, -0.5, 0.0)]
        vals += [float(info.max) + d for d in (0.0, 0.5, 1.0)]
    with np.errstate(over="ignore"):
        return np.array(vals, dtype=t.dtype)


def pairs(vals):
    a, b = np.meshgrid(vals, vals)
    return a.ravel(), b.ravel()


def float_pairs(t):
    tiny = 1e-300 if t is F64 else 1e-40
    return pairs(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0,
                           -7.0, tiny], dtype=t.dtype))


def int_samples(t):
    info = np.iinfo(t.dtype)
    vals = [info.min, info.min + 1, -7, -1, 0, 1, 2, 7, 100, info.max - 1, info.max]
    return np.array(sorted({v for v in vals if info.min <= v <= info.max}), dtype=t.dtype)


def shift_amounts(t):
    vals = [-1, 0, 1, t.bits - 1, t.bits, t.bits + 1, 100, 2 ** (t.bits - 1) - 1]
    return np.array([v % (1 << t.bits) if t.is_unsigned else v for v in vals
                     if v < 2 ** (t.bits - 1) or t.is_unsigned], dtype=t.dtype)


def expected(ref, *cols, dtype):
    """ref on each row of numpy scalars (Python mode's arithmetic)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.array([ref(*row) for row in zip(*cols)], dtype=dtype)


def mismatch(got, want, *, zero_sign=True):
    """Where got and want differ in bits (any NaN equals any NaN);
    zero_sign=False: 0.0 equals -0.0."""
    if got.dtype.kind != "f":
        return got != want
    u = f"u{got.itemsize}"
    eq = (got.view(u) == want.view(u)) | (np.isnan(got) & np.isnan(want))
    if not zero_sign:
        eq |= (got == 0) & (want == 0)
    return ~eq


# One case: (function name, inputs, [(out type, make, numpy reference)]).
def cases():
    out = []
    for t in FLOAT_TYPES:
        x = float_edges(t)
        convs = [(to, lambda a, emit, to=to: S.convert(to, a), lambda a, to=to: to.numpy_type(a))
                 for to in INT_TYPES + (BOOL,)]
        out.append((f"convert_{t.value}", [x], convs))
        a, b = float_pairs(t)
        ops = [("floordiv", np.floor_divide), ("mod", np.remainder), ("min", np.minimum),
               ("max", np.maximum), ("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
               ("ge", np.greater_equal)]
        out.append((f"binary_{t.value}", [a, b],
                    [(BOOL if op in K.CMP_PRIMS else t, binop(op), ref) for op, ref in ops]))
        out.append((f"unary_{t.value}", [x], [
            (t, lambda a, emit: S.unop("neg", a), np.negative),
            (t, lambda a, emit: S.unop("abs", a), np.abs),
            (BOOL, lambda a, emit: S.unop("isnan", a), np.isnan)]))
    for t in INT_TYPES:
        a, b = pairs(int_samples(t))
        nz = b != 0
        out.append((f"divmod_{t.value}", [a[nz], b[nz]], [
            (t, binop("floordiv"), np.floor_divide), (t, binop("mod"), np.remainder),
            (t, binop("min"), np.minimum), (t, binop("max"), np.maximum)]))
        # the truncating division the primitive's precondition needs, made safe
        # by scalar.py itself (C's x % y is numpy's fmod on ints, 0 for y == 0)
        out.append((f"trunc_{t.value}", [a, b], [
            (t, lambda x, y, emit: S.int_div_trunc(x, y), c_div),
            (t, lambda x, y, emit: S.int_rem_trunc(x, y), np.fmod)]))
        sx, sy = np.repeat(int_samples(t), len(shift_amounts(t))), np.tile(
            shift_amounts(t), len(int_samples(t)))
        out.append((f"shift_{t.value}", [sx, sy], [
            (t, binop("shl"), np.left_shift), (t, binop("shr"), np.right_shift)]))
    return out


def c_div(x, y):
    """C's truncating x / y made total as scalar.int_div_trunc makes it:
    x / 0 = x, MIN / -1 = MIN (wraps, as numpy's MIN // -1)."""
    if y == 0:
        return x
    q = abs(int(x)) // abs(int(y))
    q = q if (int(x) < 0) == (int(y) < 0) else -q
    t = ScalarType.from_dtype(x.dtype)
    return np.array(q & ((1 << t.bits) - 1), dtype=np.uint64).astype(t.dtype)[()]


def zero_divisor_cases():
    return [(f"{op}0_{t.value}", t, op) for t in INT_TYPES for op in ("floordiv", "mod")]


def module(par: bool) -> K.Module:
    fns = [elementwise(name, [ScalarType.from_dtype(a.dtype) for a in ins],
                       [(rt, mk) for rt, mk, _ in outs], par) for name, ins, outs in cases()]
    fns += [elementwise(name, [t, t], [(t, binop(op))], par)
            for name, t, op in zero_divisor_cases()]
    return K.Module(fns, ["integer division or modulo by zero"])


# ---------------------------------------------------------------------------
# The backends: each runs an entry on numpy arrays -> error code (0: none)


@pytest.fixture(scope="module", params=["interp", "cpu", "opencl-kernel", "opencl-host"])
def backend(request, tmp_path_factory):
    kind = request.param
    if kind == "interp":
        m = module(par=True)

        def call(name, *arrays):
            r = run_function(m, name, [Buffer(a) for a in arrays] + [np.int64(len(arrays[0]))])
            return r.code
        return call
    if kind == "cpu":
        from cpu.cpu_harness import build
        lib = build(module(par=True), tmp_path_factory.mktemp("scalar_semantics"))
        return lambda name, *arrays: lib.call(name, *arrays, len(arrays[0]))[0]
    from opencl.ocl_harness import build
    host = kind == "opencl-host"
    lib = build(module(par=not host))

    def call(name, *arrays):
        res = lib.call(name, *arrays, np.int64(len(arrays[0])), host_memory=host)
        return 0 if res is None else res[0]
    return call


@pytest.mark.parametrize("name,ins,outs", cases(), ids=[c[0] for c in cases()])
def test_edge_values_agree_with_numpy(backend, name, ins, outs):
    got = [np.zeros(len(ins[0]), rt.dtype) for rt, _, _ in outs]
    assert backend(name, *ins, *got) == 0
    for k, ((rt, _, ref), g) in enumerate(zip(outs, got)):
        want = expected(ref, *ins, dtype=rt.dtype)
        # numpy's minimum / maximum return the second operand when the two
        # compare equal (min(0.0, -0.0) is -0.0); on floats kir's min / max
        # return either, on ints scalar.py returns the first, so the sign of
        # a zero there is not numpy's (LANGUAGE.md's golden rule ignores the
        # sign of zero)
        bad = mismatch(g, want, zero_sign=not (name.startswith("binary_") and k in (2, 3)))
        assert not bad.any(), (name, k, [c[bad] for c in ins], g[bad], want[bad])


@pytest.mark.parametrize("name,t,op", zero_divisor_cases(),
                         ids=[c[0] for c in zero_divisor_cases()])
def test_integer_division_by_zero_raises(backend, name, t, op):
    x = np.array([5, 0, 1, 3], dtype=t.dtype)
    y = np.array([1, 2, 0, 1], dtype=t.dtype)
    assert backend(name, x, y, np.zeros(4, t.dtype)) == ZERO_DIV


def test_min_max_of_floats_propagate_nan_and_tie_zeros_either_way():
    """What the agreement test above lets differ from numpy, pinned: on
    floats scalar.minimum / maximum are kir's `min` / `max` (NaN from
    either operand; of -0.0 and 0.0 either, kir.py), so a zero tie gives a
    zero of either sign."""
    for t in FLOAT_TYPES:
        z, nz, nan, one = (t.numpy_type(v) for v in (0.0, -0.0, float("nan"), 1.0))
        outs = [(t, binop("min"), None), (t, binop("max"), None)]
        m = K.Module([elementwise("f", [t, t], [(rt, mk) for rt, mk, _ in outs], False)], [])
        got = [np.zeros(4, t.dtype) for _ in outs]
        x, y = np.array([z, nz, nan, one]), np.array([nz, z, one, nan])
        assert run_function(m, "f", [Buffer(x), Buffer(y)] + [Buffer(g) for g in got]
                            + [np.int64(4)]).code == 0
        for g in got:
            assert (g[:2] == 0).all() and np.isnan(g[2:]).all()


# ---------------------------------------------------------------------------
# The spelling tables


def _bin_keys():
    return {(op, c) for op, cs in K.BIN_CLASSES.items() for c in cs}


def _un_keys():
    return {(op, c) for op, cs in K.UN_CLASSES.items() for c in cs}


def _tables():
    from pyshark.codegen import kir_interp
    from pyshark.codegen.cpu import emit_llvm
    from pyshark.codegen.opencl import emit_cl, host
    return {
        "emit_llvm": (emit_llvm.BIN_SPELLINGS, emit_llvm.UN_SPELLINGS, emit_llvm.CAST_SPELLINGS),
        "emit_cl": (emit_cl.BIN_SPELLINGS, emit_cl.UN_SPELLINGS, emit_cl.CAST_SPELLINGS),
        "host": (host.HOST_BIN, host.HOST_UN, host.HOST_CAST),
        "kir_interp": (kir_interp.BIN_IMPL, kir_interp.UN_IMPL, kir_interp.CAST_IMPL),
    }


@pytest.mark.parametrize("emitter", ["emit_llvm", "emit_cl", "host", "kir_interp"])
def test_spelling_tables_cover_exactly_the_primitives(emitter):
    bins, uns, casts = _tables()[emitter]
    assert set(bins) == _bin_keys(), set(bins) ^ _bin_keys()
    assert set(uns) == _un_keys(), set(uns) ^ _un_keys()
    assert set(casts) == set(K.CAST_CLASSES), set(casts) ^ set(K.CAST_CLASSES)


def test_the_class_tables_are_the_primitive_lists():
    assert set(K.BIN_CLASSES) == K.BIN_PRIMS and set(K.UN_CLASSES) == K.UN_PRIMS
    assert {c for cs in K.BIN_CLASSES.values() for c in cs} == set("fsub")
    assert K.scalar_class(BOOL) == "b" and K.scalar_class(F32) == "f"
    assert [K.scalar_class(t) for t in INT_TYPES] == list("ssssuuuu")


def test_emitters_spell_a_primitive_without_a_meaning_of_their_own():
    """int div, shl and float -> int are the bare machine operations (sdiv,
    shl, fptosi; C's / << and (int)): the guards that give them numpy's
    values are scalar.py's kernel IR, not spellings."""
    from pyshark.codegen.cpu import emit_module
    from pyshark.codegen.opencl import emit_cl
    from pyshark.core.types import I32
    prims = [(I32, lambda x, y: K.Bin("div", x, y), "sdiv", "/"),
             (I32, lambda x, y: K.Bin("shl", x, y), "shl", "<<"),
             (F64, lambda x, y: K.Cast(I32, x), "fptosi", "(int)")]
    for t, mk, ll_op, cl_op in prims:
        x, y, o, i = K.KVar("x", t), K.KVar("y", t), K.KVar("o", K.Ptr(I32)), K.KVar("i", I64)
        store = K.Store(o, K.KConst(0, I64), mk(x, y))
        llvm = emit_module(K.Module([K.Function("f", (x, y, o), K.Block((store,)))], []))
        body = llvm[llvm.index('define i32 @"f"'):]
        body = body[:body.index("\n}\n")]
        assert ll_op in body and "select" not in body and "icmp" not in body, body
        par = K.ParFor(i, K.KConst(1, I64), K.Block((store,)))
        cl = emit_cl.emit_kernel("f", par).source
        assert cl_op in cl and "?" not in cl and "&" not in cl, cl
