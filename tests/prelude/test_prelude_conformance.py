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


def test_prelude_convert_agrees_with_test_conversion():
    """Array[T](value) (the prelude's conversion) gives what the test helper gives."""
    import typing

    import numpy as np

    import pyshark.prelude as ps

    checked = 0
    for name, _, case in CASES:
        if "raises" in case:
            continue
        fn = getattr(h.load_module(name), case["entry"])
        hints = typing.get_type_hints(fn)
        code = fn.__wrapped__.__code__
        for arg, p in zip(case["args"], code.co_varnames[:code.co_argcount]):
            t = hints[p]
            if not isinstance(t, ps.ArrayAlias):
                continue
            mine, theirs = t(arg), h.to_value(arg, t)
            if isinstance(theirs, ps.TupleArray):
                assert mine == theirs, (name, case)
            else:
                assert mine.dtype == theirs.dtype and mine.shape == theirs.shape, (name, case)
                assert np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f"), (name, case)
            checked += 1
    assert checked > 100
