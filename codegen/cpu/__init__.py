"""The CPU backend: kernel IR -> LLVM IR (emit_llvm) -> shared library (link).

backend.py (core IR -> kernel IR -> library) builds on these two.
"""
from .emit_llvm import ALLOC_FAIL_MESSAGE, emit_module
from .link import (Library, PysharkCtx, ctype_of, entry_prototype, find_c_compiler,
                   load_library, optimise_and_build, optimised_ir)

__all__ = ["emit_module", "ALLOC_FAIL_MESSAGE", "optimise_and_build", "optimised_ir",
           "load_library", "Library", "PysharkCtx", "ctype_of", "entry_prototype",
           "find_c_compiler"]
