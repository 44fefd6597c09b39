"""Kernels for test_scatter_lastwins.py: ps.scatter with duplicate indices
(the last one in idxs wins, LANGUAGE.md), flat, of rows, of pairs, with
index types that need a conversion, and with fused index/value maps."""
import pyshark.prelude as ps


@ps.entry
def scatter_i64(dest: ps.Array[ps.i64], idxs: ps.Array[ps.i64],
                vals: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def scatter_f32_i32(dest: ps.Array[ps.f32], idxs: ps.Array[ps.i32],
                    vals: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def scatter_u64(dest: ps.Array[ps.i32], idxs: ps.Array[ps.u64],
                vals: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def scatter_rows(dest: ps.Array[ps.Array[ps.f64]], idxs: ps.Array[ps.i64],
                 vals: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.Array[ps.f64]]:
    return ps.scatter(dest, idxs, vals)


@ps.entry
def scatter_pairs(m: int, idxs: ps.Array[ps.i64]) -> ps.Array[tuple[ps.i64, ps.f32]]:
    vals = ps.map(lambda i: (i, ps.f32(i) * 0.5), ps.iota(ps.length(idxs)))
    return ps.scatter(ps.replicate(m, (ps.i64(-1), ps.f32(0.0))), idxs, vals)


@ps.entry
def scatter_positions(m: int, k: int, n: int) -> ps.Array[ps.i64]:
    """Fused maps: the index (i * k) % (m + 3) - 1 (out of range at both
    ends), the value its position i."""
    return ps.scatter(ps.replicate(m, ps.i64(-7)),
                      ps.map(lambda i: (i * k) % (m + 3) - 1, ps.iota(n)), ps.iota(n))
