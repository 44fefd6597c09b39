"""scatter on a GPU: the last-wins owner algorithm of mc/scatter.py (an
atomic max of the value's position into an owner array of the bins, then a
write by each bin's last writer), always in its parallel form: each pass is
one plain ParFor, one work-item per element, and the atomic max of a 32-bit
owner is OpenCL's atomic_max (emit_cl.py). There is no sequential path for
small inputs as on the CPU: a host loop on this backend is Python, and a
launch is cheap. A 64-bit owner (more than 2**31 - 1 values) needs the
device's 64-bit atomics (Target.atomics64) and fails clearly without them.
"""
from __future__ import annotations

from pyshark.core import ir

from ..lower_base import Lowerer
from ..mc.scatter import dest_setup, owner_scatter


def lower_scatter(lw: Lowerer, e: ir.Scatter, env, stm):
    if not lw.options.parallel:
        return None
    n, idxs, vals, dests, m = dest_setup(lw, e, env, stm, "scatter")
    owner_scatter(lw, n, idxs, vals, dests, m, stm.loc)
    return dests
