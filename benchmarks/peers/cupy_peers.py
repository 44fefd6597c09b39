"""The benchmarks as a CuPy user writes them: the NumPy versions on device arrays.

CuPy follows the NumPy API, so most peers are the NumPy functions run on
cupy arrays (`cupy.get_array_module` picks the library). Inputs move to the
device once, before timing; results are timed until the device is done
(synchronize) and brought back only for the correctness check. Importing
this module fails without CuPy or without a GPU, and the runner skips it
with a note.
"""
from __future__ import annotations

import cupy
import cupyx
import numpy as np

from . import numpy_peers as _np

if cupy.cuda.runtime.getDeviceCount() < 1:    # raises when there is no driver
    raise ImportError("CuPy finds no GPU")

#: where it computes (the report compares its GB/s with the GPU's copy bandwidth)
DEVICE = "gpu"


def to_device(args):
    return tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def to_host(value):
    if isinstance(value, tuple):
        return tuple(to_host(v) for v in value)
    return cupy.asnumpy(value) if isinstance(value, cupy.ndarray) else value


def synchronize():
    cupy.cuda.Device().synchronize()


def saxpy(a, xs, ys):
    return a * xs + ys


def sum_f32(xs):
    return xs.sum()


def dot(xs, ys):
    return cupy.dot(xs, ys)


def prefix_sum(xs):
    return cupy.cumsum(xs, dtype=cupy.int32)


def filter_above(xs, threshold):
    return xs[xs > threshold]


def histogram(xs):
    keep = xs[(xs >= 0) & (xs < _np.NUM_BINS)]
    return cupy.bincount(keep, minlength=_np.NUM_BINS).astype(cupy.int32)


def max_histogram(bins, vals):
    out = cupy.full(_np.NUM_BINS, -cupy.inf, dtype=cupy.float32)
    keep = (bins >= 0) & (bins < _np.NUM_BINS)
    cupyx.scatter_max(out, bins[keep], vals[keep])
    return out


def matmul(a, b):
    return a @ b


matmul_f64 = matmul


def nbody_step(dt, eps, xs, ys, zs, ms, vxs, vys, vzs):
    return _np.nbody_step(dt, eps, xs, ys, zs, ms, vxs, vys, vzs, block=8192, xp=cupy)


def mandelbrot(width, height, max_iter, x0, y0, x1, y1):
    # Every point iterates max_iter times under a mask: on a GPU that beats compacting.
    dx = (x1 - x0) / np.float32(width)
    dy = (y1 - y0) / np.float32(height)
    cr = (x0 + cupy.arange(width, dtype=cupy.float32) * dx)[None, :]
    ci = (y0 + cupy.arange(height, dtype=cupy.float32) * dy)[:, None]
    zr = cupy.zeros((height, width), cupy.float32)
    zi = cupy.zeros((height, width), cupy.float32)
    counts = cupy.zeros((height, width), cupy.int32)
    for _ in range(int(max_iter)):
        inside = zr * zr + zi * zi <= 4.0
        counts += inside
        zr, zi = (cupy.where(inside, zr * zr - zi * zi + cr, zr),
                  cupy.where(inside, 2.0 * zr * zi + ci, zi))
    return counts


def hotspot(iterations, temp, power):
    k_step, rx_inv, ry_inv, rz_inv = _np.hotspot_coefficients(*temp.shape)
    for _ in range(iterations):
        t = cupy.pad(temp, 1, mode="edge")
        temp = temp + k_step * (power + (t[2:, 1:-1] + t[:-2, 1:-1] - 2.0 * temp) * ry_inv
                                + (t[1:-1, 2:] + t[1:-1, :-2] - 2.0 * temp) * rx_inv
                                + (_np.HOTSPOT.amb_temp - temp) * rz_inv)
    return temp


def pathfinder(wall):
    cost = wall[0]
    for r in range(1, wall.shape[0]):
        left = cupy.concatenate((cost[:1], cost[:-1]))
        right = cupy.concatenate((cost[1:], cost[-1:]))
        cost = wall[r] + cupy.minimum(cupy.minimum(left, cost), right)
    return cost


def kmeans_step(points, centroids):
    return _np.kmeans_step(points, centroids, xp=cupy)


def blackscholes(spot, strike, years, rate, volatility):
    return _np.blackscholes(spot, strike, years, rate, volatility, xp=cupy)


def locvolcalib(outer, num_x, num_y, num_t, s0, t, alpha, nu, beta):
    return _np.locvolcalib(outer, num_x, num_y, num_t, s0, t, alpha, nu, beta, xp=cupy)


locvolcalib_outside = locvolcalib     # the same values; the PyShark entry is written loop-outside
