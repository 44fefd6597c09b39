"""Fixtures of the pyshark.dask tests: the entries' module, a compiled
Wrapper per backend, and one real distributed cluster (2 worker
processes, one thread each, a cache directory each) for the tests that ask
for it, started once.

Without dask/distributed the tests that need them are skipped with the
reason, except under CI=true (CI installs `.[test]`, which has them):
there a missing dask fails the run.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).parent
KERNELS = HERE / "kernels.py"


def need_dask():
    """Skips the calling test module when dask or distributed is missing."""
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"dask is not installed ({exc}); pip install 'pyshark[dask]'",
                    allow_module_level=True)


_WRAPPERS: dict = {}


@pytest.fixture(scope="session")
def wrappers():
    """backend -> a loaded Wrapper of kernels.py (cpu and Python mode)."""
    from pyshark.wrapper import Wrapper
    if not _WRAPPERS:
        for backend in ("cpu", "python"):
            w = Wrapper(backend)
            w.add_source_file(KERNELS)
            _WRAPPERS[backend] = w.compile_and_load()
    return _WRAPPERS


@pytest.fixture
def cluster(_cluster):
    """The session's cluster, checked to have both its workers before each
    test (a TimeoutError, not a hang, when it has lost them)."""
    _cluster.wait_for_workers(2, timeout=120)
    return _cluster


@pytest.fixture(scope="session")
def _cluster():
    """A cluster of 2 worker processes (one thread each, Dask names 0 and
    1, as a LocalCluster's) where each worker has a PyShark cache directory
    of its own, empty at start: every compiled module must reach each
    worker through pyshark.dask. (A LocalCluster gives all its workers one
    environment, so one shared cache: the worker that installs a module
    second would find it on disk, and what each worker received could not
    be told apart.)"""
    need_dask()
    from distributed import Client, Nanny, Scheduler, SpecCluster
    caches = [tempfile.mkdtemp(prefix=f"pyshark-dask-worker{i}-") for i in range(2)]
    workers = {i: {"cls": Nanny, "options": {
        "nthreads": 1, "silence_logs": logging.ERROR,
        "env": {"PYSHARK_CACHE_DIR": caches[i], "OMP_NUM_THREADS": "1"}}}
        for i in range(2)}
    scheduler = {"cls": Scheduler, "options": {"dashboard": False, "dashboard_address": ":0"}}
    with SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR) as sc, \
            Client(sc) as client:
        client.wait_for_workers(2)
        yield client
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)
