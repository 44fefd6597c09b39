"""hotspot_rodinia (ps and numba) in one process, timed fresh and after each
of a list of programs ran (ps and numba, small and medium, 0.2 s each);
inputs made once, so only the process's state changes. Each line: min ms a
call of 7 windows (thread sleeps a call), and where the result blocks and
the inputs lie (offset modulo 4096 / 4 KiB page within its 2 MiB, and
whether the page is a transparent huge page: H, or 4k; needs root for
/proc/kpageflags).

Environment: REPO (the checkout), SIZE (default small), AFTER (programs,
comma-separated), THPOFF=1 (prctl PR_SET_THP_DISABLE first). Used in
session 31 (benchmarks/README.md) on the H100 machine's host."""
import os, sys, time, resource
import ctypes
if os.environ.get("THPOFF") == "1":
    print("PR_SET_THP_DISABLE", ctypes.CDLL(None).prctl(41, 1, 0, 0, 0))
import numpy as np, pyshark
from pyshark.benchmarks.suite import BY_NAME
from pyshark.benchmarks.peers import load_peer
REPO = os.environ["REPO"]
nb, _ = load_peer("numba")
ws = {}
def ps_fn(b):
    if b.module not in ws:
        w = pyshark.Wrapper("cpu").add_source_file(f"{REPO}/benchmarks/programs/{b.module}.py").compile_and_load()
        w.wait_optimised(); ws[b.module] = w
    return getattr(ws[b.module], b.entry)
def t(fn, args):
    fn(*args); best = 1e9; v0 = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw; k = 0
    for _ in range(7):
        t0 = time.perf_counter(); j = 0
        while time.perf_counter() - t0 < 0.02: fn(*args); j += 1
        k += j
        best = min(best, (time.perf_counter() - t0) / j)
    return best * 1e3, (resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - v0) / k
hr = BY_NAME["hotspot_rodinia"]
args = hr.make_inputs(os.environ.get("SIZE", "small"), 0)
import struct
def thp(addr):
    """(THP?, present?) of the page holding addr (root: pagemap + kpageflags)."""
    try:
        with open("/proc/self/pagemap", "rb") as f:
            f.seek((addr // 4096) * 8); (e,) = struct.unpack("Q", f.read(8))
        if not e >> 63 & 1: return "np"
        pfn = e & ((1 << 55) - 1)
        with open("/proc/kpageflags", "rb") as f:
            f.seek(pfn * 8); (fl,) = struct.unpack("Q", f.read(8))
        return "H" if fl >> 22 & 1 else "4k"
    except Exception as ex:
        return "?"
def where(a):
    p = a.ctypes.data
    return f"{p % 4096:4d}/{p % (1 << 21) >> 12:3d}p {thp(p)},{thp(p + a.nbytes // 2)}"
def report(tag):
    (a, sa), (b, sb) = t(ps_fn(hr), args), t(nb.hotspot_rodinia, args)
    r1 = ps_fn(hr)(*args); r2 = ps_fn(hr)(*args)
    print(f"{tag:24s} ps {a:.3f} ({sa:.1f})  nb {b:.3f} ({sb:.1f})  out {where(r1)} | {where(r2)}  in {where(args[1])} {where(args[2])}", flush=True)
report("fresh")
for name in os.environ.get("AFTER", "scatter_distinct,mandelbrot,pathfinder,kmeans,blackscholes,srad,sgemm,mri_q,crystal,backprop").split(","):
    b = BY_NAME[name]
    for size in ("small", "medium"):
        a = b.make_inputs(size, 0)
        for f in (ps_fn(b), getattr(nb, b.entry, None)):
            if f is None: continue
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 0.2: f(*a)
        del a
    report("after " + name)
