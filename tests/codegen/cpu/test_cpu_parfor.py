"""ParFor: every index once for many counts and thread numbers, Fail inside
a ParFor, chunk-partial float sums with reassoc, the vectorizer firing on the
optimised IR, strict sums staying in order, concurrent calls, the MCJIT
fallback and compile+link time."""
from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from cpu_harness import (BOOL, F32, F64, I0, I1, I64, K, P, build, c64, emit_module,
                         function_ir, np, optimised_ir, v, vector_types)
from pyshark.codegen.cpu import load_library, optimise_and_build
from pyshark.core.types import I32

n, i, c, j = v("n", I64), v("i", I64), v("c", I64), v("j", I64)
COUNTS = [0, 1, 7, 1023, 2 ** 20 + 3]


def f_touch(name="touch", parallel_if=None):
    """out[i] += 1; idx[i] = i  -- every index written exactly once."""
    out, idx = v("out", P(I32)), v("idx", P(I64))
    return K.Function(name, (out, idx, n), K.Block((
        K.ParFor(i, n, K.Block((
            K.Store(out, i, K.Bin("add", K.Load(out, i), K.KConst(1, I32))),
            K.Store(idx, i, i),)), parallel_if=parallel_if),)))


def f_saxpy():
    x, y, a = v("x", P(F32)), v("y", P(F32)), v("a", F32)
    return K.Function("saxpy", (x, y, a, n), K.Block((
        K.ParFor(i, n, K.Block((
            K.Store(y, i, K.Bin("add", K.Bin("mul", a, K.Load(x, i)), K.Load(y, i))),))),)))


def f_sum(name, t, reassoc):
    """Per-thread chunk partials, then a host loop combining them."""
    xs, out, parts = v("xs", P(t)), v("out", P(t)), v("parts", P(t))
    nt, lo, hi, acc, tot = v("nt", I64), v("lo", I64), v("hi", I64), v("acc", t), v("tot", t)
    zero = K.KConst(0.0, t)
    add = lambda a, b: K.Bin("add", a, b, reassoc=reassoc)
    return K.Function(name, (xs, n, out), K.Block((
        K.Set(nt, K.NumThreads()),
        K.Alloc(parts, nt),
        K.ParFor(c, nt, K.Block((
            K.Set(lo, K.Bin("div", K.Bin("mul", c, n), nt)),
            K.Set(hi, K.Bin("div", K.Bin("mul", K.Bin("add", c, I1), n), nt)),
            K.Set(acc, zero),
            K.For(j, lo, hi, K.Block((K.Set(acc, add(acc, K.Load(xs, j))),))),
            K.Store(parts, c, acc),))),
        K.Set(tot, zero),
        K.For(c, I0, nt, K.Block((K.Set(tot, add(tot, K.Load(parts, c))),))),
        K.Free(parts),
        K.Store(out, I0, tot))))


def f_seq_sum(name, t, reassoc):
    xs, out, acc = v("xs", P(t)), v("out", P(t)), v("acc", t)
    return K.Function(name, (xs, n, out), K.Block((
        K.Set(acc, K.KConst(0.0, t)),
        K.For(j, I0, n, K.Block((K.Set(acc, K.Bin("add", acc, K.Load(xs, j), reassoc=reassoc)),))),
        K.Store(out, I0, acc))))


def f_fail(m):
    """marks[i] = 1; if bad[i]: fail IndexError(i, n) ; after the loop: after[0] = 1."""
    marks, bad, after = v("marks", P(I32)), v("bad", P(BOOL)), v("after", P(I64))
    msg = m.message("bad index {} of {}")
    return K.Function("pfail", (marks, bad, after, n), K.Block((
        K.ParFor(i, n, K.Block((
            K.Store(marks, i, K.KConst(1, I32)),
            K.If(K.Load(bad, i), K.Block((K.Fail("IndexError", msg, (i, n, c64(-3))),))),))),
        K.Store(after, I0, I1))))


def f_par_alloc():
    """Each iteration allocates count elements (fails for huge counts)."""
    cnt, tmp, out = v("count", I64), v("tmp", P(F64)), v("out", P(F64))
    return K.Function("par_alloc", (out, n, cnt), K.Block((
        K.ParFor(i, n, K.Block((
            K.Alloc(tmp, cnt),
            K.Store(tmp, I0, K.Cast(F64, i)),
            K.Store(out, i, K.Load(tmp, I0)),
            K.Free(tmp),))),)))


def f_twice():
    """Two ParFors in one entry, inside a host loop, capturing scalars of
    several types (bool, f64) and a variable set between them."""
    out, rounds = v("out", P(F64)), v("rounds", I64)
    flag, scale, r = v("flag", BOOL), v("scale", F64), v("r", I64)
    return K.Function("twice", (out, n, rounds, flag), K.Block((
        K.Set(scale, K.KConst(2.0, F64)),
        K.For(r, I0, rounds, K.Block((
            K.ParFor(i, n, K.Block((
                K.Store(out, i, K.Sel(flag, K.Bin("add", K.Load(out, i), scale),
                                      K.Load(out, i))),))),
            K.Set(scale, K.Bin("mul", scale, K.KConst(2.0, F64))),
            K.ParFor(i, n, K.Block((
                K.Store(out, i, K.Bin("sub", K.Load(out, i), K.KConst(1.0, F64))),)),
                parallel_if=K.Bin("gt", n, c64(1000))),))))))


def _module():
    m = K.Module()
    m.functions = [f_touch(), f_touch("touch_seq", K.KConst(False, BOOL)), f_saxpy(),
                   f_sum("sum_r32", F32, True), f_sum("sum_r64", F64, True),
                   f_sum("sum_s64", F64, False), f_seq_sum("seq_s64", F64, False),
                   f_fail(m), f_par_alloc(), f_twice()]
    return m


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(_module(), tmp_path_factory.mktemp("par"))


@pytest.mark.parametrize("nthreads", [0, 1, 2, 3, 7])
@pytest.mark.parametrize("name", ["touch", "touch_seq"])
def test_every_index_once(lib, name, nthreads):
    for count in COUNTS:
        out = np.zeros(count, np.int32)
        idx = np.full(count, -1, np.int64)
        rc, _ = lib.call(name, out, idx, count, nthreads=nthreads)
        assert rc == 0
        assert np.all(out == 1), (count, np.flatnonzero(out != 1)[:10])
        assert np.array_equal(idx, np.arange(count))


def test_saxpy_bit_exact(lib):
    rng = np.random.default_rng(5)
    for count in COUNTS:
        x = rng.standard_normal(count).astype(np.float32)
        y = rng.standard_normal(count).astype(np.float32)
        want = np.float32(1.75) * x + y
        lib.call("saxpy", x, y, 1.75, count)
        assert np.array_equal(y, want)          # no contraction into FMAs


@pytest.mark.parametrize("nthreads", [0, 1, 2, 5])
def test_reassoc_sum_close_to_numpy(lib, nthreads):
    rng = np.random.default_rng(6)
    for count in COUNTS:
        x64 = rng.standard_normal(count)
        x32 = x64.astype(np.float32)
        o64, o32 = np.zeros(1), np.zeros(1, np.float32)
        assert lib.call("sum_r64", x64, count, o64, nthreads=nthreads)[0] == 0
        assert lib.call("sum_r32", x32, count, o32, nthreads=nthreads)[0] == 0
        np.testing.assert_allclose(o64[0], x64.sum(), rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(o32[0], x32.sum(dtype=np.float64), rtol=1e-4, atol=1e-3)


def test_strict_sum_is_in_order(lib):
    x = np.array([1e20, 1.0, -1e20] * 1000 + [1.0])
    o = np.zeros(1)
    lib.call("seq_s64", x, 3, o)
    assert o[0] == 0.0
    lib.call("seq_s64", x, x.size, o)
    assert o[0] == np.cumsum(x)[-1] == 1.0          # cumsum adds in order
    rng = np.random.default_rng(7)
    y = rng.standard_normal(10007) * 10.0 ** rng.integers(-8, 8, 10007)
    lib.call("seq_s64", y, y.size, o)
    assert o[0] == np.cumsum(y)[-1]
    lib.call("sum_s64", y, y.size, o, nthreads=1)     # one chunk: in order as well
    assert o[0] == np.cumsum(y)[-1]


def test_fail_inside_parfor(lib):
    count = 100_000
    after = np.zeros(1, np.int64)
    for nthreads in (0, 1, 2):
        bad = np.zeros(count, bool)
        bad[[17, 54_321, 99_999]] = True
        marks = np.zeros(count, np.int32)
        rc, ctx = lib.call("pfail", marks, bad, after, count, nthreads=nthreads)
        assert rc == ctx.code == K.ERROR_CODES["IndexError"]
        assert ctx.msg == lib.module.messages.index("bad index {} of {}")
        assert ctx.args[0] in (17, 54_321, 99_999)
        assert list(ctx.args)[1:] == [count, -3, 0]
        assert after[0] == 0                              # the host stopped after the loop
        assert marks[:18].all()
        if nthreads == 1:               # one thread claims every block: it stopped at 17
            assert not marks[18:].any()
        if nthreads in (0, 2):          # the block holding 17 (>= 4096 long) stopped there;
            assert not marks[18:4096].any()     # other threads finish the blocks they hold
            assert not marks.all()
    marks = np.zeros(count, np.int32)
    rc, ctx = lib.call("pfail", marks, np.zeros(count, bool), after, count)
    assert rc == 0 and after[0] == 1 and marks.all()


def test_alloc_fails_inside_parfor(lib):
    out = np.zeros(1000)
    assert lib.call("par_alloc", out, 1000, 3)[0] == 0
    assert np.array_equal(out, np.arange(1000.0))
    rc, ctx = lib.call("par_alloc", out, 1000, 1 << 61)
    assert rc == K.ERROR_CODES["MemoryError"] and list(ctx.args)[:2] == [1 << 61, 8]


def test_two_parfors_in_a_host_loop(lib):
    for count in (5, 5000):
        out = np.zeros(count)
        lib.call("twice", out, count, 3, 1)
        assert np.all(out == (2.0 + 4.0 + 8.0) - 3.0)
        out[:] = 0
        lib.call("twice", out, count, 2, 0)
        assert np.all(out == -2.0)


def test_concurrent_python_threads(lib):
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(15):
                count = int(rng.integers(0, 200_000))
                x = rng.standard_normal(count).astype(np.float32)
                y = rng.standard_normal(count).astype(np.float32)
                want = np.float32(0.5) * x + y
                lib.call("saxpy", x, y, 0.5, count)
                assert np.array_equal(y, want)
                o = np.zeros(1)
                xd = x.astype(np.float64)
                lib.call("sum_r64", xd, count, o)
                np.testing.assert_allclose(o[0], xd.sum(), rtol=1e-10, atol=1e-9)
                bad = np.zeros(1000, bool)
                bad[seed] = True
                rc, ctx = lib.call("pfail", np.zeros(1000, np.int32), bad, np.zeros(1, np.int64), 1000)
                assert rc == 1 and ctx.args[0] == seed
        except BaseException as e:   # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# ---------------------------------------------------------------------------
# The optimised IR


def _opt(fns) -> str:
    return optimised_ir(emit_module(K.Module(list(fns))))


def test_parfor_map_vectorizes_without_alias_checks():
    opt = _opt([f_saxpy()])
    body = function_ir(opt, "saxpy.parfor0")
    assert vector_types(body) & {"<16 x float>", "<8 x float>", "<4 x float>"}, body
    assert "memcheck" not in opt


def test_reassoc_sum_vectorizes_and_strict_does_not():
    opt = _opt([f_sum("sum_r32", F32, True)])
    assert any(f"fadd reassoc <{w} x float>" in opt for w in (4, 8, 16)), opt
    strict = _opt([f_seq_sum("seq_s64", F64, False)])
    fn = function_ir(strict, "seq_s64")
    assert not any(f"fadd <{w} x double>" in fn for w in (2, 4, 8)), fn


def test_fastmath_flags(tmp_path):
    x, y, a = v("x", P(F64)), v("y", P(F64)), v("a", F64)
    f = K.Function("axpy", (x, y, a, n), K.Block((
        K.For(i, I0, n, K.Block((
            K.Store(y, i, K.Bin("add", K.Bin("mul", a, K.Load(x, i)), K.Load(y, i))),))),)))
    m = K.Module([f])
    text = emit_module(m, fastmath=True)
    assert "fmul fast" in text and "fadd fast" in text
    assert "fast" not in emit_module(m)
    b = build(m, tmp_path, fastmath=True)
    xs, ys = np.arange(100.0), np.ones(100)
    b.call("axpy", xs, ys, 3.0, 100)
    np.testing.assert_allclose(ys, 3.0 * np.arange(100.0) + 1.0)


# ---------------------------------------------------------------------------
# Building and loading


def test_jit_fallback(tmp_path):
    m = K.Module()
    m.functions = [f_touch(), f_sum("sum_r64", F64, True), f_fail(m)]
    b = build(m, tmp_path, cc=None)
    assert b.lib.kind == "jit"
    for count in (0, 1, 7, 100_003):
        out, idx = np.zeros(count, np.int32), np.zeros(count, np.int64)
        for nt in (0, 2):
            out[:] = 0
            assert b.call("touch", out, idx, count, nthreads=nt)[0] == 0
            assert np.all(out == 1) and np.array_equal(idx, np.arange(count))
    x = np.random.default_rng(1).standard_normal(12345)
    o = np.zeros(1)
    b.call("sum_r64", x, x.size, o)
    np.testing.assert_allclose(o[0], x.sum(), rtol=1e-12)
    bad = np.zeros(50, bool)
    bad[7] = True
    rc, ctx = b.call("pfail", np.zeros(50, np.int32), bad, np.zeros(1, np.int64), 50)
    assert rc == 1 and ctx.args[0] == 7
    # LLVM IR text can also be JIT-compiled directly
    lib2 = load_library(emit_module(K.Module([f_touch()])))
    assert lib2.kind == "jit" and lib2.address_of("touch")


def test_compile_and_link_time(tmp_path):
    m = K.Module([f_saxpy(), f_touch()])
    optimise_and_build(emit_module(m), tmp_path / "warm.so")        # target machine set up
    t0 = time.perf_counter()
    text = emit_module(m)
    optimise_and_build(text, tmp_path / "timed.so")
    dt = time.perf_counter() - t0
    print(f"emit + optimise + object + link: {dt * 1000:.0f} ms")
    assert dt < 1.0
    assert load_library(tmp_path / "timed.so").kind == "so"


_JIT_CHECK = """
    from test_cpu_parfor import f_touch, K, np, build, f_sum, F64
    b = build(K.Module([f_touch(), f_sum("s", F64, True)]), sys.argv[2], cc=None)
    out, idx = np.zeros(1001, np.int32), np.zeros(1001, np.int64)
    assert b.call("touch", out, idx, 1001, nthreads=4)[0] == 0
    assert (out == 1).all() and (idx == np.arange(1001)).all()
    o = np.zeros(1)
    b.call("s", np.arange(100.0), 100, o)
    assert o[0] == 4950.0, o
    from pyshark.codegen.cpu import team
    print("ok", team.kind(), team.max_threads(), "libgomp" in open("/proc/self/maps").read())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_jit_without_compiler_or_libgomp_runs_parfors_sequentially(tmp_path):
    """With no C compiler (no team runtime) and no libgomp to load, the JIT
    path binds pysharkrt_parallel & co. to sequential stand-ins (one thread).
    Run in a fresh process."""
    import subprocess
    import textwrap
    from pathlib import Path
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        import pyshark.codegen.native_ext as native_ext
        from pyshark.codegen.cpu import team
        native_ext.find_c_compiler = lambda: None
        team._libgomp = lambda: None
    """) + textwrap.dedent(_JIT_CHECK)
    r = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(tmp_path)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.split()[-4:] == ["ok", "none", "1", "False"], \
        r.stdout + r.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_jit_uses_the_team_runtime(tmp_path):
    """JIT-compiled IR (no object file) binds the same team as shared
    libraries do, and libgomp is not loaded."""
    import subprocess
    import textwrap
    from pathlib import Path
    code = "import sys\nsys.path.insert(0, sys.argv[1])\n" + textwrap.dedent(_JIT_CHECK)
    env = dict(os.environ, OMP_NUM_THREADS="3")
    env.pop("PYSHARK_THREADS", None)
    r = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(tmp_path)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert r.returncode == 0 and r.stdout.split()[-4:] == ["ok", "team", "3", "False"], \
        r.stdout + r.stderr
