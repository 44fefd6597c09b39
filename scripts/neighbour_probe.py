"""PyShark's team and the Numba peer beside busy neighbours: B processes
spinning on the host while one process times programs at a size, the
median and best of windows of back-to-back calls (ms), PyShark and Numba
in alternating windows; one fresh process per team setting (PYSHARK_SPIN_US,
PYSHARK_YIELD_US are read when the team starts).

    python scripts/neighbour_probe.py B "SPIN,YIELD ..." prog:size ...
    e.g. python scripts/neighbour_probe.py 2 "default 300,300 300,20000" hotspot_rodinia:small
"""
import os
import statistics
import subprocess
import sys
import time

CHILD = r'''
import os, sys, tempfile, time, statistics
import pyshark
from pyshark.benchmarks.suite import BY_NAME
from pyshark.benchmarks.peers import numba_peers, numba_ports
def windows(f, args, n=9, w=0.15):
    f(*args)
    out = []
    for _ in range(n):
        t0 = time.perf_counter(); k = 0
        while time.perf_counter() - t0 < w:
            f(*args); k += 1
        out.append((time.perf_counter() - t0) / k * 1e3)
    return out
for spec in sys.argv[1:]:
    prog, size = spec.split(":")
    b = BY_NAME[prog]
    args = b.make_inputs(size, 0)
    w = pyshark.Wrapper("cpu", cache_dir=tempfile.mkdtemp(), tiered=False)
    w.add_source_file(b.path); w.compile_and_load()
    f = getattr(w, b.entry)
    g = getattr(numba_peers, b.entry, None) or getattr(numba_ports, b.entry)
    ps, nb = [], []
    for r in range(3):
        ps += windows(f, args, 3); nb += windows(g, args, 3)
    print(f"  {prog}:{size} ps median {statistics.median(ps):.3f} best {min(ps):.3f}"
          f"   numba median {statistics.median(nb):.3f} best {min(nb):.3f}", flush=True)
'''


def main():
    busy, settings, specs = int(sys.argv[1]), sys.argv[2].split(), sys.argv[3:]
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(busy)]
    try:
        time.sleep(0.5)
        for s in settings:
            env = dict(os.environ)
            if s != "default":
                spin, yld = s.split(",")
                env["PYSHARK_SPIN_US"], env["PYSHARK_YIELD_US"] = spin, yld
            print(f"{busy} busy, team {s}:", flush=True)
            subprocess.run([sys.executable, "-c", CHILD] + specs, env=env, check=False)
    finally:
        for h in hogs:
            h.kill()


if __name__ == "__main__":
    main()
