"""plan.py: which entries partition, as what, and why the others do not
(the structure analysis of the core IR; no Dask needed)."""
from __future__ import annotations

import pytest

from pyshark.dask.plan import NotPartitionable, analyse, prepare
from pyshark.translate import translate_source

from conftest import KERNELS


@pytest.fixture(scope="module")
def program():
    return prepare(translate_source(KERNELS.read_text(), str(KERNELS)))


@pytest.mark.parametrize("name,kind", [
    ("saxpy", "map"), ("split_sign", "map"), ("scale_rows", "map"), ("row_sums", "map"),
    ("inverse", "map"), ("dot", "reduce"), ("largest", "reduce"), ("min_max", "reduce"),
    ("compose", "reduce"), ("scaled_total", "reduce"), ("prefix", "scan"),
    ("running_max", "scan"), ("affine_scan", "scan"), ("histogram", "reduce_by_index"),
    ("count_max", "reduce_by_index"),
])
def test_kind(program, name, kind):
    plan = analyse(program, name)
    assert plan.kind == kind
    assert plan.array_params and plan.explain()


def test_reduction_plan_details(program):
    plan = analyse(program, "scaled_total")
    fun = program.entry_fun("scaled_total")
    # the operator reads no parameter; the map before it reads k (per chunk)
    assert plan.needs == ()
    assert [str(t) for t in plan.acc_types] == ["i64"]
    assert plan.scalar_params == (0,) and plan.array_params == (1,)
    assert plan.op.commutative and fun.params[1].name.startswith("xs")
    plan = analyse(program, "compose")
    assert not plan.op.commutative and len(plan.acc_types) == 2


@pytest.mark.parametrize("name,says,line", [
    ("smooth", "reads the whole array 'xs'", "map_overlap"),
    ("mean", "length (len(...)) as a value", "pass the length as a scalar parameter"),
    ("positives", "filter keeps a data-dependent number of rows", "x[mask]"),
    ("weighted_by_position", "over the arrays' indices", "zip them"),
    ("add_into", "not a fresh replicate of its neutral element", "replicate(m, ne)"),
    ("sum_and_max", "not one map, one reduction", "one entry per partitioned step"),
])
def test_not_partitionable_says_why(program, name, says, line):
    with pytest.raises(NotPartitionable) as info:
        analyse(program, name)
    msg = str(info.value)
    assert f"entry {name!r}" in msg and says in msg and line in msg
    assert "kernels.py:" in msg          # located in the user's source


def test_scalar_only_entry_is_refused():
    src = ("import pyshark.prelude as ps\n@ps.entry\ndef f(n: ps.i64) -> ps.Array[ps.i64]:\n"
           "    return ps.iota(n)\n")
    prog = prepare(translate_source(src, "scalar_only.py"))
    with pytest.raises(NotPartitionable, match="no array parameter"):
        analyse(prog, "f")


def test_tuple_array_parameter_is_refused():
    src = ("import pyshark.prelude as ps\n@ps.entry\n"
           "def f(ps_: ps.Array[tuple[ps.i64, ps.f32]]) -> ps.Array[ps.i64]:\n"
           "    return ps.map(lambda p: p[0], ps_)\n")
    prog = prepare(translate_source(src, "tuple_param.py"))
    with pytest.raises(NotPartitionable, match="each field"):
        analyse(prog, "f")
