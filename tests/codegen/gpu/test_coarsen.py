"""kir_passes/coarsen.py: streaming ParFors run F iterations per work-item, loads
before stores, only where moving the stores is sound; the values are those
of the plain ParFor (kir interpreter and PoCL), at sizes around F."""
from __future__ import annotations

import numpy as np
import pytest

from pyshark.codegen import kir as K
from pyshark.codegen.kir_passes.coarsen import coarsen_parfors
from pyshark.codegen.kir_interp import Buffer, run_function
from pyshark.core.types import F32, I64

F = 4
SIZES = [0, 1, 3, 4, 5, 8, 13, 1001]


def v(name, t):
    return K.KVar(name, t)


def c(x, t=I64):
    return K.KConst(x, t)


xs, ys, out, n = v("xs", K.Ptr(F32)), v("ys", K.Ptr(F32)), v("out", K.Ptr(F32)), v("n", I64)
m, i, x, y = v("m", K.Ptr(F32)), v("i", I64), v("x", F32), v("y", F32)


def module(body: list, before=(), after=()) -> K.Module:
    """f(xs, ys, out, n): m = alloc(n); before; parfor i { body }; after;
    out[0..n) = m; free(m)."""
    stms = ((K.Alloc(m, n),) + tuple(before) + (K.ParFor(i, n, K.Block(tuple(body))),)
            + tuple(after) + (K.CopyMem(out, m, n), K.Free(m)))
    return K.Module([K.Function("f", (xs, ys, out, n), K.Block(stms))],
                    ["negative element at {}"])


SAXPY = [K.Set(x, K.Load(xs, i)), K.Set(y, K.Load(ys, i)),
         K.If(K.Bin("lt", x, K.KConst(-1e30, F32)),
              K.Block((K.Fail("ValueError", 0, (i,)),))),
         K.Store(m, i, K.Bin("add", K.Bin("mul", K.KConst(2.0, F32), x), y))]


def parfors(mod: K.Module) -> list:
    return [s for s in K.walk_stms(mod.functions[0].body) if isinstance(s, K.ParFor)]


def run(mod: K.Module, size: int, order: str = "shuffle"):
    rng = np.random.default_rng(size)
    a, b = rng.random(size, dtype=np.float32), rng.random(size, dtype=np.float32)
    o = np.zeros(size, np.float32)
    res = run_function(mod, "f", [Buffer(a), Buffer(b), Buffer(o), np.int64(size)], order=order)
    assert res.code == 0, res.message
    return res, o


def test_a_streaming_parfor_is_coarsened_with_its_stores_last():
    mod = coarsen_parfors(module(SAXPY), F)
    K.check_module(mod)
    (p,) = parfors(mod)
    whole = next(s for s in p.body.stms if isinstance(s, K.If))
    stms = whole.then.stms
    stores = [k for k, s in enumerate(stms) if isinstance(s, K.Store)]
    assert len(stores) == F and stores == list(range(len(stms) - F, len(stms)))
    assert any(isinstance(s, K.For) for s in whole.orelse.stms)      # the tail


@pytest.mark.parametrize("size", SIZES)
def test_coarsened_values_equal_the_plain_parfor(size):
    plain, coarse = module(SAXPY), coarsen_parfors(module(SAXPY), F)
    for order in ("forward", "reverse"):
        (_, want), (_, got) = run(plain, size, order), run(coarse, size, order)
        assert np.array_equal(got, want), (size, order)


def test_a_failure_is_still_reported():
    mod = coarsen_parfors(module(SAXPY), F)
    a = np.ones(7, np.float32)
    a[5] = -np.inf
    res = run_function(mod, "f", [Buffer(a), Buffer(np.ones(7, np.float32)),
                                  Buffer(np.zeros(7, np.float32)), np.int64(7)])
    assert res.code == K.ERROR_CODES["ValueError"] and res.args == [5]


@pytest.mark.parametrize("case", ["store_into_param", "load_what_it_stores",
                                  "load_through_a_derived_pointer", "loop", "escapes",
                                  "no_loads"])
def test_declined_where_moving_stores_could_change_values(case):
    q, w, k = v("q", K.Ptr(F32)), v("w", K.Ptr(K.Ptr(F32))), v("k", I64)
    before, after = (), ()
    body = list(SAXPY)
    if case == "store_into_param":
        body[-1] = K.Store(out, i, x)
    elif case == "load_what_it_stores":
        body.append(K.Store(m, i, K.Bin("add", K.Load(m, i), y)))
    elif case == "load_through_a_derived_pointer":
        before = (K.Set(q, K.PtrAdd(m, c(0))),)
        body.insert(2, K.Set(y, K.Load(q, i)))
    elif case == "loop":
        body.insert(0, K.For(k, c(0), c(2), K.Block((K.Set(y, K.Load(ys, i)),))))
    elif case == "escapes":
        before = (K.Alloc(w, c(1)), K.Store(w, c(0), m))
        after = (K.Free(w),)
    elif case == "no_loads":
        body = [K.Store(m, i, K.KConst(1.0, F32))]
    mod = module(body, before, after)
    assert parfors(coarsen_parfors(mod, F)) == parfors(mod)


def test_factor_one_is_the_identity():
    mod = module(SAXPY)
    assert coarsen_parfors(mod, 1) is mod
