"""A second module; `scale` clashes with wrapper_kernels.scale on purpose."""
import pyshark.prelude as ps


@ps.entry
def scale(a: ps.f64, xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.map(lambda x: a * x, xs)
