"""Which OpenCL device: the platforms and their devices, the default one
(the first GPU, else the first device), and the device a spec names
("P:D", "P", or a substring of "platform / device name"; runtime.py's
module doc). runtime.device() makes and keeps the Device it picks."""
from __future__ import annotations

import os
from typing import Optional


class NoDevice(RuntimeError):
    """No OpenCL device can be used here (or none matches a device spec)."""


def platforms() -> list:
    """[(platform, [devices])] of every OpenCL platform, in pyopencl's order
    (a platform whose device query fails has no devices)."""
    import pyopencl as cl
    out = []
    for p in cl.get_platforms():
        try:
            out.append((p, p.get_devices()))
        except cl.Error:
            out.append((p, []))
    return out


def default_index(plats: list) -> Optional[tuple]:
    """(platform index, device index) of the device chosen without a spec
    and without PYOPENCL_CTX: the first GPU, else the first device."""
    import pyopencl as cl
    first = None
    for pi, (_, devs) in enumerate(plats):
        for di, d in enumerate(devs):
            if d.type & cl.device_type.GPU:
                return (pi, di)
            if first is None:
                first = (pi, di)
    return first


def _find(spec: str):
    """The cl.Device a spec names (see the module doc)."""
    plats = platforms()
    text = spec.strip()
    parts = text.split(":")
    if all(p.strip().isdigit() for p in parts) and len(parts) in (1, 2):
        pi = int(parts[0])
        di = int(parts[1]) if len(parts) == 2 else 0
        if pi < len(plats) and di < len(plats[pi][1]):
            return plats[pi][1][di]
        raise NoDevice(f"no OpenCL device {text!r} (platform:device index); "
                       f"devices: {_listing(plats)}")
    low = text.lower()
    for p, devs in plats:
        for d in devs:
            if low in f"{p.name} / {d.name}".lower():
                return d
    raise NoDevice(f"no OpenCL device matches {text!r}; devices: {_listing(plats)}")


def _listing(plats: list) -> str:
    items = [f"{pi}:{di} {p.name} / {d.name}" for pi, (p, devs) in enumerate(plats)
             for di, d in enumerate(devs)]
    return "; ".join(items) or "none"


def _choose(spec: Optional[str]):
    import pyopencl as cl
    if spec:
        return _find(spec)
    if os.environ.get("PYOPENCL_CTX"):
        ctx = cl.create_some_context(interactive=False)
        return ctx.devices[0]
    plats = platforms()
    at = default_index(plats)
    if at is None:
        raise NoDevice("no OpenCL device found")
    return plats[at[0]][1][at[1]]
