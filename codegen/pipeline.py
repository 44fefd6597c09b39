"""The pass pipeline: core IR -> core IR, before the lowering to kernel IR.

PASSES lists (name, run) pairs; each run is a pure function Program ->
Program (codegen/opt/, one file per pass). `optimise` runs them in order and,
with check=True (as the tests do), type checks the IR after every pass so a
broken invariant is reported against the pass that broke it.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

from pyshark.core import ir
from pyshark.core.check import check_program
from pyshark.core.empty_shapes import derive_empty_shapes
from pyshark.errors import InternalCompilerError

from .opt.cse import cse
from .opt.flatten import flatten
from .opt.fuse import fuse
from .opt.hoist import hoist_invariants
from .opt.inline import inline
from .opt.simplify import simplify

Pass = Callable[[ir.Program], ir.Program]

PASSES: list[tuple[str, Pass]] = [
    ("empty-shapes", derive_empty_shapes),   # an empty map's rows, from the maps as written
    ("inline", inline),       # no calls left; only entry FunDefs remain
    ("simplify", simplify),   # copy propagation, constant folding, dead code
    ("cse", cse),             # common subexpressions
    ("fuse", fuse),           # map-map fusion, vertical and horizontal
    ("simplify", simplify),   # clean up after fusion
    ("hoist", hoist_invariants),   # a map's element-invariant arrays and SOACs, once
]

# The gpu target (Target.family "gpu") runs these after PASSES: kernel
# extraction (map distribution and map-loop interchange) exposes the
# parallelism inside a map's sequential loops. Fusion does not run after
# it (it would fuse the distributed maps back together).
GPU_PASSES: list[tuple[str, Pass]] = [
    ("flatten", flatten),     # map distribution, map-loop interchange
    ("simplify", simplify),   # clean up after distribution
]


def passes_for(target=None) -> list[tuple[str, Pass]]:
    """The pass list for a target (codegen/target.py): PASSES, plus
    GPU_PASSES for the gpu family when its record asks for them."""
    if target is not None and getattr(target, "gpu", False) and getattr(target, "flatten", False):
        below = getattr(target, "distribute_below", 0)
        return PASSES + [(n, partial(f, distribute_below=below) if f is flatten and below else f)
                         for n, f in GPU_PASSES]
    return PASSES


def optimise(program: ir.Program, check: bool = False,
             passes: list[tuple[str, Pass]] | None = None, target=None) -> ir.Program:
    """Runs the passes (default: passes_for(target); PASSES without a target)
    in order; with check=True the core IR checker runs after each, raising
    InternalCompilerError naming the pass."""
    for i, (name, run) in enumerate(passes_for(target) if passes is None else passes):
        program = run(program)
        if check:
            try:
                check_program(program)
            except InternalCompilerError as exc:
                raise InternalCompilerError(
                    f"pass {i + 1} '{name}' produced invalid core IR: {exc}") from exc
    return program
