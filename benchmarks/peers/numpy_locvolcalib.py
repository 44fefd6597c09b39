"""LocVolCalib as a NumPy user writes it: every strike at once, whole-array operations per time step.

The tridiagonal solves run the Thomas algorithm along the solve axis, each
step vectorised over all strikes and grid lines (that axis is moved to the
front so each step touches contiguous memory). `xp` is the array module
(CuPy's peer passes cupy).
"""
from __future__ import annotations

import numpy as np

from .common import locvolcalib_grid, locvolcalib_operators


def _explicit(d, dd, mu, var, r, xp):
    """The explicit operator along the last axis of r (mu, var broadcast over r's batch axis)."""
    coef = [mu * d[:, k] + 0.5 * var * dd[:, k] for k in range(3)]
    c1 = xp.zeros_like(r)
    c3 = xp.zeros_like(r)
    c1[..., 1:] = coef[0][..., 1:] * r[..., :-1]
    c3[..., :-1] = coef[2][..., :-1] * r[..., 1:]
    return c1 + coef[1] * r + c3


def _tridag(a, b, c, y, xp):
    """Solves along the last axis of y; a, b, c have y's trailing shape (no batch axis)."""
    y = xp.moveaxis(y, -1, 0).copy()
    a, c = xp.moveaxis(a, -1, 0), xp.moveaxis(c, -1, 0)
    b = xp.broadcast_to(xp.moveaxis(b, -1, 0)[:, None], y.shape).copy()
    n = len(y)
    for i in range(1, n):
        beta = a[i] / b[i - 1]
        b[i] = b[i] - beta * c[i - 1]
        y[i] = y[i] - beta * y[i - 1]
    y[n - 1] = y[n - 1] / b[n - 1]
    for i in range(n - 2, -1, -1):
        y[i] = (y[i] - c[i] * y[i + 1]) / b[i]
    return xp.moveaxis(y, 0, -1)


def _implicit(d, dd, mu, var, u, dt_inv, xp):
    a = 0.0 - 0.5 * (mu * d[:, 0] + 0.5 * var * dd[:, 0])
    b = dt_inv - 0.5 * (mu * d[:, 1] + 0.5 * var * dd[:, 1])
    c = 0.0 - 0.5 * (mu * d[:, 2] + 0.5 * var * dd[:, 2])
    return _tridag(a, b, c, u, xp)


def locvolcalib(outer, num_x, num_y, num_t, s0, t, alpha, nu, beta, xp=np):
    timeline, xs, ys, x_index, y_index = locvolcalib_grid(num_x, num_y, num_t, s0, t, alpha, nu)
    dx, dxx = (xp.asarray(a) for a in locvolcalib_operators(xs))
    dy, dyy = (xp.asarray(a) for a in locvolcalib_operators(ys))
    timeline, xs, ys = (xp.asarray(a) for a in (timeline, xs, ys))
    strikes = 0.001 * xp.arange(outer, dtype=xp.float32)
    # result[o, j, i]: strike o at (ys[j], xs[i])
    result = xp.maximum(xs[None, None, :] - strikes[:, None, None], xp.float32(0.0))
    result = xp.ascontiguousarray(xp.broadcast_to(result, (outer, num_y, num_x)))
    mu_x = xp.zeros((num_y, num_x), xp.float32)
    mu_y = xp.zeros((num_x, num_y), xp.float32)
    var_y = xp.full((num_x, num_y), nu * nu, xp.float32)
    log_xs = xp.log(xs)
    for g in range(num_t - 2, -1, -1):
        tg = timeline[g]
        var_x = xp.exp(2.0 * (beta * log_xs[None, :] + ys[:, None] - 0.5 * nu * nu * tg))
        dt_inv = 1.0 / (timeline[g + 1] - tg)
        u = _explicit(dx, dxx, mu_x, var_x, result, xp)
        u = dt_inv * result + 0.5 * u
        v = _explicit(dy, dyy, mu_y, var_y, result.transpose(0, 2, 1), xp)
        u = u + v.transpose(0, 2, 1)
        u = _implicit(dx, dxx, mu_x, var_x, u, dt_inv, xp)
        y = dt_inv * u.transpose(0, 2, 1) - 0.5 * v
        result = xp.ascontiguousarray(_implicit(dy, dyy, mu_y, var_y, y, dt_inv, xp)
                                      .transpose(0, 2, 1))
    return result[:, y_index, x_index]
