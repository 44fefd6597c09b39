"""Stream compaction: the f32 elements above a threshold, in order."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "filter_above", "args": [[0.25, 0.75, 0.5, 0.875], 0.5], "expected": [0.75, 0.875]},
    {"entry": "filter_above", "args": [[], 0.5], "expected": []},
    {"entry": "filter_above", "args": [[0.1, 0.2], 0.5], "expected": []},
]


@ps.entry
def filter_above(xs: ps.Array[ps.f32], threshold: ps.f32) -> ps.Array[ps.f32]:
    """[x for x in xs if x > threshold], as a filter."""
    return ps.filter(lambda x: x > threshold, xs)
