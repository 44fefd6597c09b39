"""Every Bin/Un/Cast primitive per scalar type, in OpenCL kernels on the test
device (PoCL) and in the generated host code, against numpy: bit-exact for
ints, bools, + - * / sqrt, fmod, the rounding functions and every cast; close
for the math functions (OpenCL built-ins in kernels, libm on the host); NaN,
infinities, signed zeros and integer extremes included.

One kernel per type and kind (binary / unary / casts) keeps the number of
kernels PoCL compiles small."""
from __future__ import annotations

import warnings

import pytest

from ocl_harness import BOOL, F32, F64, K, build, multi, np, np_same
from prim_reference import (ALL_TYPES, bit_cast_samples, EXACT_UN, N, NP_BIN, NP_UN, bin_ops_for, cvtt_model,
                            trunc_div, un_ops_for)
from pyshark.codegen import scalar as S
from pyshark.core.types import I32, I64, U32






# inputs of the binary function of a type: x, y, xd, yd (div/rem: no zero
# divisor, no MIN / -1), ys (shift amounts)
def _bin_inputs(op, t):
    if t.is_int and op in ("div", "rem"):
        return 2, 3
    if op in ("shl", "shr"):
        return 0, 4
    return 0, 1


def _bin_fn(t, par):
    outs = []
    for op in bin_ops_for(t):
        a, b = _bin_inputs(op, t)
        rt = BOOL if op in K.CMP_PRIMS else t
        outs.append((rt, lambda *xs, op=op, a=a, b=b: K.Bin(op, xs[a], xs[b])))
    return multi(f"bin_{t.value}", [t] * 5, outs, par)


def _un_fn(t, par):
    outs = []
    for op in un_ops_for(t):
        rt = BOOL if op == "isnan" else t
        a = 1 if op in ("asin", "acos") else 0
        outs.append((rt, lambda *xs, op=op, a=a: K.Un(op, xs[a])))
    return multi(f"un_{t.value}", [t, t], outs, par)


def _cast_fn(t, par):
    """numpy's conversions: Cast, or scalar.py's float -> int around it."""
    return multi(f"cast_{t.value}", [t], [(to, lambda x, to=to: S.convert(to, x))
                                          for to in ALL_TYPES], par)


def _module(par):
    fns = []
    for t in ALL_TYPES:
        fns += [_bin_fn(t, par), _un_fn(t, par), _cast_fn(t, par)]
    return K.Module(fns)


@pytest.fixture(scope="module", params=["kernel", "host"])
def lib(request):
    """The primitives in kernels (ParFor) or in host code (For, host memory)."""
    par = request.param == "kernel"
    b = build(_module(par))
    b.host_memory = not par
    return b


def data(t, seed=0, *, nonzero=False, shift=False):
    rng = np.random.default_rng(seed)
    dt = t.dtype
    if t is BOOL:
        return rng.integers(0, 2, N).astype(bool)
    if t.is_int:
        info = np.iinfo(dt)
        if shift:
            return rng.integers(0, t.bits, N).astype(dt)
        edge = [info.min, info.max, 0, 1, -1 if t.is_signed else 2, info.min + 1, info.max - 1]
        a = rng.integers(info.min, info.max, N, dtype=dt, endpoint=True)
        small = rng.integers(-9 if t.is_signed else 0, 10, N).astype(dt)
        a[::3] = small[::3]
        a[:len(edge)] = np.array(edge, dtype=dt)
        if nonzero:
            a[a == 0] = 3
        return a
    a = (rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4, N)).astype(dt)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5,
               np.finfo(dt).tiny / 4, np.finfo(dt).max, -np.finfo(dt).max, 3.0]
    a[:len(special)] = np.array(special, dtype=dt)
    return a


def run(lib, name, ins, out_dtypes):
    outs = [np.zeros(N, dtype=d) for d in out_dtypes]
    assert lib.call(name, *ins, *outs, np.int64(N), host_memory=lib.host_memory) is None
    return outs


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_binary(lib, t):
    x, y = data(t, 2), data(t, 1)
    yd = data(t, 1, nonzero=True)
    xd = data(t, 2)
    if t.is_int and t.is_signed:
        xd[(yd == -1) & (xd == np.iinfo(t.dtype).min)] = 5
    ys = data(t, 1, shift=True) if t.is_int else y
    ops = bin_ops_for(t)
    outs = run(lib, f"bin_{t.value}", [x, y, xd, yd, ys],
               [np.bool_ if op in K.CMP_PRIMS else t.dtype for op in ops])
    for op, got in zip(ops, outs):
        a, b = [(x, y, xd, yd, ys)[k] for k in _bin_inputs(op, t)]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if op == "div":
                want = np.divide(a, b).astype(t.dtype) if t.is_float else trunc_div(a, b)
            else:
                want = NP_BIN[op](a, b)
                if op not in K.CMP_PRIMS:
                    want = want.astype(t.dtype)
        if op in ("pow", "atan2"):
            np.testing.assert_allclose(got, want, rtol=4e-6 if t is F32 else 1e-14,
                                       equal_nan=True, err_msg=f"{op} {t}")
        else:
            bad = got != want
            assert np_same(got, want), (op, t, a[bad], b[bad], got[bad], want[bad])


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_unary(lib, t):
    x = data(t, 3)
    xa = x
    if t.is_float:
        with np.errstate(invalid="ignore"):
            xa = (x % 2.0 - 1.0).astype(t.dtype)
        xa[:3] = [np.nan, 1.0, -1.0]
    ops = un_ops_for(t)
    outs = run(lib, f"un_{t.value}", [x, xa], [np.bool_ if op == "isnan" else t.dtype for op in ops])
    for op, got in zip(ops, outs):
        a = xa if op in ("asin", "acos") else x
        with np.errstate(all="ignore"):
            want = (np.logical_not(a) if t is BOOL else np.invert(a)) if op == "not" else NP_UN[op](a)
        if op in EXACT_UN:
            if op == "neg" and t.is_float:      # fneg flips the sign bit: compare bits
                # (of non-NaNs: NVIDIA's OpenCL does not flip a NaN's sign, which
                # no PyShark program can observe -- there is no bitcast or copysign)
                ok = ~np.isnan(a)
                assert np.array_equal(got[ok].view(f"u{t.bits // 8}"),
                                      a[ok].view(f"u{t.bits // 8}") ^ (1 << (t.bits - 1)))
                assert np.isnan(got[~ok]).all()
            assert np_same(got, want.astype(got.dtype)), (op, t, a[got != want], got[got != want])
        else:
            np.testing.assert_allclose(got, want, rtol=4e-6 if t is F32 else 1e-13,
                                       atol=1e-30, equal_nan=True, err_msg=f"{op} {t}")


@pytest.mark.parametrize("frm", ALL_TYPES, ids=str)
def test_cast(lib, frm):
    x = data(frm, 4)
    if frm.is_float:      # the out-of-range table of test_cpu_scalar_ops, too
        x[15:26] = [np.nan, np.inf, -np.inf, 5e9, -5e9, 300.0, -1.0, 1e20, 2.0 ** 63, 2.0 ** 64,
                    3e9]
    outs = run(lib, f"cast_{frm.value}", [x], [to.dtype for to in ALL_TYPES])
    for to, got in zip(ALL_TYPES, outs):
        if frm.is_float and to.is_int:
            want = np.array([cvtt_model(float(e), to) for e in x], dtype=to.dtype)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = x.astype(to.dtype)
        assert np_same(got, want), (frm, to, x[got != want], got[got != want], want[got != want])


def test_constants_are_exact():
    """Literals of every type's extremes, NaN, infinities and -0.0."""
    from pyshark.core.types import ScalarType
    consts = []
    for t in ALL_TYPES:
        if t is BOOL:
            vals = [True, False]
        elif t.is_int:
            info = np.iinfo(t.dtype)
            vals = [int(info.min), int(info.max), 0, -1 if t.is_signed else 1]
        else:
            fi = np.finfo(t.dtype)
            vals = [float("nan"), float("inf"), float("-inf"), -0.0, float(fi.max),
                    float(fi.smallest_subnormal), 0.1 if t is K.F64 else float(np.float32(0.1))]
        consts += [(t, val) for val in vals]
    outs = [K.KVar(f"o{k}", K.Ptr(t)) for k, (t, _) in enumerate(consts)]
    i = K.KVar("i", I64)
    body = K.Block(tuple(K.Store(o, i, K.KConst(val, t)) for o, (t, val) in zip(outs, consts)))
    f = K.Function("consts", tuple(outs) + (K.KVar("n", I64),),
                   K.Block((K.ParFor(i, K.KVar("n", I64), body),)))
    b = build(K.Module([f]))
    arrays = [np.zeros(2, t.dtype) for t, _ in consts]
    b.call("consts", *arrays, np.int64(2))
    for (t, val), a in zip(consts, arrays):
        want = np.array([val, val], dtype=ScalarType(t.value).dtype)
        assert np_same(a, want), (t, val, a)
        if t.is_float and val == 0:
            assert np.signbit(a).all()


BIT_CAST_PAIRS = [(F32, U32), (U32, F32), (I32, F32), (F64, I64), (I64, F64)]


@pytest.mark.parametrize("host_memory", [False, True], ids=["kernel", "host"])
@pytest.mark.parametrize("frm,to", BIT_CAST_PAIRS, ids=str)
def test_bit_cast(frm, to, host_memory):
    """Cast(bits=True) reads the same bits as another type (as_type in a
    kernel, a numpy view on the host), NaN payloads and -0.0 included."""
    lib = build(K.Module([multi("f", [frm], [(to, lambda x: K.Cast(to, x, bits=True))],
                                par=not host_memory)], []))
    x = bit_cast_samples(frm)
    out = np.zeros(len(x), to.dtype)
    assert lib.call("f", x, out, np.int64(len(x)), host_memory=host_memory) is None
    assert np.array_equal(out.view(np.uint8), x.view(to.dtype).view(np.uint8))


@pytest.mark.parametrize("t", [t for t in ALL_TYPES if t.is_int], ids=str)
def test_host_division_by_a_positive_constant(t):
    """Host code spells x / C and x % C for a constant C > 0 with numpy's
    // and % where x >= 0 (its floor is C's truncation there) and the exact
    helpers otherwise: the values of kir.py's truncating division, MIN and
    the negative numbers included."""
    info = np.iinfo(t.dtype)
    consts = [c for c in (1, 3, 7, 256, int(info.max)) if c <= info.max]
    outs = []
    for c in consts:
        k = K.KConst(c, t)
        outs += [(t, lambda x, k=k: K.Bin("div", x, k)), (t, lambda x, k=k: K.Bin("rem", x, k))]
    lib = build(K.Module([multi("f", [t], outs, par=False)], []))
    vals = [0, 1, 2, 255, 256, 257, -1, -2, -255, -256, -257, int(info.min),
            int(info.min) + 1, int(info.max), int(info.max) - 1, 12345]
    x = np.array([v for v in vals if info.min <= v <= info.max], dtype=t.dtype)
    got = [np.zeros(len(x), t.dtype) for _ in outs]
    assert lib.call("f", x, *got, np.int64(len(x)), host_memory=True) is None
    for j, c in enumerate(consts):
        q = [int(v) for v in x]
        want_q = [abs(v) // c * (1 if v >= 0 else -1) for v in q]
        want_r = [v - qq * c for v, qq in zip(q, want_q)]
        assert [int(v) for v in got[2 * j]] == want_q, c
        assert [int(v) for v in got[2 * j + 1]] == want_r, c
