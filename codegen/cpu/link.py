"""LLVM IR text -> optimised native code -> a shared library (or an in-process JIT).

- `optimised_ir(ir)`: the module after the O3 pipeline for the host CPU
  (what `pyshark show --ir llvm` prints).
- `optimise_and_build(ir, out_path)`: parse, verify, optimise at O3 for the
  host CPU (its name and features, PIC), emit an object file and link it with
  the system C compiler (`cc -shared`) into `out_path`, with the thread
  team's object (team.link_inputs: its parallel loops' pysharkrt_parallel &
  co.; in a Python process the runtime team.py loads comes first). With no
  C compiler on PATH, the optimised IR text is written to
  `out_path` instead, and `load_library` JITs it.
- `loader.load_library(path_or_ir)`: a `Library` with `address_of(name)` whatever
  was built: a .so (ctypes.CDLL), or IR text (a file, or the text itself)
  compiled by llvmlite's MCJIT in this process.
- The C ABI on the Python side: `PysharkCtx` (the ctx struct), `ctype_of`,
  `entry_prototype(f)` (a ctypes.CFUNCTYPE for a kir.Function).

dlopen() returns the already-loaded library when a path is loaded twice:
build every distinct module to a distinct path (the cache names files by
hash).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Optional, Union

import llvmlite.binding as llvm

from .runtime import (Library, PysharkCtx, ctype_of, entry_prototype)  # noqa: F401

from pyshark.compile_times import stage
from pyshark.core.types import BOOL

from .. import kir as K
from ..native_ext import find_c_compiler  # noqa: F401 (its home before native_ext)

_LOCK = threading.RLock()
_STATE: dict = {}


# ---------------------------------------------------------------------------
# LLVM set-up


def _init():
    if not _STATE.get("init"):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _STATE["init"] = True


#: the quick tier's code generation level (instruction selection and
#: register allocation that cost a third of level 3's on LocVolCalib)
QUICK_CODEGEN_LEVEL = 1


def _new_target_machine(jit: bool, opt: int = 3):
    _init()
    target = llvm.Target.from_default_triple()
    kw = dict(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
              opt=opt)
    if jit:
        return target.create_target_machine(jit=True, **kw)
    return target.create_target_machine(reloc="pic", codemodel="default", **kw)


def target_machine(quick: bool = False) -> "llvm.TargetMachine":
    """The host CPU's target machine for shared libraries (PIC), cached; with
    `quick`, the quick tier's (QUICK_CODEGEN_LEVEL).
    (An MCJIT engine owns and frees its target machine: each gets a fresh one.)"""
    key = "tm-quick" if quick else "tm"
    with _LOCK:
        tm = _STATE.get(key)
        if tm is None:
            tm = _STATE[key] = _new_target_machine(
                jit=False, opt=QUICK_CODEGEN_LEVEL if quick else 3)
        return tm


def host_triple() -> str:
    return target_machine().triple


def host_data_layout() -> str:
    return str(target_machine().target_data)


def _parse_and_optimise(llvm_ir: str, tm, quick: bool = False) -> "llvm.ModuleRef":
    _init()
    with stage("llvm-parse"):
        mod = llvm.parse_assembly(llvm_ir)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
    with stage("llvm-verify"):
        mod.verify()
    with stage("llvm-optimise"):
        _run_pipeline(mod, tm, quick=quick)
    return mod


def loop_load_pre() -> bool:
    """Whether GVN may replace a load in a loop by the value an earlier
    iteration loaded from the same address (LLVM's `enable-load-in-loop-pre`,
    on by default). PyShark's answer is no (`PYSHARK_LOOP_LOAD_PRE=1`: LLVM's
    default; part of the cache key). A stencil row that reads x[i] and
    x[i + 1] becomes a loop carrying x[i + 1] to the next iteration (a
    fixed-order recurrence), and LLVM's loop vectorizer gives such a loop no
    vector epilogue: the main loop takes 32 f32 at a time, the rest of a
    96-cell row, up to 31, ran in scalar code. In the 3-D heat stencil of
    scripts/shapes_probe that scalar remainder was most of the time
    (docs/cpu-backend.md, "Loop load PRE")."""
    return os.environ.get("PYSHARK_LOOP_LOAD_PRE") == "1"


_OPTIONS_LOCK = threading.Lock()
_OPTIONS_USERS = [0]


class _PipelineOptions:
    """LLVM's command-line options that PyShark's O3 pipeline runs under,
    set while at least one PyShark pipeline runs and put back to LLVM's
    defaults after (they are process-wide: a Numba compile in this process
    keeps LLVM's defaults, except one that runs at that very moment in
    another thread, which may see them; they change no result)."""

    SET = ("-enable-load-in-loop-pre=false",)
    DEFAULT = ("-enable-load-in-loop-pre=true",)

    def __enter__(self):
        if loop_load_pre():
            return self
        with _OPTIONS_LOCK:
            _OPTIONS_USERS[0] += 1
            if _OPTIONS_USERS[0] == 1:
                for o in self.SET:
                    llvm.set_option("pyshark", o)
        return self

    def __exit__(self, *exc):
        if loop_load_pre():
            return False
        with _OPTIONS_LOCK:
            _OPTIONS_USERS[0] -= 1
            if _OPTIONS_USERS[0] == 0:
                for o in self.DEFAULT:
                    llvm.set_option("pyshark", o)
        return False


def _run_pipeline(mod: "llvm.ModuleRef", tm, unlocked: bool = False,
                  quick: bool = False) -> None:
    """LLVM's O3 pipeline for the host CPU (`unlocked`: see _unlocked), under
    _PipelineOptions; with `quick`, the quick tier's (_run_quick_pipeline,
    which has no GVN)."""
    if quick:
        return _run_quick_pipeline(mod, tm, unlocked)
    with _PipelineOptions():
        _run_o3(mod, tm, unlocked)


def _run_o3(mod: "llvm.ModuleRef", tm, unlocked: bool) -> None:
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_interleaving = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    if unlocked:
        _unlocked("LLVMPY_RunNewModulePassManager")(mpm, mod, pb)
    else:
        mpm.run(mod, pb)


def _run_quick_pipeline(mod: "llvm.ModuleRef", tm, unlocked: bool = False) -> None:
    """The quick tier (docs/cpu-backend.md, "Tiered compilation"): SROA,
    InstCombine and SimplifyCFG only, no loop passes, no vectorizers, no
    inlining. On LocVolCalib's 15,000-line strike body this was 0.6 s of LLVM
    against O3's 4.4-4.9 s, for code 1.7x slower from the same IR (2-core AMD
    EPYC; the quick tier also leaves out the speed-only passes: 3x); SROA
    alone gave slower code for no less time, code generation level 0
    (FastISel) code 2.8x slower still."""
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=1))
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_sroa_pass()
    mpm.add_instruction_combine_pass()
    mpm.add_simplify_cfg_pass()
    if unlocked:
        _unlocked("LLVMPY_RunNewModulePassManager")(mpm, mod, pb)
    else:
        mpm.run(mod, pb)


# ---------------------------------------------------------------------------
# Vector math: glibc's libmvec

# The loop vectorizer widens libm calls to vector intrinsics (llvm.exp.v8f32),
# which LLVM's code generator would split back into scalar calls. glibc's
# libmvec has a vector variant of each under the x86-64 vector function ABI
# (_ZGV<isa>N<lanes><args>_<name>, isa b = SSE, d = AVX2, e = AVX-512), so the
# optimised module calls those instead (within 4 ulp, like numpy's own SIMD
# math; LANGUAGE.md allows last-ulp libm differences).
_MVEC_FUNCS = {"exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
               "atan", "sinh", "cosh", "tanh", "pow", "atan2"}
_MVEC_ISA = {128: "b", 256: "d", 512: "e"}
_MVEC_CALL = re.compile(r"@llvm\.(\w+)\.v(\d+)f(32|64)\b")


def libmvec_path() -> Optional[str]:
    """glibc's vector math library, when this machine has it."""
    if not sys.platform.startswith("linux"):
        return None
    for name in ("libmvec.so.1", "libmvec.so"):
        try:
            ctypes.CDLL(name)
            return name
        except OSError:
            continue
    return None


def host_cpu() -> str:
    """The host CPU as LLVM names it and a hash of its features: compiled
    code targets both, so the cpu backend's cache key includes this (a cache
    directory shared between machines must not hand an AVX-512 library to an
    AVX2 one)."""
    got = _STATE.get("host")
    if got is None:
        import hashlib
        _init()
        feats = llvm.get_host_cpu_features().flatten()
        got = _STATE["host"] = (f"{llvm.get_host_cpu_name()}:"
                                f"{hashlib.sha256(feats.encode()).hexdigest()[:12]}")
    return got


def slow_vector_scatter() -> bool:
    """Whether the host's vector scatter is slower than scalar stores, so a
    scatter whose stores are dense stays scalar (mc/scatter.py). Measured
    2026-11-26 (docs/cpu-backend.md, "Scatter"): on this project's 2-core AMD
    Zen 5, LLVM vectorized the scatter loop with `vpscatterqq` (microcoded on
    Zen) and it ran 2x slower than the scalar loop (1.7-1.8 against 0.86-0.91
    ms, 2^20 values, one or two threads; `prefer-no-scatter`'s per-lane
    extracts were no better); on the H100 machine's Intel Xeon host both took
    the same time on one thread, and on 16 threads, where each thread stores
    a sixteenth of what it scans, the vector loop was 4-5x faster. So: AMD Zen
    (LLVM's `znver*`) yes, elsewhere no. `PYSHARK_SCALAR_SCATTER=0/1`
    overrides it (part of the cache key)."""
    env = os.environ.get("PYSHARK_SCALAR_SCATTER")
    if env in ("0", "1"):
        return env == "1"
    return host_cpu().startswith("znver")


def stream_map_results() -> bool:
    """Whether a flat map's large fresh result is written with nontemporal
    stores (kir_passes/streaming.py). Measured 2026-11-27 (benchmarks/
    README.md, "Session 40"): on this project's 2-core AMD Zen 5 (LLVM's
    `znver5`) saxpy with 2^23-2^27 elements, both threads, ran 1.01-1.07x
    slower with them than with ordinary stores (3.89 against 3.68 ms at
    2^24) when memory was slow and 1.18-1.20x (2.63 against 2.20 ms) when it
    was fast; ordinary stores ran as fast as Numba's loop. Where they were
    measured to win (6.45 -> 4.63 ms at 64 MiB on the 2-core machine this
    project began on; the H100 machine's Intel Xeon host ahead of Numba)
    they stay. So: not on `znver5`, elsewhere yes. The streamed tiles and
    the large copies (mc/stream_tile.py, kir_passes/parallel_copy.py) keep
    theirs: measured on the Zen 5 as a gain or even.
    `PYSHARK_STREAM_MAPS=0/1` overrides it (part of the cache key)."""
    env = os.environ.get("PYSHARK_STREAM_MAPS")
    if env in ("0", "1"):
        return env == "1"
    return not host_cpu().startswith("znver5")


def host_target():
    """The multicore target record for this host (codegen/target.py)."""
    from dataclasses import replace
    from ..target import MULTICORE
    return replace(MULTICORE, slow_scatter=slow_vector_scatter(),
                   stream_maps=stream_map_results())


def _vector_isa_bits() -> int:
    feats = llvm.get_host_cpu_features()
    if feats.get("avx512f"):
        return 512
    if feats.get("avx2"):
        return 256
    return 128


def use_libmvec(text: str) -> tuple[str, bool]:
    """Rewrites vector math intrinsics to libmvec calls; (text, changed)."""
    if "@llvm." not in text or libmvec_path() is None:
        return text, False
    max_bits = _vector_isa_bits()
    changed = False

    def repl(m):
        nonlocal changed
        name, lanes, bits = m.group(1), int(m.group(2)), int(m.group(3))
        width = lanes * bits
        if name not in _MVEC_FUNCS or width not in _MVEC_ISA or width > max_bits:
            return m.group(0)
        changed = True
        args = "vv" if name in ("pow", "atan2") else "v"
        return f"@_ZGV{_MVEC_ISA[width]}N{lanes}{args}_{name}{'f' if bits == 32 else ''}"
    out = _MVEC_CALL.sub(repl, text)
    return out, changed


def _optimise_for_host(llvm_ir: str, tm, quick: bool = False) -> tuple["llvm.ModuleRef", bool]:
    """The optimised module, with vector math calling libmvec; and whether it
    needs libmvec."""
    mod = _parse_and_optimise(llvm_ir, tm, quick)
    with stage("libmvec"):
        changed = _rename_to_libmvec(mod)
    return mod, changed


def _rename_to_libmvec(mod: "llvm.ModuleRef") -> bool:
    """use_libmvec on the module itself: renames the declarations of vector
    math intrinsics (LLVM recomputes a renamed function's intrinsic id, so
    they become calls of the libmvec functions), where printing, rewriting
    and parsing the whole module cost LocVolCalib ~0.1 s."""
    decls = [f for f in mod.functions if f.is_declaration and f.name.startswith("llvm.")]
    if not decls or libmvec_path() is None:
        return False
    changed = False
    for f in decls:
        new, hit = use_libmvec("@" + f.name)
        if hit:
            f.name = new[1:]
            changed = True
    return changed


def optimised_ir(llvm_ir: str, *, fastmath: bool = False) -> str:
    """The module after the O3 pipeline for the host CPU, as text.
    (`fastmath` is accepted for symmetry: the flags are in the IR already.)"""
    with _LOCK:
        return str(_optimise_for_host(llvm_ir, target_machine())[0])


def optimise_and_build(llvm_ir: Union[str, list], out_path: Union[str, Path], *,
                       fastmath: bool = False, cc: Optional[str] = "auto",
                       extra_link: tuple = (), quick: bool = False) -> None:
    """Build `out_path`: a shared library when a C compiler exists (cc="auto"
    finds one; pass a path to choose, or None to force the JIT fallback),
    else the optimised IR text for `load_library` to JIT. Written atomically
    (temporary file, then rename). `llvm_ir` may be a list of modules
    (emit.emit_module_parts): each is optimised and compiled in a thread of
    its own and the objects are linked together. `extra_link`: more
    objects and libraries for the link (the opencl backend's runtime and
    ICD loader); with them, no C compiler is an error, not the JIT
    fallback. `quick`: the quick tier's pipeline and code generation
    (_run_quick_pipeline)."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    compiler = find_c_compiler() if cc == "auto" else cc
    if compiler is None and extra_link:
        raise RuntimeError("linking with other objects needs a C compiler (cc, gcc or clang)")
    parts = [llvm_ir] if isinstance(llvm_ir, str) else list(llvm_ir)
    if compiler is None and len(parts) > 1:
        parts = [_join(parts)]
    with _LOCK:
        if len(parts) == 1:
            tm = target_machine(quick)
            mod, mvec = _optimise_for_host(parts[0], tm, quick)
            with stage("llvm-object"):
                objs = [tm.emit_object(mod)] if compiler else []
            text = None if compiler else str(mod)
        else:
            objs, mvec = _compile_parallel(parts, quick)
            text = None
    tmpdir = tempfile.mkdtemp(prefix=".pyshark-link-", dir=out_path.parent)
    try:
        tmp_out = Path(tmpdir) / out_path.name
        if compiler is None:
            tmp_out.write_text(text)
        else:
            obj_paths = []
            for k, obj in enumerate(objs):
                obj_paths.append(str(Path(tmpdir) / f"module{k}.o"))
                Path(obj_paths[-1]).write_bytes(obj)
            if any("pysharkrt_" in str(p) for p in parts):
                from .team import link_inputs
                extra_link = (*extra_link, *link_inputs())
            cmd = [compiler, "-shared", "-o", str(tmp_out), *obj_paths, *extra_link, "-lm"]
            if mvec:
                cmd.append("-lmvec")
            with stage("link"):
                r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"linking failed ({' '.join(cmd)}):\n{r.stderr}")
        os.replace(tmp_out, out_path)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def _join(parts: list) -> str:
    """The parts linked back into one module's text (the JIT fallback)."""
    _init()
    mod = llvm.parse_assembly(parts[0])
    for t in parts[1:]:
        mod.link_in(llvm.parse_assembly(t))
    return str(mod)


def _compile_part(text: str, tm, times: dict, quick: bool = False) -> tuple[bytes, bool]:
    """One part, in its own LLVM context (contexts are not thread-safe):
    parse, verify, optimise, libmvec, object code; `times` gets each
    stage's seconds (wall, and this thread's CPU under "cpu:" + name)."""
    import time

    def timed(name, f):
        t0, c0 = time.perf_counter(), time.thread_time()
        r = f()
        times[name] = time.perf_counter() - t0
        times["cpu:" + name] = time.thread_time() - c0
        return r
    ctx = llvm.create_context()
    mod = timed("llvm-parse", lambda: llvm.parse_assembly(text, context=ctx))
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    timed("llvm-verify", mod.verify)
    timed("llvm-optimise", lambda: _run_pipeline(mod, tm, unlocked=True, quick=quick))
    mvec = timed("libmvec", lambda: _rename_to_libmvec(mod))
    obj = timed("llvm-object", lambda: _emit_object_unlocked(tm, mod))
    return obj, mvec


def _unlocked(name: str):
    """llvmlite's ctypes function `name` without llvmlite's process-wide
    lock, which every llvmlite call takes, so two threads would run LLVM
    one after the other. Only for the long calls of _compile_part, on
    objects no other thread touches (their own context and target machine:
    LLVM compiles separate contexts concurrently, as ORC does); where this
    llvmlite has no such attribute, the locked function."""
    from llvmlite.binding import ffi
    fn = getattr(ffi.lib, name)
    return getattr(fn, "_cfn", fn)


def _emit_object_unlocked(tm, mod) -> bytes:
    """tm.emit_object(mod) outside llvmlite's lock (see _unlocked)."""
    from ctypes import string_at
    from llvmlite.binding import ffi
    with ffi.OutputString() as err:
        mb = _unlocked("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 1, err)
        if not mb:
            raise RuntimeError(str(err))
    try:
        return string_at(ffi.lib.LLVMPY_GetBufferStart(mb), ffi.lib.LLVMPY_GetBufferSize(mb))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(mb)


#: the code generation level of a split.GluePart (optnone glue), either tier
GLUE_CODEGEN_LEVEL = 0


def _part_level(part: str, quick: bool) -> int:
    from .split import GluePart
    if isinstance(part, GluePart):
        return GLUE_CODEGEN_LEVEL
    return QUICK_CODEGEN_LEVEL if quick else 3


def _part_machines(levels: list) -> list:
    """A target machine per parallel part, at its code generation level (one
    is not safe to share between threads), cached."""
    tms, used = [], {}
    for level in levels:
        pool = _STATE.setdefault(("part_tms", level), [])
        k = used.get(level, 0)
        used[level] = k + 1
        while len(pool) <= k:
            pool.append(_new_target_machine(jit=False, opt=level))
        tms.append(pool[k])
    return tms


def _compile_parallel(parts: list, quick: bool = False) -> tuple[list, bool]:
    """Every part in a thread of its own (llvmlite releases the GIL in
    LLVM's calls); each stage is recorded as its longest part's time, the
    parts running side by side, and the CPU time of all parts."""
    from concurrent.futures import ThreadPoolExecutor
    from pyshark.compile_times import current
    times = [dict() for _ in parts]
    tms = _part_machines([_part_level(p, quick) for p in parts])
    with ThreadPoolExecutor(len(parts)) as pool:
        futs = [pool.submit(_compile_part, t, tm, d, quick)
                for t, tm, d in zip(parts, tms, times)]
        res = [f.result() for f in futs]
    rec = current()
    if rec is not None:
        for name in times[0]:
            if not name.startswith("cpu:"):
                rec.add(name, max(d.get(name, 0.0) for d in times),
                        sum(d.get("cpu:" + name, 0.0) for d in times))
    return [o for o, _ in res], any(m for _, m in res)


# ---------------------------------------------------------------------------
# Loading


def jit_library(text: str, optimise: bool, path: Optional[Path] = None) -> Library:
    with _LOCK:
        _init()
        _jit_runtime()
        tm = _new_target_machine(jit=True)
        if optimise:
            mod = _parse_and_optimise(text, tm)
        else:
            mod = llvm.parse_assembly(text)
            mod.triple = tm.triple
            mod.data_layout = str(tm.target_data)
            mod.verify()
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        engine.run_static_constructors()
        return Library("jit", None, path=path, engine=engine)


def _jit_runtime():
    """Make the thread team's functions (team.py: the runtime when a C
    compiler built it, else libgomp's, else one-thread stand-ins) and
    libmvec's visible to MCJIT (libc and libm already are)."""
    if _STATE.get("jit_runtime"):
        return
    from .team import ensure_runtime, jit_symbols
    mvec = libmvec_path()
    if mvec:
        try:
            llvm.load_library_permanently(mvec)
        except RuntimeError:
            pass
    for sym, address in jit_symbols(ensure_runtime()).items():
        llvm.add_symbol(sym, address)
    _STATE["jit_runtime"] = True


# ---------------------------------------------------------------------------
# The C ABI on the Python side


__all__ = ["optimised_ir", "optimise_and_build", "Library", "PysharkCtx",
           "ctype_of", "entry_prototype", "find_c_compiler", "target_machine",
           "host_triple", "host_data_layout"]
