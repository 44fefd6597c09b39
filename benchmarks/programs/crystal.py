"""Quasicrystal (Accelerate): frames of a sum of plane waves, in Futhark's shape.

Ported from Futhark's accelerate/crystal/crystal.fut: a tabulate over time
steps of tabulate_2d over the pixels, each pixel the sum (over `degree`
waves, a tabulate and a sum) of a wave whose direction (cos and sin of its
angle) is computed inside the wave function, then folded into [0, 1] by
`wrap`. The entry returns each pixel's intensity (the value Futhark's
rampColour turns into a packed ARGB colour) so that outputs compare within a
float tolerance, and every frame, where Futhark's main keeps one pixel each.
"""
import pyshark.prelude as ps

PI = 3.14159265358979323846
Frames = ps.Array[ps.Array[ps.Array[ps.f32]]]
Frame = ps.Array[ps.Array[ps.f32]]

__pyshark_cases__ = [
    {"entry": "crystal", "args": [2, 30.0, 3, 2, 0.5],
     "expected": [[[1.0, 0.36046815], [1.0, 0.36046693]],
                  [[1.0, 0.3608432], [0.991374, 0.44828728]]]},
]


def point(scale: ps.f32, x: ps.f32, y: ps.f32) -> tuple[ps.f32, ps.f32]:
    return (x * scale, y * scale)


def wrap(n: ps.f32) -> ps.f32:
    n2 = n - ps.f32(ps.i64(n))
    odd_in_int = ps.i64(n) & 1
    even_in_int = 1 - odd_in_int
    return ps.f32(odd_in_int) * (1.0 - n2) + ps.f32(even_in_int) * n2


def wave(th: ps.f32, x: ps.f32, y: ps.f32) -> ps.f32:
    cth = ps.cos(th)
    sth = ps.sin(th)
    return (ps.cos(cth * x + sth * y) + 1.0) / 2.0


def waver(th: ps.f32, x: ps.f32, y: ps.f32, n: int) -> ps.f32:
    return ps.sum(ps.tabulate(n, lambda i: wave(ps.f32(i) * th, x, y)))


def waves(degree: int, phi: ps.f32, x: ps.f32, y: ps.f32) -> ps.f32:
    th = PI / phi
    return wrap(waver(th, x, y, degree))


def quasicrystal(scale: ps.f32, degree: int, time: ps.f32, x: ps.f32, y: ps.f32) -> ps.f32:
    phi = 1.0 + (time ** 1.5) * 0.005
    xy = point(scale, x, y)
    return waves(degree, phi, xy[0], xy[1])


def normalize_index(i: int, field_size: int) -> ps.f32:
    return ps.f32(i) / ps.f32(field_size)


def render_frame(field_size: int, scale: ps.f32, degree: int, time: ps.f32) -> Frame:
    return ps.tabulate_2d(field_size, field_size, lambda y, x: quasicrystal(
        scale, degree, time, normalize_index(x, field_size), normalize_index(y, field_size)))


@ps.entry
def crystal(field_size: int, scale: ps.f32, degree: int, n_steps: int,
            time_delta: ps.f32) -> Frames:
    """n_steps frames of field_size x field_size intensities in [0, 1]."""
    return ps.tabulate(n_steps, lambda step_i: render_frame(
        field_size, scale, degree, ps.f32(step_i) * time_delta))
