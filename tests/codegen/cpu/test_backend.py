"""The "cpu" backend end to end: caching and corrupt caches, `pyshark build`
with a C program calling the library, errors from compiled code, threads,
bad input, unsafe mode, and the vectorizer on a real program."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from pyshark import ShapeError, Wrapper
from backend_pair import STEP_LOOP

ROOT = Path(__file__).resolve().parents[3]
SAXPY = ROOT / "examples" / "saxpy.py"

pytestmark = pytest.mark.skipif(
    "cpu" not in __import__("pyshark.wrapper", fromlist=["x"]).available_backends(),
    reason="cpu backend unavailable")


def module(tmp_path: Path, src: str, name: str = "m.py") -> Path:
    p = tmp_path / name
    p.write_text("import pyshark.prelude as ps\n" + textwrap.dedent(src))
    return p


def wrapper(path: Path, cache: Path, **opts) -> Wrapper:
    w = Wrapper("cpu", cache_dir=cache, **opts)
    w.add_source_file(path)
    return w.compile_and_load()


def test_second_compile_is_a_cache_load(tmp_path, monkeypatch):
    w1 = wrapper(SAXPY, tmp_path)
    assert not w1.loaded_from_cache
    from pyshark.codegen.cpu import backend

    def no_compile(*a, **k):
        raise AssertionError("compiled again")
    monkeypatch.setattr(backend.CpuBackend, "compile", no_compile)
    w2 = wrapper(SAXPY, tmp_path)
    assert w2.loaded_from_cache
    xs = np.arange(5, dtype=np.float32)
    assert np.array_equal(w2.saxpy(2.0, xs, xs), 3 * xs)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete_abi", "empty_manifest"])
def test_corrupt_cache_entry_is_rebuilt(tmp_path, damage):
    # The entry is written by another process (a library this process has
    # mapped must never be damaged under it: that would crash any program).
    code = ("import sys; from pyshark import Wrapper; w = Wrapper('cpu', cache_dir=sys.argv[1]); "
            "w.add_source_file(sys.argv[2]); w.compile_and_load()")
    subprocess.run([sys.executable, "-c", code, str(tmp_path), str(SAXPY)], check=True,
                   cwd=tmp_path)
    [entry] = [p for p in (tmp_path).rglob("manifest.json")]
    d = entry.parent
    lib = d / "module.so"
    if damage == "truncate":
        lib.write_bytes(lib.read_bytes()[:200])
    elif damage == "garbage":
        data = bytearray(lib.read_bytes())
        data[1000:1100] = b"\xff" * 100
        lib.write_bytes(bytes(data))
    elif damage == "delete_abi":
        (d / "abi.json").unlink()
    else:
        entry.write_text("")
    w = wrapper(SAXPY, tmp_path)
    assert not w.loaded_from_cache
    xs = np.arange(5, dtype=np.float32)
    assert np.array_equal(w.saxpy(2.0, xs, xs), 3 * xs)


def _build_for_c(src: Path, out: Path) -> tuple[str, str]:
    """`pyshark build --backend cpu` of src into out: (module.h's text, the C
    compiler); skips without a C compiler."""
    r = subprocess.run([sys.executable, "-m", "pyshark.cli", "build", str(src), "--backend",
                        "cpu", "-o", str(out)], capture_output=True, text=True, cwd=out.parent)
    assert r.returncode == 0, r.stderr
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    return (out / "module.h").read_text(), cc


def test_build_and_call_from_c(tmp_path):
    out = tmp_path / "saxpy-cpu"
    header, cc = _build_for_c(SAXPY, out)
    assert "pyshark_saxpy(" in header and "pyshark_dot(" in header
    prog = tmp_path / "main.c"
    prog.write_text(textwrap.dedent("""
        #include <stdio.h>
        #include <stdlib.h>
        #include "module.h"
        int main(void) {
            float xs[5] = {1, 2, 3, 4, 5}, ys[5] = {10, 20, 30, 40, 50};
            float *res = 0; int64_t shape[1];
            pyshark_ctx ctx = {0};
            int rc = pyshark_saxpy(&ctx, 2.0f, xs, 5, ys, 5, &res, shape);
            if (rc) { printf("error %d\\n", rc); return 1; }
            for (int i = 0; i < shape[0]; i++) printf("%g ", res[i]);
            free(res);
            float d;
            rc = pyshark_dot(&ctx, xs, 5, ys, 4, &d);   /* lengths differ */
            printf("| %d %d\\n", rc, ctx.code);
            return 0;
        }
    """))
    exe = tmp_path / "main"
    subprocess.run([cc, str(prog), "-I", str(out), str(out / "module.so"), "-o", str(exe),
                    f"-Wl,-rpath,{out}"], check=True)
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert got.split() == ["12", "24", "36", "48", "60", "|", "4", "4"]
    w = Wrapper.load(out)
    assert w.dot(np.ones(3, np.float32), np.ones(3, np.float32)) == 3.0


_TEAM_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "module.h"
static int threads(void) {            /* this process's threads (Linux) */
    FILE *f = fopen("/proc/self/status", "r"); char line[256]; int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0) n = atoi(line + 8);
    if (f) fclose(f);
    return n;
}
int main(void) {
    int64_t n = (1 << 20) + 3, shape[1];
    float *xs = malloc(n * sizeof *xs), *ys = malloc(n * sizeof *ys), *res = 0;
    for (int64_t i = 0; i < n; i++) { xs[i] = (float)(i % 1000); ys[i] = 1.0f; }
    pyshark_ctx ctx = {0};
    ctx.nthreads = 4;
    int bad = 0;
    for (int k = 0; k < 50; k++) {
        if (pyshark_saxpy(&ctx, 2.0f, xs, n, ys, n, &res, shape)) return 1;
        for (int64_t i = 0; i < n; i++) bad += res[i] != 2.0f * (float)(i % 1000) + 1.0f;
        free(res);
    }
    printf("%lld %d %d\n", (long long)shape[0], bad, threads());
    return 0;
}
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_c_program_runs_the_library_s_own_team(tmp_path):
    # the library carries team.c's object: outside Python its parallel loops
    # start their own workers (3 besides the caller for nthreads = 4)
    out = tmp_path / "saxpy-cpu"
    _, cc = _build_for_c(SAXPY, out)
    prog = tmp_path / "team.c"
    prog.write_text(_TEAM_MAIN)
    exe = tmp_path / "team"
    subprocess.run([cc, str(prog), "-I", str(out), str(out / "module.so"), "-o", str(exe),
                    f"-Wl,-rpath,{out}"], check=True)
    got = subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                         timeout=120).stdout.split()
    assert got[:2] == [str((1 << 20) + 3), "0"]
    assert int(got[2]) == 4


ERRORS_SRC = """
@ps.entry
def at(xs: ps.Array[int], i: int) -> int:
    return xs[i]

@ps.entry
def div(xs: ps.Array[int], d: int) -> ps.Array[int]:
    return ps.map(lambda x: x // d, xs)

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


def test_errors_in_compiled_code_raise_python_exceptions(tmp_path):
    w = wrapper(module(tmp_path, ERRORS_SRC), tmp_path / "c")
    xs = np.arange(10, dtype=np.int64)
    with pytest.raises(IndexError, match=r"index 10 out of range for length 10 .*m\.py:5"):
        w.at(xs, 10)
    assert w.at(xs, -1) == 9
    with pytest.raises(ZeroDivisionError):
        w.div(np.arange(1 << 16, dtype=np.int64), 0)      # inside a parallel loop
    with pytest.raises(AssertionError, match="x must be positive"):
        w.checked(0)
    with pytest.raises(ShapeError):
        w.pairs(xs, xs[:3])
    with pytest.raises(MemoryError):
        w.big(1 << 62)
    with pytest.raises(MemoryError):
        w.big(1 << 45)        # 256 TiB: the allocation fails, the process survives
    assert w.big(3).tolist() == [1.0, 1.0, 1.0]


def test_bad_inputs_give_clear_errors(tmp_path):
    w = wrapper(module(tmp_path, ERRORS_SRC), tmp_path / "c")
    with pytest.raises(TypeError, match="xs"):
        w.at(np.zeros(3, np.float32), 0)
    with pytest.raises(TypeError, match="xs"):
        w.at(np.zeros((2, 2), np.int64), 0)
    with pytest.raises(ShapeError):
        w.pairs([[1, 2], [3]], [1, 2])
    with pytest.raises((TypeError, OverflowError)):
        w.at(np.zeros(3, np.int64), 2 ** 70)
    assert w.at([1, 2, 3], 1) == 2                       # nested lists convert
    strided = np.arange(20, dtype=np.int64)[::2]        # non-contiguous input
    assert w.pairs(strided, strided).tolist() == (2 * strided).tolist()


def test_unsafe_drops_bounds_checks_only(tmp_path):
    from pyshark.codegen.stages import build_kernels
    from pyshark.codegen.kir import pretty_module
    from pyshark.wrapper.backend import Options, translate_and_check
    program = translate_and_check(module(tmp_path, ERRORS_SRC))
    safe = pretty_module(build_kernels(program, Options()))
    unsafe = pretty_module(build_kernels(program, Options(unsafe=True)))
    assert "fail IndexError" in safe and "fail IndexError" not in unsafe
    assert "fail ZeroDivisionError" in unsafe and "fail AssertionError" in unsafe


def test_threads_call_one_module_at_once(tmp_path):
    w = wrapper(SAXPY, tmp_path)
    errors = []

    def work(k):
        try:
            xs = np.full(100_003, k, np.float32)
            for _ in range(20):
                out = w.saxpy(2.0, xs, xs)
                assert np.all(out == 3 * k)
                assert w.dot(xs, np.ones_like(xs)) == np.float32(k) * 100_003
        except BaseException as exc:       # reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_vectorizer_fires_on_a_map_and_a_reduction():
    from pyshark.cli import main
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["show", "--ir", "llvm", str(SAXPY)]) == 0
    text = buf.getvalue()
    saxpy = text[text.index("define internal fastcc void @pyshark_saxpy.parfor0("):]
    saxpy = saxpy[:saxpy.index("\n}\n")]
    assert "x float>" in saxpy                          # the map loop
    dot = text[text.index("define internal fastcc void @pyshark_dot.parfor0("):]
    dot = dot[:dot.index("\n}\n")]
    # the reduction loop; its product may be contracted into it (LANGUAGE.md)
    assert re.search(r"fadd reassoc (contract )?<", dot)


def test_results_are_fresh_arrays_owned_by_numpy(tmp_path):
    w = wrapper(module(tmp_path, """
    @ps.entry
    def ident(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
        return xs
    """), tmp_path / "c")
    xs = np.arange(4.0)
    ys = w.ident(xs)
    assert ys.tolist() == xs.tolist() and not np.shares_memory(xs, ys)
    ys[0] = 42.0                       # writable, and the caller's array is untouched
    assert xs[0] == 0.0


def test_vector_math_calls_libmvec_and_stays_accurate(tmp_path):
    from pyshark.codegen.cpu.link import libmvec_path
    src = module(tmp_path, """
    @ps.entry
    def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        return ps.map(lambda x: ps.exp(x) + ps.log(x) + ps.sin(x), xs)

    @ps.entry
    def g(xs: ps.Array[ps.f64], ys: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
        return ps.map(lambda x, y: ps.pow(x, y) + ps.atan2(x, y), xs, ys)
    """)
    w = wrapper(src, tmp_path / "c")
    x = np.linspace(0.1, 20, 10_007).astype(np.float32)
    np.testing.assert_allclose(w.f(x), np.exp(x) + np.log(x) + np.sin(x), rtol=2e-6, atol=1e-6)
    a = np.linspace(0.1, 5, 5_003)
    np.testing.assert_allclose(w.g(a, a[::-1].copy()), np.power(a, a[::-1]) +
                               np.arctan2(a, a[::-1]), rtol=1e-14)
    if libmvec_path() is None:
        pytest.skip("no libmvec on this machine")
    from pyshark.cli import main
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["show", "--ir", "llvm", str(src)])
    assert "@_ZGV" in buf.getvalue()


def test_fastmath_relaxes_and_stays_close(tmp_path):
    from pyshark.codegen.stages import build_kernels
    from pyshark.codegen.cpu.emit import emit_module
    from pyshark.wrapper.backend import Options, translate_and_check
    program = translate_and_check(SAXPY)
    kernels = build_kernels(program, Options(fastmath=True))
    assert "fmul fast" in emit_module(kernels, fastmath=True)
    assert "fmul fast" not in emit_module(build_kernels(program, Options()))
    w = wrapper(SAXPY, tmp_path, fastmath=True)
    rng = np.random.default_rng(1)
    xs, ys = rng.standard_normal(10_001).astype(np.float32), rng.standard_normal(10_001).astype(np.float32)
    np.testing.assert_allclose(w.saxpy(np.float32(1.5), xs, ys), np.float32(1.5) * xs + ys,
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(w.dot(xs, ys), np.dot(xs.astype(np.float64), ys), rtol=1e-4)


def test_out_of_range_float_to_int_conversions_match_python_mode(tmp_path):
    src = module(tmp_path, """
    @ps.entry
    def conv(xs: ps.Array[ps.f64]) -> tuple[ps.Array[ps.i8], ps.Array[ps.i32], ps.Array[ps.u32], ps.Array[ps.i64], ps.Array[ps.u64]]:
        return (ps.map(lambda x: ps.i8(x), xs), ps.map(lambda x: ps.i32(x), xs),
                ps.map(lambda x: ps.u32(x), xs), ps.map(lambda x: ps.i64(x), xs),
                ps.map(lambda x: ps.u64(x), xs))
    """)
    xs = np.array([np.nan, np.inf, -np.inf, 1e20, -1e20, 3e9 + 1, -300.7, 2.0 ** 63, 1.9e19,
                   5e9, 0.5, -0.5])
    got = wrapper(src, tmp_path / "c").conv(xs)
    py = Wrapper("python", cache_dir=tmp_path / "p")
    py.add_source_file(src)
    want = py.compile_and_load().conv(xs)
    for g, w in zip(got, want):
        assert g.tolist() == w.tolist()


def test_large_results_reuse_freed_memory_without_page_faults(tmp_path):
    # a large block comes from the heap and stays mapped when numpy frees it,
    # so the next call's result costs no page faults (runtime.keep_heap)
    import resource
    w = wrapper(SAXPY, tmp_path)
    xs = np.ones(1 << 23, np.float32)           # 32 MiB results
    for _ in range(3):
        w.saxpy(2.0, xs, xs)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        ys = w.saxpy(2.0, xs, xs)
        del ys
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10
    assert faults < 4, faults          # a fresh mapping: 16 huge pages or 8192 pages


_FRESH_PROCESS = r"""
import resource, sys
import numpy as np
from pyshark import Wrapper
w = Wrapper("cpu", cache_dir=sys.argv[2]).add_source_file(sys.argv[1]).compile_and_load()
if hasattr(type(w), "wait_optimised"):
    w.wait_optimised()
if sys.argv[3] == "big-first":
    w.steps(1, np.ones(1 << 21, np.float32))        # one 8 MiB block first
xs = np.ones(1 << 18, np.float32)                   # 1 MiB grids, one per step
w.steps(20, xs)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    w.steps(20, xs)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
"""


@pytest.mark.parametrize("history", ["fresh", "big-first"])
def test_mid_size_grids_of_a_fresh_process_reuse_the_heap(tmp_path, history):
    # a loop allocating a 1 MiB grid per step and freeing the last: glibc
    # serves such blocks by mmap until its threshold rises, trims the heap's
    # top, and freezes the threshold when a large block's mallopt runs first;
    # runtime.keep_heap keeps them in the heap, so the steps fault no pages
    # (without it: ~250 faults a step fresh, a mapping a step after a large block)
    src = tmp_path / "steps.py"
    src.write_text(STEP_LOOP)
    out = subprocess.run([sys.executable, "-c", _FRESH_PROCESS, str(src), str(tmp_path / "c"),
                          history], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    faults = float(out.stdout.split()[-1])
    assert faults < 40, faults         # 20 steps: not one grid's worth of pages


def test_c_api_context_and_error_text(tmp_path):
    """module.h's context functions and the last error as text (issue 15,
    item 8): the text is what the Python wrapper raises, built in C from the
    library's own message table; AddressSanitizer watches every call."""
    src = tmp_path / "errs.py"
    src.write_text("import pyshark.prelude as ps\n" + ERRORS_SRC)
    out = tmp_path / "errs-cpu"
    header, cc = _build_for_c(src, out)
    for decl in ("pyshark_ctx *pyshark_ctx_new(void);", "void pyshark_ctx_free(pyshark_ctx *ctx);",
                 "int64_t pyshark_error_message(const pyshark_ctx *ctx, char *buf, int64_t size);"):
        assert decl in header
    prog = tmp_path / "main.c"
    prog.write_text(textwrap.dedent("""
        #include <stdio.h>
        #include <string.h>
        #include "module.h"
        int main(void) {
            pyshark_ctx *ctx = pyshark_ctx_new();
            if (!ctx) return 2;
            int64_t xs[3] = {5, 6, 7}, r = 0, *res = 0, shape[1];
            char buf[256], tiny[8];
            int64_t n = pyshark_error_message(ctx, buf, sizeof buf);
            printf("[%lld:%s]\\n", (long long)n, buf);                 /* no error yet */
            int rc = pyshark_at(ctx, xs, 3, 7, &r);
            n = pyshark_error_message(ctx, buf, sizeof buf);
            printf("%d|%lld|%s\\n", rc, (long long)n, buf);
            n = pyshark_error_message(ctx, tiny, sizeof tiny);          /* truncated */
            printf("%lld|%s\\n", (long long)n, tiny);
            rc = pyshark_div(ctx, xs, 3, 0, &res, shape);
            pyshark_error_message(ctx, buf, sizeof buf);
            printf("%d|%s\\n", rc, buf);
            rc = pyshark_checked(ctx, -1, &r);
            pyshark_error_message(ctx, buf, sizeof buf);
            printf("%d|%s\\n", rc, buf);
            rc = pyshark_at(ctx, xs, 3, 1, &r);
            n = pyshark_error_message(ctx, buf, sizeof buf);
            printf("%d|%lld|%lld|%s|\\n", rc, (long long)r, (long long)n, buf);
            pyshark_ctx_free(ctx);
            pyshark_ctx_free(NULL);
            return 0;
        }
    """))
    exe = tmp_path / "main"
    flags = ["-fsanitize=address", "-g"]
    built = subprocess.run([cc, *flags, str(prog), "-I", str(out), str(out / "module.so"), "-o",
                            str(exe), f"-Wl,-rpath,{out}"], capture_output=True, text=True)
    if built.returncode != 0:            # no AddressSanitizer runtime here
        flags = []
        subprocess.run([cc, str(prog), "-I", str(out), str(out / "module.so"), "-o", str(exe),
                        f"-Wl,-rpath,{out}"], check=True)
    # leak detection on: an entry that fails after allocating (div's map
    # result) frees what it allocated before it returns (emit_unwind.py)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
    got = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
    assert got.returncode == 0, got.stdout + got.stderr
    lines = got.stdout.splitlines()
    w = Wrapper.load(out)
    want = {}
    for name, args in (("at", ([5, 6, 7], 7)), ("div", ([5, 6, 7], 0)), ("checked", (-1,))):
        with pytest.raises(Exception) as info:
            w.invoke(name, *args)
        want[name] = f"{type(info.value).__name__}: {info.value}"
    assert lines[0] == "[0:]"
    rc, n, text = lines[1].split("|")
    assert rc == "1" and text == want["at"] and int(n) == len(text)
    assert lines[2] == f"{len(want['at'])}|{want['at'][:7]}"
    assert lines[3] == f"2|{want['div']}"
    assert lines[4] == f"3|{want['checked']}"
    assert lines[5] == "0|6|0||"
