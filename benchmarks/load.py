"""`python -m benchmarks.load`: the cpu backend beside NumPy, idle and under load.

Two streaming programs over 10^7 f32 (benchmarks/programs/saxpy.py, a map,
and sum.py, a reduction) are timed on the cpu backend and with NumPy in this
process, first with nothing else started, then with `--busy` busy-loop
subprocesses (default 1: one core taken by other work). Each busy process
stops by itself after `--busy-seconds` and is killed when the measurement
ends. A cell is the median over `--rounds` rounds of the median of `--calls`
back-to-back calls (milliseconds). `--threads 1,2` adds rows for
Wrapper(num_threads=N) (where this PyShark has it). The idle column is only
as idle as the machine: the script prints the load average beside it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PROGRAMS = Path(__file__).resolve().parent / "programs"

_BUSY = ("import time\n"
         "end = time.monotonic() + {secs}\n"
         "while time.monotonic() < end:\n"
         "    pass\n")


def _median_call(fn, calls: int) -> float:
    fn()                                    # warm-up (page faults, thread start)
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _wrapper(cache: Path, num_threads):
    import pyshark
    kw = {} if num_threads is None else {"num_threads": num_threads}
    w = pyshark.Wrapper(backend="cpu", cache_dir=cache, **kw)
    w.add_source_file(PROGRAMS / "saxpy.py")
    w.add_source_file(PROGRAMS / "sum.py")
    w.compile_and_load()
    if hasattr(type(w), "wait_optimised"):     # time the optimised tier
        w.wait_optimised()
    return w


def _targets(n: int, threads: list, cache: Path):
    rng = np.random.default_rng(0)
    xs = rng.random(n, dtype=np.float32)
    ys = rng.random(n, dtype=np.float32)
    a = np.float32(2.5)
    out = {"numpy": (lambda: a * xs + ys, lambda: np.sum(xs))}
    for nt in [None] + threads:
        try:
            w = _wrapper(cache, nt)
        except TypeError as e:              # a PyShark without num_threads
            print(f"(skipping num_threads={nt}: {e})", file=sys.stderr)
            continue
        np.testing.assert_allclose(w.saxpy(a, xs, ys), a * xs + ys, rtol=1e-6)
        np.testing.assert_allclose(w.sum_f32(xs), np.sum(xs, dtype=np.float64), rtol=1e-4)
        name = "cpu" if nt is None else f"cpu nt={nt}"
        out[name] = (lambda w=w: w.saxpy(a, xs, ys), lambda w=w: w.sum_f32(xs))
    return out


def _measure(targets: dict, calls: int) -> dict:
    return {name: tuple(_median_call(f, calls) for f in fns) for name, fns in targets.items()}


def _start_busy(k: int, secs: float) -> list:
    return [subprocess.Popen([sys.executable, "-c", _BUSY.format(secs=secs)]) for _ in range(k)]


def _stop(procs: list) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=10_000_000, help="elements (default 10^7)")
    p.add_argument("--rounds", type=int, default=5, help="rounds; a cell is their median")
    p.add_argument("--calls", type=int, default=20, help="calls per round and target")
    p.add_argument("--busy", type=int, default=1, help="busy-loop processes under load")
    p.add_argument("--busy-seconds", type=float, default=120.0,
                   help="a busy process's own time limit (it is killed sooner)")
    p.add_argument("--threads", default="", help="also Wrapper(num_threads=N) for these N, "
                   "e.g. 1,2")
    args = p.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",") if t]
    cache = Path(tempfile.mkdtemp(prefix="pyshark-load-"))
    # as the user set them (loading a module may set GOMP_SPINCOUNT)
    env = {k: os.environ.get(k, "(unset)") for k in
           ("OMP_NUM_THREADS", "GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    targets = _targets(args.n, threads, cache)
    print(f"n = {args.n}, {os.cpu_count()} cores, "
          + ", ".join(f"{k}={v}" for k, v in env.items())
          + f"; load average before: {os.getloadavg()[0]:.2f}", flush=True)
    rows: dict = {name: {"idle": [], "busy": []} for name in targets}
    for r in range(args.rounds):
        for name, v in _measure(targets, args.calls).items():
            rows[name]["idle"].append(v)
        procs = _start_busy(args.busy, args.busy_seconds)
        try:
            time.sleep(0.2)                 # let the busy processes get going
            for name, v in _measure(targets, args.calls).items():
                rows[name]["busy"].append(v)
        finally:
            _stop(procs)
    print(f"median of {args.rounds} rounds x median of {args.calls} calls, ms; "
          f"under load: {args.busy} busy process(es); load average after: "
          f"{os.getloadavg()[0]:.2f}")
    head = f"{'target':<12} {'saxpy idle':>11} {'saxpy busy':>11} {'sum idle':>10} {'sum busy':>10}"
    print(head)
    print("-" * len(head))
    for name, d in rows.items():
        cell = {k: [statistics.median(x[j] for x in d[k]) * 1e3 for j in range(2)] for k in d}
        print(f"{name:<12} {cell['idle'][0]:>11.2f} {cell['busy'][0]:>11.2f} "
              f"{cell['idle'][1]:>10.2f} {cell['busy'][1]:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
