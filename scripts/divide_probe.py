"""hotspot_rodinia small as written (three divisions a cell) and with
reciprocals (scripts/hotspot_rodinia_recip.py), and the Numba peer, at
THREADS (default 1,16) threads, fresh process: ms a call, min of windows.
Session 32 (benchmarks/README.md): is the per-thread gap to Numba on the
Intel host the divisions?"""
import os, time
import numpy as np, pyshark, numba
from pyshark.benchmarks.suite import BY_NAME
from pyshark.benchmarks.peers import load_peer
REPO = os.environ["REPO"]
hr = BY_NAME["hotspot_rodinia"]
args = hr.make_inputs(os.environ.get("SIZE", "small"), 0)[:3]
nb = load_peer("numba")[0]
def best(f):
    f(*args); m = 1e9
    for _ in range(5):
        t0 = time.perf_counter(); k = 0
        while time.perf_counter() - t0 < 0.03: f(*args); k += 1
        m = min(m, (time.perf_counter() - t0) / k)
    return m * 1e3
for nt in (int(x) for x in os.environ.get("THREADS", "1,16").split(",")):
    fs = {}
    for tag, path in (("divide", f"{REPO}/benchmarks/programs/hotspot_rodinia.py"),
                      ("reciprocal", f"{REPO}/scripts/hotspot_rodinia_recip.py")):
        w = pyshark.Wrapper("cpu", num_threads=nt).add_source_file(path).compile_and_load()
        w.wait_optimised(); fs[tag] = w.hotspot_rodinia
    numba.set_num_threads(nt)
    print(f"threads {nt:2d}: as written {best(fs['divide']):.3f} ms  reciprocals {best(fs['reciprocal']):.3f} ms"
          f"  numba {best(nb.hotspot_rodinia):.3f} ms", flush=True)
