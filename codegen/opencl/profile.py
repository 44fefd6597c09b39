"""Opt-in per-kernel device times: `PYSHARK_OPENCL_PROFILE=1` gives every
device's queue OpenCL event profiling (clGetEventProfilingInfo, START to END
of each launch) and prints, at exit, one line per kernel: launches, total
and mean device time, work-items, sorted by total. `=path` writes the table
to that file instead of stderr.

Why: to see which of a program's kernels take the device's time (the
question behind every GPU tuning decision) without a vendor profiler, which
the GPU machine does not offer through OpenCL. Profiling serialises nothing
(the queue is in order already) but costs each launch an event, so it is
off by default.
"""
from __future__ import annotations

import atexit
import os
import sys

_ENV = "PYSHARK_OPENCL_PROFILE"
_events: list = []          # (kernel name, work-items, pyopencl event)
_registered = False


def enabled() -> bool:
    return os.environ.get(_ENV, "0") not in ("", "0")


def record(knl, n: int, event) -> None:
    """Keeps a launch's event; the first record registers the exit report."""
    global _registered
    if not _registered:
        atexit.register(report)
        _registered = True
    _events.append((knl.function_name, n, event))
    if len(_events) >= 100_000:
        _fold()


_totals: dict = {}          # name -> [launches, ns, work-items]


def _fold() -> None:
    """Reads finished events into the totals (bounds the events kept)."""
    for name, n, ev in _events:
        ev.wait()
        t = _totals.setdefault(name, [0, 0, 0])
        t[0] += 1
        t[1] += ev.profile.end - ev.profile.start
        t[2] += n
    _events.clear()


def table() -> str:
    """The per-kernel table so far (waits for the launches recorded)."""
    _fold()
    rows = sorted(_totals.items(), key=lambda kv: -kv[1][1])
    total = sum(t[1] for _, t in rows) or 1
    lines = [f"{'kernel':40s} {'launches':>9s} {'total ms':>10s} {'%':>6s} "
             f"{'mean us':>9s} {'items/launch':>13s}"]
    for name, (k, ns, items) in rows:
        lines.append(f"{name[:40]:40s} {k:9d} {ns / 1e6:10.3f} {100 * ns / total:6.1f} "
                     f"{ns / k / 1e3:9.1f} {items // k:13d}")
    lines.append(f"{'(all)':40s} {sum(t[0] for _, t in rows):9d} {total / 1e6:10.3f}")
    return "\n".join(lines)


def report() -> None:
    try:
        text = table()
    except Exception as e:      # the context may be gone at exit
        text = f"pyshark opencl profile: unavailable ({e})"
    dest = os.environ.get(_ENV, "1")
    if dest not in ("1", "yes", "true"):
        with open(dest, "w") as f:
            f.write(text + "\n")
    else:
        print("pyshark opencl profile (device time per kernel):\n" + text, file=sys.stderr)
