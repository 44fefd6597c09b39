"""SGEMM (Parboil): alpha * A B + beta * C in f32, in Futhark's shape.

Ported from Futhark's parboil/sgemm/sgemm.fut: the product is a map over the
rows of A of a map over the rows of transpose(B) of a dot product (sum of a
map2), and scaling and adding are separate map nests, as that program writes
them.
"""
import pyshark.prelude as ps

F32s = ps.Array[ps.f32]
Matrix = ps.Array[ps.Array[ps.f32]]

__pyshark_cases__ = [
    {"entry": "sgemm", "args": [[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                                [[1.0, 0.0, -1.0], [0.5, 2.0, 1.0]],
                                [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0]], 2.0, 0.5],
     "expected": [[4.5, 8.5, 2.5], [11.0, 17.0, 3.0], [17.5, 25.5, 3.5]]},
    {"entry": "sgemm", "args": [[[2.0]], [[3.0]], [[1.0]], 1.0, 0.0], "expected": [[6.0]]},
]


def mult(xss: Matrix, yss: Matrix) -> Matrix:
    def dotprod(xs: F32s, ys: F32s) -> ps.f32:
        return ps.sum(ps.map(lambda x, y: x * y, xs, ys))

    return ps.map(lambda xs: ps.map(lambda ys: dotprod(xs, ys), ps.transpose(yss)), xss)


def add(xss: Matrix, yss: Matrix) -> Matrix:
    return ps.map(lambda xs, ys: ps.map(lambda x, y: x + y, xs, ys), xss, yss)


def scale(xss: Matrix, a: ps.f32) -> Matrix:
    return ps.map(lambda xs: ps.map(lambda x: x * a, xs), xss)


@ps.entry
def sgemm(ass: Matrix, bss: Matrix, css: Matrix, alpha: ps.f32, beta: ps.f32) -> Matrix:
    """alpha * ass @ bss + beta * css (ass n x m, bss m x p, css n x p)."""
    return add(scale(css, beta), scale(mult(ass, bss), alpha))
