"""Every conformance case, run as Python with the prelude (Python mode)."""
import pytest

import prelude_case_helpers as h

CASES = [(name, k, case) for name in h.module_names() for k, case in enumerate(h.load_cases(name))]


@pytest.mark.parametrize("name,k,case", CASES, ids=[f"{n}-{c['entry']}-{k}" for n, k, c in CASES])
def test_case(name, k, case):
    mod = h.load_module(name)
    call, ret = h.run_case(mod, case)
    if "raises" in case:
        with pytest.raises(h.EXCEPTIONS[case["raises"]]):
            call()
    else:
        h.compare(call(), case["expected"], ret)


def test_every_module_has_cases():
    names = h.module_names()
    assert len(names) >= 30
    for name in names:
        assert h.load_cases(name), name
