"""GVN's loop load PRE kept off PyShark's O3 pipeline (link.loop_load_pre,
docs/cpu-backend.md "Loop load PRE"): the 3-D heat stencil's rows, which
read u[i][j][k - 1], u[i][j][k] and u[i][j][k + 1], keep their loads
instead of carrying one to the next iteration, so LLVM gives their vector
loops a vector epilogue; LLVM's defaults are back after each compile (a
Numba compile in this process sees them); the switch is part of the cache
key; results equal Python mode at sizes around every vector width."""
from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest

from backend_pair import host_kernels, source_file
from cpu_harness import functions_ir
from pyshark import Wrapper
from pyshark.codegen.cpu import link
from pyshark.codegen.cpu.emit import emit_module

#: scripts/shapes_probe/programs.py, whose heat3d is the stencil
SRC = (Path(__file__).resolve().parents[3] / "scripts" / "shapes_probe" / "programs.py").read_text()


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return source_file(tmp_path_factory, "lpre_mod", SRC)


def _optimised(src) -> str:
    """The optimised LLVM IR of heat3d's functions (the entry, its ParFor bodies)."""
    return functions_ir(link.optimised_ir(emit_module(host_kernels(src))), "pyshark_heat3d")


def test_the_stencil_row_keeps_its_loads_and_gets_a_vector_epilogue(src, monkeypatch):
    monkeypatch.delenv("PYSHARK_LOOP_LOAD_PRE", raising=False)
    ours = _optimised(src)
    assert "vector.recur" not in ours and "vec.epilog.vector.body" in ours
    # LLVM's default carries the load to the next iteration (a fixed-order
    # recurrence), for which it builds no vector epilogue
    monkeypatch.setenv("PYSHARK_LOOP_LOAD_PRE", "1")
    theirs = _optimised(src)
    assert "vector.recur" in theirs and "vec.epilog.vector.body" not in theirs


_LOOP = r'''
define void @f(ptr noalias %x, ptr noalias %y, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %i1 = add nuw nsw i64 %i, 1
  %pa = getelementptr inbounds float, ptr %x, i64 %i
  %pb = getelementptr inbounds float, ptr %x, i64 %i1
  %a = load float, ptr %pa
  %b = load float, ptr %pb
  %s = fadd float %a, %b
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %s, ptr %py
  %c = icmp slt i64 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
'''


def _gvn_carries_the_load() -> bool:
    """Whether LLVM's O3 pipeline, run directly (as Numba runs it), turns
    the loop's load of x[i] into the x[i + 1] of the iteration before."""
    mod = llvm.parse_assembly(_LOOP)
    tm = link.target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = False       # keep the scalar loop to look at
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    text = str(mod)
    return "phi float" in text


def test_llvm_defaults_are_back_after_a_compile(src, monkeypatch):
    monkeypatch.delenv("PYSHARK_LOOP_LOAD_PRE", raising=False)
    assert _gvn_carries_the_load()
    _optimised(src)
    assert _gvn_carries_the_load()
    with link._PipelineOptions():
        assert not _gvn_carries_the_load()
        with link._PipelineOptions():          # nested and concurrent users count
            pass
        assert not _gvn_carries_the_load()
    assert _gvn_carries_the_load()


def test_the_switch_and_the_cache_key(monkeypatch):
    from pyshark.codegen.cpu.backend import CpuBackend
    monkeypatch.delenv("PYSHARK_LOOP_LOAD_PRE", raising=False)
    assert not link.loop_load_pre()
    off = CpuBackend().cache_salt()
    monkeypatch.setenv("PYSHARK_LOOP_LOAD_PRE", "1")
    assert link.loop_load_pre()
    assert CpuBackend().cache_salt() != off


@pytest.fixture(scope="module")
def modules(src):
    cpu = Wrapper("cpu", tiered=False).add_source_file(src)
    cpu.compile_and_load()
    py = Wrapper("python").add_source_file(src)
    py.compile_and_load()
    return py, cpu


@pytest.mark.parametrize("n,steps", [(1, 1), (2, 2), (3, 1), (4, 3), (17, 2), (18, 1), (33, 2),
                                     (34, 1), (35, 3), (50, 2), (3, 0)])
def test_results_equal_python_mode(modules, n, steps):
    py, cpu = modules
    rng = np.random.default_rng(n * 10 + steps)
    u = rng.standard_normal((n, n, n)).astype(np.float32)
    if n > 2:
        u[n // 2, 1, n - 2] = np.nan
        u[1, n // 2, 1] = np.inf
    want = np.asarray(py.heat3d(u, steps), np.float32)
    got = cpu.heat3d(u, steps)
    assert got.shape == want.shape == (n, n, n) and got.dtype == np.float32
    assert np.array_equal(got, want, equal_nan=True)
