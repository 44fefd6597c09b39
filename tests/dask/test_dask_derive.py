"""derive.py: the combine and offset programs built from an entry's own
operator type check and compute what the reduction, scan or histogram of
the whole computes (run here in the core IR interpreter; no Dask)."""
from __future__ import annotations

import numpy as np
import pytest

from pyshark.core.check import check_program
from pyshark.core.interp import run_entry
from pyshark.dask import derive
from pyshark.dask.plan import analyse, prepare
from pyshark.translate import translate_source

from conftest import KERNELS


@pytest.fixture(scope="module")
def program():
    return prepare(translate_source(KERNELS.read_text(), str(KERNELS)))


def _run(prog, args):
    (name,) = prog.entries
    check_program(prog)
    out = run_entry(prog, name, args)
    return out if isinstance(out, (list, tuple)) else [out]


def test_combine_of_a_sum(program):
    prog = derive.combine_program(analyse(program, "dot"))
    parts = np.array([1.5, -2.0, 4.25])
    assert _run(prog, [parts])[0] == pytest.approx(3.75)
    assert _run(prog, [parts[:0]])[0] == 0.0          # no partials: the neutral element


def test_combine_keeps_the_order_of_a_non_commutative_operator(program):
    plan = analyse(program, "compose")
    prog = derive.combine_program(plan)
    p = 1000003
    a = np.array([3, 5, 7], dtype=np.int64)
    b = np.array([11, 13, 17], dtype=np.int64)
    ra, rb = _run(prog, [a, b])
    # ((x*3+11)*5+13)*7+17
    assert (int(ra), int(rb)) == ((3 * 5 * 7) % p, ((11 * 5 + 13) * 7 + 17) % p)


def test_combine_of_histograms_is_element_wise(program):
    prog = derive.combine_program(analyse(program, "count_max"))
    counts = np.array([[1, 0, 2], [3, 1, 0]], dtype=np.int64)
    maxes = np.array([[5, -9, 2], [1, 7, -3]], dtype=np.int32)
    c, m = _run(prog, [counts, maxes])
    assert list(c) == [4, 1, 2] and list(m) == [5, 7, 2]


def test_offset_of_a_scan(program):
    prog = derive.offset_program(analyse(program, "prefix"))
    (out,) = _run(prog, [np.int64(10), np.array([1, 3, 6], dtype=np.int64)])
    assert list(out) == [11, 13, 16]
    prog = derive.offset_program(analyse(program, "running_max"))
    (out,) = _run(prog, [np.float64(2.5), np.array([1.0, 3.0, 3.0])])   # a scanned chunk
    assert list(out) == [2.5, 3.0, 3.0]


def test_names_stay_unique(program):
    prog = derive.offset_program(analyse(program, "affine_scan"))
    fun = next(iter(prog.functions.values()))
    from pyshark.core.traverse import binder_vars
    names = [v.name for v in binder_vars(fun)]
    assert len(names) == len(set(names))


def test_a_map_has_no_combine(program):
    with pytest.raises(ValueError, match="no combine"):
        derive.combine_program(analyse(program, "saxpy"))
