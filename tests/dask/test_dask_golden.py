"""The golden rule across chunkings: every partitionable conformance entry
(picked by its structure: plan.analyse, not by name), run through
pyshark.dask on the LocalCluster with the cpu backend and in Python mode,
equals Python mode on the whole arrays (floats within the reduction
tolerance, errors of the same class), for chunkings that split anywhere,
including empty and one-element chunks."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import need_dask

need_dask()

import dask.array as da  # noqa: E402

import pyshark.dask as psd  # noqa: E402
from pyshark import testing  # noqa: E402
from pyshark.dask.plan import NotPartitionable, analyse, prepare  # noqa: E402
from pyshark.translate import translate_source  # noqa: E402
from pyshark.wrapper import convert  # noqa: E402


def _partitionable():
    """(module, entry, cases) of every partitionable conformance entry."""
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
            except NotPartitionable:
                continue
            mine = [c for c in cases if c.entry == name]
            if mine:
                out.append(pytest.param(module, name, mine, id=f"{module.stem}::{name}"))
    return out


def _chunkings(n: int) -> list[tuple]:
    """One chunk; an empty and a one-element chunk in front; one element per
    chunk (up to 12) with empty chunks between; a split of its own."""
    out = [(n,)]
    if n >= 1:
        out.append((0, 1, n - 1, 0))
    if 1 <= n <= 12:
        out.append(sum(((1, 0) for _ in range(n)), ()))
    if n >= 3:
        out.append((n // 3, 0, n - n // 3))
    return out


@pytest.mark.parametrize("module,name,cases", _partitionable())
@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_partitioned_equals_python_mode(cluster, module, name, cases, backend):
    w = testing.compiled_wrapper(module, backend)
    entry = psd.partition(w, name)
    ir_entry = w.entry(name)
    checked = 0
    floats_reassociated = entry.plan.kind != "map" and any(
        t.is_float for t in entry.plan.acc_types)
    for case in cases:
        reference = testing.run_case(testing.compiled_wrapper(module, "python"), case)
        try:
            canon = convert.bind_args(ir_entry, list(case.args), {})
        except Exception:
            continue                # not an array of scalars (Python mode's error)
        arrays = [a for a, i in zip(canon, range(len(canon))) if i in entry.plan.array_params]
        n = arrays[0].shape[0]
        if any(a.shape[0] != n for a in arrays):
            continue                # the lengths differ: refused before any graph
        for chunks in _chunkings(n):
            args = [da.from_array(a, chunks=(chunks,) + a.shape[1:])
                    if i in entry.plan.array_params else a for i, a in enumerate(canon)]
            try:
                out = entry(*args)
                value = cluster.compute(list(out) if isinstance(out, tuple) else out,
                                        sync=True)
                outcome = testing.Outcome(value=tuple(value) if isinstance(out, tuple)
                                          else value)
            except Exception as exc:
                outcome = testing.Outcome(error=exc)
            msg = testing.check_against_python(outcome, reference)
            if msg is not None and floats_reassociated:
                # a float reduction is Python mode's only up to reassociation
                # (LANGUAGE.md): with cancellation ([1e30, -1e30, 1.0]) the
                # chunks' association differs from the whole's by more than
                # assert_close's tolerance. Then the reference is Python mode
                # in the same association: per chunk, combined in Dask's tree.
                msg = testing.check_against_python(
                    outcome, _python_chunked(module, name, args, cluster))
            assert msg is None, f"{case.id} chunks={chunks}: {msg}"
            checked += 1
    assert checked or not cases


def _python_chunked(module, name, args, cluster):
    """Python mode under the chunking of `args`: its outcome."""
    entry = psd.partition(testing.compiled_wrapper(module, "python"), name)
    try:
        out = entry(*args)
        value = cluster.compute(list(out) if isinstance(out, tuple) else out, sync=True)
        return testing.Outcome(value=tuple(value) if isinstance(out, tuple) else value)
    except Exception as exc:
        return testing.Outcome(error=exc)

