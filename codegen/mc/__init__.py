"""Multicore algorithms of the SOACs, one file per primitive (Futhark's
ImpGen/Multicore layout): segmap (map), segred (reduce), segscan (scan),
seghist (reduce_by_index), filter and scatter; colred, the map of column
reductions that reads a transpose in place (the host-level rule of the
multicore target); tile (register tiling) and stream_tile (tiles written
out past the caches), which segmap's tiled nests use. Each lowers one core SOAC to
kernel IR with ParFor at host level and sequential loops inside a ParFor.
"""
from __future__ import annotations

from pyshark.core import ir

from ..lower_base import RuleTable
from .colred import HOST_HANDLERS
from .filter import lower_filter
from .scatter import lower_scatter
from .segmap import lower_map
from .segred import lower_reduce
from .segscan import lower_scan
from .seghist import lower_reduce_by_index

SOAC_HANDLERS = {
    ir.Map: lower_map, ir.Reduce: lower_reduce, ir.Scan: lower_scan,
    ir.Filter: lower_filter, ir.ReduceByIndex: lower_reduce_by_index,
    ir.Scatter: lower_scatter,
}


def register(rules: RuleTable) -> None:
    """The mc family's rules: every SOAC, on every target (the fallback of
    what gpu/ declines, and the sequential form inside a parallel loop)."""
    rules.register_all("mc", SOAC_HANDLERS)
    rules.register_all("mc_host", HOST_HANDLERS)
