"""hotspot_rodinia with its three divisions by rx, ry, rz replaced by
multiplications with reciprocals computed once (what the Numba peer does; a
different rounding, so not the benchmark program): a probe of what the
divisions cost (scripts/divide_probe.py). Otherwise
benchmarks/programs/hotspot_rodinia.py, whose docstring follows.

HotSpot in Rodinia's own shape: every cell picks its update from an if/elif chain.

Ported from Futhark's rodinia/hotspot/hotspot.fut (`single_iteration`), itself
from Rodinia's openmp/hotspot/hotspot_openmp.cpp: the four corners, the four
edges and the interior each have their own formula, chosen per cell by tests
on r and c, with the coefficients in f32 and divided per cell as written
there. Kept as its authors wrote it, not peeled, so that the benchmark shows
what the compiler makes of the branch in every cell (issue 17).
"""
import pyshark.prelude as ps

Grid = ps.Array[ps.Array[ps.f32]]

MAX_PD = 3.0e6
PRECISION = 0.001
SPEC_HEAT_SI = 1.75e6
K_SI = 100.0
FACTOR_CHIP = 0.5
T_CHIP = 0.0005
CHIP_HEIGHT = 0.016
CHIP_WIDTH = 0.016
AMB_TEMP = 80.0

__pyshark_cases__ = [
    {"entry": "hotspot_rodinia", "args": [1, [[300.0, 310.0], [320.0, 330.0]],
                                          [[0.5, 0.0], [0.0, 0.5]]],
     "expected": [[299.98535, 309.98468], [319.984, 329.9833]]},
    {"entry": "hotspot_rodinia", "args": [2, [[300.0, 301.0, 302.0], [303.0, 304.0, 305.0],
                                              [306.0, 307.0, 308.0]],
                                          [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9]]],
     "expected": [[299.9707, 300.97052, 301.9704], [302.97028, 303.97015, 304.97003],
                  [305.96988, 306.96973, 307.9696]]},
    {"entry": "hotspot_rodinia", "args": [0, [[300.0, 301.0], [302.0, 303.0]],
                                          [[1.0, 1.0], [1.0, 1.0]]],
     "expected": [[300.0, 301.0], [302.0, 303.0]]},
]


def single_iteration(temp: Grid, power: Grid, cap: ps.f32, rx: ps.f32, ry: ps.f32,
                     rz: ps.f32, step: ps.f32) -> Grid:
    """One time step: Rodinia's per-cell chain of corners, edges and interior."""
    row = len(temp)
    col = len(temp[0])

    rx_1 = ps.f32(1.0) / rx
    ry_1 = ps.f32(1.0) / ry
    rz_1 = ps.f32(1.0) / rz

    def cell(r: int, c: int) -> ps.f32:
        temp_el = temp[r, c]
        if r == 0 and c == 0:                       # corner 1
            flow = (temp[r, c + 1] - temp_el) * rx_1 + (temp[r + 1, c] - temp_el) * ry_1
        elif r == 0 and c == col - 1:               # corner 2
            flow = (temp[r, c - 1] - temp_el) * rx_1 + (temp[r + 1, c] - temp_el) * ry_1
        elif r == row - 1 and c == col - 1:         # corner 3
            flow = (temp[r, c - 1] - temp_el) * rx_1 + (temp[r - 1, c] - temp_el) * ry_1
        elif r == row - 1 and c == 0:               # corner 4
            flow = (temp[r, c + 1] - temp_el) * rx_1 + (temp[r - 1, c] - temp_el) * ry_1
        elif r == 0:                                # edge 1
            flow = ((temp[r, c + 1] + temp[r, c - 1] - 2.0 * temp_el) * rx_1
                    + (temp[r + 1, c] - temp_el) * ry_1)
        elif c == col - 1:                          # edge 2
            flow = ((temp[r, c - 1] - temp_el) * rx_1
                    + (temp[r + 1, c] + temp[r - 1, c] - 2.0 * temp_el) * ry_1)
        elif r == row - 1:                          # edge 3
            flow = ((temp[r, c + 1] + temp[r, c - 1] - 2.0 * temp_el) * rx_1
                    + (temp[r - 1, c] - temp_el) * ry_1)
        elif c == 0:                                # edge 4
            flow = ((temp[r, c + 1] - temp_el) * rx_1
                    + (temp[r + 1, c] + temp[r - 1, c] - 2.0 * temp_el) * ry_1)
        else:                                       # interior
            flow = ((temp[r, c + 1] + temp[r, c - 1] - 2.0 * temp_el) * rx_1
                    + (temp[r + 1, c] + temp[r - 1, c] - 2.0 * temp_el) * ry_1)
        delta = (step / cap) * (power[r, c] + flow + (AMB_TEMP - temp_el) * rz_1)
        return temp_el + delta

    return ps.tabulate_2d(row, col, cell)


@ps.entry
def hotspot_rodinia(num_iterations: int, temp: Grid, power: Grid) -> Grid:
    """Rodinia's compute_tran_temp: the grid after num_iterations steps (rows, cols >= 2)."""
    row = len(temp)
    col = len(temp[0])
    grid_height = CHIP_HEIGHT / ps.f32(row)
    grid_width = CHIP_WIDTH / ps.f32(col)
    cap = FACTOR_CHIP * SPEC_HEAT_SI * T_CHIP * grid_width * grid_height
    rx = grid_width / (2.0 * K_SI * T_CHIP * grid_height)
    ry = grid_height / (2.0 * K_SI * T_CHIP * grid_width)
    rz = T_CHIP / (K_SI * grid_height * grid_width)
    max_slope = MAX_PD / (FACTOR_CHIP * T_CHIP * SPEC_HEAT_SI)
    step = ps.f32(PRECISION / max_slope)
    for _i in range(num_iterations):
        temp = single_iteration(temp, power, cap, rx, ry, rz, step)
    return temp
