"""One program at one size: PyShark's entry and its NumPy and Numba peers in
20 ms windows, each after machine.settle(), in an order that changes per
round (as the suite's interleaved rounds do); per window the time a call,
the minor page faults a call and, for PyShark, where its result lies (4 KiB
page within 2 MiB, offset within 4 KiB).

    PROG=saxpy [SIZE=small] [ROUNDS=20] python -P scripts/modes_probe.py

Session 35 (benchmarks/README.md): after NumPy's saxpy first ran, PyShark's
next calls faulted for a round or two.
"""
import os
import resource
import time

import pyshark
from pyshark.benchmarks.machine import settle
from pyshark.benchmarks.peers import numba_peers, numpy_peers
from pyshark.benchmarks.suite import BY_NAME

b = BY_NAME[os.environ.get("PROG", "saxpy")]
args = b.make_inputs(os.environ.get("SIZE", "small"), 0)
w = pyshark.Wrapper("cpu").add_source_file(b.path).compile_and_load()
w.wait_optimised()
TARGETS = [("ps", getattr(w, b.entry)), ("nb", getattr(numba_peers, b.entry)),
           ("np", getattr(numpy_peers, b.entry))]


def window(fn, secs: float = 0.02):
    """(us a call, minor faults a call, the last result) over `secs`."""
    settle()
    fn(*args)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    k = 0
    while time.perf_counter() - t0 < secs:
        out = fn(*args)
        k += 1
    return ((time.perf_counter() - t0) / k * 1e6,
            (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / k, out)


for r in range(int(os.environ.get("ROUNDS", "20"))):
    line = []
    for name, fn in sorted(TARGETS, key=lambda x: hash((r, x[0])) % 7):
        t, flt, out = window(fn)
        where = (f" @{out.ctypes.data % (1 << 21) >> 12:3d}p+{out.ctypes.data % 4096:4d}"
                 if name == "ps" else "")
        line.append(f"{name} {t:7.1f} us {flt:5.1f} flt{where}")
    print(f"round {r:2d}  " + "   ".join(line), flush=True)
