"""sgemm's parts at several thread counts: the whole entry, the product with
B already transposed, the transpose alone, a map of C's size, numpy's
empty_like; with NUMBA=1 the Numba peer at the same thread count too.

Environment: REPO (the checkout), SIZE (default small), THREADS (default
1,4,8,16), NUMBA=1. Session 32 (benchmarks/README.md): probes/4-* ran it
as is, probes/3-sgemm-threads.txt an earlier form of it with the whole
entry and Numba only at 1,2,4,8,12,16 threads."""
import os, sys
import numpy as np, pyshark
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_util import best_ms  # noqa: E402
from pyshark.benchmarks.suite import BY_NAME
REPO = os.environ.get("REPO", ".")
b = BY_NAME["sgemm"]
A, B, C, alpha, beta = b.make_inputs(os.environ.get("SIZE", "small"), 0)
BT = np.ascontiguousarray(B.T)
SRC = '''
import pyshark.prelude as ps
M = ps.Array[ps.Array[ps.f32]]
@ps.entry
def prod_t(a: M, bt: M) -> M:
    return ps.map(lambda xs: ps.map(lambda ys: ps.sum(ps.map(lambda x, y: x * y, xs, ys)), bt), a)
@ps.entry
def trans(b: M) -> M:
    return ps.map(lambda r: ps.map(lambda x: x * ps.f32(1.0), r), ps.transpose(b))
@ps.entry
def twice(c: M) -> M:
    return ps.map(lambda r: ps.map(lambda x: x * ps.f32(2.0), r), c)
'''
def best(f, *a):
    return best_ms(f, *a, windows=7, window_s=0.02) * 1e3
nb = None
if os.environ.get("NUMBA") == "1":
    import numba
    from pyshark.benchmarks.peers import load_peer
    nb = load_peer("numba")[0]
for nt in (int(x) for x in os.environ.get("THREADS", "1,4,8,16").split(",")):
    w = pyshark.Wrapper("cpu", num_threads=nt).add_source_file(f"{REPO}/benchmarks/programs/sgemm.py").compile_and_load()
    w.wait_optimised()
    v = pyshark.Wrapper("cpu", num_threads=nt).add_source(SRC, name="parts").compile_and_load()
    v.wait_optimised()
    line = (f"threads {nt:2d}: sgemm {best(w.sgemm, A, B, C, alpha, beta):6.1f}  prod_t {best(v.prod_t, A, BT):6.1f}"
            f"  trans {best(v.trans, B):5.1f}  twice {best(v.twice, C):5.1f}  np.empty_like(C) {best(np.empty_like, C):4.1f} us")
    if nb is not None:
        numba.set_num_threads(nt)
        line += f"  numba {best(nb.sgemm, A, B, C, alpha, beta):6.1f} us"
    print(line, flush=True)
