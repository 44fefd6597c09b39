"""Dense f32 (and f64) matrix multiplication as map / map / reduce over the rows of a and columns of b."""
import pyshark.prelude as ps

Matrix = ps.Array[ps.Array[ps.f32]]
Matrix64 = ps.Array[ps.Array[ps.f64]]

__pyshark_cases__ = [
    {"entry": "matmul", "args": [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
     "expected": [[19.0, 22.0], [43.0, 50.0]]},
    {"entry": "matmul", "args": [[[1.0, 2.0, 3.0]], [[1.0], [0.5], [0.25]]], "expected": [[2.75]]},
    {"entry": "matmul_f64", "args": [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
     "expected": [[19.0, 22.0], [43.0, 50.0]]},
]


def dot(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), ps.map(lambda x, y: x * y, xs, ys))


@ps.entry
def matmul(a: Matrix, b: Matrix) -> Matrix:
    """a @ b for an n x k matrix a and a k x m matrix b."""
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: dot(row, col), bt), a)


@ps.entry
def matmul_f64(a: Matrix64, b: Matrix64) -> Matrix64:
    """a @ b in f64."""
    bt = ps.transpose(b)
    return ps.map(lambda row: ps.map(lambda col: ps.sum(ps.map(lambda x, y: x * y, row, col)), bt),
                  a)
