"""Compile one test source in Python mode and on a compiled backend (for
fixtures that compare the two); shared by the lowering tests."""
from __future__ import annotations

import textwrap

import pytest

from pyshark import Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper.registry import available_backends

#: the cpu backend, its quick tier and the kernel IR interpreter (which checks
#: every access, use after free and double free; tests/conftest.py registers
#: the last two)
CPU_FAMILY = ("cpu", "cpu-quick", "kir")


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


def loaded(src, backends=("python",) + CPU_FAMILY) -> dict:
    """{backend: the source file `src` compiled and loaded on it}."""
    out = {b: Wrapper(b).add_source_file(src) for b in backends}
    for w in out.values():
        w.compile_and_load()
    return out


def agree(mods: dict, entry: str, *args, errors: tuple = ()) -> None:
    """Every backend of `mods` but Python mode gives Python mode's value
    (assert_close), or raises the class Python mode raised, when that is
    one of `errors`."""
    want_exc = want = None
    try:
        want = mods["python"].invoke(entry, *args)
    except errors as exc:
        want_exc = exc
    for b, w in mods.items():
        if b == "python":
            continue
        if want_exc is not None:
            with pytest.raises(type(want_exc)):
                w.invoke(entry, *args)
        else:
            assert_close(w.invoke(entry, *args), want)


def source_file(tmp_path_factory, name: str, text: str):
    """`text` written to a fresh folder as `name`.py (its path)."""
    p = tmp_path_factory.mktemp(name) / f"{name}.py"
    p.write_text(text)
    return p


def host_kernels(src):
    """The kernel IR of the source file `src`, as this host's cpu backend builds it."""
    from pyshark.codegen import stages
    from pyshark.codegen.cpu import link
    from pyshark.wrapper.backend import translate_and_check
    return stages.build_kernels(translate_and_check(src), target=link.host_target())
