"""SAXPY: a * x + y over two f32 arrays (streaming: reads two arrays, writes one)."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "saxpy", "args": [2.0, [1.0, 2.0, 3.0], [10.0, 20.0, 30.0]],
     "expected": [12.0, 24.0, 36.0]},
    {"entry": "saxpy", "args": [0.5, [], []], "expected": []},
    {"entry": "saxpy", "args": [1.0, [1.0], [1.0, 2.0]], "raises": "ShapeError"},
]


@ps.entry
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    """a * xs + ys, element by element."""
    return ps.map(lambda x, y: a * x + y, xs, ys)
