"""The cpu backend's emitter entry point: kernel IR module -> LLVM IR text.

emit_llvm.py spells functions and statements, emit_parfor.py spells a ParFor
(an outlined body run by the thread team, team.c), emit_unwind.py the
failure paths and Ctrl-C; this module hands the ParFor speller to the module emitter, so that
none of them imports another in a cycle.
"""
from __future__ import annotations

from typing import Optional

from .. import kir as K
from .emit_llvm import ModEmitter
from .emit_parfor import spell_parfor


def emit_module(m: K.Module, *, fastmath: bool = False, triple: Optional[str] = None,
                data_layout: Optional[str] = None) -> str:
    """LLVM IR text for every function of `m` (see emit_llvm.py's docstring).

    May append ALLOC_FAIL_MESSAGE to m.messages (when some Alloc exists)."""
    return ModEmitter(m, fastmath, triple, data_layout, spell_parfor).emit()


def emit_module_parts(m: K.Module, parts: int, *, fastmath: bool = False,
                      triple: Optional[str] = None, data_layout: Optional[str] = None) -> list[str]:
    """emit_module's IR split into up to `parts` modules that LLVM compiles
    in parallel and the linker joins (split.py; link.optimise_and_build
    takes the list)."""
    return ModEmitter(m, fastmath, triple, data_layout, spell_parfor).emit_parts(parts)
