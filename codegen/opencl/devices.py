"""Which OpenCL device: the platforms and their devices, which of them are
usable (probe.py: each builds and runs a tiny kernel once), the default one
(the first usable GPU, else the first usable device), and the device a spec
names ("P:D", "P", or a substring of "platform / device name"; runtime.py's
module doc). runtime.device() makes and keeps the Device it picks. A device
that cannot build is never chosen: asking for it, or for the default when
no device is usable, raises NoDevice (pyshark.errors.NoDeviceError) naming
each device, why it is not usable, and what to do. `report()` is the
list `pyshark setup-opencl` reads from a fresh process (`list_command()`)."""
from __future__ import annotations

import json
import os
from typing import Optional

from pyshark.errors import NoDeviceError

NoDevice = NoDeviceError

WHAT_TO_DO = ("install a CPU OpenCL runtime with `pyshark setup-opencl` (docs/opencl-backend.md, "
              "\"Getting a device\"), or use Wrapper(backend='cpu')")


def platforms() -> list:
    """[(platform, [devices])] of every OpenCL platform, in pyopencl's order
    (a platform whose device query fails has no devices)."""
    from . import icd
    icd.prepare()
    import pyopencl as cl
    try:
        plats = cl.get_platforms()
    except cl.Error as exc:             # the loader found no platform at all
        if "PLATFORM_NOT_FOUND" in str(exc) or getattr(exc, "code", None) == -1001:
            return []
        raise
    out = []
    for p in plats:
        try:
            out.append((p, p.get_devices()))
        except cl.Error:
            out.append((p, []))
    return out


_verdicts: dict = {}        # id(plats) -> verdicts, for the lists this process made


def verdicts(plats: list) -> dict:
    """{(pi, di): probe.Verdict} for every device of `plats`."""
    from . import probe
    key = tuple(d.int_ptr for _, devs in plats for d in devs)
    found = _verdicts.get(key)
    if found is None:
        found = _verdicts[key] = probe.verdicts(plats)
    return found


def default_index(plats: list) -> Optional[tuple]:
    """(platform index, device index) of the device chosen without a spec
    and without PYOPENCL_CTX: the first usable GPU, else the first usable
    device; None when none is usable."""
    import pyopencl as cl
    ok = verdicts(plats)
    first = None
    for pi, (_, devs) in enumerate(plats):
        for di, d in enumerate(devs):
            if not ok[(pi, di)].usable:
                continue
            if d.type & cl.device_type.GPU:
                return (pi, di)
            if first is None:
                first = (pi, di)
    return first


def _usable_or_raise(plats: list, at: tuple, dev):
    v = verdicts(plats)[at]
    if not v.usable:
        p = plats[at[0]][0]
        raise NoDevice(f"the OpenCL device {at[0]}:{at[1]} {p.name} / {dev.name} is not usable: "
                       f"{v.reason}; {WHAT_TO_DO}", device=f"{p.name} / {dev.name}")
    return dev


def _find(spec: str):
    """The cl.Device a spec names (see the module doc); NoDevice when none
    matches or the one that does is not usable."""
    plats = platforms()
    text = spec.strip()
    parts = text.split(":")
    if all(p.strip().isdigit() for p in parts) and len(parts) in (1, 2):
        pi = int(parts[0])
        di = int(parts[1]) if len(parts) == 2 else 0
        if pi < len(plats) and di < len(plats[pi][1]):
            return _usable_or_raise(plats, (pi, di), plats[pi][1][di])
        raise NoDevice(f"no OpenCL device {text!r} (platform:device index); "
                       f"devices: {listing(plats)}")
    low = text.lower()
    for pi, (p, devs) in enumerate(plats):
        for di, d in enumerate(devs):
            if low in f"{p.name} / {d.name}".lower():
                return _usable_or_raise(plats, (pi, di), d)
    raise NoDevice(f"no OpenCL device matches {text!r}; devices: {listing(plats)}")


def listing(plats: list) -> str:
    """Every device, "P:D platform / name" and whether it is usable."""
    ok = verdicts(plats)
    items = [f"{pi}:{di} {p.name} / {d.name} "
             f"({'usable' if ok[(pi, di)].usable else 'not usable: ' + ok[(pi, di)].reason})"
             for pi, (p, devs) in enumerate(plats) for di, d in enumerate(devs)]
    return "; ".join(items) or "none"


def no_usable_device(plats: list) -> NoDevice:
    """The error for "no device is usable here", naming each device and why."""
    from . import icd
    if not any(devs for _, devs in plats):
        return NoDevice(f"no OpenCL device found (the OpenCL loader read {icd.describe()}); "
                        f"{WHAT_TO_DO}")
    return NoDevice(f"no usable OpenCL device: {listing(plats)}; {WHAT_TO_DO}")


def choose_device(spec: Optional[str]):
    import pyopencl as cl
    if spec:
        return _find(spec)
    if os.environ.get("PYOPENCL_CTX"):
        plats = platforms()
        ctx = cl.create_some_context(interactive=False)
        dev = ctx.devices[0]
        at = next(((pi, di) for pi, (_, devs) in enumerate(plats) for di, d in enumerate(devs)
                   if d.int_ptr == dev.int_ptr), None)
        return dev if at is None else _usable_or_raise(plats, at, dev)
    plats = platforms()
    at = default_index(plats)
    if at is None:
        raise no_usable_device(plats)
    return plats[at[0]][1][at[1]]


def report() -> list:
    """[{"where": "P:D", "platform", "device", "type", "usable", "reason"}]
    for every device this process sees (what list_command's child prints)."""
    import pyopencl as cl
    plats = platforms()
    ok = verdicts(plats)
    out = []
    for pi, (p, devs) in enumerate(plats):
        for di, d in enumerate(devs):
            kind = ("GPU" if d.type & cl.device_type.GPU else
                    "CPU" if d.type & cl.device_type.CPU else "other")
            out.append({"where": f"{pi}:{di}", "platform": p.name.strip(),
                        "device": d.name.strip(), "type": kind,
                        "usable": ok[(pi, di)].usable, "reason": ok[(pi, di)].reason})
    return out


def list_command() -> list:
    """The command line of a child process that prints report() as one JSON
    line {"devices": [...]} (a fresh process sees runtimes installed after
    this one started: pyshark setup-opencl)."""
    from .probe import child_command
    return child_command(module=__name__)


def _main(argv: list) -> int:
    """list_command's child side."""
    try:
        print(json.dumps({"devices": report()}), flush=True)
    except Exception as exc:
        print(json.dumps({"devices": [], "error": f"{type(exc).__name__}: {exc}"}))
    return 0
