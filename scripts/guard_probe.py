"""The parallel work guard before session 34 (an If counted as both branches,
4 statements a unit) and after (its longer branch, 2 statements a unit):
programs at a size (prog:size ...), us per call, best of windows, rounds
interleaved, the Numba peer beside; one process.

    python scripts/guard_probe.py crystal:tiny kmeans:tiny hotspot_rodinia:tiny
"""
import sys, os, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_util import best_ms
import pyshark
from pyshark.benchmarks.suite import BY_NAME
from pyshark.benchmarks.peers import numba_peers, numba_ports
import pyshark.codegen.par_work as pw
new = pw._straight


def straight_sum(block, combine=None):
    """the old rule: an If counts both branches (par_work's recursion comes
    back through the module's name, which is this function while patched)"""
    return new(block, lambda a, b: a + b)


VARIANTS = {"before": (straight_sum, 4), "after": (new, pw.STMS_PER_UNIT)}
for spec in sys.argv[1:]:
    prog, size = spec.split(":")
    b = BY_NAME[prog]
    args = b.make_inputs(size, 0)
    fs = {}
    for name, (fn, stms) in VARIANTS.items():
        pw._straight, pw.STMS_PER_UNIT = fn, stms
        w = pyshark.Wrapper("cpu", cache_dir=tempfile.mkdtemp(), tiered=False)
        w.add_source_file(b.path); w.compile_and_load()
        fs[name] = (w, getattr(w, b.entry))
    pw._straight, pw.STMS_PER_UNIT = VARIANTS["after"]
    g = getattr(numba_peers, b.entry, None) or getattr(numba_ports, b.entry)
    res = {k: [] for k in list(fs) + ["numba"]}
    for r in range(4):
        for k, (w, f) in fs.items():
            res[k].append(best_ms(f, *args, windows=3, window_s=0.05))
        res["numba"].append(best_ms(g, *args, windows=3, window_s=0.05))
    line = "  ".join(f"{k}: {min(v)*1e3:8.2f}" for k, v in res.items())
    print(f"{prog:18s} {size:6s} us  {line}", flush=True)
