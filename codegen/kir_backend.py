"""Backend "kir": a DEVELOPMENT backend that runs the kernel IR in its
reference interpreter (codegen/kir_interp.py).

It tests the lowering (core IR -> kernel IR, shared by both native
backends) against Python mode without any native code generator, and it
checks what native code cannot check cheaply: no out-of-buffer access, no
use after free, no leak (a call that leaks raises), no dependence on the
order of parallel iterations. It lowers with par_min=4, so the parallel
algorithms (chunked reduce, three-phase scan and filter, private
histograms) run at all but the tiniest sizes (a 3-element sum stays in order, as on
every backend, where the conformance corpus expects it). It is registered by the tests, not
for users.
"""
from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from pyshark.core.types import ScalarType
from pyshark.wrapper import convert
from pyshark.wrapper.backend import Backend, LoadedModule, entries_from_manifest, translate_and_check

from . import kir as K
from .lower import symbol

KERNELS_FILE = "kernels.pickle"
from .marshal import ERRORS as _ERRORS


class KirModule(LoadedModule):
    def __init__(self, kernels: K.Module, program, entries, source):
        super().__init__(entries, source)
        self.kernels = kernels
        self.program = program

    def call(self, name: str, canon_args: list):
        return convert.call_flat(self.entries[name], canon_args,
                                 lambda flat: self.run_flat(name, flat))

    def run_flat(self, name: str, flat: list) -> list:
        """Runs entry `name` on flat core arguments; its flat results."""
        from .kir_interp import Buffer, run_function
        fun = self.program.entry_fun(name)
        args = []
        for p, v in zip(fun.params, flat):
            if isinstance(p.type, ScalarType):
                args.append(p.type.numpy_type(v))
            else:
                a = np.ascontiguousarray(v, dtype=p.type.elem.dtype)
                args.append(Buffer(a.reshape(-1).copy()))
                args += [np.int64(d) for d in a.shape]
        outs = []
        for t in fun.ret:
            if isinstance(t, ScalarType):
                cell = Buffer(np.zeros(1, t.dtype))
                outs.append(cell)
                args.append(cell)
            else:
                ptr, shape = Buffer.pointers(1), Buffer(np.zeros(t.rank, np.int64))
                outs.append((ptr, shape))
                args += [ptr, shape]
        res = run_function(self.kernels, symbol(name), args)
        if res.code:
            cls = _ERRORS.get(res.code, RuntimeError)
            raise cls(res.message)
        leaks = res.leaks()
        if leaks:
            raise AssertionError(f"kir backend: {name} leaked {len(leaks)} buffer(s)")
        results = []
        for t, o in zip(fun.ret, outs):
            if isinstance(t, ScalarType):
                results.append(o.array[0])
            else:
                ptr, shape = o
                dims = tuple(int(d) for d in shape.array)
                buf = ptr.array[0]
                n = int(np.prod(dims)) if dims else 1
                results.append(buf.values(n).copy().reshape(dims))
        return results


class KirBackend(Backend):
    name = "kir"
    description = "development backend: the kernel IR in its reference interpreter (slow)"

    def compile(self, path: Path, source_text: str, directory: Path):
        program = translate_and_check(path, text=source_text)
        return program, self.compile_program(program, directory)

    def compile_program(self, program, directory: Path) -> dict:
        from .stages import build_kernels
        kernels = build_kernels(program, self.options, par_min=4)  # the cpu backend's pipeline
        (Path(directory) / KERNELS_FILE).write_bytes(pickle.dumps((kernels, program)))
        return {"kernels": KERNELS_FILE}

    def load(self, directory: Path, manifest: dict, source_path: Path | None) -> LoadedModule:
        kernels, program = pickle.loads(
            (Path(directory) / manifest["files"]["kernels"]).read_bytes())
        return KirModule(kernels, program, entries_from_manifest(manifest), manifest["source"])
