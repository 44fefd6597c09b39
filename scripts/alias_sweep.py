"""hotspot_rodinia small on THREADS threads (default 1) with its inputs
placed at each offset modulo 4 KiB in turn (temp and power together,
power OFFSET2 bytes after temp's offset), in one process: ms a call (min of
windows) and the output grid's offset. Tests the 4K-aliasing lead of
session 32 (benchmarks/README.md): a stencil whose output starts a little
past an input modulo 4 KiB stalls its loads behind recent stores."""
import os, sys
import pyshark
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_util import best_ms, placed  # noqa: E402
from pyshark.benchmarks.suite import BY_NAME
REPO = os.environ["REPO"]
hr = BY_NAME["hotspot_rodinia"]
it, temp, power = hr.make_inputs(os.environ.get("SIZE", "small"), 0)[:3]
NT = int(os.environ.get("THREADS", "1"))
w = pyshark.Wrapper("cpu", num_threads=NT).add_source_file(
    f"{REPO}/benchmarks/programs/{hr.module}.py").compile_and_load()
w.wait_optimised()
f = getattr(w, hr.entry)
keep = []
d2 = int(os.environ.get("OFFSET2", "64"))
r = f(it, temp, power)
for off in range(0, 4096, int(os.environ.get("STEP", "256"))):
    t, p = placed(temp, off, keep), placed(power, (off + d2) % 4096, keep)
    outs = {f(it, t, p).ctypes.data % 4096 for _ in range(3)}
    print(f"temp%4096={off:4d} power%4096={(off + d2) % 4096:4d} out%4096={sorted(outs)}  {best_ms(f, it, t, p):.3f} ms", flush=True)
