"""A benchmark program in a fresh process, per 20 ms window of back-to-back
calls: ms per call, minor faults, and voluntary and involuntary context
switches per call (threads that slept: libgomp's team at a barrier).

Environment: REPO (the checkout), BENCH (default hotspot_rodinia), SIZE
(default small), PEER=numba (time the Numba peer instead), LOADED=k (k
busy-loop processes meanwhile), WINDOWS (default 8), PLACE=t,p
(hotspot_rodinia: temp and power at these offsets modulo 4096), SHIM=bytes
(a malloc before timing), GOMP_SPINCOUNT as libgomp reads it,
PYSHARK_THREADS=team|gomp and PYSHARK_SPIN_US as codegen/cpu/team.py reads
them. Used for docs/cpu-backend.md, "The thread team" (session 32) and
"Before session 32" (session 31)."""
import os, sys, time, resource
import numpy as np, pyshark
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_util import placed  # noqa: E402
from pyshark.benchmarks.suite import BY_NAME
REPO = os.environ["REPO"]
b = BY_NAME[os.environ.get("BENCH", "hotspot_rodinia")]
args = b.make_inputs(os.environ.get("SIZE", "small"), 0)
it, temp, power = (args + (None, None, None))[:3]
keep = []
if os.environ.get("PLACE") and b.name == "hotspot_rodinia":
    t_, p_ = (int(x) for x in os.environ["PLACE"].split(","))
    temp, power = placed(temp, t_, keep), placed(power, p_, keep)
w = pyshark.Wrapper("cpu").add_source_file(f"{REPO}/benchmarks/programs/{b.module}.py").compile_and_load()
w.wait_optimised()
fn = getattr(w, b.entry)
if os.environ.get("PEER") == "numba":
    from pyshark.benchmarks.peers import load_peer
    fn = getattr(load_peer("numba")[0], b.entry)
if b.name == "hotspot_rodinia":
    args = (it, temp, power)
r = fn(*args)
print(f"{b.name} {os.environ.get('SIZE', 'small')} spin={os.environ.get('GOMP_SPINCOUNT')} load={os.environ.get('LOADED', '')} peer={os.environ.get('PEER', 'ps')}")
if os.environ.get("SHIM"):
    import ctypes
    libc = ctypes.CDLL(None); libc.malloc.restype = ctypes.c_void_p
    del r
    shim = libc.malloc(int(os.environ["SHIM"]))
    r = fn(*args); r = fn(*args)
    print(f"  shim {os.environ['SHIM']}: out%4096={r.ctypes.data % 4096} temp%4096={args[1].ctypes.data % 4096} power%4096={args[2].ctypes.data % 4096}")
if os.environ.get("SLEEP"):
    time.sleep(float(os.environ["SLEEP"]))
rows = []
import subprocess
busy = [subprocess.Popen([sys.executable, "-c", "import time\nend=time.monotonic()+20\nwhile time.monotonic()<end: pass"]) for _ in range(int(os.environ.get("LOADED", "0") or 0))]
time.sleep(0.2 if busy else 0)
for _ in range(int(os.environ.get("WINDOWS", "8"))):
    r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter(); k = 0
    while time.perf_counter() - t0 < 0.02:
        fn(*args); k += 1
    dt = (time.perf_counter() - t0) / k; r1 = resource.getrusage(resource.RUSAGE_SELF)
    rows.append(f"{dt*1e3:.3f}ms flt {(r1.ru_minflt-r0.ru_minflt)/k:.0f} vcs {(r1.ru_nvcsw-r0.ru_nvcsw)/k:.1f} ivcs {(r1.ru_nivcsw-r0.ru_nivcsw)/k:.1f}")
for p in busy: p.kill()
print("  " + " | ".join(rows), flush=True)
