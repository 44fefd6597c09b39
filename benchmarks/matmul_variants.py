"""Device experiment for issue 18 (matmul and sum on a GPU): the tiled
matmul kernel of codegen/gpu/tile2d.py in a few settings of its module
constants, beside CuPy's matmul, and the sum with device arrays beside
CuPy's sum and a device copy (the bandwidth bound).

    OUT=dir python3 -P benchmarks/matmul_variants.py [variant ...]

Each variant compiles a fresh module (its own cache directory) with the
constants set; inputs are put on the device once (copy entries), every
timed call ends with the runtime queue's finish(). Writes OUT/results.json
and, per variant, the matmul kernel's OpenCL C, the NVIDIA build log
(-cl-nv-verbose: registers, spills) and its PTX.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

OUT = Path(os.environ.get("OUT", "."))
SRC = '''
import pyshark.prelude as ps

M32 = ps.Array[ps.Array[ps.f32]]
M64 = ps.Array[ps.Array[ps.f64]]


@ps.entry
def mm32(a: M32, b: M32) -> M32:
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: ps.sum(ps.map(lambda x, y: x * y, row, col)), bt), a)


@ps.entry
def mm64(a: M64, b: M64) -> M64:
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: ps.sum(ps.map(lambda x, y: x * y, row, col)), bt), a)


@ps.entry
def copy32(a: M32) -> M32:
    return ps.map(lambda r: ps.map(lambda x: x, r), a)


@ps.entry
def copy64(a: M64) -> M64:
    return ps.map(lambda r: ps.map(lambda x: x, r), a)


@ps.entry
def sum32(xs: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), xs)


@ps.entry
def copy1(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x: x, xs)
'''

VARIANTS = {
    "new": {},
    "old": {"DBUF": False, "SMALL": 0},                 # main before branch matmul2
    "dbuf": {"SMALL": 0},
    "small2": {"SMALL": 2},
    "nodbuf_small": {"DBUF": False},
    "tk8": {"TK_BY_SIZE": {1: (8,), 2: (8,), 4: (8,), 8: (8,)}},
    # the Python host code (pyopencl) instead of the native one: the
    # "maxreg128" rows of 2026-11-26 ran there and were faster at every size,
    # though their build logs show the registers uncapped (187)
    "new_pyhost": {"HOST": "python"},
    # two buffers of TK = 16 for the 128 x 128 blocks (33.8 KB of local memory)
    "tk16_dbuf": {"LOCAL_MEM": 49152},
    "tk8_pyhost": {"TK_BY_SIZE": {1: (8,), 2: (8,), 4: (8,), 8: (8,)}, "HOST": "python"},
    # the whole program built with a register cap (two groups per SM; the
    # Python host code, which builds with the runtime's options); check the
    # build log's "Used N registers" to see whether the driver took it
    "maxreg128": {"OPTS": ["-cl-nv-maxrregcount", "128"], "HOST": "python"},
    "maxreg128eq": {"OPTS": ["-cl-nv-maxrregcount=128"], "HOST": "python"},
    "old_maxreg128": {"DBUF": False, "SMALL": 0, "OPTS": ["-cl-nv-maxrregcount=128"],
                      "HOST": "python"},
    "new_runs": {"RUNS": True},
    "tk16": {"TK_BY_SIZE": {1: (16,), 2: (16,), 4: (16,), 8: (16,)}},
    "new_noprefetch": {"PREFETCH": False},
    "new_r4": {"R_BY_SIZE": {1: 4, 2: 4, 4: 4, 8: 4}},
    "new_nofma": {"NOFMA": True},
    # f64 at small sizes (session 29: 256 x 256 f64 took 350-924 us)
    "f64_pad2": {"PAD": 2},
    "f64_pad1": {"PAD": 1},
    "f64_nodbuf": {"DBUF": False},
    "f64_r2": {"R_BY_SIZE": {1: 8, 2: 8, 4: 8, 8: 2}},
}
SIZES = [int(v) for v in os.environ.get("MMV_SIZES", "1024,2048,4096").split(",")]
SUM_LOG = int(os.environ.get("MMV_SUM_LOG", "28"))
RESULTS: dict = {}
LOG = []


def log(*a):
    text = " ".join(str(x) for x in a)
    print(text, flush=True)
    LOG.append(text)


def save():
    (OUT / "results.json").write_text(json.dumps(RESULTS, indent=1))
    (OUT / "log.txt").write_text("\n".join(LOG) + "\n")


def timed(fn, finish, reps=10, warm=2) -> float:
    for _ in range(warm):
        fn()
        finish()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        finish()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def cupy_rows():
    try:
        import cupy as cp
    except Exception as exc:
        log("no cupy:", exc)
        return
    sync = cp.cuda.Device().synchronize
    rows = {}
    for dt in (np.float32, np.float64):
        for n in SIZES:
            a = cp.asarray(np.random.default_rng(1).random((n, n), dtype=dt))
            b = cp.asarray(np.random.default_rng(2).random((n, n), dtype=dt))
            t = timed(lambda: a @ b, sync)
            rows[f"matmul_{np.dtype(dt).name}_{n}"] = t
            log(f"cupy matmul {np.dtype(dt).name} {n}: {t * 1e3:.3f} ms, "
                f"{2 * n ** 3 / t / 1e12:.1f} TFLOP/s")
    x = cp.asarray(np.random.default_rng(3).random(1 << SUM_LOG, dtype=np.float32))
    t = timed(lambda: x.sum(), sync)
    rows["sum_2^28"] = t
    log(f"cupy sum 2^28: {t * 1e6:.1f} us, {x.nbytes / t / 1e9:.0f} GB/s")
    t = timed(lambda: x.copy(), sync)
    rows["copy_2^28"] = t
    log(f"cupy copy 2^28: {t * 1e6:.1f} us, {2 * x.nbytes / t / 1e9:.0f} GB/s")
    RESULTS["cupy"] = rows
    save()


def set_variant(spec: dict):
    from pyshark.codegen import stages
    from pyshark.codegen.gpu import tile2d
    from pyshark.codegen.kir_passes.contract import contract_products
    stages.CONTRACT = ("contract", (lambda m: m) if spec.get("NOFMA") else contract_products)
    for k, v in {"PREFETCH": True, "R_BY_SIZE": {1: 8, 2: 8, 4: 8, 8: 4}, "TK_BY_SIZE": {1: (16, 8), 2: (16, 8), 4: (16, 8), 8: (8,)},
                 "PAD": 4, "RUNS": False, "DBUF": True, "SMALL": 1, "LOCAL_MEM": 0}.items():
        setattr(tile2d, k, spec.get(k, v))
    from pyshark.codegen.opencl import runtime
    dev = runtime.device()
    base = getattr(dev, "_mmv_base_options", None)
    if base is None:
        base = dev._mmv_base_options = list(dev.build_options)
    dev._mmv_extra = list(spec.get("OPTS", []))
    dev.build_options = base + dev._mmv_extra
    if spec.get("HOST") == "python":
        os.environ["PYSHARK_OPENCL_HOST"] = "python"
    else:
        os.environ.pop("PYSHARK_OPENCL_HOST", None)


def dump_kernel(cache: Path, name: str):
    """The matmul kernel's source, NVIDIA build log and PTX."""
    import pyopencl as cl
    from pyshark.codegen.opencl import runtime
    srcs = list(cache.rglob("kernels.cl"))
    if not srcs:
        return
    src = srcs[0].read_text()
    (OUT / f"{name}.cl").write_text(src)
    dev = runtime.device()
    try:
        prg = cl.Program(dev.ctx, src).build(
            options=["-D", f"PYSHARK_NUM_THREADS={dev.nthreads}", "-cl-nv-verbose"]
            + list(getattr(dev, "_mmv_extra", [])))
        blog = prg.get_build_info(dev.ctx.devices[0], cl.program_build_info.LOG)
        (OUT / f"{name}.buildlog.txt").write_text(blog)
        ptx = prg.get_info(cl.program_info.BINARIES)[0]
        ptx = ptx.decode(errors="replace") if isinstance(ptx, bytes) else str(ptx)
        (OUT / f"{name}.ptx").write_text(ptx)
        log(f"  {name}: ld.shared.v4 {ptx.count('ld.shared.v4')}, ld.shared.f32 "
            f"{ptx.count('ld.shared.f32')}, fma.rn {ptx.count('fma.rn')}, "
            f"local spills: {'ld.local' in ptx}")
        for line in blog.splitlines():
            if "registers" in line or "spill" in line:
                log("   ", line.strip())
    except Exception as exc:
        log("  dump failed:", exc)


def pyshark_rows(variant: str, spec: dict, with_sum: bool):
    from pyshark import Wrapper
    from pyshark.codegen.opencl import runtime
    set_variant(spec)
    d = Path(tempfile.mkdtemp(prefix=f"mm_{variant}_"))
    (d / "mmv.py").write_text(SRC)
    t0 = time.perf_counter()
    w = Wrapper("opencl", device_arrays=True, cache_dir=d / "cache")
    w.add_source_file(d / "mmv.py")
    m = w.compile_and_load()
    from pyshark.codegen.opencl.backend import host_mode
    log(f"{variant}: compiled in {time.perf_counter() - t0:.1f} s, {host_mode()} host code")
    dump_kernel(d / "cache", variant)
    q = runtime.device().queue
    rows = {}
    for dt, mm, cp_ in ((np.float32, m.mm32, m.copy32), (np.float64, m.mm64, m.copy64)):
        for n in SIZES:
            a_h = np.random.default_rng(1).random((n, n), dtype=dt)
            b_h = np.random.default_rng(2).random((n, n), dtype=dt)
            a, b = cp_(a_h), cp_(b_h)
            t = timed(lambda: mm(a, b), q.finish, reps=10 if n < 4096 else 8)
            key = f"matmul_{np.dtype(dt).name}_{n}"
            rows[key] = t
            extra = ""
            if n == SIZES[0]:
                got = np.asarray(mm(a, b))
                want = a_h.astype(np.float64) @ b_h.astype(np.float64)
                extra = f" max rel err {np.max(np.abs(got - want) / np.abs(want)):.2e}"
            log(f"  {variant} matmul {np.dtype(dt).name} {n}: {t * 1e3:.3f} ms, "
                f"{2 * n ** 3 / t / 1e12:.1f} TFLOP/s{extra}")
            RESULTS.setdefault(variant, {}).update(rows)
            save()
    if with_sum:
        xh = np.random.default_rng(3).random(1 << SUM_LOG, dtype=np.float32)
        x = m.copy1(xh)
        for label, fn in (("sum_2^28", lambda: m.sum32(x)), ("copy_2^28", lambda: m.copy1(x))):
            t = timed(fn, q.finish)
            rows[label] = t
            log(f"  {variant} {label}: {t * 1e6:.1f} us")
        r = m.sum32(x)
        log(f"  sum result type {type(r).__name__}, value {float(r):.6g} vs {xh.sum(dtype=np.float64):.6g}")
        RESULTS.setdefault(variant, {}).update(rows)
        save()


def main(argv):
    OUT.mkdir(parents=True, exist_ok=True)
    names = argv or list(VARIANTS)
    try:
        cupy_rows()
    except Exception:
        log(traceback.format_exc())
    for k, name in enumerate(names):
        try:
            pyshark_rows(name, VARIANTS[name], with_sum=k == 0)
        except Exception:
            log(f"{name} failed:", traceback.format_exc())
        save()


if __name__ == "__main__":
    main(sys.argv[1:])
