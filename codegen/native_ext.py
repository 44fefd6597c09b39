"""Building and loading the small CPython extensions of the backends' host
code (the C fast paths of entry calls: codegen/cpu/fastcall.c,
codegen/opencl/native/fastcall.c) and other C the backends build on first
use (`build_shared`: the cpu backend's thread team, codegen/cpu/team.c, as
a shared library and as an object), and finding the system C compiler.

An extension is built at first use, not at install time (PyShark installs
as pure Python): `cc -O2 -fPIC -shared` against this interpreter's Python.h
(and any other include folders, e.g. numpy's), written to the temp folder
under the hash of the source, the compiler, the include folders and the
interpreter (a changed source or interpreter gets a new file; a file that
exists is reused, as a cache), atomically (a temporary name, then a
rename), and loaded with importlib's ExtensionFileLoader. Where it cannot be
built or loaded (no compiler, no Python.h) the caller keeps its Python
path; `once` records why.

Its own module, free of llvmlite, so that loading a cached compiled module
never imports LLVM (codegen/cpu/runtime.py's rule)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Optional


#: what the fast paths' C sources share (the Entry type's Python face); its
#: folder is on every extension's include path
SHARED_HEADER = Path(__file__).parent / "fastcall_entry.h"


def find_c_compiler() -> Optional[str]:
    """$CC when set (and found), else cc, gcc or clang on PATH; None if none."""
    cands = [os.environ["CC"]] if os.environ.get("CC") else []
    cands += ["cc", "gcc", "clang"]
    for c in cands:
        p = shutil.which(c)
        if p:
            return p
    return None


def python_include() -> str:
    """The folder of this interpreter's Python.h; RuntimeError if it has none
    (the development headers are not installed)."""
    include = sysconfig.get_paths().get("include") or ""
    if not (Path(include) / "Python.h").is_file():
        raise RuntimeError(f"no Python.h in {include!r} (the interpreter's development "
                           f"headers are not installed)")
    return include


def build_extension(source: Path, prefix: str, includes: Iterable[str] = (),
                    key: str = "") -> Path:
    """The extension built from `source` (one C file), as a path in the temp
    folder named `prefix`-uid-hash; built when not there yet. `includes`:
    more include folders; `key`: more text for the hash (e.g. a library's
    version whose headers the source uses)."""
    includes = [python_include(), str(SHARED_HEADER.parent), *includes]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    flags = ["-fvisibility=hidden"]
    for inc in includes:
        flags += ["-I", inc]
    if sys.platform == "darwin":
        flags += ["-undefined", "dynamic_lookup"]
    return build_shared(source, prefix, flags, suffix=suffix,
                        key=SHARED_HEADER.read_bytes().decode() + key)


def build_shared(source: Path, prefix: str, flags: Iterable[str] = (), libs: Iterable[str] = (),
                 suffix: str = ".so", key: str = "", output: str = "-shared") -> Path:
    """`cc -O2 -fPIC -shared FLAGS source -o OUT LIBS`: a shared library in the
    temp folder named `prefix`-uid-hash (the hash of the source, the
    compiler, the flags, the interpreter and `key`), built atomically when
    not there yet; RuntimeError without a C compiler or when cc fails.
    `output="-c"` (with suffix ".o") builds an object file instead."""
    cc = find_c_compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc or clang)")
    flags, libs = list(flags), list(libs)
    digest = hashlib.sha256(Path(source).read_bytes() + "\0".join(
        [cc, output, *flags, *libs, sys.version, suffix, sys.platform, key]).encode()
                            ).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"{prefix}-{os.getuid()}-{digest}{suffix}"
    if not out.is_file():
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        cmd = [cc, "-O2", "-fPIC", output, *flags, str(source), "-o", str(tmp), *libs]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"compiling {Path(source).name} failed ({' '.join(cmd)}):\n"
                               f"{r.stderr}")
        os.replace(tmp, out)
    return out


def load_extension(name: str, path: Path):
    """The extension module `name` (its PyInit_<name>) from the file `path`."""
    from importlib.machinery import ExtensionFileLoader
    from importlib.util import module_from_spec, spec_from_file_location
    loader = ExtensionFileLoader(name, str(path))
    spec = spec_from_file_location(name, str(path), loader=loader)
    mod = module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def once(state: dict, lock, make: Callable[[], object]):
    """`make()` run once per process under `lock`, its result kept in
    state["module"]; where it raises, state["module"] is None and
    state["why"] says why (the caller's why_not())."""
    if "module" in state:
        return state["module"]
    with lock:
        if "module" not in state:
            try:
                state["module"] = make()
            except Exception as exc:            # no Python.h, no compiler, a failed load
                state["module"], state["why"] = None, f"{type(exc).__name__}: {exc}"
    return state["module"]


__all__ = ["find_c_compiler", "python_include", "build_extension", "build_shared",
           "load_extension", "once"]
