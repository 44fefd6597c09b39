"""Mandelbrot set: escape iteration counts (i32) over a height x width grid of f32 points."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "mandelbrot", "args": [6, 4, 20, -2.25, -1.25, 0.75, 1.25],
     "expected": [[1, 1, 2, 3, 3, 2], [1, 3, 3, 5, 20, 17], [1, 20, 20, 20, 20, 20],
                  [1, 3, 3, 5, 20, 17]]},
    {"entry": "mandelbrot", "args": [0, 3, 10, -2.0, -1.0, 1.0, 1.0], "expected": [[], [], []]},
]


def escape_time(cx: ps.f32, cy: ps.f32, max_iter: ps.i32) -> ps.i32:
    """How many steps z -> z * z + c stay within |z| <= 2, at most max_iter."""
    zr = ps.f32(0.0)
    zi = ps.f32(0.0)
    k = ps.i32(0)
    while k < max_iter and zr * zr + zi * zi <= 4.0:
        zr, zi = zr * zr - zi * zi + cx, 2.0 * zr * zi + cy
        k = k + 1
    return k


@ps.entry
def mandelbrot(width: int, height: int, max_iter: ps.i32, x0: ps.f32, y0: ps.f32, x1: ps.f32,
               y1: ps.f32) -> ps.Array[ps.Array[ps.i32]]:
    """counts[i, j] for the point (x0 + j * dx, y0 + i * dy) of the rectangle (x0, y0)-(x1, y1)."""
    dx = (x1 - x0) / ps.f32(width)
    dy = (y1 - y0) / ps.f32(height)
    return ps.tabulate_2d(height, width, lambda i, j: escape_time(x0 + ps.f32(j) * dx,
                                                                  y0 + ps.f32(i) * dy, max_iter))
