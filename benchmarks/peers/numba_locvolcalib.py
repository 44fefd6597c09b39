"""LocVolCalib as an expert Numba user writes it (as FinPar's OpenMP version): one strike per thread.

Inside a strike, plain loops over preallocated scratch: the x sweeps run the
Thomas algorithm along each contiguous grid row; the y sweeps run it on all
grid columns at once, row by row, so the inner loop is contiguous and
vectorises. log(xs) is taken once, not per time step. The mu arrays are
zero in this benchmark but kept, as in FinPar.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import locvolcalib_grid, locvolcalib_operators

ZERO = np.float32(0.0)
HALF = np.float32(0.5)
ONE = np.float32(1.0)
TWO = np.float32(2.0)


@njit
def _tridag_row(a, b, c, y, scratch, n):
    """Thomas algorithm in place into y[:n]; scratch holds the modified diagonal."""
    scratch[0] = b[0]
    for i in range(1, n):
        beta = a[i] / scratch[i - 1]
        scratch[i] = b[i] - beta * c[i - 1]
        y[i] = y[i] - beta * y[i - 1]
    y[n - 1] = y[n - 1] / scratch[n - 1]
    for i in range(n - 2, -1, -1):
        y[i] = (y[i] - c[i] * y[i + 1]) / scratch[i]


@njit
def _value(strike, xs, log_xs, ys, timeline, dx, dxx, dy, dyy, beta, nu, x_index, y_index):
    nx, ny, nt = len(xs), len(ys), len(timeline)
    result = np.empty((ny, nx), np.float32)        # result[j, i]: at (ys[j], xs[i])
    for j in range(ny):
        for i in range(nx):
            result[j, i] = max(xs[i] - strike, ZERO)
    u = np.empty((ny, nx), np.float32)
    v = np.empty((ny, nx), np.float32)             # the y operator, stored row-major too
    var_x = np.empty((ny, nx), np.float32)
    bb = np.empty((ny, nx), np.float32)            # y sweep: modified diagonals,
    cc = np.empty((ny, nx), np.float32)            # super-diagonals
    a, b, c = np.empty(nx, np.float32), np.empty(nx, np.float32), np.empty(nx, np.float32)
    scratch = np.empty(nx, np.float32)
    mu_x = np.zeros((ny, nx), np.float32)          # zero in this benchmark, kept as in FinPar
    mu_yt = np.zeros((ny, nx), np.float32)         # mu_y and var_y, stored [j, i]
    var_yt = np.full((ny, nx), nu * nu, np.float32)
    for g in range(nt - 2, -1, -1):
        tg = timeline[g]
        for j in range(ny):
            for i in range(nx):
                var_x[j, i] = np.exp(TWO * (beta * log_xs[i] + ys[j] - HALF * nu * nu * tg))
        dt_inv = ONE / (timeline[g + 1] - tg)
        for j in range(ny):                        # explicit x and y
            jn, js = j - 1, j + 1
            for i in range(nx):
                mu, var = mu_x[j, i], var_x[j, i]
                c2 = (mu * dx[i, 1] + HALF * var * dxx[i, 1]) * result[j, i]
                c1 = (mu * dx[i, 0] + HALF * var * dxx[i, 0]) * result[j, i - 1] if i > 0 else ZERO
                c3 = (mu * dx[i, 2] + HALF * var * dxx[i, 2]) * result[j, i + 1] if i < nx - 1 else ZERO
                mu, var = mu_yt[j, i], var_yt[j, i]
                e2 = (mu * dy[j, 1] + HALF * var * dyy[j, 1]) * result[j, i]
                e1 = (mu * dy[j, 0] + HALF * var * dyy[j, 0]) * result[jn, i] if j > 0 else ZERO
                e3 = (mu * dy[j, 2] + HALF * var * dyy[j, 2]) * result[js, i] if j < ny - 1 else ZERO
                v[j, i] = e1 + e2 + e3
                u[j, i] = (dt_inv * result[j, i] + HALF * (c1 + c2 + c3)) + v[j, i]
        for j in range(ny):                        # implicit x: one row at a time
            for i in range(nx):
                mu, var = mu_x[j, i], var_x[j, i]
                a[i] = ZERO - HALF * (mu * dx[i, 0] + HALF * var * dxx[i, 0])
                b[i] = dt_inv - HALF * (mu * dx[i, 1] + HALF * var * dxx[i, 1])
                c[i] = ZERO - HALF * (mu * dx[i, 2] + HALF * var * dxx[i, 2])
            _tridag_row(a, b, c, u[j], scratch, nx)
        for i in range(nx):                        # implicit y: every column at once
            mu, var = mu_yt[0, i], var_yt[0, i]
            bb[0, i] = dt_inv - HALF * (mu * dy[0, 1] + HALF * var * dyy[0, 1])
            cc[0, i] = ZERO - HALF * (mu * dy[0, 2] + HALF * var * dyy[0, 2])
            result[0, i] = dt_inv * u[0, i] - HALF * v[0, i]
        for j in range(1, ny):
            for i in range(nx):
                mu, var = mu_yt[j, i], var_yt[j, i]
                aj = ZERO - HALF * (mu * dy[j, 0] + HALF * var * dyy[j, 0])
                bj = dt_inv - HALF * (mu * dy[j, 1] + HALF * var * dyy[j, 1])
                cc[j, i] = ZERO - HALF * (mu * dy[j, 2] + HALF * var * dyy[j, 2])
                yj = dt_inv * u[j, i] - HALF * v[j, i]
                m = aj / bb[j - 1, i]
                bb[j, i] = bj - m * cc[j - 1, i]
                result[j, i] = yj - m * result[j - 1, i]
        for i in range(nx):
            result[ny - 1, i] = result[ny - 1, i] / bb[ny - 1, i]
        for j in range(ny - 2, -1, -1):
            for i in range(nx):
                result[j, i] = (result[j, i] - cc[j, i] * result[j + 1, i]) / bb[j, i]
    return result[y_index, x_index]


@njit(parallel=True)
def _locvolcalib(strikes, xs, ys, timeline, dx, dxx, dy, dyy, beta, nu, x_index, y_index):
    out = np.empty(len(strikes), np.float32)
    log_xs = np.log(xs)
    for o in prange(len(strikes)):
        out[o] = _value(strikes[o], xs, log_xs, ys, timeline, dx, dxx, dy, dyy, beta, nu,
                        x_index, y_index)
    return out


def locvolcalib(outer, num_x, num_y, num_t, s0, t, alpha, nu, beta):
    timeline, xs, ys, x_index, y_index = locvolcalib_grid(num_x, num_y, num_t, s0, t, alpha, nu)
    dx, dxx = locvolcalib_operators(xs)
    dy, dyy = locvolcalib_operators(ys)
    strikes = 0.001 * np.arange(outer, dtype=np.float32)
    return _locvolcalib(strikes, xs, ys, timeline, dx, dxx, dy, dyy, beta, nu, x_index, y_index)
