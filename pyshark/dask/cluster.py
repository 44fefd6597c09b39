"""Shipping compiled modules to a distributed cluster: a worker plugin.

A plugin registered with the scheduler runs its setup() on every worker
once, now and on every worker that joins later, a restarted one too (a
worker killed mid-run comes back with the modules it needs); the modules'
bytes travel to each worker once, not with every task. Registration is
remembered per Client and module key, so a second call of the same entry
ships nothing.
"""
from __future__ import annotations

from distributed.diagnostics.plugin import WorkerPlugin

from . import worker as install_module

_SENT: set = set()


class LibraryInstaller(WorkerPlugin):
    """Installs Libraries (library.py) into each worker's cache."""

    def __init__(self, libraries):
        self.libraries = tuple(libraries)

    def setup(self, worker=None):   # noqa: F811 (distributed passes worker=)
        for lib in self.libraries:
            install_module.register(lib)


def active_client():
    """The default distributed Client, or None (no distributed, or none made)."""
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def ship(client, libraries) -> None:
    """Registers a plugin with the Libraries the client's workers lack."""
    todo = [lib for lib in libraries if (client.id, lib.key) not in _SENT]
    if not todo:
        return
    name = "pyshark-" + "-".join(lib.key[:16] for lib in todo)
    client.register_plugin(LibraryInstaller(todo), name=name)
    _SENT.update((client.id, lib.key) for lib in todo)
