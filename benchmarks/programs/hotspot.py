"""HotSpot (Rodinia): chip temperature by an iterated 5-point stencil over f32 grids.

Each step moves every cell by the heat from its four neighbours (an edge
cell counts itself for a neighbour beyond the border), from its power
density, and to the ambient air. The coefficients follow Rodinia's hotspot.
"""
import pyshark.prelude as ps

Grid = ps.Array[ps.Array[ps.f32]]

T_CHIP = 0.0005
CHIP_HEIGHT = 0.016
CHIP_WIDTH = 0.016
AMB_TEMP = 80.0
MAX_PD = 3.0e6
PRECISION = 0.001
SPEC_HEAT_SI = 1.75e6
K_SI = 100.0
FACTOR_CHIP = 0.5

__pyshark_cases__ = [
    {"entry": "hotspot", "args": [1, [[300.0, 310.0], [320.0, 330.0]], [[0.5, 0.0], [0.0, 0.5]]],
     "expected": [[299.98535, 309.98468], [319.984, 329.9833]]},
    {"entry": "hotspot", "args": [0, [[300.0]], [[1.0]]], "expected": [[300.0]]},
]


def step(temp: Grid, power: Grid, rows: int, cols: int, k_step: ps.f32, rx_inv: ps.f32,
         ry_inv: ps.f32, rz_inv: ps.f32) -> Grid:
    def cell(r: int, c: int) -> ps.f32:
        t = temp[r, c]
        north = temp[max(r - 1, 0), c]
        south = temp[min(r + 1, rows - 1), c]
        west = temp[r, max(c - 1, 0)]
        east = temp[r, min(c + 1, cols - 1)]
        delta = k_step * (power[r, c] + (south + north - 2.0 * t) * ry_inv
                          + (east + west - 2.0 * t) * rx_inv + (AMB_TEMP - t) * rz_inv)
        return t + delta

    return ps.tabulate_2d(rows, cols, cell)


@ps.entry
def hotspot(iterations: int, temp: Grid, power: Grid) -> Grid:
    """The temperature grid after `iterations` steps (power has temp's shape)."""
    rows = len(temp)
    cols = len(temp[0])
    grid_height = CHIP_HEIGHT / float(rows)
    grid_width = CHIP_WIDTH / float(cols)
    cap = FACTOR_CHIP * SPEC_HEAT_SI * T_CHIP * grid_width * grid_height
    rx = grid_width / (2.0 * K_SI * T_CHIP * grid_height)
    ry = grid_height / (2.0 * K_SI * T_CHIP * grid_width)
    rz = T_CHIP / (K_SI * grid_height * grid_width)
    max_slope = MAX_PD / (FACTOR_CHIP * T_CHIP * SPEC_HEAT_SI)
    k_step = ps.f32(PRECISION / max_slope / cap)
    rx_inv = ps.f32(1.0 / rx)
    ry_inv = ps.f32(1.0 / ry)
    rz_inv = ps.f32(1.0 / rz)
    for it in range(iterations):
        temp = step(temp, power, rows, cols, k_step, rx_inv, ry_inv, rz_inv)
    return temp
