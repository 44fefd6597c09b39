#!/usr/bin/env bash
# The PyShark demo: compiles examples/saxpy.py, runs it on every native backend
# that can run here and checks the results against Python mode. Creates ./.venv
# on first use (Python 3.11+) and installs the project into it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
# an OpenCL CPU runtime that builds on this CPU (pyshark/setup_opencl.py); without one the
# opencl backend is skipped, with the reason (under CI=true the test suite then fails)
.venv/bin/pyshark setup-opencl || echo "$(basename "$0"): continuing without an OpenCL CPU device"

.venv/bin/python examples/demo.py "$@"
.venv/bin/pyshark test examples/saxpy.py
