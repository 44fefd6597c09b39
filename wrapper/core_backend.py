"""Backend "core": a DEVELOPMENT backend, not a fast one.

It runs the translated, type-checked core IR in the reference interpreter
(pyshark.core.interp), after the one pass that semantics needs: the inner
dimensions of empty map results (pyshark/core/empty_shapes.py). It exists so the translator and the IR can be tested
against Python mode before any code generator is built, and so that a
native backend's results can be compared with the IR's own semantics.
The artifact is the pickled, checked Program.
"""
from __future__ import annotations

import pickle
from pathlib import Path

from . import convert
from .backend import Backend, LoadedModule, entries_from_manifest, translate_and_check

PROGRAM_FILE = "program.pickle"


class CoreModule(LoadedModule):
    def __init__(self, program, entries, source):
        super().__init__(entries, source)
        self.program = program

    def call(self, name: str, canon_args: list):
        from pyshark.core.interp import run_entry
        return convert.call_flat(self.entries[name], canon_args,
                                 lambda flat: run_entry(self.program, name, flat))


class CoreBackend(Backend):
    name = "core"
    description = "development backend: the core IR reference interpreter (slow)"

    @classmethod
    def is_available(cls) -> bool:
        import importlib.util
        return all(importlib.util.find_spec(m) is not None
                   for m in ("pyshark.core.interp", "pyshark.core.check"))

    def compile(self, path: Path, source_text: str, directory: Path):
        program = translate_and_check(path, text=source_text)
        return program, self.compile_program(program, directory)

    def compile_program(self, program, directory: Path) -> dict:
        from pyshark.core.empty_shapes import derive_empty_shapes
        (Path(directory) / PROGRAM_FILE).write_bytes(
            pickle.dumps(derive_empty_shapes(program), protocol=pickle.HIGHEST_PROTOCOL))
        return {"program": PROGRAM_FILE}

    def load(self, directory: Path, manifest: dict, source_path: Path | None) -> LoadedModule:
        program = pickle.loads((Path(directory) / manifest["files"]["program"]).read_bytes())
        return CoreModule(program, entries_from_manifest(manifest), manifest["source"])
