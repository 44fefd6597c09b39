"""Every program in conformance/reject is refused at its marked line, with
file:line:col, the source line, a caret and the header's key words."""
from __future__ import annotations

import re

import pytest

from conformance_run import CONFORMANCE
from pyshark.errors import CompileError
from pyshark.translate import translate_file

FILES = sorted((CONFORMANCE / "reject").glob("*.py"))


def test_reject_corpus_present():
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_rejected_at_marked_line(path):
    lines = path.read_text().splitlines()
    marked = [i + 1 for i, ln in enumerate(lines) if ln.rstrip().endswith("# <- error here")]
    with pytest.raises(CompileError) as info:
        translate_file(str(path))
    err = info.value
    text = str(err)
    assert err.line == marked[0], text
    assert f"{path}:{err.line}:{err.col + 1}" in text
    assert lines[err.line - 1].strip() in text
    assert any(ln.strip() == "^" for ln in text.splitlines())
    header = lines[0][len("# reject:"):].strip()
    quoted = re.findall(r"'([^']+)'", header.split(";")[0])
    for q in quoted:
        if q != "*args":
            assert q in text, f"{q!r} not in:\n{text}"
    # the header's first words (the kind of problem) appear in the message
    key = re.findall(r"[a-z]+", header.lower())[:2]
    assert all(k in text.lower() for k in key), f"{key} not in:\n{text}"
