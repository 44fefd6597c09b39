"""A/B of fuse.py's fusion across a zip's length assert (session 31): one
benchmark program at one size, compiled optimised in this process
(tiered=False, a fresh cache), min of 7 windows of 0.2 s. "old" switches the
rule off (Facts.same_value back to same_atom, no reordering of one class).

    python scripts/fuse_ab.py old|new PROGRAM SIZE     (from the repository root)
"""
import os
import sys
import tempfile
import time

variant, prog, size = sys.argv[1:4]
os.environ["PYSHARK_CACHE_DIR"] = tempfile.mkdtemp()
from pyshark.codegen.opt import analysis as A, fuse as F  # noqa: E402
if variant == "old":
    A.Facts.same_value = lambda self, a, b: A.same_atom(self.resolve(a), self.resolve(b))
    F.one_class = lambda *c: False
import pyshark  # noqa: E402
from pyshark.benchmarks.suite import BY_NAME  # noqa: E402

b = BY_NAME[prog]
args = b.make_inputs(size, 0)
w = pyshark.Wrapper("cpu", tiered=False).add_source_file(
    f"benchmarks/programs/{b.module}.py").compile_and_load()
fn = getattr(w, b.entry)
fn(*args)
best = 1e9
for _ in range(7):
    t0, k = time.perf_counter(), 0
    while time.perf_counter() - t0 < 0.2:
        fn(*args)
        k += 1
    best = min(best, (time.perf_counter() - t0) / k)
print(variant, prog, size, f"{best * 1e3:.3f} ms")
