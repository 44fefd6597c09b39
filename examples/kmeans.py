"""k-means clustering (Lloyd's algorithm), a fixed number of iterations.

Each iteration assigns every point to its nearest centroid (squared
Euclidean distance, ties to the lower index) and moves every centroid to the
mean of its points; a centroid with no points stays where it is. Lloyd,
"Least squares quantization in PCM", IEEE Trans. Inf. Theory 28(2), 1982;
the data-parallel form (a map for the assignment, histograms with
reduce_by_index for the sums and counts) is the one of Rodinia's kmeans and
Futhark's kmeans benchmark.
"""
import pyshark.prelude as ps

__pyshark_cases__ = [
    # two clear clusters on a line; start with both centroids on the left
    {"entry": "kmeans", "args": [[[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]], [[0.0], [1.0]], 3],
     "expected": [[[1.0], [11.0]], [0, 0, 0, 1, 1, 1]]},
    # zero iterations: the assignment to the initial centroids
    {"entry": "kmeans", "args": [[[0.0, 0.0], [4.0, 4.0], [5.0, 5.0]], [[0.0, 0.0], [5.0, 5.0]], 0],
     "expected": [[[0.0, 0.0], [5.0, 5.0]], [0, 1, 1]]},
    # 2-D, three centroids, one of them never gets a point and stays put
    {"entry": "kmeans", "args": [[[0.0, 0.0], [0.0, 2.0], [4.0, 4.0], [6.0, 4.0], [5.0, 7.0]],
                                 [[0.0, 1.0], [5.0, 5.0], [100.0, 100.0]], 2],
     "expected": [[[0.0, 1.0], [5.0, 5.0], [100.0, 100.0]], [0, 0, 1, 1, 1]]},
    # one point, one centroid
    {"entry": "kmeans", "args": [[[3.0, -1.0]], [[0.0, 0.0]], 1],
     "expected": [[[3.0, -1.0]], [0]]},
]


def sq_dist(p: ps.Array[ps.f32], c: ps.Array[ps.f32]) -> ps.f32:
    return ps.sum(ps.map(lambda a, b: (a - b) * (a - b), p, c))


def nearest(p: ps.Array[ps.f32], centroids: ps.Array[ps.Array[ps.f32]]) -> int:
    return ps.argmin(ps.map(lambda c: sq_dist(p, c), centroids))


@ps.entry
def kmeans(points: ps.Array[ps.Array[ps.f32]], centroids: ps.Array[ps.Array[ps.f32]],
           iterations: int) -> tuple[ps.Array[ps.Array[ps.f32]], ps.Array[int]]:
    """(centroids, assignment) after `iterations` steps of Lloyd's algorithm."""
    assert len(centroids) > 0, "k-means needs at least one centroid"
    k = len(centroids)
    d = len(centroids[0])
    assignment = ps.map(lambda p: nearest(p, centroids), points)
    for _ in range(iterations):
        counts = ps.reduce_by_index(ps.replicate(k, 0), lambda a, b: a + b, 0,
                                    assignment, ps.replicate(len(points), 1))
        sums = [ps.reduce_by_index(ps.replicate(k, ps.f32(0.0)), lambda a, b: a + b, 0.0,
                                   assignment, points[:, j])
                for j in range(d)]
        centroids = ps.tabulate_2d(k, d, lambda c, j: sums[j][c] / ps.f32(counts[c])
                                   if counts[c] > 0 else centroids[c, j])
        assignment = ps.map(lambda p: nearest(p, centroids), points)
    return centroids, assignment


if __name__ == "__main__":
    import numpy as np

    def numpy_kmeans(points, centroids, iterations):
        pts = np.asarray(points, dtype=np.float32)
        cen = np.array(centroids, dtype=np.float32)
        k = len(cen)

        def assign(cen):
            diff = pts[:, None, :] - cen[None, :, :]
            return (diff * diff).sum(axis=-1).argmin(axis=1).astype(np.int64)

        a = assign(cen)
        for _ in range(iterations):
            counts = np.bincount(a, minlength=k)
            sums = np.zeros_like(cen)
            np.add.at(sums, a, pts)
            means = sums / np.maximum(counts, 1)[:, None].astype(np.float32)
            cen = np.where(counts[:, None] > 0, means, cen)
            a = assign(cen)
        return cen, a
