"""Every pass on its own, every step of the pipeline and the whole pipeline,
on every conformance module that translates: the result passes the core IR
checker and the interpreter computes the same values (bit for bit) or raises
the same exception class on every case's inputs."""
from __future__ import annotations

import functools

import pytest

from opt_corpus import MODULES, differences, translated
from pyshark.codegen.pipeline import PASSES, optimise
from pyshark.core.check import check_program
from pyshark.core.pretty import pretty_program


@functools.cache
def after_step(stem: str, k: int):
    """The program after the first k passes of the pipeline."""
    if k == 0:
        return translated(stem)[0]
    return PASSES[k - 1][1](after_step(stem, k - 1))


# "NAME": the pass alone on the translated program; "K.NAME": the K-th pipeline
# step, on what the steps before it produced (its real input).
VARIANTS = [name for name, _ in PASSES[2:5]] + [f"{k}.{name}" for k, (name, _) in
                                               enumerate(PASSES, 1)]


def program_for(stem: str, variant: str):
    if "." in variant:
        return after_step(stem, int(variant.split(".")[0]))
    return dict(PASSES)[variant](translated(stem)[0])


def test_corpus_found():
    assert len(MODULES) >= 30


@pytest.mark.parametrize("stem", sorted(MODULES))
@pytest.mark.parametrize("variant", VARIANTS)
def test_pass_on_corpus(variant, stem):
    program, why = translated(stem)
    if program is None:
        pytest.skip(f"{stem} does not translate today ({why})")
    after = program_for(stem, variant)
    check_program(after)
    diffs = differences(stem, after)
    assert not diffs, "\n".join(diffs[:5])


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_optimise_checked(stem):
    """optimise(check=True) runs the checker after each pass without complaint,
    and gives what the pipeline's steps give one by one."""
    program, why = translated(stem)
    if program is None:
        pytest.skip(f"{stem} does not translate today ({why})")
    got = pretty_program(optimise(program, check=True))
    assert got == pretty_program(after_step(stem, len(PASSES)))     # text: NaN == NaN
