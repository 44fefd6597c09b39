"""Numba peers of the ports in their authors' shapes (issue 17), as an expert writes them for speed.

@njit(parallel=True) with prange over the outer parallel dimension, plain
loops inside, boundaries peeled so that the inner loops are straight-line
code that LLVM vectorises, scratch allocated once per call. Float constants
are float32 globals so the arithmetic stays float32. numba_peers re-exports
every function here.
"""
from __future__ import annotations

__all__ = ["hotspot_rodinia"]

import numpy as np
from numba import njit, prange

from .common import HOTSPOT, hotspot_rodinia_coefficients

ZERO = np.float32(0.0)
HALF = np.float32(0.5)
ONE = np.float32(1.0)
TWO = np.float32(2.0)
AMB_TEMP = np.float32(HOTSPOT.amb_temp)


@njit(parallel=True)
def _hotspot_rodinia(iterations, temp, power, cap_1, rx_1, ry_1, rz_1):
    """Rodinia's OpenMP loop with reciprocals, rows in parallel, edges peeled."""
    rows, cols = temp.shape
    src = temp.copy()
    dst = np.empty_like(temp)
    for _ in range(iterations):
        for r in prange(rows):
            # an edge row's missing neighbour is itself: (x - t) as (x + t - 2t)
            rn, rs = max(r - 1, 0), min(r + 1, rows - 1)
            t = src[r, 0]
            dst[r, 0] = t + cap_1 * (power[r, 0] + (src[r, 1] - t) * rx_1
                                     + (src[rs, 0] + src[rn, 0] - TWO * t) * ry_1
                                     + (AMB_TEMP - t) * rz_1)
            for c in range(1, cols - 1):
                t = src[r, c]
                dst[r, c] = t + cap_1 * (power[r, c] + (src[r, c + 1] + src[r, c - 1] - TWO * t) * rx_1
                                         + (src[rs, c] + src[rn, c] - TWO * t) * ry_1
                                         + (AMB_TEMP - t) * rz_1)
            c = cols - 1
            t = src[r, c]
            dst[r, c] = t + cap_1 * (power[r, c] + (src[r, c - 1] - t) * rx_1
                                     + (src[rs, c] + src[rn, c] - TWO * t) * ry_1
                                     + (AMB_TEMP - t) * rz_1)
        src, dst = dst, src
    return src


def hotspot_rodinia(num_iterations, temp, power):
    cap, rx, ry, rz, step = hotspot_rodinia_coefficients(*temp.shape)
    return _hotspot_rodinia(num_iterations, temp, power, step / cap, ONE / rx, ONE / ry, ONE / rz)
