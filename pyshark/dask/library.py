"""What travels to the workers: a compiled module's artifact directory as
bytes (a `Library`), and a small `LibraryRef` that tasks carry instead.

The client has every module compiled already: the user's entry by its
Wrapper (its cache entry, wrapper/artifacts.py's layout:
<cache>/<backend>/<key>/ with manifest.json and the backend's files), the
derived combine/offset programs (derive.py) here, into the same cache,
keyed the same way (cache_key of their pretty-printed core IR, backend,
options, compiler fingerprint) through the backend's compile_program
hook. A worker writes a Library it receives into its own cache directory
under the same key and loads it with the backend's `load` (worker.py): a
load, never a compile, whatever the worker's machine has cached.

Python mode (backend "python" or "core"): the entry's library is the
python backend's artifact (the module's source, run as Python mode, which
is the point of that mode); the derived programs run in the core IR
interpreter (backend "core"): the operator as the language defines it,
not the user's Python.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyshark.core import ir

#: backends whose derived programs compile with the backend itself; the
#: others (python, core) run derived programs with "core"
NATIVE = ("cpu", "opencl", "kir")


@dataclass(frozen=True)
class LibraryRef:
    """Names a compiled module: its backend, its cache key, the options it
    was compiled with. `library` (optional) is the module itself, carried
    along when no worker plugin delivers it (no distributed Client when the
    graph was built)."""
    backend: str
    key: str
    options: tuple = ()
    library: "Library | None" = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Library:
    """A compiled module's artifact directory: (relative path, bytes) per file."""
    backend: str
    key: str
    options: tuple
    files: tuple = field(repr=False)

    def ref(self, embed: bool = False) -> LibraryRef:
        return LibraryRef(self.backend, self.key, self.options, self if embed else None)

    @property
    def nbytes(self) -> int:
        return sum(len(b) for _, b in self.files)


def pack(directory: Path, backend: str, options: dict) -> Library:
    """The artifact directory as a Library (its name is its cache key)."""
    directory = Path(directory)
    files = tuple((str(f.relative_to(directory)), f.read_bytes())
                  for f in sorted(directory.rglob("*")) if f.is_file())
    return Library(backend, directory.name, tuple(sorted(options.items())), files)


def derived_backend(backend: str) -> str:
    return backend if backend in NATIVE else "core"


def compile_derived(program: ir.Program, backend: str, options: dict, runtime: dict,
                    cache_dir: Path) -> Library:
    """Compiles a derived core program (derive.py) with `backend` (its
    derived_backend) into the cache, unless it is there, and packs it."""
    from pyshark.core.check import check_program
    from pyshark.core.pretty import pretty_program
    from pyshark.wrapper.artifacts import (MANIFEST, cache_key, cache_path, write_atomically,
                                           write_manifest)
    from pyshark.wrapper.backend import Options
    from pyshark.wrapper.registry import get_backend
    name = derived_backend(backend)
    cls = get_backend(name)
    rt = {k: v for k, v in runtime.items() if k in cls.runtime_options and k != "device_arrays"}
    if isinstance(rt.get("device"), (list, tuple)):
        rt["device"] = rt["device"][0]
    be = cls(Options(**options), **rt)
    check_program(program)          # a wrong derivation is our bug: say so here
    text = pretty_program(program)
    opts = dict(options)
    salt = be.cache_salt()
    if salt:
        opts["target"] = salt
    key = cache_key(text, name, opts)
    target = cache_path(cache_dir, name, key)

    def fill(d: Path):
        files = be.compile_program(program, d)
        write_manifest(d, backend=name, options=dict(options), source_path=program.filename,
                       source_text=text, program=program, files=files)

    if not (target / MANIFEST).is_file():
        write_atomically(target, fill)
    return pack(target, name, dict(options))
