"""sgemm small: PyShark and Numba at 1..16 threads (min of windows)."""
import os, time
import numpy as np, pyshark, numba
from pyshark.benchmarks.suite import BY_NAME
from pyshark.benchmarks.peers import load_peer
REPO = os.environ["REPO"]
b = BY_NAME["sgemm"]
args = b.make_inputs(os.environ.get("SIZE", "small"), 0)
nb, _ = load_peer("numba")
def best(fn):
    fn(*args); m = 1e9
    for _ in range(7):
        t0 = time.perf_counter(); j = 0
        while time.perf_counter() - t0 < 0.02: fn(*args); j += 1
        m = min(m, (time.perf_counter() - t0) / j)
    return m * 1e6
for nt in (1, 2, 4, 8, 12, 16):
    w = pyshark.Wrapper("cpu", num_threads=nt).add_source_file(f"{REPO}/benchmarks/programs/sgemm.py").compile_and_load()
    w.wait_optimised()
    numba.set_num_threads(nt)
    print(f"threads {nt:2d}: ps {best(w.sgemm):7.1f} us   numba {best(nb.sgemm):7.1f} us", flush=True)
