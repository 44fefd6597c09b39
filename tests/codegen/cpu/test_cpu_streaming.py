"""Streaming (nontemporal) stores: the kir flag and its checks, the pass
that sets it (codegen/kir_passes/streaming.py), the LLVM spelling (emit_parfor.py:
block buffers copied out by aligned movnt* stores), and end to end against
Python mode."""
from __future__ import annotations

import re

import pytest

from cpu_harness import BOOL, F32, F64, I64, K, P, build, c64, np, v
from pyshark.codegen.cpu import link
from pyshark.codegen.kir_passes import streaming as S
from pyshark.codegen.kir_check import KirError
from pyshark.core.types import I8

n, i, j = v("n", I64), v("i", I64), v("j", I64)
xs, ys = v("xs", P(F32)), v("ys", P(F32))
out, out0 = v("out", P(F32)), v("out0", P(P(F32)))
COUNTS = [0, 1, 7, 129, 1023, 40_003, 2 ** 20 + 3]   # 40_003: blocks of 4096 + a partial one
TWO = K.KConst(2.0, F32)


def entry(*stms, params=(xs, n, out0)) -> K.Module:
    return K.Module([K.Function("f", params, K.Block(stms))])


def fresh_map(*body_extra, store=None, after=()) -> K.Module:
    """out = alloc(n); parfor i: out[i] = 2 * xs[i]; out0[0] = out."""
    st = store or K.Store(out, i, K.Bin("mul", TWO, K.Load(xs, i)))
    return entry(K.Alloc(out, n), K.ParFor(i, n, K.Block(body_extra + (st,))), *after,
                 K.Store(out0, c64(0), out))


def marked(m: K.Module) -> list:
    return [s for f in m.functions for s in K.walk_stms(f.body)
            if isinstance(s, K.Store) and s.nontemporal]


# ---------------------------------------------------------------------------
# the pass


def test_marks_the_store_of_a_fresh_result_behind_a_size_test():
    m = S.stream_stores(fresh_map())
    K.check_module(m)
    (f,) = m.functions
    test = next(s for s in f.body.stms if isinstance(s, K.If))
    assert test.cond == K.Bin("ge", n, c64(S.STREAM_MIN_BYTES // 4))
    (big,), (small,) = test.then.stms, test.orelse.stms
    assert [s.nontemporal for s in big.body.stms] == [True]
    assert [s.nontemporal for s in small.body.stms] == [False]
    assert "out[i] = (2.0f32 * xs[i])  # nontemporal" in K.pretty_module(m)


def test_the_size_test_counts_every_marked_array():
    out2 = v("out2", P(F64))
    m = entry(K.Alloc(out, n), K.Alloc(out2, n),
              K.ParFor(i, n, K.Block((K.Store(out, i, K.Load(xs, i)),
                                      K.Store(out2, i, K.Cast(F64, K.Load(xs, i)))))),
              K.Store(out0, c64(0), out), K.Free(out2))
    r = S.stream_stores(m, min_bytes=1000)
    K.check_module(r)
    assert len(marked(r)) == 2
    assert next(s for s in r.functions[0].body.stms if isinstance(s, K.If)).cond == \
        K.Bin("ge", n, c64(84))                 # ceil(1000 / 12)


def test_leaves_a_store_into_a_parameter():
    m = entry(K.ParFor(i, n, K.Block((K.Store(ys, i, K.Load(xs, i)),))), params=(xs, ys, n))
    assert S.stream_stores(m, min_bytes=0) == m


def test_leaves_a_buffer_the_loop_also_loads():
    t = v("t", F32)
    m = fresh_map(K.Set(t, K.Load(out, K.Bin("sub", n, K.Bin("add", i, c64(1))))))
    assert not marked(S.stream_stores(m, min_bytes=0))


def test_leaves_a_buffer_read_after_the_loop():
    acc = v("acc", F32)
    m = fresh_map(after=(K.Set(acc, K.Load(out, c64(0))),))
    assert not marked(S.stream_stores(m, min_bytes=0))
    m = fresh_map(after=(K.Set(v("view", P(F32)), K.PtrAdd(out, c64(1))),))
    assert not marked(S.stream_stores(m, min_bytes=0))


def test_leaves_a_store_at_another_index():
    st = K.Store(out, K.Bin("sub", K.Bin("sub", n, i), c64(1)), K.Load(xs, i))
    assert not marked(S.stream_stores(fresh_map(store=st), min_bytes=0))


def test_leaves_stores_outside_a_parfor_or_not_at_its_top():
    seq = entry(K.Alloc(out, n), K.For(i, c64(0), n, K.Block((K.Store(out, i, K.Load(xs, i)),))),
                K.Store(out0, c64(0), out))
    assert S.stream_stores(seq, min_bytes=0) == seq
    cond = K.Bin("gt", K.Load(xs, i), K.KConst(0.0, F32))
    guarded = K.If(cond, K.Block((K.Store(out, i, K.Load(xs, i)),)))
    m = entry(K.Alloc(out, n), K.ParFor(i, n, K.Block((guarded,))), K.Store(out0, c64(0), out))
    assert not marked(S.stream_stores(m, min_bytes=0))


def test_leaves_a_body_with_a_loop():
    acc = v("acc", F32)
    body = (K.Set(acc, K.KConst(0.0, F32)),
            K.For(j, c64(0), i, K.Block((K.Set(acc, K.Bin("add", acc, K.Load(xs, j))),))))
    st = K.Store(out, i, acc)
    assert not marked(S.stream_stores(fresh_map(*body, store=st), min_bytes=0))


def test_leaves_a_compute_bound_body():
    x = K.Load(xs, i)
    heavy = K.Store(out, i, K.Bin("add", K.Un("exp", x), K.Un("log", x)))
    assert not marked(S.stream_stores(fresh_map(store=heavy), min_bytes=0))
    poly = x
    for k in range(7):                      # 14 operations per 8 bytes: streams
        poly = K.Bin("add", K.Bin("mul", poly, x), K.KConst(k + 0.5, F32))
    assert marked(S.stream_stores(fresh_map(store=K.Store(out, i, poly)), min_bytes=0))
    for k in range(2):                      # 18 per 8: computation bounds it
        poly = K.Bin("add", K.Bin("mul", poly, x), K.KConst(k + 0.5, F32))
    assert not marked(S.stream_stores(fresh_map(store=K.Store(out, i, poly)), min_bytes=0))


def test_leaves_a_buffer_also_assigned_otherwise():
    m = entry(K.Alloc(out, n), K.Set(out, K.PtrAdd(xs, c64(0))),
              K.ParFor(i, n, K.Block((K.Store(out, i, K.Load(xs, i)),))),
              K.Store(out0, c64(0), out))
    assert not marked(S.stream_stores(m, min_bytes=0))


# ---------------------------------------------------------------------------
# the checker


def nt_store(ptr=out, index=i):
    return K.Store(ptr, index, K.Load(xs, i), nontemporal=True)


@pytest.mark.parametrize("bad", [
    lambda: entry(K.Alloc(out, n), K.Store(out, c64(0), TWO, nontemporal=True)),
    lambda: entry(K.Alloc(out, n), K.ParFor(i, n, K.Block((nt_store(index=c64(0)),)))),
    lambda: entry(K.Alloc(out, n), K.ParFor(i, n, K.Block((
        K.If(K.KConst(True, BOOL), K.Block((nt_store(),))),)))),
    lambda: entry(K.Alloc(out, n), K.ParFor(i, n, K.Block((
        nt_store(), K.Set(v("t", F32), K.Load(out, i)))))),
    lambda: entry(K.Alloc(out, n), K.ParFor(i, n, K.Block((
        nt_store(), K.Store(out, i, TWO))))),
])
def test_checker_rejects_misplaced_nontemporal_stores(bad):
    with pytest.raises(KirError):
        K.check_module(bad())


# ---------------------------------------------------------------------------
# the LLVM spelling, on hand-built kernels


def f_streams():
    """One ParFor storing f32, f64 and bool results nontemporally, and an
    ordinary i8 one."""
    o32, o64, ob, o8 = v("o32", P(F32)), v("o64", P(F64)), v("ob", P(BOOL)), v("o8", P(I8))
    x = K.Load(xs, i)
    body = (K.Store(o32, i, K.Bin("add", K.Bin("mul", TWO, x), K.KConst(1.0, F32)),
                    nontemporal=True),
            K.Store(o64, i, K.Cast(F64, x), nontemporal=True),
            K.Store(ob, i, K.Bin("gt", x, K.KConst(0.5, F32)), nontemporal=True),
            K.Store(o8, i, K.Cast(I8, K.Bin("mul", x, K.KConst(100.0, F32)))))
    return K.Module([K.Function("streams", (xs, o32, o64, ob, o8, n),
                                K.Block((K.ParFor(i, n, K.Block(body)),)))])


def placed(count: int, dtype, offset: int) -> np.ndarray:
    """An array of `count` elements whose data starts `offset` bytes past a
    64-byte boundary."""
    dt = np.dtype(dtype)
    raw = np.empty(count * dt.itemsize + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + count * dt.itemsize].view(dt)


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    return build(f_streams(), tmp_path_factory.mktemp("nt"))


def _asm(text: str) -> str:
    tm = link.target_machine()
    return tm.emit_assembly(link._parse_and_optimise(text, tm))


def test_spelled_as_aligned_streaming_vector_stores(streams):
    # one 64-byte line of streaming stores per nontemporal array (f32, f64,
    # bool: the instruction's domain is LLVM's choice; one zmm store with
    # AVX-512, two ymm with AVX2), none for the ordinary one
    asm = _asm(streams.text)
    per_line = 64 // (link._vector_isa_bits() // 8)
    assert len(re.findall(r"\bv?movnt(?:ps|pd|dq)\b", asm)) == 3 * per_line, asm
    assert "sfence" in asm


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("nthreads", [1, 2, 3, 7])
@pytest.mark.parametrize("offset", [0, 4])
def test_streaming_results(streams, count, nthreads, offset):
    rng = np.random.default_rng(count)
    x = rng.random(count, dtype=np.float32)
    o32, o64 = placed(count, np.float32, offset), placed(count, np.float64, offset)
    ob, o8 = placed(count, np.bool_, offset), placed(count, np.int8, offset)
    rc, _ = streams.call("streams", x, o32, o64, ob, o8, count, nthreads=nthreads)
    assert rc == 0
    assert np.array_equal(o32, np.float32(2.0) * x + np.float32(1.0))
    assert np.array_equal(o64, x.astype(np.float64))
    assert np.array_equal(ob, x > np.float32(0.5))
    assert np.array_equal(o8, (x * np.float32(100.0)).astype(np.int8))


def test_a_failing_streaming_loop_reports_its_error(tmp_path):
    x = K.Load(xs, i)
    body = (K.If(K.Bin("lt", x, K.KConst(0.0, F32)),
                 K.Block((K.Fail("ValueError", 0, (i,)),))),
            K.Store(out, i, x, nontemporal=True))
    m = K.Module([K.Function("fails", (xs, out, n), K.Block((K.ParFor(i, n, K.Block(body)),)))],
                 ["negative at {}"])
    built = build(m, tmp_path)
    count = 100_003
    a = np.ones(count, np.float32)
    a[77_777] = -1.0
    o = placed(count, np.float32, 0)
    rc, ctx = built.call("fails", a, o, count, nthreads=2)
    assert rc == K.ERROR_CODES["ValueError"] and ctx.args[0] == 77_777
    a[77_777] = 1.0
    assert built.call("fails", a, o, count, nthreads=2)[0] == 0
    assert np.array_equal(o, a)


# ---------------------------------------------------------------------------
# end to end


SAXPY = "benchmarks/programs/saxpy.py"


def test_a_large_map_streams(pytestconfig):
    from pyshark.codegen.stages import build_kernels
    from pyshark.codegen.cpu.emit import emit_module
    from pyshark.core.check import check_program
    from pyshark.translate import translate_file
    from pyshark.wrapper.backend import Options
    program = translate_file(str(pytestconfig.rootpath / SAXPY))
    check_program(program)
    kernels = build_kernels(program, Options())
    assert "# nontemporal" in K.pretty_module(kernels)
    asm = _asm(emit_module(kernels))
    assert re.search(r"\bv?movntps\b", asm) and "sfence" in asm


@pytest.fixture(scope="module")
def saxpys(tmp_path_factory, pytestconfig):
    """saxpy on the cpu backend streaming at every size (on every host:
    PYSHARK_STREAM_MAPS=1), and in Python mode."""
    from pyshark import Wrapper
    path = pytestconfig.rootpath / SAXPY
    cache = tmp_path_factory.mktemp("c")
    old, S.STREAM_MIN_BYTES = S.STREAM_MIN_BYTES, 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYSHARK_STREAM_MAPS", "1")
        try:
            cpu = Wrapper("cpu", cache_dir=cache)
            cpu.add_source_file(path)
            cpu.compile_and_load()
        finally:
            S.STREAM_MIN_BYTES = old
    (kernels,) = [p.read_text() for p in cache.rglob("kernels.txt")]
    assert ">= 0i64) {" in kernels and "# nontemporal" in kernels
    py = Wrapper("python", cache_dir=tmp_path_factory.mktemp("p"))
    py.add_source_file(path)
    return cpu.compile_and_load(), py.compile_and_load()


@pytest.mark.parametrize("count", COUNTS)
def test_streaming_map_equals_python_mode(saxpys, count):
    cpu, py = saxpys
    rng = np.random.default_rng(count)
    x, y = rng.random(count, dtype=np.float32), rng.random(count, dtype=np.float32)
    a = np.float32(2.5)
    want = py.saxpy(a, x, y) if count < 2 ** 16 else a * x + y
    assert np.array_equal(cpu.saxpy(a, x, y), want)


@pytest.mark.parametrize("stream", ["0", "1"])
def test_streaming_map_above_the_default_threshold(tmp_path, pytestconfig, monkeypatch, stream):
    from pyshark import Wrapper
    monkeypatch.setenv("PYSHARK_STREAM_MAPS", stream)
    cpu = Wrapper("cpu", cache_dir=tmp_path)
    cpu.add_source_file(pytestconfig.rootpath / SAXPY)
    cpu.compile_and_load()
    count = S.STREAM_MIN_BYTES // 4 + 5
    rng = np.random.default_rng(5)
    x, y = rng.random(count, dtype=np.float32), rng.random(count, dtype=np.float32)
    assert np.array_equal(cpu.saxpy(np.float32(2.5), x, y), np.float32(2.5) * x + y)


def test_the_host_switch_leaves_the_pass_out_and_keys_the_cache(monkeypatch):
    """cpu/link.stream_map_results: off on AMD Zen 5, where nontemporal
    stores lost to ordinary ones (benchmarks/README.md, "Session 40");
    the switch drops the stage and changes the cache key."""
    from pyshark.codegen.cpu.backend import CpuBackend
    from pyshark.codegen.stages import kir_stages
    monkeypatch.setenv("PYSHARK_STREAM_MAPS", "1")
    assert link.host_target().stream_maps
    assert "stream-stores" in [n for n, _ in kir_stages(link.host_target())]
    on = CpuBackend().cache_salt()
    monkeypatch.setenv("PYSHARK_STREAM_MAPS", "0")
    assert "stream-stores" not in [n for n, _ in kir_stages(link.host_target())]
    assert CpuBackend().cache_salt() != on
    monkeypatch.delenv("PYSHARK_STREAM_MAPS")
    assert link.stream_map_results() == (not link.host_cpu().startswith("znver5"))
