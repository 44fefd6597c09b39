"""Work-group algorithms of the SOACs for GPUs, one file per primitive
(Futhark's ImpGen/GPU layout): each lowers one core SOAC at host level to
kernel IR that uses the GPU extension of kir.py (work-group ParFors, local
memory, barriers, atomics). A rule returns None to decline (a shape it
does not handle yet); the lowering then tries the common rules and the mc/
algorithm, which is correct on any device (lower_base.families_for).
"""
from __future__ import annotations

from pyshark.core import ir

from ..lower_base import RuleTable
from .filter import lower_filter
from .scatter import lower_scatter
from .seghist import lower_reduce_by_index
from .segmap import lower_map
from .segred import lower_reduce
from .segscan import lower_scan
from .transpose import lower_transpose

SOAC_HANDLERS = {
    ir.ReduceByIndex: lower_reduce_by_index, ir.Map: lower_map, ir.Reduce: lower_reduce,
    ir.Scan: lower_scan, ir.Filter: lower_filter, ir.Scatter: lower_scatter,
    # not a SOAC, but a copy that the common rule does with strided accesses
    ir.Transpose: lower_transpose,
}


def register(rules: RuleTable) -> None:
    """The gpu family's rules, tried before the common and mc ones."""
    rules.register_all("gpu", SOAC_HANDLERS)
