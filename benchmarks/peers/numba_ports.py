"""Numba peers of the ports in their authors' shapes (issue 17), as an expert writes them for speed.

@njit(parallel=True) with prange over the outer parallel dimension, plain
loops inside, boundaries peeled so that the inner loops are straight-line
code that LLVM vectorises, scratch allocated once per call. Float constants
are float32 globals so the arithmetic stays float32. numba_peers re-exports
every function here.
"""
from __future__ import annotations

__all__ = ["hotspot_rodinia", "srad", "sgemm", "mri_q", "crystal", "backprop"]

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


@njit(parallel=True)
def sgemm(ass, bss, css, alpha, beta):
    """Rows of A in parallel, i-k-j order so the inner loop streams B's rows (vectorised)."""
    n, m = ass.shape
    p = bss.shape[1]
    out = np.empty((n, p), np.float32)
    for i in prange(n):
        acc = np.zeros(p, np.float32)
        for k in range(m):
            aik = ass[i, k]
            for j in range(p):
                acc[j] += aik * bss[k, j]
        for j in range(p):
            out[i, j] = css[i, j] * beta + acc[j] * alpha
    return out


TWO_PI = np.float32(2.0 * 3.14159265358979323846)
F_PI = np.float32(3.14159265358979323846)


@njit(parallel=True)
def mri_q(kx, ky, kz, x, y, z, phi_r, phi_i):
    """Parboil's CPU loop nest: voxels in parallel, a sequential sum over the samples."""
    num_k, num_x = len(kx), len(x)
    phi_mag = np.empty(num_k, np.float32)
    for k in range(num_k):
        phi_mag[k] = phi_r[k] * phi_r[k] + phi_i[k] * phi_i[k]
    qr, qi = np.empty(num_x, np.float32), np.empty(num_x, np.float32)
    for v in prange(num_x):
        xv, yv, zv = x[v], y[v], z[v]
        sr = ZERO
        si = ZERO
        for k in range(num_k):
            arg = TWO_PI * (kx[k] * xv + ky[k] * yv + kz[k] * zv)
            sr += phi_mag[k] * np.cos(arg)
            si += phi_mag[k] * np.sin(arg)
        qr[v] = sr
        qi[v] = si
    return qr, qi


@njit(parallel=True)
def crystal(field_size, scale, degree, n_steps, time_delta):
    """Wave directions once per frame; rows of all frames in parallel, waves summed per pixel."""
    frames = np.empty((n_steps, field_size, field_size), np.float32)
    cth = np.empty((n_steps, degree), np.float32)
    sth = np.empty((n_steps, degree), np.float32)
    for s in range(n_steps):
        time = np.float32(s) * time_delta
        phi = ONE + (time ** np.float32(1.5)) * np.float32(0.005)
        th = F_PI / phi
        for i in range(degree):
            a = np.float32(i) * th
            cth[s, i] = np.cos(a)
            sth[s, i] = np.sin(a)
    for row in prange(n_steps * field_size):
        s, yi = row // field_size, row % field_size
        y = np.float32(yi) / np.float32(field_size) * scale
        for xi in range(field_size):
            x = np.float32(xi) / np.float32(field_size) * scale
            acc = ZERO
            for i in range(degree):
                acc += (np.cos(cth[s, i] * x + sth[s, i] * y) + ONE) / TWO
            whole = np.int64(acc)
            frac = acc - np.float32(whole)
            odd = whole & 1
            frames[s, yi, xi] = np.float32(odd) * (ONE - frac) + np.float32(1 - odd) * frac
    return frames


ETA = np.float32(0.3)
MOMENTUM = np.float32(0.3)


@njit(parallel=True)
def _layerforward(l1, conn, nchunks):
    """squash(l1 @ conn[1:] + conn[0]): chunks of rows in parallel, each into its own partial sums."""
    n1, n2 = len(l1), conn.shape[1]
    size = (n1 + nchunks - 1) // nchunks
    partial = np.zeros((nchunks, n2), np.float32)
    for ch in prange(nchunks):
        for k in range(ch * size, min((ch + 1) * size, n1)):
            lk = l1[k]
            for j in range(n2):
                partial[ch, j] += conn[k + 1, j] * lk
    out = np.empty(n2, np.float32)
    for j in range(n2):
        s = ZERO
        for ch in range(nchunks):
            s += partial[ch, j]
        out[j] = ONE / (ONE + np.exp(-(s + conn[0, j])))
    return out


@njit(parallel=True)
def _adjust_weights(delta, ly, w, oldw):
    rows, cols = w.shape
    out = np.empty_like(w)
    for k in prange(rows):
        lyk = ONE if k == 0 else ly[k - 1]
        for j in range(cols):
            out[k, j] = w[k, j] + (ETA * delta[j] * lyk + MOMENTUM * oldw[k, j])
    return out


@njit
def _errors(hidden, output, target, hidden_weights):
    n_out, n_hid = len(output), len(hidden)
    delta_o = np.empty(n_out, np.float32)
    out_err = ZERO
    for j in range(n_out):
        o = output[j]
        delta_o[j] = o * (ONE - o) * (target[j] - o)
        out_err += abs(delta_o[j])
    delta_h = np.empty(n_hid, np.float32)
    hid_err = ZERO
    for j in range(n_hid):
        s = ZERO
        for k in range(n_out):
            s += delta_o[k] * hidden_weights[j + 1, k]
        h = hidden[j]
        delta_h[j] = h * (ONE - h) * s
        hid_err += abs(delta_h[j])
    return out_err, hid_err, delta_o, delta_h


def backprop(input_units, target, input_weights, hidden_weights, input_prev_weights,
             hidden_prev_weights):
    import numba
    nchunks = 4 * numba.get_num_threads()
    hidden = _layerforward(input_units, input_weights, nchunks)
    output = _layerforward(hidden, hidden_weights, 1)
    out_err, hid_err, delta_o, delta_h = _errors(hidden, output, target, hidden_weights)
    return (out_err, hid_err, _adjust_weights(delta_h, input_units, input_weights, input_prev_weights),
            _adjust_weights(delta_o, hidden, hidden_weights, hidden_prev_weights))
