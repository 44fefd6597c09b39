"""`pyshark setup-opencl`: give this machine a working OpenCL CPU device.

CPU OpenCL runtimes do not all build on every CPU: the PoCL wheel
(pocl-binary-distribution 3.0, LLVM 14) fails every program on CPUs its
LLVM does not know (AMD Zen 5: "unknown target CPU 'generic'"), while
Debian's PoCL 3.1 and Intel's CPU runtime build there (measured;
docs/opencl-backend.md, "Getting a device"). So nothing is assumed: each candidate is installed, then a
fresh process probes it (codegen/opencl/probe.py builds and runs a kernel),
and the first that works is kept. Cheapest first:

1. what is already here (a runtime in /etc/OpenCL/vendors, one installed
   earlier);
2. the PoCL wheel, `pip install pocl-binary-distribution` (about 60 MB; the
   pyopencl wheel's loader finds it by itself); removed again when it
   cannot build here, so that no process loads a runtime that cannot work;
3. Debian's PoCL, `apt-get install pocl-opencl-icd` (about 150 MB; only as
   root on a system with apt-get; it registers in /etc/OpenCL/vendors);
4. Intel's CPU runtime from PyPI, `pip install intel-opencl-rt
   intel-cmplr-lib-rt` (about 900 MB), registered for PyShark by an ICD
   file in <sys.prefix>/share/pyshark/OpenCL/vendors (codegen/opencl/icd.py).

PYSHARK_OPENCL_RUNTIME=pocl-wheel|debian-pocl|intel tries only that one
(after what is already here unless --force). Exit status 0 when a usable
CPU device exists at the end, 1 when none could be had (the cpu backend
still works; the message says what to do), 2 for usage errors.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

CANDIDATES = ("pocl-wheel", "debian-pocl", "intel")


def _say(text: str) -> None:
    print(f"pyshark setup-opencl: {text}", flush=True)


def list_devices() -> list:
    """Every OpenCL device a fresh process sees, with its probe verdict."""
    from pyshark.codegen.opencl.devices import list_command
    cmd = list_command()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        _say(f"listing the devices failed ({exc})")
        return []
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line).get("devices", [])
            except ValueError:
                break
    tail = " / ".join((proc.stderr or "").strip().splitlines()[-2:])
    _say(f"listing the devices failed (status {proc.returncode}: {tail or 'no output'})")
    return []


def usable_cpu(devices: list) -> dict | None:
    return next((d for d in devices if d["usable"] and d["type"] == "CPU"), None)


def _run(cmd: list, env: dict | None = None) -> bool:
    """Runs an install command, showing its last lines when it fails."""
    _say("running " + " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              env={**os.environ, **(env or {})}, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        _say(f"  failed: {exc}")
        return False
    if proc.returncode != 0:
        tail = "\n    ".join((proc.stderr or proc.stdout).strip().splitlines()[-4:])
        _say(f"  failed (status {proc.returncode}):\n    {tail}")
        return False
    return True


def _pip(*args: str) -> list:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]


# -- the candidates: (applicable? why not), install, undo ---------------------------


def _pocl_wheel_installed() -> bool:
    from importlib.util import find_spec
    return find_spec("pocl_binary_distribution") is not None


def _apt_ok() -> str:
    if not shutil.which("apt-get"):
        return "no apt-get on this system"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "needs root (run: sudo apt-get install pocl-opencl-icd)"
    return ""


def install_pocl_wheel() -> bool:
    return _run(_pip("install", "pocl-binary-distribution>=3.0"))


def undo_pocl_wheel() -> None:
    if _pocl_wheel_installed():
        _run(_pip("uninstall", "-y", "pocl-binary-distribution"))


def install_debian_pocl() -> bool:
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "pocl-opencl-icd"]
    return _run(cmd, env) or (_run(["apt-get", "update", "-q"], env) and _run(cmd, env))


def install_intel() -> bool:
    from pyshark.codegen.opencl.icd import managed_vendors
    if not _run(_pip("install", "intel-opencl-rt", "intel-cmplr-lib-rt")):
        return False
    lib = Path(sys.prefix) / "lib" / "libintelocl.so"
    if not lib.exists():
        _say(f"  intel-opencl-rt installed no {lib}")
        return False
    folder = managed_vendors()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "intel-cpu.icd").write_text(f"{lib}\n")
    return True


def undo_intel() -> None:
    from pyshark.codegen.opencl.icd import managed_vendors
    (managed_vendors() / "intel-cpu.icd").unlink(missing_ok=True)


STEPS = {
    "pocl-wheel": (lambda: "", install_pocl_wheel, undo_pocl_wheel),
    "debian-pocl": (_apt_ok, install_debian_pocl, lambda: None),
    "intel": (lambda: "", install_intel, undo_intel),
}


def setup(only: str | None = None, force: bool = False) -> int:
    devices = [] if force else list_devices()
    found = usable_cpu(devices)
    if found:
        _say(f"ready: {found['platform']} / {found['device']} builds and runs kernels "
             f"(device {found['where']})")
        return 0
    for d in devices:
        if d["type"] == "CPU":
            _say(f"{d['platform']} / {d['device']} is not usable: {d['reason']}")
    why_not = []
    for name in ([only] if only else CANDIDATES):
        applicable, install, undo = STEPS[name]
        reason = applicable()
        if reason:
            why_not.append(f"{name}: {reason}")
            continue
        if not install():
            why_not.append(f"{name}: the install failed")
            continue
        devices = list_devices()
        found = usable_cpu(devices)
        if found:
            _say(f"ready: {found['platform']} / {found['device']} ({name}) builds and runs "
                 f"kernels (device {found['where']})")
            return 0
        reasons = "; ".join(f"{d['platform']} / {d['device']}: {d['reason']}"
                            for d in devices if d["type"] == "CPU" and not d["usable"])
        why_not.append(f"{name}: installed, but {reasons or 'it shows no CPU device'}")
        undo()
    _say("no OpenCL CPU runtime works here:\n  " + "\n  ".join(why_not) +
         "\n  PyShark's cpu backend works without OpenCL. To get an OpenCL CPU device on "
         "another system, install PoCL (your distribution's pocl package) or Intel's CPU "
         "runtime, then run `pyshark devices`.")
    return 1


def main(argv: list | None = None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="pyshark setup-opencl",
                                description=__doc__.splitlines()[0])
    p.add_argument("--runtime", choices=CANDIDATES,
                   default=os.environ.get("PYSHARK_OPENCL_RUNTIME") or None,
                   help="try only this runtime (default: each in turn, cheapest first)")
    p.add_argument("--force", action="store_true",
                   help="install even when a usable CPU device exists already")
    args = p.parse_args(argv)
    return setup(args.runtime, args.force)


if __name__ == "__main__":
    sys.exit(main())
