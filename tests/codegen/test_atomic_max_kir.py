"""kir.atomic_max: the AtomicUpdate form the emitters spell as an atomic max
(kir.atomic_max_operand recognises exactly it), accepted by the checker and
run by the interpreter in every ParFor order."""
from __future__ import annotations

import numpy as np
import pytest

from pyshark.codegen import kir as K
from pyshark.codegen.kir_check import KirError, check_module
from pyshark.codegen.kir_interp import run_function
from pyshark.core.types import BOOL, F32, I32, I64, U32

n, i = K.KVar("n", I64), K.KVar("i", I64)


def test_atomic_max_form_is_recognised_and_nothing_else():
    p, old, x = K.KVar("p", K.Ptr(I32)), K.KVar("old", I32), K.KVar("x", I32)
    s = K.atomic_max(p, i, old, x)
    assert K.atomic_max_operand(s) == x
    # min, max reading old in x, unsigned and float maxima: the general loop
    assert K.atomic_max_operand(K.AtomicUpdate(p, i, old, K.Sel(K.Bin("lt", x, old), x, old))) is None
    y = K.Bin("add", old, x)
    assert K.atomic_max_operand(K.AtomicUpdate(p, i, old, K.Sel(K.Bin("gt", y, old), y, old))) is None
    pu, ou, xu = K.KVar("pu", K.Ptr(U32)), K.KVar("ou", U32), K.KVar("xu", U32)
    assert K.atomic_max_operand(K.atomic_max(pu, i, ou, xu)) is None
    pf, of, xf = K.KVar("pf", K.Ptr(F32)), K.KVar("of", F32), K.KVar("xf", F32)
    assert K.atomic_max_operand(K.atomic_max(pf, i, of, xf)) is None


def _module(t):
    idx, owner, old = K.KVar("idx", K.Ptr(I64)), K.KVar("owner", K.Ptr(t)), K.KVar("old", t)
    body = K.Block((K.atomic_max(owner, K.Load(idx, i), old, K.Cast(t, i)),))
    return K.Module([K.Function("own", (idx, owner, n), K.Block((K.ParFor(i, n, body),)))])


@pytest.mark.parametrize("t", [I32, I64])
@pytest.mark.parametrize("order", ["shuffle", "reverse", "forward"])
def test_interpreter_elects_last_position(t, order):
    m = _module(t)
    check_module(m)
    idx = np.array([2, 0, 2, 2, 1, 0, 2, 4], np.int64)
    owner = np.full(5, -1, t.dtype)
    res = run_function(m, "own", [idx, owner, np.int64(len(idx))], nthreads=3, order=order)
    assert res.code == 0
    assert list(owner) == [5, 4, 6, -1, 7]


def test_checker_rejects_a_bool_or_mistyped_atomic_max():
    pb, ob, xb = K.KVar("pb", K.Ptr(BOOL)), K.KVar("ob", BOOL), K.KVar("xb", BOOL)
    bad = K.Module([K.Function("f", (pb, xb, n), K.Block((
        K.ParFor(i, n, K.Block((K.atomic_max(pb, i, ob, xb),))),)))])
    with pytest.raises(KirError):
        check_module(bad)
    p, old = K.KVar("p", K.Ptr(I32)), K.KVar("old", I32)
    wide = K.Module([K.Function("g", (p, n), K.Block((
        K.ParFor(i, n, K.Block((K.atomic_max(p, i, old, i),))),)))])
    with pytest.raises(KirError):
        check_module(wide)
