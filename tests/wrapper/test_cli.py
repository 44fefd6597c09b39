"""The `pyshark` command line: test, show, build (in-process, plus one real
subprocess to check the installed entry point and exit status)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pyshark.cli import main
from pyshark.testing import conformance_dir
from pyshark.wrapper import Wrapper

KERNELS = Path(__file__).parent / "kernels"
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed(, \d+ skipped)?$", re.M)

WRONG_CASE_MODULE = '''"""A module whose embedded table has one right and one wrong case."""
import pyshark.prelude as ps

__pyshark_cases__ = [
    {"entry": "double", "args": [[1, 2]], "expected": [2, 4]},
    {"entry": "double", "args": [[3]], "expected": [7]},
    {"entry": "double", "args": [[1]], "raises": "IndexError"},
]


@ps.entry
def double(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    return ps.map(lambda x: 2 * x, xs)
'''


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_test_passes_on_a_conformance_module(capsys):
    code, out, _ = run(capsys, "test", str(conformance_dir() / "records.py"))
    m = SUMMARY.search(out)
    assert m, out
    assert code == 0 and int(m.group(1)) > 0 and m.group(2) == "0", out
    assert out.strip().splitlines()[-1] == m.group(0)


def test_test_reports_a_wrong_case_and_exits_1(tmp_path, capsys):
    mod = tmp_path / "wrong.py"
    mod.write_text(WRONG_CASE_MODULE)
    code, out, _ = run(capsys, "test", str(mod), "--backend", "python")
    assert code == 1, out
    assert SUMMARY.search(out).group(0) == "1 passed, 2 failed"
    fails = [ln for ln in out.splitlines() if ln.startswith("FAIL")]
    assert len(fails) == 2 and all("double" in ln and "[python]" in ln for ln in fails)
    assert any("[7]" in ln and "[6]" in ln for ln in fails), out


def test_test_on_a_module_that_does_not_compile(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text(WRONG_CASE_MODULE.replace("return ps.map", "try:\n        pass\n"
                                             "    except ValueError:\n        pass\n    return ps.map"))
    code, out, err = run(capsys, "test", str(bad), "--backend", "python")
    assert code == 1 and "Traceback" not in out + err
    assert "bad.py:" in out and "^" in out


def test_test_on_a_module_without_cases_that_does_not_compile(capsys):
    code, out, err = run(capsys, "test", str(conformance_dir() / "reject" / "mixed_i32_i64.py"))
    assert code == 1 and "Traceback" not in out + err
    assert "mixed_i32_i64.py:10:" in out and "^" in out
    assert SUMMARY.search(out).group(0) == "0 passed, 1 failed"


def test_test_on_a_folder_skips_scripts_that_are_not_kernels(capsys):
    examples = Path(__file__).resolve().parents[2] / "examples"
    code, out, _ = run(capsys, "test", str(examples))
    assert code == 0 and "demo.py" not in out, out
    assert SUMMARY.search(out).group(2) == "0"


def test_test_usage_errors_exit_2(tmp_path, capsys):
    assert run(capsys, "test", str(tmp_path / "missing.py"))[0] == 2
    assert run(capsys, "test", str(KERNELS), "--backend", "no-such")[0] == 2
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


def test_show_prints_core_ir(capsys):
    code, out, _ = run(capsys, "show", str(KERNELS / "wrapper_kernels.py"), "--ir", "core")
    assert code == 0 and "scale" in out and "f32" in out


def test_show_of_a_reject_file_gives_the_located_message(capsys):
    path = conformance_dir() / "reject" / "try_statement.py"
    line = next(i + 1 for i, s in enumerate(path.read_text().splitlines()) if "# <- error here" in s)
    code, out, err = run(capsys, "show", str(path), "--ir", "core")
    assert code == 1 and out == ""
    assert f"try_statement.py:{line}:" in err and "^" in err and "Traceback" not in err


def test_build_then_load(tmp_path, capsys):
    out_dir = tmp_path / "built"
    code, out, _ = run(capsys, "build", str(KERNELS / "wrapper_kernels.py"), "--backend",
                       "python", "-o", str(out_dir))
    assert code == 0 and (out_dir / "manifest.json").is_file(), out
    w = Wrapper.load(out_dir)
    assert list(w.scale(2.0, [1.0])) == [2.0]


def test_build_for_a_backend_not_built_yet_exits_2(tmp_path, capsys):
    from pyshark.wrapper import registry
    registry.register_backend("future", "pyshark.codegen.future.backend:FutureBackend")
    try:
        code, _, err = run(capsys, "build", str(KERNELS / "wrapper_kernels.py"), "--backend",
                           "future", "-o", str(tmp_path / "o"))
    finally:
        registry._BACKENDS.pop("future", None)
    assert code == 2 and "not built" in err


def test_console_entry_point_runs(tmp_path):
    mod = tmp_path / "wrong.py"
    mod.write_text(WRONG_CASE_MODULE)
    proc = subprocess.run([sys.executable, "-m", "pyshark.cli", "test", str(mod), "--backend",
                           "python"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "1 passed, 2 failed"
