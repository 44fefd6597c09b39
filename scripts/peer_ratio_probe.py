"""PyShark's entry against its Numba peer in one fresh process: nine rounds,
each the best of three 50 ms windows of back-to-back calls for both (the
order alternating); prints the medians and the median per-round ratio, so
that two versions of PyShark can be compared across processes by their
ratio to the same peer (the machine's speed drifts between processes).

    REPO=. [TAG=new] python -P scripts/peer_ratio_probe.py hotspot_rodinia:small ...
    TAG=old PYTHONPATH=/path/to/old/site:... python -P scripts/peer_ratio_probe.py ...

Session 35 (benchmarks/README.md) ran old and new in alternating processes."""
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_util import best_ms  # noqa: E402

import pyshark  # noqa: E402
from pyshark.benchmarks.peers import numba_peers, numba_ports  # noqa: E402
from pyshark.benchmarks.suite import BY_NAME  # noqa: E402

for spec in sys.argv[1:]:
    prog, size = spec.split(":")
    b = BY_NAME[prog]
    args = b.make_inputs(size, 0)
    w = pyshark.Wrapper("cpu", cache_dir=tempfile.mkdtemp(), tiered=False)
    w.add_source_file(b.path)
    w.compile_and_load()
    f = getattr(w, b.entry)
    g = getattr(numba_peers, b.entry, None) or getattr(numba_ports, b.entry)
    ps, nb, ratios = [], [], []
    for r in range(9):
        pair = (f, g) if r % 2 else (g, f)
        t = {fn: best_ms(fn, *args, windows=3, window_s=0.05) for fn in pair}
        ps.append(t[f])
        nb.append(t[g])
        ratios.append(t[f] / t[g])
    print(f"{os.environ.get('TAG', '')} {spec} ps {statistics.median(ps):.4f} numba "
          f"{statistics.median(nb):.4f} ratio {statistics.median(ratios):.3f}", flush=True)
