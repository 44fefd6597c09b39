"""A perfect map nest over rows of width 0 still runs the outer function for
every row, as Python mode does: zipped rows of different lengths raise
ShapeError even when there are no elements (mc/segmap.py's tiled nest,
gpu/segmap.py's flat nest)."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.errors import ShapeError
from pyshark.wrapper import registry

SRC = textwrap.dedent('''
    import pyshark.prelude as ps

    @ps.entry
    def add2(a: ps.Array[ps.Array[ps.f32]], b: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
        return ps.map(lambda r, s: ps.map(lambda x, y: x + y, r, s), a, b)
''')

BACKENDS = [b for b in ("python", "cpu", "kir", "opencl") if b in registry.available_backends()]


@pytest.fixture(scope="module")
def module_path(tmp_path_factory):
    p = tmp_path_factory.mktemp("empty_rows") / "add2.py"
    p.write_text(SRC)
    return p


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shapes", [((3, 0), (3, 5)), ((3, 5), (3, 0)), ((1, 0), (1, 1))])
def test_rows_of_different_lengths_raise_with_no_elements(module_path, backend, shapes):
    w = Wrapper(backend=backend)
    w.add_source_file(str(module_path))
    m = w.compile_and_load()
    a, b = (np.zeros(s, np.float32) for s in shapes)
    with pytest.raises(ShapeError):
        m.add2(a, b)


def _load(path, backend):
    w = Wrapper(backend=backend)
    w.add_source_file(str(path))
    return w.compile_and_load()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(3, 0), (0, 0), (0, 4), (2, 3)])
def test_rows_of_one_length_work(module_path, backend, shape):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    got = np.asarray(_load(module_path, backend).add2(a, a))
    want = np.asarray(_load(module_path, "python").add2(a, a))
    assert got.shape == want.shape and np.array_equal(got, want)
