"""The target record the lowering reads (mc/ and gpu/ read a target record
instead of asking which backend they are in).

`family` picks the algorithm family of the SOACs: "mc" (codegen/mc/:
per-thread chunks, for the CPU backend, the kir interpreter, and as the
fallback of every primitive gpu/ declines) or "gpu" (codegen/gpu/:
work-group algorithms with local memory, barriers and atomics, for the
OpenCL backend). The gpu numbers come from the device the module is
compiled for (codegen/opencl/runtime.Device.target).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    family: str = "mc"          # "mc" | "gpu"
    group_size: int = 256       # gpu: work-items per group of a work-group kernel
    local_mem: int = 32768      # gpu: bytes of local memory one group may use
    atomics64: bool = False     # gpu: 64-bit atomic compare-and-swap exists
    lookback: bool = False      # gpu: groups of one launch that have started run to
                                # completion while others spin on their flags, so the
                                # single-pass scan (gpu/segscan.py) may wait on them
    flatten: bool = False       # gpu: run codegen/opt/flatten.py (map distribution and
                                # interchange; on for devices, PYSHARK_OPENCL_FLATTEN=0
                                # turns it off)
    coarsen: int = 1            # gpu: iterations per work-item of a streaming ParFor
                                # (kir_passes/coarsen.py; 1: none)
    fill: int = 32              # gpu: a full pass over an array (reduce, scan, filter)
                                # runs NumThreads x fill work-items (gpu/group.group_count)
    distribute_below: int = 0   # gpu: a host-level map whose function is several SOACs
                                # (no loop) is distributed when its width is below this,
                                # decided at run time (flatten.py, "Versions"; 0: never)
    slow_scatter: bool = False  # mc: the CPU's vector scatter is slower than scalar
                                # stores (AMD Zen: cpu/link.host_target), so a scatter
                                # whose stores are dense keeps its loop scalar
                                # (mc/scatter.py)
    stream_maps: bool = True    # mc: a flat map's large fresh result is written with
                                # nontemporal stores (kir_passes/streaming.py); off where
                                # they lose (AMD Zen 5: cpu/link.stream_map_results)

    @property
    def gpu(self) -> bool:
        return self.family == "gpu"


MULTICORE = Target()


def gpu_target(max_group: int, local_mem: int, atomics64: bool,
               lookback: bool = True, flatten: bool = True, coarsen: int = 4,
               fill: int = 32, distribute_below: int = 8192) -> Target:
    """A gpu target for a device's limits: groups of 256 work-items (or the
    largest power of two the device allows), at most 32 KiB of local memory
    a group (half of what most GPUs have per compute unit, so two groups fit)."""
    g = 1
    while g * 2 <= min(256, max_group):
        g *= 2
    return Target("gpu", g, min(32768, max(local_mem, 0)), atomics64, lookback, flatten,
                  max(1, coarsen), max(1, fill), max(0, distribute_below))
