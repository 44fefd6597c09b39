"""LocVolCalib (FinPar): local-volatility calibration, solving a PDE backwards in time by ADI.

For each of `outer` strikes, a num_y x num_x f32 grid is rolled back over
num_t time steps; each step applies explicit finite differences in x and
y and then solves one tridiagonal system per grid row in x and per grid
column in y. The result is the option value at (s0, log alpha) per strike.
This follows Futhark's finpar/LocVolCalib.fut with the sequential
tridiagonal solver; the mu arrays are zero in this benchmark but kept, as in
the original.
"""
import pyshark.prelude as ps

F32s = ps.Array[ps.f32]
Grid = ps.Array[ps.Array[ps.f32]]

__pyshark_cases__ = [
    # s0 close to the strikes, so that the values are not simply s0 - strike
    {"entry": "locvolcalib", "args": [5, 16, 8, 8, 0.0035, 5.0, 0.2, 0.6, 0.5],
     "expected": [0.0034999985, 0.0025, 0.0019557667, 0.0019540319, 0.0018823470]},
    {"entry": "locvolcalib", "args": [0, 16, 8, 8, 0.03, 5.0, 0.2, 0.6, 0.5], "expected": []},
    {"entry": "locvolcalib_outside", "args": [5, 16, 8, 8, 0.0035, 5.0, 0.2, 0.6, 0.5],
     "expected": [0.0034999985, 0.0025, 0.0019557667, 0.0019540319, 0.0018823470]},
    {"entry": "locvolcalib_outside", "args": [0, 16, 8, 8, 0.03, 5.0, 0.2, 0.6, 0.5],
     "expected": []},
]


def first_derivative(xs: F32s, i: int) -> F32s:
    """The 3-point stencil of d/dx at xs[i] (one-sided at both ends)."""
    n = len(xs)
    if i == 0:
        dxu = xs[1] - xs[0]
        return [ps.f32(0.0), -1.0 / dxu, 1.0 / dxu]
    if i == n - 1:
        dxl = xs[n - 1] - xs[n - 2]
        return [-1.0 / dxl, 1.0 / dxl, ps.f32(0.0)]
    dxl = xs[i] - xs[i - 1]
    dxu = xs[i + 1] - xs[i]
    return [-dxu / dxl / (dxl + dxu), (dxu / dxl - dxl / dxu) / (dxl + dxu),
            dxl / dxu / (dxl + dxu)]


def second_derivative(xs: F32s, i: int) -> F32s:
    """The 3-point stencil of d2/dx2 at xs[i] (zero at both ends)."""
    n = len(xs)
    zero = ps.f32(0.0)
    if i == 0 or i == n - 1:
        return [zero, zero, zero]
    dxl = xs[i] - xs[i - 1]
    dxu = xs[i + 1] - xs[i]
    return [2.0 / dxl / (dxl + dxu), -2.0 * (1.0 / dxl + 1.0 / dxu) / (dxl + dxu),
            2.0 / dxu / (dxl + dxu)]


def tridag(a: F32s, b: F32s, c: F32s, y: F32s) -> F32s:
    """Solves the tridiagonal system (sub-diagonal a, diagonal b, super-diagonal c) for y."""
    n = len(y)
    bb = ps.copy(b)
    yy = ps.copy(y)
    for i in range(1, n):
        beta = a[i] / bb[i - 1]
        bb[i] = bb[i] - beta * c[i - 1]
        yy[i] = yy[i] - beta * yy[i - 1]
    yy[n - 1] = yy[n - 1] / bb[n - 1]
    for i in range(n - 2, -1, -1):
        yy[i] = (yy[i] - c[i] * yy[i + 1]) / bb[i]
    return yy


def explicit_cell(d: Grid, dd: Grid, mu: ps.f32, var: ps.f32, row: F32s, j: int) -> ps.f32:
    m = len(row)
    c1 = (mu * d[j, 0] + 0.5 * var * dd[j, 0]) * row[j - 1] if j > 0 else ps.f32(0.0)
    c3 = (mu * d[j, 2] + 0.5 * var * dd[j, 2]) * row[j + 1] if j < m - 1 else ps.f32(0.0)
    c2 = (mu * d[j, 1] + 0.5 * var * dd[j, 1]) * row[j]
    return c1 + c2 + c3


def explicit_method(d: Grid, dd: Grid, mu: Grid, var: Grid, result: Grid) -> Grid:
    """The explicit finite-difference operator applied along each row of result."""
    m = len(d)
    return ps.map(lambda mu_row, var_row, row: ps.map(
        lambda j: explicit_cell(d, dd, mu_row[j], var_row[j], row, j), ps.iota(m)),
        mu, var, result)


def implicit_row(d: Grid, dd: Grid, mu_row: F32s, var_row: F32s, u_row: F32s,
                 dt_inv: ps.f32) -> F32s:
    m = len(d)
    js = ps.iota(m)
    a = ps.map(lambda mu, var, j: 0.0 - 0.5 * (mu * d[j, 0] + 0.5 * var * dd[j, 0]),
               mu_row, var_row, js)
    b = ps.map(lambda mu, var, j: dt_inv - 0.5 * (mu * d[j, 1] + 0.5 * var * dd[j, 1]),
               mu_row, var_row, js)
    c = ps.map(lambda mu, var, j: 0.0 - 0.5 * (mu * d[j, 2] + 0.5 * var * dd[j, 2]),
               mu_row, var_row, js)
    return tridag(a, b, c, u_row)


def implicit_method(d: Grid, dd: Grid, mu: Grid, var: Grid, u: Grid, dt_inv: ps.f32) -> Grid:
    """One tridiagonal solve per row of u."""
    return ps.map(lambda mu_row, var_row, u_row: implicit_row(d, dd, mu_row, var_row, u_row,
                                                              dt_inv), mu, var, u)


def add_rows(us: Grid, vs: Grid) -> Grid:
    return ps.map(lambda ur, vr: ps.map(lambda a, b: a + b, ur, vr), us, vs)


def rollback(dx: Grid, dxx: Grid, dy: Grid, dyy: Grid, mu_x: Grid, var_x: Grid, mu_y: Grid,
             var_y: Grid, result: Grid, dt_inv: ps.f32) -> Grid:
    """One ADI time step backwards; result is num_y x num_x."""
    u = explicit_method(dx, dxx, mu_x, var_x, result)
    u = ps.map(lambda ur, rr: ps.map(lambda ue, re: dt_inv * re + 0.5 * ue, ur, rr), u, result)
    v = explicit_method(dy, dyy, mu_y, var_y, ps.transpose(result))
    u = add_rows(u, ps.transpose(v))
    u = implicit_method(dx, dxx, mu_x, var_x, u, dt_inv)
    y = ps.map(lambda ur, vr: ps.map(lambda ue, ve: dt_inv * ue - 0.5 * ve, ur, vr),
               ps.transpose(u), v)
    return ps.transpose(implicit_method(dy, dyy, mu_y, var_y, y, dt_inv))


def grid(num_x: int, num_y: int, num_t: int, s0: ps.f32, t: ps.f32, alpha: ps.f32,
         nu: ps.f32) -> tuple[F32s, F32s, F32s, int, int]:
    """(timeline, xs, ys, x_index, y_index): the grid, which no strike changes."""
    timeline = ps.map(lambda i: t * ps.f32(i) / (ps.f32(num_t) - 1.0), ps.iota(num_t))
    std_x = 20.0 * alpha * s0 * ps.sqrt(t)
    std_y = 10.0 * nu * ps.sqrt(t)
    step_x = std_x / ps.f32(num_x)
    step_y = std_y / ps.f32(num_y)
    x_index = int(s0 / step_x)
    y_index = num_y // 2
    log_alpha = ps.log(alpha)
    xs = ps.map(lambda i: ps.f32(i) * step_x - ps.f32(x_index) * step_x + s0, ps.iota(num_x))
    ys = ps.map(lambda i: ps.f32(i) * step_y - ps.f32(y_index) * step_y + log_alpha,
                ps.iota(num_y))
    return timeline, xs, ys, x_index, y_index


def operators(xs: F32s) -> tuple[Grid, Grid]:
    """(d, dd): the first- and second-derivative stencils at every point of xs."""
    n = len(xs)
    return (ps.map(lambda i: first_derivative(xs, i), ps.iota(n)),
            ps.map(lambda i: second_derivative(xs, i), ps.iota(n)))


def volatilities(xs: F32s, ys: F32s, beta: ps.f32, nu: ps.f32, tg: ps.f32) -> Grid:
    """var_x at time tg, num_y x num_x (FinPar's updateParams)."""
    return ps.map(lambda y: ps.map(
        lambda x: ps.exp(2.0 * (beta * ps.log(x) + y - 0.5 * nu * nu * tg)), xs), ys)


def value(num_x: int, num_y: int, num_t: int, s0: ps.f32, strike: ps.f32, t: ps.f32,
          alpha: ps.f32, nu: ps.f32, beta: ps.f32) -> ps.f32:
    """The calibrated value for one strike."""
    timeline, xs, ys, x_index, y_index = grid(num_x, num_y, num_t, s0, t, alpha, nu)
    # the operators and the payoff
    dx, dxx = operators(xs)
    dy, dyy = operators(ys)
    result = ps.map(lambda y: ps.map(lambda x: ps.max(x - strike, 0.0), xs), ys)
    mu_x = ps.replicate(num_y, ps.replicate(num_x, ps.f32(0.0)))
    mu_y = ps.replicate(num_x, ps.replicate(num_y, ps.f32(0.0)))
    var_y = ps.replicate(num_x, ps.replicate(num_y, nu * nu))
    # the time loop, backwards
    for g in range(num_t - 2, -1, -1):
        var_x = volatilities(xs, ys, beta, nu, timeline[g])
        dt_inv = 1.0 / (timeline[g + 1] - timeline[g])
        result = rollback(dx, dxx, dy, dyy, mu_x, var_x, mu_y, var_y, result, dt_inv)
    return result[y_index, x_index]


@ps.entry
def locvolcalib(outer: int, num_x: int, num_y: int, num_t: int, s0: ps.f32, t: ps.f32,
                alpha: ps.f32, nu: ps.f32, beta: ps.f32) -> F32s:
    """The values for the strikes 0.001 * i, i < outer (FShark's shape: the
    time loop inside the map over strikes)."""
    strikes = ps.map(lambda i: 0.001 * ps.f32(i), ps.iota(outer))
    return ps.map(lambda k: value(num_x, num_y, num_t, s0, k, t, alpha, nu, beta), strikes)


@ps.entry
def locvolcalib_outside(outer: int, num_x: int, num_y: int, num_t: int, s0: ps.f32,
                        t: ps.f32, alpha: ps.f32, nu: ps.f32, beta: ps.f32) -> F32s:
    """The same values, written loop-outside: the grid, the operators and
    the volatilities once for all strikes, then the time loop over a map of
    the strikes' grids (what the GPU's kernel extraction makes of the entry
    above by itself; issue 17 measures the two against each other)."""
    timeline, xs, ys, x_index, y_index = grid(num_x, num_y, num_t, s0, t, alpha, nu)
    dx, dxx = operators(xs)
    dy, dyy = operators(ys)
    results = ps.map(lambda i: ps.map(lambda y: ps.map(
        lambda x: ps.max(x - 0.001 * ps.f32(i), 0.0), xs), ys), ps.iota(outer))
    mu_x = ps.replicate(num_y, ps.replicate(num_x, ps.f32(0.0)))
    mu_y = ps.replicate(num_x, ps.replicate(num_y, ps.f32(0.0)))
    var_y = ps.replicate(num_x, ps.replicate(num_y, nu * nu))
    for g in range(num_t - 2, -1, -1):
        var_x = volatilities(xs, ys, beta, nu, timeline[g])
        dt_inv = 1.0 / (timeline[g + 1] - timeline[g])
        results = ps.map(lambda r: rollback(dx, dxx, dy, dyy, mu_x, var_x, mu_y, var_y, r,
                                            dt_inv), results)
    return ps.map(lambda r: r[y_index, x_index], results)
