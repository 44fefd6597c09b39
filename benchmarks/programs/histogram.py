"""Histograms over 256 bins with reduce_by_index: counts, and the largest value per bin."""
import pyshark.prelude as ps

NUM_BINS = 256

# The test cases are in histogram.cases.json (the expected arrays have 256 bins).


@ps.entry
def histogram(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    """How many elements fall in each of the 256 bins (values outside 0..255 are ignored)."""
    ones = ps.replicate(len(xs), ps.i32(1))
    return ps.reduce_by_index(ps.replicate(NUM_BINS, ps.i32(0)), lambda a, b: a + b, ps.i32(0),
                              xs, ones)


@ps.entry
def max_histogram(bins: ps.Array[ps.i32], vals: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    """The largest value falling in each of the 256 bins (-inf for an empty bin)."""
    lowest = ps.lowest(ps.f32)
    return ps.reduce_by_index(ps.replicate(NUM_BINS, lowest), lambda a, b: ps.max(a, b), lowest,
                              bins, vals)
