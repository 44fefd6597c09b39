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


# -- the golden rule over every backend (test_golden_rule_late_binding.py, ...) --------

def backend_wrappers(kernels: str, path, backends) -> dict:
    """{backend: loaded Wrapper} of the module text `kernels` written to `path`."""
    from pyshark import Wrapper
    path.write_text(textwrap.dedent(kernels))
    out = {}
    for b in backends:
        w = Wrapper(backend=b)
        w.add_source_file(path)
        out[b] = w.compile_and_load()
    return out


def outcome(w, entry, args):
    """(result, None) or (None, the exception) of one call."""
    import numpy as np
    try:
        with np.errstate(all="ignore"):
            return w.invoke(entry, *args), None
    except Exception as exc:      # noqa: BLE001 -- the exception is the outcome
        return None, exc


def agrees_with_python(wrappers, entry, *args, skip=()):
    """Every backend but those in `skip` gives what Python mode gives (value
    and dtype, or the same exception class); returns Python mode's outcome."""
    from pyshark.testing import assert_close
    want, want_exc = outcome(wrappers["python"], entry, args)
    for b, w in wrappers.items():
        if b in skip:
            continue
        got, exc = outcome(w, entry, args)
        if want_exc is not None:
            assert type(exc) is type(want_exc), f"{b}: {entry} gave {got!r} / {exc!r}, python {want_exc!r}"
        else:
            assert exc is None, f"{b}: {entry} raised {exc!r}"
            assert_close(got, want)
    return want, want_exc
