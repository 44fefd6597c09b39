"""Translator fuzz test: mutated conformance modules (and reject programs)
either translate or give a located CompileError, never another exception or
an "internal error".

A small fixed-seed sample runs in CI; for a deeper run set
PYSHARK_FUZZ_EXAMPLES (e.g. 5000) and optionally PYSHARK_FUZZ_SEED.
"""
from __future__ import annotations

import os
import random

import pytest

from conformance_run import CONFORMANCE
from translate_fuzz import mutate, outcome

EXAMPLES = int(os.environ.get("PYSHARK_FUZZ_EXAMPLES", "60"))
SEED = int(os.environ.get("PYSHARK_FUZZ_SEED", "20240905"))
MODULES = sorted(CONFORMANCE.glob("*.py"))
REJECTS = sorted((CONFORMANCE / "reject").glob("*.py"))
SOURCES = MODULES + REJECTS


def pick_source(rng: random.Random):
    """Mostly conformance modules (they translate, so a mutation reaches deep
    into the translator), sometimes a reject program."""
    return rng.choice(REJECTS if rng.random() < 0.2 else MODULES)


def test_sources_present():
    assert len(SOURCES) >= 30


def test_mutations_translate_or_give_located_compile_errors():
    rng = random.Random(SEED)
    texts = {p: p.read_text() for p in SOURCES}
    failures = []
    for k in range(EXAMPLES):
        path = pick_source(rng)
        what, src = mutate(texts[path], rng, rounds=rng.choice((1, 1, 2, 3)))
        bad = outcome(src, f"{path.stem}_fuzz.py")
        if bad:
            failures.append(f"example {k} ({path.name}: {what}):\n{bad}")
            if len(failures) >= 5:
                break
    assert not failures, f"seed {SEED}:\n\n" + "\n\n".join(failures)


def test_mutator_changes_the_source():
    rng = random.Random(1)
    text = (CONFORMANCE / "ops_int.py").read_text()
    changed = sum(mutate(text, rng)[1] != text for _ in range(20))
    assert changed >= 15


@pytest.mark.parametrize("src", [
    "import pyshark.prelude as ps\n@ps.entry\ndef f(x: int) -> int:\n    return x +\n",
    "import pyshark.prelude as ps\n@ps.entry\ndef f(x: int) -> int:\n  return x\n   y = 1\n",
    "\x00",
])
def test_broken_syntax_is_a_located_compile_error(src):
    assert outcome(src) is None
