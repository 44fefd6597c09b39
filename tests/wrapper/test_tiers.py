"""Tiered compilation (wrapper/tiers.py, codegen/cpu/upgrade.py): a cold cpu
compile returns the quick tier's module, a background process builds the
optimised one from its checked core IR, and every entry, the callables
already handed out included, moves to it with the same results."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.wrapper import available_backends
from pyshark.wrapper.tiers import UpgradeWarning, tiered_by_default

pytestmark = pytest.mark.skipif("cpu" not in available_backends(), reason="no cpu backend")

SOURCE = '''
import pyshark.prelude as ps

@ps.entry
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x, y: a * x + y, xs, ys)

@ps.entry
def total(xs: ps.Array[ps.f64]) -> ps.f64:
    return ps.sum(xs)

@ps.entry
def pick(xs: ps.Array[ps.i64], i: int) -> ps.i64:
    return xs[i]

@ps.entry
def pair(xs: ps.Array[ps.i32]) -> tuple[ps.i32, ps.Array[ps.i32]]:
    return ps.sum(xs), ps.map(lambda x: x * 2, xs)
'''


def _wrapper(tmp_path, **kw) -> Wrapper:
    w = Wrapper("cpu", cache_dir=tmp_path, tiered=True, **kw)
    w.add_source(SOURCE, "tiered_module.py")
    return w.compile_and_load()


def _check(w, f_saxpy, f_total, f_pick):
    xs = np.arange(1003, dtype=np.float32)
    np.testing.assert_array_equal(f_saxpy(np.float32(2.0), xs, xs), 3 * xs)
    ds = np.linspace(0.0, 1.0, 10_001)
    assert f_total(ds) == pytest.approx(float(np.sum(ds)), rel=1e-12)
    assert f_total(np.zeros(0)) == 0.0
    assert f_pick(np.arange(5), 4) == 4
    with pytest.raises(IndexError):
        f_pick(np.arange(5), 5)


def test_quick_then_optimised(tmp_path):
    w = _wrapper(tmp_path)
    assert w.tier == "quick" and not w.loaded_from_cache
    f_saxpy, f_total, f_pick = w.saxpy, w.total, w.pick       # handed out before the swap
    _check(w, f_saxpy, f_total, f_pick)
    assert w.wait_optimised(300)
    assert w.tier == "optimised"
    _check(w, f_saxpy, f_total, f_pick)                     # the same objects, swapped
    _check(w, w.saxpy, w.total, w.pick)
    assert w.invoke("pair", np.arange(4, dtype=np.int32))[0] == 6
    keys = sorted(p.name for p in (tmp_path / "cpu").iterdir())
    assert len(keys) == 2 and keys[1] == keys[0] + "-quick"
    manifest = json.loads((tmp_path / "cpu" / keys[0] / "manifest.json").read_text())
    assert "core_program" not in manifest["files"]
    # the held objects call the optimised library: its function's address
    full = w._entries["saxpy"][0]
    assert f_saxpy is w.saxpy and full.callers["saxpy"].address
    assert all(m is full or n != "saxpy" for n, m, _ in w._fast)


def test_later_wrapper_loads_optimised(tmp_path):
    w = _wrapper(tmp_path)
    assert w.wait_optimised(300)
    again = _wrapper(tmp_path)
    assert again.loaded_from_cache and again.tier == "optimised"
    _check(again, again.saxpy, again.total, again.pick)


def test_quick_left_in_cache_is_loaded_and_upgraded(tmp_path):
    """A process that ended before its upgrade left only the quick module:
    the next Wrapper loads it (no compile) and upgrades it."""
    w = _wrapper(tmp_path)
    assert w.wait_optimised(300)
    opt = [p for p in (tmp_path / "cpu").iterdir() if not p.name.endswith("-quick")][0]
    import shutil
    shutil.rmtree(opt)
    again = _wrapper(tmp_path)
    assert again.loaded_from_cache and again.tier == "quick"
    assert again.wait_optimised(300) and again.tier == "optimised"
    _check(again, again.saxpy, again.total, again.pick)


def test_failed_upgrade_keeps_quick_code(tmp_path):
    w = Wrapper("cpu", cache_dir=tmp_path, tiered=True)
    w.add_source(SOURCE, "tiered_module.py")
    # the quick module's core IR is what the upgrade builds from: break it
    # before the background process reads it
    real = w._backend.upgrade_command

    def broken(quick_dir, target_dir):
        (quick_dir / "program.pickle").write_bytes(b"this is not a pickle")
        return real(quick_dir, target_dir)
    w._backend.upgrade_command = broken
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w.compile_and_load()
        f = w.saxpy
        assert not w.wait_optimised(300)
    assert w.tier == "quick"
    assert any(issubclass(c.category, UpgradeWarning) for c in caught)
    assert "could not be built" in str(next(c.message for c in caught
                                            if issubclass(c.category, UpgradeWarning)))
    _check(w, f, w.total, w.pick)


def test_untiered_compiles_optimised(tmp_path):
    w = Wrapper("cpu", cache_dir=tmp_path, tiered=False)
    w.add_source(SOURCE, "tiered_module.py")
    w.compile_and_load()
    assert w.tier == "optimised" and w.wait_optimised(0)
    assert [p.name.endswith("-quick") for p in (tmp_path / "cpu").iterdir()] == [False]


def test_tiered_default_follows_environment(monkeypatch):
    monkeypatch.setenv("PYSHARK_TIERED", "0")
    assert not tiered_by_default()
    monkeypatch.setenv("PYSHARK_TIERED", "1")
    assert tiered_by_default()
    monkeypatch.delenv("PYSHARK_TIERED")
    assert tiered_by_default()


def test_other_backends_have_no_tiers(tmp_path):
    w = Wrapper("python", cache_dir=tmp_path, tiered=True)
    w.add_source(SOURCE, "tiered_module.py")
    w.compile_and_load()
    assert w.tier == "optimised" and w.wait_optimised(0)


def test_artifact_dir_is_the_optimised_module(tmp_path):
    """pyshark.dask ships artifact_dir to its workers: the optimised module."""
    w = _wrapper(tmp_path)
    d = w.artifact_dir("saxpy")
    assert not d.name.endswith("-quick") and w.tier == "optimised"
    assert "core_program" not in json.loads((d / "manifest.json").read_text())["files"]


LONG = '''
import pyshark.prelude as ps

@ps.entry
def steps(xs: ps.Array[ps.f64], n: int) -> ps.Array[ps.f64]:
    for _ in range(n):
        xs = ps.map(lambda x: x * 0.5 + 1.0, xs)
    return xs
'''


def _long_module(tmp_path, backend):
    from pyshark.wrapper import registry
    registry.register_backend("cpu-quick", "pyshark.codegen.cpu.backend:QuickCpuBackend")
    w = Wrapper(backend, cache_dir=tmp_path / backend, tiered=False)
    w.add_source(LONG, "long_module.py")
    w.compile_and_load()
    return w, w._entries["steps"][0]


def test_stop_calls_interrupts_an_armed_call(tmp_path):
    """pyshark_stop_calls (emit_unwind.Runtime.add_stop_fn) stops a call
    armed for SIGINT (ctx->sigint set) with KeyboardInterrupt's code."""
    import ctypes
    import threading
    from pyshark.codegen.cpu.runtime import PysharkCtx
    w, module = _long_module(tmp_path, "cpu-quick")
    caller = module.callers["steps"]
    xs = np.ones(1 << 16)
    out, shape = ctypes.c_void_p(0), (ctypes.c_int64 * 1)()
    ctx = PysharkCtx()
    ctx.sigint = 1
    stop = ctypes.CFUNCTYPE(None)(module.lib.address_of("pyshark_stop_calls"))
    timer = threading.Timer(0.2, stop)
    timer.start()
    code = caller.fn(ctypes.byref(ctx), xs.ctypes.data, xs.shape[0], 10 ** 9,
                     ctypes.addressof(out), ctypes.addressof(shape))
    timer.join()
    assert code == 8 and not out.value          # KeyboardInterrupt's code, no result


def test_redirect_reruns_a_running_call_on_the_other_module(tmp_path):
    """The Wrapper's swap (which ends with CpuModule.redirect) while the main
    thread is in a call of the quick module: the call stops, runs again on
    the other module, and returns the right result; later calls go there
    too, through the C fast path and the Python path."""
    import threading
    wq, quick = _long_module(tmp_path, "cpu-quick")
    wo, full = _long_module(tmp_path, "cpu")
    xs = np.linspace(0.0, 1.0, 1 << 16)
    n = 3000
    expect = wo.steps(xs, n)
    f = wq.steps
    timer = threading.Timer(0.05, wq._swap, args=(quick, full))
    timer.start()
    got = f(xs, n)                          # the C fast path's rerun loop
    timer.join()
    assert wq._entries["steps"][0] is full
    np.testing.assert_allclose(got, expect, rtol=1e-15)
    assert quick.callers["steps"].address == full.callers["steps"].address
    slow = quick.call("steps", [xs, 5])     # the Python path, redirected
    np.testing.assert_allclose(slow, wo.steps(xs, 5), rtol=1e-15)


def test_two_wrappers_of_one_module_share_one_build(tmp_path):
    """A second compile_and_load of the same module while the first one's
    upgrade runs (a notebook cell run again) loads the quick module and
    waits for the same build, not a second one; both end optimised."""
    w1 = _wrapper(tmp_path)
    w2 = _wrapper(tmp_path)
    assert w2.loaded_from_cache
    if w2._upgrades:                        # (w1's build may, rarely, be done already)
        assert w2._upgrades[0].build is w1._upgrades[0].build
    assert w1.wait_optimised(300) and w2.wait_optimised(300)
    _check(w2, w2.saxpy, w2.total, w2.pick)
