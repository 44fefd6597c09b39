"""MRI-Q (Parboil): the Q matrix of non-Cartesian MRI reconstruction, in Futhark's shape.

Ported from Futhark's parboil/mri-q/mri-q.fut (from Parboil's CPU version):
phiMag is a map over the k-space samples; expArgs a map over the voxels of a
map over the samples (2 pi times a 3-D dot product); Qr and Qi each a map
over expArgs' rows of cos (or sin), times phiMag, summed: the
map-with-reduction Futhark's comments describe.
"""
import pyshark.prelude as ps

F32s = ps.Array[ps.f32]

PI = 3.14159265358979323846

__pyshark_cases__ = [
    {"entry": "mri_q", "args": [[0.0, 0.25], [0.0, 0.0], [0.0, 0.5], [1.0, 0.5], [0.0, 2.0],
                                [0.5, 0.0], [1.0, 2.0], [0.0, 1.0]],
     "expected": [[-4.0, 4.535534], [-4.371139e-07, 3.535534]]},
]


@ps.entry
def mri_q(kx: F32s, ky: F32s, kz: F32s, x: F32s, y: F32s, z: F32s, phi_r: F32s,
          phi_i: F32s) -> tuple[F32s, F32s]:
    """(Qr, Qi), one value per voxel (x, y, z) over the samples (kx, ky, kz, phi)."""
    phi_mag = ps.map(lambda r, i: r * r + i * i, phi_r, phi_i)
    exp_args = ps.map(lambda x_e, y_e, z_e: ps.map(
        lambda a: 2.0 * PI * a,
        ps.map(lambda kx_e, ky_e, kz_e: kx_e * x_e + ky_e * y_e + kz_e * z_e, kx, ky, kz)),
        x, y, z)
    qr = ps.map(lambda row: ps.sum(ps.map(lambda m, c: m * c, phi_mag, ps.map(ps.cos, row))),
                exp_args)
    qi = ps.map(lambda row: ps.sum(ps.map(lambda m, s: m * s, phi_mag, ps.map(ps.sin, row))),
                exp_args)
    return (qr, qi)
