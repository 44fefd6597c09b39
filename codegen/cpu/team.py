"""The thread team that runs the cpu backend's parallel loops (team.c).

A compiled module calls `pysharkrt_parallel`, `pysharkrt_thread_num` and
`pysharkrt_max_threads`, and for the Python wrapper's calls
`pysharkrt_sigint_enter`/`leave` and the flag `pysharkrt_sigint_flag` (one
SIGINT handler for the process, team.c's end). Its link includes team.c's
object (`link_inputs`),
so a library from `pyshark build` runs from C with a team of its own; in
Python, `ensure_runtime()` first builds team.c as a shared library (once
per machine, cached in the temp folder like the fast-call extensions) and
loads it with RTLD_GLOBAL, which comes first in every module's symbol
lookup, so all the process's modules share its one team. The JIT path (no
C compiler) binds the same names with `jit_symbols()`.

PYSHARK_THREADS chooses the runtime: `team` (the default; PyShark's own
team, see team.c for the algorithm and docs/cpu-backend.md, "Threads and
load", for why) or `gomp` (team.c's variant that forwards to libgomp's
GOMP_parallel, as every release before session 32 ran; kept for A/B
measurements and for machines where the team cannot be built). It is read
once, when the runtime loads; the compiled modules are the same for both.

Its own module, free of llvmlite (runtime.py's rule: loading a cached
module never imports LLVM)."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from pathlib import Path
from typing import Optional

from ..native_ext import build_shared, once

SOURCE = Path(__file__).with_name("team.c")
KINDS = ("team", "gomp")
#: what a module calls (emit_parfor.py, emit_llvm.py) -> libgomp's function
#: of the same signature (the JIT's stand-in without a C compiler)
SYMBOLS = {"pysharkrt_parallel": "GOMP_parallel", "pysharkrt_thread_num": "omp_get_thread_num",
           "pysharkrt_max_threads": "omp_get_max_threads"}
#: the SIGINT functions of Python's calls (team.c's end; emit_unwind.Unwinder.arm),
#: and the flag `pysharkrt_sigint_flag` they share with the modules' polls
SIGINT_SYMBOLS = ("pysharkrt_sigint_enter", "pysharkrt_sigint_leave")

_STATE: dict = {}
_LOCK = threading.Lock()

#: libgomp's spin count before a waiting thread sleeps, set in the gomp
#: variant when the user set neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY
#: (docs/cpu-backend.md, "libgomp's spinning")
GOMP_SPINCOUNT_DEFAULT = "1000"


def requested_kind() -> str:
    """PYSHARK_THREADS (`team` when unset); ValueError naming the choices
    for any other value."""
    kind = os.environ.get("PYSHARK_THREADS", "").strip().lower() or "team"
    if kind not in KINDS:
        raise ValueError(f"PYSHARK_THREADS={os.environ['PYSHARK_THREADS']!r}: use one of "
                         f"{', '.join(KINDS)} (or leave it unset for 'team')")
    return kind


def quiet_gomp_spin() -> None:
    """Sets GOMP_SPINCOUNT for libgomp (read once, when libgomp loads) unless
    the user chose a wait policy."""
    if "GOMP_SPINCOUNT" in os.environ or "OMP_WAIT_POLICY" in os.environ:
        return
    os.environ["GOMP_SPINCOUNT"] = GOMP_SPINCOUNT_DEFAULT


#: per runtime kind: the compiler flags and the link flag its code needs
_FLAGS = {"team": (["-pthread"], "-pthread"),
          "gomp": (["-DPYSHARK_TEAM_GOMP", "-fopenmp"], "-fopenmp")}


def _build(kind: str, output: str = "-shared") -> Path:
    """team.c built for `kind` as a shared library, or (output="-c") an
    object; cached in the temp folder (native_ext.build_shared)."""
    if kind == "team" and not sys.platform.startswith("linux"):
        raise RuntimeError("PyShark's team needs Linux (futex)")
    flags, link = _FLAGS[kind]
    return build_shared(SOURCE, f"pyshark-{'team' if kind == 'team' else 'team-gomp'}", flags,
                        [] if output == "-c" else [link],
                        suffix=".o" if output == "-c" else ".so", output=output)


def link_inputs() -> list:
    """What a compiled module's link adds so that the library runs outside
    Python too (a C program, `pyshark build`): team.c's object, its three
    functions exported. In a Python process the runtime loaded with
    RTLD_GLOBAL comes first in every module's symbol lookup, so all modules
    share its one team (and PYSHARK_THREADS applies); a C program gets each
    library's own copy. The libgomp variant where the team cannot be built
    (not Linux)."""
    try:
        return [str(_build("team", "-c")), _FLAGS["team"][1]]
    except RuntimeError:
        return [str(_build("gomp", "-c")), _FLAGS["gomp"][1]]


def _load() -> ctypes.CDLL:
    kind = requested_kind()
    errors = []
    for k in ([kind] + [x for x in KINDS if x != kind]):
        try:
            if k == "gomp":
                quiet_gomp_spin()
            lib = ctypes.CDLL(str(_build(k)), mode=ctypes.RTLD_GLOBAL)
            lib.pysharkrt_team_kind.restype = ctypes.c_char_p
            lib.pysharkrt_max_threads.restype = ctypes.c_int
            return lib
        except (RuntimeError, OSError) as exc:
            errors.append(f"{k}: {exc}")
    raise RuntimeError("the cpu backend's thread runtime (codegen/cpu/team.c) could not be "
                       "built or loaded with the C compiler found:\n" + "\n".join(errors))


def ensure_runtime() -> Optional[ctypes.CDLL]:
    """The loaded runtime library (built on first use); None where it could
    not be built (why_not() says why: then only the JIT path can run)."""
    return once(_STATE, _LOCK, _load)


def why_not() -> str:
    """Why ensure_runtime() returned None ('' when it did not)."""
    return _STATE.get("why", "")


def kind() -> str:
    """`team` or `gomp`: the runtime this process loaded (loading it if
    needed); `none` when neither could be built."""
    lib = ensure_runtime()
    return lib.pysharkrt_team_kind().decode() if lib is not None else "none"


def _libgomp() -> Optional[ctypes.CDLL]:
    quiet_gomp_spin()
    for name in filter(None, [ctypes.util.find_library("gomp"), "libgomp.so.1"]):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def max_threads() -> int:
    """The default team size (every CPU this process may run on, or
    OMP_NUM_THREADS), as the modules see it; 1 where nothing can run a team."""
    lib = ensure_runtime()
    if lib is None:
        lib = _libgomp()
        if lib is None:
            return 1
        return max(1, int(lib.omp_get_max_threads()))
    return max(1, int(lib.pysharkrt_max_threads()))


# The JIT's sequential stand-ins where neither the runtime nor libgomp loads:
# pysharkrt_parallel runs the outlined function once, as thread 0 of 1.
_REGION_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint)
def _seq_parallel(fn, data, nthreads, flags):
    _REGION_FN(fn)(data)


@ctypes.CFUNCTYPE(ctypes.c_int)
def _seq_zero():
    return 0


@ctypes.CFUNCTYPE(ctypes.c_int)
def _seq_one():
    return 1


@ctypes.CFUNCTYPE(None)
def _seq_none():
    pass


_NO_FLAG = ctypes.c_int(0)


def jit_symbols(runtime: Optional[ctypes.CDLL] = None) -> dict:
    """name -> address for the JIT (llvmlite's add_symbol): the runtime's
    own functions when it is given, else libgomp's, else sequential
    stand-ins (one thread)."""
    if runtime is not None:
        out = {name: ctypes.cast(getattr(runtime, name), ctypes.c_void_p).value
               for name in (*SYMBOLS, *SIGINT_SYMBOLS)}
        out["pysharkrt_sigint_flag"] = ctypes.addressof(
            ctypes.c_int.in_dll(runtime, "pysharkrt_sigint_flag"))
        return out
    # without the runtime no handler is shared: a call of ctx->sigint == 2
    # is not counted in (enter returns 0) and runs to its end at Ctrl-C
    out = {"pysharkrt_sigint_enter": ctypes.cast(_seq_zero, ctypes.c_void_p).value,
           "pysharkrt_sigint_leave": ctypes.cast(_seq_none, ctypes.c_void_p).value,
           "pysharkrt_sigint_flag": ctypes.addressof(_NO_FLAG)}
    gomp = _libgomp()
    if gomp is not None:
        try:
            return out | {name: ctypes.cast(getattr(gomp, g), ctypes.c_void_p).value
                          for name, g in SYMBOLS.items()}
        except AttributeError:
            pass
    return out | {"pysharkrt_parallel": ctypes.cast(_seq_parallel, ctypes.c_void_p).value,
                  "pysharkrt_thread_num": ctypes.cast(_seq_zero, ctypes.c_void_p).value,
                  "pysharkrt_max_threads": ctypes.cast(_seq_one, ctypes.c_void_p).value}


__all__ = ["ensure_runtime", "why_not", "kind", "max_threads", "jit_symbols", "requested_kind",
           "link_inputs",
           "quiet_gomp_spin", "KINDS", "SYMBOLS", "SIGINT_SYMBOLS"]
