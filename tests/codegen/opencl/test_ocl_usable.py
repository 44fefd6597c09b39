"""A device that cannot build is never offered; no driver failure reaches a
user raw (codegen/opencl/probe.py, devices.py, failures.py, icd.py).

The failing devices here are real: PoCL with POCL_EXTRA_BUILD_FLAGS naming a
macro that breaks its own headers fails every clBuildProgram with a log, as
the PoCL wheel does on CPUs its LLVM does not know; an empty OCL_ICD_VENDORS
folder hides every runtime. Each runs in a child process, since the ICD
loader reads its environment once per process.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pyshark.wrapper import available_backends

REPO = Path(__file__).resolve().parents[3]
SAXPY = REPO / "examples" / "saxpy.py"
BROKEN_POCL = {"POCL_EXTRA_BUILD_FLAGS": "-Dfloat=nonsense"}


def _run(args: list, tmp_path, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYSHARK_CACHE_DIR=str(tmp_path / "cache"), **env)
    full.pop("PYOPENCL_CTX", None)
    return subprocess.run(args, capture_output=True, text=True, env=full, timeout=600,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)


def _py(code: str, tmp_path, **env) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-c", textwrap.dedent(code)], tmp_path, **env)


def _cli(tmp_path, *args, **env) -> subprocess.CompletedProcess:
    return _py(f"import sys; from pyshark.cli import main; sys.exit(main({list(args)!r}))",
               tmp_path, **env)


def _default_is_pocl() -> bool:
    if "opencl" not in available_backends():
        return False
    from pyshark.codegen.opencl import runtime
    return "Portable Computing Language" in runtime.device().name


def test_ci_has_a_usable_opencl_device():
    """Under CI the opencl conformance and differential suites must run on a
    real device: no usable device fails the run instead of skipping it."""
    if "opencl" not in available_backends():
        from pyshark.wrapper.registry import unavailable_reason
        why = unavailable_reason("opencl")
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI needs a usable OpenCL device (scripts/test.sh runs "
                        f"`pyshark setup-opencl`): {why}")
        pytest.skip(f"no usable OpenCL device here: {why}")
    from pyshark.codegen.opencl import devices, runtime
    plats = devices.platforms()
    dev = runtime.device()
    at = next((pi, di) for pi, (_, ds) in enumerate(plats) for di, d in enumerate(ds)
              if d.int_ptr == dev.dev.int_ptr)
    assert devices.verdicts(plats)[at].usable


def test_hidden_runtimes_skip_opencl_and_keep_the_rest(tmp_path):
    empty = tmp_path / "no-vendors"
    empty.mkdir()
    env = {"OCL_ICD_VENDORS": str(empty)}
    r = _py("""
        from pyshark import Wrapper
        from pyshark.wrapper import available_backends
        print(available_backends())
        try:
            Wrapper(backend="opencl")
        except Exception as exc:
            print(type(exc).__name__, "|", exc)
    """, tmp_path, **env)
    assert r.returncode == 0, r.stderr
    backends, error = r.stdout.strip().splitlines()
    assert "opencl" not in backends and "cpu" in backends
    assert error.startswith("BackendUnavailable |")
    assert "no OpenCL device found" in error and str(empty) in error
    assert "pyshark setup-opencl" in error and "backend='cpu'" in error

    r = _cli(tmp_path, "test", str(SAXPY), **env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SKIP backend opencl: no OpenCL device found" in r.stdout
    assert " 0 failed" in r.stdout

    r = _run([sys.executable, str(REPO / "examples" / "demo.py"), "--speed-n", "0"],
             tmp_path, **env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SKIP backend opencl" in r.stdout and "on cpu" in r.stdout
    assert r.stdout.strip().endswith("demo OK")

    r = _cli(tmp_path, "devices", **env)
    assert r.returncode == 0 and "no OpenCL devices" in r.stdout


@pytest.mark.skipif(not _default_is_pocl(), reason="needs PoCL to make a device that cannot build")
def test_a_device_that_cannot_build_is_never_offered(tmp_path):
    r = _py("""
        from pyshark import Wrapper
        from pyshark.wrapper import available_backends
        from pyshark.codegen.opencl import runtime
        print(available_backends())
        for spec in (None, "0:0"):
            try:
                Wrapper(backend="opencl", device=spec)
            except Exception as exc:
                print(type(exc).__name__, "|", exc)
    """, tmp_path, **BROKEN_POCL)
    assert r.returncode == 0, r.stderr
    backends, default, named = r.stdout.strip().splitlines()
    assert "opencl" not in backends
    for line in (default, named):
        assert "Portable Computing Language" in line and "cannot build OpenCL programs" in line
        assert "unknown type name 'nonsense'" in line and "pyshark setup-opencl" in line
    assert default.startswith("BackendUnavailable |") and named.startswith("BackendUnavailable |")

    r = _cli(tmp_path, "devices", **BROKEN_POCL)
    assert r.returncode == 0
    assert "not usable: cannot build OpenCL programs (BUILD_PROGRAM_FAILURE" in r.stdout
    assert "* 0:0" not in r.stdout              # never the default

    r = _cli(tmp_path, "test", str(SAXPY), **BROKEN_POCL)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SKIP backend opencl: no usable OpenCL device" in r.stdout


@pytest.mark.skipif("opencl" not in available_backends(), reason="no usable OpenCL device")
def test_verdicts_are_cached_per_device_and_driver(tmp_path):
    """The probe runs once: a verdict in the cache file is what a later
    process believes (here one the test wrote, so no probe could give it)."""
    r = _cli(tmp_path, "devices")
    assert r.returncode == 0 and ": usable" in r.stdout
    cache = tmp_path / "cache" / "opencl-probe.json"
    data = json.loads(cache.read_text())
    assert data and all(v["usable"] for v in data.values())
    for v in data.values():
        v.update(usable=False, reason="marked unusable by the test")
    cache.write_text(json.dumps(data))
    r = _cli(tmp_path, "devices")
    assert "not usable: marked unusable by the test" in r.stdout
    r = _cli(tmp_path, "devices", PYSHARK_OPENCL_PROBE="again")
    assert ": usable" in r.stdout


@pytest.mark.skipif("opencl" not in available_backends(), reason="no usable OpenCL device")
def test_setup_opencl_reads_the_devices_from_a_fresh_process():
    """`pyshark setup-opencl` judges a runtime it just installed by what a
    child process lists (devices.list_command): the devices this process
    sees, with the same verdicts."""
    from pyshark.codegen.opencl import devices, runtime
    from pyshark.setup_opencl import list_devices
    listed = list_devices()
    assert listed == devices.report()
    dev = runtime.device().dev
    mine = (dev.platform.name.strip(), dev.name.strip())
    assert any(d["usable"] and (d["platform"], d["device"]) == mine for d in listed)
    assert all(set(d) == {"where", "platform", "device", "type", "usable", "reason"}
               for d in listed)


@pytest.mark.skipif("opencl" not in available_backends(), reason="no usable OpenCL device")
def test_a_build_failure_is_a_device_build_error_with_the_log():
    from pyshark.codegen.opencl import runtime
    from pyshark.errors import DeviceBuildError, DeviceError
    dev = runtime.device()
    with pytest.raises(DeviceBuildError) as info:
        dev.program("__kernel void broken(__global float *x) { x[0] = undefined_name; }",
                    ["broken"])
    err = info.value
    assert isinstance(err, DeviceError) and err.device == dev.name
    assert "undefined_name" in err.log and "the driver's build log" in str(err)


@pytest.mark.skipif("opencl" not in available_backends(), reason="no usable OpenCL device")
def test_out_of_device_memory_is_a_pyshark_memory_error(tmp_path):
    from pyshark import Wrapper
    from pyshark.errors import DeviceOutOfMemory
    src = tmp_path / "big.py"
    src.write_text(textwrap.dedent("""
        import pyshark.prelude as ps

        @ps.entry
        def big(n: ps.i64) -> ps.Array[ps.f32]:
            return ps.replicate(n, ps.f32(1.0))
    """))
    w = Wrapper("opencl", cache_dir=tmp_path / "c")
    w.add_source_file(src)
    w.compile_and_load()
    with pytest.raises(DeviceOutOfMemory) as info:
        w.big(1 << 45)
    assert isinstance(info.value, MemoryError)
    assert w.big(3).tolist() == [1.0, 1.0, 1.0]            # still usable
    assert np.asarray(w.big(0)).shape == (0,)


def test_driver_errors_are_translated_by_status():
    """failures.translate picks the class from the OpenCL status code of a
    real pyopencl exception."""
    pytest.importorskip("pyopencl")
    import pyopencl as cl
    from pyshark.codegen.opencl.failures import translate
    from pyshark.errors import DeviceBuildError, DeviceError, DeviceOutOfMemory

    def err(cls, code):
        return cls(cl._cl._ErrorRecord("clSomething failed", code, "the driver's words"))

    assert isinstance(translate(err(cl.MemoryError, -4), "dev", "x"), DeviceOutOfMemory)
    assert isinstance(translate(err(cl.RuntimeError, -5), "dev", "x"), DeviceOutOfMemory)
    assert isinstance(translate(err(cl.RuntimeError, -11), "dev", "x"), DeviceBuildError)
    lost = translate(err(cl.LogicError, -2), "dev", "running entry 'f'")
    assert type(lost) is DeviceError and "stopped answering" in str(lost)
    assert "running entry 'f'" in str(lost) and "dev" in str(lost)
