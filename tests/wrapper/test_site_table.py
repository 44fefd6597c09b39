"""The site table's answers are the types Python mode computes: for every
non-empty result of a prelude call in the conformance corpus (run through
the python backend), the compiled program's type found by the rule of
pyshark/prelude/static.py (the call's Let of the lowering's kind, highest
rank) is the result's own type. Empty results rely on that rule."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import pyshark.prelude as ps
from pyshark import testing
from pyshark.prelude import arrays, soacs, static
from pyshark.prelude.tuple_array import TupleArray

# prelude function -> (module, the kinds its empty result asks for, values to drop)
RULES = {"map": (soacs, ("Map",), 0), "filter": (soacs, ("Filter",), 0),
         "scan": (soacs, ("Scan",), 0), "tabulate": (soacs, ("Map",), 0),
         "tabulate_2d": (soacs, ("Map", "Reshape"), 0), "partition": (soacs, ("Filter",), 1),
         "concat": (arrays, ("Concat",), 0), "reverse": (arrays, ("Slice",), 0),
         "take": (arrays, ("Slice",), 0), "drop": (arrays, ("Slice",), 0),
         "sum": (arrays, ("Reduce",), 0), "product": (arrays, ("Reduce",), 0)}


def _flat(v):
    if isinstance(v, TupleArray):
        return [x for f in v.fields for x in _flat(f)]
    if isinstance(v, (np.ndarray, np.generic)):
        return [(np.dtype(v.dtype), np.ndim(v))]
    return None


def test_site_table_agrees_with_every_typed_prelude_result_of_the_corpus(monkeypatch):
    seen, wrong = [], []

    def user_frame():              # skip this file's wrappers as well as the prelude
        f = sys._getframe(1)
        while f is not None and (f.f_code.co_filename.startswith(static._PRELUDE_DIR)
                                 or f.f_code.co_filename == __file__):
            f = f.f_back
        return f

    def checked(name, original, kinds, drop):
        def call(*args):
            result = original(*args)
            site = static.call_site()
            if site is not None:
                parts = result if name == "partition" else (result,)
                for part in parts:
                    got = _flat(part)
                    want = static.site_types(kinds, drop=drop, site=site)
                    seen.append(name)
                    if got != want:
                        wrong.append((name, site[1:], got, want))
            return result
        return call

    monkeypatch.setattr(static, "_user_frame", user_frame)
    for name, (module, kinds, drop) in RULES.items():
        wrapped = checked(name, getattr(module, name), kinds, drop)
        monkeypatch.setattr(ps, name, wrapped)
        monkeypatch.setattr(module, name, wrapped)
    testing._WRAPPERS.clear()
    try:
        for path in testing.find_modules(testing.conformance_dir()):
            testing.run_module(path, ["python"])
    finally:
        testing._WRAPPERS.clear()
    assert len(seen) > 300 and {"map", "filter", "scan", "sum", "tabulate_2d"} <= set(seen)
    assert not wrong, wrong[:10]
