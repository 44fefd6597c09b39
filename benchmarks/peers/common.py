"""Constants and set-up arithmetic that every peer shares with the PyShark programs."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

NUM_BINS = 256

#: Rodinia's hotspot constants (benchmarks/programs/hotspot.py has the same)
HOTSPOT = SimpleNamespace(t_chip=0.0005, chip_height=0.016, chip_width=0.016, amb_temp=80.0,
                          max_pd=3.0e6, precision=0.001, spec_heat_si=1.75e6, k_si=100.0,
                          factor_chip=0.5)


def hotspot_coefficients(rows: int, cols: int):
    """(k_step, 1/Rx, 1/Ry, 1/Rz) as float32, computed in float64 as hotspot.py does."""
    h = HOTSPOT
    grid_height = h.chip_height / float(rows)
    grid_width = h.chip_width / float(cols)
    cap = h.factor_chip * h.spec_heat_si * h.t_chip * grid_width * grid_height
    rx = grid_width / (2.0 * h.k_si * h.t_chip * grid_height)
    ry = grid_height / (2.0 * h.k_si * h.t_chip * grid_width)
    rz = h.t_chip / (h.k_si * grid_height * grid_width)
    max_slope = h.max_pd / (h.factor_chip * h.t_chip * h.spec_heat_si)
    k_step = h.precision / max_slope / cap
    return tuple(np.float32(v) for v in (k_step, 1.0 / rx, 1.0 / ry, 1.0 / rz))


def locvolcalib_grid(num_x, num_y, num_t, s0, t, alpha, nu):
    """(timeline, xs, ys, x_index, y_index) in float32, as locvolcalib.py's value() builds them."""
    f32 = np.float32
    timeline = t * np.arange(num_t, dtype=f32) / (f32(num_t) - 1.0)
    std_x = 20.0 * alpha * s0 * np.sqrt(t)
    std_y = 10.0 * nu * np.sqrt(t)
    step_x = std_x / f32(num_x)
    step_y = std_y / f32(num_y)
    x_index = int(s0 / step_x)
    y_index = num_y // 2
    xs = np.arange(num_x, dtype=f32) * step_x - f32(x_index) * step_x + s0
    ys = np.arange(num_y, dtype=f32) * step_y - f32(y_index) * step_y + np.log(alpha)
    return timeline, xs, ys, x_index, y_index


def locvolcalib_operators(xs):
    """The [n, 3] first- and second-derivative stencils on the grid xs (float32)."""
    n = len(xs)
    d = np.zeros((n, 3), np.float32)
    dd = np.zeros((n, 3), np.float32)
    dxu0 = xs[1] - xs[0]
    d[0] = (0.0, -1.0 / dxu0, 1.0 / dxu0)
    dxl1 = xs[n - 1] - xs[n - 2]
    d[n - 1] = (-1.0 / dxl1, 1.0 / dxl1, 0.0)
    dxl = xs[1:-1] - xs[:-2]
    dxu = xs[2:] - xs[1:-1]
    d[1:-1, 0] = -dxu / dxl / (dxl + dxu)
    d[1:-1, 1] = (dxu / dxl - dxl / dxu) / (dxl + dxu)
    d[1:-1, 2] = dxl / dxu / (dxl + dxu)
    dd[1:-1, 0] = 2.0 / dxl / (dxl + dxu)
    dd[1:-1, 1] = -2.0 * (1.0 / dxl + 1.0 / dxu) / (dxl + dxu)
    dd[1:-1, 2] = 2.0 / dxu / (dxl + dxu)
    return d, dd


def hotspot_rodinia_coefficients(rows: int, cols: int):
    """(cap, rx, ry, rz, step) in float32, as Rodinia's compute_tran_temp (hotspot_rodinia.py)."""
    h, f32 = HOTSPOT, np.float32
    grid_height = h.chip_height / f32(rows)
    grid_width = h.chip_width / f32(cols)
    cap = h.factor_chip * h.spec_heat_si * h.t_chip * grid_width * grid_height
    rx = grid_width / (2.0 * h.k_si * h.t_chip * grid_height)
    ry = grid_height / (2.0 * h.k_si * h.t_chip * grid_width)
    rz = h.t_chip / (h.k_si * grid_height * grid_width)
    max_slope = h.max_pd / (h.factor_chip * h.t_chip * h.spec_heat_si)
    step = f32(h.precision / max_slope)
    return cap, rx, ry, rz, step
