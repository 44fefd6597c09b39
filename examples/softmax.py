"""Row-wise softmax of a 2-D array.

softmax(x)_j = exp(x_j - max(x)) / sum_k exp(x_k - max(x)), computed on each
row independently. Subtracting the row maximum first is the usual trick that
keeps exp from overflowing (see e.g. Goodfellow, Bengio and Courville, *Deep
Learning*, section 4.1); it does not change the result mathematically.
"""
import pyshark.prelude as ps

__pyshark_cases__ = [
    # one row: exp([0, 1, 2] - 2) / sum = [0.09003057, 0.24472847, 0.66524096]
    {"entry": "softmax", "args": [[[1.0, 2.0, 3.0]]],
     "expected": [[0.09003057, 0.24472847, 0.66524096]]},
    # two rows, one of them constant (uniform output), three columns (not a power of two)
    {"entry": "softmax", "args": [[[0.0, 0.0, 0.0], [1.0, 0.0, -1.0]]],
     "expected": [[0.33333334, 0.33333334, 0.33333334],
                  [0.66524096, 0.24472847, 0.09003057]]},
    # one element: always 1
    {"entry": "softmax", "args": [[[42.0]]], "expected": [[1.0]]},
    # large values do not overflow thanks to the max shift
    {"entry": "softmax", "args": [[[1000.0, 1000.0]]], "expected": [[0.5, 0.5]]},
    # no rows
    {"entry": "softmax", "args": [[]], "expected": []},
]


def softmax_row(row: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    m = ps.maximum(row)
    es = ps.map(lambda x: ps.exp(x - m), row)
    total = ps.sum(es)
    return ps.map(lambda e: e / total, es)


@ps.entry
def softmax(xss: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    """The softmax of every row of `xss`."""
    return ps.map(softmax_row, xss)


# NumPy references (plain numpy, what users compare against). They live under the
# __main__ guard because every top-level def of a PyShark module is translated.
if __name__ == "__main__":
    import numpy as np

    def numpy_softmax(xss):
        xss = np.asarray(xss, dtype=np.float32)
        if xss.size == 0:
            return xss.copy()
        es = np.exp(xss - xss.max(axis=1, keepdims=True))
        return es / es.sum(axis=1, keepdims=True)
