"""The opencl backend's host side: device arrays (device_arrays=True,
DeviceArray arguments on every backend), the memory pool (bounded across
calls, freed by close), threads, device choice, deferred error checks and
host mirrors, and the `pyshark devices` / `show --ir opencl` commands."""
from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from pyshark import DeviceArray, DeviceStructArray, ShapeError, Wrapper

pytestmark = pytest.mark.skipif(
    "opencl" not in __import__("pyshark.wrapper", fromlist=["x"]).available_backends(),
    reason="opencl backend unavailable (no OpenCL device)")

SRC = """
import pyshark.prelude as ps
from typing import NamedTuple

class P(NamedTuple):
    x: ps.f32
    k: ps.i64

@ps.entry
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x, y: a * x + y, xs, ys)

@ps.entry
def total(xs: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda p, q: p + q, ps.f32(0.0), xs)

@ps.entry
def prefix(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scan(lambda p, q: p + q, 0, xs)

@ps.entry
def stats(xs: ps.Array[ps.f32]) -> tuple[ps.Array[ps.f32], ps.f32, ps.Array[ps.Array[ps.f32]]]:
    m = ps.map(lambda x: x * ps.f32(2.0), xs)
    return m, ps.reduce(lambda p, q: p + q, ps.f32(0.0), xs), ps.unflatten(1, len(xs), m)

@ps.entry
def pairs(xs: ps.Array[ps.f32]) -> ps.Array[P]:
    return ps.map(lambda x: P(x=x, k=ps.i64(1)), xs)

@ps.entry
def bump(qs: ps.Array[P]) -> ps.Array[P]:
    return ps.map(lambda q: P(x=q.x * ps.f32(2.0), k=q.k + 1), qs)

@ps.entry
def xsum(qs: ps.Array[P]) -> ps.f32:
    return ps.sum(ps.map(lambda q: q.x, qs))

@ps.entry
def tagged(xs: ps.Array[ps.f32]) -> ps.Array[tuple[ps.f32, ps.i32]]:
    return ps.map(lambda x: (x, ps.i32(3)), xs)

@ps.entry
def gather(xs: ps.Array[ps.f32], idx: ps.Array[ps.i64]) -> ps.Array[ps.f32]:
    return ps.map(lambda i: xs[i], idx)

@ps.entry
def gather_sum(xs: ps.Array[ps.f32], idx: ps.Array[ps.i64]) -> ps.f32:
    return ps.sum(ps.map(lambda i: xs[i], idx))

@ps.entry
def ident(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return xs

@ps.entry
def big(n: ps.i64) -> ps.Array[ps.f32]:
    return ps.map(lambda i: ps.f32(i), ps.iota(n))
"""


@pytest.fixture(scope="module")
def src(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("dev") / "m.py"
    p.write_text(textwrap.dedent(SRC))
    return p


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


def make(src, cache, backend="opencl", **kw) -> Wrapper:
    return Wrapper(backend, cache_dir=cache, **kw).add_source_file(src).compile_and_load()


@pytest.fixture(scope="module")
def dw(src, cache):
    return make(src, cache, device_arrays=True)


@pytest.fixture(scope="module")
def hw(src, cache):
    return make(src, cache)


def test_results_are_device_arrays(dw):
    xs = np.arange(10, dtype=np.float32)
    d = dw.saxpy(2.0, xs, xs)
    assert isinstance(d, DeviceArray)
    assert d.shape == (10,) and d.dtype == np.float32 and len(d) == 10 and d.ndim == 1
    assert "DeviceArray float32[10]" in repr(d)
    np.testing.assert_array_equal(d.get(), 3 * xs)
    np.testing.assert_array_equal(np.asarray(d), 3 * xs)
    assert np.asarray(d, dtype=np.float64).dtype == np.float64
    with pytest.raises(TypeError):
        DeviceArray()


def test_the_runtime_is_what_device_arrays_need(dw):
    """runtime.Device implements wrapper/device_interface.ArrayDevice: a
    result's block is adopted (it returns to the pool's graveyard when the
    last array over it dies) and read through read_array."""
    from pyshark.codegen.opencl import runtime
    from pyshark.wrapper.device_interface import ArrayDevice, is_device_array
    xs = np.arange(6, dtype=np.float32)
    d = dw.saxpy(2.0, xs, xs)
    dev = d.device
    assert isinstance(dev, ArrayDevice) and isinstance(dev, runtime.Device)
    assert is_device_array(d) and not is_device_array(xs)
    assert d._mem.home is dev
    np.testing.assert_array_equal(dev.read_array(d._mem, d._off, (2, 3), d.dtype),
                                  (3 * xs).reshape(2, 3))
    mem = d._mem
    buf = mem.buf
    native = hasattr(mem, "grave")      # native host: a NativeMem, its context's graveyard
    grave, handle = (mem.grave, mem.handle) if native else (None, None)
    del mem
    with runtime.LOCK:          # no call drains the graveyard meanwhile
        del d
        gc.collect()
        if native:
            assert handle in grave
        else:
            assert any(b is buf for b in dev.graveyard)


def test_chained_calls_take_device_arrays(dw, hw):
    xs = np.linspace(-1, 1, 1000, dtype=np.float32)
    d = xs
    h = xs
    for k in range(5):
        d = dw.saxpy(np.float32(0.5), d, d)
        h = hw.saxpy(np.float32(0.5), h, h)
    np.testing.assert_array_equal(d.get(), h)
    s = dw.total(d)                 # a scalar result: a 0-d DeviceArray
    assert isinstance(s, DeviceArray) and s.shape == () and s.dtype == np.float32
    assert float(s) == hw.total(h) and type(hw.total(h)) is np.float32
    # numpy arrays and lists still work beside device arrays
    np.testing.assert_array_equal(dw.saxpy(1.0, d, list(map(float, h))).get(), 2 * h)


def test_scalar_results_are_0d_device_arrays(dw, hw):
    """Item 3 of issue 18: with device_arrays a scalar result stays on the
    device as a 0-d DeviceArray (CuPy's reductions return 0-d arrays);
    float, int, bool, item, get and np.asarray read it; a scalar
    parameter takes it; the default Wrapper still returns numpy scalars."""
    from pyshark.codegen.opencl import runtime
    for n in (0, 1, 7, 1000, 100003):
        xs = np.linspace(-1, 2, n, dtype=np.float32)
        s, want = dw.total(xs), hw.total(xs)
        assert type(want) is np.float32
        assert isinstance(s, DeviceArray) and s.shape == () and s.ndim == 0 and s.size == 1
        assert s.dtype == np.float32 and "float32[]" in repr(s)
        g = s.get()
        assert isinstance(g, np.ndarray) and g.shape == () and g == want
        assert float(s) == want and s.item() == want and np.asarray(s)[()] == want
        assert bool(s) == bool(want) and int(s) == int(want)
        # the block of the result is the device's now, not the call's
        assert s._mem.home is s.device and s._mem not in s.device.zeroed
    ys = np.arange(5, dtype=np.float32)
    a = dw.total(ys)                                    # 10.0 on the device
    np.testing.assert_array_equal(dw.saxpy(a, ys, ys).get(), 11 * ys)   # scalar parameter
    assert float(dw.gather_sum(ys, np.array([4, 4], np.int64))) == 8
    # several 0-d results live side by side and outlive their calls
    kept = [dw.total(np.full(3, k, np.float32)) for k in range(20)]
    gc.collect()
    assert [float(k) for k in kept] == [3.0 * k for k in range(20)]
    with pytest.raises(TypeError, match="0-d"):
        float(dw.saxpy(1.0, ys, ys))
    with pytest.raises(TypeError, match="index"):
        [1, 2][a]
    assert isinstance(runtime.DeviceScalar, type)


def test_tuple_and_record_results(dw, hw):
    xs = np.arange(7, dtype=np.float32)
    m, s, m2 = dw.stats(xs)
    assert isinstance(m, DeviceArray) and isinstance(m2, DeviceArray)
    assert isinstance(s, DeviceArray) and s.shape == () and float(s) == 21
    assert m2.shape == (1, 7)
    hm, hs, hm2 = hw.stats(xs)
    np.testing.assert_array_equal(m.get(), hm)
    np.testing.assert_array_equal(m2.get(), hm2)
    # arrays of records and tuples stay on the device, one DeviceArray a field
    r = dw.pairs(xs)
    assert isinstance(r, DeviceStructArray) and r.shape == (7,) and len(r) == 7
    assert all(isinstance(a, DeviceArray) for a in r.leaves)
    assert "DeviceStructArray" in repr(r)
    got = r.get()
    assert isinstance(got, np.ndarray) and got.dtype.names == ("x", "k")
    np.testing.assert_array_equal(got, hw.pairs(xs))
    np.testing.assert_array_equal(np.asarray(r), hw.pairs(xs))
    np.testing.assert_array_equal(dw.tagged(xs).get(), hw.tagged(xs))
    with pytest.raises(TypeError):
        DeviceStructArray()


def test_record_arrays_chain_on_the_device(dw, hw, src, cache, monkeypatch):
    xs = np.linspace(0, 1, 300, dtype=np.float32)
    r = dw.pairs(xs)
    want = hw.bump(hw.bump(hw.pairs(xs)))       # hw: opencl, results copied back
    want_sum = hw.xsum(want)
    from pyshark.codegen.opencl import runtime

    def no_upload(self, a):
        raise AssertionError("a DeviceStructArray argument was sent again")
    monkeypatch.setattr(runtime.Call, "upload", no_upload)
    b = dw.bump(dw.bump(r))
    assert isinstance(b, DeviceStructArray)
    np.testing.assert_array_equal(b.get(), want)
    assert dw.xsum(b) == want_sum
    monkeypatch.undo()
    # other backends take it as the array get() gives
    cw = make(src, cache, backend="cpu")
    np.testing.assert_array_equal(cw.bump(b), hw.bump(want))
    pw = make(src, cache, backend="python")
    np.testing.assert_array_equal(pw.bump(b), hw.bump(want))
    assert hw.xsum(b) == hw.xsum(want)
    # a parameter of another type: converted as the host array, with its errors
    with pytest.raises(TypeError):
        dw.saxpy(1.0, b, xs)


def test_a_result_aliasing_an_input(dw):
    xs = np.arange(5, dtype=np.float32)
    d = dw.saxpy(1.0, xs, xs)
    e = dw.ident(d)
    del d
    gc.collect()
    np.testing.assert_array_equal(e.get(), 2 * xs)
    np.testing.assert_array_equal(dw.ident(xs).get(), xs)


def test_device_array_type_must_match(dw):
    d = dw.prefix(np.arange(4, dtype=np.int64))
    with pytest.raises(TypeError, match="DeviceArray of int64"):
        dw.saxpy(1.0, d, d)
    with pytest.raises(ShapeError):
        dw.saxpy(1.0, dw.saxpy(1.0, [1.0], [1.0]), [1.0, 2.0])


def test_device_array_of_another_device_is_an_error(dw, monkeypatch):
    d = dw.saxpy(1.0, [1.0, 2.0], [1.0, 2.0])

    class Other:
        name = "some other device"
    monkeypatch.setattr(d, "device", Other(), raising=True)
    with pytest.raises(ValueError, match="another|lives on the OpenCL device some other"):
        dw.saxpy(1.0, d, d)


@pytest.mark.parametrize("backend", ["cpu", "python", "core"])
def test_other_backends_take_device_arrays_as_numpy(dw, src, cache, backend):
    from pyshark.wrapper import available_backends
    if backend not in available_backends():
        pytest.skip(f"{backend} unavailable")
    w = make(src, cache, backend)
    xs = np.arange(6, dtype=np.float32)
    d = dw.saxpy(1.0, xs, xs)
    np.testing.assert_array_equal(w.saxpy(1.0, d, d), 4 * xs)
    assert w.total(d) == np.float32(30)
    np.testing.assert_array_equal(w.invoke("saxpy", a=1.0, xs=d, ys=xs), 3 * xs)


def test_runtime_options_only_for_opencl(src, cache):
    with pytest.raises(TypeError, match="option of the opencl backend"):
        Wrapper("python", device_arrays=True)
    with pytest.raises(TypeError, match="device="):
        Wrapper("python", device="0:0")


def test_kernel_errors_in_device_mode(dw):
    xs = np.arange(8, dtype=np.float32)
    with pytest.raises(IndexError):
        dw.gather(xs, np.array([1, 2, 99], np.int64))
    with pytest.raises(IndexError):
        dw.gather_sum(xs, np.array([1, -99, 3], np.int64))
    # the error buffer is clean again
    np.testing.assert_array_equal(dw.gather(xs, np.array([-1, 2], np.int64)).get(), [7, 2])
    assert float(dw.gather_sum(xs, np.array([1, 2], np.int64))) == 3


def test_mirrored_loads_and_stores(hw):
    """A scan over enough elements for the multicore chunks: the host loads
    the chunk partials once and stores the prefixes back through the mirror."""
    for n in (1, 1000, 40_000, 300_001):
        xs = np.arange(n, dtype=np.int64) % 7 - 3
        np.testing.assert_array_equal(hw.prefix(xs), np.cumsum(xs))
        f = (xs % 5).astype(np.float32)
        assert hw.total(f) == np.float32(f.sum(dtype=np.float64))


def test_pool_stays_bounded_across_calls(src, cache, monkeypatch):
    """The Python host path's pool (runtime.py); the native path's blocks:
    test_ocl_native.py."""
    from pyshark.codegen.opencl import runtime
    monkeypatch.setenv("PYSHARK_OPENCL_HOST", "python")
    hw, dw = make(src, cache), make(src, cache, device_arrays=True)
    dev = runtime.device()
    n = (1 << 20) // 4                  # 1 MiB results
    hw.big(np.int64(n))
    dw.big(np.int64(n))
    gc.collect()
    before = dev.pool.managed_bytes
    for _ in range(1000):
        hw.big(np.int64(n))
    for _ in range(200):
        dw.big(np.int64(n))             # dropped at once: back to the pool at the next call
    gc.collect()
    dw.big(np.int64(1))
    assert dev.pool.managed_bytes <= before + (4 << 20)
    keep = [dw.big(np.int64(n)) for _ in range(4)]
    assert dev.pool.active_bytes >= 4 << 20
    assert keep[3].get()[-1] == n - 1
    del keep
    gc.collect()
    dw.big(np.int64(1))
    assert dev.pool.active_bytes < 1 << 20


def test_close_releases_held_memory(src, cache):
    from pyshark.codegen.opencl import runtime
    w = make(src, cache)
    w.big(np.int64(1 << 18))
    dev = runtime.device()
    assert dev.held_bytes() > 0
    w.close()
    assert dev.held_bytes() == 0
    with make(src, cache) as w2:        # still usable; a context manager too
        assert w2.big(np.int64(3))[2] == 2
    assert dev.held_bytes() == 0


def test_threads_share_the_device(dw, hw):
    errors = []

    def work(k):
        try:
            xs = np.full(5000, k, np.float32)
            for _ in range(10):
                d = dw.saxpy(1.0, xs, xs)
                d = dw.saxpy(1.0, d, d)
                assert np.all(d.get() == 4 * k)
                assert hw.total(xs) == np.float32(5000 * k)
                assert dw.total(d) == np.float32(20000 * k)
        except BaseException as exc:        # reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_device_choice(src, cache):
    from pyshark.codegen.opencl import runtime
    dev = runtime.device()
    plats = runtime.platforms()
    pi, di = next((pi, di) for pi, (_, ds) in enumerate(plats) for di, d in enumerate(ds)
                  if d.int_ptr == dev.dev.int_ptr)
    assert runtime.device(f"{pi}:{di}") is dev
    assert runtime.device(dev.dev.name[:6].lower()) is dev
    w = make(src, cache, device=f"{pi}:{di}", device_arrays=True)
    assert w.saxpy(1.0, [1.0], [2.0]).device is dev
    with pytest.raises(runtime.NoDevice, match="no OpenCL device .*devices: 0:0"):
        Wrapper("opencl", device="57:3")
    with pytest.raises(runtime.NoDevice, match="matches"):
        Wrapper("opencl", device="no such device name")


def _cli(*args, **env):
    import os
    safe = ["-P"] if sys.flags.safe_path else []     # an installed copy: keep the source tree out
    return subprocess.run([sys.executable, *safe, "-m", "pyshark.cli", *args], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, **env))


def test_pyshark_devices_lists_the_default():
    r = _cli("devices")
    assert r.returncode == 0, r.stderr
    from pyshark.codegen.opencl import runtime
    assert runtime.device().dev.name.strip() in r.stdout
    assert "* " in r.stdout and "fp64" in r.stdout


def test_pyshark_devices_without_devices(monkeypatch, capsys):
    from pyshark import cli
    from pyshark.codegen.opencl import devices
    monkeypatch.setattr(devices, "platforms", lambda: [])
    assert cli.main(["devices"]) == 0
    assert "no OpenCL devices" in capsys.readouterr().out


def test_show_ir_opencl(src):
    r = _cli("show", "--ir", "opencl", str(src))
    assert r.returncode == 0, r.stderr
    assert "__kernel void pyshark_saxpy_parfor0" in r.stdout
    assert "def pyshark_saxpy(rt" in r.stdout and "rt.launch(" in r.stdout
