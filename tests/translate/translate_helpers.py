"""Compile a snippet, run an entry in the core interpreter, or expect a
located CompileError at a given line."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from conformance_run import flatten_arg, rebuild_result
from pyshark.errors import CompileError
from pyshark.translate import translate_source

HEADER = "import pyshark.prelude as ps\nfrom typing import NamedTuple\n"


def compile_src(body: str):
    return translate_source(HEADER + textwrap.dedent(body), "snippet.py")


def run(body: str, entry: str, *args):
    """The entry's result as nested Python/numpy values."""
    from pyshark.core.interp import run_entry
    prog = compile_src(body)
    e = prog.entries[entry]
    flat = [a for v, p in zip(args, e.params) for a in flatten_arg(v, p.stype)]
    with np.errstate(all="ignore"):
        out = run_entry(prog, entry, flat)
    return rebuild_result(out, e.ret)


def reject(body: str, line_mark: str = "# <-", contains: str = "") -> CompileError:
    """Expects a CompileError at the line ending with `# <-` (snippet lines)."""
    text = HEADER + textwrap.dedent(body)
    lines = text.splitlines()
    marked = [i + 1 for i, ln in enumerate(lines) if ln.rstrip().endswith(line_mark)]
    with pytest.raises(CompileError) as info:
        translate_source(text, "snippet.py")
    err = info.value
    if marked:
        assert err.line == marked[0], f"error at line {err.line}, expected {marked[0]}:\n{err}"
    rendered = str(err)
    assert f"snippet.py:{err.line}:{err.col + 1}" in rendered
    assert "^" in rendered
    if contains:
        assert contains in rendered, rendered
    return err
