"""A coarsened streaming kernel (kir_passes/coarsen.py) built and run on the test
device (PoCL): the values of the plain kernel at sizes around the factor."""
from __future__ import annotations

import pytest

from ocl_harness import F32, I64, K, build, np, v


@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 8, 1001])
def test_coarsened_saxpy_kernel(size):
    xs, ys, out, n = v("xs", K.Ptr(F32)), v("ys", K.Ptr(F32)), v("out", K.Ptr(F32)), v("n", I64)
    m, i = v("m", K.Ptr(F32)), v("i", I64)
    body = K.Block((K.Store(m, i, K.Bin("add", K.Bin("mul", K.KConst(2.0, F32), K.Load(xs, i)),
                                        K.Load(ys, i))),))
    f = K.Function("f", (xs, ys, out, n), K.Block((
        K.Alloc(m, n), K.ParFor(i, n, body), K.CopyMem(out, m, n), K.Free(m))))
    b = build(K.Module([f], []), coarsen=4)
    (p,) = [s for s in K.walk_stms(b.spelled.functions[0].body) if isinstance(s, K.ParFor)]
    assert any(isinstance(s, K.If) for s in p.body.stms)          # coarsened
    rng = np.random.default_rng(size)
    a, c = rng.random(size, dtype=np.float32), rng.random(size, dtype=np.float32)
    got = np.zeros(size, np.float32)
    assert b.call("f", a, c, got, np.int64(size)) is None
    assert np.array_equal(got, np.float32(2.0) * a + c)
