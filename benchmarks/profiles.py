"""Profiles: a named selection of (program, size) cases, targets and options.

`--profile gpu` picks the sizes the GPU issue names (saxpy, sum, prefix sum,
histogram and filter on 2^28 elements; n-body with 65536 bodies;
LocVolCalib small and medium) and the other programs at a size whose peers
finish in seconds on the GPU machine's 16-core host; the backends opencl
and cpu; the peers cupy, cuda (hand-written kernels), numpy and numba; and
short time limits so that the run can be split into chunks of a few
minutes each (benchmarks/gpu.sh). Options given on the command line win
over the profile's; `--sizes` replaces the profile's sizes (every selected
program at those sizes), `--programs` selects among its programs.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Profile:
    name: str
    about: str
    cases: tuple                      # (program, size), in order
    backends: str | None = None       # as --backends
    peers: str | None = None          # as --peers
    #: option name -> value, used where the command line does not give one
    options: dict = field(default_factory=dict)
    #: (program, size) -> {target: why}: targets left out of a case (too slow to be useful)
    leave_out: dict = field(default_factory=dict)

    def programs(self) -> list[str]:
        return list(dict.fromkeys(p for p, _ in self.cases))


GPU = Profile(
    "gpu",
    "the GPU issue's sizes (2^28 streaming, 65536 bodies, LocVolCalib small and medium) on "
    "opencl and cpu beside CuPy, hand-written CUDA, NumPy and Numba",
    cases=(
        ("saxpy", "large"), ("sum", "large"), ("dot", "large"), ("prefix_sum", "large"),
        ("filter", "large"), ("histogram", "large"), ("max_histogram", "large"),
        ("matmul", "medium"), ("matmul_2048", "large"), ("matmul", "large"),
        ("matmul_f64", "medium"), ("matmul_f64_2048", "large"), ("matmul_f64", "large"),
        ("nbody", "large"), ("mandelbrot", "medium"),
        ("hotspot", "medium"), ("pathfinder", "large"), ("kmeans", "medium"),
        ("blackscholes", "medium"), ("locvolcalib", "small"), ("locvolcalib", "medium"),
        ("locvolcalib_outside", "small"), ("locvolcalib_outside", "medium"),
        # issue 17's programs in their authors' shapes
        ("hotspot_rodinia", "medium"), ("srad", "medium"), ("sgemm", "medium"),
        ("mri_q", "medium"), ("crystal", "medium"), ("backprop", "medium"),
    ),
    backends="opencl,cpu",
    peers="cupy,cuda,numpy,numba",
    options={"budget": 4.0, "repeats": 5, "warmup": 1, "row_timeout": 90.0,
             "no_compile_report": True},
    leave_out={("nbody", "large"): {"numpy": "left out at 65536 bodies (NumPy needs about a "
                                             "minute a call); numba is the reference"}},
)

PROFILES = {p.name: p for p in (GPU,)}
