"""One step of breadth-first search: expand the frontier over a CSR graph.

The graph is in CSR form (indptr, indices: the neighbours of u are
indices[indptr[u]:indptr[u+1]]); parent[v] is -1 for a vertex not yet
visited. Every edge (u, v) out of the frontier whose target is unvisited
proposes u as v's parent; the proposals are written with a scatter, and the
new frontier is the set of vertices that got a parent in this step (in
increasing order). This is the top-down step of level-synchronous parallel
BFS (Merrill, Garland and Grimshaw, "Scalable GPU graph traversal", PPoPP
2012; Beamer et al., "Direction-optimizing breadth-first search", SC 2012).
The frontier's edges are flattened the usual data-parallel way: an
exclusive scan of the degrees gives each frontier vertex's first edge slot,
and a scan over start marks tells each slot which frontier vertex it
belongs to. When several frontier vertices reach the same vertex, the last
one (in frontier order) wins, as numpy's `parent[targets] = sources` does.
"""
import pyshark.prelude as ps

# The undirected graph 0-1, 0-2, 1-3, 2-3, 3-4 in CSR form
__pyshark_cases__ = [
    {"entry": "bfs_step", "args": [[0, 2, 4, 6, 9, 10], [1, 2, 0, 3, 0, 3, 1, 2, 4], [0],
                                   [0, -1, -1, -1, -1]],
     "expected": [[0, 0, 0, -1, -1], [1, 2]]},
    # both 1 and 2 reach 3: the last frontier vertex (2) wins
    {"entry": "bfs_step", "args": [[0, 2, 4, 6, 9, 10], [1, 2, 0, 3, 0, 3, 1, 2, 4], [1, 2],
                                   [0, 0, 0, -1, -1]],
     "expected": [[0, 0, 0, 2, -1], [3]]},
    {"entry": "bfs_step", "args": [[0, 2, 4, 6, 9, 10], [1, 2, 0, 3, 0, 3, 1, 2, 4], [3],
                                   [0, 0, 0, 2, -1]],
     "expected": [[0, 0, 0, 2, 3], [4]]},
    # an empty frontier changes nothing
    {"entry": "bfs_step", "args": [[0, 2, 4, 6, 9, 10], [1, 2, 0, 3, 0, 3, 1, 2, 4], [],
                                   [0, 0, 0, 2, 3]],
     "expected": [[0, 0, 0, 2, 3], []]},
    # a frontier vertex without edges (vertex 1 of 0->2, 1, 2->0), and a self-loop (2->2 later)
    {"entry": "bfs_step", "args": [[0, 1, 1, 3], [2, 0, 2], [1, 0], [-1, 1, -1]],
     "expected": [[-1, 1, 0], [2]]},
    # one vertex, no edges
    {"entry": "bfs_step", "args": [[0, 0], [], [0], [0]], "expected": [[0], []]},
]


def add(a: int, b: int) -> int:
    return a + b


@ps.entry
def bfs_step(indptr: ps.Array[int], indices: ps.Array[int], frontier: ps.Array[int],
             parent: ps.Array[int]) -> tuple[ps.Array[int], ps.Array[int]]:
    """(new parent array, new frontier) after expanding `frontier` one level."""
    degrees = ps.map(lambda u: indptr[u + 1] - indptr[u], frontier)
    ends = ps.scan(add, 0, degrees)
    starts = ps.map(lambda e, d: e - d, ends, degrees)         # exclusive scan
    m = ps.sum(degrees)
    # owner[e]: the frontier position whose edges include edge slot e
    marks = ps.reduce_by_index(ps.replicate(m, 0), add, 0, starts, ps.replicate(len(frontier), 1))
    owner = ps.map(lambda c: c - 1, ps.scan(add, 0, marks))

    def target(e: int) -> int:
        k = owner[e]
        v = indices[indptr[frontier[k]] + e - starts[k]]
        return v if parent[v] == -1 else -1                  # -1: ignored by scatter

    targets = ps.tabulate(m, target)
    sources = ps.map(lambda k: frontier[k], owner)
    new_parent = ps.scatter(ps.copy(parent), targets, sources)
    new_frontier = ps.filter(lambda v: parent[v] == -1 and new_parent[v] != -1,
                             ps.iota(len(parent)))
    return new_parent, new_frontier


if __name__ == "__main__":
    import numpy as np

    def numpy_bfs_step(indptr, indices, frontier, parent):
        indptr = np.asarray(indptr, dtype=np.int64)
        indices = np.asarray(indices, dtype=np.int64)
        parent = np.asarray(parent, dtype=np.int64)
        new_parent = parent.copy()
        for u in np.asarray(frontier, dtype=np.int64):
            for v in indices[indptr[u]:indptr[u + 1]]:
                if parent[v] == -1:
                    new_parent[v] = u
        return new_parent, np.flatnonzero((parent == -1) & (new_parent != -1)).astype(np.int64)
