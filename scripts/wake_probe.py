"""The first call after a pause of 0-50 ms, PyShark saxpy and the Numba peer
at 2^20 (what benchmarks/timing.Sampler's untimed call per turn is for): us
per call, 8 calls per pause.

    python scripts/wake_probe.py
"""
import time

import numba
import numpy as np

from pyshark.benchmarks import suite
from pyshark.benchmarks.peers import numba_peers
from pyshark.wrapper import Wrapper


def after_pauses(name, f, *args):
    f(*args)
    for gap in (0, 0.001, 0.005, 0.02, 0.05):
        ts = []
        for _ in range(8):
            time.sleep(gap)
            t = time.perf_counter()
            f(*args)
            ts.append(time.perf_counter() - t)
        print(f"{name:8s} after {gap * 1e3:4.0f} ms asleep: us", [round(v * 1e6) for v in ts])


x = np.random.rand(1 << 20).astype(np.float32)
y = np.random.rand(1 << 20).astype(np.float32)
a = np.float32(2)
numba_peers.saxpy(a, x, y)
print("numba threading layer:", numba.threading_layer(), numba.get_num_threads(), "threads")
after_pauses("numba", numba_peers.saxpy, a, x, y)
w = Wrapper("cpu")
w.add_source_file(suite.PROGRAMS_DIR / "saxpy.py")
w.compile_and_load()
w.wait_optimised()
after_pauses("pyshark", w.saxpy, a, x, y)
