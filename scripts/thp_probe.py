"""hotspot_rodinia small after programs that leave MADV_HUGEPAGE heap areas:
per 20 ms window ms/call, minor faults, vol/invol switches per call, and the
process's AnonHugePages; THPOFF=1 disables THP for the process first;
THREADS=n runs hotspot_rodinia (PyShark and, with NUMBA=1, the Numba peer
too) on n threads; AFTER the programs run first (session 32)."""
import os, sys, time, resource, ctypes
if os.environ.get("THPOFF") == "1":
    ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)
import numpy as np, pyshark
from pyshark.benchmarks.suite import BY_NAME
from pyshark.benchmarks.peers import load_peer
REPO = os.environ["REPO"]
nb, _ = load_peer("numba")
def ps(b):
    w = pyshark.Wrapper("cpu").add_source_file(f"{REPO}/benchmarks/programs/{b.module}.py").compile_and_load()
    w.wait_optimised(); return getattr(w, b.entry)
def huge():
    for l in open("/proc/self/smaps_rollup"):
        if l.startswith("AnonHugePages"): return l.split()[1] + "kB"
hr = BY_NAME["hotspot_rodinia"]; args = hr.make_inputs("small", 0); f = ps(hr)
NT = int(os.environ.get("THREADS", "0") or 0)
if NT:
    w = pyshark.Wrapper("cpu", num_threads=NT).add_source_file(f"{REPO}/benchmarks/programs/{hr.module}.py").compile_and_load()
    w.wait_optimised(); f = getattr(w, hr.entry)
    import numba; numba.set_num_threads(NT)
def windows(tag):
    rows = []
    for label, g in [("ps", f)] + ([("nb", nb.hotspot_rodinia)] if os.environ.get("NUMBA") == "1" else []):
        rows.append(label + " " + one(g))
    print(f"{tag:18s} huge {huge():>9s} | " + " | ".join(rows), flush=True)
def one(f):
    f(*args); rows = []
    for _ in range(int(os.environ.get("WINDOWS", "5"))):
        r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter(); k = 0
        while time.perf_counter() - t0 < 0.02: f(*args); k += 1
        dt = (time.perf_counter() - t0) / k; r1 = resource.getrusage(resource.RUSAGE_SELF)
        rows.append(f"{dt*1e3:.3f} f{(r1.ru_minflt-r0.ru_minflt)/k:.0f} v{(r1.ru_nvcsw-r0.ru_nvcsw)/k:.1f}")
    return " ".join(rows)
windows("fresh")
for name in os.environ.get("AFTER", "mandelbrot,kmeans,crystal,srad").split(","):
    b = BY_NAME[name]
    for size in ("small", "medium"):
        a = b.make_inputs(size, 0)
        for g in (ps(b), getattr(nb, b.entry)):
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 0.2: g(*a)
        del a
    windows("after " + name)
