"""Compile one test source in Python mode and on a compiled backend (for
fixtures that compare the two); shared by the lowering tests."""
from __future__ import annotations

import textwrap

import pytest

from pyshark import Wrapper
from pyshark.wrapper.registry import available_backends


def python_and(backend: str, source: str, tmp_path_factory, name: str) -> list:
    """[python module, `backend` module] of `source`, or skip when the
    backend is not available here."""
    if backend not in available_backends():
        pytest.skip(f"{backend} unavailable")
    d = tmp_path_factory.mktemp(name)
    src = d / f"{name}.py"
    src.write_text(textwrap.dedent(source))
    out = []
    for b in ("python", backend):
        w = Wrapper(b, cache_dir=d / "cache")
        w.add_source_file(src)
        out.append(w.compile_and_load())
    return out


#: a loop that allocates a fresh array per step and frees the last one; its
#: initial value is the caller's array (read in place, copied only when no
#: step runs) and its result is handed over (the heap's reuse:
#: cpu/test_backend.py; the team's copies: test_parallel_copy.py)
STEP_LOOP = """
import pyshark.prelude as ps

@ps.entry
def steps(k: int, xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    for _ in range(k):
        xs = ps.map(lambda x: x * 0.5 + 1.0, xs)
    return xs
"""
