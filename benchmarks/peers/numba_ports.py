"""Numba peers of the ports in their authors' shapes (issue 17), as an expert writes them for speed.

@njit(parallel=True) with prange over the outer parallel dimension, plain
loops inside, boundaries peeled so that the inner loops are straight-line
code that LLVM vectorises, scratch allocated once per call. Float constants
are float32 globals so the arithmetic stays float32. numba_peers re-exports
every function here.
"""
from __future__ import annotations

__all__ = ["hotspot_rodinia", "srad"]

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


SIXTEENTH = np.float32(1.0 / 16.0)
QUARTER = np.float32(0.25)
F255 = np.float32(255.0)


@njit(inline="always")
def _srad_pixel(jc, n, s, w, e, q0sqr):
    dn, ds, dw, de = n - jc, s - jc, w - jc, e - jc
    g2 = (dn * dn + ds * ds + dw * dw + de * de) / (jc * jc)
    l = (dn + ds + dw + de) / jc
    num = (HALF * g2) - (SIXTEENTH * (l * l))
    den = ONE + QUARTER * l
    qsqr = num / (den * den)
    den = (qsqr - q0sqr) / (q0sqr * (ONE + q0sqr))
    c = min(max(ONE / (ONE + den), ZERO), ONE)
    return dn, ds, dw, de, c


@njit(parallel=True)
def srad(niter, lam, image):
    """Rodinia's srad_v1 OpenMP loops: rows in parallel, edge columns peeled."""
    rows, cols = image.shape
    img = np.empty((rows, cols), np.float32)
    for i in prange(rows):
        for j in range(cols):
            img[i, j] = np.exp(np.float32(image[i, j]) / F255)
    dn, ds = np.empty_like(img), np.empty_like(img)
    dw, de = np.empty_like(img), np.empty_like(img)
    c = np.empty_like(img)
    row_sums, row_sums2 = np.empty(rows, np.float32), np.empty(rows, np.float32)
    ne_roi = np.float32(rows * cols)
    for _ in range(niter):
        for i in prange(rows):            # per-row partial sums: var_roi cancels, so a
            s = ZERO                      # single f32 chain over the image is too inexact
            s2 = ZERO
            for j in range(cols):
                v = img[i, j]
                s += v
                s2 += v * v
            row_sums[i] = s
            row_sums2[i] = s2
        mean_roi = row_sums.sum() / ne_roi
        var_roi = (row_sums2.sum() / ne_roi) - mean_roi * mean_roi
        q0sqr = var_roi / (mean_roi * mean_roi)
        for i in prange(rows):
            i_n, i_s = max(i - 1, 0), min(i + 1, rows - 1)
            dn[i, 0], ds[i, 0], dw[i, 0], de[i, 0], c[i, 0] = _srad_pixel(
                img[i, 0], img[i_n, 0], img[i_s, 0], img[i, 0], img[i, min(1, cols - 1)], q0sqr)
            for j in range(1, cols - 1):
                dn[i, j], ds[i, j], dw[i, j], de[i, j], c[i, j] = _srad_pixel(
                    img[i, j], img[i_n, j], img[i_s, j], img[i, j - 1], img[i, j + 1], q0sqr)
            if cols > 1:
                j = cols - 1
                dn[i, j], ds[i, j], dw[i, j], de[i, j], c[i, j] = _srad_pixel(
                    img[i, j], img[i_n, j], img[i_s, j], img[i, j - 1], img[i, j], q0sqr)
        scale = QUARTER * lam
        for i in prange(rows):
            i_s = min(i + 1, rows - 1)
            for j in range(cols - 1):
                img[i, j] = img[i, j] + scale * (c[i, j] * dn[i, j] + c[i_s, j] * ds[i, j]
                                                 + c[i, j] * dw[i, j] + c[i, j + 1] * de[i, j])
            j = cols - 1
            img[i, j] = img[i, j] + scale * (c[i, j] * dn[i, j] + c[i_s, j] * ds[i, j]
                                             + c[i, j] * dw[i, j] + c[i, j] * de[i, j])
    out = np.empty_like(img)
    for i in prange(rows):
        for j in range(cols):
            out[i, j] = np.log(img[i, j]) * F255
    return out
