"""Monte-Carlo estimate of pi with a counter-based random number generator.

Point i of n is (x, y) with x, y uniform in [0, 1), drawn by hashing the
counter: x from pcg_hash(i ^ seed), y from pcg_hash of that. pcg_hash is the
"PCG hash" of Jarzynski and Olano, "Hash Functions for GPU Rendering"
(JCGT 9(3), 2020): one step of the PCG-RXS-M-XS 32-bit generator (O'Neill,
"PCG: A Family of Simple Fast Space-Efficient Statistically Good Algorithms
for Random Number Generation", 2014) applied to the input. Being a pure
function of the index it needs no state, so every point is independent and
the map is embarrassingly parallel. The fraction of points inside the unit
quarter circle (x^2 + y^2 <= 1) tends to pi / 4.
"""
import pyshark.prelude as ps

__pyshark_cases__ = [
    # values checked against a pure-Python (int) implementation of the hash
    {"entry": "pcg_hash_all", "args": [[0, 1, 2, 4294967295]],
     "expected": [129708002, 2831084092, 2055130248, 3861530882]},
    {"entry": "pcg_hash_all", "args": [[]], "expected": []},
    {"entry": "count_hits", "args": [0, 7], "expected": 0},
    {"entry": "count_hits", "args": [1, 7], "expected": 1},
    {"entry": "count_hits", "args": [1000, 7], "expected": 782},
    {"entry": "count_hits", "args": [12345, 2024], "expected": 9721},
    {"entry": "estimate_pi", "args": [1000, 7], "expected": 3.128},
    {"entry": "estimate_pi", "args": [0, 7], "expected": ps.nan},
]

INV_2_32 = 1.0 / 4294967296.0          # maps a u32 to [0, 1)


def pcg_hash(v: ps.u32) -> ps.u32:
    state = v * 747796405 + 2891336453
    word = ((state >> ((state >> 28) + 4)) ^ state) * 277803737
    return (word >> 22) ^ word


def inside(i: int, seed: ps.u32) -> bool:
    hx = pcg_hash(ps.u32(i) ^ seed)
    hy = pcg_hash(hx)
    x = ps.f64(hx) * INV_2_32
    y = ps.f64(hy) * INV_2_32
    return x * x + y * y <= 1.0


@ps.entry
def pcg_hash_all(vs: ps.Array[ps.u32]) -> ps.Array[ps.u32]:
    """The hash of every element (to check the generator itself)."""
    return ps.map(pcg_hash, vs)


@ps.entry
def count_hits(n: int, seed: ps.u32) -> int:
    """How many of the n points fall inside the quarter circle."""
    return ps.sum(ps.map(lambda i: 1 if inside(i, seed) else 0, ps.iota(n)))


@ps.entry
def estimate_pi(n: int, seed: ps.u32) -> float:
    """4 * hits / n (nan for n == 0)."""
    return 4.0 * ps.f64(count_hits(n, seed)) / ps.f64(n)


if __name__ == "__main__":
    import numpy as np

    def numpy_pcg_hash_all(vs):
        v = np.asarray(vs, dtype=np.uint32)
        state = v * np.uint32(747796405) + np.uint32(2891336453)
        word = ((state >> ((state >> np.uint32(28)) + np.uint32(4))) ^ state) * np.uint32(277803737)
        return (word >> np.uint32(22)) ^ word

    def numpy_count_hits(n, seed):
        hx = numpy_pcg_hash_all(np.arange(n, dtype=np.int64).astype(np.uint32) ^ np.uint32(seed))
        hy = numpy_pcg_hash_all(hx)
        x = hx.astype(np.float64) * (1.0 / 4294967296.0)
        y = hy.astype(np.float64) * (1.0 / 4294967296.0)
        return np.int64(np.count_nonzero(x * x + y * y <= 1.0))

    def numpy_estimate_pi(n, seed):
        with np.errstate(invalid="ignore"):
            return np.float64(4.0) * np.float64(numpy_count_hits(n, seed)) / np.float64(n)
