#!/usr/bin/env bash
# The benchmark suite in one command, on a fresh machine: creates ./.venv (Python 3.11+) on
# first use, installs PyShark with its "bench" extra (Numba, tqdm, matplotlib), then runs
# `pyshark bench` with every argument given here (try --help, --list, --smoke).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[bench]"
exec .venv/bin/pyshark bench "$@"
