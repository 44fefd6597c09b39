"""One pipeline per target, named stage by stage: from the checked core IR
to the emitter's input.

`pipeline_for(target)` lists every stage as a (name, function) pair, in
order: the core passes (codegen/pipeline.py, Program -> Program), the
lowering ("lower", codegen/lower.py, Program -> kernel IR), then the kernel
IR passes (codegen/kir_passes/, kernel IR -> kernel IR). Its last stage's
output is what the target's emitter spells: LLVM IR for the mc family
(codegen/cpu/emit_llvm.py, the cpu and kir backends), OpenCL C and host code
for the gpu family (codegen/opencl/host.py). Every backend and
`pyshark show --ir STAGE` run this list, so the order of the stages is
written once, here, rather than in `if`s per backend (issue 16 item 3;
LLVM's and Futhark's pass pipelines are lists the same way).

`run_stages` runs a list; with check=True (the tests) the checker of what a
stage produced runs after it (pyshark/core/check.py for core IR,
codegen/kir_check.py for kernel IR), so a broken invariant is reported
against the stage that broke it.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Optional

from pyshark.compile_times import stage
from pyshark.core import ir
from pyshark.core.check import check_program
from pyshark.errors import InternalCompilerError

from . import kir as K
from .kir_check import KirError
from .kir_passes.coarsen import coarsen_parfors
from .kir_passes.contract import contract_products
from .kir_passes.expand import expand_allocations
from .kir_passes.in_place import rows_in_place
from .kir_passes.jam_while import jam_while_loops
from .kir_passes.memory import hoist_allocations
from .kir_passes.scratch import chunk_scratch
from .kir_passes.parallel_copy import parallel_copies
from .kir_passes.simd_interchange import simd_interchange
from .kir_passes.split import split_index_sets
from .kir_passes.tile_steps import tile_steps
from .kir_passes.streaming import stream_stores
from .lower import Options as LowerOptions, lower_program
from .opt.interchange import interchange
from .pipeline import passes_for
from .target import MULTICORE, Target

Stage = tuple[str, Callable]


def core_stages(target: Target = MULTICORE) -> list[Stage]:
    """The core IR passes of codegen/pipeline.py for a target, each under a
    name of its own: a pass that runs again is named after the one before
    it (the second simplify is "simplify-after-fuse")."""
    out: list[Stage] = []
    seen: set[str] = set()
    prev = None
    for name, run in passes_for(target):
        stage = name if name not in seen else f"{name}-after-{prev}"
        seen.add(stage)
        out.append((stage, run))
        prev = name
    if not target.gpu:                  # map of the loop: state in registers (cpu)
        out.append(("interchange", interchange))
    return out


def lowering_stage(target: Target = MULTICORE, unsafe: bool = False,
                   par_min: Optional[int] = None, quick: bool = False) -> Stage:
    """("lower", core IR -> kernel IR) with the lowering's options (`quick`:
    no loop versioning, which only makes code faster)."""
    extra = {} if par_min is None else {"par_min": par_min}
    if quick:
        extra["versions"] = False
    return ("lower", partial(lower_program, options=LowerOptions(unsafe=unsafe, target=target,
                                                                 **extra)))


# last for every target: the FMA contraction LANGUAGE.md allows in a
# reduction (kir_passes/contract.py); no pass after it rebuilds what it marks
CONTRACT: Stage = ("contract", contract_products)


#: the mc family's kernel IR passes that only make code faster (more code:
#: rows built in place behind a size check, SIMD strips, split pieces,
#: per-thread scratch, tiles, streaming stores); the quick tier of a tiered
#: compile leaves them out (docs/cpu-backend.md, "Tiered compilation"),
#: every other pass it keeps
SPEED_ONLY = ("rows-in-place", "simd-interchange", "split", "jam-while", "chunk-scratch",
              "tile-steps", "parallel-copies", "stream-stores")


def kir_stages(target: Target = MULTICORE, quick: bool = False) -> list[Stage]:
    """The kernel IR passes for a target: hoisting and FMA contraction
    (last) for all; while-loop
    jamming (a CPU's latency hiding: a GPU runs work-items in lockstep
    already) and streaming stores (x86's; OpenCL C has none; not where
    target.stream_maps is off) for the mc family; allocation expansion (a
    kernel has no heap) and coarsening for the gpu family; rows computed in
    place of their copies (the mc family's: the gpu family expands
    allocations instead). `quick`: without the mc family's SPEED_ONLY
    passes."""
    stages: list[Stage] = [("hoist-allocations", hoist_allocations)]
    if target.gpu:
        # no index-set splitting: its pieces are more launches, and on the
        # H200 hotspot (both shapes) and pathfinder, launch-bound, ran 1.1-1.9x
        # slower with it (docs/opencl-backend.md, "Index-set splitting")
        return stages + gpu_kernel_stages(target) + [CONTRACT]
    mc = ([("rows-in-place", rows_in_place), ("simd-interchange", simd_interchange)] + stages
          + [("split", split_index_sets), ("jam-while", jam_while_loops),
             ("chunk-scratch", chunk_scratch), ("tile-steps", tile_steps),
             ("parallel-copies", parallel_copies), ("stream-stores", stream_stores), CONTRACT])
    if not target.stream_maps:
        mc = [s for s in mc if s[0] != "stream-stores"]
    return [s for s in mc if s[0] not in SPEED_ONLY] if quick else mc


def gpu_kernel_stages(target: Target) -> list[Stage]:
    """The gpu family's passes that shape ParFor bodies into kernels: their
    allocations expanded into blocks allocated before the loop, streaming
    ParFors coarsened by target.coarsen."""
    return [("expand-allocations", expand_allocations),
            ("coarsen", partial(coarsen_parfors, factor=target.coarsen))]


def pipeline_for(target: Optional[Target] = None, *, unsafe: bool = False,
                 par_min: Optional[int] = None, quick: bool = False) -> list[Stage]:
    """Every stage from checked core IR to the emitter's input for a target
    (None: MULTICORE, the cpu and kir backends); `unsafe` and `par_min` are
    the lowering's options (codegen/lower.Options); `quick`: the quick
    tier's (kir_stages)."""
    target = MULTICORE if target is None else target
    quick = quick and not target.gpu
    return (core_stages(target) + [lowering_stage(target, unsafe, par_min, quick)]
            + kir_stages(target, quick))


def stage_names(stages: list[Stage]) -> list[str]:
    return [name for name, _ in stages]


def check_stage(result, k: int, name: str) -> None:
    """The checker of what stage k (`name`) produced: core IR or kernel IR;
    InternalCompilerError naming the stage when it is invalid."""
    try:
        if isinstance(result, ir.Program):
            check_program(result)
        else:
            K.check_module(result)
    except (InternalCompilerError, KirError) as exc:
        what = "core IR" if isinstance(result, ir.Program) else "kernel IR"
        raise InternalCompilerError(
            f"stage {k + 1} '{name}' produced invalid {what}: {exc}") from exc


def run_stages(program, stages: list[Stage], check: bool = False,
               until: Optional[str] = None):
    """Runs the stages in order on `program` (core IR, or kernel IR for a
    list of kernel IR stages) and returns what the last produced, or the
    stage named `until` (ValueError when there is none); with check=True
    the checker of each stage's output runs after it (check_stage)."""
    if until is not None and until not in stage_names(stages):
        raise ValueError(f"no stage {until!r}; the stages are: "
                         f"{', '.join(stage_names(stages))}")
    x = program
    for k, (name, run) in enumerate(stages):
        with stage(name):
            x = run(x)
        if check:
            check_stage(x, k, name)
        if name == until:
            break
    return x


def build_kernels(program: ir.Program, options=None, *, target: Optional[Target] = None,
                  par_min: Optional[int] = None, check: bool = False,
                  until: Optional[str] = None, quick: bool = False) -> K.Module:
    """The emitter's input for a checked program: every stage of
    pipeline_for(target) (or those up to the kernel IR stage `until`), with
    the unsafe flag of `options` (a backend's Options; None: safe). The
    kernel IR is checked at the end (with check=True after every stage), so
    an emitter can trust it. `quick`: the quick tier's stages (kir_stages)."""
    unsafe = bool(getattr(options, "unsafe", False))
    kernels = run_stages(program, pipeline_for(target, unsafe=unsafe, par_min=par_min,
                                               quick=quick),
                         check=check, until=until)
    if not check:
        with stage("kir-check"):
            K.check_module(kernels)
    return kernels


__all__ = ["Stage", "SPEED_ONLY", "core_stages", "lowering_stage", "kir_stages", "gpu_kernel_stages",
           "pipeline_for",
           "stage_names", "check_stage", "run_stages", "build_kernels"]
