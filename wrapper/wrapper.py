"""The Wrapper: compile PyShark modules once, call their entries from Python.

    w = Wrapper(backend="python")      # or "core", later "cpu" / "opencl"
    w.add_source_file("saxpy.py")      # or add_source(text, name), add_module(module)
    w.compile_and_load()               # a load, not a compile, when cached
    w.run_saxpy(2.0, xs, ys)           # == w.invoke("run_saxpy", 2.0, xs, ys)

Arguments are converted by the entry's surface types and results come back
in one format for every backend (see convert.py).
"""
from __future__ import annotations

import inspect
import shutil
import tempfile
import threading
import types
from dataclasses import dataclass
from pathlib import Path

from pyshark.compile_times import stage
from pyshark.errors import CompileError

from . import convert
from .artifacts import (cache_key, cache_path, default_cache_dir, pyshark_version,
                        read_manifest, write_atomically, write_manifest)
from .backend import LoadedModule, Options, check_num_threads
from .registry import get_backend
from .tiers import Upgrade, tiered_by_default


class UnknownEntry(AttributeError, LookupError):
    """An entry name that no added module defines."""


@dataclass(frozen=True)
class _Source:
    """One added module: a file (read at compile time) or text with a name
    (add_source; the name is what errors and locations show)."""
    name: str
    path: Path | None = None
    text: str | None = None

    def read(self) -> str:
        return self.text if self.path is None else self.path.read_text(encoding="utf-8")


class Wrapper:
    """Compiles PyShark modules with one backend and invokes their entries."""

    def __init__(self, backend: str = "python", *, unsafe: bool = False,
                 fastmath: bool = False, cache_dir: str | Path | None = None,
                 device: str | None = None, device_arrays: bool = False,
                 num_threads: int | None = None, tiered: bool | None = None):
        """`tiered` (cpu): a cold compile returns quick code at once and
        swaps every entry to the optimised code when a background process
        has built it (wrapper/tiers.py; default: on unless PYSHARK_TIERED=0;
        wait_optimised() waits for it); ignored by the other backends.
        `num_threads` (cpu): at most this many threads per parallel loop
        (default: pyshark.set_num_threads's, else every core or
        OMP_NUM_THREADS); validated, and ignored, by the other backends.
        `device` (opencl): which OpenCL device, a platform:device index as
        `pyshark devices` lists them or a substring of its name (default:
        PYOPENCL_CTX, else the first GPU, else the first device).
        `device_arrays` (opencl): array results stay on the device as
        pyshark.DeviceArray (arrays of tuples/records still come back as
        numpy structured arrays); entries take DeviceArrays on every backend."""
        cls = get_backend(backend)
        runtime = {k: v for k, v in (("device", device), ("device_arrays", device_arrays)) if v}
        self.num_threads = check_num_threads(num_threads)
        if self.num_threads is not None and cls.uses_num_threads:
            runtime["num_threads"] = self.num_threads
        refused = [k for k in runtime if k not in cls.runtime_options]
        if refused:
            raise TypeError(f"Wrapper: {', '.join(f'{k}=' for k in refused)} is an option of "
                            f"the opencl backend, not of backend {backend!r}")
        self._backend = cls(Options(unsafe=unsafe, fastmath=fastmath), **runtime)
        self._runtime = dict(runtime)
        self._keep_device = bool(cls.keeps_device_arrays)
        self.backend = backend
        self.options = self._backend.options
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self._sources: list[_Source] = []
        self._entries: dict[str, tuple[LoadedModule, object]] = {}
        self._tiered = bool(cls.tiered and (tiered_by_default() if tiered is None else tiered))
        self._upgrades: list[Upgrade] = []
        self._quick: list[LoadedModule] = []        # loaded quick modules, never dropped
        self._fast: list[tuple[str, LoadedModule, object]] = []   # handed-out C call objects
        self._swap_lock = threading.Lock()
        self._loaded = False
        #: True when every module came from the on-disk cache (or a build output)
        self.loaded_from_cache = False

    def __repr__(self) -> str:
        state = f"entries={self.entries}" if self._loaded else "not loaded"
        return f"<Wrapper backend={self.backend!r} {state}>"

    # -- building -----------------------------------------------------------

    def add_source_file(self, path: str | Path) -> "Wrapper":
        """Adds a module file (read when compile_and_load runs)."""
        p = Path(path).resolve()
        if not p.is_file():
            raise FileNotFoundError(f"no such PyShark module: {path}")
        return self._add(_Source(str(p), path=p))

    def add_source(self, text: str, name: str = "<string>") -> "Wrapper":
        """Adds a module given as source text; `name` is the file name that
        CompileErrors and entry locations show (a real path keeps the user's
        line numbers meaningful; "<string>" otherwise). The cache key is the
        text, as for a file: an unchanged text loads instead of compiling."""
        if not isinstance(text, str):
            raise TypeError(f"add_source: text must be a str, not {type(text).__name__}")
        return self._add(_Source(str(name), text=text))

    def add_module(self, module: types.ModuleType) -> "Wrapper":
        """Adds an imported Python module object: its file when it has one,
        else its source as linecache/inspect know it (e.g. a notebook)."""
        if not inspect.ismodule(module):
            raise TypeError(f"add_module: expected a module object, not {type(module).__name__}")
        file = getattr(module, "__file__", None)
        if file and file.endswith(".py") and Path(file).is_file():
            return self.add_source_file(file)
        try:
            text = inspect.getsource(module)
        except (OSError, TypeError):
            raise ValueError(f"add_module: the source of module {module.__name__!r} is not "
                             f"available (no .py file); use add_source(text) instead") from None
        return self._add(_Source(file or f"<module {module.__name__}>", text=text))

    def _add(self, source: _Source) -> "Wrapper":
        if source not in self._sources:
            self._sources.append(source)
            self._loaded = False
            self._forget_bound()
        return self

    def compile_and_load(self) -> "Wrapper":
        """Translates and compiles every added module (or loads it from the
        cache when its source, options, backend and compiler are unchanged)."""
        if not self._sources:
            raise ValueError("no sources: call add_source_file(path) (or add_source(text), "
                             "add_module(module)) first")
        self._forget_bound()
        self._entries = {}
        self._entry_texts = {}
        hits = []
        for source in self._sources:
            text = source.read()
            module, hit = self._compile_one(source, text)
            self._register(module, source.name, text)
            hits.append(hit)
        self.loaded_from_cache = all(hits)
        self._loaded = True
        return self

    def _compile_one(self, source: _Source, text: str) -> tuple[LoadedModule, bool]:
        # the python backend imports the user's own file when it matches (tracebacks
        # point there); a text source runs from the artifact's copy
        path = source.path
        opts = self.options.as_dict()
        salt = self._backend.cache_salt()
        if salt:
            opts["target"] = salt
        with stage("cache-key"):
            key = cache_key(text, self.backend, opts)
        target = cache_path(self.cache_dir, self.backend, key)
        if (target / "manifest.json").is_file():
            try:
                return self._load_dir(target, path), True
            except Exception:          # a corrupt or incompatible entry: rebuild it
                shutil.rmtree(target, ignore_errors=True)
        if self._tiered:
            return self._compile_tiered(source, text, target, path)
        fill = lambda d: self._compile_into(source.name, text, d)  # noqa: E731
        try:
            write_atomically(target, fill)
        except OSError:
            # An unwritable cache must not stop compilation.
            target = Path(tempfile.mkdtemp(prefix="pyshark-"))
            fill(target)
        return self._load_dir(target, path), False

    def _compile_tiered(self, source: _Source, text: str, target: Path,
                        path: Path | None) -> tuple[LoadedModule, bool]:
        """The quick module (from the cache when a run before this one left
        it there), loaded, with its upgrade to `target` started."""
        quick = target.with_name(target.name + "-quick")
        hit = False
        if (quick / "manifest.json").is_file():
            try:
                module, hit = self._load_dir(quick, path), True
            except Exception:
                shutil.rmtree(quick, ignore_errors=True)
        if not hit:
            fill = lambda d: self._compile_into(source.name, text, d, quick=True)  # noqa: E731
            try:
                write_atomically(quick, fill)
            except OSError:
                quick = Path(tempfile.mkdtemp(prefix="pyshark-"))
                target = quick.with_name(quick.name + "-optimised")
                fill(quick)
            module = self._load_dir(quick, path)
        command = self._backend.upgrade_command(quick, target)
        if command is not None:
            self._quick.append(module)
            self._upgrades.append(Upgrade(command, target,
                                          load=lambda d: self._load_dir(d, path),
                                          swap=lambda full: self._swap(module, full)))
        return module, hit

    def _swap(self, quick: LoadedModule, full: LoadedModule) -> None:
        """Every entry of module `quick` now calls module `full` (the same
        entries, optimised), the C call objects already handed out included."""
        with self._swap_lock:
            for name, (module, entry) in list(self._entries.items()):
                if module is quick:
                    self._entries[name] = (full, entry)
            for name, module, obj in self._fast:
                if module is quick:
                    full.retarget_fast_entry(obj, name)
            self._fast = [(n, full if m is quick else m, o) for n, m, o in self._fast]
            # the calls still running quick code: stopped and run again on `full`
            redirect = getattr(quick, "redirect", None)
            if redirect is not None:
                redirect(full)

    @property
    def tier(self) -> str:
        """"quick" while an entry runs a tiered compile's quick code, else
        "optimised"."""
        quick = {id(m) for m in self._quick}
        return "quick" if any(id(m) in quick for m, _ in self._entries.values()) else "optimised"

    def wait_optimised(self, timeout: float | None = None) -> bool:
        """Waits for the background builds of a tiered compile; True when
        every entry runs optimised code (False on timeout, or where a build
        failed: its UpgradeWarning said why, and the quick code keeps running)."""
        import time
        end = None if timeout is None else time.monotonic() + timeout
        for up in list(self._upgrades):
            left = None if end is None else max(0.0, end - time.monotonic())
            if not up.wait(left):
                return False
        return self.tier == "optimised"

    def _compile_into(self, path: Path | str, text: str, directory: Path,
                      quick: bool = False) -> dict:
        compile_ = self._backend.compile_quick if quick else self._backend.compile
        program, files = compile_(path, text, directory)
        with stage("artifacts"):
            return write_manifest(directory, backend=self.backend,
                                  options=self.options.as_dict(), source_path=str(path),
                                  source_text=text, program=program, files=files)

    def _load_dir(self, directory: Path, source_path: Path | None) -> LoadedModule:
        module = self._backend.load(Path(directory), read_manifest(directory), source_path)
        module.directory = Path(directory)
        return module

    def _register(self, module: LoadedModule, path: str | None, text: str | None = None) -> None:
        for name, entry in module.entries.items():
            if name in self._entries:
                first = self._entries[name][0].source
                raise _duplicate_error(name, entry, first, path, text)
            self._entries[name] = (module, entry)
            if text is not None:
                self.__dict__.setdefault("_entry_texts", {})[name] = text

    @classmethod
    def load(cls, path: str | Path, *, device: str | None = None,
             device_arrays: bool = False, num_threads: int | None = None) -> "Wrapper":
        """A Wrapper over what `pyshark build` wrote to `path`, without
        translating or compiling anything (device, device_arrays,
        num_threads: as for Wrapper(...))."""
        path = Path(path)
        manifest = read_manifest(path)
        if manifest["pyshark_version"] != pyshark_version():
            raise ValueError(f"{path} was built by pyshark {manifest['pyshark_version']}; this "
                             f"is pyshark {pyshark_version()}: rebuild it with `pyshark build`")
        opts = manifest.get("options", {})
        w = cls(manifest["backend"], unsafe=opts.get("unsafe", False),
                fastmath=opts.get("fastmath", False), device=device,
                device_arrays=device_arrays, num_threads=num_threads)
        module = w._backend.load(path, manifest, None)
        module.directory = path
        w._register(module, None)
        w._loaded = True
        w.loaded_from_cache = True
        return w

    # -- calling ----------------------------------------------------------------

    @property
    def entries(self) -> list[str]:
        """The names of the loaded entries, in definition order."""
        return list(self._entries)

    def signature(self, name: str) -> str:
        _, entry = self._lookup(name)
        params = ", ".join(f"{p.name}: {p.stype!r}" for p in entry.params)
        return f"{name}({params}) -> {entry.ret!r}"

    def _lookup(self, name: str):
        if not self._loaded:
            raise RuntimeError("call compile_and_load() before invoking entries")
        try:
            return self._entries[name]
        except KeyError:
            listing = ", ".join(self._entries) or "none"
            raise UnknownEntry(f"no entry {name!r} (backend {self.backend!r}); entries: "
                               f"{listing}") from None

    def artifact_dir(self, name: str) -> Path:
        """The artifact directory (cache entry or `pyshark build` output) of
        the module that defines entry `name`: what pyshark.dask ships to its
        workers so that they load, never compile."""
        self.wait_optimised()
        module, _ = self._lookup(name)
        if module.directory is None:
            raise RuntimeError(f"entry {name!r} was not loaded from an artifact directory")
        return module.directory

    def entry_source(self, name: str) -> tuple[str, str] | None:
        """(file name, module text) of the module that defines entry `name`,
        as it was compiled; None for a Wrapper.load of a build output."""
        module, _ = self._lookup(name)
        text = self.__dict__.get("_entry_texts", {}).get(name)
        return None if text is None else (module.source, text)

    def entry(self, name: str):
        """The entry's ir.Entry: its parameters' and result's surface types."""
        return self._lookup(name)[1]

    @property
    def runtime_options(self) -> dict:
        """The backend's keyword options besides unsafe/fastmath (device,
        device_arrays, num_threads) as given to Wrapper(...)."""
        return dict(self.__dict__.get("_runtime", {}))

    def invoke(self, name: str, /, *args, **kwargs):
        """Calls entry `name`; arguments may also be passed by parameter name.
        The entry's bound callable when it has one (the fast path of
        `w.name(...)`: the same results and errors; dot at 1,000 elements
        0.49 us against the generic call's 5.3); the generic call for a name the Wrapper itself uses (an
        entry named `close`, say) and before loading."""
        call = self.__dict__.get(name)
        if (call is None and self.__dict__.get("_loaded") and name in self._entries
                and not name.startswith("_") and not hasattr(type(self), name)):
            call = Wrapper.__getattr__(self, name)
        if call is not None and getattr(call, "__pyshark_wrapper__", None) is self:
            return call(*args, **kwargs) if kwargs else call(*args)
        module, entry = self._lookup(name)
        return module.call(name, convert.bind_args(entry, args, kwargs, self._keep_device))

    def close(self) -> None:
        """Releases what the backend holds beyond the entries' own results
        (opencl: the free blocks of the device memory pool). The Wrapper
        stays usable; DeviceArrays stay valid."""
        self._backend.close()

    def __enter__(self) -> "Wrapper":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if not self.__dict__.get("_loaded"):
            raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r} (entries "
                                 f"are attributes after compile_and_load())")
        module, entry = self._lookup(name)
        bind, entries, keep = convert.bind_args, self._entries, self._keep_device

        def call(*args, **kwargs):
            # the module is looked up per call: a tiered compile swaps it
            return entries[name][0].call(name, bind(entry, args, kwargs, keep))
        # a module may give a faster callable for the common case, which
        # calls `call` for everything else (the native opencl host's C path)
        fast = getattr(module, "fast_entry", None)
        fast_call = fast(name, call) if fast is not None else None
        if fast_call is not None:
            with self._swap_lock:           # a swap since the lookup: follow it
                now = self._entries[name][0]
                if now is not module:
                    now.retarget_fast_entry(fast_call, name)
                self._fast.append((name, now, fast_call))
        call = fast_call or call
        call.__name__ = call.__qualname__ = name
        text = self.__dict__.get("_entry_texts", {}).get(name)
        call.__doc__ = (entry_docstring(text, name) if text else None) or self.signature(name)
        call.__signature__ = entry_signature(entry, getattr(module, "record_class", None))
        call.__wrapped_entry__ = entry
        call.__pyshark_wrapper__ = self      # pyshark.dask finds the Wrapper from its entry
        # an instance attribute from now on (no __getattr__ per call), until
        # the entries change (_forget_bound); not for a subclass that has its
        # own __getattr__ (it expects to see every lookup)
        if type(self).__getattr__ is Wrapper.__getattr__:
            self.__dict__.setdefault("_bound", []).append(name)
            self.__dict__[name] = call
        return call

    def _forget_bound(self) -> None:
        for name in self.__dict__.pop("_bound", ()):
            self.__dict__.pop(name, None)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._entries))


def entry_signature(entry, record_class=None) -> inspect.Signature:
    """The entry's Python signature: its parameters, annotated with the
    prelude types they were declared with (ps.f32, ps.Array[...], tuple[...],
    the record class), so inspect.signature and help() show the original."""
    params = [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation=_annotation(p.stype, record_class))
              for p in entry.params]
    return inspect.Signature(params, return_annotation=_annotation(entry.ret, record_class))


def _annotation(st, record_class):
    """The prelude type a surface type was declared as (entry_signature)."""
    import numpy as np

    import pyshark.prelude as ps
    from pyshark.core.types import SArray, SRecord, SScalar, STuple
    if isinstance(st, SScalar):
        return getattr(ps, st.t.value, None) or np.bool_
    if isinstance(st, SArray):
        return ps.Array[_annotation(st.elem, record_class)]
    if isinstance(st, STuple):
        return tuple[tuple(_annotation(e, record_class) for e in st.elems)]
    if isinstance(st, SRecord):
        return (record_class or convert.record_class)(st)
    return inspect.Parameter.empty


def entry_docstring(text: str, name: str) -> str | None:
    """The docstring of top-level function `name` in module source `text`."""
    import ast
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_docstring(node)
    return None


def _duplicate_error(name: str, entry, first_source: str, path: str | None,
                     text: str | None = None) -> CompileError:
    loc = entry.loc
    line = loc.line if loc else 1
    col = loc.col if loc else 0
    filename = str(path) if path else (loc.file if loc else "<source>")
    source_line = None
    try:
        lines = (text if text is not None else Path(filename).read_text()).splitlines()
        source_line = lines[line - 1]
    except (OSError, IndexError):
        pass
    return CompileError(f"entry {name!r} is already defined in {first_source}; entry names "
                        f"must be unique across the modules of one Wrapper",
                        filename, line, col, source_line)


def build(source: str | Path, out: str | Path, backend: str, *, unsafe: bool = False,
          fastmath: bool = False) -> dict:
    """Compiles one module into directory `out` (what `pyshark build` writes):
    manifest.json plus the backend's artifact. Returns the manifest."""
    source, out = Path(source).resolve(), Path(out)
    if out.exists():
        if not (out / "manifest.json").is_file() and any(out.iterdir()):
            raise FileExistsError(f"{out} exists and is not a pyshark build output")
        shutil.rmtree(out)
    w = Wrapper(backend, unsafe=unsafe, fastmath=fastmath)
    text = source.read_text()
    out.mkdir(parents=True)
    try:
        manifest = w._compile_into(source, text, out)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return manifest
