"""Building a native opencl module: the entries' LLVM object plus the
runtime (rt.h; rt_mem.c, rt_launch.c, rt_api.c), linked against the OpenCL
ICD loader into one shared library.

- `runtime_objects()`: the runtime's sources compiled once per machine and
  source (`cc -O2 -fPIC -fvisibility=hidden`, one object each), kept in the
  temp folder by the hash of the sources, the header and the compiler.
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

HERE = Path(__file__).parent
RT_SOURCES = [HERE / "rt_mem.c", HERE / "rt_launch.c", HERE / "rt_api.c"]
RT_HEADER = HERE / "rt.h"


def _compiler() -> Optional[str]:
    from ...native_ext import find_c_compiler
    return find_c_compiler()


def available() -> bool:
    from ..icd import loader_library
    return _compiler() is not None and loader_library() is not None


def runtime_objects() -> list:
    """The runtime's object files, one per source (built once; named by the
    sources, the header and the compiler)."""
    cc = _compiler()
    if cc is None:
        raise RuntimeError("the native opencl host code needs a C compiler (cc, gcc or clang)")
    h = hashlib.sha256(RT_HEADER.read_bytes() + cc.encode())
    for src in RT_SOURCES:
        h.update(src.read_bytes())
    key = h.hexdigest()[:16]
    outs = []
    for src in RT_SOURCES:
        out = Path(tempfile.gettempdir()) / f"pyshark-oclrt-{os.getuid()}-{key}-{src.stem}.o"
        if not out.is_file():
            tmp = out.with_suffix(f".{os.getpid()}.tmp.o")
            cmd = [cc, "-O2", "-fPIC", "-fvisibility=hidden", "-std=c11", "-c", str(src),
                   "-o", str(tmp)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"compiling the OpenCL runtime failed ({' '.join(cmd)}):\n"
                                   f"{r.stderr}")
            os.replace(tmp, out)
        outs.append(out)
    return outs


def link_args() -> list:
    """What the link adds: the runtime object, the ICD loader and its rpath."""
    from ..icd import loader_library
    loader = loader_library()
    if loader is None:
        raise RuntimeError("no OpenCL ICD loader (libOpenCL.so.1) found")
    return [*map(str, runtime_objects()), str(loader), f"-Wl,-rpath,{Path(loader).parent}"]


def build_library(llvm_ir: str, out: Path) -> None:
    from ...cpu.link import optimise_and_build
    optimise_and_build(llvm_ir, out, extra_link=link_args())


__all__ = ["available", "runtime_objects", "link_args", "build_library", "RT_SOURCES",
           "RT_HEADER"]
