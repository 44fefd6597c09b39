"""Ctrl-C on the opencl backend (issue 15, item 9), on the test device.

The host code is Python, so Ctrl-C between launches raises there; a wait
for the device (waits.py) is left at once too, while the kernel it waited
for runs on. The next call still works: its commands run after the
interrupted call's on the same queue. Run in a child process, as in
tests/codegen/cpu/test_interrupt.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from pyshark import Wrapper

pytestmark = pytest.mark.skipif(
    "opencl" not in __import__("pyshark.wrapper", fromlist=["x"]).available_backends()
    or not sys.platform.startswith("linux"),
    reason="opencl backend unavailable (no OpenCL device), or not Linux")

SRC = """
import pyshark.prelude as ps

@ps.entry
def heavy_map(xs: ps.Array[ps.f32], m: int) -> ps.Array[ps.f32]:
    def f(x: ps.f32) -> ps.f32:
        acc = x
        for k in range(m):
            acc = acc * ps.f32(0.999) + ps.f32(0.001)
        return acc
    return ps.map(f, xs)

@ps.entry
def steps(xs: ps.Array[ps.f32], n: int) -> ps.Array[ps.f32]:
    g = ps.copy(xs)
    for t in range(n):
        g = ps.map(lambda x: x * ps.f32(0.5) + ps.f32(1.0), g)
    return g
"""

CHILD = r"""
import json, os, signal, sys, threading, time
import numpy as np
from pyshark import Wrapper

w = Wrapper("opencl", cache_dir=sys.argv[2])
w.add_source_file(sys.argv[1])
w.compile_and_load()
small = np.array([0.5, 2.0, -1.0], np.float32)
checks = lambda: [w.heavy_map(small, 7).tolist(), w.steps(small, 3).tolist()]
before = checks()

def interrupted(call, delay=0.3):
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    try:
        call()
        return "finished"
    except KeyboardInterrupt:
        return round(time.perf_counter() - t0 - delay, 3)
    finally:
        timer.join()

# one kernel of about 4 s: the wait for it ends at Ctrl-C, the kernel runs on
xs = np.linspace(0.0, 1.0, 4096).astype(np.float32)
t0 = time.perf_counter()
w.heavy_map(xs, 20_000)
m = max(20_000, int(20_000 * 4.0 / (time.perf_counter() - t0)))
after = interrupted(lambda: w.heavy_map(xs, m))
t0 = time.perf_counter()
ok = checks() == before
from pyshark.codegen.opencl import runtime
print(json.dumps({"name": "wait", "after": after, "checks": ok,
                  "next": round(time.perf_counter() - t0, 3),
                  "gpu": bool(runtime.device().dev.type & runtime.device().cl.device_type.GPU)}),
      flush=True)
# a host loop of launches that would never end
ys = np.linspace(0.0, 1.0, 1 << 16).astype(np.float32)
after = interrupted(lambda: w.steps(ys, 1 << 40))
print(json.dumps({"name": "launches", "after": after, "checks": checks() == before}), flush=True)
"""


@pytest.mark.parametrize("host", ["python", "native"])
def test_sigint_stops_waits_and_launches_and_the_queue_still_works(tmp_path, host):
    """Both host paths stop a loop of launches at Ctrl-C (the native one
    polls SIGINT in its host loops, as the cpu backend does); only the
    Python host's waits are interruptible so far (the native host waits in
    a blocking clEnqueueReadBuffer: docs/opencl-backend.md, "Native host
    code")."""
    src = tmp_path / "m.py"
    src.write_text(textwrap.dedent(SRC))
    w = Wrapper("opencl", cache_dir=tmp_path / "cache")
    w.add_source_file(src)
    w.compile_and_load()                # the child loads it from the cache
    r = subprocess.run([sys.executable, "-c", CHILD, str(src), str(tmp_path / "cache")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env=dict(os.environ, PYSHARK_OPENCL_HOST=host))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {row["name"]: row for row in map(json.loads, r.stdout.splitlines())}
    assert rows["wait"]["checks"] and rows["launches"]["checks"], rows
    assert rows["launches"]["after"] != "finished", rows
    # the wait ended long before the 4 s kernel did (generous bounds)
    if host == "python":
        assert rows["wait"]["after"] != "finished" and rows["wait"]["after"] < 1.5, rows
    # a loop of launches: 0.1-0.3 s on PoCL; 3.3-8.8 s measured on an H200, where
    # the loop queues launches faster than they retire (an open item, opencl-backend.md)
    assert rows["launches"]["after"] < (30.0 if rows["wait"]["gpu"] else 3.0), rows
