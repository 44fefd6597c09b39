"""The conformance corpus as test data for the passes: each module translated
once, its cases' arguments flattened once, its baseline outcomes (the core
interpreter on the translated program) computed once, all cached per session.

Modules that do not translate today are reported as skips; cases whose
arguments the wrapper cannot convert (irregular nested lists) are left out.
Only the inputs of a case matter here: a pass must not change what the
interpreter computes, whatever the expected value says.
"""
from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import numpy as np

from pyshark import testing
from pyshark.core.empty_shapes import derive_empty_shapes
from pyshark.core.interp import run_entry
from pyshark.translate import translate_file
from pyshark.wrapper import convert

CONFORMANCE = testing.conformance_dir()
MODULES = {m.stem: m for m in testing.find_modules(CONFORMANCE)} if CONFORMANCE.is_dir() else {}


@functools.cache
def translated(stem: str):
    """(program, None) or (None, why it does not translate). The program is
    what the core backend runs: translated, with its empty maps' dimensions
    (pyshark/core/empty_shapes.py), which the interpreter's results depend on."""
    try:
        return derive_empty_shapes(translate_file(str(MODULES[stem]))), None
    except Exception as exc:       # noqa: BLE001 -- a skip, with the reason
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"


def _raw_cases(path: Path) -> list[tuple[str, list]]:
    try:
        return [(c.entry, c.args) for c in testing.load_cases(path)]
    except ValueError:             # a case the runner does not accept yet: inputs only
        raw = list(testing.embedded_cases(path.read_text(), str(path)))
        jp = path.with_name(path.stem + ".cases.json")
        if jp.is_file():
            data = json.loads(jp.read_text())
            raw += data["cases"] if isinstance(data, dict) else data
        return [(c["entry"], c["args"]) for c in raw if "entry" in c and "args" in c]


@functools.cache
def cases(stem: str) -> tuple:
    """(entry, flat core arguments) for every case of the module that converts."""
    program, _ = translated(stem)
    out = []
    for entry, args in _raw_cases(MODULES[stem]):
        e = program.entries.get(entry)
        if e is None or len(args) != len(e.params):
            continue
        try:
            flat = [x for p, a in zip(e.params, args)
                    for x in convert.flatten_value(
                        p.stype, convert.convert_arg(p.stype, copy.deepcopy(a), p.name))]
        except Exception:          # noqa: BLE001 -- not an input a compiled entry sees
            continue
        out.append((entry, flat))
    return tuple(out)


def outcome(program, entry: str, flat: list):
    try:
        return ("ok", run_entry(program, entry, [np.copy(a) for a in flat]))
    except Exception as exc:       # noqa: BLE001 -- the class is the outcome
        return ("raise", type(exc))


@functools.cache
def baseline(stem: str) -> tuple:
    program, _ = translated(stem)
    return tuple(outcome(program, e, flat) for e, flat in cases(stem))


def differences(stem: str, program) -> list[str]:
    """The cases on which program's outcome differs from the translated one's."""
    from opt_build import same_outcome
    out = []
    for (entry, flat), want in zip(cases(stem), baseline(stem)):
        got = outcome(program, entry, flat)
        if not same_outcome(got, want):
            out.append(f"{entry}{[np.asarray(a).tolist() for a in flat]}: "
                       f"translated gives {want}, optimised gives {got}")
    return out
