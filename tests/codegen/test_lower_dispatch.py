"""The lowering's rule tables (lower_scalar.HANDLERS for scalars and calls,
lower_control.HANDLERS for if and loop, lower_arrays.HANDLERS,
mc.SOAC_HANDLERS) together cover every class of ir.Exp exactly once, gpu/
only overrides classes they cover, and they lower a program that uses
every class to kernel IR that computes what the interpreter computes."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

import every_exp  # noqa: E402
from pyshark.codegen import kir as K  # noqa: E402
from pyshark.codegen import gpu, lower, lower_arrays, lower_control, lower_scalar, mc  # noqa: E402
from pyshark.codegen.lower_base import families_for  # noqa: E402
from pyshark.codegen.target import MULTICORE, gpu_target  # noqa: E402
from pyshark.codegen.kir_backend import KirModule  # noqa: E402
from pyshark.core.check import check_program  # noqa: E402
from pyshark.core.interp import run_entry  # noqa: E402

TABLES = {"lower_scalar": lower_scalar.HANDLERS, "lower_control": lower_control.HANDLERS,
          "lower_arrays": lower_arrays.HANDLERS, "mc": mc.SOAC_HANDLERS}


def test_lowering_tables_cover_every_class_once():
    seen: dict = {}
    for name, table in TABLES.items():
        for cls in table:
            assert cls not in seen, f"{cls.__name__} in both {seen.get(cls)} and {name}"
            seen[cls] = name
    assert set(seen) == set(every_exp.EXP_CLASSES)
    assert set(mc.SOAC_HANDLERS) == set(every_exp.ir.SOACS)
    assert set(gpu.SOAC_HANDLERS) <= set(seen)      # a gpu rule that declines has a fallback


def test_default_rules_hold_every_family_in_precedence_order():
    rules = lower.default_rules()
    assert rules.rules["gpu"] == gpu.SOAC_HANDLERS and rules.rules["mc"] == mc.SOAC_HANDLERS
    assert rules.rules["mc_host"] == mc.HOST_HANDLERS
    assert rules.candidates(every_exp.ir.Map, families_for(gpu_target(256, 32768, False), False)) \
        == [gpu.SOAC_HANDLERS[every_exp.ir.Map], mc.SOAC_HANDLERS[every_exp.ir.Map]]
    # inside a parallel loop no target family's rule is tried; on the
    # multicore target, its host-level rules and no gpu rule
    assert families_for(gpu_target(256, 32768, False), True) == ("common", "mc")
    assert families_for(MULTICORE, True) == ("common", "mc")
    assert families_for(MULTICORE, False) == ("mc_host", "common", "mc")
    t = every_exp.ir.Transpose
    assert rules.candidates(t, ("gpu", "common", "mc")) == [gpu.SOAC_HANDLERS[t],
                                                           lower_arrays.HANDLERS[t]]
    assert rules.candidates(t, families_for(MULTICORE, False)) == [mc.HOST_HANDLERS[t],
                                                                  lower_arrays.HANDLERS[t]]


@pytest.mark.parametrize("par_min", [1, 1 << 15], ids=["parallel", "sequential"])
def test_every_class_lowers_and_runs_like_the_interpreter(par_min):
    p = every_exp.program()
    check_program(p)
    module = lower.lower_program(p, lower.Options(par_min=par_min))
    K.check_module(module)
    want = run_entry(p, "every", every_exp.args())
    got = KirModule(module, p, p.entries, "every.py").call("every", every_exp.args())
    assert len(got) == len(want) == 24
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.shape(g) == np.shape(w)
        assert np.array_equal(g, w), (g, w)
