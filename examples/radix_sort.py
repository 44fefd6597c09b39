"""One pass of least-significant-digit radix sort on u32 keys, and the sort.

A pass stably reorders the keys by one 4-bit digit, (key >> shift) & 15:
a histogram of the digits, an exclusive scan of it (where each digit's
bucket starts), each key's rank among the earlier keys with the same digit,
and a scatter of every key to bucket start + rank. Eight passes, from the
least significant digit up, sort 32-bit keys. The parallel formulation is
the one of Zagha and Blelloch, "Radix sort for vector multiprocessors"
(Supercomputing 1991) and Satish, Harris and Garland, "Designing efficient
sorting algorithms for manycore GPUs" (IPDPS 2009).
"""
import pyshark.prelude as ps

RADIX_BITS = 4
BUCKETS = 16                          # 2 ** RADIX_BITS

__pyshark_cases__ = [
    {"entry": "digit_histogram", "args": [[0x12, 0x34, 0x15, 0xF0, 0x3], 0],
     "expected": [1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]},
    {"entry": "digit_histogram", "args": [[0x12, 0x34, 0x15, 0xF0, 0x3], 4],
     "expected": [1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]},
    {"entry": "digit_histogram", "args": [[], 0], "expected": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]},
    # stable by the low digit: 0x12 before 0x34 before 0x15 keeps 0x34 (4) after 0x03 (3)
    {"entry": "radix_pass", "args": [[0x12, 0x34, 0x15, 0xF0, 0x3], 0],
     "expected": [0xF0, 0x12, 0x3, 0x34, 0x15]},
    {"entry": "radix_pass", "args": [[0x12, 0x34, 0x15, 0xF0, 0x3], 4],
     "expected": [0x3, 0x12, 0x15, 0x34, 0xF0]},
    # equal digits keep their order (stability): 0x21, 0x11, 0x31 all have low digit 1
    {"entry": "radix_pass", "args": [[0x21, 0x10, 0x11, 0x31], 0],
     "expected": [0x10, 0x21, 0x11, 0x31]},
    {"entry": "radix_pass", "args": [[7], 0], "expected": [7]},
    {"entry": "radix_pass", "args": [[], 28], "expected": []},
    {"entry": "radix_sort", "args": [[4294967295, 0, 305419896, 7, 2147483648, 7, 65536]],
     "expected": [0, 7, 7, 65536, 305419896, 2147483648, 4294967295]},
    {"entry": "radix_sort", "args": [[]], "expected": []},
]


def digit(key: ps.u32, shift: ps.u32) -> int:
    return ps.i64((key >> shift) & (BUCKETS - 1))


def add(a: int, b: int) -> int:
    return a + b


@ps.entry
def digit_histogram(keys: ps.Array[ps.u32], shift: ps.u32) -> ps.Array[int]:
    """How many keys have each value of the digit at `shift`."""
    digits = ps.map(lambda key: digit(key, shift), keys)
    return ps.reduce_by_index(ps.replicate(BUCKETS, 0), add, 0, digits, ps.replicate(len(keys), 1))


@ps.entry
def radix_pass(keys: ps.Array[ps.u32], shift: ps.u32) -> ps.Array[ps.u32]:
    """The keys stably sorted by their digit at `shift`."""
    digits = ps.map(lambda key: digit(key, shift), keys)
    hist = digit_histogram(keys, shift)
    bucket_start = ps.map(lambda c, h: c - h, ps.scan(add, 0, hist), hist)   # exclusive scan
    # ranks[b, i]: how many of keys[0..i] have digit b
    ranks = ps.map(lambda b: ps.scan(add, 0, ps.map(lambda dg: 1 if dg == b else 0, digits)),
                   ps.iota(BUCKETS))
    positions = ps.map(lambda i, dg: bucket_start[dg] + ranks[dg, i] - 1, ps.iota(len(keys)), digits)
    return ps.scatter(ps.replicate(len(keys), ps.u32(0)), positions, keys)


@ps.entry
def radix_sort(keys: ps.Array[ps.u32]) -> ps.Array[ps.u32]:
    """The keys in increasing order: one pass per digit, least significant first."""
    for shift in range(0, 32, RADIX_BITS):
        keys = radix_pass(keys, ps.u32(shift))
    return keys


if __name__ == "__main__":
    import numpy as np

    def _digits(keys, shift):
        return (np.asarray(keys, dtype=np.uint32) >> np.uint32(shift)) & np.uint32(15)

    def numpy_digit_histogram(keys, shift):
        return np.bincount(_digits(keys, shift), minlength=16).astype(np.int64)

    def numpy_radix_pass(keys, shift):
        keys = np.asarray(keys, dtype=np.uint32)
        return keys[np.argsort(_digits(keys, shift), kind="stable")]

    def numpy_radix_sort(keys):
        return np.sort(np.asarray(keys, dtype=np.uint32))
