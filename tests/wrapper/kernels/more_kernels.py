"""A second module without clashes, for multi-file Wrappers."""
import pyshark.prelude as ps


@ps.entry
def add_one(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.map(lambda x: x + 1, xs)
