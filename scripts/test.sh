#!/usr/bin/env bash
# Runs the PyShark test suite. Creates ./.venv on first use (Python 3.11+),
# installs the project into it, then runs pytest with any extra arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
# an OpenCL CPU runtime that builds on this CPU (pyshark/setup_opencl.py); without one the
# opencl backend is skipped, with the reason (under CI=true the test suite then fails)
.venv/bin/pyshark setup-opencl || echo "$(basename "$0"): continuing without an OpenCL CPU device"

set +e
.venv/bin/python -m pytest -q "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "scripts/test.sh: pytest collected no tests; treating that as a failure" >&2
    exit 1
fi
exit "$status"
