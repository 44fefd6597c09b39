"""An empty result keeps its inner dimensions, in Python mode and on every
backend (issue 15 items 6 and 11e; docs/language.md, "Empty results"): the
dimensions are those the function gives for the stand-in element, 0 where
it raises for it. Each case runs in Python mode and on core, cpu, opencl
and kir, and must give the stated shape and Python mode's values; the one
documented edge (a raise caused by a captured array's values) gives what
the docs say."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.errors import ShapeError
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BACKENDS = [b for b in ("core", "cpu", "opencl", "kir") if b in available_backends()]


def f32(*shape, value=0.0):
    return np.full(shape, value, np.float32)


def _load(path: Path, backend: str):
    w = Wrapper(backend)
    w.add_source_file(path)
    return w.compile_and_load()


@pytest.fixture(scope="module")
def modules():
    return {b: _load(HERE / "empty_shapes.py", b) for b in ["python", *BACKENDS]}


@pytest.fixture(scope="module")
def softmax():
    return {b: _load(ROOT / "examples" / "softmax.py", b) for b in ["python", *BACKENDS]}


def _shape(v):
    if isinstance(v, tuple):
        return tuple(_shape(x) for x in v)
    return np.asarray(v).shape


# (entry, arguments, the shape every backend gives)
CASES = [
    ("twice", [f32(0, 64)], (0, 64)),                    # nested map
    ("twice", [f32(3, 0)], (3, 0)),                      # non-empty outer, empty inner
    ("tab", [0], (0, 5)),                                # tabulate of replicate
    ("tab", [2], (2, 5)),
    ("rows", [f32(0, 64)], (0, 128)),                    # concat of the rows
    ("cube", [f32(0, 3, 4)], (0, 3, 4)),                 # 3-D
    ("cube", [f32(2, 0, 4)], (2, 0, 4)),
    ("cube", [f32(0, 0, 4)], (0, 0, 4)),
    ("blocks", [f32(0), 7], (0, 7, 3)),                  # 3-D rows from a captured scalar
    ("blocks", [f32(0), -2], (0, 0, 0)),
    ("turned", [f32(0, 3, 4)], (0, 4, 3)),               # a map of transposes
    ("pairs", [f32(0, 64)], ((0, 64), (0, 3))),          # tuples of arrays
    ("add2", [f32(0, 64), f32(0, 64)], (0, 64)),         # zip-map of two 2-D arrays
    ("add2", [f32(0, 3), f32(0, 5)], (0, 0)),            # rows that differ: raises for the stand-in
    ("rep", [f32(0), 7], (0, 7)),                        # a captured scalar's size
    ("rep", [f32(0), -1], (0, 0)),
    ("cat", [f32(0, 64), f32(3, 64, value=1.0)], (3, 64)),   # item 11e
    ("grid", [0, 4], (0, 4, 3)),                         # tabulate_2d of arrays
    ("grid", [2, 0], (2, 0, 3)),
    ("grid_index", [3, 0], (3, 0, 0)),
    ("grid_index", [0, 3], (0, 3, 0)),
    ("grid_index", [1, 3], (1, 3, 0)),
    ("stepped", [f32(0), 3], (0, 4)),                    # rows from a loop
    ("zeros_kept", [f32(0, 5)], (0, 5)),                 # filter of the stand-in's zeros
    ("by_sum", [f32(0, 5)], (0, 2)),                     # a size from the stand-in's sum (0)
    ("tails", [f32(0, 64)], (0, 63)),                    # slices
    ("evens", [f32(0, 5)], (0, 3)),
    ("matmul", [f32(0, 4), f32(4, 5)], (0, 5)),          # map of map of reduce
    ("firsts", [f32(0, 3, 4)], (0, 4)),
    ("firsts", [f32(0, 0, 4)], (0, 0)),                  # m[0] raises for the stand-in
    ("listed", [f32(0)], (0, 0)),                        # a comprehension: the list []
    ("guarded", [f32(0, 4), f32(1, value=1.0)], (0, 4)),
    ("first_positive", [f32(0, 4)], (0, 0)),             # raises for the stand-in's own 0
    ("over_listed", [f32(0)], (0, 3)),                   # a map over the list []
    ("over_listed", [f32(2, value=1.0)], (2, 5)),
    ("per_width", [np.zeros((0, 4), np.int64)], (0, 3)),
    ("per_width", [np.zeros((0, 0), np.int64)], (0, 0)),  # 12 // 0 raises for the stand-in
    ("after_raise", [f32(0, 0)], (0, 3)),                # fused maps, a stand-in each
    ("after_raise", [f32(0, 5)], (0, 5)),
]


def _id(case):
    name, args, _ = case
    return name + "-" + "-".join(str(np.shape(a)) if np.ndim(a) else str(a) for a in args)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_python_mode_shape(modules, case):
    name, args, shape = case
    assert _shape(modules["python"].invoke(name, *args)) == shape


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_backend_matches_python_mode(modules, backend, case):
    name, args, shape = case
    got = modules[backend].invoke(name, *args)
    want = modules["python"].invoke(name, *args)
    assert _shape(got) == shape
    assert_close(got, want)


@pytest.mark.parametrize("backend", ["python", *BACKENDS])
def test_softmax_of_no_rows_keeps_the_row_width(softmax, backend):
    assert softmax[backend].softmax(f32(0, 64)).shape == (0, 64)
    assert softmax[backend].softmax(f32(0, 0)).shape == (0, 0)     # maximum([]) raises
    with pytest.raises(ShapeError):
        softmax[backend].softmax(f32(3, 0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_raise_from_captured_data_is_the_documented_edge(modules, backend):
    """docs/language.md: where the function raises for the stand-in because
    of a captured array's values, Python mode's rows have 0 dimensions and
    compiled code's the derived ones (it cannot read the data)."""
    args = [f32(0, 4), f32(1, value=-1.0)]
    assert modules["python"].guarded(*args).shape == (0, 0)
    assert modules[backend].guarded(*args).shape == (0, 4)
