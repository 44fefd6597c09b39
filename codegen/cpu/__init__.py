"""The CPU backend: kernel IR -> LLVM IR (emit.py: emit_llvm, emit_parfor,
emit_stream, emit_unwind) -> shared library (link);
runtime.py loads and calls what link built.

backend.py (core IR -> kernel IR -> library) builds on these. The names below
are imported lazily, so that loading a cached library does not import
llvmlite.
"""
import importlib

_EXPORTS = {
    "emit_module": "emit", "ALLOC_FAIL_MESSAGE": "emit_llvm",
    "optimise_and_build": "link", "optimised_ir": "link", "find_c_compiler": "link",
    "load_library": "loader", "Library": "runtime", "PysharkCtx": "runtime",
    "ctype_of": "runtime", "entry_prototype": "runtime",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
