"""The user-shaped programs of scripts/shapes_probe (issue 17's losing
shapes, written as a Python user would) agree with Python mode on every
available backend, at a few elements and at sizes odd for every vector width.
Two of them found golden-rule breaks in session 36: the split's wrapped
bound for ps.u64 of a loop index (asian_option) and builtin min of a float
array with NaN (blur_normalise's stretch)."""
from __future__ import annotations

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

from scripts.shapes_probe.cases import NAMES, inputs

PROGRAMS = "scripts/shapes_probe/programs.py"
COMPILED = [b for b in available_backends() if b not in ("python", "core")]


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    from pathlib import Path
    src = Path(__file__).resolve().parent.parent / PROGRAMS
    out = {}
    for b in ["python"] + COMPILED:
        w = Wrapper(b, cache_dir=tmp_path_factory.mktemp(f"shapes_{b}"))
        w.add_source_file(src)
        out[b] = w.compile_and_load()
    return out


@pytest.mark.parametrize("scale", [1e-4, 3e-3])
@pytest.mark.parametrize("name", NAMES)
def test_user_shaped_programs_agree_with_python_mode(modules, name, scale):
    args = inputs(name, scale, np.random.default_rng(len(name)))
    want = getattr(modules["python"], name)(*args)
    for b in COMPILED:
        assert_close(getattr(modules[b], name)(*args), want)


def test_an_image_with_nan_keeps_pythons_min_and_max(modules):
    img = np.random.default_rng(5).random((9, 7), dtype=np.float32)
    img[4, 3] = np.nan                  # ps.minimum of its row is NaN; min over rows skips it
    want = modules["python"].blur_normalise(img, 1)
    for b in COMPILED:
        assert_close(modules[b].blur_normalise(img, 1), want)
