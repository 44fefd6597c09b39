"""SAXPY and friends: a first PyShark kernel module.

Run as Python it is plain numpy code; `Wrapper(backend=...)` compiles the
@ps.entry functions. The embedded cases below are what `pyshark test
examples/saxpy.py` checks on every backend.
"""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "saxpy", "args": [2.0, [1.0, 2.0, 3.0], [10.0, 20.0, 30.0]],
     "expected": [12.0, 24.0, 36.0]},
    {"entry": "saxpy", "args": [2.0, [], []], "expected": []},
    {"entry": "saxpy", "args": [1.0, [1.0], [1.0, 2.0]], "raises": "ShapeError"},
    {"entry": "dot", "args": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "expected": 32.0},
    {"entry": "dot", "args": [[], []], "expected": 0.0},
    {"entry": "norm_and_max", "args": [[3.0, -4.0]], "expected": [5.0, 3.0]},
]


def axpy(a: ps.f32, x: ps.f32, y: ps.f32) -> ps.f32:
    return a * x + y


def dot_product(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda p, q: p + q, ps.f32(0.0), ps.map(lambda x, y: x * y, xs, ys))


@ps.entry
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    """a * xs + ys, element by element."""
    return ps.map(lambda x, y: axpy(a, x, y), xs, ys)


@ps.entry
def dot(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.f32:
    """The dot product: a map fused into a reduction."""
    return dot_product(xs, ys)


@ps.entry
def norm_and_max(xs: ps.Array[ps.f32]) -> tuple[ps.f32, ps.f32]:
    """Two results at once: the Euclidean norm and the largest element."""
    largest = ps.reduce(lambda a, b: ps.max(a, b), ps.lowest(ps.f32), xs)
    return (ps.sqrt(dot_product(xs, xs)), largest)


# NumPy references (plain numpy, what users compare against). They live under the
# __main__ guard because every top-level def of a PyShark module is translated.
if __name__ == "__main__":
    import numpy as np

    def numpy_saxpy(a, xs, ys):
        xs, ys = np.asarray(xs, dtype=np.float32), np.asarray(ys, dtype=np.float32)
        if xs.shape != ys.shape:
            raise ValueError("xs and ys differ in length")
        return np.float32(a) * xs + ys

    def numpy_dot(xs, ys):
        return np.dot(np.asarray(xs, dtype=np.float32), np.asarray(ys, dtype=np.float32))

    def numpy_norm_and_max(xs):
        xs = np.asarray(xs, dtype=np.float32)
        return (np.sqrt(np.dot(xs, xs)), xs.max() if xs.size else np.float32(-np.inf))
