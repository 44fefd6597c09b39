"""Free variables and liveness of the core IR, for the lowering.

The implementation is pyshark/core/traverse.py (memoised free variables
over the one table of IR node fields); this module keeps the names the
lowering imports.
"""
from __future__ import annotations

from pyshark.core.traverse import free_vars, live_after, use_counts

__all__ = ["free_vars", "live_after", "use_counts"]
