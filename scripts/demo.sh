#!/usr/bin/env bash
# The PyShark demo: compiles examples/saxpy.py, runs it on the fastest backend
# that exists here and checks the results against Python mode. Creates ./.venv
# on first use (Python 3.11+) and installs the project into it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"

.venv/bin/python examples/demo.py "$@"
.venv/bin/pyshark test examples/saxpy.py
