"""Segmented sum: the sum of each segment of a flat array of values.

Two common encodings of the segments (Blelloch, "Vector Models for
Data-Parallel Computing", MIT Press 1990, ch. 4):

- `segment_sum_ids`: a segment id per value (0 <= id < num_segments, in any
  order): a histogram with `+`, i.e. reduce_by_index
  (numpy.bincount(ids, weights, minlength)); empty segments sum to 0;
- `segment_sum_flags`: a flag per value, True where a segment starts: the
  segment of each value is the inclusive scan of the flags minus one, then
  the same histogram. Values before the first flag belong to no segment and
  are dropped.
"""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "segment_sum_ids", "args": [[1.0, 2.0, 3.0, 4.0, 5.0], [0, 0, 1, 2, 2], 3],
     "expected": [3.0, 3.0, 9.0]},
    # unsorted ids, an empty segment (1), an id out of range (ignored)
    {"entry": "segment_sum_ids", "args": [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [2, 0, 2, 3, 0, 9, 3], 4],
     "expected": [7.0, 0.0, 4.0, 11.0]},
    {"entry": "segment_sum_ids", "args": [[2.5], [0], 1], "expected": [2.5]},
    {"entry": "segment_sum_ids", "args": [[], [], 2], "expected": [0.0, 0.0]},
    {"entry": "segment_sum_flags",
     "args": [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [True, False, True, True, False, False, True]],
     "expected": [3.0, 3.0, 15.0, 7.0]},
    # values before the first flag are dropped
    {"entry": "segment_sum_flags", "args": [[1.0, 2.0, 3.0], [False, True, False]], "expected": [5.0]},
    {"entry": "segment_sum_flags", "args": [[4.0], [True]], "expected": [4.0]},
    {"entry": "segment_sum_flags", "args": [[], []], "expected": []},
    {"entry": "segment_sum_flags", "args": [[1.0, 2.0], [True]], "raises": "ShapeError"},
]


def add(a: ps.f32, b: ps.f32) -> ps.f32:
    return a + b


@ps.entry
def segment_sum_ids(vals: ps.Array[ps.f32], ids: ps.Array[int], num_segments: int) -> ps.Array[ps.f32]:
    """sums[s] = the sum of vals[i] over the i with ids[i] == s."""
    return ps.reduce_by_index(ps.replicate(num_segments, ps.f32(0.0)), add, 0.0, ids, vals)


@ps.entry
def segment_sum_flags(vals: ps.Array[ps.f32], flags: ps.Array[bool]) -> ps.Array[ps.f32]:
    """One sum per True in `flags`, over the values from that flag to the next."""
    starts = ps.map(lambda f: 1 if f else 0, flags)
    ids = ps.map(lambda s: s - 1, ps.scan(lambda a, b: a + b, 0, starts))
    return ps.reduce_by_index(ps.replicate(ps.sum(starts), ps.f32(0.0)), add, 0.0, ids, vals)


if __name__ == "__main__":
    import numpy as np

    def numpy_segment_sum_ids(vals, ids, num_segments):
        vals = np.asarray(vals, dtype=np.float32)
        ids = np.asarray(ids, dtype=np.int64)
        keep = (ids >= 0) & (ids < num_segments)
        out = np.zeros(num_segments, dtype=np.float32)
        np.add.at(out, ids[keep], vals[keep])
        return out

    def numpy_segment_sum_flags(vals, flags):
        vals = np.asarray(vals, dtype=np.float32)
        flags = np.asarray(flags, dtype=bool)
        if vals.shape != flags.shape:
            raise ValueError("vals and flags differ in length")
        ids = np.cumsum(flags) - 1
        return numpy_segment_sum_ids(vals, ids, int(flags.sum()))
