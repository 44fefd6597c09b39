"""Host time per call of a tiny opencl entry: the native host path, the
Python host path, and the floor (a C loop of clEnqueueNDRangeKernel +
clFinish on the same kernel), all on one device, interleaved.

    python benchmarks/ocl_launch_floor.py [--device SPEC] [--calls N] [--repeats R]

The entry is saxpy over one f32 element with DeviceArray arguments
(device_arrays=True), followed by a finish of the queue, so every row is
"one launch of the same kernel and a wait for it". The C floor compiles a
small program (gcc) against the native module's library: it makes the
same kernel from the library's embedded source through the library's own
context (pyshark_ocl_ctx_new), sets its arguments once and times
clEnqueueNDRangeKernel + clFinish. Prints microseconds per call, the best
of R repeats of N calls each (issue 18: native within 2 us of the floor).
The native host is timed twice: through its C fast path (native/fastcall.c,
what a Wrapper attribute is) and with the fast path off
(PYSHARK_OPENCL_FASTCALL=0: the Python path of bind_args and NativeCaller).
`--cpu` times the calling thread's CPU instead of the wall clock (steadier
on a shared machine; it does not see waits, so compare rows within a run).

Then the per-iteration time of two launch-bound programs of benchmarks/
(hotspot: one stencil launch per step; pathfinder: one launch per row) on
grids so small that their kernels take next to nothing: the time of a call
with `--steps` iterations less that of a call with one, divided by the
iterations in between. That is the host time each launch of a loop inside
an entry costs (the native host's C loop), beside the same floor.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SRC = textwrap.dedent("""
    import pyshark.prelude as ps

    @ps.entry
    def saxpy(a: ps.f32, x: ps.Array[ps.f32], y: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        return ps.map(lambda u, v: a * u + v, x, y)
""")

FLOOR_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
typedef struct _cl *h;
extern int clSetKernelArg(h, unsigned, size_t, const void *);
extern int clEnqueueNDRangeKernel(h, h, unsigned, const size_t *, const size_t *, const size_t *,
                                  unsigned, const void *, void *);
extern int clFinish(h);
extern h clCreateKernel(h, const char *, int *);
extern h clCreateBuffer(h, uint64_t, size_t, void *, int *);
extern h clCreateProgramWithSource(h, unsigned, const char **, const size_t *, int *);
extern int clBuildProgram(h, unsigned, const h *, const char *, void *, void *);
typedef struct { int32_t code, msg; int64_t args[4]; int32_t nthreads, sigint;
                 h context, device, queue; } ctx_head;
extern ctx_head *pyshark_ocl_ctx_new(int32_t, int32_t);
extern const char pyshark_ocl_source[];
#ifndef PSK_CLOCK
#define PSK_CLOCK CLOCK_MONOTONIC
#endif
static double now(void) { struct timespec t; clock_gettime(PSK_CLOCK, &t);
                          return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    int calls = atoi(argv[3]), repeats = atoi(argv[4]), every = atoi(argv[6]);
    ctx_head *c = pyshark_ocl_ctx_new(atoi(argv[1]), atoi(argv[2]));
    if (!c || c->code) { printf("no context\n"); return 1; }
    int e;
    const char *src = pyshark_ocl_source;
    h prg = clCreateProgramWithSource(c->context, 1, &src, NULL, &e);
    char opts[64]; snprintf(opts, sizeof opts, "-DPYSHARK_NUM_THREADS=%dL", c->nthreads);
    if (clBuildProgram(prg, 1, &c->device, opts, NULL, NULL)) { printf("build\n"); return 1; }
    h k = clCreateKernel(prg, "pyshark_saxpy_parfor0", &e);
    if (!k) { printf("kernel %d\n", e); return 1; }
    h err = clCreateBuffer(c->context, 1, 64, NULL, &e);
    h x = clCreateBuffer(c->context, 1, 64, NULL, &e), y = clCreateBuffer(c->context, 1, 64, NULL, &e);
    h r = clCreateBuffer(c->context, 1, 64, NULL, &e);
    int64_t n = 1, cnt = 1, off = 0; float a = 2;
    /* pyshark_saxpy_parfor0(n, err, cnt, a, x, xo, y, yo, r, ro): the captures sorted by name */
    clSetKernelArg(k, 0, 8, &n); clSetKernelArg(k, 1, sizeof(h), &err);
    clSetKernelArg(k, 2, 8, &cnt); clSetKernelArg(k, 3, 4, &a);
    clSetKernelArg(k, 4, sizeof(h), &x); clSetKernelArg(k, 5, 8, &off);
    clSetKernelArg(k, 6, sizeof(h), &y); clSetKernelArg(k, 7, 8, &off);
    clSetKernelArg(k, 8, sizeof(h), &r); clSetKernelArg(k, 9, 8, &off);
    size_t g = (size_t)atoi(argv[5]), l = g;   /* the native launch's group (runtime's wg) */
    double best = 1e9;
    for (int rep = 0; rep < repeats; rep++) {
        double t0 = now();
        for (int i = 0; i < calls; i++) {
            if (clEnqueueNDRangeKernel(c->queue, k, 1, NULL, &g, &l, 0, NULL, NULL)) return 2;
            if ((i + 1) % every == 0) clFinish(c->queue);
        }
        clFinish(c->queue);
        double t = (now() - t0) / calls;
        if (t < best) best = t;
    }
    printf("%.2f\n", best * 1e6);
    return 0;
}
"""


def c_env(loader_dir: str) -> dict:
    """What a C program needs to find the runtimes pyopencl's bundled ICD
    loader finds in Python (docs/opencl-backend.md, "Native host code")."""
    import pyopencl
    env = dict(os.environ)
    env.setdefault("PYOPENCL_HOME", os.environ.get("PYOPENCL_HOME")
                   or str(Path(pyopencl.__file__).parent))
    env["LD_LIBRARY_PATH"] = loader_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    return env


CLOCK = [time.perf_counter]     # --cpu: time.thread_time


EVERY = 64                          # the no-wait rows: a finish every EVERY calls


def per_call(fn, calls: int, repeats: int) -> float:
    clock = CLOCK[0]
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        for _ in range(calls):
            fn()
        best = min(best, (clock() - t0) / calls)
    return best * 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of every row")
    ap.add_argument("--steps", type=int, default=2000,
                    help="iterations of hotspot and pathfinder for the per-iteration rows")
    ap.add_argument("--cpu", action="store_true",
                    help="the calling thread's CPU time instead of wall time (time.thread_time, "
                         "CLOCK_THREAD_CPUTIME_ID): steadier on a shared machine, blind to waits")
    args = ap.parse_args(argv)
    if args.cpu:
        CLOCK[0] = time.thread_time
    import numpy as np
    from pyshark import Wrapper
    from pyshark.codegen.opencl import runtime
    from pyshark.codegen.opencl.icd import loader_library
    tmp = Path(tempfile.mkdtemp(prefix="ocl-floor-"))
    (tmp / "m.py").write_text(SRC)
    dev = runtime.device(args.device)
    rows = {}
    wrappers = {}
    for host in ("native", "native (fast path off)", "python"):
        os.environ["PYSHARK_OPENCL_HOST"] = host.split()[0]
        # the native host's C fast path (native/fastcall.c) or its Python path
        os.environ["PYSHARK_OPENCL_FASTCALL"] = "0" if "off" in host else "1"
        w = Wrapper("opencl", cache_dir=tmp / "cache", device=args.device, device_arrays=True)
        w.add_source_file(tmp / "m.py")
        w.compile_and_load()
        w.saxpy                         # bound now, under that setting
        wrappers[host] = w
    os.environ.pop("PYSHARK_OPENCL_FASTCALL")
    x = wrappers["native"].saxpy(1.0, np.ones(1, np.float32), np.zeros(1, np.float32))
    for host, w in wrappers.items():
        f = w.saxpy
        assert float(f(2.0, x, x).get()[0]) == 3.0
        rows[host] = lambda f=f: (f(np.float32(2.0), x, x), dev.queue.finish())
    # the same calls without a wait each (a finish every EVERY calls, as the C loop's):
    # the host time of a call beside that of a bare clEnqueueNDRangeKernel
    count = [0]

    def no_wait(f=wrappers["native"].saxpy, two=np.float32(2.0)):
        f(two, x, x)
        count[0] += 1
        if count[0] % EVERY == 0:
            dev.queue.finish()
    # the C floor, over the native module's library
    [lib] = (tmp / "cache").rglob("module.so")
    plat, devi = _indexes(dev)
    exe = tmp / "floor"
    loader = Path(loader_library())
    clock = ["-DPSK_CLOCK=CLOCK_THREAD_CPUTIME_ID"] if args.cpu else []
    subprocess.run(["gcc", "-O2", *clock, "-x", "c", "-", "-x", "none", "-o", str(exe), str(lib),
                    str(loader), f"-Wl,-rpath,{lib.parent}:{loader.parent}"], input=FLOOR_C,
                   text=True, check=True)
    env = c_env(str(loader.parent))
    result = {}
    for rnd in range(args.rounds):      # interleaved: floor, native, python, per round
        def floor(every):
            r = subprocess.run([str(exe), str(plat), str(devi), str(args.calls),
                                str(args.repeats), str(dev.wg), str(every)],
                               capture_output=True, text=True, env=env, check=True)
            return float(r.stdout)
        result.setdefault("C floor: clEnqueueNDRangeKernel + clFinish", []).append(floor(1))
        for host, fn in rows.items():
            result.setdefault(f"{host}: saxpy(1 elem, DeviceArrays) + finish", []).append(
                per_call(fn, args.calls, args.repeats))
        result.setdefault(f"C: clEnqueueNDRangeKernel, a clFinish every {EVERY}", []).append(
            floor(EVERY))
        result.setdefault(f"native: saxpy(...), a finish every {EVERY}", []).append(
            per_call(no_wait, args.calls, args.repeats))
    what = "CPU time of the calling thread" if args.cpu else "wall"
    print(f"device: {dev.name}; us per call ({what}), best of {args.repeats} x {args.calls} "
          f"calls, {args.rounds} interleaved rounds")
    for name, vals in result.items():
        print(f"  {name:55s} " + "  ".join(f"{v:8.2f}" for v in vals))
    for name, us in per_iteration(tmp, args.device, args.steps).items():
        print(f"  {name:55s} {us:8.2f}")


def per_iteration(tmp: Path, device, steps: int) -> dict:
    """{row: us per iteration} of hotspot (16x16 grid) and pathfinder (16
    columns) on the native host, from calls of 1 and `steps` iterations."""
    import numpy as np
    from pyshark import Wrapper
    here = Path(__file__).parent / "programs"
    os.environ["PYSHARK_OPENCL_HOST"] = "native"
    w = Wrapper("opencl", cache_dir=tmp / "cache-iter", device=device)
    w.add_source_file(here / "hotspot.py").add_source_file(here / "pathfinder.py")
    w.compile_and_load()
    grid = np.full((16, 16), 300.0, np.float32)
    power = np.full((16, 16), 0.5, np.float32)
    walls = {k: np.ones((k, 16), np.int32) for k in (2, steps + 1)}

    def best(fn, repeats=5):
        fn()
        out = float("inf")
        for _ in range(repeats):
            t0 = CLOCK[0]()
            fn()
            out = min(out, CLOCK[0]() - t0)
        return out
    hot = (best(lambda: w.hotspot(steps, grid, power))
           - best(lambda: w.hotspot(1, grid, power))) / (steps - 1)
    path = (best(lambda: w.pathfinder(walls[steps + 1]))
            - best(lambda: w.pathfinder(walls[2]))) / (steps - 1)
    return {"hotspot: per step (16x16, native host loop)": hot * 1e6,
            "pathfinder: per row (16 columns, native host loop)": path * 1e6}


def _indexes(dev) -> tuple:
    from pyshark.codegen.opencl.devices import platforms
    for p, (plat, devs) in enumerate(platforms()):
        for d, x in enumerate(devs):
            if x.int_ptr == dev.dev.int_ptr:
                return p, d
    raise RuntimeError("device not listed")


if __name__ == "__main__":
    main(sys.argv[1:])
