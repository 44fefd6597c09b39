"""Which OpenCL runtimes (ICDs) the ICD loader may load in this process.

pyopencl's wheel carries its own ICD loader (ocl-icd). It reads the folder
OCL_ICD_VENDORS names (default /etc/OpenCL/vendors) and, always, the folder
PYOPENCL_HOME names, which pyopencl sets to its own package at import: that
is where the pocl-binary-distribution wheel puts its pocl.icd. Both are read
once, at the first platform query, so `prepare()` must run before it
(devices.platforms() and the probe call it first).

The rules PyShark applies (docs/opencl-backend.md, "Getting a device"):
- OCL_ICD_VENDORS set by the user names EVERY runtime PyShark may load:
  PYOPENCL_HOME is pointed at an empty folder, so the PoCL wheel loads only
  if its ICD is in that folder too. An empty folder hides every runtime.
- Otherwise the loader reads /etc/OpenCL/vendors plus the runtimes that
  `pyshark setup-opencl` installed into this Python environment
  (Intel's CPU runtime from PyPI: an ICD file under
  <sys.prefix>/share/pyshark/OpenCL/vendors naming the library by absolute
  path), through a folder that holds copies of both sets of ICD files.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")
_prepared = False
_OURS = "PYSHARK_OWN_ICD_VENDORS"     # the OCL_ICD_VENDORS that prepare() set, not the user


def managed_vendors() -> Path:
    """Where `pyshark setup-opencl` registers the runtimes it installs into
    this Python environment."""
    return Path(sys.prefix) / "share" / "pyshark" / "OpenCL" / "vendors"


def _icds(folder: Path) -> list:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix == ".icd" and p.is_file())
    except OSError:
        return []


def _empty_folder() -> str:
    path = Path(tempfile.gettempdir()) / "pyshark-no-icds"
    path.mkdir(exist_ok=True)
    return str(path)


def _combined(folders: list) -> str:
    """A folder holding copies of the ICD files of `folders` (named by their
    content, so processes with the same runtimes share it)."""
    import hashlib
    files = [(p.name, p.read_text()) for f in folders for p in _icds(f)]
    digest = hashlib.sha256(repr(files).encode()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"pyshark-icds-{digest}"
    if not out.is_dir():
        tmp = Path(tempfile.mkdtemp(prefix="pyshark-icds-"))
        for i, (name, text) in enumerate(files):
            (tmp / f"{i:02d}-{name}").write_text(text)
        try:
            os.replace(tmp, out)
        except OSError:             # another process made it first
            pass
    return str(out)


def prepare() -> None:
    """Sets the loader's environment by the rules above (once; before the
    first platform query of this process)."""
    global _prepared
    if _prepared:
        return
    _prepared = True
    import pyopencl  # noqa: F401  (sets PYOPENCL_HOME, which we may override)
    given = os.environ.get("OCL_ICD_VENDORS")
    if given is not None and given != os.environ.get(_OURS):
        os.environ["PYOPENCL_HOME"] = _empty_folder()
        return
    if _icds(managed_vendors()):
        # (a child process, the probe, inherits it and must not take it for the user's)
        os.environ["OCL_ICD_VENDORS"] = os.environ[_OURS] = _combined(
            [SYSTEM_VENDORS, managed_vendors()])


def loader_library() -> "str | None":
    """The ICD loader a native module links against: pyopencl's bundled
    one (pyopencl/.libs/libOpenCL-*.so*) when there, so that a library
    loaded beside pyopencl uses the very loader (and the context handles)
    pyopencl uses; else the system's libOpenCL.so.1; None if neither."""
    import ctypes.util
    import importlib.util
    spec = importlib.util.find_spec("pyopencl")
    if spec is not None and spec.origin:
        libs = Path(spec.origin).parent / ".libs"
        found = sorted(libs.glob("libOpenCL*.so*")) if libs.is_dir() else []
        if found:
            return str(found[0])
    for cand in ("/usr/lib/x86_64-linux-gnu/libOpenCL.so.1", "/usr/lib64/libOpenCL.so.1",
                 "/usr/lib/libOpenCL.so.1"):
        if Path(cand).is_file():
            return cand
    name = ctypes.util.find_library("OpenCL")
    return name if name and Path(name).is_absolute() else None


def describe() -> str:
    """Where the loader looks, for messages ("runtimes read from ...")."""
    vendors = os.environ.get("OCL_ICD_VENDORS") or str(SYSTEM_VENDORS)
    home = os.environ.get("PYOPENCL_HOME")
    extra = f" and {home}" if home and Path(home).name != "pyshark-no-icds" else ""
    return f"{vendors}{extra}"
