"""Backend "opencl": core IR -> kernel IR -> OpenCL C kernels + Python host code.

compile: translate and check, run the stages of the gpu family's pipeline
for the device's target (codegen/stages.py: the core passes with kernel
extraction, the lowering with the gpu/ algorithms, the kernel IR passes,
among them the expansion of ParFor bodies' allocations into blocks
allocated before the loop and coarsening), then spell every ParFor body as
an OpenCL C kernel (emit_cl.py) and everything else as a generated Python
host module (host.py). The artifact directory holds kernels.cl, host.py,
the kernel IR they spell as text (kernels.txt) and abi.json (the entry ABI
and error messages both native backends record, marshal.abi_of, plus the
kernels and the hashes of both sources).

load: build the OpenCL program once per process (PoCL also caches binaries
on disk), compile the host module once with compile(), and generate each
entry's caller (caller.py). A driver's failure, here or in a call, is a
pyshark DeviceError (failures.py), never a raw pyopencl exception. call:
the entry's generated caller, the one call path: the wrapper's flat values
(convert.FlatCall) and the native backends' error protocol
(codegen/marshal.py); numpy array inputs are sent to the device,
DeviceArray inputs are used where they are; array results are copied back
into numpy arrays, or, with device_arrays=True, returned as DeviceArrays
(arrays of tuples/records as DeviceStructArrays, one DeviceArray a field).
The call's other device memory returns to the pool when it returns; its
kernels may still be running then (runtime.py).

Options besides Options: `device` (a device spec, runtime.device) and
`device_arrays`.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pyshark.compile_times import stage
from pyshark.core import ir
from pyshark.errors import DeviceError
from pyshark.wrapper.backend import Backend, LoadedModule, entries_from_manifest, translate_and_check

from .. import kir as K
from ..lower import symbol
from ..marshal import abi_of, error_from
from .caller import make_caller
from .emit_cl import HEAP_FULL
from .failures import device_errors, is_driver_error, out_of_memory, translate

CL_FILE = "kernels.cl"
HOST_FILE = "host.py"
ABI_FILE = "abi.json"
KIR_FILE = "kernels.txt"
LIB_FILE = "module.so"
HEADER_FILE = "module.h"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def host_mode() -> str:
    """Which host code runs an entry: "native" (the shared library of
    codegen/opencl/native, when it was built) or "python" (host.py's);
    PYSHARK_OPENCL_HOST=python chooses the Python host code."""
    return "python" if os.environ.get("PYSHARK_OPENCL_HOST", "native") == "python" else "native"


def compile_native(program, kernels: K.Module, options, directory: Path) -> dict:
    """Builds the native host library (module.so) and its C header
    (module.h) into `directory` when a C compiler and an ICD loader exist:
    {"library_sha256": ..., "library": file} or {"why": reason} when it
    was not built (the module then keeps the Python host code)."""
    from .native import build
    from .native.capi import c_header
    from .native.emit_host import emit_host_module
    if not build.available():
        return {"why": "no C compiler or no OpenCL ICD loader"}
    try:
        with stage("emit-host"):            # the host code's LLVM IR (native/emit_host.py)
            text, _cl, _kernels, host_parfors = emit_host_module(kernels,
                                                                 fastmath=options.fastmath)
        build.build_library(text, Path(directory) / LIB_FILE)   # llvm-* and link stages
    except (NotImplementedError, RuntimeError) as exc:
        return {"why": f"{type(exc).__name__}: {exc}"}
    (Path(directory) / HEADER_FILE).write_text(c_header(program))
    return {"library": LIB_FILE, "library_sha256": _sha256_file(Path(directory) / LIB_FILE),
            "host_parfors": host_parfors}


def kernels_for(program, options, target):
    """(host program, [kernel meta], the kernel IR spelled) for a checked
    program and a gpu target: every stage of codegen/stages.pipeline_for(
    target), then spell_kernels."""
    from ..stages import build_kernels
    kernels = build_kernels(program, options, target=target)
    with stage("emit-opencl"):              # OpenCL C and the Python host code
        return spell_kernels(kernels)


def spell_kernels(kernels: K.Module):
    """(host program, [kernel meta], kernels) of kernel IR that went through
    a gpu pipeline (its ParFor bodies fit kernels): the host code and the
    kernels (host.py, emit_cl.py); the meta are [name, [arg kinds],
    can_fail, group size or None, heap] per kernel."""
    from .host import translate
    hp = translate(kernels)
    meta = [[k.name, ["ptr" if a.is_ptr else a.type.value for a in k.args], k.can_fail,
             k.group_size, k.heap] for k in hp.kernels]
    return hp, meta, kernels


class OpenCLModule(LoadedModule):
    """The loaded module: one generated caller per entry (caller.py, the
    only call path), sharing the module's kernels and work-item heap."""

    def __init__(self, dev, namespace: dict, kernels: list, abi: dict, messages: list,
                 entries, source, device_arrays: bool = False):
        super().__init__(entries, source)
        from . import runtime
        self.dev = dev
        self.messages = messages
        launchers = [dev.launcher(*k) for k in kernels]
        self.heap = {"stride": runtime.HEAP_STRIDE}     # the work-item heaps of its kernels
        env = dict(dev=dev, kernels=launchers, heap=self.heap, messages=messages,
                   Call=runtime.Call, LOCK=runtime.LOCK, DevMem=runtime.DevMem,
                   grow_heap=runtime.grow_heap, HEAP_FULL=HEAP_FULL, error_from=error_from)
        self.callers = {name: make_caller(entries[name], spec, device_arrays,
                                          dict(env, fn=namespace["ENTRIES"][symbol(name)]))
                        for name, spec in abi.items() if name in entries}

    def call(self, name: str, canon_args: list):
        try:
            return self.callers[name](canon_args)
        except DeviceError:
            raise
        except MemoryError as exc:      # an allocation the device refused
            raise out_of_memory(self.dev.name, name, exc) from exc
        except Exception as exc:        # a driver's failure becomes a DeviceError (failures.py)
            if is_driver_error(exc):
                raise translate(exc, self.dev.name, f"running entry {name!r}") from exc
            raise


class OpenCLBackend(Backend):
    name = "opencl"
    description = ("OpenCL C kernels through pyopencl (PoCL on a CPU, or a GPU), "
                   "generated Python host code")
    runtime_options = ("device", "device_arrays")
    keeps_device_arrays = True

    def __init__(self, options=None, *, device: str | None = None, device_arrays: bool = False):
        from pyshark.wrapper.backend import Options
        super().__init__(options if options is not None else Options())
        self.device_spec = device or None
        self.device_arrays = bool(device_arrays)
        if self.device_spec:
            self.device()               # NoDevice now, listing the devices, when none matches

    def device(self):
        """The runtime.Device this backend runs on (NoDevice if none matches)."""
        from . import runtime
        return runtime.device(self.device_spec)

    def cache_salt(self) -> str:
        return repr(self.device().target())

    def close(self) -> None:
        from . import runtime
        if runtime.available(self.device_spec):
            self.device().release_held()

    @classmethod
    def is_available(cls) -> bool:
        from . import runtime
        return runtime.available()

    @classmethod
    def unavailable_reason(cls) -> str:
        """"" when a usable device exists, else the NoDevice message (each
        device and why it is not usable, and what to do)."""
        from . import runtime
        try:
            runtime.device()
            return ""
        except runtime.NoDevice as exc:
            return str(exc)

    @classmethod
    def outranks_cpu(cls) -> bool:
        """Whether this backend should come before "cpu" among the available
        ones: only on a GPU (PoCL runs OpenCL on the CPU, slower than the
        cpu backend)."""
        from . import runtime
        try:
            dev = runtime.device().dev
        except runtime.NoDevice:
            return False
        return bool(dev.type & runtime.device().cl.device_type.GPU)

    def compile(self, path: Path, source_text: str, directory: Path):
        program = translate_and_check(path, text=source_text)
        return program, self.compile_program(program, directory)

    def compile_program(self, program: ir.Program, directory: Path) -> dict:
        hp, meta, kernels = kernels_for(program, self.options, self.device().target())
        directory = Path(directory)
        (directory / CL_FILE).write_text(hp.cl_source)
        (directory / HOST_FILE).write_text(hp.py_source)
        (directory / KIR_FILE).write_text(K.pretty_module(kernels))
        # fastmath: reassociation, contraction and no signed zeros, but not
        # -cl-finite-math-only (isnan stays a real test, as on the cpu backend)
        options = ["-cl-unsafe-math-optimizations"] if self.options.fastmath else []
        files = {"kernels": CL_FILE, "host": HOST_FILE, "abi": ABI_FILE, "kir": KIR_FILE}
        native = compile_native(program, kernels, self.options, directory)
        if native.get("library"):
            files.update(library=LIB_FILE, header=HEADER_FILE)
        (directory / ABI_FILE).write_text(json.dumps(
            {"entries": abi_of(program), "messages": kernels.messages, "kernels": meta,
             "build_options": options, "host_parfors": hp.host_parfors,
             "cl_sha256": _sha256(hp.cl_source), "host_sha256": _sha256(hp.py_source),
             "native": native}))
        return files

    def load(self, directory: Path, manifest: dict, source_path: Path | None) -> LoadedModule:
        with stage("load"):                 # the OpenCL C build (PoCL's) is done here
            return self._load(directory, manifest)

    def _load(self, directory: Path, manifest: dict) -> LoadedModule:
        from .emit_cl import uses_f64
        directory = Path(directory)
        files = manifest["files"]
        abi = json.loads((directory / files["abi"]).read_text())
        cl_source = (directory / files["kernels"]).read_text()
        py_source = (directory / files["host"]).read_text()
        # never run host code that is not byte for byte the code we generated
        if _sha256(cl_source) != abi.get("cl_sha256") or _sha256(py_source) != abi.get("host_sha256"):
            raise ValueError(f"{directory} does not match its recorded hashes (corrupt artifact)")
        if files.get("library") and host_mode() == "native":
            dev = self.device()
            if abi["kernels"] and uses_f64(cl_source) and not dev.fp64:
                raise RuntimeError(
                    f"the OpenCL device {dev.name} has no double precision (cl_khr_fp64), and "
                    f"this module computes with f64 in kernels: use f32, or another device "
                    f"(PYOPENCL_CTX) or backend")
            from .native.module import NativeModule
            lib_path = directory / files["library"]
            if _sha256_file(lib_path) != abi.get("native", {}).get("library_sha256"):
                raise ValueError(f"{lib_path} does not match its recorded hash (corrupt artifact)")
            return NativeModule(lib_path, dev, abi["entries"], abi["messages"],
                                entries_from_manifest(manifest), manifest["source"],
                                self.device_arrays)
        dev = self.device()
        kernels = []
        if abi["kernels"]:
            if uses_f64(cl_source) and not dev.fp64:
                raise RuntimeError(
                    f"the OpenCL device {dev.name} has no double precision (cl_khr_fp64), and "
                    f"this module computes with f64 in kernels: use f32, or another device "
                    f"(PYOPENCL_CTX) or backend")
            with device_errors(dev.name, "building the module's kernels"):
                built = dev.program(cl_source, [k[0] for k in abi["kernels"]],
                                    abi["build_options"])
            kernels = []
            for (knl, wg), (kname, kinds, can_fail, group, *more) in zip(built, abi["kernels"]):
                heap = bool(more and more[0])
                if group is not None:
                    if group > dev.kernel_max_wg(knl):
                        raise RuntimeError(
                            f"kernel {kname} needs work-groups of {group}, more than the "
                            f"OpenCL device {dev.name} runs it with")
                    wg = group
                kernels.append((knl, wg, tuple(kinds), can_fail, heap, group is None))
        namespace: dict = {"__name__": f"pyshark_opencl_host_{abi['host_sha256'][:12]}"}
        exec(compile(py_source, str(directory / files["host"]), "exec"), namespace)
        return OpenCLModule(dev, namespace, kernels, abi["entries"], abi["messages"],
                            entries_from_manifest(manifest), manifest["source"],
                            self.device_arrays)
