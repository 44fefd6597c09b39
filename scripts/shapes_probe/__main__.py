"""The shapes probe: programs.py on PyShark's cpu backend against the Numba
peers, one process, rounds alternating (the median of each side's best-of-
window times per round, and the median per-round ratio). Run from the repo:

    python -m scripts.shapes_probe [--scale 1.0] [--rounds 5]

Each program is first checked: PyShark's Python mode and cpu backend on a
small input agree, and cpu and Numba agree on the timed input."""
import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import pyshark

from . import numba_peers as nb
from .cases import NAMES, inputs

HERE = Path(__file__).resolve().parent


def best(f, args, window=0.15) -> float:
    f(*args)
    times = []
    end = time.perf_counter() + window
    while time.perf_counter() < end or len(times) < 2:
        t0 = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t0)
    return min(times)


def agree(a, b, tol=2e-4) -> bool:
    return np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--programs", default=",".join(NAMES))
    a = ap.parse_args()
    src = (HERE / "programs.py").read_text()
    t0 = time.perf_counter()
    cpu = pyshark.Wrapper("cpu", cache_dir=tempfile.mkdtemp()).add_source(src, name="shapes")
    cpu.compile_and_load()
    print(f"compile (quick tier) {time.perf_counter() - t0:.2f} s", flush=True)
    cpu.wait_optimised()
    py = pyshark.Wrapper("python").add_source(src, name="shapes_py")
    py.compile_and_load()
    rng = np.random.default_rng(0)
    for name in a.programs.split(","):
        small = inputs(name, 1e-4, rng)
        assert agree(getattr(py, name)(*small), getattr(cpu, name)(*small)), name
        args = inputs(name, a.scale, rng)
        assert agree(getattr(cpu, name)(*args), getattr(nb, name)(*args), 1e-3), name
        ps_t, nb_t, ratios = [], [], []
        for r in range(a.rounds):
            order = [("ps", getattr(cpu, name)), ("nb", getattr(nb, name))]
            if r % 2:
                order.reverse()
            got = {k: best(f, args) for k, f in order}
            ps_t.append(got["ps"])
            nb_t.append(got["nb"])
            ratios.append(got["ps"] / got["nb"])
        print(f"{name:16s} PyShark {statistics.median(ps_t) * 1e3:9.3f} ms  Numba "
              f"{statistics.median(nb_t) * 1e3:9.3f} ms  PyShark/Numba {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f})", flush=True)


if __name__ == "__main__":
    main()
