"""codegen/kir_passes/parallel_copy.py: a host-level CopyMem becomes a ParFor
of chunks (parallel from MIN_BYTES on), a copy inside a ParFor stays; the
chunks cover the copy exactly (the kernel IR interpreter, counts around the
chunk size and 0), and a loop whose initial value and result are copied
agrees with Python mode on cpu at sizes on both sides of the threshold."""
from __future__ import annotations

import numpy as np
import pytest

from backend_pair import STEP_LOOP, python_and
from pyshark.codegen import kir as K
from pyshark.codegen.kir_interp import Buffer, run_function
from pyshark.codegen.kir_passes.parallel_copy import CHUNK_BYTES, MIN_BYTES, parallel_copies
from pyshark.codegen.kir_passes.streaming import STREAM_MIN_BYTES
from pyshark.codegen.stages import pipeline_for, run_stages, stage_names
from pyshark.core.types import BOOL, F32, F64, I64, U8
from pyshark.translate import translate_source

n, i = K.KVar("n", I64), K.KVar("i", I64)


def _copy_fn(t) -> K.Function:
    dst, src = K.KVar("dst", K.Ptr(t)), K.KVar("src", K.Ptr(t))
    return K.Function("f", (n, dst, src), K.Block((K.CopyMem(dst, src, n),)))


def _walk(b):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from _walk(sb)


def test_host_copy_becomes_a_parfor_of_chunks_or_a_streaming_parfor():
    g = parallel_copies(K.Module([_copy_fn(F32)])).functions[0]
    K.check_module(K.Module([g]))
    kinds = [type(s).__name__ for s in g.body.stms]
    assert kinds == ["Set", "Set", "Set", "If"]
    pick = g.body.stms[3]
    # STREAM_MIN_BYTES or more: element by element, streaming stores
    (streamed,) = pick.then.stms
    assert isinstance(streamed, K.ParFor) and streamed.parallel_if is None
    store = streamed.body.stms[-1]
    assert isinstance(store, K.Store) and store.nontemporal and store.index == streamed.var
    assert pick.cond == K.Bin("ge", g.body.stms[0].var, K.KConst(STREAM_MIN_BYTES // 4, I64))
    # else: chunks of memcpy
    (par,) = pick.orelse.stms
    assert par.parallel_if is not None
    assert [type(s).__name__ for s in par.body.stms] == ["CopyMem"]


def test_a_copy_of_bools_is_never_streamed():
    g = parallel_copies(K.Module([_copy_fn(BOOL)])).functions[0]
    K.check_module(K.Module([g]))
    assert [type(s).__name__ for s in g.body.stms] == ["Set", "ParFor"]


def test_copy_inside_a_parfor_stays():
    dst, src = K.KVar("dst", K.Ptr(F64)), K.KVar("src", K.Ptr(F64))
    body = K.Block((K.CopyMem(K.PtrAdd(dst, i), K.PtrAdd(src, i), K.KConst(1, I64)),))
    f = K.Function("f", (n, dst, src), K.Block((K.ParFor(i, n, body),)))
    g = parallel_copies(K.Module([f])).functions[0]
    assert g.body == f.body


@pytest.mark.parametrize("t,np_t", [(F32, np.float32), (F64, np.float64), (U8, np.uint8),
                                    (BOOL, np.bool_)])
def test_chunks_cover_the_copy_exactly(t, np_t):
    g = parallel_copies(K.Module([_copy_fn(t)]))
    chunk = CHUNK_BYTES // t.bytes
    for count in (0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk + 5):
        src = (np.arange(count + 3) % (2 if np_t is np.bool_ else 251)).astype(np_t)
        fill = np_t(True) if np_t is np.bool_ else np_t(7)
        dst = np.full(count + 3, fill, np_t)
        run_function(g, "f", [np.int64(count), Buffer(dst), Buffer(src)])
        assert np.array_equal(dst[:count], src[:count]), count
        assert (dst[count:] == fill).all(), count        # nothing past the count


def test_stage_is_in_the_cpu_pipeline_and_not_the_quick_tier():
    assert "parallel-copies" in stage_names(pipeline_for())
    assert "parallel-copies" not in stage_names(pipeline_for(quick=True))


LOOP = STEP_LOOP


def test_loop_copies_are_parallel_in_the_kernel_ir():
    program = translate_source(LOOP, "<pc>")
    m = run_stages(program, pipeline_for())
    (f,) = [f for f in m.functions if f.name.endswith("steps")]
    copies = [s for s in _walk(f.body) if isinstance(s, K.CopyMem)]
    pars = [s for s in _walk(f.body) if isinstance(s, K.ParFor)
            and any(isinstance(t, K.CopyMem) for t in s.body.stms)]
    # the input is read in place and the result handed over: the one copy
    # left is the input's, when no step ran (lower_control._lower_loop)
    assert len(copies) == 1 and len(pars) == 1


@pytest.fixture(scope="module")
def loop_mods(tmp_path_factory):
    return python_and("cpu", LOOP, tmp_path_factory, "pcloop")


@pytest.mark.parametrize("size", [0, 1, 17, MIN_BYTES // 4 - 1, MIN_BYTES // 4,
                                  MIN_BYTES // 4 + 4093, 3 * MIN_BYTES])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_loop_agrees_with_python_mode(loop_mods, size, k):
    py, cpu = loop_mods
    xs = np.linspace(-3.0, 9.0, size, dtype=np.float32)
    want = py.steps(k, xs)
    got = cpu.steps(k, xs)
    assert got.dtype == np.float32 and np.array_equal(got, want)
    assert np.array_equal(xs, np.linspace(-3.0, 9.0, size, dtype=np.float32))   # input kept


@pytest.mark.parametrize("size", [STREAM_MIN_BYTES // 4 - 1, STREAM_MIN_BYTES // 4 + 5])
def test_a_large_copy_streams_and_agrees_with_python_mode(loop_mods, size):
    """No step ran: the result is a copy of the input, on both sides of the
    streaming threshold (32 MiB of f32), so with streaming stores past it."""
    py, cpu = loop_mods
    xs = (np.arange(size, dtype=np.float32) % 1009.0) - 7.0
    got = cpu.steps(0, xs)
    assert got.dtype == np.float32 and got.shape == xs.shape
    assert np.array_equal(got, xs) and got.ctypes.data != xs.ctypes.data
    assert np.array_equal(py.steps(0, xs[:5]), cpu.steps(0, xs[:5]))
