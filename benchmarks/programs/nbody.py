"""N-body: one time step of all-pairs gravitation (softened) with semi-implicit Euler.

Bodies are given as separate f32 arrays (structure of arrays). Each pair
costs about 20 floating-point operations, the usual count.
"""
import pyshark.prelude as ps

F32s = ps.Array[ps.f32]
Vec = tuple[ps.f32, ps.f32, ps.f32]

__pyshark_cases__ = [
    {"entry": "nbody_step",
     "args": [0.5, 1.0, [0.0, 1.0], [0.0, 0.0], [0.0, 0.0], [2.0, 2.0], [0.0, 0.0], [0.0, 1.0],
              [0.0, 0.0]],
     "expected": [[0.17677669, 0.8232233], [0.0, 0.5], [0.0, 0.0],
                  [0.35355338, -0.35355338], [0.0, 1.0], [0.0, 0.0]]},
    {"entry": "nbody_step", "args": [0.1, 0.01, [], [], [], [], [], [], []],
     "expected": [[], [], [], [], [], []]},
]


def add3(a: Vec, b: Vec) -> Vec:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def acceleration(xi: ps.f32, yi: ps.f32, zi: ps.f32, xs: F32s, ys: F32s, zs: F32s, ms: F32s,
                 eps2: ps.f32) -> Vec:
    """The pull of every body on the body at (xi, yi, zi)."""

    def pull(xj: ps.f32, yj: ps.f32, zj: ps.f32, mj: ps.f32) -> Vec:
        dx = xj - xi
        dy = yj - yi
        dz = zj - zi
        r2 = dx * dx + dy * dy + dz * dz + eps2
        s = mj / (r2 * ps.sqrt(r2))
        return (dx * s, dy * s, dz * s)

    zero = ps.f32(0.0)
    return ps.reduce(add3, (zero, zero, zero), ps.map(pull, xs, ys, zs, ms))


@ps.entry
def nbody_step(dt: ps.f32, eps: ps.f32, xs: F32s, ys: F32s, zs: F32s, ms: F32s,
               vxs: F32s, vys: F32s, vzs: F32s) -> tuple[F32s, F32s, F32s, F32s, F32s, F32s]:
    """New positions and velocities (x, y, z, vx, vy, vz) after one step of length dt."""
    eps2 = eps * eps
    acc = ps.map(lambda x, y, z: acceleration(x, y, z, xs, ys, zs, ms, eps2), xs, ys, zs)
    axs, ays, azs = ps.unzip(acc)
    nvx = ps.map(lambda v, a: v + a * dt, vxs, axs)
    nvy = ps.map(lambda v, a: v + a * dt, vys, ays)
    nvz = ps.map(lambda v, a: v + a * dt, vzs, azs)
    nx = ps.map(lambda p, v: p + v * dt, xs, nvx)
    ny = ps.map(lambda p, v: p + v * dt, ys, nvy)
    nz = ps.map(lambda p, v: p + v * dt, zs, nvz)
    return (nx, ny, nz, nvx, nvy, nvz)
