"""Every conformance case on every available backend, and each non-python
backend against Python mode (the golden rule)."""
from __future__ import annotations

import pytest

from pyshark import testing
from pyshark.testing import conformance_dir
from pyshark.wrapper import available_backends

CONFORMANCE = conformance_dir()
if not CONFORMANCE.is_dir():
    raise RuntimeError(f"conformance corpus not found at {CONFORMANCE}; set PYSHARK_CONFORMANCE "
                       f"to the folder holding the *.py and *.cases.json files")

BACKENDS = available_backends()
# conformance modules of today's contract changes (LANGUAGE.md 2026-11-25), kept in
# pending/ until every compiler implements them; run exactly like the top-level ones
PENDING = ["late_binding", "functions_as_values", "augmented_assign"]
MODULES = testing.find_modules(CONFORMANCE) + [CONFORMANCE / "pending" / f"{name}.py"
                                               for name in PENDING]
CASES = [c for m in MODULES for c in testing.load_cases(m)]
assert CASES, f"no conformance cases found in {CONFORMANCE}"


def _params(backends):
    return [pytest.param(c, b, id=f"{c.id}-{b}") for c in CASES for b in backends]


@pytest.mark.parametrize("case,backend", _params(BACKENDS))
def test_case(case, backend):
    w = testing.compiled_wrapper(case.module, backend)
    outcome = testing.run_case(w, case)
    msg = testing.check_expected(w, case, outcome)
    assert msg is None, f"{case.id} args={testing.short(case.args)}: {msg}"


@pytest.mark.parametrize("case,backend", _params([b for b in BACKENDS if b != "python"]) or
                         [pytest.param(None, None, marks=pytest.mark.skip("only Python mode here"))])
def test_matches_python_mode(case, backend):
    w = testing.compiled_wrapper(case.module, backend)
    ref = testing.compiled_wrapper(case.module, "python")
    msg = testing.check_against_python(testing.run_case(w, case), testing.run_case(ref, case))
    assert msg is None, f"{case.id} args={testing.short(case.args)}: {msg}"
