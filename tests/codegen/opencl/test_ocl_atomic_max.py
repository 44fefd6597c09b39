"""kir.atomic_max on OpenCL (emit_cl.py): a 32-bit one is atomic_max, a
64-bit one the compare-and-swap loop (atom_max needs the extended 64-bit
atomics); both elect the largest value per slot across many work-groups."""
from __future__ import annotations

import numpy as np
import pytest

from ocl_harness import I64, K, P, build, v
from pyshark.core.types import I32

n, i = v("n", I64), v("i", I64)


def _owner_module(t):
    idx, owner, old = v("idx", P(I64)), v("owner", P(t)), v("old", t)
    body = K.Block((K.atomic_max(owner, K.Load(idx, i), old, K.Cast(t, i)),))
    return K.Module([K.Function("own", (idx, owner, n), K.Block((K.ParFor(i, n, body),)))])


@pytest.mark.parametrize("t", [I32, I64])
@pytest.mark.parametrize("count,slots", [(1, 1), (255, 3), (257, 1), (100_003, 13)])
def test_atomic_max_elects_last_position(t, count, slots):
    b = build(_owner_module(t))
    src = b.cl_source
    if t is I32:
        assert "atomic_max(" in src
    else:
        assert "atom_cmpxchg(" in src and "atom_max(" not in src
    idx = (np.arange(count) * 7919 % slots).astype(np.int64)
    owner = np.full(slots, -1, t.dtype)
    assert b.call("own", idx, owner, np.int64(count)) is None
    want = np.array([np.flatnonzero(idx == s).max() for s in range(slots)], t.dtype)
    assert np.array_equal(owner, want)
