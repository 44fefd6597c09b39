"""Work-group algorithms of the SOACs for GPUs, one file per primitive
(Futhark's ImpGen/GPU layout): each lowers one core SOAC at host level to
kernel IR that uses the GPU extension of kir.py (work-group ParFors, local
memory, barriers, atomics). A handler returns None to decline (a shape it
does not handle yet); the lowering then uses the mc/ algorithm, which is
correct on any device.
"""
from __future__ import annotations

SOAC_HANDLERS: dict = {}

from pyshark.core import ir as _ir  # noqa: E402

from .filter import lower_filter  # noqa: E402
from .segmap import lower_map  # noqa: E402
from .seghist import lower_reduce_by_index  # noqa: E402
from .segred import lower_reduce  # noqa: E402
from .scatter import lower_scatter  # noqa: E402
from .segscan import lower_scan  # noqa: E402
from .transpose import lower_transpose  # noqa: E402

SOAC_HANDLERS[_ir.ReduceByIndex] = lower_reduce_by_index
SOAC_HANDLERS[_ir.Map] = lower_map
SOAC_HANDLERS[_ir.Reduce] = lower_reduce
SOAC_HANDLERS[_ir.Scan] = lower_scan
SOAC_HANDLERS[_ir.Filter] = lower_filter
SOAC_HANDLERS[_ir.Scatter] = lower_scatter
# not a SOAC, but a copy that the shared lowering does with strided accesses
SOAC_HANDLERS[_ir.Transpose] = lower_transpose
