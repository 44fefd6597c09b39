"""Host overhead of the opencl backend (not a test): the time of one call of
a scalar entry, saxpy on 16 elements, sum and prefix sum on 2^20 f32,
chained saxpy on device arrays, the tiny calls of the call-path work (2^10
elements; a tuple parameter), and the host Python alone (launches stubbed
out), as the best of repeated runs of many calls.

    python tests/codegen/opencl/host_overhead.py [--device SPEC]

Prints one line per case (microseconds per call, the best of 5 repeats:
the machine's other load only adds).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

SOURCE = textwrap.dedent('''
    import pyshark.prelude as ps

    @ps.entry
    def inc(x: ps.i64) -> ps.i64:
        return x + 1

    @ps.entry
    def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        return ps.map(lambda x, y: a * x + y, xs, ys)

    @ps.entry
    def total(xs: ps.Array[ps.f32]) -> ps.f32:
        return ps.reduce(lambda p, q: p + q, ps.f32(0.0), xs)

    @ps.entry
    def prefix(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        return ps.scan(lambda p, q: p + q, ps.f32(0.0), xs)

    @ps.entry
    def affine(v: tuple[ps.f32, ps.f32], xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        return ps.map(lambda x: v[0] * x + v[1], xs)
''')


def per_call(fn, n: int, repeats: int = 5) -> float:
    fn()
    best = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best.append((time.perf_counter() - t) / n)
    return min(best) * 1e6


def tiny_calls(w, wd) -> list:
    """The rows of the call-path work (docs/opencl-backend.md, "The call
    path"): calls of 2^10 elements, where the host's Python is most of the
    time, then the same with every launch stubbed out (the host Python
    alone: steady even where the device shares the host's cores)."""
    from pyshark.codegen.opencl import runtime
    queue = runtime.device().queue
    x = np.arange(1 << 10, dtype=np.float32)
    a, v = np.float32(2.0), (np.float32(2.0), np.float32(1.0))
    d = wd.saxpy(a, x, x)

    def saxpy_finish():
        wd.saxpy(a, d, d)
        queue.finish()

    def affine_finish():
        wd.affine(v, d)
        queue.finish()
    rows = [("device arrays: saxpy 2^10 + finish", per_call(saxpy_finish, 2000)),
            ("sum, 2^10 f32 -> scalar", per_call(lambda: w.total(x), 1000)),
            ("device arrays: sum 2^10 -> scalar", per_call(lambda: wd.total(d), 1000)),
            ("device arrays: affine(tuple) 2^10", per_call(affine_finish, 2000))]
    launch = runtime.Call.launch
    runtime.Call.launch = lambda self, k, count, args: None
    try:
        rows += [("  launch stubbed: saxpy 2^10 (dev)", per_call(lambda: wd.saxpy(a, d, d), 5000)),
                 ("  launch stubbed: sum 2^10 (dev)", per_call(lambda: wd.total(d), 2000)),
                 ("  launch stubbed: sum 2^10 (numpy)", per_call(lambda: w.total(x), 2000)),
                 ("  launch stubbed: affine 2^10 (dev)", per_call(lambda: wd.affine(v, d), 5000))]
    finally:
        runtime.Call.launch = launch
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    from pyshark import Wrapper
    d = Path(tempfile.mkdtemp())
    (d / "m.py").write_text(SOURCE)
    kw = {"device": args.device} if args.device else {}
    w = Wrapper("opencl", cache_dir=d / "cache", **kw).add_source_file(d / "m.py")
    w.compile_and_load()
    x16 = np.arange(16, dtype=np.float32)
    big = np.random.default_rng(0).random(1 << 20, dtype=np.float32)
    a = np.float32(2.0)
    rows = [("scalar entry x + 1", per_call(lambda: w.inc(np.int64(3)), 2000)),
            ("saxpy, 16 f32", per_call(lambda: w.saxpy(a, x16, x16), 1000)),
            ("saxpy, 2^20 f32", per_call(lambda: w.saxpy(a, big, big), 20)),
            ("sum, 2^20 f32", per_call(lambda: w.total(big), 20)),
            ("prefix sum, 2^20 f32", per_call(lambda: w.prefix(big), 10))]
    try:
        wd = Wrapper("opencl", cache_dir=d / "cache", device_arrays=True, **kw)
    except TypeError:
        wd = None
    if wd is not None:
        wd.add_source_file(d / "m.py").compile_and_load()
        d16, dbig = wd.saxpy(a, x16, x16), wd.saxpy(a, big, big)
        rows += [("device arrays: saxpy, 16 f32", per_call(lambda: wd.saxpy(a, d16, d16), 1000)),
                 ("device arrays: saxpy, 2^20 f32",
                  per_call(lambda: wd.saxpy(a, dbig, dbig).get(), 20)),
                 ("device arrays: sum, 2^20 f32", per_call(lambda: wd.total(dbig), 20))]
        rows += tiny_calls(w, wd)
    from pyshark.codegen.opencl import runtime
    print(f"device: {w._backend.device().name if hasattr(w._backend, 'device') else runtime.device().name}")
    for name, us in rows:
        print(f"{name:34s} {us:10.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
