"""What every backend provides to the Wrapper.

A backend compiles one module into an artifact directory (the same layout
for the cache and for `pyshark build`) and loads such a directory into a
`LoadedModule` whose `call` takes canonical arguments (see convert.py) and
returns values in the output format. Compile always goes through load, so
a cached artifact and a fresh one take the same path.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from pyshark.core import ir

from .artifacts import stype_from_json


@dataclass(frozen=True)
class Options:
    unsafe: bool = False
    fastmath: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


class LoadedModule:
    """One module's entries, ready to call."""

    def __init__(self, entries: dict[str, ir.Entry], source: str):
        self.entries = entries
        self.source = source

    def call(self, name: str, canon_args: list):
        raise NotImplementedError


class Backend:
    """Base class; subclasses set `name` and implement compile/load."""

    name = "?"
    #: a one-line description for `pyshark` messages and docs
    description = ""

    #: the keyword options of Wrapper(...) this backend takes besides Options
    #: (opencl: device, device_arrays); a Wrapper refuses them for others
    runtime_options: tuple = ()
    #: whether entries take DeviceArray arguments as they are (else the
    #: wrapper converts them with np.asarray)
    keeps_device_arrays = False

    def __init__(self, options: Options = Options(), **runtime):
        self.options = options
        if runtime:
            raise TypeError(f"backend {self.name!r} takes no option "
                            f"{', '.join(map(repr, runtime))}")

    @classmethod
    def is_available(cls) -> bool:
        return True

    def cache_salt(self) -> str:
        """What besides the source and the options the compiled artifact
        depends on (opencl: the device's target record); part of the cache key."""
        return ""

    def close(self) -> None:
        """Releases what the backend holds for this process (opencl: the
        device memory pool's free blocks)."""

    def compile(self, path: Path, source_text: str, directory: Path):
        """Translates and compiles; writes the backend's files into `directory`.
        Returns (checked ir.Program, {role: file name}). Raises CompileError."""
        raise NotImplementedError

    def load(self, directory: Path, manifest: dict, source_path: Path | None) -> LoadedModule:
        """Loads an artifact directory written by compile. `source_path` is the
        original module when it is known to match the artifact (cache hits)."""
        raise NotImplementedError


def translate_and_check(path: Path | str, check: bool = True, text: str | None = None):
    """The translation every backend starts from (so an invalid program fails
    the same way everywhere); `check` runs the core type checker on it.
    `text` is the source (the text the cache key was computed from, or one
    added with Wrapper.add_source); `path` then only names it in errors.
    Without `text` the file at `path` is read."""
    from pyshark.translate import translate_file, translate_source
    program = translate_file(str(path)) if text is None else translate_source(text, str(path))
    if check:
        from pyshark.core.check import check_program
        check_program(program)
    return program


def entries_from_manifest(manifest: dict) -> dict[str, ir.Entry]:
    out = {}
    for name, e in manifest["entries"].items():
        params = tuple(ir.EntryParam(p, stype_from_json(t)) for p, t in e["params"])
        loc = ir.Loc(manifest["source"], *e["loc"]) if "loc" in e else None
        out[name] = ir.Entry(name, params, stype_from_json(e["result"]), loc)
    return out
