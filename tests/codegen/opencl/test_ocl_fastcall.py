"""The C fast path of native opencl entry calls (codegen/opencl/native/
fastcall.c; issue 18 item 4): taken for positional scalars and DeviceArrays
of the library's context with DeviceArray results, and every other call
goes to the Python path with the same results and the same exceptions as
with the fast path turned off (PYSHARK_OPENCL_FASTCALL=0). On PoCL, no
mocks."""
from __future__ import annotations

import inspect
import json
import os
import pydoc
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

SRC = """
import pyshark.prelude as ps

@ps.entry
def saxpy(a: ps.f32, x: ps.Array[ps.f32], y: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    \"\"\"a * x + y, elementwise.\"\"\"
    return ps.map(lambda u, v: a * u + v, x, y)

@ps.entry
def total(x: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda u, v: u + v, ps.f32(0.0), x)

@ps.entry
def gather(xs: ps.Array[ps.f32], idx: ps.Array[ps.i64]) -> ps.Array[ps.f32]:
    return ps.map(lambda i: xs[i], idx)

@ps.entry
def scaled_sum(x: ps.Array[ps.f64], k: ps.i32, neg: bool) -> tuple[ps.Array[ps.f64], ps.f64]:
    ys = ps.map(lambda v: -(v * ps.f64(k)) if neg else v * ps.f64(k), x)
    return ys, ps.reduce(lambda u, v: u + v, 0.0, ys)

@ps.entry
def ints(x: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.map(lambda v: v, x)

@ps.entry
def rows(m: ps.Array[ps.Array[ps.u8]], b: ps.u8) -> ps.Array[ps.Array[ps.u8]]:
    return ps.map(lambda r: ps.map(lambda v: v + b, r), m)
"""


def _available():
    from pyshark.codegen.opencl import runtime
    from pyshark.codegen.opencl.native import build, fastcall
    if not runtime.available():
        pytest.skip("no OpenCL device")
    if not build.available():
        pytest.skip("no C compiler or ICD loader")
    if fastcall.extension() is None:
        pytest.skip(f"the fast path's extension is not built here: {fastcall.why_not()}")


def _wrapper(path, cache, **kw):
    from pyshark import Wrapper
    w = Wrapper("opencl", cache_dir=cache, device_arrays=True, **kw)
    return w.add_source_file(path).compile_and_load()


@pytest.fixture(scope="module")
def mods(tmp_path_factory):
    """(fast, slow, python): the same module with the fast path on, off, and in Python mode."""
    _available()
    from pyshark import Wrapper
    tmp = tmp_path_factory.mktemp("fastcall")
    src = tmp / "m.py"
    src.write_text(SRC)
    fast = _wrapper(src, tmp / "c")
    os.environ["PYSHARK_OPENCL_FASTCALL"] = "0"
    try:
        slow = _wrapper(src, tmp / "c")
        for name in ("saxpy", "total", "gather", "scaled_sum", "rows", "ints"):
            getattr(slow, name)             # bound now, while the fast path is off
    finally:
        del os.environ["PYSHARK_OPENCL_FASTCALL"]
    py = Wrapper("python").add_source_file(src).compile_and_load()
    return fast, slow, py


def _counts(f):
    return f.fast_calls, f.slow_calls


def test_the_common_case_runs_in_c(mods):
    fast, slow, py = mods
    f = fast.saxpy
    assert type(f).__name__ == "Entry" and type(slow.saxpy).__name__ == "function"
    xs = np.arange(6, dtype=np.float32)
    x = f(1.0, xs, np.zeros(6, np.float32))         # numpy arguments: the Python path
    f0, s0 = _counts(f)
    assert s0 >= 1
    for a in (np.float32(2.5), 2.5, 1e39):          # numpy scalar, Python float (rounded)
        r = f(a, x, x)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(r.get(), py.saxpy(np.float32(a), xs, xs))
    assert _counts(f) == (f0 + 3, s0)
    # the result is what the Python path makes: a DeviceArray over a NativeMem
    r = f(np.float32(2.5), x, x)
    q = f(a=np.float32(2.5), x=x, y=x)               # keywords: the Python path
    assert r._mem._buf is None and q._mem._buf is None
    assert type(r) is type(q) and type(r._mem) is type(q._mem)
    assert (r.shape, r.dtype, r._off, r.device) == (q.shape, q.dtype, q._off, q.device)
    for slot in ("dtype", "count", "home", "zeroed", "grave"):
        assert getattr(r._mem, slot) == getattr(q._mem, slot), slot
    assert r._mem.grave is q._mem.grave and r._mem.home is q._mem.home is r.device
    assert r._mem.handle != q._mem.handle
    assert r._mem.buf.int_ptr == r._mem.ptr         # the pyopencl Buffer, made on first use
    np.testing.assert_array_equal(r.get(), q.get())


def test_results_reuse_their_buffers_through_the_graveyard(mods):
    fast, _, _ = mods
    x = fast.saxpy(1.0, np.arange(5, dtype=np.float32), np.zeros(5, np.float32))
    f0 = fast.saxpy.fast_calls
    seen = set()
    for _ in range(100):
        r = fast.saxpy(np.float32(2.0), x, x)
        seen.add(r._mem.ptr)
    assert fast.saxpy.fast_calls == f0 + 100
    assert len(seen) <= 3, len(seen)
    assert len(r._mem.grave) <= 1             # each call gave the dead handles back


def test_scalar_and_tuple_results(mods):
    fast, slow, py = mods
    xs = np.linspace(-1, 1, 9).astype(np.float32)
    x = fast.saxpy(1.0, xs, np.zeros(9, np.float32))
    f0 = fast.total.fast_calls
    s = fast.total(x)
    assert s.shape == () and s.dtype == np.float32 and fast.total.fast_calls == f0 + 1
    assert float(s) == float(slow.total(x)) == float(py.total(xs))
    d = fast.scaled_sum(np.arange(4.0), 3, False)           # numpy: the Python path
    f0 = fast.scaled_sum.fast_calls
    for k, neg in ((3, False), (np.int32(-2), True), (7, np.bool_(True))):
        got = fast.scaled_sum(d[0], k, neg)
        want = slow.scaled_sum(d[0], k, neg)
        ref = py.scaled_sum(3 * np.arange(4.0), k, bool(neg))
        assert type(got) is tuple and len(got) == 2 and got[1].shape == ()
        np.testing.assert_array_equal(got[0].get(), want[0].get())
        np.testing.assert_array_equal(got[0].get(), ref[0])
        assert float(got[1]) == float(want[1]) == float(ref[1])
    assert fast.scaled_sum.fast_calls == f0 + 3
    m = fast.rows(np.arange(12, dtype=np.uint8).reshape(3, 4), np.uint8(1))
    f0 = fast.rows.fast_calls
    got = fast.rows(m, 250)                                  # a Python int in range
    assert got.shape == (3, 4) and fast.rows.fast_calls == f0 + 1
    np.testing.assert_array_equal(got.get(), py.rows(m.get(), 250))


def _same_error(fast_fn, slow_fn, *args, **kwargs):
    with pytest.raises(Exception) as a:
        fast_fn(*args, **kwargs)
    with pytest.raises(Exception) as b:
        slow_fn(*args, **kwargs)
    assert type(a.value) is type(b.value) and str(a.value) == str(b.value)
    return a.value


def test_other_calls_take_the_python_path(mods, tmp_path):
    fast, slow, py = mods
    f = fast.saxpy
    xs = np.arange(4, dtype=np.float32)
    x = f(1.0, xs, np.zeros(4, np.float32))
    f0, s0 = _counts(f)
    np.testing.assert_array_equal(f(np.float32(2), x=x, y=x).get(), 3 * x.get())  # keywords
    np.testing.assert_array_equal(f(np.float32(2), xs, x).get(), 3 * x.get())      # numpy
    np.testing.assert_array_equal(f(2, x, x).get(), 3 * x.get())  # an int for an f32
    assert _counts(f) == (f0, s0 + 3)
    # bad arguments: the Python path's exceptions, word for word
    d64 = fast.scaled_sum(np.arange(4.0), 1, False)[0]
    _same_error(f, slow.saxpy, np.float32(1), d64, x)                   # the wrong dtype
    m = fast.rows(np.zeros((2, 2), np.uint8), np.uint8(0))
    _same_error(fast.rows, slow.rows, x, np.uint8(0))                   # the wrong rank/dtype
    _same_error(fast.rows, slow.rows, m, 256)                           # out of range
    _same_error(fast.rows, slow.rows, m, -1)
    _same_error(fast.scaled_sum, slow.scaled_sum, d64, 1, 1)            # an int for a bool
    _same_error(fast.scaled_sum, slow.scaled_sum, d64, True, False)     # a bool for an int
    _same_error(f, slow.saxpy, np.float32(1), x)                        # too few
    _same_error(f, slow.saxpy, np.float32(1), x, x, x)                  # too many
    _same_error(f, slow.saxpy, np.float32(1), x, x, z=x)
    assert f.fast_calls == f0
    # DeviceArrays of another context: another module's, the Python host's
    (tmp_path / "m.py").write_text(SRC)
    other = _wrapper(tmp_path / "m.py", tmp_path / "c2")
    o = other.saxpy(1.0, xs, xs)
    f0, s0 = _counts(f)
    np.testing.assert_array_equal(f(np.float32(1), o, x).get(), 3 * xs)
    assert _counts(f) == (f0, s0 + 1)
    os.environ["PYSHARK_OPENCL_HOST"] = "python"
    try:
        ph = _wrapper(tmp_path / "m.py", tmp_path / "c3")
    finally:
        del os.environ["PYSHARK_OPENCL_HOST"]
    p = ph.saxpy(np.float32(1), xs, xs)
    assert type(p._mem).__name__ == "DevMem"
    np.testing.assert_array_equal(f(np.float32(1), p, p).get(), 4 * xs)
    # and back: a fast-path result into the Python host and another module
    r = f(np.float32(1), x, x)
    np.testing.assert_array_equal(ph.saxpy(np.float32(1), r, o).get(), 4 * xs)
    np.testing.assert_array_equal(other.saxpy(np.float32(1), r, r).get(), 4 * xs)


def test_errors_raised_by_the_entry(mods):
    fast, slow, py = mods
    xs = np.arange(7, dtype=np.float32)
    x = fast.saxpy(1.0, xs, np.zeros(7, np.float32))
    idx = fast.scaled_sum(np.array([0.0, 9.0]), 1, False)[0]      # f64: not an index
    _same_error(fast.gather, slow.gather, x, idx)
    # an out-of-range index inside the kernel, from the fast path
    ix, i61 = fast.ints(np.array([0, 9], np.int64)), fast.ints(np.array([6, 1]))
    f0, s0 = _counts(fast.gather)
    err = _same_error(fast.gather, slow.gather, x, ix)
    assert isinstance(err, IndexError) and str(err).startswith("index 9 out of range")
    with pytest.raises(IndexError) as ref:
        py.gather(xs, np.array([0, 9], np.int64))
    assert type(ref.value) is type(err)
    # the context works after it
    np.testing.assert_array_equal(fast.gather(x, i61).get(), [6.0, 1.0])
    assert _counts(fast.gather) == (f0 + 1, s0)     # the error too came from the fast path


def test_threads_call_concurrently(mods):
    fast, _, _ = mods
    x = fast.saxpy(1.0, np.arange(64, dtype=np.float32), np.zeros(64, np.float32))
    errors, out = [], {}

    def run(k):
        try:
            r = x
            for _ in range(200):
                r = fast.saxpy(np.float32(0.5), r, x)       # r -> r/2 + x
            out[k] = r.get()
        except Exception as exc:                             # pragma: no cover
            errors.append(exc)
    f0 = fast.saxpy.fast_calls
    ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    want = 2 * np.arange(64, dtype=np.float32)
    for k in range(4):
        np.testing.assert_allclose(out[k], want, rtol=1e-6)
    assert fast.saxpy.fast_calls == f0 + 800


def test_the_bound_attribute_keeps_the_entrys_face(mods):
    fast, slow, _ = mods
    f, g = fast.saxpy, slow.saxpy
    assert f.__name__ == f.__qualname__ == "saxpy"
    assert f.__doc__ == g.__doc__ == "a * x + y, elementwise."
    assert inspect.signature(f) == inspect.signature(g)
    assert f.__wrapped_entry__ is fast._lookup("saxpy")[1]
    assert f.__pyshark_wrapper__ is fast
    from pyshark.dask.entry import find_wrapper
    assert find_wrapper(f, None) == (fast, "saxpy")
    text = pydoc.render_doc(f, renderer=pydoc.plaintext)
    assert "saxpy(a: numpy.float32, x: Array[float32]" in text and "a * x + y" in text
    assert fast.saxpy is f                       # bound once, an instance attribute


def test_turned_off_or_without_device_arrays(tmp_path, monkeypatch):
    _available()
    from pyshark import Wrapper
    src = tmp_path / "m.py"
    src.write_text(SRC)
    monkeypatch.setenv("PYSHARK_OPENCL_FASTCALL", "0")
    w = _wrapper(src, tmp_path / "c")
    assert inspect.isfunction(w.saxpy) and not hasattr(w.saxpy, "fast_calls")
    x = w.saxpy(1.0, np.ones(3, np.float32), np.ones(3, np.float32))
    np.testing.assert_array_equal(w.saxpy(np.float32(1), x, x).get(), [4, 4, 4])
    monkeypatch.delenv("PYSHARK_OPENCL_FASTCALL")
    h = Wrapper("opencl", cache_dir=tmp_path / "c").add_source_file(src).compile_and_load()
    assert inspect.isfunction(h.saxpy)          # host results: the Python path
    np.testing.assert_array_equal(h.saxpy(np.float32(1), np.ones(2, np.float32),
                                          np.ones(2, np.float32)), [2, 2])


CHILD = r"""
import json, os, signal, sys, threading, time
import numpy as np
from pyshark import Wrapper
w = Wrapper("opencl", cache_dir=sys.argv[2], device_arrays=True)
w.add_source_file(sys.argv[1]).compile_and_load()
ys = w.steps(np.linspace(0.0, 1.0, 1 << 16).astype(np.float32), 1)
before = w.steps(ys, 3).get().tolist()
n0, s0 = w.steps.fast_calls, w.steps.slow_calls
timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
timer.start()
try:
    w.steps(ys, 1 << 40)
    after = "finished"
except KeyboardInterrupt:
    after = "interrupted"
timer.join()
checks = w.steps(ys, 3).get().tolist() == before
print(json.dumps({"after": after, "checks": checks, "fast": w.steps.fast_calls - n0,
                  "slow": w.steps.slow_calls - s0}))
"""

STEPS = """
import pyshark.prelude as ps

@ps.entry
def steps(xs: ps.Array[ps.f32], n: int) -> ps.Array[ps.f32]:
    g = ps.copy(xs)
    for t in range(n):
        g = ps.map(lambda x: x * ps.f32(0.5) + ps.f32(1.0), g)
    return g
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGINT from a timer: Linux")
def test_ctrl_c_stops_a_fast_call_and_the_next_works(tmp_path):
    _available()
    src = tmp_path / "s.py"
    src.write_text(textwrap.dedent(STEPS))
    _wrapper(src, tmp_path / "cache")           # the child loads it from the cache
    r = subprocess.run([sys.executable, "-c", CHILD, str(src), str(tmp_path / "cache")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    row = json.loads(r.stdout.splitlines()[-1])
    # the interrupted call raised from the fast path; only the next call returned
    assert row == {"after": "interrupted", "checks": True, "fast": 1, "slow": 0}, row


def test_without_python_headers_the_python_path_runs(tmp_path, monkeypatch):
    """A Python without its development headers (no Python.h) cannot build the
    extension: entries are the Python closure, and why_not() says why."""
    _available()
    import sysconfig

    from pyshark.codegen.opencl.native import fastcall
    monkeypatch.setattr(fastcall, "_STATE", {})         # as in a fresh process
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: {"include": str(tmp_path)})
    src = tmp_path / "m.py"
    src.write_text(SRC)
    w = _wrapper(src, tmp_path / "c")
    assert inspect.isfunction(w.saxpy)
    assert "no Python.h" in fastcall.why_not()
    x = w.saxpy(1.0, np.ones(3, np.float32), np.ones(3, np.float32))
    np.testing.assert_array_equal(w.saxpy(np.float32(1), x, x).get(), [4, 4, 4])
