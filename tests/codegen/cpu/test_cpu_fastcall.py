"""The C fast path of cpu entry calls (codegen/cpu/fastcall.c): taken for
positional numpy scalars of the exact type, Python ints in range, Python
floats for f64 and C-contiguous ndarrays of the exact dtype and rank, with
results equal to the Python path's (PYSHARK_CPU_FASTCALL=0) and Python
mode's; every other call goes to the Python path with the same results and
the same exceptions, word for word. Real compiled modules, no mocks."""
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

from pyshark import Wrapper

pytestmark = pytest.mark.skipif(
    "cpu" not in __import__("pyshark.wrapper", fromlist=["x"]).available_backends(),
    reason="cpu backend unavailable")

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
def rows(m: ps.Array[ps.Array[ps.u8]], b: ps.u8) -> ps.Array[ps.Array[ps.u8]]:
    return ps.map(lambda r: ps.map(lambda v: v + b, r), m)

@ps.entry
def addu(x: ps.Array[ps.u64], b: ps.u64) -> ps.Array[ps.u64]:
    return ps.map(lambda v: v + b, x)

@ps.entry
def positive(v: float, strict: bool) -> bool:
    return v > 0.0 if strict else v >= 0.0

@ps.entry
def spin(n: int) -> int:
    s = 0
    i = 0
    while i < n:
        s = s + i % 7
        i = i + 1
    return s
"""

NAMES = ("saxpy", "total", "gather", "scaled_sum", "rows", "addu", "positive", "spin")


def _extension_or_skip():
    from pyshark.codegen.cpu import fastcall
    if fastcall.extension() is None:
        pytest.skip(f"the fast path's extension is not built here: {fastcall.why_not()}")


@pytest.fixture(scope="module")
def mods(tmp_path_factory):
    """(fast, slow, python): the same module with the fast path on, off, and in Python mode."""
    _extension_or_skip()
    tmp = tmp_path_factory.mktemp("cpufast")
    src = tmp / "m.py"
    src.write_text(SRC)
    fast = Wrapper("cpu", cache_dir=tmp / "c", num_threads=1).add_source_file(src)
    fast.compile_and_load()
    os.environ["PYSHARK_CPU_FASTCALL"] = "0"
    try:
        slow = Wrapper("cpu", cache_dir=tmp / "c", num_threads=1).add_source_file(src)
        slow.compile_and_load()
        for name in NAMES:
            getattr(slow, name)             # bound now, while the fast path is off
    finally:
        del os.environ["PYSHARK_CPU_FASTCALL"]
    py = Wrapper("python").add_source_file(src).compile_and_load()
    return fast, slow, py


def _counts(f):
    return f.fast_calls, f.slow_calls


def _same(a, b):
    """Equal results of the same types, dtypes, shapes and flags."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        assert a.flags.c_contiguous and a.flags.writeable == b.flags.writeable
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b or (a != a and b != b), (a, b)


def test_the_common_case_runs_in_c(mods):
    fast, slow, py = mods
    for name in NAMES:
        assert type(getattr(fast, name)).__name__ == "Entry", name
        assert inspect.isfunction(getattr(slow, name)), name
    f = fast.saxpy
    for n in (0, 1, 7, 1000):                   # empty, one element, not a vector width
        x = np.linspace(-3, 3, n).astype(np.float32)
        y = np.arange(n, dtype=np.float32)
        f0, s0 = _counts(f)
        got = f(np.float32(2.5), x, y)
        assert _counts(f) == (f0 + 1, s0)
        _same(got, slow.saxpy(np.float32(2.5), x, y))
        _same(got, py.saxpy(np.float32(2.5), x, y))
        got[:] = 0                              # the caller owns the result
        t = fast.total(y)                       # a reduction: the order may differ
        _same(t, slow.total(y))
        assert type(t) is np.float32
        np.testing.assert_allclose(t, py.total(y), rtol=1e-5)
    assert fast.total.slow_calls == 0


def test_scalar_tuple_and_2d_results(mods):
    fast, slow, py = mods
    d = np.array([0.5, -1.25, np.nan, 4.0])
    f0 = fast.scaled_sum.fast_calls
    for k, neg in ((3, False), (np.int32(-2), np.bool_(True)), (2 ** 31 - 1, np.bool_(False))):
        got = fast.scaled_sum(d, k, neg)
        _same(got, slow.scaled_sum(d, k, neg))
        _same(got, py.scaled_sum(d, k, neg))
    assert fast.scaled_sum.fast_calls == f0 + 2    # a Python bool: the Python path
    m = np.arange(12, dtype=np.uint8).reshape(3, 4)
    for b in (250, np.uint8(7), 0):
        f0 = fast.rows.fast_calls
        got = fast.rows(m, b)
        assert got.shape == (3, 4) and fast.rows.fast_calls == f0 + 1
        _same(got, slow.rows(m, b))
        _same(got, py.rows(m, b))
    _same(fast.rows(np.zeros((0, 5), np.uint8), 1), py.rows(np.zeros((0, 5), np.uint8), 1))
    u = np.array([0, 1, 2 ** 63, 2 ** 64 - 2], np.uint64)
    for b in (1, 2 ** 64 - 1, np.uint64(5)):
        f0 = fast.addu.fast_calls
        _same(fast.addu(u, b), slow.addu(u, b))
        assert fast.addu.fast_calls == f0 + 1
    for v in (0.0, -0.0, 1.5, -2.0, np.float64(0.0), float("nan")):
        for strict in (np.bool_(True), np.bool_(False)):
            got = fast.positive(v, strict)
            assert type(got) is np.bool_
            _same(got, slow.positive(v, strict))
            _same(got, py.positive(v, bool(strict)))
    assert fast.positive.slow_calls == 0
    assert type(fast.spin(10)) is np.int64 and fast.spin(10) == py.spin(10)


def _same_error(fast_fn, slow_fn, *args, **kwargs):
    with pytest.raises(Exception) as a:
        fast_fn(*args, **kwargs)
    with pytest.raises(Exception) as b:
        slow_fn(*args, **kwargs)
    assert type(a.value) is type(b.value) and str(a.value) == str(b.value)
    return a.value


def _same_outcome(fast_fn, slow_fn, *args, **kwargs):
    """The same result, or the same exception and text."""
    try:
        want = slow_fn(*args, **kwargs)
    except Exception:
        _same_error(fast_fn, slow_fn, *args, **kwargs)
        return
    _same(fast_fn(*args, **kwargs), want)


class _Sub(np.ndarray):
    pass


def test_other_calls_take_the_python_path(mods):
    fast, slow, py = mods
    f, g = fast.saxpy, slow.saxpy
    x = np.arange(8, dtype=np.float32)
    f0, s0 = _counts(f)
    cases = [
        ((np.float32(2),), {"x": x, "y": x}),               # keywords
        ((2.0, x, x), {}),                                  # a Python float for an f32
        ((2, x, x), {}),                                    # an int for an f32
        ((np.float32(2), list(x), x), {}),                  # a list
        ((np.float32(2), x[::2], x[:4]), {}),               # not contiguous
        ((np.float32(2), x.astype(np.float64), x), {}),     # another dtype
        ((np.float32(2), x.astype(">f4"), x), {}),          # another byte order
        ((np.float32(2), x.reshape(2, 4), x), {}),          # another rank
        ((np.float32(2), x.view(_Sub), x), {}),             # an ndarray subclass
        ((np.float64(2), x, x), {}),                        # another scalar type
    ]
    for args, kwargs in cases:
        _same_outcome(f, g, *args, **kwargs)
    assert _counts(f) == (f0, s0 + len(cases))
    m = np.zeros((2, 2), np.uint8)
    _same_error(fast.rows, slow.rows, m, 256)               # out of range
    _same_error(fast.rows, slow.rows, m, -1)
    _same_error(fast.addu, slow.addu, np.zeros(2, np.uint64), -1)
    _same_error(fast.addu, slow.addu, np.zeros(2, np.uint64), 2 ** 64)
    _same_error(fast.scaled_sum, slow.scaled_sum, np.ones(2), 2 ** 31, np.bool_(False))
    _same_error(fast.scaled_sum, slow.scaled_sum, np.ones(2), 1, 1)     # an int for a bool
    _same_error(fast.scaled_sum, slow.scaled_sum, np.ones(2), True, np.bool_(False))
    _same_error(fast.rows, slow.rows, x, np.uint8(0))                   # rank and dtype
    _same_error(f, g, np.float32(1), x)                                 # too few
    _same_error(f, g, np.float32(1), x, x, x)                           # too many
    _same_error(f, g, np.float32(1), x, x, z=x)                         # unknown keyword
    _same_error(f, g, np.float32(1), x, np.ones(3, np.float32))         # shapes (in the kernel)
    assert f.fast_calls == f0 + 1          # the last one: the kernel's ShapeError


def test_errors_raised_by_the_entry(mods):
    fast, slow, py = mods
    xs = np.arange(7, dtype=np.float32)
    f0, s0 = _counts(fast.gather)
    err = _same_error(fast.gather, slow.gather, xs, np.array([0, 9], np.int64))
    assert isinstance(err, IndexError) and "9" in str(err)
    with pytest.raises(IndexError):
        py.gather(xs, np.array([0, 9], np.int64))
    assert _counts(fast.gather) == (f0 + 1, s0)     # the error came from the fast path
    for _ in range(1000):                            # failing calls free their results
        with pytest.raises(IndexError):
            fast.gather(xs, np.array([1, -8], np.int64))
    np.testing.assert_array_equal(fast.gather(xs, np.array([6, 1], np.int64)), [6.0, 1.0])


def test_threads_call_concurrently(mods):
    fast, slow, _ = mods
    errors, out = [], {}

    def run(k):
        try:
            x = np.arange(64 + k, dtype=np.float32)
            r = x
            for _ in range(300):
                r = fast.saxpy(np.float32(0.5), r, x)        # r -> r/2 + x
            out[k] = (r, x)
        except Exception as exc:                             # pragma: no cover
            errors.append(exc)
    f0 = fast.saxpy.fast_calls
    ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for k in range(4):
        r, x = out[k]
        np.testing.assert_allclose(r, 2 * x, rtol=1e-6)
    assert fast.saxpy.fast_calls == f0 + 1200


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RSS from /proc")
def test_results_are_freed(mods):
    fast, _, _ = mods
    x = np.ones(1000, np.float32)
    a = np.float32(2)
    for _ in range(2000):
        fast.saxpy(a, x, x)
        fast.scaled_sum(np.ones(100), 2, np.bool_(False))
    before = _rss()
    f0 = fast.saxpy.fast_calls
    for _ in range(100_000):                 # 4 KB per result: 400 MB if none were freed
        fast.saxpy(a, x, x)
    for _ in range(20_000):
        fast.scaled_sum(np.ones(100), 2, np.bool_(False))
    assert fast.saxpy.fast_calls == f0 + 100_000
    grown = _rss() - before
    assert grown < 20 * 2 ** 20, f"RSS grew by {grown / 2 ** 20:.1f} MiB"
    # a result keeps its block alive after the entry and the Wrapper go
    r = fast.saxpy(a, x, x)
    v = r[10:20]
    del r
    np.testing.assert_array_equal(v, np.full(10, 3, np.float32))


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
    assert fast.invoke("saxpy", np.float32(1), np.ones(2, np.float32),
                       np.ones(2, np.float32)).tolist() == [2.0, 2.0]


def test_invoke_takes_the_fast_path(mods, tmp_path):
    """Wrapper.invoke calls the entry's bound fast callable (same results,
    keyword arguments included); an entry named like a Wrapper method goes
    through the generic call, and an unknown name is still UnknownEntry."""
    from pyshark.wrapper.wrapper import UnknownEntry
    fast, slow, _ = mods
    x = np.arange(5, dtype=np.float32)
    before = fast.saxpy.fast_calls
    got = fast.invoke("saxpy", np.float32(2), x, x)
    assert fast.saxpy.fast_calls == before + 1
    np.testing.assert_array_equal(got, slow.invoke("saxpy", np.float32(2), x, x))
    np.testing.assert_array_equal(fast.invoke("saxpy", a=np.float32(2), x=x, y=x), got)
    with pytest.raises(UnknownEntry):
        fast.invoke("nope", 1)
    src = tmp_path / "named.py"
    src.write_text("import pyshark.prelude as ps\n\n@ps.entry\ndef close(n: int) -> int:\n"
                   "    return n + 1\n")
    w = Wrapper("cpu", cache_dir=tmp_path / "c").add_source_file(src).compile_and_load()
    assert w.invoke("close", 41) == 42 and w.close() is None      # the method stays one


def test_turned_off_by_the_environment(tmp_path, monkeypatch):
    src = tmp_path / "m.py"
    src.write_text(SRC)
    monkeypatch.setenv("PYSHARK_CPU_FASTCALL", "0")
    w = Wrapper("cpu", cache_dir=tmp_path / "c").add_source_file(src).compile_and_load()
    assert inspect.isfunction(w.saxpy) and not hasattr(w.saxpy, "fast_calls")
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(w.saxpy(np.float32(1), x, x), [2, 2, 2])


def test_without_python_headers_the_python_path_runs(tmp_path, monkeypatch):
    """A Python without its development headers (no Python.h) cannot build the
    extension: entries are the Python closure, and why_not() says why."""
    import sysconfig

    from pyshark.codegen.cpu import fastcall
    monkeypatch.setattr(fastcall, "_STATE", {})         # as in a fresh process
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: {"include": str(tmp_path)})
    src = tmp_path / "m.py"
    src.write_text(SRC)
    w = Wrapper("cpu", cache_dir=tmp_path / "c").add_source_file(src).compile_and_load()
    assert inspect.isfunction(w.saxpy)
    assert "no Python.h" in fastcall.why_not()
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(w.saxpy(np.float32(1), x, x), [2, 2, 2])


def test_the_generic_call_passes_every_kind_of_argument():
    """The fixed prototype reaches a C function of another signature (a
    ctypes callback): integers widened in order, f32 as a double's low bits,
    integers past the registers on the stack; abi_probe checks a wider mix."""
    import ctypes
    import struct
    _extension_or_skip()
    from pyshark.codegen.cpu import fastcall
    mod = fastcall.extension()
    fastcall.abi_probe(mod)                         # raises where a value does not arrive
    got = []
    types = [ctypes.c_float, ctypes.c_int8, ctypes.c_double] + [ctypes.c_int64] * 8 \
        + [ctypes.c_uint16]
    cb = ctypes.CFUNCTYPE(ctypes.c_int32, *types)(lambda *a: got.extend(a) or -7)
    ints = [(-3) & (2 ** 64 - 1)] + list(range(10, 18)) + [65535]
    flts = [struct.unpack("<I", struct.pack("<f", 0.75))[0],
            struct.unpack("<Q", struct.pack("<d", -1e300))[0]]
    assert mod.call_generic(ctypes.cast(cb, ctypes.c_void_p).value, tuple(ints),
                            tuple(flts)) == -7
    assert got == [0.75, -3, -1e300] + list(range(10, 18)) + [65535]


CHILD = r"""
import json, os, signal, sys, threading
from pyshark import Wrapper
w = Wrapper("cpu", cache_dir=sys.argv[2], num_threads=1)
w.add_source_file(sys.argv[1]).compile_and_load()
before = int(w.spin(1000))
n0, s0 = w.spin.fast_calls, w.spin.slow_calls
timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
timer.start()
try:
    w.spin(1 << 40)
    after = "finished"
except KeyboardInterrupt:
    after = "interrupted"
timer.join()
checks = int(w.spin(1000)) == before
print(json.dumps({"after": after, "checks": checks, "fast": w.spin.fast_calls - n0,
                  "slow": w.spin.slow_calls - s0}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGINT from a timer: Linux")
def test_ctrl_c_stops_a_fast_call_and_the_next_works(tmp_path):
    _extension_or_skip()
    src = tmp_path / "s.py"
    src.write_text(textwrap.dedent(SRC))
    Wrapper("cpu", cache_dir=tmp_path / "cache").add_source_file(src).compile_and_load()
    r = subprocess.run([sys.executable, "-c", CHILD, str(src), str(tmp_path / "cache")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    row = json.loads(r.stdout.splitlines()[-1])
    # the interrupted call raised from the fast path; only the next call returned
    assert row == {"after": "interrupted", "checks": True, "fast": 1, "slow": 0}, row
