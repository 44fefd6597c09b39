"""hotspot_rodinia small as written (three divisions a cell) and with
reciprocals (the benchmark program with `/ rx`, `/ ry`, `/ rz` replaced by
multiplications with reciprocals computed once per step: what the Numba
peer does, a different rounding), and the Numba peer, at
THREADS (default 1,16) threads, fresh process: ms a call, min of windows.
Session 32 (benchmarks/README.md): is the per-thread gap to Numba on the
Intel host the divisions?"""
import os, sys
import pyshark, numba
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_util import best_ms  # noqa: E402
from pyshark.benchmarks.suite import BY_NAME
from pyshark.benchmarks.peers import load_peer
REPO = os.environ["REPO"]
hr = BY_NAME["hotspot_rodinia"]
args = hr.make_inputs(os.environ.get("SIZE", "small"), 0)[:3]
nb = load_peer("numba")[0]
PROGRAM = f"{REPO}/benchmarks/programs/hotspot_rodinia.py"


def with_reciprocals(text: str) -> str:
    """The program text with the cell's divisions by rx, ry and rz made
    multiplications by reciprocals hoisted out of the cell function."""
    hoist = "    col = len(temp[0])\n"
    assert text.count(hoist) >= 1
    for d in ("rx", "ry", "rz"):
        text = text.replace(f"/ {d}", f"* {d}_1")
    return text.replace(hoist, hoist + "\n    rx_1 = ps.f32(1.0) / rx\n    ry_1 = ps.f32(1.0) / ry\n"
                        "    rz_1 = ps.f32(1.0) / rz\n", 1)


for nt in (int(x) for x in os.environ.get("THREADS", "1,16").split(",")):
    fs = {}
    text = open(PROGRAM).read()
    for tag, src in (("divide", text), ("reciprocal", with_reciprocals(text))):
        w = pyshark.Wrapper("cpu", num_threads=nt).add_source(src, name=f"hotspot_{tag}")
        w.compile_and_load()
        w.wait_optimised(); fs[tag] = w.hotspot_rodinia
    numba.set_num_threads(nt)
    print(f"threads {nt:2d}: as written {best_ms(fs['divide'], *args):.3f} ms  reciprocals {best_ms(fs['reciprocal'], *args):.3f} ms"
          f"  numba {best_ms(nb.hotspot_rodinia, *args):.3f} ms", flush=True)
