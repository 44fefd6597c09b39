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

# Modules of today's contract changes (LANGUAGE.md 2026-11-25), under
# CONFORMANCE / "pending" until the corpus takes them in; each is run exactly as
# the corpus is (every backend, against the expected values and against Python
# mode). A plain list: one module name (no ".py") per line.
PENDING = [
    "late_binding",
    "functions_as_values",
    "augmented_assign",
    "scatter_duplicates",
]

BACKENDS = available_backends()
for _name in PENDING:
    if not (CONFORMANCE / "pending" / f"{_name}.py").is_file():
        raise RuntimeError(f"pending conformance module {_name!r} not found under "
                           f"{CONFORMANCE / 'pending'}; remove it from PENDING if the corpus "
                           f"took it in")
MODULES = testing.find_modules(CONFORMANCE) + [CONFORMANCE / "pending" / f"{name}.py"
                                               for name in PENDING]
CASES = [c for m in MODULES for c in testing.load_cases(m)]
assert CASES, f"no conformance cases found in {CONFORMANCE}"

# The kir interpreter runs about a thousand elements a second, so a pending
# case with an integer argument this large (a size chosen to pass the CPU's
# parallel thresholds) is skipped there; kir lowers with par_min=4, so the
# same parallel algorithms run in it on the small cases.
KIR_MAX_INT_ARG = 10 ** 5
_PENDING_IDS = {c.id for c in CASES if c.module.parent.name == "pending"}


def _too_big_for_kir(case, backend) -> bool:
    return (backend == "kir" and case.id in _PENDING_IDS
            and any(isinstance(a, int) and not isinstance(a, bool) and abs(a) >= KIR_MAX_INT_ARG
                    for a in case.args))


def _params(backends):
    return [pytest.param(c, b, id=f"{c.id}-{b}") for c in CASES for b in backends]


@pytest.mark.parametrize("case,backend", _params(BACKENDS))
def test_case(case, backend):
    if _too_big_for_kir(case, backend):
        pytest.skip("too large for the kir interpreter (KIR_MAX_INT_ARG)")
    w = testing.compiled_wrapper(case.module, backend)
    outcome = testing.run_case(w, case)
    msg = testing.check_expected(w, case, outcome)
    assert msg is None, f"{case.id} args={testing.short(case.args)}: {msg}"


@pytest.mark.parametrize("case,backend", _params([b for b in BACKENDS if b != "python"]) or
                         [pytest.param(None, None, marks=pytest.mark.skip("only Python mode here"))])
def test_matches_python_mode(case, backend):
    if _too_big_for_kir(case, backend):
        pytest.skip("too large for the kir interpreter (KIR_MAX_INT_ARG)")
    w = testing.compiled_wrapper(case.module, backend)
    msg = testing.check_against_python(testing.run_case(w, case), _python_outcome(case))
    assert msg is None, f"{case.id} args={testing.short(case.args)}: {msg}"


_PY_OUTCOMES: dict = {}


def _python_outcome(case):
    """Python mode's outcome of a case, run once per session (the large
    pending cases take tens of seconds in Python mode)."""
    if case.id not in _PY_OUTCOMES:
        ref = testing.compiled_wrapper(case.module, "python")
        _PY_OUTCOMES[case.id] = testing.run_case(ref, case)
    return _PY_OUTCOMES[case.id]
