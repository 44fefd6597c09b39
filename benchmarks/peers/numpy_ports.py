"""NumPy peers of the ports in their authors' shapes (issue 17), as a NumPy user writes them for speed.

Whole-array slices per region instead of a branch per cell; the same
float32 values as the PyShark programs (the same order of operations
wherever it matters). numpy_peers re-exports every function here.
"""
from __future__ import annotations

__all__ = ["hotspot_rodinia"]

import numpy as np

from .common import HOTSPOT, hotspot_rodinia_coefficients

f32 = np.float32


def hotspot_rodinia(num_iterations, temp, power):
    """Rodinia's corners, edges and interior as slices of two difference arrays."""
    cap, rx, ry, rz, step = hotspot_rodinia_coefficients(*temp.shape)
    step_cap = step / cap
    dx = np.empty_like(temp)
    dy = np.empty_like(temp)
    for _ in range(num_iterations):
        dx[:, 1:-1] = temp[:, 2:] + temp[:, :-2] - 2.0 * temp[:, 1:-1]
        dx[:, 0] = temp[:, 1] - temp[:, 0]
        dx[:, -1] = temp[:, -2] - temp[:, -1]
        dy[1:-1] = temp[2:] + temp[:-2] - 2.0 * temp[1:-1]
        dy[0] = temp[1] - temp[0]
        dy[-1] = temp[-2] - temp[-1]
        temp = temp + step_cap * (power + (dx / rx + dy / ry) + (HOTSPOT.amb_temp - temp) / rz)
    return temp
