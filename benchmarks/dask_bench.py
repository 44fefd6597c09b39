"""pyshark.dask beside NumPy and Numba on the same Dask cluster (issue 19).

Two workloads on an array larger than one worker's memory limit, generated
chunk by chunk on the workers (never on the client), so that only
streaming works:

- map: saxpy (f32) by chunk, then a checksum (dask's own sum, the same for
  every peer) so that the result is never held whole;
- reduce: a dot product (f64) of two such arrays.

Peers, each a chunk function on the same cluster and the same chunks:
PyShark through pyshark.dask (plan from the entry's core IR, compiled
combine step), NumPy through map_blocks / dask's own sum, Numba (njit
chunk kernels) through map_blocks and dask.array.reduction.

    python -m benchmarks.dask_bench --workers 2 --backend cpu
    python -m benchmarks.dask_bench --workers 2 --backend opencl --device 0:0,0:1

--device (opencl): one device for all workers, or a comma list (worker i
takes the i-th: one GPU per worker). Prints a Markdown table: workload,
peer, seconds (best of --repeat), GB/s of input streamed.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SOURCE = '''
import pyshark.prelude as ps

@ps.entry
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x, y: a * x + y, xs, ys)

@ps.entry
def dot(xs: ps.Array[ps.f64], ys: ps.Array[ps.f64]) -> ps.f64:
    return ps.sum(ps.map(lambda x, y: x * y, xs, ys))
'''


def _numpy_saxpy(x, y, a):
    return a * x + y


_NUMBA: list = []


def _numba_kernels():
    """The njit kernels, compiled once per worker process."""
    if _NUMBA:
        return _NUMBA[0]
    import numba

    @numba.njit(fastmath=False, cache=False)
    def saxpy(x, y, a):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = a * x[i] + y[i]
        return out

    @numba.njit(cache=False)
    def dot(x, y):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * y[i]
        return s
    _NUMBA.append((saxpy, dot))
    return _NUMBA[0]


def _numba_saxpy(x, y, a):
    return _numba_kernels()[0](x, y, np.float32(a))


def _numba_dot_chunk(x, y):
    return np.array([_numba_kernels()[1](x, y)])


def _inputs(da, n, chunk, dtype, seed):
    rs = da.random.RandomState(seed)
    return rs.random_sample(n, chunks=chunk).astype(dtype)


def workloads(w, da, psd, n, chunk, device, num_threads):
    """{(workload, peer): a function building the lazy result}."""
    import dask
    x32 = lambda: _inputs(da, n, chunk, np.float32, 1)        # noqa: E731
    y32 = lambda: _inputs(da, n, chunk, np.float32, 2)        # noqa: E731
    x64 = lambda: _inputs(da, n, chunk, np.float64, 3)        # noqa: E731
    y64 = lambda: _inputs(da, n, chunk, np.float64, 4)        # noqa: E731
    saxpy = psd.partition(w.saxpy, device=device, num_threads=num_threads)
    dot = psd.partition(w.dot, device=device, num_threads=num_threads)
    out = {
        ("map", "pyshark"): lambda: saxpy(np.float32(2), x32(), y32()).sum(dtype=np.float64),
        ("map", "numpy"): lambda: da.map_blocks(_numpy_saxpy, x32(), y32(), np.float32(2),
                                                dtype=np.float32).sum(dtype=np.float64),
        ("reduce", "pyshark"): lambda: dot(x64(), y64()),
        ("reduce", "numpy"): lambda: (x64() * y64()).sum(),
    }
    try:
        import numba  # noqa: F401
        out[("map", "numba")] = lambda: da.map_blocks(
            _numba_saxpy, x32(), y32(), 2.0, dtype=np.float32).sum(dtype=np.float64)
        out[("reduce", "numba")] = lambda: da.map_blocks(
            _numba_dot_chunk, x64(), y64(), chunks=((1,) * len(x64().chunks[0]),),
            dtype=np.float64).sum()
    except ImportError:
        print("numba is not installed: no Numba peer", file=sys.stderr)
    del dask
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None,
                    help="compiled threads per worker call (default: cores // workers)")
    ap.add_argument("--backend", default="cpu", help="PyShark backend (cpu, opencl)")
    ap.add_argument("--device", default=None,
                    help="opencl: a device, or a comma list: one per worker")
    ap.add_argument("--n", type=float, default=4e8, help="elements per array")
    ap.add_argument("--chunk", type=float, default=2e7, help="elements per chunk")
    ap.add_argument("--memory-limit", default="2GB", help="per worker (Dask's)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma list of workload:peer to run")
    args = ap.parse_args(argv)
    import dask.array as da
    from distributed import Client, LocalCluster

    import pyshark.dask as psd
    from pyshark.wrapper import Wrapper
    n, chunk = int(args.n), int(args.chunk)
    cores = os.cpu_count() or 1
    threads = args.threads or max(1, cores // args.workers)
    device = args.device.split(",") if args.device and "," in args.device else args.device
    src = Path(tempfile.mkdtemp(prefix="pyshark-dask-bench-")) / "dask_kernels.py"
    src.write_text(SOURCE)
    w = Wrapper(args.backend, **({"device": device if isinstance(device, str) else device[0]}
                                 if device else {}))
    w.add_source_file(src)
    w.compile_and_load()
    w.wait_optimised()           # the workers load the optimised module
    env = {"OMP_NUM_THREADS": str(threads), "NUMBA_NUM_THREADS": str(threads)}
    print(f"# {args.workers} workers x {threads} threads, memory limit {args.memory_limit} "
          f"each; arrays of {n:.3g} elements ({n * 8 / 1e9:.1f} GB as f64), chunks of "
          f"{chunk:.3g}; backend {args.backend}, device {args.device}")
    rows = []
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      memory_limit=args.memory_limit, dashboard_address=None,
                      env=env) as lc, Client(lc) as client:
        built = workloads(w, da, psd, n, chunk, device, threads)
        only = set(filter(None, args.only.split(",")))
        results = {}
        for (work, peer), make in built.items():
            if only and f"{work}:{peer}" not in only:
                continue
            client.compute(workloads(w, da, psd, chunk * 2, chunk, device, threads)
                           [(work, peer)](), sync=True)     # warm-up: loads, JITs
            best = float("inf")
            for _ in range(args.repeat):
                lazy = make()
                t0 = time.perf_counter()
                value = client.compute(lazy, sync=True)
                best = min(best, time.perf_counter() - t0)
            results[(work, peer)] = float(value)
            nbytes = n * (4 if work == "map" else 8) * 2
            rows.append((work, peer, best, nbytes / best / 1e9))
    for work in ("map", "reduce"):
        vals = [v for (wk, _), v in results.items() if wk == work]
        if vals and not np.allclose(vals, vals[0], rtol=1e-4):
            print(f"warning: the {work} results differ: {results}", file=sys.stderr)
    print("| workload | peer | seconds (best of %d) | input GB/s |" % args.repeat)
    print("|---|---|---|---|")
    for work, peer, sec, gbs in rows:
        print(f"| {work} | {peer} | {sec:.3f} | {gbs:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
