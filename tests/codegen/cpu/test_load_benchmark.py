"""benchmarks/load.py runs end to end on a tiny input (its numbers are not
checked: speed is measured by running it, never by a unit test)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(
    "cpu" not in __import__("pyshark.wrapper", fromlist=["x"]).available_backends(),
    reason="cpu backend unavailable")


def test_load_benchmark_prints_its_table():
    r = subprocess.run([sys.executable, "-m", "benchmarks.load", "--n", "70001", "--rounds", "1",
                        "--calls", "2", "--busy-seconds", "20", "--threads", "1,3"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = {line.split("  ")[0].strip() for line in r.stdout.splitlines()}
    assert {"numpy", "cpu", "cpu nt=1", "cpu nt=3"} <= rows, r.stdout
