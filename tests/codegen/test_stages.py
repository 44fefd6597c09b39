"""codegen/stages.py: one named pipeline per target from core IR to the
emitter's input, run with the right checker after every stage on the
example kernels; the backends and `pyshark show --ir STAGE` run it."""
from __future__ import annotations

from pathlib import Path

import pytest

from pyshark.codegen import kir as K
from pyshark.codegen import stages as ST
from pyshark.codegen.target import MULTICORE, gpu_target
from pyshark.core import ir
from pyshark.core.check import check_program
from pyshark.errors import InternalCompilerError
from pyshark.translate import translate_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROGRAMS = ["saxpy", "softmax", "kmeans", "segmented_sum", "radix_sort", "conv3x3"]
GPU = gpu_target(256, 32768, False)
TARGETS = {"cpu": dict(target=None), "kir": dict(target=None, par_min=4),
           "opencl": dict(target=GPU)}

CPU_NAMES = ["empty-shapes", "inline", "simplify", "cse", "fuse", "simplify-after-fuse", "hoist",
             "interchange", "lower", "rows-in-place", "simd-interchange", "hoist-allocations", "split",
             "jam-while",
             "chunk-scratch", "tile-steps", "parallel-copies", "stream-stores", "contract"]
GPU_NAMES = ["empty-shapes", "inline", "simplify", "cse", "fuse", "simplify-after-fuse", "hoist",
             "flatten", "simplify-after-flatten", "lower", "hoist-allocations",
             "expand-allocations",
             "coarsen", "contract"]


def _program(name: str) -> ir.Program:
    p = translate_file(str(EXAMPLES / f"{name}.py"))
    check_program(p)
    return p


def test_every_stage_is_named_once_in_pipeline_order():
    assert ST.stage_names(ST.pipeline_for(MULTICORE)) == CPU_NAMES
    assert ST.stage_names(ST.pipeline_for(None, par_min=4)) == CPU_NAMES
    assert ST.stage_names(ST.pipeline_for(GPU)) == GPU_NAMES
    no_flatten = gpu_target(256, 32768, False, flatten=False)
    assert ST.stage_names(ST.pipeline_for(no_flatten)) == [
        n for n in GPU_NAMES if "flatten" not in n]
    for stages in (ST.pipeline_for(MULTICORE), ST.pipeline_for(GPU)):
        assert all(callable(run) for _, run in stages)


def test_the_quick_tier_leaves_out_only_the_speed_only_passes():
    """A tiered compile's quick tier (docs/cpu-backend.md, "Tiered
    compilation"): the cpu pipeline without stages.SPEED_ONLY, in the same
    order; the gpu pipeline has no quick tier and is unchanged."""
    quick = ST.stage_names(ST.pipeline_for(MULTICORE, quick=True))
    assert quick == [n for n in CPU_NAMES if n not in ST.SPEED_ONLY]
    assert set(ST.SPEED_ONLY) <= set(CPU_NAMES) and "contract" in quick
    assert ST.stage_names(ST.pipeline_for(GPU, quick=True)) == GPU_NAMES


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_quick_pipeline_checks_after_every_stage(name):
    stages = ST.pipeline_for(MULTICORE, quick=True)
    checked = ST.run_stages(_program(name), stages, check=True)
    assert K.pretty_module(checked) == K.pretty_module(
        ST.build_kernels(_program(name), None, quick=True))


@pytest.mark.parametrize("backend", list(TARGETS))
@pytest.mark.parametrize("name", PROGRAMS)
def test_each_pipeline_checks_after_every_stage(name, backend):
    """Core IR up to the lowering, kernel IR after it, each valid (run_stages
    with check=True runs check_program or kir check_module after every
    stage); the result is what the backend builds."""
    opts = TARGETS[backend]
    stages = ST.pipeline_for(opts["target"], par_min=opts.get("par_min"))
    lower = ST.stage_names(stages).index("lower")
    x = _program(name)
    for k, (stage, run) in enumerate(stages):
        x = run(x)
        assert isinstance(x, ir.Program if k < lower else K.Module), stage
        ST.check_stage(x, k, stage)
    checked = ST.run_stages(_program(name), stages, check=True)
    built = ST.build_kernels(_program(name), None, **opts)
    assert K.pretty_module(checked) == K.pretty_module(built) == K.pretty_module(x)


def test_a_stage_that_breaks_the_ir_is_named():
    def broken(m: K.Module) -> K.Module:
        f = m.functions[0]
        bad = K.Set(K.KVar("x", K.I64), K.KVar("never_set", K.I64))
        return K.Module([K.Function(f.name, f.params, K.Block((bad,) + f.body.stms))],
                        m.messages)
    stages = ST.pipeline_for(MULTICORE)
    stages.insert(ST.stage_names(stages).index("lower") + 1, ("breaks-it", broken))
    with pytest.raises(InternalCompilerError, match="stage 10 'breaks-it' produced invalid "
                                                    "kernel IR: never_set read before"):
        ST.run_stages(_program("saxpy"), stages, check=True)
    assert isinstance(ST.run_stages(_program("saxpy"), stages), K.Module)    # unchecked


def test_until_stops_after_the_named_stage():
    stages = ST.pipeline_for(MULTICORE)
    fused = ST.run_stages(_program("saxpy"), stages, until="simplify-after-fuse")
    assert isinstance(fused, ir.Program) and not any(
        isinstance(s.exp, ir.Call) for f in fused.functions.values() for s in f.body.stms)
    lowered = ST.run_stages(_program("saxpy"), stages, until="lower")
    assert isinstance(lowered, K.Module)
    assert not any(getattr(s, "nontemporal", False) for f in lowered.functions
                   for s in K.walk_stms(f.body))
    with pytest.raises(ValueError, match="no stage 'coarsen'; the stages are: empty-shapes, inline, simplify"):
        ST.run_stages(_program("saxpy"), stages, until="coarsen")


@pytest.mark.parametrize("backend", ["cpu", "kir", "opencl"])
def test_backends_build_through_pipeline_for(backend, monkeypatch, tmp_path):
    from pyshark.wrapper import registry
    try:
        cls = registry.get_backend(backend)
    except ValueError as exc:
        pytest.skip(str(exc))
    seen = []
    real = ST.pipeline_for

    def recording(target=None, **kw):
        seen.append((target, kw))
        return real(target, **kw)
    monkeypatch.setattr(ST, "pipeline_for", recording)
    path = EXAMPLES / "saxpy.py"
    cls().compile(path, path.read_text(), tmp_path)
    assert len(seen) == 1
    target, kw = seen[0]
    assert (target is not None and target.gpu) == (backend == "opencl")
    assert kw.get("par_min") == (4 if backend == "kir" else None)


def test_show_prints_after_any_stage_and_names_them_for_an_unknown_one(capsys, monkeypatch):
    from pyshark.cli import main
    monkeypatch.setenv("PYSHARK_STREAM_MAPS", "1")      # the host's pipeline has every stage
    saxpy = str(EXAMPLES / "saxpy.py")
    assert main(["show", saxpy, "--ir", "simplify-after-fuse"]) == 0
    assert "map[" in capsys.readouterr().out
    assert main(["show", saxpy, "--ir", "hoist-allocations"]) == 0
    assert "parfor" in capsys.readouterr().out
    assert main(["show", saxpy, "--ir", "stream-stores"]) == 0
    assert "# nontemporal" in capsys.readouterr().out
    assert main(["show", saxpy, "--ir", "coarsen"]) == 0          # opencl's pipeline
    assert "cnt_c" in capsys.readouterr().out                    # coarsen.py's count
    assert main(["show", saxpy, "--ir", "no-such-stage"]) == 2
    err = capsys.readouterr().err
    assert "no stage 'no-such-stage'" in err and ", ".join(CPU_NAMES) in err
    assert main(["show", saxpy, "--ir", "coarsen", "--backend", "cpu"]) == 2
    assert "for backend cpu; the stages are: " + ", ".join(CPU_NAMES) in capsys.readouterr().err
