"""Sparse matrix-vector product y = A x with A in CSR form.

CSR (compressed sparse row, as in scipy.sparse.csr_matrix): row r's nonzeros
are data[indptr[r]:indptr[r+1]], in the columns indices[indptr[r]:indptr[r+1]];
an n-row matrix has n + 1 entries in indptr, starting at 0. Each row's dot
product with x is independent: the "scalar CSR" kernel of Bell and Garland,
"Implementing sparse matrix-vector multiplication on throughput-oriented
processors" (SC 2009), written as a map over rows of a sum over the row's
nonzeros.
"""
import pyshark.prelude as ps

__pyshark_cases__ = [
    # [[1, 0, 2], [0, 0, 3], [4, 5, 6]] @ [1, 2, 3] = [7, 9, 32]
    {"entry": "spmv", "args": [[0, 2, 3, 6], [0, 2, 2, 0, 1, 2], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                               [1.0, 2.0, 3.0]],
     "expected": [7.0, 9.0, 32.0]},
    # an empty row in the middle, a 5 x 2 matrix (not square)
    {"entry": "spmv", "args": [[0, 1, 1, 3, 3, 4], [1, 0, 1, 0], [2.0, -1.0, 0.5, 3.0],
                               [10.0, 100.0]],
     "expected": [200.0, 0.0, 40.0, 0.0, 30.0]},
    # a 1 x 1 matrix
    {"entry": "spmv", "args": [[0, 1], [0], [2.5], [4.0]], "expected": [10.0]},
    # no rows
    {"entry": "spmv", "args": [[0], [], [], [1.0, 2.0]], "expected": []},
    # a column index past the end of x
    {"entry": "spmv", "args": [[0, 1], [3], [1.0], [1.0, 2.0]], "raises": "IndexError"},
]


@ps.entry
def spmv(indptr: ps.Array[int], indices: ps.Array[int], data: ps.Array[ps.f32],
         x: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    """A @ x for the CSR matrix (indptr, indices, data)."""
    def row(r: int) -> ps.f32:
        lo, hi = indptr[r], indptr[r + 1]
        return ps.sum(ps.map(lambda a, c: a * x[c], data[lo:hi], indices[lo:hi]))

    return ps.tabulate(len(indptr) - 1, row)


if __name__ == "__main__":
    import numpy as np

    def numpy_spmv(indptr, indices, data, x):
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices, dtype=np.int64)
        data = np.asarray(data, dtype=np.float32)
        x = np.asarray(x, dtype=np.float32)
        y = np.zeros(len(indptr) - 1, dtype=np.float32)
        for r in range(len(y)):
            lo, hi = indptr[r], indptr[r + 1]
            y[r] = np.dot(data[lo:hi], x[indices[lo:hi]])
        return y
