"""Array and SOAC kernels for the differential tests (Python mode vs every backend)."""
import pyshark.prelude as ps


@ps.entry
def map_affine(xs: ps.Array[ps.i32], a: ps.i32, b: ps.i32) -> ps.Array[ps.i32]:
    return ps.map(lambda x: a * x + b, xs)


@ps.entry
def sum_i32(xs: ps.Array[ps.i32]) -> ps.i32:
    return ps.sum(xs)


@ps.entry
def sum_f64(xs: ps.Array[ps.f64]) -> ps.f64:
    return ps.reduce(lambda a, b: a + b, 0.0, xs)


@ps.entry
def prefix_i64(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scan(lambda a, b: a + b, 0, xs)


@ps.entry
def extremes_f32(xs: ps.Array[ps.f32]) -> tuple[ps.f32, ps.f32, int, int]:
    return (ps.minimum(xs), ps.maximum(xs), ps.argmin(xs), ps.argmax(xs))


@ps.entry
def builtin_extremes_f32(xs: ps.Array[ps.f32]) -> tuple[ps.f32, ps.f32]:
    # Python's min and max: a NaN first stays, NaNs after a number are passed over
    return (min(xs), max(xs))


@ps.entry
def builtin_extremes_of_rows(xss: ps.Array[ps.Array[ps.f64]]) -> tuple[ps.f64, ps.f64]:
    # the rows' numpy minima (NaN propagates), then Python's min over them
    return (min(ps.map(lambda r: ps.minimum(r), xss)), max(ps.map(lambda r: ps.maximum(r), xss)))


@ps.entry
def extremes_i16(xs: ps.Array[ps.i16]) -> tuple[ps.i16, ps.i16, int, int]:
    return (ps.minimum(xs), ps.maximum(xs), ps.argmin(xs), ps.argmax(xs))


@ps.entry
def keep_above(xs: ps.Array[ps.f64], t: ps.f64) -> tuple[ps.Array[ps.f64], ps.Array[ps.f64]]:
    return ps.partition(lambda x: x > t, xs)


@ps.entry
def count_odd(xs: ps.Array[ps.u8]) -> int:
    return len(ps.filter(lambda x: x % 2 == 1, xs))


@ps.entry
def histogram(n: int, idxs: ps.Array[ps.i64], ws: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    return ps.reduce_by_index(ps.replicate(n, ps.i32(0)), lambda a, b: a + b, ps.i32(0), idxs, ws)


@ps.entry
def scatter_into(dest: ps.Array[ps.f32], idxs: ps.Array[ps.i64], vals: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def rotated(r: int, xs: ps.Array[ps.i8]) -> ps.Array[ps.i8]:
    return ps.rotate(r, xs)


@ps.entry
def take_drop(n: int, xs: ps.Array[ps.i32]) -> tuple[ps.Array[ps.i32], ps.Array[ps.i32]]:
    return (ps.take(n, xs), ps.drop(n, xs))


@ps.entry
def sliced(xs: ps.Array[ps.i32], a: int, b: int, s: int) -> ps.Array[ps.i32]:
    return xs[a:b:s]


@ps.entry
def element(xs: ps.Array[ps.i32], i: int) -> ps.i32:
    return xs[i]


@ps.entry
def ends(xs: ps.Array[ps.i32]) -> tuple[ps.i32, ps.i32, ps.Array[ps.i32], ps.Array[ps.i32]]:
    return (ps.head(xs), ps.last(xs), ps.tail(xs), ps.init(xs))


@ps.entry
def updated(xs: ps.Array[ps.i32], i: int, v: ps.i32) -> ps.Array[ps.i32]:
    return ps.update(xs, i, v)


@ps.entry
def counted(n: int) -> tuple[ps.Array[ps.i64], ps.Array[ps.f32]]:
    return (ps.iota(n), ps.replicate(n, ps.f32(1.5)))


@ps.entry
def reshaped(n: int, m: int, xs: ps.Array[ps.i32]) -> ps.Array[ps.Array[ps.i32]]:
    return ps.transpose(ps.unflatten(n, m, xs))


@ps.entry
def row_sums(xss: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.i64]:
    return ps.map(lambda row: ps.sum(row), xss)


@ps.entry
def column_max(xss: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.f64]:
    return ps.map(lambda col: ps.reduce_comm(lambda a, b: ps.max(a, b), -ps.inf, col), ps.transpose(xss))


@ps.entry
def joined(xs: ps.Array[ps.i32], ys: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    return ps.concat(xs, ps.reverse(ys), xs)


@ps.entry
def pairs_sorted(xs: ps.Array[ps.i32], ys: ps.Array[ps.f32]) -> ps.Array[tuple[ps.f32, ps.i32]]:
    return ps.map(lambda p: (p[1], p[0]), ps.zip(xs, ys))


@ps.entry
def folds(xs: ps.Array[ps.i64]) -> tuple[ps.i64, ps.i64]:
    return (ps.foldl(lambda acc, x: acc * 3 + x, ps.i64(0), xs), ps.foldr(lambda x, acc: acc * 3 + x, ps.i64(0), xs))


@ps.entry
def any_all(xs: ps.Array[ps.f64]) -> tuple[bool, bool]:
    return (ps.any(lambda x: x < 0.0, xs), ps.all(lambda x: x < 0.0, xs))


@ps.entry
def gather(xs: ps.Array[ps.f32], idxs: ps.Array[ps.i64]) -> ps.Array[ps.f32]:
    return ps.map(lambda i: xs[i], idxs)


@ps.entry
def insertion_sort(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    ys = ps.copy(xs)
    for i in range(1, len(ys)):
        j = i
        while j > 0 and ys[j - 1] > ys[j]:
            a = ys[j - 1]
            ys[j - 1] = ys[j]
            ys[j] = a
            j = j - 1
    return ys


@ps.entry
def grid(n: int, m: int) -> ps.Array[ps.Array[ps.i64]]:
    return ps.tabulate_2d(n, m, lambda i, j: i * m + j)


@ps.entry
def grid_pairs(n: int, m: int) -> ps.Array[ps.Array[tuple[ps.i64, ps.f32]]]:
    return ps.tabulate_2d(n, m, lambda i, j: (j, ps.f32(i)))
