"""Host overhead of the opencl backend (not a test): the time of one call of
a scalar entry, saxpy on 16 elements, sum and prefix sum on 2^20 f32, and
chained saxpy on device arrays, as the median of many calls.

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
    from pyshark.codegen.opencl import runtime
    print(f"device: {w._backend.device().name if hasattr(w._backend, 'device') else runtime.device().name}")
    for name, us in rows:
        print(f"{name:34s} {us:10.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
