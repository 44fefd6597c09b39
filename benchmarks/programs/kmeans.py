"""K-means, one step: assign each f32 point to its nearest centroid, then move each centroid to the mean of its points.

A centroid that gets no point stays where it was.
"""
import pyshark.prelude as ps

Points = ps.Array[ps.Array[ps.f32]]

__pyshark_cases__ = [
    {"entry": "kmeans_step",
     "args": [[[0.0, 0.0], [1.0, 0.0], [9.0, 9.0], [10.0, 9.0]], [[0.0, 1.0], [10.0, 10.0]]],
     "expected": [[0.5, 0.0], [9.5, 9.0]]},
    {"entry": "kmeans_step", "args": [[[1.0, 1.0]], [[0.0, 0.0], [5.0, 5.0]]],
     "expected": [[1.0, 1.0], [5.0, 5.0]]},
]


def squared_distance(p: ps.Array[ps.f32], c: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), ps.map(lambda x, y: (x - y) * (x - y), p, c))


def nearest(p: ps.Array[ps.f32], centroids: Points) -> int:
    """The index of the centroid nearest to p (the first one on a tie)."""
    return ps.argmin(ps.map(lambda c: squared_distance(p, c), centroids))


@ps.entry
def kmeans_step(points: Points, centroids: Points) -> Points:
    """The centroids after one assignment and update step."""
    k = len(centroids)
    d = len(centroids[0])
    owner = ps.map(lambda p: nearest(p, centroids), points)
    counts = ps.reduce_by_index(ps.replicate(k, 0), lambda a, b: a + b, 0, owner,
                                ps.replicate(len(points), 1))
    # per-coordinate sums: point i's coordinate j goes to slot owner[i] * d + j
    slots = ps.flatten(ps.map(lambda o: ps.map(lambda j: o * d + j, ps.iota(d)), owner))
    sums = ps.reduce_by_index(ps.replicate(k * d, ps.f32(0.0)), lambda a, b: a + b,
                              ps.f32(0.0), slots, ps.flatten(points))
    return ps.tabulate_2d(k, d, lambda c, j: sums[c * d + j] / ps.f32(counts[c])
                          if counts[c] > 0 else centroids[c, j])
