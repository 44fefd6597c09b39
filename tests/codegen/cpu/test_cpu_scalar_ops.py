"""Every Bin/Un/Cast primitive per scalar type (float -> int as scalar.convert
builds it), compiled and run against numpy:
bit-exact for ints and for + - * / sqrt and the rounding functions, close for
libm functions; NaN and infinities included."""
from __future__ import annotations

import warnings

import pytest

from cpu_harness import (BOOL, F32, F64, K, P, build, elementwise, np, np_same, v)
from pyshark.codegen import scalar as S
from pyshark.core.types import I64, U32
from prim_reference import (ALL_TYPES, bit_cast_samples, EXACT_UN, N, NP_BIN, NP_UN, bin_ops_for, cvtt_model,
                            trunc_div, un_ops_for)






def _module():
    fns = []
    for t in ALL_TYPES:
        for op in bin_ops_for(t):
            rt = BOOL if op in K.CMP_PRIMS else t
            fns.append(elementwise(f"bin_{op}_{t.value}", 2, t, rt,
                                   lambda x, y, op=op: K.Bin(op, x, y)))
        for op in un_ops_for(t):
            rt = BOOL if op == "isnan" else t
            fns.append(elementwise(f"un_{op}_{t.value}", 1, t, rt, lambda x, op=op: K.Un(op, x)))
        for to in ALL_TYPES:     # numpy's conversion: Cast, or scalar.py's float -> int
            fns.append(elementwise(f"cast_{t.value}_{to.value}", 1, t, to,
                                   lambda x, to=to: S.convert(to, x)))
    return K.Module(fns)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(_module(), tmp_path_factory.mktemp("scalar"))


def data(t, seed=0, *, nonzero=False, for_div=False, shift=False, other=None):
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
        if for_div and t.is_signed and other is not None:
            a[(a == -1) & (other == info.min)] = 7
        return a
    a = (rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4, N)).astype(dt)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5,
               np.finfo(dt).tiny / 4, np.finfo(dt).max, -np.finfo(dt).max, 3.0]
    a[:len(special)] = np.array(special, dtype=dt)
    return a


def run(lib, name, *ins, out_dtype):
    out = np.zeros(N, dtype=out_dtype)
    rc, _ = lib.call(name, *ins, out, N)
    assert rc == 0
    return out


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_binary(lib, t):
    for op in bin_ops_for(t):
        y = data(t, 1, nonzero=op in ("div", "rem") and not t.is_float, shift=op in ("shl", "shr"))
        x = data(t, 2, for_div=op in ("div", "rem"), other=y) if t.is_int else data(t, 2)
        if t.is_int and op in ("div", "rem") and t.is_signed:
            x[(y == -1) & (x == np.iinfo(t.dtype).min)] = 5
        rt = np.bool_ if op in K.CMP_PRIMS else t.dtype
        got = run(lib, f"bin_{op}_{t.value}", x, y, out_dtype=rt)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if op == "div":
                want = np.divide(x, y).astype(t.dtype) if t.is_float else trunc_div(x, y)
            else:
                want = NP_BIN[op](x, y)
                if op not in K.CMP_PRIMS:
                    want = want.astype(t.dtype)
        if op in ("pow", "atan2"):
            np.testing.assert_allclose(got, want, rtol=2e-6 if t is F32 else 1e-14, equal_nan=True,
                                       err_msg=f"{op} {t}")
        else:
            assert np_same(got, want), (op, t, x[got != want], y[got != want], got[got != want],
                                        want[got != want])


@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
def test_unary(lib, t):
    for op in un_ops_for(t):
        x = data(t, 3)
        if op in ("asin", "acos"):
            with np.errstate(invalid="ignore"):
                x = (x % 2.0 - 1.0).astype(t.dtype)
            x[:3] = [np.nan, 1.0, -1.0]
        rt = np.bool_ if op == "isnan" else t.dtype
        got = run(lib, f"un_{op}_{t.value}", x, out_dtype=rt)
        with np.errstate(all="ignore"):
            want = (np.logical_not(x) if t is BOOL else np.invert(x)) if op == "not" else NP_UN[op](x)
        if op in EXACT_UN:
            if op == "neg" and t.is_float:    # fneg flips the sign of NaNs too: compare bits
                assert np.array_equal(got.view(f"u{t.bits // 8}"),
                                      x.view(f"u{t.bits // 8}") ^ (1 << (t.bits - 1)))
            assert np_same(got, want.astype(rt)), (op, t, x[got != want], got[got != want])
        else:
            np.testing.assert_allclose(got, want, rtol=4e-6 if t is F32 else 1e-13,
                                       atol=1e-30, equal_nan=True, err_msg=f"{op} {t}")


@pytest.mark.parametrize("frm", ALL_TYPES, ids=str)
def test_cast(lib, frm):
    x = data(frm, 4)
    for to in ALL_TYPES:
        got = run(lib, f"cast_{frm.value}_{to.value}", x, out_dtype=to.dtype)
        if frm.is_float and to.is_int:
            info = np.iinfo(to.dtype)
            lo, hi = max(info.min, -2 ** 31), info.max
            inr = np.isfinite(x) & (x > lo - 1) & (x < hi + 1)
            want_in = x[inr].astype(to.dtype)
            assert np_same(got[inr], want_in), (frm, to, x[inr][got[inr] != want_in])
            want_out = np.array([cvtt_model(float(e), to) for e in x[~inr]], dtype=to.dtype)
            assert np_same(got[~inr], want_out), (frm, to, x[~inr], got[~inr], want_out)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = x.astype(to.dtype)
            assert np_same(got, want), (frm, to, x[got != want], got[got != want])


def test_float_to_int_out_of_range_values(lib):
    """The out-of-range table spelled out (x86 cvtt semantics, then truncated:
    scalar.convert's kernel IR around the fptosi primitive)."""
    x = np.array([np.nan, np.inf, -np.inf, 5e9, -5e9, 300.0, -1.0, 1e20, 2.0 ** 63,
                  2.0 ** 64, 3e9] + [0.0] * (N - 11))
    cases = {
        "i8": [0, 0, 0, 0, 0, 44, -1, 0, 0, 0, 0],
        "u8": [0, 0, 0, 0, 0, 44, 255, 0, 0, 0, 0],
        "i32": [-2 ** 31] * 5 + [300, -1] + [-2 ** 31] * 4,
        "u32": [0, 0, 0, 705032704, 3589934592, 300, 2 ** 32 - 1, 0, 0, 0, 3000000000],
        "i64": [-2 ** 63] * 3 + [5000000000, -5000000000, 300, -1] + [-2 ** 63] * 3 + [3000000000],
        "u64": [2 ** 63, 0, 2 ** 63, 5000000000, 2 ** 64 - 5000000000, 300, 2 ** 64 - 1, 0,
                2 ** 63, 0, 3000000000],
    }
    for to, want in cases.items():
        got = run(lib, f"cast_f64_{to}", x, out_dtype=K.ScalarType(to).dtype)
        assert got[:11].tolist() == want, (to, got[:11].tolist())


def test_bool_to_float_and_back(lib):
    x = np.array([True, False] * (N // 2) + [True])
    got = run(lib, "cast_bool_f64", x, out_dtype=np.float64)
    assert np.array_equal(got, x.astype(np.float64))
    y = np.array([0.0, -0.0, np.nan, 1e-300, -3.0] + [0.0] * (N - 5))
    got = run(lib, "cast_f64_bool", y, out_dtype=np.bool_)
    assert got[:5].tolist() == [False, False, True, True, True]


def test_sel_and_constants(tmp_path):
    x = v("x", P(F64))
    f = elementwise("clip", 1, F64, F64,
                    lambda a: K.Sel(K.Bin("lt", a, K.KConst(0.0, F64)), K.KConst(-1.5, F64),
                                    K.Sel(K.Un("isnan", a), K.KConst(float("inf"), F64), a)))
    from pyshark.core.types import U64, I8
    g = elementwise("consts", 1, U64, U64,
                    lambda a: K.Bin("add", a, K.KConst(2 ** 64 - 1, U64)))
    h = elementwise("consts8", 1, I8, I8, lambda a: K.Bin("xor", a, K.KConst(-128, I8)))
    b = build(K.Module([f, g, h]), tmp_path)
    xs = np.array([-3.0, 2.0, np.nan, -0.0])
    out = np.zeros(4)
    b.call("clip", xs, out, 4)
    assert out.tolist() == [-1.5, 2.0, float("inf"), -0.0]
    xu = np.array([0, 5], dtype=np.uint64)
    ou = np.zeros(2, np.uint64)
    b.call("consts", xu, ou, 2)
    assert ou.tolist() == [2 ** 64 - 1, 4]
    x8 = np.array([0, 1, -1], dtype=np.int8)
    o8 = np.zeros(3, np.int8)
    b.call("consts8", x8, o8, 3)
    assert o8.tolist() == [-128, -127, 127]


def test_every_primitive_builds_with_fastmath():
    """fast flags on every float operation still make valid, optimisable IR."""
    from pyshark.codegen.cpu import emit_module, optimised_ir
    text = emit_module(_module(), fastmath=True)
    assert "fcmp fast" in text and "call fast" in text
    assert "fcmp uno" in text          # isnan keeps its meaning
    optimised_ir(text)


@pytest.mark.parametrize("frm,to", [(F32, U32), (U32, F32), (F64, I64), (I64, F64)], ids=str)
def test_bit_cast(tmp_path, frm, to):
    """Cast(bits=True) is LLVM's bitcast: the same bits, NaN payloads and
    -0.0 included."""
    lib = build(K.Module([elementwise("f", 1, frm, to, lambda x: K.Cast(to, x, bits=True))], []),
                tmp_path)
    x = bit_cast_samples(frm)
    out = np.zeros(len(x), to.dtype)
    rc, _ = lib.call("f", x, out, len(x))
    assert rc == 0
    assert np.array_equal(out.view(np.uint8), x.view(to.dtype).view(np.uint8))
