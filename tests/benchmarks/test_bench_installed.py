"""`pyshark bench` from an installed copy (issue 15, item 10): the suite
ships as pyshark.benchmarks, runs outside a checkout (its compile report's
loading process included) and writes its results under the working folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--disable-pip-version-check", "--target", str(target), str(REPO)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.skip(f"pip could not build the package here: {r.stderr.strip()[-300:]}")
    return target


def _bench(installed, cwd, *args):
    env = dict(os.environ, PYTHONPATH=str(installed))
    code = "import sys; from pyshark.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-P", "-c", code, "bench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_installed_copy_ships_the_suite(installed):
    pkg = installed / "pyshark" / "benchmarks"
    assert (pkg / "runner.py").is_file() and (pkg / "programs" / "saxpy.py").is_file()
    assert (pkg / "programs" / "histogram.cases.json").is_file()
    assert (installed / "pyshark" / "py.typed").is_file()


def test_bench_runs_outside_a_checkout(installed, tmp_path):
    r = _bench(installed, tmp_path, "--list")
    assert r.returncode == 0, r.stderr
    assert "saxpy" in r.stdout and "backends:" in r.stdout
    r = _bench(installed, tmp_path, "--programs", "saxpy", "--sizes", "tiny", "--backends", "cpu",
               "--peers", "numpy", "--check-only", "--no-chart")
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "pyshark-bench-results"
    results = json.loads(next(out.rglob("results.json")).read_text())
    targets = {row.get("target") for row in results["results"] if row.get("program") == "saxpy"}
    assert {"ps.cpu", "numpy"} <= targets, targets      # the peers import from the package too
    assert "cached load (new process)" in r.stdout     # the compile report's own process ran
