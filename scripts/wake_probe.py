"""The first call after a pause of 0-50 ms, PyShark saxpy and the Numba peer
at 2^20 (what benchmarks/timing.Sampler's untimed call per turn is for)."""
import time, numpy as np, sys
sys.path.insert(0, '.')
from benchmarks import suite
from benchmarks.peers import numba_peers
import numba
print("numba layer", numba.config.THREADING_LAYER, numba.get_num_threads())
x = np.random.rand(1<<20).astype(np.float32); y = np.random.rand(1<<20).astype(np.float32)
f = numba_peers.saxpy
f(np.float32(2), x, y); f(np.float32(2), x, y)
print("layer used", numba.threading_layer())
for gap in (0, 0.001, 0.005, 0.02, 0.05):
    ts = []
    for k in range(8):
        time.sleep(gap)
        t = time.perf_counter(); f(np.float32(2), x, y); ts.append(time.perf_counter() - t)
    print(f"gap {gap*1e3:5.1f} ms: numba first call after gap us", [round(v*1e6) for v in ts])
from pyshark.wrapper import Wrapper
w = Wrapper("cpu"); w.add_source_file(suite.PROGRAMS_DIR / "saxpy.py"); w.compile_and_load(); w.wait_optimised()
g = w.saxpy
g(np.float32(2), x, y)
for gap in (0, 0.001, 0.005, 0.02, 0.05):
    ts = []
    for k in range(8):
        time.sleep(gap)
        t = time.perf_counter(); g(np.float32(2), x, y); ts.append(time.perf_counter() - t)
    print(f"gap {gap*1e3:5.1f} ms: pyshark us", [round(v*1e6) for v in ts])
