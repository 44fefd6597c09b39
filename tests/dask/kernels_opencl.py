"""One entry of each plan kind, for the opencl backend test (a module of
its own: the opencl compile of the whole kernels.py costs CI time)."""
import pyshark.prelude as ps


@ps.entry
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.map(lambda x, y: a * x + y, xs, ys)


@ps.entry
def min_max(xs: ps.Array[ps.i32]) -> tuple[ps.i32, ps.i32]:
    return ps.reduce_comm(lambda a, b: (min(a[0], b[0]), max(a[1], b[1])),
                          (ps.highest(ps.i32), ps.lowest(ps.i32)), ps.map(lambda x: (x, x), xs))


@ps.entry
def prefix(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scan(lambda a, b: a + b, 0, xs)


@ps.entry
def histogram(m: ps.i64, idx: ps.Array[ps.i64], ws: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.reduce_by_index(ps.replicate(m, ps.f32(0)), lambda a, b: a + b, ps.f32(0), idx, ws)
