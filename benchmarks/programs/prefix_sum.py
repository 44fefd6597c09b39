"""Inclusive prefix sum of an i32 array: one scan (streaming: reads one array, writes one)."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "prefix_sum", "args": [[3, 1, 4, 1, 5]], "expected": [3, 4, 8, 9, 14]},
    {"entry": "prefix_sum", "args": [[]], "expected": []},
    {"entry": "prefix_sum", "args": [[2147483647, 1]], "expected": [2147483647, -2147483648]},
]


@ps.entry
def prefix_sum(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    """ys[i] = xs[0] + ... + xs[i] (wrapping on overflow, as i32 does)."""
    return ps.scan(lambda a, b: a + b, ps.i32(0), xs)
