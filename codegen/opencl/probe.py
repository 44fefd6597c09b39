"""Which OpenCL devices can really be used: each one builds and runs a tiny
kernel before PyShark offers it.

A driver can list a device and still fail every program (PoCL 3.0 from the
pocl-binary-distribution wheel on a CPU its LLVM 14 does not know: "unknown
target CPU 'generic'", docs/opencl-backend.md), and a broken driver can crash
the process that builds. So the probe runs in a child process, one device at
a time (probe.child_command, with this process's sys.path): it builds a
kernel that uses what PyShark's kernels use (local memory, a barrier, a
32-bit atomic), runs it on an odd-sized range and checks every result. A
device whose child fails, crashes or hangs is not usable, with the reason.

Verdicts are cached on disk (`opencl-probe.json` in the compile cache
folder, wrapper/artifacts.default_cache_dir) under a fingerprint of the
platform, the device, the driver version and, for CPU devices, the host CPU
(one cache folder may serve machines whose CPUs differ while the device name
does not: PoCL names both Zen 4 and Zen 5 "pthread-AMD EPYC"). Delete the
file, or set PYSHARK_OPENCL_PROBE=again, to probe again.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: bump when the probe kernel or its checks change (old verdicts are then stale)
PROBE_VERSION = 1
#: seconds one device's probe may take (a first PoCL build takes about 1 s)
TIMEOUT = 120

PROBE_SOURCE = r"""
__kernel void pyshark_probe(__global const float *xs, __global int *out,
                            __global int *count, const int n) {
    __local int part[64];
    int i = get_global_id(0);
    int l = get_local_id(0);
    part[l] = i < n ? (int)(xs[i] * 2.0f) : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) {
        out[i] = part[l] + part[(l + 1) % get_local_size(0)];
        atomic_inc(count);
    }
}
"""
PROBE_N = 1000          # not a multiple of the work-group size
PROBE_WG = 64


@dataclass(frozen=True)
class Verdict:
    usable: bool
    reason: str = ""        # why not, when not usable


def _host_cpu() -> str:
    """The host CPU's identity (vendor, family, model, name) from /proc/cpuinfo."""
    keys = ("vendor_id", "cpu family", "model", "model name")
    found: dict = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k = k.strip()
                if k in keys and k not in found:
                    found[k] = v.strip()
                if len(found) == len(keys):
                    break
    except OSError:
        import platform
        return platform.processor() or platform.machine()
    return "/".join(found.get(k, "?") for k in keys)


def fingerprint(platform, device) -> str:
    """What a verdict is cached under (see the module doc)."""
    import pyopencl as cl
    parts = [platform.name, platform.version, device.name, device.driver_version,
             device.version, str(PROBE_VERSION)]
    if device.type & cl.device_type.CPU:
        parts.append(_host_cpu())
    # the runtimes' own settings can break a device (POCL_EXTRA_BUILD_FLAGS, ...)
    parts += [f"{k}={v}" for k, v in sorted(os.environ.items())
              if k.startswith(("POCL_", "CL_CONFIG_"))]
    return " | ".join(p.strip() for p in parts)


def _cache_file() -> Path:
    from pyshark.wrapper.artifacts import default_cache_dir
    return default_cache_dir() / "opencl-probe.json"


def _read_cache() -> dict:
    if os.environ.get("PYSHARK_OPENCL_PROBE") == "again":
        return {}
    try:
        data = json.loads(_cache_file().read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(data: dict) -> None:
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass                    # an unwritable cache only costs a probe next time


def verdicts(plats: list) -> dict:
    """{(platform index, device index): Verdict} for every device of
    `plats` (devices.platforms()), probing those without a cached verdict."""
    cache = _read_cache()
    out, changed = {}, False
    for pi, (p, devs) in enumerate(plats):
        for di, d in enumerate(devs):
            try:
                key = fingerprint(p, d)
            except Exception as exc:        # the driver cannot even describe it
                out[(pi, di)] = Verdict(False, f"the driver cannot describe the device ({exc})")
                continue
            found = cache.get(key)
            if found is None:
                found = _probe_in_child(pi, di, key)
                cache[key] = found
                changed = True
            out[(pi, di)] = Verdict(bool(found.get("usable")), str(found.get("reason", "")))
    if changed:
        _write_cache(cache)
    return out


def child_command(*args: str, module: str = __name__) -> list:
    """The command line that runs `module`'s _main(args) (this module's, or
    devices.py's listing) in a child with this process's own sys.path (-P:
    not the child's working folder, where a source checkout's pyshark/
    would shadow the installed package)."""
    code = (f"import sys; sys.path[:0] = {list(sys.path)!r}; "
            f"from {module} import _main; sys.exit(_main(sys.argv[1:]))")
    return [sys.executable, "-P", "-c", code, *args]


def _probe_in_child(pi: int, di: int, key: str) -> dict:
    cmd = child_command(f"{pi}:{di}", key)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"usable": False, "reason": f"building and running a test kernel took over "
                                           f"{TIMEOUT} s"}
    except OSError as exc:
        return {"usable": False, "reason": f"the probe could not start ({exc})"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
           else f"exited with status {proc.returncode}")
    return {"usable": False, "reason": f"the driver crashed building or running a test kernel "
                                       f"(the probe {how}: {' / '.join(tail) or 'no output'})"}


def _first_lines(text: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return " / ".join(lines[:n])[:400]


def _build_failure(exc, prg, device) -> str:
    """The status and the first error line of the driver's build log."""
    code = getattr(exc, "what", None)
    status = code.routine() + ": " + str(code.code()) if code is not None else ""
    name = str(exc).split(" - ")[0].split(":")[-1].strip() or type(exc).__name__
    try:
        import pyopencl as cl
        log = prg.get_build_info(device, cl.program_build_info.LOG)
    except Exception:
        log = ""
    errors = [ln.strip() for ln in str(log).splitlines() if "error" in ln.lower()]
    detail = errors[0] if errors else _first_lines(log or exc, 1)
    return f"{name}: {detail}"[:400] if detail else (name or status)


def probe_device(device) -> dict:
    """Builds and runs the probe kernel on `device` in this process:
    {"usable": bool, "reason": str}."""
    import numpy as np
    import pyopencl as cl
    try:
        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx)
    except Exception as exc:
        return {"usable": False, "reason": f"cannot create a context ({_first_lines(exc)})"}
    prg = cl.Program(ctx, PROBE_SOURCE)
    try:
        prg.build()
    except Exception as exc:
        return {"usable": False, "reason": f"cannot build OpenCL programs "
                                           f"({_build_failure(exc, prg, device)})"}
    try:
        xs = np.arange(PROBE_N, dtype=np.float32) * np.float32(0.5)
        mf = cl.mem_flags
        xs_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=xs)
        out = np.zeros(PROBE_N, np.int32)
        out_buf = cl.Buffer(ctx, mf.WRITE_ONLY, out.nbytes)
        count = np.zeros(1, np.int32)
        count_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=count)
        size = -(-PROBE_N // PROBE_WG) * PROBE_WG
        prg.pyshark_probe(queue, (size,), (PROBE_WG,), xs_buf, out_buf, count_buf,
                          np.int32(PROBE_N))
        cl.enqueue_copy(queue, out, out_buf)
        cl.enqueue_copy(queue, count, count_buf)
        queue.finish()
    except Exception as exc:
        return {"usable": False, "reason": f"cannot run a test kernel ({_first_lines(exc)})"}
    part = np.zeros(size, np.int32)
    part[:PROBE_N] = (xs * np.float32(2.0)).astype(np.int32)
    groups = part.reshape(-1, PROBE_WG)
    want = (groups + np.roll(groups, -1, axis=1)).reshape(-1)[:PROBE_N]
    if not np.array_equal(out, want) or int(count[0]) != PROBE_N:
        return {"usable": False, "reason": "a test kernel computed wrong results"}
    return {"usable": True, "reason": ""}


def _main(argv: list) -> int:
    """Child side: probe device P:D if it still has fingerprint KEY."""
    from . import icd
    icd.prepare()
    import pyopencl as cl
    where, key = argv[0], argv[1]
    pi, di = (int(x) for x in where.split(":"))
    try:
        plat = cl.get_platforms()[pi]
        dev = plat.get_devices()[di]
        same = fingerprint(plat, dev) == key
    except Exception as exc:
        print(json.dumps({"usable": False, "reason": f"the device went away ({_first_lines(exc)})"}))
        return 0
    if not same:
        print(json.dumps({"usable": False, "reason": "the device list changed while probing"}))
        return 0
    print(json.dumps(probe_device(dev)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
