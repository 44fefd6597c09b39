"""SRAD (Rodinia): speckle-reducing anisotropic diffusion of an image, in Futhark's shape.

Ported from Futhark's rodinia/srad/srad.fut (`do_srad`), itself from
Rodinia's srad_v1: each iteration takes two reductions over the whole image
(sum and sum of squares), then a map over rows of a map over columns gives
five values per pixel (four clamped differences and a diffusion coefficient,
unzipped into five grids), and a second map nest updates the image from them
and from its south and east neighbours' coefficients. As in Futhark, the
result is the log-compressed image in f32, not rounded to integers.
"""
import pyshark.prelude as ps

Image = ps.Array[ps.Array[ps.u8]]
Grid = ps.Array[ps.Array[ps.f32]]
Pixel = tuple[ps.f32, ps.f32, ps.f32, ps.f32, ps.f32]

__pyshark_cases__ = [
    {"entry": "srad", "args": [2, 0.5, [[10, 200, 30], [40, 50, 255], [0, 80, 90]]],
     "expected": [[33.709133, 168.30486, 64.49312], [31.490955, 82.92053, 222.13338],
                  [25.643192, 66.16006, 116.807816]]},
    {"entry": "srad", "args": [0, 0.5, [[0, 255]]], "expected": [[0.0, 255.00003]]},
]


def index_n(rows: int, i: int) -> int:
    return i if i == 0 else i - 1


def index_s(rows: int, i: int) -> int:
    return i if i == rows - 1 else i + 1


def index_w(cols: int, j: int) -> int:
    return j if j == 0 else j - 1


def index_e(cols: int, j: int) -> int:
    return j if j == cols - 1 else j + 1


@ps.entry
def srad(niter: int, lam: ps.f32, image: Image) -> Grid:
    """The image after niter diffusion steps, scaled to 0-255 and log-compressed."""
    rows = len(image)
    cols = len(image[0])
    ne_roi = rows * cols
    img = ps.map(lambda row: ps.map(lambda pixel: ps.exp(ps.f32(pixel) / 255.0), row), image)
    for _i in range(niter):
        total = ps.sum(ps.flatten(img))
        total2 = ps.sum(ps.map(lambda x: x ** 2.0, ps.flatten(img)))
        mean_roi = total / ps.f32(ne_roi)
        var_roi = (total2 / ps.f32(ne_roi)) - mean_roi * mean_roi
        q0sqr = var_roi / (mean_roi * mean_roi)

        def pixel(i: int, j: int, jc: ps.f32) -> Pixel:
            dn_k = img[index_n(rows, i), j] - jc
            ds_k = img[index_s(rows, i), j] - jc
            dw_k = img[i, index_w(cols, j)] - jc
            de_k = img[i, index_e(cols, j)] - jc
            g2 = (dn_k * dn_k + ds_k * ds_k + dw_k * dw_k + de_k * de_k) / (jc * jc)
            l = (dn_k + ds_k + dw_k + de_k) / jc
            num = (0.5 * g2) - ((1.0 / 16.0) * (l * l))
            den = 1.0 + 0.25 * l
            qsqr = num / (den * den)
            den = (qsqr - q0sqr) / (q0sqr * (1.0 + q0sqr))
            c_k = 1.0 / (1.0 + den)
            c_k = ps.f32(0.0) if c_k < 0.0 else (ps.f32(1.0) if c_k > 1.0 else c_k)
            return (dn_k, ds_k, dw_k, de_k, c_k)

        dn, ds, dw, de, c = ps.unzip(ps.map(
            lambda i, row: ps.unzip(ps.map(lambda j, jc: pixel(i, j, jc), ps.iota(cols), row)),
            ps.iota(rows), img))

        def update(i: int, j: int, value: ps.f32, c_k: ps.f32, dn_k: ps.f32, ds_k: ps.f32,
                   dw_k: ps.f32, de_k: ps.f32) -> ps.f32:
            c_n = c_k
            c_s = c[index_s(rows, i), j]
            c_w = c_k
            c_e = c[i, index_e(cols, j)]
            d = c_n * dn_k + c_s * ds_k + c_w * dw_k + c_e * de_k
            return value + 0.25 * lam * d

        img = ps.map(lambda i, image_row, c_row, d_rows: ps.map(
            lambda j, value, c_k, d: update(i, j, value, c_k, d[0], d[1], d[2], d[3]),
            ps.iota(cols), image_row, c_row,
            ps.zip(d_rows[0], d_rows[1], d_rows[2], d_rows[3])),
            ps.iota(rows), img, c, ps.zip(dn, ds, dw, de))
    return ps.map(lambda row: ps.map(lambda value: ps.log(value) * 255.0, row), img)
