"""Every program in <conformance>/reject/ fails with a located CompileError."""
from __future__ import annotations

import re

import pytest

from pyshark import CompileError
from pyshark.testing import conformance_dir
from pyshark.translate import translate_file

REJECT = conformance_dir() / "reject"
FILES = sorted(REJECT.glob("*.py")) if REJECT.is_dir() else []
MARK = "# <- error here"


def test_corpus_present():
    assert FILES, f"no reject programs found in {REJECT} (set PYSHARK_CONFORMANCE)"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_rejected_at_marked_line(path):
    lines = path.read_text().splitlines()
    marked = [i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(MARK)]
    assert len(marked) == 1, f"{path.name} must have exactly one '{MARK}' line"
    with pytest.raises(CompileError) as info:
        translate_file(str(path))
    err = info.value
    text = str(err)
    assert err.line == marked[0], f"reported at line {err.line}, marked line {marked[0]}:\n{text}"
    assert path.name in text
    assert re.search(rf":{err.line}:{err.col + 1}\b", text), text
    source_line = lines[err.line - 1].strip()
    assert source_line in text, text
    caret = [ln for ln in text.splitlines() if ln.strip() == "^"]
    assert caret, f"no caret line in:\n{text}"
