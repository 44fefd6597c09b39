"""The native host path (codegen/opencl/native): conformance modules run
through the module's shared library agree with their expected values and
with Python mode, and a C program built against `pyshark build --backend
opencl` output runs (valgrind: no definite leaks, no invalid accesses in
our code)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pyshark import testing
from pyshark.testing import conformance_dir

HERE = Path(__file__).parent
SAXPY = """
import pyshark.prelude as ps

@ps.entry
def saxpy(a: ps.f32, x: ps.Array[ps.f32], y: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda u, v: a * u + v, x, y)

@ps.entry
def total(x: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda u, v: u + v, ps.f32(0.0), x)
"""

# a spread: scalars, maps, reductions, scans, filters, histograms, scatter,
# nested arrays, records, errors
SPREAD = ["array_ops", "bitwise", "builtin_funcs", "comprehensions", "compare_chained"]


def _available():
    from pyshark.codegen.opencl import runtime
    from pyshark.codegen.opencl.native import build
    if not runtime.available():
        pytest.skip("no OpenCL device")
    if not build.available():
        pytest.skip("no C compiler or ICD loader")


def _spread():
    root = conformance_dir()
    mods = sorted(p.stem for p in root.glob("*.py"))
    extra = [m for m in mods if any(k in m for k in ("scan", "filter", "hist", "scatter",
                                                     "record", "error", "reduce", "nested"))]
    return [root / f"{m}.py" for m in dict.fromkeys(SPREAD + extra[:12]) if (root / f"{m}.py").is_file()]


@pytest.mark.parametrize("module", _spread(), ids=lambda p: p.stem)
def test_conformance_through_the_native_host(module, monkeypatch):
    _available()
    from pyshark.codegen.opencl.native.module import NativeModule
    monkeypatch.setenv("PYSHARK_OPENCL_HOST", "native")
    w = testing.compiled_wrapper(module, "opencl")
    kinds = {type(m).__name__ for m, _ in w._entries.values()}
    assert kinds == {NativeModule.__name__}, kinds
    cases = testing.load_cases(module)
    assert cases
    for case in cases:
        outcome = testing.run_case(w, case)
        assert testing.check_expected(w, case, outcome) is None, case.id
        py = testing.run_case(testing.compiled_wrapper(module, "python"), case)
        assert testing.check_against_python(outcome, py) is None, case.id


def test_kernel_failure_and_device_arrays(tmp_path):
    """An IndexError inside a kernel, device arrays chained, a result that
    aliases an input: the same as Python mode."""
    _available()
    import numpy as np
    from pyshark import Wrapper
    src = tmp_path / "m.py"
    src.write_text(SAXPY + """
@ps.entry
def gather(xs: ps.Array[ps.f32], idx: ps.Array[ps.i64]) -> ps.Array[ps.f32]:
    return ps.map(lambda i: xs[i], idx)

@ps.entry
def ident(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return xs
""")
    py = Wrapper("python").add_source_file(src).compile_and_load()
    w = Wrapper("opencl", cache_dir=tmp_path / "c", device_arrays=True)
    w.add_source_file(src).compile_and_load()
    xs = np.arange(7, dtype=np.float32)
    with pytest.raises(IndexError) as got:
        w.gather(xs, np.array([0, 9], np.int64))
    with pytest.raises(IndexError):
        py.gather(xs, np.array([0, 9], np.int64))
    assert str(got.value).startswith("index 9 out of range for length 7"), got.value
    d = w.saxpy(2.0, xs, xs)
    e = w.ident(d)
    del d
    assert np.array_equal(w.saxpy(1.0, e, e).get(), 6 * xs)
    assert w.total(e) == py.total(2 * xs + xs)
    assert np.array_equal(w.gather(e, np.array([6, 0], np.int64)).get(), [18.0, 0.0])


def test_one_call_reuses_result_buffers(tmp_path, monkeypatch):
    """A call is one foreign call (pyshark_ocl_call): a loop of calls whose
    results die reuses their buffers through the context's free blocks (no
    clCreateBuffer a call); a scalar result is a 0-d DeviceArray left on the
    device; device arrays pass between two modules (an import of the other
    context's buffer) and between the native and the Python host."""
    _available()
    import numpy as np
    from pyshark import DeviceArray, Wrapper
    from pyshark.codegen.opencl.native.module import NativeMem
    src = tmp_path / "m.py"
    src.write_text(SAXPY)
    w = Wrapper("opencl", cache_dir=tmp_path / "c", device_arrays=True)
    w.add_source_file(src).compile_and_load()
    x = w.saxpy(1.0, np.arange(5, dtype=np.float32), np.zeros(5, np.float32))
    assert type(x._mem) is NativeMem
    seen = set()
    for _ in range(100):
        r = w.saxpy(np.float32(2.0), x, x)
        seen.add(r._mem.ptr)
    assert len(seen) <= 3, len(seen)
    np.testing.assert_array_equal(r.get(), 3 * np.arange(5, dtype=np.float32))
    s = w.total(r)
    assert isinstance(s, DeviceArray) and s.shape == () and float(s) == 30.0
    kept = [w.total(np.full(4, k, np.float32)) for k in range(10)]
    assert [float(k) for k in kept] == [4.0 * k for k in range(10)]
    # another module (its own context) and the Python host take the arrays
    w2 = Wrapper("opencl", cache_dir=tmp_path / "c2", device_arrays=True)
    w2.add_source_file(src).compile_and_load()
    np.testing.assert_array_equal(w2.saxpy(s, x, r).get(), 33 * np.arange(5, dtype=np.float32))
    monkeypatch.setenv("PYSHARK_OPENCL_HOST", "python")
    wp = Wrapper("opencl", cache_dir=tmp_path / "c3", device_arrays=True)
    wp.add_source_file(src).compile_and_load()
    monkeypatch.delenv("PYSHARK_OPENCL_HOST")
    assert type(next(iter(wp._entries.values()))[0]).__name__ != "NativeModule"
    p = wp.saxpy(np.float32(1.0), x, r)
    np.testing.assert_array_equal(w.saxpy(s, p, p).get(), 31 * 4 * np.arange(5, dtype=np.float32))
    assert float(wp.total(w.saxpy(1.0, x, x))) == 20.0


def test_c_program_against_pyshark_build(tmp_path):
    """The C test of issue 18: context, upload, entries, read back, an error
    message, everything freed (under valgrind when it is installed)."""
    _available()
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler")
    from pyshark.codegen.opencl import runtime
    from pyshark.codegen.opencl.devices import platforms
    from pyshark.codegen.opencl.icd import loader_library
    src = tmp_path / "saxpy.py"
    src.write_text(SAXPY)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", "import sys; from pyshark.cli import main; sys.exit(main())",
                        "build", "--backend", "opencl",
                        str(src), "-o", str(out)], capture_output=True, text=True,
                       cwd=tmp_path)    # not the checkout's pyshark/ over an installed one
    assert r.returncode == 0, r.stderr
    assert {"module.so", "module.h", "manifest.json"} <= {p.name for p in out.iterdir()}
    exe = tmp_path / "saxpy_main"
    r = subprocess.run([gcc, "-Wall", "-Werror", "-g", "-o", str(exe),
                        str(HERE / "native_c" / "saxpy_main.c"), "-I", str(out),
                        str(out / "module.so"), f"-Wl,-rpath,{out}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    dev = runtime.device()
    [(p, d)] = [(p, d) for p, (_, devs) in enumerate(platforms())
                for d, x in enumerate(devs) if x.int_ptr == dev.dev.int_ptr]
    import pyopencl
    env = dict(os.environ)
    loader = Path(loader_library())
    env.setdefault("PYOPENCL_HOME", str(Path(pyopencl.__file__).parent))
    env["LD_LIBRARY_PATH"] = f"{loader.parent}{os.pathsep}{env.get('LD_LIBRARY_PATH', '')}"
    cmd = [str(exe), str(p), str(d)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "saxpy ok: 12 24 36 48 60 (n=5)"
    assert lines[1] == "total ok: 180"
    assert lines[2].startswith("error ok: 4 ShapeError: map: arrays differ in length")
    if shutil.which("valgrind") is None or os.environ.get("PYSHARK_SKIP_VALGRIND"):
        return
    r = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=definite",
                        "--errors-for-leak-kinds=definite", *cmd], capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0 and "saxpy ok" in r.stdout, r.stdout + r.stderr[-3000:]
    # definite leaks, invalid accesses or uninitialised values with our code on
    # the stack (PoCL's own LLVM leaks blocks when it compiles a kernel: not ours)
    text = "\n".join(line.split("== ", 1)[-1] for line in r.stderr.splitlines())
    ours = [rec for rec in text.split("\n\n")
            if ("module.so" in rec or "saxpy_main" in rec)
            and any(k in rec for k in ("Invalid", "uninitialised", "Mismatched",
                                       "definitely lost in"))]
    assert not ours, "\n\n".join(ours)[:3000]
