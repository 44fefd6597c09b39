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


#: the most threads num_threads may ask for (codegen/cpu/team.c's
#: MAX_THREADS; libgomp, the runtime before it, aborted on larger teams)
MAX_NUM_THREADS = 1024
PROCESS_NUM_THREADS: list = [None]     # the process default (set_num_threads)


def check_num_threads(n, what: str = "num_threads"):
    """n itself when it is None or an int in 1..MAX_NUM_THREADS; else a
    ValueError that says what is allowed."""
    if n is None:
        return None
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise ValueError(f"{what} must be an int >= 1 (or None for the default: every "
                         f"core, or OMP_NUM_THREADS), not {n!r}")
    n = int(n.__index__())
    if not 1 <= n <= MAX_NUM_THREADS:
        raise ValueError(f"{what} must be between 1 and {MAX_NUM_THREADS}, not {n}")
    return n


def set_num_threads(n) -> None:
    """How many threads the cpu backend's parallel loops use in this process,
    unless a Wrapper has its own num_threads; None: the default again (every
    core, or OMP_NUM_THREADS). Other backends ignore it."""
    PROCESS_NUM_THREADS[0] = check_num_threads(n, "set_num_threads(n): n")


def get_num_threads() -> int:
    """The number of threads a cpu entry's parallel loop uses at most in this
    process (Wrappers without num_threads): set_num_threads's value, else
    the team's default (every CPU this process may run on, or
    OMP_NUM_THREADS; codegen/cpu/team.py)."""
    if PROCESS_NUM_THREADS[0] is not None:
        return PROCESS_NUM_THREADS[0]
    from pyshark.codegen.cpu.team import max_threads
    return max_threads()


class LoadedModule:
    """One module's entries, ready to call."""

    #: the artifact directory it was loaded from (set by the Wrapper)
    directory: Path | None = None

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
    #: whether the backend uses Wrapper(num_threads=N) (cpu); the others
    #: accept it, validated, and ignore it
    uses_num_threads = False
    #: whether entries take DeviceArray arguments as they are (else the
    #: wrapper converts them with np.asarray)
    keeps_device_arrays = False

    #: whether the backend has a quick tier (docs/cpu-backend.md, "Tiered
    #: compilation"): compile_quick(path, text, directory) writes a module
    #: that runs at once, and upgrade_command(quick_dir, target_dir) the
    #: command that builds the optimised module from it in the background
    tiered = False

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

    def compile_program(self, program: ir.Program, directory: Path) -> dict:
        """Compiles an already translated, checked core IR program (the part
        of `compile` after translation); writes the backend's files into
        `directory` and returns {role: file name}. The narrow hook through
        which pyshark.dask compiles the programs it derives from an entry's
        core IR (a reduction's combine step, a scan's carried offset), which
        have no Python source. NotImplementedError for a backend that runs
        source (python)."""
        raise NotImplementedError(f"backend {self.name!r} cannot compile a core IR program")

    def load(self, directory: Path, manifest: dict, source_path: Path | None) -> LoadedModule:
        """Loads an artifact directory written by compile. `source_path` is the
        original module when it is known to match the artifact (cache hits)."""
        raise NotImplementedError


def translate_and_check(path: Path | str, check: bool = True, text: str | None = None):
    """The translation every backend starts from (so an invalid program fails
    the same way everywhere), type checked (`check` is kept for callers:
    translate_source always checks).
    `text` is the source (the text the cache key was computed from, or one
    added with Wrapper.add_source); `path` then only names it in errors.
    Without `text` the file at `path` is read."""
    from pyshark.translate import translate_file, translate_source
    # translate_source type checks what it built (the "check" stage): checking
    # again here cost a second pass over the program for nothing
    return translate_file(str(path)) if text is None else translate_source(text, str(path))


def entries_from_manifest(manifest: dict) -> dict[str, ir.Entry]:
    out = {}
    for name, e in manifest["entries"].items():
        params = tuple(ir.EntryParam(p, stype_from_json(t)) for p, t in e["params"])
        loc = ir.Loc(manifest["source"], *e["loc"]) if "loc" in e else None
        out[name] = ir.Entry(name, params, stype_from_json(e["result"]), loc)
    return out
