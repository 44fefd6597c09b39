"""A trivial entry, for measuring the cost of one call through the Wrapper (no work inside)."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "add_one", "args": [41], "expected": 42},
]


@ps.entry
def add_one(x: int) -> int:
    """x + 1."""
    return x + 1
