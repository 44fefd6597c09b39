"""The flatten -> run -> unflatten path every compiled backend shares
(convert.FlatCall / call_flat): its fast-path decisions, and the corner
cases of flattening (one-element tuples and one-field records) giving the
same result on every backend."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.core import ir
from pyshark.core.types import F64, I64, SArray, SRecord, SScalar, STuple
from pyshark.testing import assert_close
from pyshark.wrapper import available_backends, convert

KERNELS = Path(__file__).parent / "kernels" / "flat_call_kernels.py"
BACKENDS = list(available_backends())


def entry(params, ret) -> ir.Entry:
    return ir.Entry("e", tuple(ir.EntryParam(f"p{i}", st) for i, st in enumerate(params)), ret)


def test_fast_paths_are_decided_by_the_surface_types():
    i64, f64 = SScalar(I64), SScalar(F64)
    flat = convert.FlatCall(entry([i64, SArray(f64)], i64))
    assert flat.flat_params and flat.scalar_result
    one = convert.FlatCall(entry([STuple((i64,))], STuple((i64,))))
    assert not one.flat_params and not one.scalar_result      # one flat value, not a leaf
    rec = SRecord("R", (("v", i64),))
    assert not convert.FlatCall(entry([rec], rec)).flat_params
    assert not convert.FlatCall(entry([SArray(rec)], i64)).flat_params


def test_call_flat_flattens_runs_and_rebuilds():
    i64, f64 = SScalar(I64), SScalar(F64)
    e = entry([STuple((i64, STuple((f64,)))), i64], STuple((f64, STuple((i64,)))))
    seen = []

    def run(flat):
        seen.append(flat)
        return [np.float64(1.5), np.int64(7)]
    out = convert.call_flat(e, [(np.int64(1), (np.float64(2.0),)), np.int64(3)], run)
    assert seen == [[np.int64(1), np.float64(2.0), np.int64(3)]]
    assert out == (np.float64(1.5), (np.int64(7),))
    assert type(out[0]) is np.float64 and type(out[1][0]) is np.int64


def test_scalar_results_pass_through_or_are_converted():
    e = entry([SScalar(I64)], SScalar(I64))
    args = [np.int64(4)]
    v = np.int64(9)
    assert convert.call_flat(e, args, lambda flat: [v]) is v          # the fast path
    r = convert.call_flat(e, args, lambda flat: [9])                  # checked, converted
    assert type(r) is np.int64 and r == 9
    with pytest.raises(Exception, match="too many"):
        convert.call_flat(e, args, lambda flat: [v, v])


@pytest.fixture(scope="module")
def wrappers():
    out = {}
    for b in BACKENDS:
        w = Wrapper(backend=b)
        w.add_source_file(KERNELS)
        out[b] = w.compile_and_load()
    return out


@pytest.mark.parametrize("name,args,want", [
    ("one_tuple_result", (3,), (np.int64(4),)),
    ("one_tuple_param", ((3,),), np.int64(4)),
    ("one_field_record_param", ((5,),), np.int32(10)),
    ("nested", ((1, (2.5, 4)), 10), (np.float64(5.0), (np.int64(15),))),
    ("plain", (2, [1.0, 2.0]), np.float64(5.0)),
])
def test_every_backend_flattens_the_corner_cases_alike(wrappers, name, args, want):
    for b, w in wrappers.items():
        got = w.invoke(name, *args)
        assert type(got) is type(want), (b, got)
        assert_close(got, want)


def test_one_field_records_and_arrays_of_records_come_back_as_records(wrappers):
    for b, w in wrappers.items():
        r = w.one_field_record_result(np.int32(6))
        assert type(r).__name__ == "One" and r.v == 7 and type(r.v) is np.int32, b
        pts = w.shifted([(1.0, 2.0), (3.0, 4.0)], 0.5)
        assert pts.dtype.names == ("x", "y"), b
        assert pts["x"].tolist() == [1.5, 3.5] and pts["y"].tolist() == [2.0, 4.0], b


@pytest.mark.skipif("cpu" not in BACKENDS, reason="no cpu backend")
def test_cpu_callers_take_their_fast_paths_from_flat_call(wrappers):
    w = wrappers["cpu"]
    callers = {}
    for name in ("plain", "one_tuple_param", "one_tuple_result"):
        module, _ = w._entries[name]
        callers[name] = module.callers[name]
    assert callers["plain"].flat_params and callers["plain"].simple_result
    assert not callers["one_tuple_param"].flat_params
    assert not callers["one_tuple_result"].simple_result
    assert all(isinstance(c.flat, convert.FlatCall) for c in callers.values())
