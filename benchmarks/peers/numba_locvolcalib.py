"""LocVolCalib as a Numba user writes it (as FinPar's OpenMP version): one strike per thread, sequential loops inside."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import locvolcalib_grid, locvolcalib_operators

ZERO = np.float32(0.0)
HALF = np.float32(0.5)
ONE = np.float32(1.0)
TWO = np.float32(2.0)


@njit
def _tridag(a, b, c, y, scratch):
    """Solves in place into y; scratch holds the modified diagonal."""
    n = len(y)
    scratch[0] = b[0]
    for i in range(1, n):
        beta = a[i] / scratch[i - 1]
        scratch[i] = b[i] - beta * c[i - 1]
        y[i] = y[i] - beta * y[i - 1]
    y[n - 1] = y[n - 1] / scratch[n - 1]
    for i in range(n - 2, -1, -1):
        y[i] = (y[i] - c[i] * y[i + 1]) / scratch[i]


@njit
def _explicit(d, dd, mu, var, r, j):
    """The explicit operator at r[j] along a grid line r (mu, var at j)."""
    m = len(r)
    c2 = (mu * d[j, 1] + HALF * var * dd[j, 1]) * r[j]
    c1 = (mu * d[j, 0] + HALF * var * dd[j, 0]) * r[j - 1] if j > 0 else ZERO
    c3 = (mu * d[j, 2] + HALF * var * dd[j, 2]) * r[j + 1] if j < m - 1 else ZERO
    return c1 + c2 + c3


@njit
def _value(strike, xs, ys, timeline, dx, dxx, dy, dyy, beta, nu, x_index, y_index):
    nx, ny, nt = len(xs), len(ys), len(timeline)
    result = np.empty((ny, nx), np.float32)
    for j in range(ny):
        for i in range(nx):
            result[j, i] = max(xs[i] - strike, ZERO)
    u = np.empty((ny, nx), np.float32)
    v = np.empty((nx, ny), np.float32)
    var_x = np.empty((ny, nx), np.float32)
    a, b, c = np.empty(max(nx, ny), np.float32), np.empty(max(nx, ny), np.float32), \
        np.empty(max(nx, ny), np.float32)
    scratch = np.empty(max(nx, ny), np.float32)
    column = np.empty(ny, np.float32)
    mu_x = np.zeros((ny, nx), np.float32)      # zero in this benchmark, kept as in FinPar
    mu_y = np.zeros((nx, ny), np.float32)
    var_y = np.full((nx, ny), nu * nu, np.float32)
    for g in range(nt - 2, -1, -1):
        tg = timeline[g]
        for j in range(ny):
            for i in range(nx):
                var_x[j, i] = np.exp(TWO * (beta * np.log(xs[i]) + ys[j] - HALF * nu * nu * tg))
        dt_inv = ONE / (timeline[g + 1] - tg)
        for j in range(ny):                       # explicit x
            for i in range(nx):
                u[j, i] = dt_inv * result[j, i] + HALF * _explicit(dx, dxx, mu_x[j, i],
                                                                   var_x[j, i], result[j], i)
        for i in range(nx):                       # explicit y
            column[:] = result[:, i]
            for j in range(ny):
                v[i, j] = _explicit(dy, dyy, mu_y[i, j], var_y[i, j], column, j)
                u[j, i] = u[j, i] + v[i, j]
        for j in range(ny):                       # implicit x
            for i in range(nx):
                mu, var = mu_x[j, i], var_x[j, i]
                a[i] = ZERO - HALF * (mu * dx[i, 0] + HALF * var * dxx[i, 0])
                b[i] = dt_inv - HALF * (mu * dx[i, 1] + HALF * var * dxx[i, 1])
                c[i] = ZERO - HALF * (mu * dx[i, 2] + HALF * var * dxx[i, 2])
            _tridag(a[:nx], b[:nx], c[:nx], u[j], scratch)
        for i in range(nx):                       # implicit y
            for j in range(ny):
                mu, var = mu_y[i, j], var_y[i, j]
                a[j] = ZERO - HALF * (mu * dy[j, 0] + HALF * var * dyy[j, 0])
                b[j] = dt_inv - HALF * (mu * dy[j, 1] + HALF * var * dyy[j, 1])
                c[j] = ZERO - HALF * (mu * dy[j, 2] + HALF * var * dyy[j, 2])
                column[j] = dt_inv * u[j, i] - HALF * v[i, j]
            _tridag(a[:ny], b[:ny], c[:ny], column, scratch)
            result[:, i] = column
    return result[y_index, x_index]


@njit(parallel=True)
def _locvolcalib(strikes, xs, ys, timeline, dx, dxx, dy, dyy, beta, nu, x_index, y_index):
    out = np.empty(len(strikes), np.float32)
    for o in prange(len(strikes)):
        out[o] = _value(strikes[o], xs, ys, timeline, dx, dxx, dy, dyy, beta, nu, x_index,
                        y_index)
    return out


def locvolcalib(outer, num_x, num_y, num_t, s0, t, alpha, nu, beta):
    timeline, xs, ys, x_index, y_index = locvolcalib_grid(num_x, num_y, num_t, s0, t, alpha, nu)
    dx, dxx = locvolcalib_operators(xs)
    dy, dyy = locvolcalib_operators(ys)
    strikes = 0.001 * np.arange(outer, dtype=np.float32)
    return _locvolcalib(strikes, xs, ys, timeline, dx, dxx, dy, dyy, beta, nu, x_index, y_index)
