"""Building a native opencl module: the entries' LLVM object plus rt.c,
linked against the OpenCL ICD loader into one shared library.

- `runtime_object()`: rt.c compiled once per machine and source (`cc -O2
  -fPIC -fvisibility=hidden`), kept in the temp folder by the hash of its
  source and compiler.
- `build_library(llvm_ir, out)`: link.optimise_and_build (the cpu
  backend's path: O3 for the host CPU, an object, `cc -shared`) with the
  runtime object and the loader (icd.loader_library: pyopencl's bundled
  loader when there, so that a library loaded beside pyopencl shares its
  loader and context handles; else the system's libOpenCL.so.1), with an
  rpath to the loader's folder so a C program finds it.
- `available()`: a C compiler and an ICD loader exist (else the backend
  keeps the Python host path).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

RT_SOURCE = Path(__file__).with_name("rt.c")


def _compiler() -> Optional[str]:
    from ...cpu.link import find_c_compiler
    return find_c_compiler()


def available() -> bool:
    from ..icd import loader_library
    return _compiler() is not None and loader_library() is not None


def runtime_object() -> Path:
    """rt.c's object file (built once; named by the source and compiler)."""
    cc = _compiler()
    if cc is None:
        raise RuntimeError("the native opencl host code needs a C compiler (cc, gcc or clang)")
    src = RT_SOURCE.read_bytes()
    key = hashlib.sha256(src + cc.encode()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"pyshark-oclrt-{os.getuid()}-{key}.o"
    if not out.is_file():
        tmp = out.with_suffix(f".{os.getpid()}.tmp.o")
        cmd = [cc, "-O2", "-fPIC", "-fvisibility=hidden", "-std=c11", "-c", str(RT_SOURCE),
               "-o", str(tmp)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"compiling the OpenCL runtime failed ({' '.join(cmd)}):\n"
                               f"{r.stderr}")
        os.replace(tmp, out)
    return out


def link_args() -> list:
    """What the link adds: the runtime object, the ICD loader and its rpath."""
    from ..icd import loader_library
    loader = loader_library()
    if loader is None:
        raise RuntimeError("no OpenCL ICD loader (libOpenCL.so.1) found")
    return [str(runtime_object()), str(loader), f"-Wl,-rpath,{Path(loader).parent}"]


def build_library(llvm_ir: str, out: Path) -> None:
    from ...cpu.link import optimise_and_build
    optimise_and_build(llvm_ir, out, extra_link=link_args())


__all__ = ["available", "runtime_object", "link_args", "build_library", "RT_SOURCE"]
