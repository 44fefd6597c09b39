"""NumPy peers of the ports in their authors' shapes (issue 17), as a NumPy user writes them for speed.

Whole-array slices per region instead of a branch per cell; the same
float32 values as the PyShark programs (the same order of operations
wherever it matters). numpy_peers re-exports every function here.
"""
from __future__ import annotations

__all__ = ["hotspot_rodinia", "srad", "sgemm", "mri_q", "crystal", "backprop"]

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


def srad(niter, lam, image):
    """Rodinia's srad_v1 over whole arrays; a missing neighbour is the pixel itself (difference 0)."""
    img = np.exp(image.astype(f32) / f32(255.0))
    ne_roi = f32(img.size)
    dn, ds, dw, de = (np.zeros_like(img) for _ in range(4))
    c_s, c_e = np.empty_like(img), np.empty_like(img)
    for _ in range(niter):
        mean_roi = img.sum() / ne_roi
        var_roi = (np.square(img).sum() / ne_roi) - mean_roi * mean_roi
        q0sqr = var_roi / (mean_roi * mean_roi)
        dn[1:] = img[:-1] - img[1:]
        ds[:-1] = img[1:] - img[:-1]
        dw[:, 1:] = img[:, :-1] - img[:, 1:]
        de[:, :-1] = img[:, 1:] - img[:, :-1]
        g2 = (dn * dn + ds * ds + dw * dw + de * de) / (img * img)
        l = (dn + ds + dw + de) / img
        num = (0.5 * g2) - ((1.0 / 16.0) * (l * l))
        den = 1.0 + 0.25 * l
        qsqr = num / (den * den)
        den = (qsqr - q0sqr) / (q0sqr * (1.0 + q0sqr))
        c = np.clip(1.0 / (1.0 + den), f32(0.0), f32(1.0))
        c_s[:-1], c_s[-1] = c[1:], c[-1]
        c_e[:, :-1], c_e[:, -1] = c[:, 1:], c[:, -1]
        img = img + 0.25 * lam * (c * dn + c_s * ds + c * dw + c_e * de)
    return np.log(img) * f32(255.0)


def sgemm(ass, bss, css, alpha, beta):
    """Parboil's sgemm through NumPy's BLAS."""
    return css * beta + (ass @ bss) * alpha


TWO_PI = np.float32(2.0 * 3.14159265358979323846)


def mri_q(kx, ky, kz, x, y, z, phi_r, phi_i):
    """Blocks of voxels: the angles as an outer product, cos/sin, then a BLAS matrix-vector product."""
    phi_mag = phi_r * phi_r + phi_i * phi_i
    qr, qi = np.empty_like(x), np.empty_like(x)
    block = max(1, (1 << 22) // max(1, len(kx)))      # 16 MiB of angles at a time
    for s in range(0, len(x), block):
        e = min(s + block, len(x))
        args = TWO_PI * (x[s:e, None] * kx + y[s:e, None] * ky + z[s:e, None] * kz)
        qr[s:e] = np.cos(args) @ phi_mag
        qi[s:e] = np.sin(args) @ phi_mag
    return qr, qi


def _wrap(n):
    whole = n.astype(np.int64)
    frac = n - whole.astype(f32)
    odd = whole & 1
    return odd.astype(f32) * (f32(1.0) - frac) + (1 - odd).astype(f32) * frac


def crystal(field_size, scale, degree, n_steps, time_delta):
    """Each frame as whole arrays, one pass per wave, the wave directions computed once per frame."""
    coords = np.arange(field_size, dtype=f32) / f32(field_size)
    xs = (coords * scale)[None, :]
    ys = (coords * scale)[:, None]
    frames = np.empty((n_steps, field_size, field_size), f32)
    for step_i in range(n_steps):
        time = f32(step_i) * time_delta
        phi = 1.0 + (time ** 1.5) * 0.005
        th = f32(3.14159265358979323846) / phi
        acc = np.zeros((field_size, field_size), f32)
        for i in range(degree):
            a = f32(i) * th
            acc += (np.cos(np.cos(a) * xs + np.sin(a) * ys) + 1.0) / 2.0
        frames[step_i] = _wrap(acc)
    return frames


def _squash(x):
    return 1.0 / (1.0 + np.exp(-x))


def _adjust_weights(delta, ly, w, oldw):
    lyext = np.concatenate(([f32(1.0)], ly))
    new_dw = (0.3 * delta)[None, :] * lyext[:, None] + 0.3 * oldw
    return w + new_dw


def backprop(input_units, target, input_weights, hidden_weights, input_prev_weights,
             hidden_prev_weights):
    """Rodinia's bpnn_train_kernel: layers as BLAS vector-matrix products."""
    hidden = _squash(input_units @ input_weights[1:] + input_weights[0])
    output = _squash(hidden @ hidden_weights[1:] + hidden_weights[0])
    delta_o = output * (1.0 - output) * (target - output)
    delta_h = hidden * (1.0 - hidden) * (hidden_weights[1:] @ delta_o)
    return (np.abs(delta_o).sum(), np.abs(delta_h).sum(),
            _adjust_weights(delta_h, input_units, input_weights, input_prev_weights),
            _adjust_weights(delta_o, hidden, hidden_weights, hidden_prev_weights))
