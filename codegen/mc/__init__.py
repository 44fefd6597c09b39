"""Multicore algorithms of the SOACs, one file per primitive (Futhark's
ImpGen/Multicore layout): segmap (map), segred (reduce), segscan (scan),
seghist (reduce_by_index), filter and scatter. Each lowers one core SOAC to
kernel IR with ParFor at host level and sequential loops inside a ParFor.
"""
from __future__ import annotations

from pyshark.core import ir

from ..usage import free_vars
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


def delay_consumer_ok(e, name: str) -> bool:
    """Can `e` read its input `name` element by element (so a producer of
    `name` may be fused into it)?"""
    if isinstance(e, (ir.Map, ir.Reduce, ir.Scan, ir.Filter)):
        return (any(a.name == name for a in e.arrs)
                and name not in free_vars(e.lam)
                and not any(isinstance(a, ir.Var) and a.name == name
                            for a in getattr(e, "neutral", ())))
    if isinstance(e, (ir.ReduceByIndex, ir.Scatter)):
        inputs = [e.idxs, *e.vals]
        lam = getattr(e, "lam", None)
        return (any(a.name == name for a in inputs)
                and not any(d.name == name for d in e.dests)
                and (lam is None or name not in free_vars(lam)))
    return False
