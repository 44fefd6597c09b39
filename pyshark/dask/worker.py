"""The per-process side of pyshark.dask: installing the Libraries a worker
receives and loading each once (no Dask import here).

`install(library)` writes a Library's files into this process's PyShark
cache directory (PYSHARK_CACHE_DIR, else ~/.cache/pyshark) under its key,
unless an entry of that key is there already (a LocalCluster's workers
share the client's), atomically (wrapper/artifacts.write_atomically: the
first writer wins). `module(ref, runtime)` loads it with its backend,
once per (key, backend options, runtime options) and process: every later
task of this worker finds it in `_LOADED`. Nothing here compiles.

`runtime` holds the backend's options for this worker: num_threads (cpu),
device (opencl), where a list of devices gives worker i (its Dask name, an
int on a LocalCluster or with `dask worker --name i`) devices[i % len]:
one GPU per worker.

`STATS` counts registrations (libraries a plugin delivered), installs,
loads and cache hits of this process (the tests
read it on each worker to check that a library is loaded once).
"""
from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path

from .library import Library, LibraryRef

STATS: Counter = Counter()
_LOADED: dict = {}
_INSTALLED: dict[str, Library] = {}


def register(library: Library) -> None:
    """Keeps a Library a worker plugin delivered, and installs it on disk."""
    _INSTALLED[library.key] = library
    STATS["registered"] += 1
    install(library)


def install(library: Library) -> Path:
    """The directory of `library` in this process's cache, written there
    from its bytes unless a complete entry is there already."""
    from pyshark.wrapper.artifacts import (MANIFEST, cache_path, default_cache_dir,
                                           write_atomically)
    target = cache_path(default_cache_dir(), library.backend, library.key)
    if (target / MANIFEST).is_file():
        return target

    def fill(d: Path):
        for rel, data in library.files:
            f = d / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
    try:
        write_atomically(target, fill)
    except OSError:                 # an unwritable cache: a private directory
        target = Path(tempfile.mkdtemp(prefix="pyshark-dask-")) / library.key
        target.mkdir()
        fill(target)
    STATS["installs"] += 1
    return target


def worker_index() -> int:
    """This worker's ordinal: its Dask name when that is an int, else 0
    (also outside a Dask worker)."""
    try:
        from distributed import get_worker
        name = get_worker().name
    except (ImportError, ValueError, AttributeError):
        return 0
    try:
        return int(name)
    except (TypeError, ValueError):
        return 0


def resolve_runtime(runtime: tuple) -> dict:
    """The backend keyword options for this worker (a device list picks one)."""
    out = dict(runtime)
    dev = out.get("device")
    if isinstance(dev, (list, tuple)):
        out["device"] = dev[worker_index() % len(dev)] if dev else None
    return {k: v for k, v in out.items() if v is not None}


def module(ref: LibraryRef, runtime: tuple = ()):
    """The loaded module of `ref`, loaded once per process and runtime."""
    rt = resolve_runtime(runtime)
    key = (ref.key, ref.backend, ref.options, tuple(sorted(rt.items())))
    mod = _LOADED.get(key)
    if mod is not None:
        STATS["hits"] += 1
        return mod
    from pyshark.wrapper.artifacts import MANIFEST, cache_path, default_cache_dir, read_manifest
    from pyshark.wrapper.backend import Options
    from pyshark.wrapper.registry import get_backend
    directory = cache_path(default_cache_dir(), ref.backend, ref.key)
    library = ref.library or _INSTALLED.get(ref.key)
    if not (directory / MANIFEST).is_file():
        if library is None:
            raise RuntimeError(
                f"pyshark.dask: the compiled module {ref.backend}/{ref.key} is not on this "
                f"worker (no worker plugin delivered it and it is not in {directory}); build "
                f"the graph with a distributed Client active (or pass client=)")
        directory = install(library)
    cls = get_backend(ref.backend)
    rt = {k: v for k, v in rt.items() if k in cls.runtime_options}
    backend = cls(Options(**dict(ref.options)), **rt)
    try:
        mod = backend.load(directory, read_manifest(directory), None)
    except (OSError, ValueError):
        if library is None:
            raise
        shutil.rmtree(directory, ignore_errors=True)     # corrupt: write it again
        directory = install(library)
        mod = backend.load(directory, read_manifest(directory), None)
    STATS["loads"] += 1
    _LOADED[key] = mod
    return mod


def call(ref: LibraryRef, runtime: tuple, name: str, args: list):
    """Calls entry `name` of the module `ref` with Python/numpy arguments
    (converted by the entry's surface types, as Wrapper.invoke does)."""
    from pyshark.wrapper import convert
    mod = module(ref, runtime)
    STATS["calls"] += 1
    return mod.call(name, convert.bind_args(mod.entries[name], list(args), {}, False))


def stats() -> dict:
    """This process's counts (registered, installs, loads, hits, calls), the
    keys of the modules loaded and of those a worker plugin delivered, the
    classes of the loaded modules (NativeModule: opencl's native host)."""
    return {**STATS, "loaded": sorted({k[0] for k in _LOADED}), "received": sorted(_INSTALLED),
            "module_types": sorted({type(m).__name__ for m in _LOADED.values()})}
