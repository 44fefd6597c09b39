"""Sum of an f32 array: one reduction (streaming: reads one array)."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "sum_f32", "args": [[1.0, 2.0, 3.5]], "expected": 6.5},
    {"entry": "sum_f32", "args": [[]], "expected": 0.0},
]


@ps.entry
def sum_f32(xs: ps.Array[ps.f32]) -> ps.f32:
    """The sum of the elements (0 for an empty array)."""
    return ps.reduce(lambda a, b: a + b, ps.f32(0.0), xs)
