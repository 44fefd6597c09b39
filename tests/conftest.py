"""Shared fixtures: where the conformance corpus lives, and a private cache.

The compile cache goes to a fresh temporary folder for the whole session
(never ~/.cache), so test runs neither read stale artifacts nor litter;
set PYSHARK_KEEP_CACHE=1 to use PYSHARK_CACHE_DIR / the default instead.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from pyshark.testing import conformance_dir


_SESSION_CACHE = []


def pytest_configure(config):
    # The "kir" development backend (the shared lowering run in the kernel-IR
    # interpreter, with memory checks) takes part in every conformance and
    # differential test, beside the user-facing backends.
    from pyshark.wrapper import registry
    registry.register_backend("kir", "pyshark.codegen.kir_backend:KirBackend")
    # The cpu backend's quick tier (a tiered compile's first calls) takes
    # part too; "cpu" itself compiles optimised code directly (no background
    # upgrades racing the tests), except where a test asks for tiers
    # (tests/wrapper/test_tiers.py).
    registry.register_backend("cpu-quick", "pyshark.codegen.cpu.backend:QuickCpuBackend")
    os.environ.setdefault("PYSHARK_TIERED", "0")
    if not os.environ.get("PYSHARK_KEEP_CACHE"):
        _SESSION_CACHE.append(tempfile.mkdtemp(prefix="pyshark-test-cache-"))
        os.environ["PYSHARK_CACHE_DIR"] = _SESSION_CACHE[-1]


def pytest_report_header(config):
    """Which OpenCL device the opencl tests run on (or why none), so a run's
    log says it; under CI=true tests/codegen/opencl/test_ocl_usable.py fails
    the run when there is none."""
    from pyshark.wrapper import available_backends
    from pyshark.wrapper.registry import unavailable_reason
    if "opencl" in available_backends():
        from pyshark.codegen.opencl import runtime
        return f"pyshark opencl device: {runtime.device().name}"
    return f"pyshark opencl device: none ({unavailable_reason('opencl')})"


def pytest_unconfigure(config):
    for d in _SESSION_CACHE:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def conformance():
    d = conformance_dir()
    if not d.is_dir():
        pytest.fail(f"conformance corpus not found at {d} (set PYSHARK_CONFORMANCE)", pytrace=False)
    return d
