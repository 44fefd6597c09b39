"""The "opencl" backend end to end on the test device (PoCL): artifacts and
caching, a damaged cache entry, errors from kernels and from host code,
bad inputs, threads, device choice and a device without f64."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from pyshark import ShapeError, Wrapper

ROOT = Path(__file__).resolve().parents[3]
SAXPY = ROOT / "examples" / "saxpy.py"

pytestmark = pytest.mark.skipif(
    "opencl" not in __import__("pyshark.wrapper", fromlist=["x"]).available_backends(),
    reason="opencl backend unavailable (no OpenCL device)")


def module(tmp_path: Path, src: str, name: str = "m.py") -> Path:
    p = tmp_path / name
    p.write_text("import pyshark.prelude as ps\n" + textwrap.dedent(src))
    return p


def wrapper(path: Path, cache: Path, **opts) -> Wrapper:
    w = Wrapper("opencl", cache_dir=cache, **opts)
    w.add_source_file(path)
    return w.compile_and_load()


def test_saxpy_and_its_artifacts(tmp_path):
    w = wrapper(SAXPY, tmp_path)
    xs = np.arange(5, dtype=np.float32)
    assert np.array_equal(w.saxpy(2.0, xs, xs), 3 * xs)
    assert w.dot(xs, xs) == 30.0
    assert w.norm_and_max(np.array([3.0, -4.0], np.float32)) == (5.0, 3.0)
    [manifest] = tmp_path.rglob("manifest.json")
    d = manifest.parent
    abi = json.loads((d / "abi.json").read_text())
    assert [k[0] for k in abi["kernels"]][:1] == ["pyshark_saxpy_parfor0"]
    assert "__kernel void pyshark_saxpy_parfor0(" in (d / "kernels.cl").read_text()
    assert "def pyshark_saxpy(rt" in (d / "host.py").read_text()
    assert "parfor" in (d / "kernels.txt").read_text()


def test_second_compile_is_a_cache_load(tmp_path, monkeypatch):
    wrapper(SAXPY, tmp_path)
    from pyshark.codegen.opencl import backend

    def no_compile(*a, **k):
        raise AssertionError("compiled again")
    monkeypatch.setattr(backend.OpenCLBackend, "compile", no_compile)
    w = wrapper(SAXPY, tmp_path)
    assert w.loaded_from_cache
    xs = np.arange(7, dtype=np.float32)
    assert np.array_equal(w.saxpy(1.0, xs, xs), 2 * xs)


@pytest.mark.parametrize("damage", ["host", "kernels", "abi"])
def test_damaged_cache_entry_is_rebuilt(tmp_path, damage):
    wrapper(SAXPY, tmp_path)
    [manifest] = tmp_path.rglob("manifest.json")
    d = manifest.parent
    if damage == "host":          # host code that is not what we generated never runs
        (d / "host.py").write_text("raise SystemExit('ran a tampered file')\n")
    elif damage == "kernels":
        (d / "kernels.cl").write_text("garbage")
    else:
        (d / "abi.json").unlink()
    w = wrapper(SAXPY, tmp_path)
    assert not w.loaded_from_cache
    xs = np.arange(5, dtype=np.float32)
    assert np.array_equal(w.saxpy(2.0, xs, xs), 3 * xs)


ERRORS_SRC = """
@ps.entry
def at(xs: ps.Array[int], i: int) -> int:
    return xs[i]

@ps.entry
def div(xs: ps.Array[int], d: int) -> ps.Array[int]:
    return ps.map(lambda x: x // d, xs)

@ps.entry
def gather(xs: ps.Array[int], idx: ps.Array[int]) -> ps.Array[int]:
    return ps.map(lambda i: xs[i], idx)

@ps.entry
def checked(x: int) -> int:
    assert x > 0, "x must be positive"
    return x

@ps.entry
def pairs(xs: ps.Array[int], ys: ps.Array[int]) -> ps.Array[int]:
    return ps.map(lambda a, b: a + b, xs, ys)

@ps.entry
def big(n: int) -> ps.Array[ps.f64]:
    return ps.replicate(n, 1.0)
"""


def test_errors_raise_the_cpu_backends_exceptions(tmp_path):
    w = wrapper(module(tmp_path, ERRORS_SRC), tmp_path / "c")
    cpu = Wrapper("cpu", cache_dir=tmp_path / "c")
    cpu.add_source_file(tmp_path / "m.py")
    cpu.compile_and_load()
    xs = np.arange(10, dtype=np.int64)
    with pytest.raises(IndexError, match=r"index 10 out of range for length 10 .*m\.py:5") as e:
        w.at(xs, 10)
    with pytest.raises(IndexError) as e_cpu:
        cpu.at(xs, 10)
    assert str(e.value) == str(e_cpu.value)
    assert w.at(xs, -1) == 9
    with pytest.raises(ZeroDivisionError):
        w.div(np.arange(1 << 16, dtype=np.int64), 0)      # in a kernel
    with pytest.raises(IndexError, match="out of range"):
        w.gather(xs, np.array([1, 2, 30, 4], np.int64))  # in a kernel, with its index
    assert w.gather(xs, np.array([3, -1], np.int64)).tolist() == [3, 9]
    with pytest.raises(AssertionError, match="x must be positive"):
        w.checked(0)
    with pytest.raises(ShapeError):
        w.pairs(xs, xs[:3])
    with pytest.raises(MemoryError):
        w.big(1 << 62)
    with pytest.raises(MemoryError):
        w.big(1 << 45)        # 256 TiB: more than the device allocates
    assert w.big(3).tolist() == [1.0, 1.0, 1.0]
    assert w.div(np.arange(5, dtype=np.int64), 2).tolist() == [0, 0, 1, 1, 2]


def test_bad_inputs_give_clear_errors(tmp_path):
    w = wrapper(module(tmp_path, ERRORS_SRC), tmp_path / "c")
    with pytest.raises(TypeError, match="xs"):
        w.at(np.zeros(3, np.float32), 0)
    with pytest.raises(ShapeError):
        w.pairs([[1, 2], [3]], [1, 2])
    assert w.at([1, 2, 3], 1) == 2
    strided = np.arange(20, dtype=np.int64)[::2]
    assert w.pairs(strided, strided).tolist() == (2 * strided).tolist()


def test_threads_call_one_module_at_once(tmp_path):
    w = wrapper(SAXPY, tmp_path)
    errors = []

    def work(k):
        try:
            xs = np.full(10_007, k, np.float32)
            for _ in range(5):
                assert np.all(w.saxpy(2.0, xs, xs) == 3 * k)
                assert w.dot(xs, np.ones_like(xs)) == np.float32(k) * 10_007
        except BaseException as exc:       # reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_device_without_f64_gives_a_clear_error(tmp_path, monkeypatch):
    from pyshark.codegen.opencl import runtime
    dev = runtime.device()
    monkeypatch.setattr(dev, "fp64", False)
    src = module(tmp_path, """
        @ps.entry
        def twice(xs: ps.Array[float]) -> ps.Array[float]:
            return ps.map(lambda x: 2.0 * x, xs)

        @ps.entry
        def twice32(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            return ps.map(lambda x: ps.f32(2.0) * x, xs)
    """)
    with pytest.raises(RuntimeError, match="cl_khr_fp64"):
        wrapper(src, tmp_path / "c")


def test_no_device_means_not_available(tmp_path):
    """PYOPENCL_CTX is respected: naming a device that does not exist makes
    the backend unavailable (and not an error at import)."""
    code = ("from pyshark.wrapper import available_backends; "
            "print('opencl' in available_backends())")
    env = dict(os.environ, PYOPENCL_CTX="57")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_fastmath_builds_and_keeps_isnan(tmp_path):
    src = module(tmp_path, """
        @ps.entry
        def nan_or_twice(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            return ps.map(lambda x: ps.f32(0.0) if ps.isnan(x) else ps.f32(2.0) * x, xs)
    """)
    w = wrapper(src, tmp_path / "c", fastmath=True)
    got = w.nan_or_twice(np.array([1.0, np.nan, -3.0], np.float32))
    assert got.tolist() == [2.0, 0.0, -6.0]


def test_names_that_look_like_derived_names(tmp_path):
    """Parameters `xs`, `xs_buf`, `xs_off` and `b_u8` next to a bool `b`: the
    kernel's derived argument names never clash with kir variables."""
    src = module(tmp_path, """
        @ps.entry
        def f(xs: ps.Array[int], xs_buf: int, xs_off: int, b: bool, b_u8: int) -> ps.Array[int]:
            return ps.map(lambda x: x + xs_buf + xs_off + b_u8 if b else x, xs)
    """)
    w = wrapper(src, tmp_path / "c")
    assert w.f(np.arange(3, dtype=np.int64), 10, 100, True, 1000).tolist() == [1110, 1111, 1112]
    assert w.f(np.arange(3, dtype=np.int64), 10, 100, False, 1000).tolist() == [0, 1, 2]


def test_every_entry_takes_the_generated_call_path(tmp_path, monkeypatch):
    """One call path (caller.py): entries over records, tuples and arrays of
    records are generated callers too, flattening their arguments and
    building their results, and agree with Python mode; with device arrays
    an array of records stays on the device."""
    from pyshark import DeviceStructArray
    from pyshark.codegen.opencl.caller import caller_source
    monkeypatch.setenv("PYSHARK_OPENCL_HOST", "python")     # caller.py: the Python host path
    src = module(tmp_path, """
        from typing import NamedTuple

        class P(NamedTuple):
            x: ps.f32
            k: ps.i64

        @ps.entry
        def shift(p: P, d: tuple[ps.f32, ps.i64], xs: ps.Array[ps.f32]) -> ps.Array[P]:
            return ps.map(lambda x: P(x=x * p.x + d[0], k=p.k + d[1]), xs)

        @ps.entry
        def split(qs: ps.Array[P]) -> tuple[P, tuple[ps.Array[ps.f32], ps.i64]]:
            return qs[0], (ps.map(lambda q: q.x, qs), ps.sum(ps.map(lambda q: q.k, qs)))
    """)
    w = wrapper(src, tmp_path / "c")
    py = Wrapper("python").add_source_file(src).compile_and_load()
    (mod, _), = [w._entries["shift"]]
    assert sorted(mod.callers) == ["shift", "split"]
    assert all(c.__code__.co_filename.startswith("<pyshark caller ")
               for c in mod.callers.values())
    text, _ = caller_source(mod.entries["shift"], {"params": [["f32", 0], ["i64", 0],
                                                              ["f32", 0], ["i64", 0],
                                                              ["f32", 1]],
                                                   "results": [["f32", 1], ["i64", 1]]}, False)
    assert "= flat_args(canon)" in text and "return output([" in text
    xs = np.linspace(0, 1, 7, dtype=np.float32)
    p, d = (np.float32(2.0), 3), (np.float32(0.5), np.int64(-1))
    got, want = w.shift(p, d, xs), py.shift(p, d, xs)
    np.testing.assert_array_equal(got, want)
    assert got.dtype.names == ("x", "k")
    g, h = w.split(want), py.split(want)
    assert g[0] == h[0] and type(g[0]).__name__ == "P"
    np.testing.assert_array_equal(g[1][0], h[1][0])
    assert g[1][1] == h[1][1] and type(g[1][1]) is np.int64
    dw = wrapper(src, tmp_path / "c", device_arrays=True)
    r = dw.shift(p, d, xs)
    assert isinstance(r, DeviceStructArray)
    np.testing.assert_array_equal(r.get(), want)
    g = dw.split(r)
    assert g[0] == h[0] and g[1][1] == h[1][1]
    np.testing.assert_array_equal(g[1][0].get(), h[1][0])
