"""The benchmarks as a NumPy user writes them: whole-array operations, no Python loop over elements.

Each function takes the arguments of the PyShark entry of the same name and
computes the same values in the same float32 arithmetic (the same order of
operations wherever the result depends on it). The few that CuPy reuses take
the array module as `xp` (NumPy by default), as CuPy's documentation
suggests for code that runs on both.
"""
from __future__ import annotations

import numpy as np

from .common import HOTSPOT, hotspot_coefficients, NUM_BINS


def saxpy(a, xs, ys):
    return a * xs + ys


def sum_f32(xs):
    return xs.sum()


def dot(xs, ys):
    return np.dot(xs, ys)


def prefix_sum(xs):
    return np.cumsum(xs, dtype=np.int32)


def filter_above(xs, threshold):
    return xs[xs > threshold]


def histogram(xs):
    return np.bincount(xs[(xs >= 0) & (xs < NUM_BINS)], minlength=NUM_BINS).astype(np.int32)


def max_histogram(bins, vals):
    out = np.full(NUM_BINS, -np.inf, dtype=np.float32)
    keep = (bins >= 0) & (bins < NUM_BINS)
    np.maximum.at(out, bins[keep], vals[keep])
    return out


def matmul(a, b):
    return a @ b


matmul_f64 = matmul


def nbody_step(dt, eps, xs, ys, zs, ms, vxs, vys, vzs, block=1024, xp=np):
    eps2 = eps * eps
    n = len(xs)
    ax, ay, az = (xp.empty(n, xp.float32) for _ in range(3))
    for lo in range(0, n, block):          # rows in blocks keep the n x n temporaries small
        hi = min(lo + block, n)
        dx = xs[None, :] - xs[lo:hi, None]
        dy = ys[None, :] - ys[lo:hi, None]
        dz = zs[None, :] - zs[lo:hi, None]
        r2 = dx * dx + dy * dy + dz * dz + eps2
        s = ms / (r2 * xp.sqrt(r2))
        ax[lo:hi] = (dx * s).sum(axis=1)
        ay[lo:hi] = (dy * s).sum(axis=1)
        az[lo:hi] = (dz * s).sum(axis=1)
    nvx, nvy, nvz = vxs + ax * dt, vys + ay * dt, vzs + az * dt
    return xs + nvx * dt, ys + nvy * dt, zs + nvz * dt, nvx, nvy, nvz


def mandelbrot(width, height, max_iter, x0, y0, x1, y1):
    dx = (x1 - x0) / np.float32(width)
    dy = (y1 - y0) / np.float32(height)
    cr = np.tile(x0 + np.arange(width, dtype=np.float32) * dx, height)
    ci = np.repeat(y0 + np.arange(height, dtype=np.float32) * dy, width)
    counts = np.zeros(width * height, np.int32)
    alive = np.arange(width * height)      # the points still iterating, and their z
    zr = np.zeros(width * height, np.float32)
    zi = np.zeros(width * height, np.float32)
    for _ in range(max_iter):
        inside = zr * zr + zi * zi <= 4.0
        alive, cr, ci, zr, zi = alive[inside], cr[inside], ci[inside], zr[inside], zi[inside]
        if alive.size == 0:
            break
        counts[alive] += 1
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
    return counts.reshape(height, width)


def hotspot(iterations, temp, power):
    k_step, rx_inv, ry_inv, rz_inv = hotspot_coefficients(*temp.shape)
    for _ in range(iterations):
        t = np.pad(temp, 1, mode="edge")
        north, south = t[:-2, 1:-1], t[2:, 1:-1]
        west, east = t[1:-1, :-2], t[1:-1, 2:]
        temp = temp + k_step * (power + (south + north - 2.0 * temp) * ry_inv
                                + (east + west - 2.0 * temp) * rx_inv
                                + (HOTSPOT.amb_temp - temp) * rz_inv)
    return temp


def pathfinder(wall):
    cost = wall[0]
    for row in wall[1:]:
        left = np.concatenate((cost[:1], cost[:-1]))
        right = np.concatenate((cost[1:], cost[-1:]))
        cost = row + np.minimum(np.minimum(left, cost), right)
    return cost


def kmeans_step(points, centroids, xp=np):
    k, d = centroids.shape
    dist = xp.empty((len(points), k), xp.float32)
    for c in range(k):
        dist[:, c] = ((points - centroids[c]) ** 2).sum(axis=1)
    owner = dist.argmin(axis=1)
    counts = xp.bincount(owner, minlength=k)
    sums = xp.stack([xp.bincount(owner, weights=points[:, j], minlength=k) for j in range(d)],
                    axis=1).astype(xp.float32)
    means = sums / xp.maximum(counts, 1)[:, None].astype(xp.float32)
    return xp.where(counts[:, None] > 0, means, centroids)


A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
RSQRT2PI = 0.3989422804014327


def _cnd(d, xp):
    k = 1.0 / (1.0 + 0.2316419 * xp.abs(d))
    tail = RSQRT2PI * xp.exp(-0.5 * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))))
    return xp.where(d > 0.0, 1.0 - tail, tail)


def blackscholes(spot, strike, years, rate, volatility, xp=np):
    sqrt_t = xp.sqrt(years)
    d1 = (xp.log(spot / strike) + (rate + 0.5 * volatility * volatility) * years) / (volatility * sqrt_t)
    d2 = d1 - volatility * sqrt_t
    c1, c2 = _cnd(d1, xp), _cnd(d2, xp)
    discounted = strike * xp.exp(-rate * years)
    return spot * c1 - discounted * c2, discounted * (1.0 - c2) - spot * (1.0 - c1)


from .numpy_locvolcalib import locvolcalib  # noqa: E402,F401  (long enough for its own file)
locvolcalib_outside = locvolcalib     # the same values; the PyShark entry is written loop-outside


def _scatter(dest, idxs, vals):
    out = dest.copy()
    keep = (idxs >= 0) & (idxs < len(out))
    out[idxs[keep]] = vals[keep]      # numpy: the last duplicate wins (in practice)
    return out


def scatter_distinct(dest, idxs, vals):
    return _scatter(dest, idxs, vals)


def scatter_dups(dest, idxs, vals):
    return _scatter(dest, idxs, vals)


from .numpy_ports import *  # noqa: E402,F401,F403  (the ports in their authors' shapes, issue 17)
