"""Fixtures of the pyshark.dask tests: the entries' module, a compiled
Wrapper per backend, and one real distributed LocalCluster (2 worker
processes, one thread each) for the tests that ask for it, started once.

Without dask/distributed the tests that need them are skipped with the
reason, except under CI=true (CI installs `.[test]`, which has them):
there a missing dask fails the run.
"""
from __future__ import annotations

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


@pytest.fixture(scope="session")
def cluster():
    """A LocalCluster of 2 worker processes (threads_per_worker=1) whose
    workers have a PyShark cache directory of their own, empty at start:
    every compiled module must reach them through pyshark.dask."""
    need_dask()
    from distributed import Client, LocalCluster
    cache = tempfile.mkdtemp(prefix="pyshark-dask-workers-")
    env = {"PYSHARK_CACHE_DIR": cache, "OMP_NUM_THREADS": "1"}
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                      dashboard_address=None, env=env) as lc, Client(lc) as client:
        client.wait_for_workers(2)
        yield client
    shutil.rmtree(cache, ignore_errors=True)
