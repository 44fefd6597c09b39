"""The benchmark suite: which entry of which program, its input sizes, inputs and work.

Each `Benchmark` names a PyShark entry in benchmarks/programs/ (peers define a
function of the same name), its sizes from `tiny` (small enough for the
Python and core backends) to `large` (for a GPU), a generator of inputs from
a seeded numpy Generator, and a model of the work done (bytes that must move
and floating-point operations) for GB/s and GFLOP/s. Tolerances are those
the outputs of different implementations are compared with: float32
reductions summed in a different order differ in the last digits, and a
float32 sum of millions of values in one sequential chain (Python mode's
order, and Numba's per thread) drifts by up to about 1% from a pairwise one
(NumPy's) once the partial sums dwarf the addends, so the tolerance of a
long sum grows with its length.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

PROGRAMS_DIR = Path(__file__).resolve().parent / "programs"

#: sizes, smallest first
SIZES = ("tiny", "small", "medium", "large")
#: what runs when no --sizes is given (large is for the GPU machine)
DEFAULT_SIZES = ("tiny", "small", "medium")

f32 = np.float32


@dataclass(frozen=True)
class Benchmark:
    name: str
    module: str                       # file stem in benchmarks/programs/
    entry: str                        # PyShark entry; also the peers' function name
    sizes: dict                       # size name -> parameters (tiny, and any of the others:
                                      # a case at a size it lacks is not run)
    inputs: Callable                  # (params, rng) -> tuple of entry arguments
    nbytes: Callable | None = None    # params -> bytes that must move (for GB/s)
    flops: Callable | None = None     # (params, output) -> floating-point operations
    streaming: bool = False           # memory-bound: compare GB/s with the copy bandwidth
    rtol: float | Callable = 1e-5    # or params -> rtol
    atol: float = 1e-6
    about: str = ""
    labels: dict = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return PROGRAMS_DIR / f"{self.module}.py"

    def label(self, size: str) -> str:
        """The size's parameters in a few characters: n=2^20, 1024x1024, ..."""
        p = self.sizes[size]
        return ", ".join(f"{k}={_short(v)}" for k, v in p.items())

    def tolerance(self, size: str) -> tuple[float, float]:
        """(rtol, atol) for comparing outputs at this size."""
        rtol = self.rtol(self.sizes[size]) if callable(self.rtol) else self.rtol
        return rtol, self.atol

    def make_inputs(self, size: str, seed: int):
        rng = np.random.default_rng([seed, zlib.crc32(f"{self.name}/{size}".encode())])
        return self.inputs(self.sizes[size], rng)


def _short(v) -> str:
    if isinstance(v, int) and v >= 1024 and v & (v - 1) == 0:
        return f"2^{v.bit_length() - 1}"
    return str(v)


def _streaming_sizes():
    return {"tiny": {"n": 1000}, "small": {"n": 2**20}, "medium": {"n": 2**24},
            "large": {"n": 2**28}}


def _scatter_sizes():
    return {"tiny": {"n": 1000}, "small": {"n": 2**20}, "medium": {"n": 2**23},
            "large": {"n": 2**26}}


def _long_sum_rtol(p) -> float:
    """1e-5 for a short float32 sum, growing to 2% for 2^24 values and more."""
    return min(0.02, 1e-5 + 1e-9 * p["n"])


def _uniform(rng, n):
    return rng.random(n, dtype=f32)


# LocVolCalib's sizes (outer, numX, numY, numT) and inputs, shared by its two entries
_LVC_SIZES = {"tiny": {"outer": 2, "numX": 8, "numY": 16, "numT": 8},
              "small": {"outer": 16, "numX": 32, "numY": 256, "numT": 256},
              "medium": {"outer": 128, "numX": 256, "numY": 32, "numT": 64},
              "large": {"outer": 256, "numX": 256, "numY": 256, "numT": 256}}


def _lvc_inputs(p, r):
    return (p["outer"], p["numX"], p["numY"], p["numT"], f32(0.03), f32(5.0), f32(0.2),
            f32(0.6), f32(0.5))


BENCHMARKS = [
    Benchmark("saxpy", "saxpy", "saxpy", _streaming_sizes(),
              lambda p, r: (f32(2.5), _uniform(r, p["n"]), _uniform(r, p["n"])),
              nbytes=lambda p: 12 * p["n"], streaming=True,
              about="a * x + y (f32)"),
    Benchmark("sum", "sum", "sum_f32", _streaming_sizes(),
              lambda p, r: (_uniform(r, p["n"]),),
              nbytes=lambda p: 4 * p["n"], streaming=True, rtol=_long_sum_rtol, atol=0.0,
              about="sum of f32"),
    Benchmark("dot", "dot", "dot", _streaming_sizes(),
              lambda p, r: (_uniform(r, p["n"]), _uniform(r, p["n"])),
              nbytes=lambda p: 8 * p["n"], streaming=True, rtol=_long_sum_rtol, atol=0.0,
              about="dot product (f32)"),
    Benchmark("prefix_sum", "prefix_sum", "prefix_sum", _streaming_sizes(),
              lambda p, r: (r.integers(-100, 100, p["n"], dtype=np.int32),),
              nbytes=lambda p: 8 * p["n"], streaming=True,
              about="inclusive scan of i32"),
    Benchmark("filter", "filter", "filter_above", _streaming_sizes(),
              lambda p, r: (_uniform(r, p["n"]), f32(0.5)),
              nbytes=lambda p: 6 * p["n"], streaming=True,
              about="keep the f32 elements > 0.5 (half of them)"),
    Benchmark("histogram", "histogram", "histogram", _streaming_sizes(),
              lambda p, r: (r.integers(0, 256, p["n"], dtype=np.int32),),
              nbytes=lambda p: 4 * p["n"], streaming=True,
              about="counts in 256 bins of i32 values"),
    Benchmark("max_histogram", "histogram", "max_histogram", _streaming_sizes(),
              lambda p, r: (r.integers(0, 256, p["n"], dtype=np.int32), _uniform(r, p["n"])),
              nbytes=lambda p: 8 * p["n"], streaming=True,
              about="largest f32 value per bin, 256 bins"),
    Benchmark("scatter_distinct", "scatter", "scatter_distinct", _scatter_sizes(),
              lambda p, r: (np.zeros(p["n"], np.int64), r.permutation(p["n"]).astype(np.int64),
                            r.integers(-10**9, 10**9, p["n"])),
              nbytes=lambda p: 32 * p["n"],
              about="i64 values to a permutation of the indices (no duplicates)"),
    Benchmark("scatter_dups", "scatter", "scatter_dups", _scatter_sizes(),
              lambda p, r: (np.zeros(p["n"], np.int64),
                            r.integers(0, max(1, p["n"] // 4), p["n"]).astype(np.int64),
                            r.integers(-10**9, 10**9, p["n"])),
              nbytes=lambda p: 32 * p["n"],
              about="i64 values to indices with duplicates (last wins)"),
    Benchmark("matmul", "matmul", "matmul",
              {"tiny": {"n": 16}, "small": {"n": 256}, "medium": {"n": 1024},
               "large": {"n": 4096}},
              lambda p, r: (_uniform(r, (p["n"], p["n"])), _uniform(r, (p["n"], p["n"]))),
              flops=lambda p, out: 2 * p["n"] ** 3, rtol=1e-4, atol=1e-4,
              about="n x n f32 matrices"),
    Benchmark("matmul_2048", "matmul", "matmul", {"tiny": {"n": 16}, "large": {"n": 2048}},
              lambda p, r: (_uniform(r, (p["n"], p["n"])), _uniform(r, (p["n"], p["n"]))),
              flops=lambda p, out: 2 * p["n"] ** 3, rtol=1e-4, atol=1e-4,
              about="n x n f32 matrices, the GPU's size between 1024 and 4096"),
    Benchmark("matmul_f64", "matmul", "matmul_f64",
              {"tiny": {"n": 16}, "small": {"n": 256}, "medium": {"n": 1024},
               "large": {"n": 4096}},
              lambda p, r: (r.random((p["n"], p["n"])), r.random((p["n"], p["n"]))),
              flops=lambda p, out: 2 * p["n"] ** 3, rtol=1e-9, atol=1e-9,
              about="n x n f64 matrices"),
    Benchmark("matmul_f64_2048", "matmul", "matmul_f64", {"tiny": {"n": 16}, "large": {"n": 2048}},
              lambda p, r: (r.random((p["n"], p["n"])), r.random((p["n"], p["n"]))),
              flops=lambda p, out: 2 * p["n"] ** 3, rtol=1e-9, atol=1e-9,
              about="n x n f64 matrices, the GPU's size between 1024 and 4096"),
    Benchmark("nbody", "nbody", "nbody_step",
              {"tiny": {"n": 64}, "small": {"n": 2048}, "medium": {"n": 16384},
               "large": {"n": 65536}},
              lambda p, r: _nbody_inputs(p["n"], r),
              flops=lambda p, out: 20 * p["n"] ** 2, rtol=1e-4, atol=1e-6,
              about="one all-pairs step, 20 flops per pair (f32)"),
    Benchmark("mandelbrot", "mandelbrot", "mandelbrot",
              {"tiny": {"w": 32, "h": 24, "iter": 50}, "small": {"w": 512, "h": 384, "iter": 100},
               "medium": {"w": 1536, "h": 1024, "iter": 256},
               "large": {"w": 4096, "h": 4096, "iter": 256}},
              lambda p, r: (p["w"], p["h"], np.int32(p["iter"]), f32(-2.25), f32(-1.25),
                            f32(0.75), f32(1.25)),
              flops=lambda p, out: 8 * int(np.asarray(out, dtype=np.int64).sum()),
              about="escape counts (i32) over f32 points; 8 flops per iteration run"),
    Benchmark("hotspot", "hotspot", "hotspot",
              {"tiny": {"n": 16, "iter": 4}, "small": {"n": 512, "iter": 20},
               "medium": {"n": 1024, "iter": 100}, "large": {"n": 4096, "iter": 100}},
              lambda p, r: (p["iter"], f32(323.0) + f32(20.0) * _uniform(r, (p["n"], p["n"])),
                            f32(1e-3) * _uniform(r, (p["n"], p["n"]))),
              nbytes=lambda p: 12 * p["n"] ** 2 * p["iter"],
              flops=lambda p, out: 15 * p["n"] ** 2 * p["iter"], rtol=1e-5, atol=1e-3,
              about="n x n f32 grid, iter steps of a 5-point stencil"),
    Benchmark("pathfinder", "pathfinder", "pathfinder",
              {"tiny": {"rows": 8, "cols": 64}, "small": {"rows": 100, "cols": 100_000},
               "medium": {"rows": 100, "cols": 1_000_000},
               "large": {"rows": 1000, "cols": 1_000_000}},
              lambda p, r: (r.integers(0, 10, (p["rows"], p["cols"]), dtype=np.int32),),
              nbytes=lambda p: 12 * p["rows"] * p["cols"],
              about="rows x cols i32 weights, one dynamic-programming row at a time"),
    Benchmark("kmeans", "kmeans", "kmeans_step",
              {"tiny": {"n": 256, "d": 4, "k": 4}, "small": {"n": 100_000, "d": 16, "k": 16},
               "medium": {"n": 1_000_000, "d": 16, "k": 16},
               "large": {"n": 4_000_000, "d": 32, "k": 32}},
              lambda p, r: _kmeans_inputs(p, r),
              flops=lambda p, out: 3 * p["n"] * p["k"] * p["d"], rtol=1e-3, atol=1e-4,
              about="one assignment + update step, n points of d f32 values, k clusters"),
    Benchmark("blackscholes", "blackscholes", "blackscholes", _streaming_sizes(),
              lambda p, r: (f32(5.0) + f32(25.0) * _uniform(r, p["n"]),
                            f32(1.0) + f32(99.0) * _uniform(r, p["n"]),
                            f32(0.25) + f32(9.75) * _uniform(r, p["n"]), f32(0.02), f32(0.3)),
              nbytes=lambda p: 20 * p["n"], rtol=1e-4, atol=1e-4,
              about="call and put prices of n f32 options"),
    Benchmark("locvolcalib", "locvolcalib", "locvolcalib", _LVC_SIZES, _lvc_inputs,
              rtol=1e-4, atol=1e-6,
              about="FinPar; sizes are outer, numX, numY, numT (small and medium as FinPar's)"),
    Benchmark("locvolcalib_outside", "locvolcalib", "locvolcalib_outside", _LVC_SIZES,
              _lvc_inputs, rtol=1e-4, atol=1e-6,
              about="locvolcalib written loop-outside (the time loop over a map of the strikes); "
                    "the same peers"),
    # issue 17: programs in their original authors' shapes (benchmarks/programs/*, docstrings)
    Benchmark("hotspot_rodinia", "hotspot_rodinia", "hotspot_rodinia",
              {"tiny": {"n": 16, "iter": 4}, "small": {"n": 512, "iter": 20},
               "medium": {"n": 1024, "iter": 100}, "large": {"n": 4096, "iter": 100}},
              lambda p, r: (p["iter"], f32(323.0) + f32(20.0) * _uniform(r, (p["n"], p["n"])),
                            f32(1e-3) * _uniform(r, (p["n"], p["n"]))),
              nbytes=lambda p: 12 * p["n"] ** 2 * p["iter"],
              flops=lambda p, out: 15 * p["n"] ** 2 * p["iter"], rtol=1e-5, atol=1e-3,
              about="Rodinia's hotspot with its corner/edge/interior chain per cell"),
    Benchmark("srad", "srad", "srad",
              {"tiny": {"rows": 16, "cols": 12, "niter": 4},
               "small": {"rows": 502, "cols": 458, "niter": 100},
               "medium": {"rows": 1024, "cols": 1024, "niter": 100},
               "large": {"rows": 4096, "cols": 4096, "niter": 100}},
              lambda p, r: (p["niter"], f32(0.5),
                            r.integers(0, 256, (p["rows"], p["cols"]), dtype=np.uint8)),
              nbytes=lambda p: 44 * p["rows"] * p["cols"] * p["niter"],
              flops=lambda p, out: 40 * p["rows"] * p["cols"] * p["niter"],
              # var_roi = E[x^2] - mean^2 cancels, so f32 sums in another order move q0sqr,
              # and 100 iterations carry it: NumPy's result is 3e-4 (relative) from float64's
              rtol=2e-3, atol=1e-2,
              about="Rodinia's SRAD: two reductions and two stencil map nests per iteration, u8 image"),
    Benchmark("sgemm", "sgemm", "sgemm",
              {"tiny": {"n": 8, "m": 6, "p": 10}, "small": {"n": 128, "m": 96, "p": 160},
               "medium": {"n": 1024, "m": 992, "p": 1056},
               "large": {"n": 4096, "m": 4096, "p": 4096}},
              lambda p, r: (_uniform(r, (p["n"], p["m"])), _uniform(r, (p["m"], p["p"])),
                            _uniform(r, (p["n"], p["p"])), f32(1.5), f32(0.5)),
              flops=lambda p, out: 2 * p["n"] * p["m"] * p["p"] + 3 * p["n"] * p["p"],
              rtol=1e-4, atol=1e-4,
              about="Parboil's sgemm, alpha A B + beta C (small and medium are Parboil's sizes)"),
    Benchmark("mri_q", "mri_q", "mri_q",
              {"tiny": {"numK": 16, "numX": 64}, "small": {"numK": 3072, "numX": 32768},
               "medium": {"numK": 2048, "numX": 262144},
               "large": {"numK": 2048, "numX": 2**21}},
              lambda p, r: (*(f32(16.0) * _uniform(r, p["numK"]) - f32(8.0) for _ in range(3)),
                            *(_uniform(r, p["numX"]) - f32(0.5) for _ in range(3)),
                            *(f32(2.0) * _uniform(r, p["numK"]) - f32(1.0) for _ in range(2))),
              rtol=1e-3, atol=1e-2,
              about="Parboil's MRI-Q, numK samples x numX voxels (small and medium are Parboil's)"),
    Benchmark("crystal", "crystal", "crystal",
              {"tiny": {"field": 16, "degree": 5, "steps": 2},
               "small": {"field": 1000, "degree": 20, "steps": 2},
               "medium": {"field": 2000, "degree": 50, "steps": 1},
               "large": {"field": 4000, "degree": 50, "steps": 1}},
              lambda p, r: (p["field"], f32(30.0), p["degree"], p["steps"], f32(0.5)),
              rtol=1e-4, atol=1e-3,
              about="Accelerate's quasicrystal, field^2 pixels x degree waves per frame"),
    Benchmark("backprop", "backprop", "backprop",
              {"tiny": {"n_in": 64}, "small": {"n_in": 2**16}, "medium": {"n_in": 2**20},
               "large": {"n_in": 2**23}},
              lambda p, r: _backprop_inputs(p["n_in"], 16, 1, r),
              nbytes=lambda p: 3 * 4 * 17 * (p["n_in"] + 1),
              rtol=lambda p: min(0.02, 1e-4 + 1e-9 * p["n_in"]), atol=1e-5,
              about="Rodinia's back-propagation, one training step, n_in inputs, 16 hidden, 1 output"),
]

BY_NAME = {b.name: b for b in BENCHMARKS}


def _nbody_inputs(n, r):
    pos = [f32(2.0) * _uniform(r, n) - f32(1.0) for _ in range(3)]
    masses = f32(1.0) / f32(n) + _uniform(r, n) / f32(n)
    vel = [f32(0.01) * (_uniform(r, n) - f32(0.5)) for _ in range(3)]
    return (f32(0.001), f32(0.05), *pos, masses, *vel)


def _backprop_inputs(n_in, n_hid, n_out, r):
    """Weights in +-1/sqrt(fan-in) so the layers do not saturate; previous weights zero (Rodinia)."""
    def weights(rows, cols):
        return (f32(2.0) * _uniform(r, (rows + 1, cols)) - f32(1.0)) / f32(np.sqrt(rows + 1))
    return (_uniform(r, n_in), np.full(n_out, f32(0.1)), weights(n_in, n_hid),
            weights(n_hid, n_out), np.zeros((n_in + 1, n_hid), f32),
            np.zeros((n_hid + 1, n_out), f32))


def _kmeans_inputs(p, r):
    n, d, k = p["n"], p["d"], p["k"]
    centres = f32(10.0) * _uniform(r, (k, d))
    points = centres[r.integers(0, k, n)] + r.standard_normal((n, d), dtype=f32)
    start = points[r.choice(n, k, replace=False)].copy()
    return (np.ascontiguousarray(points), start)


def select(names: list[str] | None) -> list[Benchmark]:
    """The benchmarks named (all when None), in suite order; KeyError for an unknown one."""
    if not names:
        return list(BENCHMARKS)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise KeyError(f"unknown program(s) {', '.join(unknown)}; known: "
                       f"{', '.join(BY_NAME)}")
    return [b for b in BENCHMARKS if b.name in names]
