"""PathFinder (Rodinia): the cheapest path down a grid of i32 weights, one dynamic-programming row at a time."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "pathfinder", "args": [[[3, 1, 4], [1, 5, 9], [2, 6, 5]]], "expected": [4, 8, 11]},
    {"entry": "pathfinder", "args": [[[7, 8]]], "expected": [7, 8]},
]


def relax(prev: ps.Array[ps.i32], row: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    """cost[j] = row[j] + the cheapest of prev[j - 1], prev[j], prev[j + 1] (those that exist)."""
    n = len(prev)
    return ps.map(lambda j, w: w + min(prev[max(j - 1, 0)], prev[j], prev[min(j + 1, n - 1)]),
                  ps.iota(n), row)


@ps.entry
def pathfinder(wall: ps.Array[ps.Array[ps.i32]]) -> ps.Array[ps.i32]:
    """The cost of the cheapest path from the first row to each cell of the last row."""
    cost = wall[0]
    for i in range(1, len(wall)):
        cost = relax(cost, wall[i])
    return cost
