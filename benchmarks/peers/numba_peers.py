"""The benchmarks as a Numba user writes them: explicit loops under @njit(parallel=True), prange over the parallel dimension.

Float constants are float32 module globals (a bare 0.5 is a float64 in
Numba and would turn float32 arithmetic into float64). Reductions that
Numba cannot express with prange alone (scan, filter, histograms, k-means
sums) use the usual per-thread chunks.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from .common import HOTSPOT, NUM_BINS, hotspot_coefficients

ZERO = np.float32(0.0)
HALF = np.float32(0.5)
ONE = np.float32(1.0)
TWO = np.float32(2.0)
FOUR = np.float32(4.0)
AMB_TEMP = np.float32(HOTSPOT.amb_temp)


def _chunks(n):
    """(number of chunks, chunk length): one chunk per thread."""
    k = max(1, min(numba.get_num_threads(), n))
    return k, (n + k - 1) // k


@njit(parallel=True)
def saxpy(a, xs, ys):
    out = np.empty_like(xs)
    for i in prange(len(xs)):
        out[i] = a * xs[i] + ys[i]
    return out


@njit(parallel=True)
def sum_f32(xs):
    s = ZERO
    for i in prange(len(xs)):
        s += xs[i]
    return s


@njit(parallel=True)
def dot(xs, ys):
    s = ZERO
    for i in prange(len(xs)):
        s += xs[i] * ys[i]
    return s


@njit(parallel=True)
def _prefix_sum(xs, nchunks, size):
    n = len(xs)
    out = np.empty_like(xs)
    totals = np.zeros(nchunks, np.int32)
    for c in prange(nchunks):
        acc = np.int32(0)
        for i in range(c * size, min((c + 1) * size, n)):
            acc = np.int32(acc + xs[i])
            out[i] = acc
        totals[c] = acc
    for c in prange(1, nchunks):
        offset = np.int32(0)
        for k in range(c):
            offset = np.int32(offset + totals[k])
        for i in range(c * size, min((c + 1) * size, n)):
            out[i] = np.int32(out[i] + offset)
    return out


def prefix_sum(xs):
    return _prefix_sum(xs, *_chunks(len(xs)))


@njit(parallel=True)
def _filter_above(xs, threshold, nchunks, size):
    n = len(xs)
    counts = np.zeros(nchunks, np.int64)
    for c in prange(nchunks):
        k = 0
        for i in range(c * size, min((c + 1) * size, n)):
            if xs[i] > threshold:
                k += 1
        counts[c] = k
    starts = np.zeros(nchunks + 1, np.int64)
    starts[1:] = np.cumsum(counts)
    out = np.empty(starts[nchunks], xs.dtype)
    for c in prange(nchunks):
        k = starts[c]
        for i in range(c * size, min((c + 1) * size, n)):
            if xs[i] > threshold:
                out[k] = xs[i]
                k += 1
    return out


def filter_above(xs, threshold):
    return _filter_above(xs, threshold, *_chunks(len(xs)))


@njit(parallel=True)
def _histogram(xs, nchunks, size):
    n = len(xs)
    private = np.zeros((nchunks, NUM_BINS), np.int32)
    for c in prange(nchunks):
        for i in range(c * size, min((c + 1) * size, n)):
            b = xs[i]
            if 0 <= b < NUM_BINS:
                private[c, b] += 1
    return private.sum(axis=0).astype(np.int32)


def histogram(xs):
    return _histogram(xs, *_chunks(len(xs)))


@njit(parallel=True)
def _max_histogram(bins, vals, nchunks, size):
    n = len(bins)
    private = np.full((nchunks, NUM_BINS), -np.inf, np.float32)
    for c in prange(nchunks):
        for i in range(c * size, min((c + 1) * size, n)):
            b = bins[i]
            if 0 <= b < NUM_BINS and vals[i] > private[c, b]:
                private[c, b] = vals[i]
    out = np.full(NUM_BINS, -np.inf, np.float32)
    for c in range(nchunks):
        for b in range(NUM_BINS):
            out[b] = max(out[b], private[c, b])
    return out


def max_histogram(bins, vals):
    return _max_histogram(bins, vals, *_chunks(len(bins)))


@njit(parallel=True)
def matmul(a, b):
    n, k = a.shape
    m = b.shape[1]
    c = np.zeros((n, m), a.dtype)
    for i in prange(n):
        for p in range(k):
            aip = a[i, p]
            for j in range(m):
                c[i, j] += aip * b[p, j]
    return c


matmul_f64 = matmul


@njit(parallel=True)
def nbody_step(dt, eps, xs, ys, zs, ms, vxs, vys, vzs):
    n = len(xs)
    eps2 = eps * eps
    nvx, nvy, nvz = np.empty_like(vxs), np.empty_like(vys), np.empty_like(vzs)
    nx, ny, nz = np.empty_like(xs), np.empty_like(ys), np.empty_like(zs)
    for i in prange(n):
        ax = ay = az = ZERO
        for j in range(n):
            dx = xs[j] - xs[i]
            dy = ys[j] - ys[i]
            dz = zs[j] - zs[i]
            r2 = dx * dx + dy * dy + dz * dz + eps2
            s = ms[j] / (r2 * np.sqrt(r2))
            ax += dx * s
            ay += dy * s
            az += dz * s
        nvx[i] = vxs[i] + ax * dt
        nvy[i] = vys[i] + ay * dt
        nvz[i] = vzs[i] + az * dt
        nx[i] = xs[i] + nvx[i] * dt
        ny[i] = ys[i] + nvy[i] * dt
        nz[i] = zs[i] + nvz[i] * dt
    return nx, ny, nz, nvx, nvy, nvz


@njit(parallel=True)
def mandelbrot(width, height, max_iter, x0, y0, x1, y1):
    dx = (x1 - x0) / np.float32(width)
    dy = (y1 - y0) / np.float32(height)
    counts = np.empty((height, width), np.int32)
    for i in prange(height):
        cy = y0 + np.float32(i) * dy
        for j in range(width):
            cx = x0 + np.float32(j) * dx
            zr = zi = ZERO
            k = 0
            while k < max_iter and zr * zr + zi * zi <= FOUR:
                zr, zi = zr * zr - zi * zi + cx, TWO * zr * zi + cy
                k += 1
            counts[i, j] = k
    return counts


@njit(parallel=True)
def _hotspot(iterations, temp, power, k_step, rx_inv, ry_inv, rz_inv):
    rows, cols = temp.shape
    src = temp.copy()
    dst = np.empty_like(temp)
    for _ in range(iterations):
        for r in prange(rows):
            rn, rs = max(r - 1, 0), min(r + 1, rows - 1)
            for c in range(cols):
                t = src[r, c]
                west, east = src[r, max(c - 1, 0)], src[r, min(c + 1, cols - 1)]
                dst[r, c] = t + k_step * (power[r, c] + (src[rs, c] + src[rn, c] - TWO * t) * ry_inv
                                          + (east + west - TWO * t) * rx_inv
                                          + (AMB_TEMP - t) * rz_inv)
        src, dst = dst, src
    return src


def hotspot(iterations, temp, power):
    return _hotspot(iterations, temp, power, *hotspot_coefficients(*temp.shape))


@njit(parallel=True)
def pathfinder(wall):
    rows, cols = wall.shape
    src = wall[0].copy()
    dst = np.empty_like(src)
    for r in range(1, rows):
        for j in prange(cols):
            best = src[j]
            if j > 0:
                best = min(best, src[j - 1])
            if j < cols - 1:
                best = min(best, src[j + 1])
            dst[j] = wall[r, j] + best
        src, dst = dst, src
    return src


@njit(parallel=True)
def _kmeans_step(points, centroids, nchunks, size):
    n, d = points.shape
    k = centroids.shape[0]
    sums = np.zeros((nchunks, k, d), np.float32)
    counts = np.zeros((nchunks, k), np.int64)
    for ch in prange(nchunks):
        for i in range(ch * size, min((ch + 1) * size, n)):
            best, best_dist = 0, np.float32(np.inf)
            for c in range(k):
                dist = ZERO
                for j in range(d):
                    diff = points[i, j] - centroids[c, j]
                    dist += diff * diff
                if dist < best_dist:
                    best, best_dist = c, dist
            counts[ch, best] += 1
            for j in range(d):
                sums[ch, best, j] += points[i, j]
    total = counts.sum(axis=0)
    out = centroids.copy()
    for c in range(k):
        if total[c] > 0:
            for j in range(d):
                out[c, j] = sums[:, c, j].sum() / np.float32(total[c])
    return out


def kmeans_step(points, centroids):
    return _kmeans_step(points, centroids, *_chunks(len(points)))


A1, A2, A3 = np.float32(0.31938153), np.float32(-0.356563782), np.float32(1.781477937)
A4, A5 = np.float32(-1.821255978), np.float32(1.330274429)
RSQRT2PI = np.float32(0.3989422804014327)
K_CND = np.float32(0.2316419)


@njit
def _cnd(d):
    k = ONE / (ONE + K_CND * abs(d))
    tail = RSQRT2PI * math.exp(-HALF * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))))
    return ONE - tail if d > ZERO else tail


@njit(parallel=True)
def blackscholes(spot, strike, years, rate, volatility):
    n = len(spot)
    calls, puts = np.empty_like(spot), np.empty_like(spot)
    for i in prange(n):
        s, x, t = spot[i], strike[i], years[i]
        sqrt_t = math.sqrt(t)
        d1 = (math.log(s / x) + (rate + HALF * volatility * volatility) * t) / (volatility * sqrt_t)
        d2 = d1 - volatility * sqrt_t
        c1, c2 = _cnd(d1), _cnd(d2)
        discounted = x * math.exp(-rate * t)
        calls[i] = s * c1 - discounted * c2
        puts[i] = discounted * (ONE - c2) - s * (ONE - c1)
    return calls, puts


from .numba_locvolcalib import locvolcalib  # noqa: E402,F401  (long enough for its own file)
locvolcalib_outside = locvolcalib     # the same values; the PyShark entry is written loop-outside


@njit
def _scatter(dest, idxs, vals):
    out = dest.copy()
    m = len(out)
    for j in range(len(idxs)):        # sequential: the last duplicate wins
        i = idxs[j]
        if 0 <= i < m:
            out[i] = vals[j]
    return out


def scatter_distinct(dest, idxs, vals):
    return _scatter(dest, idxs, vals)


def scatter_dups(dest, idxs, vals):
    return _scatter(dest, idxs, vals)


from .numba_ports import *  # noqa: E402,F401,F403  (the ports in their authors' shapes, issue 17)
