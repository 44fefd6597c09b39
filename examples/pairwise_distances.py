"""Pairwise Euclidean distances between n points in d dimensions.

dist[i, j] = sqrt(sum_k (p[i, k] - p[j, k])**2), the n x n distance matrix
(scipy.spatial.distance.cdist(p, p) with the default "euclidean" metric);
the basis of k-nearest-neighbour search and of kernel methods. Computed
directly as a map of maps over the points, the textbook nested data-parallel
formulation (Blelloch, "Programming parallel algorithms", CACM 1996).
"""
import pyshark.prelude as ps

__pyshark_cases__ = [
    # a 3-4-5 triangle in 2-D
    {"entry": "pairwise_distances", "args": [[[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]]],
     "expected": [[0.0, 3.0, 4.0], [3.0, 0.0, 5.0], [4.0, 5.0, 0.0]]},
    # one point: a 1 x 1 matrix of zero
    {"entry": "pairwise_distances", "args": [[[1.0, 2.0, 3.0]]], "expected": [[0.0]]},
    # three dimensions, five points (not a power of two), duplicate points at distance 0
    {"entry": "pairwise_distances",
     "args": [[[0.0, 0.0, 0.0], [1.0, 2.0, 2.0], [0.0, 0.0, 0.0], [-1.0, -2.0, -2.0], [2.0, 3.0, 6.0]]],
     "expected": [[0.0, 3.0, 0.0, 3.0, 7.0],
                  [3.0, 0.0, 3.0, 6.0, 4.242640687119285],
                  [0.0, 3.0, 0.0, 3.0, 7.0],
                  [3.0, 6.0, 3.0, 0.0, 9.899494936611665],
                  [7.0, 4.242640687119285, 7.0, 9.899494936611665, 0.0]]},
    # no points
    {"entry": "pairwise_distances", "args": [[]], "expected": []},
]


def distance(p: ps.Array[ps.f32], q: ps.Array[ps.f32]) -> ps.f32:
    return ps.sqrt(ps.sum(ps.map(lambda a, b: (a - b) * (a - b), p, q)))


@ps.entry
def pairwise_distances(points: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    """The n x n matrix of Euclidean distances between the rows of `points`."""
    return ps.map(lambda p: ps.map(lambda q: distance(p, q), points), points)


# NumPy references (plain numpy, what users compare against). They live under the
# __main__ guard because every top-level def of a PyShark module is translated.
if __name__ == "__main__":
    import numpy as np

    def numpy_pairwise_distances(points):
        p = np.asarray(points, dtype=np.float32)
        if p.size == 0:
            return np.zeros((0, 0), dtype=np.float32)
        diff = p[:, None, :] - p[None, :, :]
        return np.sqrt((diff * diff).sum(axis=-1))
