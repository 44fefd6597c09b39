"""The inputs of programs.py's entries, by a scale (1.0: the sizes of
benchmarks/README.md's session-36 table; 1e-4: a few elements, as the
tests use them)."""
import numpy as np


def inputs(name: str, s: float, rng):
    f32 = np.float32
    if name == "heat3d":
        n = max(4, int(96 * s ** (1 / 3)))
        return (rng.random((n, n, n), dtype=f32), 10)
    if name == "blur_normalise":
        n = max(2, int(1024 * s ** 0.5))
        return (rng.random((n, n), dtype=f32), 10)
    if name == "asian_option":
        return (max(1, int(20000 * s)), 252, 100.0, 100.0, 0.2)
    if name == "mlp_forward":
        b = max(1, int(4096 * s))
        return (rng.random((b, 256), dtype=f32) - f32(0.5), (rng.random((256, 256), dtype=f32) - f32(0.5)) / f32(16),
                rng.random(256, dtype=f32) - f32(0.5), (rng.random((256, 16), dtype=f32) - f32(0.5)) / f32(16),
                rng.random(16, dtype=f32) - f32(0.5))
    if name == "particles":
        n = max(1, int(10_000_000 * s))
        return (rng.random(n, dtype=f32), rng.random(n, dtype=f32) - f32(0.5), 10)
    if name == "small_matmuls":
        m = max(1, int(4096 * s))
        return (rng.random((m, 16, 16), dtype=f32), rng.random((m, 16, 16), dtype=f32))
    if name == "bfs":
        n = max(2, int(100_000 * s))
        return (rng.integers(0, n, 8 * n), rng.integers(0, n, 8 * n), n, 0)
    raise KeyError(name)


NAMES = ["heat3d", "blur_normalise", "asian_option", "mlp_forward", "particles", "small_matmuls",
         "bfs"]
