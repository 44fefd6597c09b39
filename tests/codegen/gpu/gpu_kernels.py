"""Kernels for test_gpu_algorithms.py: reduce, scan and filter/partition with
commutative and non-commutative operators, tuple accumulators, fused maps,
failing element code, NaN."""
import pyshark.prelude as ps


@ps.entry
def sum_f32(xs: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(lambda a, b: a + b, ps.f32(0), xs)


@ps.entry
def sum_sq_i64(xs: ps.Array[ps.i64]) -> ps.i64:
    return ps.reduce(lambda a, b: a + b, 0, ps.map(lambda x: x * x - 3, xs))


@ps.entry
def max_i32(xs: ps.Array[ps.i32]) -> ps.i32:
    return ps.reduce(lambda a, b: max(a, b), ps.lowest(ps.i32), xs)


@ps.entry
def min_f64(xs: ps.Array[ps.f64]) -> ps.f64:
    return ps.reduce(lambda a, b: ps.min(a, b), ps.inf, xs)


@ps.entry
def pymax_f64(xs: ps.Array[ps.f64]) -> ps.f64:
    # Python's max on floats is not commutative (NaN): the order-keeping path
    return ps.reduce(lambda a, b: max(a, b), -ps.inf, xs)


@ps.entry
def compose(ms: ps.Array[ps.i64], cs: ps.Array[ps.i64]) -> tuple[ps.i64, ps.i64]:
    # affine maps x -> m*x + c composed left to right: associative, not commutative
    return ps.reduce(lambda f, g: (f[0] * g[0], f[1] * g[0] + g[1]), (ps.i64(1), ps.i64(0)),
                     ps.zip(ms, cs))


@ps.entry
def last_nonzero(xs: ps.Array[ps.i32]) -> ps.i32:
    return ps.reduce(lambda a, b: b if b != 0 else a, ps.i32(0), xs)


@ps.entry
def sum_and_count(xs: ps.Array[ps.f64]) -> tuple[ps.f64, ps.i64, ps.f64]:
    return ps.reduce_comm(lambda a, b: (a[0] + b[0], a[1] + b[1], ps.max(a[2], b[2])),
                          (0.0, ps.i64(0), -ps.inf),
                          ps.map(lambda x: (x, ps.i64(1) if x > 0.0 else ps.i64(0), x), xs))


@ps.entry
def gather_sum(idx: ps.Array[ps.i64], ys: ps.Array[ps.i64]) -> ps.i64:
    return ps.reduce(lambda a, b: a + b, 0, ps.map(lambda i: ys[i], idx))


@ps.entry
def gather_compose(idx: ps.Array[ps.i64], ys: ps.Array[ps.i64]) -> tuple[ps.i64, ps.i64]:
    return ps.reduce(lambda f, g: (f[0] * g[0], f[1] * g[0] + g[1]), (ps.i64(1), ps.i64(0)),
                     ps.map(lambda i: (ys[i] % 3 - 1, ys[i]), idx))


@ps.entry
def div_max(xs: ps.Array[ps.i64], d: ps.i64) -> ps.i64:
    # an operator that can fail (ZeroDivisionError): the gpu algorithm declines
    return ps.reduce(lambda a, b: max(a, b) + 0 * (b // d), ps.lowest(ps.i64), xs)


@ps.entry
def cumsum_f32(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.scan(lambda a, b: a + b, ps.f32(0), xs)


@ps.entry
def cumsum_sq(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scan(lambda a, b: a + b, 0, ps.map(lambda x: x * x - 3, xs))


@ps.entry
def scan_compose(ms: ps.Array[ps.i64], cs: ps.Array[ps.i64]) -> tuple[ps.Array[ps.i64], ps.Array[ps.i64]]:
    return ps.unzip(ps.scan(lambda f, g: (f[0] * g[0], f[1] * g[0] + g[1]),
                            (ps.i64(1), ps.i64(0)), ps.zip(ms, cs)))


@ps.entry
def scan_last_nonzero(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    return ps.scan(lambda a, b: b if b != 0 else a, ps.i32(0), xs)


@ps.entry
def scan_max_f64(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.scan(lambda a, b: ps.max(a, b), -ps.inf, xs)


@ps.entry
def scan_gather(idx: ps.Array[ps.i64], ys: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scan(lambda a, b: a + b, 0, ps.map(lambda i: ys[i], idx))


@ps.entry
def filter_mod3(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.filter(lambda x: x % 3 == 1, xs)


@ps.entry
def filter_not_nan(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.filter(lambda x: not ps.isnan(x), xs)


@ps.entry
def partition_half(xs: ps.Array[ps.f64]) -> tuple[ps.Array[ps.f64], ps.Array[ps.f64]]:
    return ps.partition(lambda x: x > 0.5, xs)


@ps.entry
def filter_pairs(xs: ps.Array[ps.i32], bs: ps.Array[bool]) -> tuple[ps.Array[ps.i32], ps.Array[bool]]:
    return ps.unzip(ps.filter(lambda p: p[1] or p[0] < 0, ps.zip(xs, bs)))


@ps.entry
def filter_gather(idx: ps.Array[ps.i64], ys: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.filter(lambda i: ys[i] > 0, idx)


@ps.entry
def filter_mapped_gather(idx: ps.Array[ps.i64], ys: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.filter(lambda y: y > 0, ps.map(lambda i: ys[i], idx))


@ps.entry
def scan_segmented(fs: ps.Array[bool], xs: ps.Array[ps.i32]) -> tuple[ps.Array[bool], ps.Array[ps.i32]]:
    # segmented sum: associative, not commutative, a tuple of a bool and an i32
    return ps.unzip(ps.scan(lambda a, b: (a[0] or b[0], b[1] if b[0] else a[1] + b[1]),
                            (False, ps.i32(0)), ps.zip(fs, xs)))
