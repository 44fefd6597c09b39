"""Splits an emitted module into parts that LLVM optimises and compiles in
parallel threads (link.optimise_and_build), linked into one library.

LLVM's pipeline and code generation are 70-80% of a cold compile and work
function by function; llvmlite releases the GIL in its C++ calls, so two
modules in two threads (each with its own LLVM context and target machine)
use both cores of a 2-core machine. Nothing about the generated code may
change, so the unit of the split is a kir function with everything only it
uses (an entry, its ParFor body functions and their outlined `.omp`
functions: internal functions calling each other, which LLVM may inline or
specialise, stay in one module). An entry whose host code is `optnone`
glue is the exception: LLVM optimises nothing in it, so it loses nothing
when its ParFor bodies are in other modules, and each body (with its
`.omp`) is a unit of its own; a body in another part than its entry is
defined there with hidden visibility and declared in the entry's part (it
can no longer change its calling convention: lo and hi may come on the
stack, two loads per claimed block; callgrind on LocVolCalib's outside
entry, 4 x 32 x 64 x 16: 22.96 M instructions before, 22.94 M after).
LocVolCalib's outside entry is such glue around 52 ParFors; its bodies
were one part of 10.4 s CPU beside the FShark entry's 5.9 s. Units go to
parts by size (instructions), largest first; the glue entries themselves
go to one more part, a GluePart, which link.py compiles at code generation
level 0 (its code is cold and unoptimised: only the instruction selector
and register allocator's time changes).
The other pieces:
- internal globals (the SIGINT flag, the displaced handler) and the
  functions that use them (arming, the handler) are defined once, in part 0,
  with hidden visibility, and declared in the others (one flag per library,
  as before; hidden: not exported from the .so);
- the other internal helpers (fail, alloc, the table of live blocks) are
  copied into every part (each keeps only what it calls);
- private constants and metadata are copied; the C API stays in part 0.
"""
from __future__ import annotations

from llvmlite import ir

#: the helpers whose state is per library (emit_unwind.Runtime's SIGINT pieces)
_SHARED_PREFIX = "pyshark.sigint."
#: how much an `optnone` instruction weighs beside an optimised one
_OPTNONE_WEIGHT = 0.15


def _size(fn: ir.Function) -> float:
    n = sum(len(bb.instructions) for bb in fn.blocks)
    return n * (_OPTNONE_WEIGHT if "optnone" in fn.attributes else 1.0)


def _declaration(fn: ir.Function) -> str:
    """`declare hidden ...` of an internal function defined in another part."""
    buf: list = []
    blocks, linkage = fn.blocks, fn.linkage
    fn.blocks, fn.linkage = [], "hidden"
    try:
        fn.descr_prototype(buf)
    finally:
        fn.blocks, fn.linkage = blocks, linkage
    return "".join(buf)


def _hidden(v) -> str:
    """The definition of an internal global value with hidden visibility."""
    linkage = v.linkage
    v.linkage = "hidden"
    try:
        return str(v)
    finally:
        v.linkage = linkage


class GluePart(str):
    """A part holding only `optnone` glue entries (their host code): cold
    code that LLVM does not optimise, which link.py compiles at code
    generation level 0 (FastISel and the fast register allocator). At level
    1 the greedy allocator and the machine passes spent most of a part's
    time on it: LocVolCalib's outside entry, 5,700 lines of glue, 240 ms
    of code generation against 23 ms at level 0 (2-core AMD EPYC)."""


def split_module(module: ir.Module, entries: list[str], parts: int = 2,
                 min_size: int = 400) -> list[str]:
    """The module's text in up to `parts` parts (see the module docstring),
    and the `optnone` glue entries in one more, a GluePart, after them; one
    part when it has one unit, or under `min_size` instructions."""
    units: dict[str, list] = {e: [] for e in entries}
    host_of: dict[str, str] = {}            # a glue entry's ParFor unit -> the entry
    glue = {e for e in entries
            if isinstance(module.globals.get(e), ir.Function)
            and "optnone" in module.globals[e].attributes}
    for v in module.globals.values():
        if isinstance(v, ir.Function) and v.blocks:
            unit = next((e for e in entries if v.name == e or v.name.startswith(e + ".parfor")),
                        None)
            if unit is not None and unit in glue and v.name != unit:
                # an optnone entry learns nothing from its bodies' inferred
                # attributes: each ParFor (body and .omp) is a unit of its own
                body = v.name[:-len(".omp")] if v.name.endswith(".omp") else v.name
                host_of[body] = unit
                unit = body
                units.setdefault(unit, [])
            if unit is not None:
                units[unit].append(v)
    sizes = {e: sum(_size(f) for f in fs) for e, fs in units.items()}
    cold = {e for e in glue if sizes[e] > 0}
    hot = [e for e in units if e not in cold]
    parts = min(parts, sum(1 for e in hot if sizes[e] > 0))
    if parts + bool(cold) < 2 or sum(sizes.values()) < min_size:
        return [str(module)]
    load = [0.0] * parts
    owner: dict[str, int] = {}
    unit_part: dict[str, int] = {}
    for e in sorted(hot, key=lambda e: -sizes[e]):
        j = min(range(parts), key=lambda k: load[k])
        load[j] += sizes[e]
        unit_part[e] = j
    for e in cold:
        unit_part[e] = parts
    for e, j in unit_part.items():
        for f in units[e]:
            owner[f.name] = j
    # a ParFor unit in another part than its entry: its functions are
    # defined hidden there and declared where the entry is
    away = {f.name for u, e in host_of.items() if unit_part[u] != unit_part[e]
            for f in units[u]}
    texts = []
    for j in range(parts + bool(cold)):
        lines = ['; ModuleID = "%s.part%d"' % (module.name, j),
                 'target triple = "%s"' % module.triple,
                 'target datalayout = "%s"' % module.data_layout, '']
        lines += [t.get_declaration() for t in module.get_identified_types().values()]
        for v in module.globals.values():
            if v.name in owner:                         # a unit's function
                if owner[v.name] == j:
                    lines.append(_hidden(v) if v.name in away else str(v))
                elif v.name in away:
                    lines.append(_declaration(v))
            elif isinstance(v, ir.Function):
                shared = v.name.startswith(_SHARED_PREFIX) and v.blocks
                if shared:
                    lines.append(_hidden(v) if j == 0 else _declaration(v))
                elif v.linkage == "internal" or not v.blocks or j == 0:
                    lines.append(str(v))                # helpers, declarations, the C API
            elif v.linkage == "internal":               # per-library state
                lines.append(_hidden(v) if j == 0 else _external(v))
            else:
                lines.append(str(v))                    # private constants
        lines += module._get_metadata_lines()
        text = "\n".join(lines)
        texts.append(GluePart(text) if j == parts else text)
    return texts


def _external(g: ir.GlobalVariable) -> str:
    """`@g = external hidden global T` for a global defined in part 0."""
    align = f", align {g.align}" if g.align else ""
    return f"{g.get_reference()} = external hidden global {g.value_type}{align}"


__all__ = ["GluePart", "split_module"]
