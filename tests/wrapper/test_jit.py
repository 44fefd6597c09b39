"""@pyshark.jit end to end: in an importable module, a __main__ script (a
subprocess), a notebook cell (a real IPython shell, and linecache alone);
the on-disk cache across processes; name/docstring/signature/help; py_func
against the compiled function on every backend; errors. Also the Wrapper's
add_source/add_module and its entries' signatures, and pyshark's public API."""
from __future__ import annotations

import importlib.util
import inspect
import json
import linecache
import os
import pydoc
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pyshark
import pyshark.prelude as ps
from pyshark import CompileError, Wrapper
from pyshark.jit import extract_program, program_source
from pyshark.testing import assert_close
from pyshark.wrapper import available_backends

BACKENDS = available_backends()
ROOT = Path(__file__).resolve().parents[2]

MODULE = '''\
"""A module with jit functions and top-level code that is not a program."""
import numpy as np
import pyshark
import pyshark.prelude as ps
from typing import NamedTuple

OPTIONS = dict(unsafe=False)                  # decorator arguments are not program
OFFSET = 1.5
xs = np.random.default_rng(0).random(3)       # top-level numpy: never translated


class Pt(NamedTuple):
    x: ps.f32
    y: ps.f32


def shift(v: ps.f32) -> ps.f32:
    return v + ps.f32(OFFSET)


@pyshark.jit(backend="{backend}",
             **OPTIONS)
def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    """a * shift(x) + y for each pair."""
    return ps.map(lambda x, y: a * shift(x) + y, xs, ys)


@pyshark.jit(backend="{backend}")
def norms(pts: ps.Array[Pt]) -> ps.Array[ps.f32]:
    return ps.map(lambda p: p.x * p.x + p.y * p.y, pts)


@pyshark.jit(backend="{backend}")
def total(vs: ps.Array[ps.i64]) -> ps.i64:
    return ps.reduce(lambda a, b: a + b, 0, vs)


print("imported", len(xs))
'''

_counter = [0]


def _import_file(path: Path):
    _counter[0] += 1
    spec = importlib.util.spec_from_file_location(f"jit_test_mod_{_counter[0]}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=BACKENDS)
def mod(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("jitmod") / f"jit_mod_{request.param}.py"
    path.write_text(MODULE.replace("{backend}", request.param))
    return _import_file(path)


def _inputs(n: int):
    rng = np.random.default_rng(n)
    xs = rng.standard_normal(n).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    if n > 3:
        xs[3] = np.nan
    return xs, ys


# -- a module --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 7, 1001, 70001])
def test_module_jit_equals_py_func(mod, n):
    xs, ys = _inputs(n)
    got = mod.saxpy(np.float32(2.0), xs, ys)
    want = mod.saxpy.py_func(np.float32(2.0), xs, ys)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (n,)
    assert_close(got, np.asarray(want, np.float32))
    if n > 3:
        assert np.isnan(got[3])


@pytest.mark.parametrize("n", [0, 1, 13, 70001])
def test_module_reduce_and_records(mod, n):
    vs = np.arange(n, dtype=np.int64) - 5
    assert mod.total(vs) == mod.total.py_func(vs) == vs.sum()
    pts = np.zeros(min(n, 100), dtype=[("x", np.float32), ("y", np.float32)])
    pts["x"] = np.arange(len(pts))
    pts["y"] = 2
    assert_close(mod.norms(pts), pts["x"] ** 2 + pts["y"] ** 2)


def test_functions_of_one_module_compile_separately(mod):
    w1, w2 = mod.saxpy.compile(), mod.total.compile()
    assert w1 is not w2 and w1 is mod.saxpy.compile()
    assert "saxpy" in w1.entries and "total" not in w1.entries
    assert w1.backend == mod.saxpy.__pyshark_jit__.wrapper.backend


def test_name_docstring_signature_help(mod):
    f = mod.saxpy
    assert f.__name__ == f.__qualname__ == "saxpy"
    assert f.__module__ == mod.__name__
    assert f.__doc__ == "a * shift(x) + y for each pair."
    sig = inspect.signature(f)
    assert list(sig.parameters) == ["a", "xs", "ys"]
    assert sig.parameters["a"].annotation is ps.f32
    assert sig == inspect.signature(f.py_func) == inspect.signature(f.py_func.__wrapped__)
    text = pydoc.render_doc(f, renderer=pydoc.plaintext)
    assert "saxpy(a: numpy.float32" in text and "a * shift(x) + y" in text


def test_wrong_types_raise_the_wrappers_type_error(mod):
    xs = np.ones(3, np.float32)
    with pytest.raises(TypeError) as jit_err:
        mod.saxpy(np.float32(1.0), "not an array", xs)
    name, text = program_source(mod.saxpy.__wrapped__)
    w = Wrapper(mod.saxpy.compile().backend).add_source(text, name=name).compile_and_load()
    with pytest.raises(TypeError) as wrapper_err:
        w.saxpy(np.float32(1.0), "not an array", xs)
    assert str(jit_err.value) == str(wrapper_err.value)
    assert "xs" in str(jit_err.value)


def test_the_whole_module_is_not_a_program(mod):
    # what the extraction leaves out: top-level numpy code and prints
    with pytest.raises(CompileError):
        Wrapper("python").add_source_file(mod.__file__).compile_and_load()


def _def_line(text: str, name: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(f"def {name}("))


def test_extraction_keeps_line_numbers_and_drops_script_code():
    text = MODULE.replace("{backend}", "cpu")
    prog = extract_program(text, "saxpy", _def_line(text, "saxpy"))
    src, out = text.splitlines(), prog.splitlines()
    assert len(out) == len(src)
    for a, b in zip(src, out):
        assert b in (a, "") or b == "@pyshark.jit"
    assert "OFFSET = 1.5" in out and "def shift(v: ps.f32) -> ps.f32:" in out
    assert not any("random" in ln or "print" in ln or "OPTIONS" in ln or "class Pt" in ln
                   or "def total" in ln for ln in out)


# -- errors ----------------------------------------------------------------------------

BAD = '''\
import pyshark
import pyshark.prelude as ps

LIMIT = 3


@pyshark.jit(backend="cpu")
def bad(xs: ps.Array[ps.f32]) -> ps.f32:
    total = ps.f32(0)
    for x in xs:
        total = total + x
    return total.item()


print("this script line is never translated")
'''


def test_compile_error_at_first_call_points_into_the_file(tmp_path):
    path = tmp_path / "bad_mod.py"
    path.write_text(BAD)
    module = _import_file(path)            # decoration does not compile
    with pytest.raises(CompileError) as err:
        module.bad(np.ones(3, np.float32))
    e = err.value
    assert e.filename == str(path)
    assert e.line == 12 and e.source_line.strip() == "return total.item()"
    with pytest.raises(CompileError):      # not cached: raised again
        module.bad(np.ones(3, np.float32))


def test_decoration_errors():
    with pytest.raises(TypeError, match="nonsense"):
        pyshark.jit(backend="cpu", nonsense=1)
    with pytest.raises(ValueError, match="unknown backend"):
        pyshark.jit(backend="cuda")
    with pytest.raises(TypeError):
        pyshark.jit(3)


def test_nested_function_is_refused_at_first_call():
    def outer():
        @pyshark.jit(backend="python")
        def inner(x: ps.f32) -> ps.f32:
            return x
        return inner
    with pytest.raises(CompileError, match="not a top-level function"):
        outer()(np.float32(1))


# -- a __main__ script, the cache across processes ---------------------------------------

SCRIPT = '''\
import json
import sys
import numpy as np
import pyshark
import pyshark.prelude as ps

SCALE = 2


def twice(x: ps.i32) -> ps.i32:
    return x * SCALE


@pyshark.jit
def double_all(xs: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
    """Doubles every element."""
    return ps.map(twice, xs)


data = np.arange(10, dtype=np.int32)          # script code: not translated
if __name__ == "__main__":
    out = double_all(data)
    w = double_all.compile()
    print(json.dumps({"out": out.tolist(), "py": double_all.py_func(data).tolist(),
                      "backend": w.backend, "cached": w.loaded_from_cache,
                      "doc": double_all.__doc__}))
'''


def test_main_script_and_cache_reuse_across_processes(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYSHARK_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + env.get("PYTHONPATH", "").split(os.pathsep))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["out"] == first["py"] == [2 * i for i in range(10)]
    assert first["backend"] == available_backends()[0] or first["backend"] in BACKENDS
    assert first["cached"] is False and second["cached"] is True
    assert second["out"] == first["out"] and second["doc"] == "Doubles every element."


# -- notebook cells ---------------------------------------------------------------------

CELL = '''\
import numpy as np
import pyshark
import pyshark.prelude as ps
rows = np.ones((2, 3))
print(rows.sum())


def inc(x: ps.f64) -> ps.f64:
    return x + 1.0


@pyshark.jit(backend="{backend}")
def inc_all(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    return ps.map(inc, xs)
'''


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_ipython_cell(backend):
    ipython = pytest.importorskip("IPython.core.interactiveshell")
    shell = ipython.InteractiveShell.instance()
    result = shell.run_cell(CELL.replace("{backend}", backend) + "%time _ = 1\n")
    assert result.success, result.error_in_exec
    result = shell.run_cell("jit_out = inc_all(np.array([1.0, np.nan, -2.5]))\n"
                            "py_out = inc_all.py_func(np.array([1.0, np.nan, -2.5]))")
    assert result.success, result.error_in_exec
    assert_close(shell.user_ns["jit_out"], np.array([2.0, np.nan, -1.5]))
    assert_close(shell.user_ns["jit_out"], shell.user_ns["py_out"])
    bad = shell.run_cell("import pyshark\nimport pyshark.prelude as ps\n\n"
                         "@pyshark.jit(backend='python')\n"
                         "def oops(x: ps.f64) -> ps.f64:\n    return undefined_name + x\n")
    assert bad.success
    result = shell.run_cell("oops(1.0)")
    err = result.error_in_exec
    assert isinstance(err, CompileError) and err.line == 6
    assert err.filename == shell.user_ns["oops"].__wrapped__.__code__.co_filename
    assert err.filename.startswith("<ipython-input-")


def test_cell_registered_in_linecache():
    name = "<cell-linecache-1>"
    text = CELL.replace("{backend}", "cpu")
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    try:
        ns = {"__name__": "__main__"}
        exec(compile(text, name, "exec"), ns)
        xs = np.array([0.5, 2.0], np.float64)
        assert_close(ns["inc_all"](xs), ns["inc_all"].py_func(xs))
    finally:
        linecache.cache.pop(name, None)


# -- the Wrapper: add_source, add_module, entry signatures ----------------------------------

SOURCE = '''\
import pyshark.prelude as ps


@ps.entry
def dot(xs: ps.Array[ps.f64], ys: ps.Array[ps.f64]) -> ps.f64:
    """The dot product."""
    return ps.reduce(lambda a, b: a + b, 0.0, ps.map(lambda x, y: x * y, xs, ys))
'''


@pytest.mark.parametrize("backend", BACKENDS)
def test_add_source_and_entry_signature(backend):
    w = Wrapper(backend).add_source(SOURCE, name="<dot>").compile_and_load()
    xs = np.arange(5, dtype=np.float64)
    assert w.dot(xs, xs) == 30.0
    assert w.dot.__doc__ == "The dot product."
    sig = inspect.signature(w.dot)
    assert list(sig.parameters) == ["xs", "ys"]
    assert sig.parameters["xs"].annotation == ps.Array[ps.f64]
    assert sig.return_annotation is ps.f64
    with pytest.raises(CompileError) as err:
        Wrapper(backend).add_source(SOURCE.replace("0.0,", "'zero',"), name="<dot>") \
            .compile_and_load()
    assert err.value.filename == "<dot>" and err.value.line == 7


def test_add_module(tmp_path):
    path = tmp_path / "dot_mod.py"
    path.write_text(SOURCE)
    module = _import_file(path)
    w = Wrapper("python").add_module(module).compile_and_load()
    assert w.dot(np.ones(3), np.ones(3)) == 3.0
    with pytest.raises(TypeError):
        Wrapper("python").add_module("dot_mod")


def test_python_backend_runs_a_module_with_jit_functions(tmp_path):
    path = tmp_path / "jit_as_module.py"
    path.write_text(MODULE.replace("{backend}", "cpu").replace('print("imported", len(xs))', ""))
    text = extract_program(path.read_text(), "saxpy", _def_line(path.read_text(), "saxpy"))
    w = Wrapper("python").add_source(text, name=str(path)).compile_and_load()
    xs = np.arange(3, dtype=np.float32)
    assert_close(w.saxpy(2.0, xs, xs), 2 * (xs + 1.5) + xs)


# -- the package -----------------------------------------------------------------------

def test_public_api():
    for name in ["jit", "Wrapper", "DeviceArray", "DeviceStructArray", "CompileError",
                 "ShapeError", "available_backends"]:
        assert name in pyshark.__all__ and name in dir(pyshark)
        assert getattr(pyshark, name) is not None
    assert (Path(pyshark.__file__).parent / "py.typed").is_file()
    assert inspect.signature(pyshark.jit).parameters["backend"].annotation


SPELLINGS = '''\
import numpy as np
import pyshark as pk
from pyshark import jit as pjit
from pyshark.prelude import Array, f64, i64, map

unused = np.zeros(3)


@pjit
def square(x: f64) -> f64:
    return x * x


@pk.jit(backend="{backend}")
def sum_squares(xs: Array[f64]) -> Array[f64]:
    return map(square, xs)


@pk.jit(backend="{backend}")
def count(n: i64) -> i64:
    return n + 1
'''


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_other_spellings_and_one_jit_calling_another(tmp_path, backend):
    path = tmp_path / f"spellings_{backend}.py"
    path.write_text(SPELLINGS.replace("{backend}", backend))
    module = _import_file(path)
    xs = np.array([1.0, -2.0, np.nan], np.float64)
    assert_close(module.sum_squares(xs), module.sum_squares.py_func(xs))
    assert module.sum_squares.compile().entries == ["square", "sum_squares"]
    assert module.count(41) == 42 and module.square(3.0) == 9.0
