"""The PyShark demo: compile examples/saxpy.py, run it on every native
backend that can run here (cpu, and opencl where a usable OpenCL device
exists), and check every result against Python mode. A native backend that
cannot run here is reported as skipped, with the reason.

    python examples/demo.py [--backend B] [-n N]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from pyshark import Wrapper
from pyshark.testing import assert_close, short
from pyshark.wrapper import available_backends, known_backends
from pyshark.wrapper.registry import unavailable_reason

HERE = Path(__file__).resolve().parent
MODULE = HERE / "saxpy.py"


def load(backend: str) -> tuple[Wrapper, float]:
    start = time.perf_counter()
    w = Wrapper(backend=backend)
    w.add_source_file(MODULE)
    w.compile_and_load()
    return w, time.perf_counter() - start


def _best(f, reps: int = 5) -> float:
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def run_backend(backend: str, ref: Wrapper, args) -> bool:
    """Compiles the module for `backend`, checks each entry against Python
    mode and times saxpy beside NumPy; True when everything matched."""
    if backend == "core":
        print("  ('core' is the development interpreter of the compiled IR: no native "
              "backend can run here)")
    w, secs = load(backend)
    how = "loaded from the cache" if w.loaded_from_cache else "translated and compiled"
    print(f"{MODULE.name}: {how} for backend {backend!r} in {secs:.2f} s; "
          f"entries: {', '.join(w.entries)}")
    rng = np.random.default_rng(2024)
    xs = rng.standard_normal(args.n).astype(np.float32)
    ys = rng.standard_normal(args.n).astype(np.float32)
    calls = [("saxpy", (np.float32(2.0), xs, ys)), ("dot", (xs, ys)), ("norm_and_max", (xs,))]
    ok = True
    for name, call_args in calls:
        start = time.perf_counter()
        tier = w.tier
        got = w.invoke(name, *call_args)
        secs = time.perf_counter() - start
        want = ref.invoke(name, *call_args)
        try:
            assert_close(got, want)
            verdict = "matches Python mode"
        except AssertionError as exc:
            verdict, ok = f"DIFFERS from Python mode: {exc}", False
        where = ", quick tier" if tier == "quick" else ""
        print(f"  {name}(n={args.n}) on {backend}: {short(got, 70)}  [{secs * 1e3:.1f} ms{where}] "
              f"-> {verdict}")
    if w.tier == "quick":
        # a tiered compile (cpu): the optimised module is built in the
        # background; check it too, and time it
        start = time.perf_counter()
        upgraded = w.wait_optimised()
        print(f"  optimised code {'in use' if upgraded else 'NOT built (quick code kept)'} "
              f"{time.perf_counter() - start:.2f} s later")
        for name, call_args in calls:
            try:
                assert_close(w.invoke(name, *call_args), ref.invoke(name, *call_args))
            except AssertionError as exc:
                print(f"  {name} on {backend}, optimised: DIFFERS from Python mode: {exc}")
                ok = False
    if args.speed_n and backend not in ("python", "core"):
        n = args.speed_n
        xs = rng.standard_normal(n).astype(np.float32)
        ys = rng.standard_normal(n).astype(np.float32)
        a = np.float32(2.0)
        ours = _best(lambda: w.saxpy(a, xs, ys))
        peer = _best(lambda: a * xs + ys)
        print(f"  saxpy(n={n}) on {backend}: {ours * 1e3:.1f} ms, NumPy a*x+y: "
              f"{peer * 1e3:.1f} ms ({peer / ours:.2f}x NumPy's speed; best of 5)")
    return ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", help="default: every native backend that can run here")
    p.add_argument("-n", type=int, default=1000, help="vector length for the checks "
                   "(default 1000; Python mode's sequential float sums drift from any "
                   "reassociated sum as n grows)")
    p.add_argument("--speed-n", type=int, default=10_000_000,
                   help="vector length of the saxpy timing beside NumPy (0: skip)")
    args = p.parse_args(argv)

    backends = available_backends()
    print(f"PyShark backends available here, fastest first: {', '.join(backends)}")
    if args.backend:
        chosen = [args.backend]
    else:
        chosen = [b for b in backends if b not in ("core", "python")] or [backends[0]]
        for name in known_backends():
            if name not in backends and name not in ("core", "python"):
                print(f"  SKIP backend {name}: {unavailable_reason(name)}")
    ref, _ = load("python")
    ok = True
    for backend in chosen:
        ok = run_backend(backend, ref, args) and ok
    print("demo OK" if ok else "demo FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
