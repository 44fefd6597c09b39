"""The gpu pipeline's flatten pass (codegen/opt/flatten.py) end to end on the
"opencl" backend against Python mode: maps over a time loop of inner maps
(interchanged), their failing elements (ZeroDivisionError, IndexError,
ShapeError), empty maps, and LocVolCalib's kernel IR: after the pass its
time loop launches ParFors over strikes x grid rows x grid columns instead
of one work-item per strike."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

ROOT = Path(__file__).resolve().parents[3]

SOURCE = '''
import pyshark.prelude as ps


@ps.entry
def steps(xs: ps.Array[ps.f64], n: int, m: int) -> ps.Array[ps.f64]:
    def one(x: ps.f64) -> ps.f64:
        acc = ps.map(lambda i: x * ps.f64(i), ps.iota(m))
        for g in range(n):
            acc = ps.map(lambda a: a * 0.5 + x, acc)
        return ps.sum(acc)
    return ps.map(one, xs)


@ps.entry
def steps_idx(xs: ps.Array[ps.i64], n: int, m: int) -> ps.Array[ps.i64]:
    def one(x: ps.i64) -> ps.i64:
        acc = ps.map(lambda i: x + i, ps.iota(m))
        for g in range(n):
            h = acc[g]
            acc = ps.map(lambda a: a // x + h, acc)
        return acc[0]
    return ps.map(one, xs)


@ps.entry
def grids(xs: ps.Array[ps.f32], n: int, r: int, c: int) -> ps.Array[ps.Array[ps.Array[ps.f32]]]:
    def one(x: ps.f32) -> ps.Array[ps.Array[ps.f32]]:
        g0 = ps.tabulate_2d(r, c, lambda i, j: x * ps.f32(i) + ps.f32(j))
        for t in range(n):
            g0 = ps.map(lambda row: ps.map(lambda v: v * 0.5 + x, row), g0)
            g0 = ps.transpose(ps.map(lambda col: ps.map(lambda v: v - 1.0, col),
                                     ps.transpose(g0)))
        return g0
    return ps.map(one, xs)
'''

F64 = np.float64


def _i64(*xs):
    return np.array(xs, np.int64)


CASES = {
    "steps": [[np.array([1.0, -2.0, 0.5]), 3, 4], [np.zeros(0), 3, 4],
              [np.array([1.0]), 0, 0], [np.array([1.0, 2.0]), 2, -1]],
    "steps_idx": [[_i64(1, 2, 3), 2, 3], [_i64(1, 0, 3), 2, 3], [_i64(1, 2), 5, 3],
                  [_i64(0, 2), 5, 3], [_i64(), 5, -3], [_i64(2), 5, -3]],
    # (r = 0 is left out: an empty 2-D tabulate inside a map has shape (1, 0, 3)
    # compiled and (1, 0, 0) in Python mode on cpu and opencl alike, with or
    # without this pass)
    "grids": [[np.array([1.0, 2.0, -1.0], np.float32), 3, 5, 7],
              [np.zeros(0, np.float32), 3, 5, 7], [np.array([1.0], np.float32), 2, 1, 3],
              [np.array([1.0, 3.0], np.float32), 2, 4, -1]],
}

pytestmark = pytest.mark.skipif("opencl" not in available_backends(),
                                reason="no OpenCL device")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    p = tmp_path_factory.mktemp("gflat") / "gflat.py"
    p.write_text(SOURCE)
    return str(p)


@lru_cache(maxsize=None)
def _wrapper(path: str, backend: str):
    # the pass is off on devices unless PYSHARK_OPENCL_FLATTEN=1 (the target
    # record carries it, so it is part of the cache key)
    mp = pytest.MonkeyPatch()
    mp.setenv("PYSHARK_OPENCL_FLATTEN", "1")
    try:
        w = Wrapper(backend=backend)
        w.add_source_file(path)
        w.compile_and_load()
    finally:
        mp.undo()
    return w


def _run(w, entry, args):
    try:
        return ("ok", w.invoke(entry, *args))
    except Exception as exc:      # noqa: BLE001 -- the class is the outcome
        return ("raise", type(exc))


@pytest.mark.parametrize("entry,k", [(e, k) for e, cs in CASES.items() for k in range(len(cs))])
def test_opencl_agrees_with_python(source, entry, k):
    args = CASES[entry][k]
    want = _run(_wrapper(source, "python"), entry, args)
    got = _run(_wrapper(source, "opencl"), entry, args)
    assert got[0] == want[0], f"{entry}{args}: python {want}, opencl {got}"
    if want[0] == "raise":
        assert got[1] is want[1]
    else:
        assert np.shape(got[1]) == np.shape(want[1])
        assert_close(got[1], want[1])


def _parfors(program_path: str, gpu: bool):
    from pyshark.codegen import kir as K
    from pyshark.codegen import pipeline
    from pyshark.codegen.stages import build_kernels
    from pyshark.codegen.target import gpu_target
    from pyshark.core.check import check_program
    from pyshark.translate import translate_file
    from pyshark.wrapper.backend import Options
    p = translate_file(program_path)
    check_program(p)
    saved = pipeline.GPU_PASSES
    if not gpu:
        pipeline.GPU_PASSES = []
    try:
        m = build_kernels(p, Options(), target=gpu_target(256, 32768, False),
                          until="hoist-allocations")
    finally:
        pipeline.GPU_PASSES = saved
    return K.pretty_module(m)


def test_locvolcalib_parfors():
    """Before the pass: one ParFor over the strikes (each work-item runs the
    whole time loop). After: inside the time loop, ParFors over outer *
    num_y * num_x."""
    path = str(ROOT / "benchmarks/programs/locvolcalib.py")

    def fshark_entry(text):          # the module also has locvolcalib_outside
        return text.split("entry pyshark_locvolcalib(", 1)[1].split("\nentry ", 1)[0]
    before = fshark_entry(_parfors(path, gpu=False))
    assert len(re.findall(r"\bparfor\b", before)) <= 2
    after = fshark_entry(_parfors(path, gpu=True))
    sizes = dict(re.findall(r"(tot_\d+): i64 = (.*)", after))
    three_d = [n for n, e in sizes.items()
               if "in_outer_1" in e and "in_num_y_3" in e and "in_num_x_2" in e]
    assert len(three_d) >= 2, after[:2000]
    assert any(re.search(rf"parfor \w+ in 0\.\.{n}\b", after) for n in three_d)
