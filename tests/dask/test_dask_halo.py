"""Stencils with a stated halo (psd.run(entry, *args, halo=k), issue 19's
map_overlap): across chunkings, chunks smaller than the halo, empty and
one-element chunks, arrays shorter than the halo, the results equal
Python mode on the whole arrays (the entry sees the real ends only in the
first and last chunk); entries a halo cannot help are refused."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import need_dask

need_dask()

import dask  # noqa: E402
import dask.array as da  # noqa: E402

import pyshark.dask as psd  # noqa: E402
from pyshark.dask.graph import halo_chunks  # noqa: E402
from pyshark.errors import ShapeError  # noqa: E402


def _chunkings(n: int, halo: int) -> list[tuple]:
    out = [(n,), (0,) + (1,) * n + (0,)]
    if n > halo:
        out += [(halo, n - halo), (halo + 1,) * (n // (halo + 1)) + (n % (halo + 1),)]
    if n >= 3:
        out.append((1, 0, n - 2, 1))
    return out


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_blur_equals_python_mode(wrappers, backend):
    w, py = wrappers[backend], wrappers["python"]
    entry = psd.partition(w.blur2, halo=2)          # planned once, called per chunking
    for n in (0, 1, 2, 5, 23):
        xs = np.random.default_rng(n).standard_normal(n)
        want = py.blur2(0.5, xs)
        for chunks in _chunkings(n, 2):
            got = entry(0.5, da.from_array(xs, chunks=(chunks,)))
            np.testing.assert_allclose(got.compute(scheduler="sync"), want, rtol=1e-12,
                                       err_msg=f"n={n} chunks={chunks}")


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_rank2_and_tuple_results(wrappers, backend):
    w, py = wrappers[backend], wrappers["python"]
    xss = np.random.default_rng(1).integers(-50, 50, (11, 3))
    xs = xss[:, 0].astype(np.int32)
    diff_rows, step_first = (psd.partition(f, halo=1) for f in (w.diff_rows, w.step_first))
    for chunks in _chunkings(11, 1):
        got = diff_rows(da.from_array(xss, chunks=(chunks, 3)))
        assert np.array_equal(got.compute(scheduler="sync"), py.diff_rows(xss)), chunks
        step, first = dask.compute(*step_first(da.from_array(xs, chunks=(chunks,))),
                                   scheduler="sync")
        want_step, want_first = py.step_first(xs)
        assert np.array_equal(step, want_step) and np.array_equal(first, want_first), chunks


def test_on_the_cluster(cluster, wrappers):
    w = wrappers["cpu"]
    xs = np.random.default_rng(5).standard_normal(1000)
    got = cluster.compute(psd.run(w.blur2, 2.0, da.from_array(xs, chunks=((1, 0, 499, 500),)),
                                  halo=2), sync=True)
    np.testing.assert_allclose(got, wrappers["python"].blur2(2.0, xs), rtol=1e-12)


def test_halo_chunks_follow_dasks_rule():
    assert halo_chunks((5, 5), 2) == (5, 5)
    assert halo_chunks((1, 1), 3) == (2,)          # shorter than the halo: one chunk
    assert halo_chunks((0, 0), 1) == (0,)
    for chunks in [(1,) * 9, (3, 0, 1, 1, 4), (2, 2, 1)]:
        got = halo_chunks(chunks, 2)
        assert sum(got) == sum(chunks) and (len(got) == 1 or min(got) >= 2), (chunks, got)


def test_what_a_halo_cannot_help(wrappers):
    w = wrappers["cpu"]
    assert psd.partition(w.saxpy, halo=3).plan.kind == "map"     # needs none
    with pytest.raises(psd.NotPartitionable, match="reduce"):
        psd.partition(w.dot, halo=1)
    with pytest.raises(psd.NotPartitionable, match="scalar"):
        psd.partition(w.mean, halo=1)
    with pytest.raises(ValueError, match="halo"):
        psd.partition(w.blur2, halo=-1)
    # reach.py: the halo derived from the index expressions
    with pytest.raises(psd.NotPartitionable, match="pass halo=2"):
        psd.partition(w.blur2, halo=1)
    assert psd.partition(w.blur2, halo="auto").plan.halo == 2
    assert psd.partition(w.step_first, halo="auto").plan.halo == 1   # i == 0 counts
    with pytest.raises(psd.NotPartitionable, match="absolute position"):
        psd.partition(w.weighted_by_position, halo=5)
    with pytest.raises(psd.NotPartitionable, match="wraps"):
        psd.partition(w.periodic_diff, halo=1)
    with pytest.raises(psd.NotPartitionable, match="fixed row"):
        psd.partition(w.minus_first, halo=1)
    # a reach read from a parameter: not derived, the stated halo is trusted
    assert "trusted" in psd.partition(w.shifted, halo=3).plan.notes[0]
    with pytest.raises(psd.NotPartitionable, match="auto"):
        psd.partition(w.shifted, halo="auto")
    with pytest.raises(ShapeError):               # a filter's rows are not the chunk's
        psd.run(w.positives, da.from_array(np.array([1, -1, 2], np.int32), chunks=1),
                halo=1).compute(scheduler="sync")
    assert "map_overlap" in psd.explain(w.blur2, halo=2)
    assert "halo=k" in psd.explain(w.blur2)


def _derived_stencils():
    """(module, entry, cases) of every conformance entry the analysis
    refuses alone and whose halo reach.py derives (picked by structure)."""
    from pyshark import testing
    from pyshark.dask.plan import NotPartitionable, analyse, prepare, stencil
    from pyshark.translate import translate_source
    out = []
    for module in testing.find_modules(testing.conformance_dir()):
        try:
            program = prepare(translate_source(module.read_text(), str(module)))
        except Exception:           # a module the corpus expects to fail: not ours
            continue
        cases = testing.load_cases(module)
        for name in program.entries:
            try:
                analyse(program, name)
                continue
            except NotPartitionable:
                pass
            try:
                stencil(program, name, "auto")
            except NotPartitionable:
                continue
            mine = [c for c in cases if c.entry == name]
            if mine:
                out.append(pytest.param(module, name, mine, id=f"{module.stem}::{name}"))
    return out


@pytest.mark.parametrize("module,name,cases", _derived_stencils())
@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_conformance_stencils_equal_python_mode(module, name, cases, backend):
    from pyshark import testing
    from pyshark.wrapper import convert
    w = testing.compiled_wrapper(module, backend)
    entry = psd.partition(w, name, halo="auto")
    checked = 0
    for case in cases:
        reference = testing.run_case(testing.compiled_wrapper(module, "python"), case)
        try:
            canon = convert.bind_args(w.entry(name), list(case.args), {})
        except Exception:
            continue
        n = canon[entry.plan.array_params[0]].shape[0]
        for chunks in _chunkings(n, entry.plan.halo):
            args = [da.from_array(a, chunks=(chunks,) + a.shape[1:])
                    if i in entry.plan.array_params else a for i, a in enumerate(canon)]
            try:
                outcome = testing.Outcome(value=entry(*args).compute(scheduler="sync"))
            except Exception as exc:
                outcome = testing.Outcome(error=exc)
            msg = testing.check_against_python(outcome, reference)
            assert msg is None, f"{case.id} chunks={chunks}: {msg}"
            checked += 1
    assert checked
