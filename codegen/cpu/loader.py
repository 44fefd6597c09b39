"""Loading what link.py built: a shared library through ctypes, or LLVM IR
text (written where no C compiler was found) through llvmlite's MCJIT.

Its own module so that runtime.py (the ctx struct and Library, which a
loaded module needs) never imports link.py, which imports llvmlite: loading
a cached .so stays light, and link.py can import runtime.py without a cycle.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Union

from .runtime import BINARY_MAGIC, Library, keep_heap, looks_like_ir
from .team import ensure_runtime, why_not


def load_library(path_or_ir: Union[str, Path]) -> Library:
    """Load what `optimise_and_build` wrote (a .so, or IR text when there was
    no C compiler), or JIT LLVM IR text given directly."""
    keep_heap()
    if looks_like_ir(path_or_ir):
        from .link import jit_library
        return jit_library(path_or_ir, optimise=True)
    path = Path(path_or_ir)
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic in BINARY_MAGIC or magic[:2] == b"MZ":
        # the process's one team first (team.py): the module's pysharkrt_* resolve to it
        if ensure_runtime() is None:
            raise RuntimeError(f"cannot load {path.name}: {why_not()}")
        return Library("so", ctypes.CDLL(str(path.resolve())), path=path)
    from .link import jit_library
    return jit_library(path.read_text(), optimise=False, path=path)


