"""Kernels for test_empty_shapes.py: results that may be empty and keep
their inner dimensions (docs/language.md, "Empty results")."""
import pyshark.prelude as ps


@ps.entry
def twice(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda r: ps.map(lambda x: x * 2.0, r), xs)


@ps.entry
def tab(n: int) -> ps.Array[ps.Array[ps.f32]]:
    return ps.tabulate(n, lambda i: ps.replicate(5, ps.f32(i)))


@ps.entry
def rows(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda r: ps.concat(r, r), xs)


@ps.entry
def cube(xs: ps.Array[ps.Array[ps.Array[ps.f32]]]) -> ps.Array[ps.Array[ps.Array[ps.f32]]]:
    return ps.map(lambda m: ps.map(lambda r: ps.map(lambda x: x + 1.0, r), m), xs)


@ps.entry
def blocks(xs: ps.Array[ps.f32], k: int) -> ps.Array[ps.Array[ps.Array[ps.f32]]]:
    return ps.map(lambda x: ps.replicate(k, ps.replicate(3, x)), xs)


@ps.entry
def turned(xs: ps.Array[ps.Array[ps.Array[ps.f32]]]) -> ps.Array[ps.Array[ps.Array[ps.f32]]]:
    return ps.map(lambda m: ps.transpose(m), xs)


@ps.entry
def pairs(xs: ps.Array[ps.Array[ps.f32]]) -> tuple[ps.Array[ps.Array[ps.f32]],
                                                    ps.Array[ps.Array[ps.f32]]]:
    return ps.unzip(ps.map(lambda r: (ps.map(lambda x: x + 1.0, r),
                                      ps.replicate(3, ps.sum(r))), xs))


@ps.entry
def add2(a: ps.Array[ps.Array[ps.f32]],
         b: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda r, s: ps.map(lambda x, y: x + y, r, s), a, b)


@ps.entry
def rep(xs: ps.Array[ps.f32], k: int) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda x: ps.replicate(k, x), xs)


@ps.entry
def cat(xs: ps.Array[ps.Array[ps.f32]], ys: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    """Issue 15 item 11e: an empty map's rows have ys's width, so concat works."""
    return ps.concat(ps.map(lambda r: ps.map(lambda x: x + 1.0, r), xs), ys)


@ps.entry
def grid(n: int, m: int) -> ps.Array[ps.Array[ps.Array[ps.f32]]]:
    return ps.tabulate_2d(n, m, lambda i, j: ps.replicate(3, ps.f32(i + j)))


@ps.entry
def stepped(xs: ps.Array[ps.f32], k: int) -> ps.Array[ps.Array[ps.f32]]:
    def row(x: ps.f32) -> ps.Array[ps.f32]:
        acc = ps.replicate(4, x)
        for _ in range(k):
            acc = ps.map(lambda a: a + 1.0, acc)
        return acc
    return ps.map(row, xs)


@ps.entry
def zeros_kept(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda r: ps.filter(lambda v: v == 0.0, r), xs)


@ps.entry
def by_sum(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda r: ps.replicate(ps.i64(ps.sum(r)) + 2, ps.f32(1.0)), xs)


@ps.entry
def tails(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda r: r[1:], xs)


@ps.entry
def evens(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda r: r[::2], xs)


@ps.entry
def matmul(a: ps.Array[ps.Array[ps.f32]], b: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda r: ps.map(lambda c: ps.sum(ps.map(lambda x, y: x * y, r, c)),
                                   ps.transpose(b)), a)


@ps.entry
def firsts(xs: ps.Array[ps.Array[ps.Array[ps.f32]]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.map(lambda m: m[0], xs)


@ps.entry
def listed(xs: ps.Array[ps.f32]) -> ps.Array[ps.Array[ps.f32]]:
    """A comprehension is a Python list: empty, it has no inner dimensions."""
    return [ps.replicate(3, x) for x in xs]


@ps.entry
def guarded(xs: ps.Array[ps.Array[ps.f32]], ys: ps.Array[ps.f32]) -> ps.Array[ps.Array[ps.f32]]:
    """The documented edge: the function raises for the stand-in because of
    a captured array's values, which compiled code cannot see."""
    def row(r: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        assert ys[0] > 0.0, "ys[0] must be positive"
        return ps.map(lambda x: x * ys[0], r)
    return ps.map(row, xs)


@ps.entry
def first_positive(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    """Raises for the stand-in because of the element's own value (0):
    compiled code sees that too."""
    def row(r: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        assert r[0] > 0.0, "rows start positive"
        return r
    return ps.map(row, xs)


@ps.entry
def over_listed(xs: ps.Array[ps.f32]) -> ps.Array[ps.Array[ps.f32]]:
    """A map over an empty comprehension (the list []): its stand-in is an
    empty row, as compiled code's comprehension has rows of 0."""
    return ps.map(lambda r: ps.concat(r, ps.replicate(3, ps.f32(1.0))),
                  [ps.replicate(2, x) for x in xs])


@ps.entry
def after_raise(xs: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    """Two maps that fusion joins: each function gets its own stand-in, as in
    Python mode (the first raises for a row of width 0, the second does not)."""
    ys = ps.map(lambda r: ps.replicate(2, r[0]), xs)
    return ps.map(lambda r: ps.concat(r, ps.replicate(3, ps.f32(1.0))), ys)


@ps.entry
def grid_index(n: int, m: int) -> ps.Array[ps.Array[ps.Array[ps.f32]]]:
    """Rows sized by the index: an empty grid's are f(0, 0)'s on every backend."""
    return ps.tabulate_2d(n, m, lambda i, j: ps.replicate(i, ps.f32(j)))


@ps.entry
def per_width(xs: ps.Array[ps.Array[ps.i64]]) -> ps.Array[ps.Array[ps.i64]]:
    """12 // len(r) raises ZeroDivisionError for a stand-in row of width 0."""
    return ps.map(lambda r: ps.replicate(3, 12 // len(r)), xs)
