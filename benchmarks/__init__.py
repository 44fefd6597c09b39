"""PyShark's benchmark suite: every program on every available backend beside NumPy, Numba and CuPy.

Run it with `pyshark bench` or `python -m benchmarks` from the repository
root (see benchmarks/README.md).
"""
