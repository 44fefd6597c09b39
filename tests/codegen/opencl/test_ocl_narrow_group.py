"""runtime.narrow_group: the work-group size of a kernel free to take any,
launched over too few work-items to reach every compute unit."""
from pyshark.codegen.opencl.runtime import narrow_group


def test_enough_work_items_keep_the_group():
    assert narrow_group(256, 10 ** 6, 132, 8) == 256
    assert narrow_group(256, 256 * 66, 132, 8) == 256      # half the units covered


def test_few_work_items_spread_over_the_units():
    # LocVolCalib on the H200 (132 SMs): 512 solves -> groups of 8 (64 groups);
    # 4096 -> groups of 32 (128 groups), not half-empty warps
    assert narrow_group(256, 512, 132, 8) == 8
    assert narrow_group(256, 4096, 132, 8) == 32
    assert narrow_group(256, 512, 2, 8) == 256             # a 2-core CPU device


def test_never_below_the_least_size():
    assert narrow_group(256, 3, 132, 8) == 8
    assert narrow_group(192, 100, 132, 32) == 48           # not a power of two: stops at 48
    assert narrow_group(256, 1, 132, 1) == 1


def test_narrowed_launches_compute_the_same(monkeypatch):
    """A device that claims a million compute units makes every free
    kernel's launch narrow (down to groups of 1): the values, including
    counts that are no multiple of any group size, do not change."""
    import numpy as np
    from ocl_harness import I64, K, P, build, v
    n, i, out = v("n", I64), v("i", I64), v("out", P(I64))
    m = K.Module([K.Function("sq", (out, n), K.Block((
        K.ParFor(i, n, K.Block((K.Store(out, i, K.Bin("mul", i, i)),))),)))])
    b = build(m)
    monkeypatch.setattr(b.dev, "compute_units", 10 ** 6)
    monkeypatch.setattr(b.dev, "min_group", 1)
    monkeypatch.setattr(b.dev, "launchers", {})
    for count in (1, 3, 7, 33, 257, 1000):
        o = np.full(1001, -1, np.int64)
        assert b.call("sq", o, np.int64(count)) is None
        assert o[:count].tolist() == [k * k for k in range(count)] and o[count] == -1
