"""scatter of i64 values into an i64 destination of the same length: with
distinct indices (a permutation) and with duplicates (indices drawn from a
quarter of the range, so about 3 in 4 writes lose to a later one). With
duplicates the value that comes last in idxs wins (LANGUAGE.md)."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "scatter_distinct", "args": [[0, 0, 0], [2, 0, 1], [7, 8, 9]],
     "expected": [8, 9, 7]},
    {"entry": "scatter_dups", "args": [[0, 0, 0, 0], [1, 3, 1, -1, 4, 1], [1, 2, 3, 4, 5, 6]],
     "expected": [0, 6, 0, 2]},
    {"entry": "scatter_dups", "args": [[5], [], []], "expected": [5]},
    {"entry": "scatter_dups", "args": [[5], [0], [1, 2]], "raises": "ShapeError"},
]


@ps.entry
def scatter_distinct(dest: ps.Array[ps.i64], idxs: ps.Array[ps.i64],
                     vals: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def scatter_dups(dest: ps.Array[ps.i64], idxs: ps.Array[ps.i64],
                 vals: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scatter(dest, idxs, vals)
