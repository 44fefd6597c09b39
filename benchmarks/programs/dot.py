"""Dot product of two f32 arrays: a map fused into a reduction (streaming)."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "dot", "args": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "expected": 32.0},
    {"entry": "dot", "args": [[], []], "expected": 0.0},
    {"entry": "dot", "args": [[1.0], [1.0, 2.0]], "raises": "ShapeError"},
]


@ps.entry
def dot(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.f32:
    """sum(x * y for x, y in zip(xs, ys))."""
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), ps.map(lambda x, y: x * y, xs, ys))
