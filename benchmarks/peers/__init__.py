"""Peers: each benchmark written as a user of NumPy, Numba or CuPy would write it.

Every peer module defines one function per benchmark it has (a missing one
is a skipped row), named after it and taking the same arguments as the
PyShark entry (NumPy arrays and scalars); `DEVICE = "gpu"` marks a peer
that computes on the GPU.
A peer whose library does not import is skipped with a note; the runner
imports them through `load_peers`.
"""
from __future__ import annotations

import importlib

#: peer name -> module (fastest-to-write first; the order of the table columns),
#: relative to this package: benchmarks.peers in a checkout, pyshark.benchmarks.peers
#: in an installed copy
PEER_MODULES = {
    "numpy": ".numpy_peers",
    "numba": ".numba_peers",
    "cupy": ".cupy_peers",
    "cuda": ".cuda_peers",     # hand-written kernels through CuPy
}


def load_peer(name: str):
    """(module, None) when the peer imports here, else (None, why not)."""
    try:
        return importlib.import_module(PEER_MODULES[name], __package__), None
    except ImportError as exc:
        return None, f"{name} does not import ({exc})"
    except Exception as exc:          # e.g. CuPy present but no GPU or driver
        return None, f"{name} cannot run here ({type(exc).__name__}: {exc})"
