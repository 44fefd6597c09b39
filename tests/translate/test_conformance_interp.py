"""Every conformance module translates, passes the IR checker, and every
case gives the expected result in the core interpreter."""
from __future__ import annotations

import pytest

from conformance_run import CONFORMANCE, load_cases, run_case
from pyshark.translate import translate_file

MODULES = sorted(p.stem for p in CONFORMANCE.glob("*.py"))
_PROGRAMS: dict = {}


def program(module: str):
    if module not in _PROGRAMS:
        _PROGRAMS[module] = translate_file(str(CONFORMANCE / f"{module}.py"))
    return _PROGRAMS[module]


def test_corpus_found():
    assert len(MODULES) >= 30


@pytest.mark.parametrize("module", MODULES)
def test_module_translates_and_checks(module):
    prog = program(module)          # translate_source runs check_program
    assert prog.entries, f"{module} has no entries"
    for name in prog.entries:
        assert name in prog.functions


@pytest.mark.parametrize("module", MODULES)
def test_cases(module):
    prog = program(module)
    failures = []
    for case in load_cases(module):
        msg = run_case(prog, case)
        if msg:
            failures.append(f"{case['entry']}{case['args']}: {msg}")
    assert not failures, "\n".join(failures)
