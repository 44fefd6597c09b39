"""scatter_dups at 2^23 on the cpu backend: PyShark's call against the Numba
peer, and the peer's scalar loop after PyShark's copy of the destination
(64 KiB chunks, each a memcpy: `rep movsb` on this AMD) against after
NumPy's (one memcpy: glibc's vector loop), ABBA rounds in one process
(probe_util.ab): (ms A, ms B, median per-round ratio A/B).

    python scripts/scatter_copy_probe.py [threads]
"""
import os
import sys
import tempfile

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_util import ab  # noqa: E402

import pyshark  # noqa: E402
from pyshark.benchmarks.peers import numba_peers  # noqa: E402
from pyshark.benchmarks.suite import BY_NAME  # noqa: E402

b = BY_NAME["scatter_dups"]
dest, idxs, vals = b.make_inputs("medium", 0)
threads = int(sys.argv[1]) if len(sys.argv) > 1 else None
w = pyshark.Wrapper("cpu", cache_dir=tempfile.mkdtemp(), tiered=False, num_threads=threads)
w.add_source_file(b.path)
w.compile_and_load()
f = w.scatter_dups
nothing = np.zeros(0, np.int64)


@numba.njit
def loop_only(out, idxs, vals):
    m = len(out)
    for j in range(len(idxs)):
        i = idxs[j]
        if 0 <= i < m:
            out[i] = vals[j]
    return out


g = numba_peers.scatter_dups
g(dest, idxs, vals)
loop_only(dest.copy(), idxs, vals)
print("PyShark vs Numba              ", ab(lambda: f(dest, idxs, vals), lambda: g(dest, idxs, vals)))
print("PyShark's copy vs NumPy's     ", ab(lambda: f(dest, nothing, nothing), dest.copy))
print("loop after NumPy's vs PyShark's", ab(lambda: loop_only(dest.copy(), idxs, vals),
                                           lambda: loop_only(f(dest, nothing, nothing), idxs, vals)))
