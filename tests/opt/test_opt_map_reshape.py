"""simplify's map-of-reshape rule: `map(\\row -> reshape(shape, row), xs)`
with a shape free of the row becomes one `reshape((w, *shape), xs)`
(simplify.map_of_reshape). flatten makes such maps of a tabulate of
tabulate_2d (crystal's frames), which the GPU copied row by row in a ParFor
of one work-item per frame. Compared with the interpreter before the rule
(values and exception classes: wrong sizes, negative sizes, no rows), and on
every backend with Python mode."""
from __future__ import annotations

import numpy as np
import pytest

from opt_build import check_same
from pyshark import Wrapper
from pyshark.codegen.pipeline import PASSES, optimise
from pyshark.codegen.target import gpu_target
from pyshark.core import ir
from pyshark.core.traverse import iter_stms
from pyshark.translate import translate_source
from pyshark.wrapper import available_backends

SRC = '''
import pyshark.prelude as ps
F3 = ps.Array[ps.Array[ps.Array[ps.f32]]]


@ps.entry
def rows(xss: ps.Array[ps.Array[ps.f32]], a: int, b: int) -> F3:
    return ps.map(lambda r: ps.unflatten(a, b, r), xss)


@ps.entry
def frames(n: int, f: int) -> F3:
    # crystal's shape: a tabulate of tabulate_2d
    return ps.tabulate(n, lambda s: ps.tabulate_2d(f, f, lambda y, x: ps.f32(s * 100 + y * f + x)))


@ps.entry
def reads_row(xss: ps.Array[ps.Array[ps.f32]], b: int) -> F3:
    # the shape depends on the row: stays a map
    return ps.map(lambda r: ps.unflatten(len(r) // b, b, r), xss)
'''

GPU = gpu_target(256, 32768, False)
NO_SIMPLIFY = [(n, f) for n, f in PASSES if not n.startswith("simplify")]


def _maps_of_reshape(program: ir.Program, name: str) -> int:
    return sum(1 for s in iter_stms(program.functions[name].body)
               if isinstance(s.exp, ir.Map) and len(s.exp.lam.body.stms) == 1
               and isinstance(s.exp.lam.body.stms[0].exp, ir.Reshape))


@pytest.fixture(scope="module")
def program():
    return translate_source(SRC, "map_reshape_cases.py")


def test_the_map_becomes_one_reshape(program):
    before = optimise(program, passes=NO_SIMPLIFY)
    after = optimise(program)
    assert _maps_of_reshape(before, "rows") == 1
    assert _maps_of_reshape(after, "rows") == 0
    top = [s.exp for s in after.functions["rows"].body.stms]
    assert not any(isinstance(e, ir.Map) for e in top)
    assert sum(isinstance(e, ir.Reshape) and len(e.shape) == 3 for e in top) == 1


def test_flattens_frames_lose_their_row_copies(program):
    """On the gpu pipeline flatten distributes frames' outer map; what is
    left of the tabulate_2d per frame is one reshape, not a map of them."""
    after = optimise(program, check=True, target=GPU)
    assert _maps_of_reshape(after, "frames") == 0


def test_the_row_dependent_shape_stays(program):
    assert _maps_of_reshape(optimise(program), "reads_row") == 0     # not a lone reshape
    assert any(isinstance(s.exp, ir.Map) for s in optimise(program).functions["reads_row"].body.stms)


def _grid(n, m):
    return np.arange(n * m, dtype=np.float32).reshape(n, m)


ROWS = [(_grid(n, m), a, b) for n, m in ((0, 6), (0, 0), (1, 6), (3, 6), (2, 0))
        for a, b in ((2, 3), (3, 2), (6, 1), (4, 2), (-1, -6), (0, 5), (5, 0), (0, 0))]


@pytest.mark.parametrize("args", ROWS, ids=lambda a: f"{a[0].shape}-{a[1]}x{a[2]}")
def test_the_interpreter_agrees(program, args):
    check_same(optimise(program, passes=NO_SIMPLIFY), optimise(program), "rows", args)


@pytest.mark.parametrize("n, f", [(0, 3), (1, 3), (2, 3), (3, 0), (-1, 2), (2, -1)])
def test_frames_agree_on_the_gpu_pipeline(program, n, f):
    check_same(optimise(program, passes=NO_SIMPLIFY), optimise(program, target=GPU), "frames",
               (n, f))


@pytest.fixture(scope="module")
def wrappers(tmp_path_factory):
    d = tmp_path_factory.mktemp("map_reshape")
    src = d / "map_reshape_mod.py"
    src.write_text(SRC)
    return {b: Wrapper(b, cache_dir=d / "cache").add_source_file(src).compile_and_load()
            for b in ("python", "cpu", "opencl") if b in available_backends() or b == "python"}


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_backends_agree_with_python_mode(wrappers, backend):
    if backend not in wrappers:
        pytest.skip(f"{backend} unavailable")
    py, w = wrappers["python"], wrappers[backend]
    for xss, a, b in ROWS:
        for f in (py, w):
            try:
                r = ("ok", np.asarray(f.rows(xss, a, b)))
            except Exception as exc:            # the class must agree
                r = ("raise", type(exc).__name__)
            if f is py:
                want = r
        assert want[0] == r[0], (xss.shape, a, b, want, r)
        if r[0] == "ok":
            assert want[1].shape == r[1].shape, (xss.shape, a, b)
            np.testing.assert_array_equal(want[1], r[1])
        else:
            assert want[1] == r[1]
    for n, f in ((0, 3), (1, 3), (2, 5), (3, 0), (2, 181)):
        np.testing.assert_array_equal(np.asarray(w.frames(n, f)), np.asarray(py.frames(n, f)))
