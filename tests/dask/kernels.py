"""Entries of every shape pyshark.dask plans (and a few it refuses)."""
import pyshark.prelude as ps


@ps.entry
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x, y: a * x + y, xs, ys)


@ps.entry
def split_sign(xs: ps.Array[ps.i32]) -> tuple[ps.Array[ps.i32], ps.Array[bool]]:
    return ps.unzip(ps.map(lambda x: (abs(x), x < 0), xs))


@ps.entry
def scale_rows(k: ps.f64, xss: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.Array[ps.f64]]:
    return ps.map(lambda row: ps.map(lambda x: k * x, row), xss)


@ps.entry
def row_sums(xss: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.f64]:
    return ps.map(lambda row: ps.sum(row), xss)


@ps.entry
def inverse(ks: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.map(lambda k: 100 // k, ks)


@ps.entry
def dot(xs: ps.Array[ps.f64], ys: ps.Array[ps.f64]) -> ps.f64:
    return ps.sum(ps.map(lambda x, y: x * y, xs, ys))


@ps.entry
def largest(xs: ps.Array[ps.f32]) -> ps.f32:
    return ps.reduce(max, ps.lowest(ps.f32), xs)


@ps.entry
def min_max(xs: ps.Array[ps.i32]) -> tuple[ps.i32, ps.i32]:
    return ps.reduce_comm(lambda a, b: (min(a[0], b[0]), max(a[1], b[1])),
                          (ps.highest(ps.i32), ps.lowest(ps.i32)), ps.map(lambda x: (x, x), xs))


@ps.entry
def compose(ms: ps.Array[ps.i64]) -> tuple[ps.i64, ps.i64]:
    """A non-commutative operator: the maps x -> a*x + b mod a prime,
    composed in order (order matters)."""
    p = 1000003
    pairs = ps.map(lambda m: (m % p, (m // 7) % p), ms)
    return ps.reduce(lambda u, v: ((u[0] * v[0]) % p, (u[1] * v[0] + v[1]) % p), (1, 0), pairs)


@ps.entry
def scaled_total(k: ps.i64, xs: ps.Array[ps.i64]) -> ps.i64:
    """The operator reads a scalar parameter (its combine step needs it)."""
    return ps.reduce_comm(lambda a, b: a + b, 0, ps.map(lambda x: x * k, xs))


@ps.entry
def prefix(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scan(lambda a, b: a + b, 0, xs)


@ps.entry
def running_max(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.scan(max, ps.lowest(ps.f64), xs)


@ps.entry
def affine_scan(ms: ps.Array[ps.i64]) -> tuple[ps.Array[ps.i64], ps.Array[ps.i64]]:
    p = 1000003
    return ps.unzip(ps.scan(lambda u, v: ((u[0] * v[0]) % p, (u[1] * v[0] + v[1]) % p), (1, 0),
                            ps.map(lambda m: (m % p, (m // 7) % p), ms)))


@ps.entry
def histogram(m: ps.i64, idx: ps.Array[ps.i64], ws: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.reduce_by_index(ps.replicate(m, ps.f32(0)), lambda a, b: a + b, ps.f32(0), idx, ws)


@ps.entry
def count_max(m: ps.i64, idx: ps.Array[ps.i64], vs: ps.Array[ps.i32]) -> tuple[ps.Array[ps.i64], ps.Array[ps.i32]]:
    ones = ps.map(lambda v: ps.i64(1), vs)
    dest = ps.zip(ps.replicate(m, ps.i64(0)), ps.replicate(m, ps.lowest(ps.i32)))
    return ps.unzip(ps.reduce_by_index(dest, lambda a, b: (a[0] + b[0], max(a[1], b[1])),
                                       (ps.i64(0), ps.lowest(ps.i32)), idx, ps.zip(ones, vs)))


@ps.entry
def slow_hash(rounds: ps.i64, xs: ps.Array[ps.i64]) -> ps.i64:
    """Work per element (for the killed-worker test): a mixing loop."""
    def mix(x: ps.i64) -> ps.i64:
        h = x
        for _ in range(rounds):
            h = (h * 6364136223846793005 + 1442695040888963407) ^ (h >> 29)
        return h & 1048575
    return ps.sum(ps.map(mix, xs))


# -- not partitionable ----------------------------------------------------

@ps.entry
def smooth(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    n = len(xs)
    return ps.tabulate(n, lambda i: xs[i] + xs[min(i + 1, n - 1)])


@ps.entry
def mean(xs: ps.Array[ps.f64]) -> ps.f64:
    return ps.sum(xs) / ps.f64(len(xs))


@ps.entry
def positives(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    return ps.filter(lambda x: x > 0, xs)


@ps.entry
def weighted_by_position(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.map(lambda i, x: ps.f64(i) * x, ps.iota(len(xs)), xs)


@ps.entry
def add_into(dest: ps.Array[ps.f32], idx: ps.Array[ps.i64], ws: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.reduce_by_index(ps.copy(dest), lambda a, b: a + b, ps.f32(0), idx, ws)


@ps.entry
def sum_and_max(xs: ps.Array[ps.i64]) -> tuple[ps.i64, ps.i64]:
    return (ps.sum(xs), ps.reduce(max, ps.lowest(ps.i64), xs))


# -- stencils: not partitionable alone, maps with a stated halo -----------

@ps.entry
def blur2(w: ps.f64, xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    """Reads rows i - 2 .. i + 2 (clamped at the ends): halo 2."""
    n = len(xs)
    return ps.tabulate(n, lambda i: w * xs[max(i - 2, 0)] + xs[max(i - 1, 0)] + xs[i]
                       + xs[min(i + 1, n - 1)] + w * xs[min(i + 2, n - 1)])


@ps.entry
def diff_rows(xss: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.Array[ps.i64]]:
    """Row i minus row i - 1 (row 0 minus itself): halo 1, rank 2."""
    return ps.tabulate(len(xss), lambda i: ps.map(lambda a, b: a - b, xss[i],
                                                  xss[max(i - 1, 0)]))


@ps.entry
def step_first(xs: ps.Array[ps.i32]) -> tuple[ps.Array[ps.i32], ps.Array[bool]]:
    """x[i] - x[i - 1] and whether row i is the first: halo 1, two results
    (i == 0 is the distance to the array's start, which a halo keeps)."""
    return ps.unzip(ps.tabulate(len(xs), lambda i: (xs[i] - xs[max(i - 1, 0)], i == 0)))


@ps.entry
def periodic_diff(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    """xs[i - 1] at i = 0 is the last element (Python): needs the whole array."""
    return ps.tabulate(len(xs), lambda i: xs[i] - xs[i - 1])


@ps.entry
def shifted(s: ps.i64, xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    """Reads row i + s (clamped): the reach is a parameter's, not derivable."""
    n = len(xs)
    return ps.tabulate(n, lambda i: xs[min(max(i + s, 0), n - 1)])


@ps.entry
def minus_first(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    """Every row reads row 0: no halo runs it."""
    return ps.tabulate(len(xs), lambda i: xs[i] - xs[0])
