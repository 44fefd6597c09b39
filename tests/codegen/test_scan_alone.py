"""mc/segscan.py's run-time choice: one sequential pass below par_min or
with NumThreads 1 (reading the input once), else the three phases; both
agree with NumPy's cumsum at and around the threshold, on one thread and
on several."""
from __future__ import annotations

import tempfile
import textwrap

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.codegen import kir as K
from pyshark.codegen.kir_traverse import walk_exprs
from pyshark.codegen.lower import Options, lower_program, symbol
from pyshark.codegen.pipeline import optimise
from pyshark.core.check import check_program
from pyshark.translate import translate_source

SRC = textwrap.dedent('''
    import pyshark.prelude as ps


    @ps.entry
    def cumsum32(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
        return ps.scan(lambda a, b: a + b, ps.i32(0), xs)
''')
PAR_MIN = Options().par_min


def test_the_kernel_chooses_one_pass_or_the_phases_at_run_time():
    program = translate_source(SRC, "<scan>")
    check_program(program)
    m = lower_program(optimise(program, check=True), Options())
    K.check_module(m)
    f = next(f for f in m.functions if f.name == symbol("cumsum32"))
    (choice,) = [s for s in f.body.stms if isinstance(s, K.If)]
    assert any(isinstance(e, K.NumThreads) for e in walk_exprs(choice.cond))
    one = list(K.walk_stms(choice.then))
    assert [type(s) for s in one if isinstance(s, (K.For, K.ParFor))] == [K.For]
    phases = [s for s in K.walk_stms(choice.orelse) if isinstance(s, K.ParFor)]
    assert len(phases) == 2                      # the chunk folds, the chunk rescans


@pytest.mark.parametrize("threads", [1, 2])
def test_one_pass_and_the_phases_agree_with_numpy_around_par_min(threads):
    w = Wrapper("cpu", cache_dir=tempfile.mkdtemp(), tiered=False, num_threads=threads)
    w.add_source(SRC, "scan_alone_src.py")
    w.compile_and_load()
    rng = np.random.default_rng(threads)
    for n in (0, 1, PAR_MIN - 1, PAR_MIN, PAR_MIN + 1, 3 * PAR_MIN + 7):
        xs = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
        np.testing.assert_array_equal(w.cumsum32(xs), np.cumsum(xs, dtype=np.int32))
