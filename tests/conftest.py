"""Shared fixtures: where the conformance corpus lives, and a private cache.

The compile cache goes to a fresh temporary folder for the whole session
(never ~/.cache), so test runs neither read stale artifacts nor litter;
set PYSHARK_KEEP_CACHE=1 to use PYSHARK_CACHE_DIR / the default instead.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def conformance_dir() -> Path:
    env = os.environ.get("PYSHARK_CONFORMANCE")
    return Path(env) if env else REPO.parent / "shared" / "conformance"


def pytest_configure(config):
    if not os.environ.get("PYSHARK_KEEP_CACHE"):
        os.environ["PYSHARK_CACHE_DIR"] = tempfile.mkdtemp(prefix="pyshark-test-cache-")


@pytest.fixture(scope="session")
def conformance() -> Path:
    d = conformance_dir()
    if not d.is_dir():
        pytest.fail(f"conformance corpus not found at {d} (set PYSHARK_CONFORMANCE)", pytrace=False)
    return d
