"""The stage breakdown of a compile (pyshark/compile_times.py) works: what
`pyshark bench`'s compile report and docs/cpu-backend.md "Compile time"
read. Never a timing assertion: speed is not a unit test."""
from __future__ import annotations

import pytest

from pyshark import compile_times as CT
from pyshark.codegen.stages import pipeline_for, stage_names

SRC = '''
import pyshark.prelude as ps

@ps.entry
def scale(a: ps.f32, xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x: a * x, xs)
'''


def test_stages_record_only_inside_a_recording():
    with CT.stage("outside"):
        pass
    assert CT.current() is None
    with CT.recording() as outer:
        with CT.stage("a"):
            pass
        with CT.recording() as inner:
            with CT.stage("b"):
                pass
        with CT.stage("a"):
            pass
    assert list(outer.seconds) == ["a"] and list(inner.seconds) == ["b"]
    assert outer.total >= sum(outer.seconds.values()) >= 0
    assert outer.unattributed >= 0
    d = outer.as_dict()
    assert set(d) == {"total_s", "stages_s", "other_s", "stages_cpu_s", "total_cpu_s"}
    assert set(d["stages_cpu_s"]) == {"a"} and d["stages_cpu_s"]["a"] >= 0
    assert outer.total_cpu >= 0
    assert "total" in outer.table() and "cpu" in outer.table()


def test_a_stage_that_raises_is_still_timed():
    with CT.recording() as rec:
        with pytest.raises(ValueError):
            with CT.stage("boom"):
                raise ValueError
    assert "boom" in rec.seconds


def test_cpu_compile_breakdown_names_every_stage(tmp_path):
    pytest.importorskip("llvmlite")
    from pyshark.codegen.cpu.backend import compile_breakdown
    from pyshark.codegen.cpu.link import find_c_compiler, host_target
    rec = compile_breakdown(tmp_path / "scale.py", text=SRC)
    want = (["cache-key", "parse", "metadata", "translate", "check"]
            + stage_names(pipeline_for(host_target()))      # this host's stages
            + ["kir-check", "emit-llvm", "llvm-parse", "llvm-verify", "llvm-optimise",
               "libmvec", "artifacts", "load"]
            + (["llvm-object", "link"] if find_c_compiler() else []))
    assert set(want) <= set(rec.seconds), set(want) - set(rec.seconds)
    assert all(s >= 0 for s in rec.seconds.values())
    assert rec.total >= sum(rec.seconds.values())


def test_compile_report_note_names_the_slowest_stages():
    from benchmarks.compile_report import breakdown_note
    note = breakdown_note("m", 0.5, {"a": 0.1, "b": 0.3, "c": 0.05})
    assert note.startswith("m: cold compile 500 ms") and note.index("b 300") < note.index("a 100")
    cpu = {"a": 0.2, "b": 0.25, "total": 0.9}
    note = breakdown_note("m", 0.5, {"a": 0.1, "b": 0.3, "c": 0.05}, cpu)
    assert note.startswith("m: cold compile 500 ms (CPU 900 ms)")
    assert "b 300 ms (CPU 250)" in note and "c 50 ms (CPU 0)" in note


def test_opencl_compile_names_its_own_stages(tmp_path):
    """The opencl backend's record: the pipeline, the OpenCL C and host
    emission, the native host build (LLVM and the link) and the load, which
    includes the OpenCL C build by the driver (PoCL here)."""
    from pyshark import Wrapper
    from pyshark.wrapper.registry import available_backends
    if "opencl" not in available_backends():
        pytest.skip("no OpenCL device")
    src = tmp_path / "scale.py"
    src.write_text(SRC)
    w = Wrapper("opencl", cache_dir=str(tmp_path / "cache"))
    w.add_source_file(src)
    with CT.recording() as rec:
        w.compile_and_load()
    assert {"translate", "lower", "kir-check", "emit-opencl", "load"} <= set(rec.seconds)
    from pyshark.codegen.opencl.native import build
    if build.available():
        assert {"emit-host", "llvm-optimise"} <= set(rec.seconds)
