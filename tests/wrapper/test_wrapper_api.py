"""The Wrapper end to end: calls, conversion errors, output format, cache,
build + load. Runs on every available backend."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import pyshark
from pyshark import CompileError, ShapeError, Wrapper
from pyshark.testing import assert_close
from pyshark.wrapper import available_backends, build

KERNELS = Path(__file__).parent / "kernels"
MAIN = KERNELS / "wrapper_kernels.py"
BACKENDS = available_backends()


@pytest.fixture(scope="module", params=BACKENDS)
def w(request):
    wrapper = Wrapper(backend=request.param)
    wrapper.add_source_file(MAIN)
    return wrapper.compile_and_load()


@pytest.fixture(scope="module")
def py():
    wrapper = Wrapper(backend="python")
    wrapper.add_source_file(MAIN)
    return wrapper.compile_and_load()


def _forbid_translation(monkeypatch):
    import pyshark.translate

    def boom(*a, **k):
        raise AssertionError("translated although the artifact should have been loaded")
    monkeypatch.setattr(pyshark.translate, "translate_file", boom)
    monkeypatch.setattr(pyshark.translate, "translate_source", boom)


# -- calling -------------------------------------------------------------------------

def test_invoke_and_attribute_agree(w):
    xs = np.array([1.0, 2.5, -3.0], np.float32)
    out = w.invoke("scale", 2.0, xs)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert_close(out, np.array([2.0, 5.0, -6.0], np.float32))
    assert_close(w.scale(2.0, xs), out)
    assert_close(w.scale(a=2.0, xs=xs), out)


def test_entries_listing_and_unknown_entry(w):
    assert {"scale", "identity", "vecs"} <= set(w.entries)
    with pytest.raises(AttributeError) as info:
        w.no_such_entry
    assert "scale" in str(info.value) and "no_such_entry" in str(info.value)


def test_wrong_argument_count_is_type_error(w):
    with pytest.raises(TypeError, match="scale"):
        w.scale(2.0)
    with pytest.raises(TypeError, match="scale"):
        w.scale(2.0, [1.0], [2.0])


def test_conversion_errors_name_the_parameter(w):
    with pytest.raises(TypeError, match="'xs'.*float32.*bool"):
        w.scale(2.0, np.arange(3) > 0)
    assert w.scale(2.0, np.arange(3)).dtype == np.float32      # same_kind: ints convert
    with pytest.raises(TypeError, match="'xs'.*rank"):
        w.scale(2.0, np.zeros((2, 2), np.float32))
    with pytest.raises(ShapeError, match="'xss'"):
        w.total([[1, 2], [3]])
    with pytest.raises(OverflowError, match="'n'"):
        w.negate_if(300, True)
    with pytest.raises(TypeError, match="'flag'"):
        w.negate_if(3, 1)
    with pytest.raises(TypeError, match="'n'"):
        w.negate_if(3.0, True)


def test_scalar_results_have_the_declared_type(w):
    assert type(w.total([[1, 2], [3, 4]])) is np.int32
    assert w.total([[1, 2], [3, 4]]) == 10
    assert w.total([]) == 0
    assert type(w.negate_if(-128, True)) is np.int8 and w.negate_if(-128, True) == -128


def test_zero_copy_input_in_python_mode(py):
    xs = np.arange(8, dtype=np.float32)
    assert np.shares_memory(py.identity(xs), xs)


def test_tuple_and_record_results(w):
    q = w.div_mod(-7, 2)
    assert type(q) is tuple and q == (-4, 1) and all(type(v) is np.int64 for v in q)
    v = w.make_vec(1.0)
    assert type(v).__name__ == "Vec3" and v._fields == ("x", "y", "z")
    assert (v.x, v.y, v.z) == (1.0, 2.0, 3.0) and type(v.y) is np.float32


def test_arrays_of_records_and_tuples_are_structured_arrays(w):
    vs = w.vecs([1.0, 2.0])
    assert vs.dtype.names == ("x", "y", "z") and vs.dtype["x"] == np.float32 and vs.shape == (2,)
    assert_close(vs["z"], np.array([3.0, 6.0], np.float32))
    ps = w.pairs(np.array([1, 2, 3], np.int32))
    assert ps.dtype.names == ("f0", "f1") and ps.dtype["f0"] == np.int32
    assert ps.dtype["f1"] == np.float64
    assert_close(ps["f1"], np.array([0.5, 1.0, 1.5]))
    empty = w.vecs(np.zeros(0, np.float32))
    assert empty.shape == (0,) and empty.dtype.names == ("x", "y", "z")


def test_records_accepted_as_structured_arrays_and_lists(w):
    vs = w.vecs([3.0, 0.0])
    assert_close(w.norms(vs), np.array([np.sqrt(126.0), 0.0], np.float32))
    assert_close(w.norms([(3.0, 4.0, 12.0)]), np.array([13.0], np.float32))
    assert_close(w.norms([w.make_vec(0.0)]), np.array([np.sqrt(5.0)], np.float32))


def test_every_backend_agrees_with_python_mode(w, py):
    xs = np.linspace(-2, 2, 7, dtype=np.float32)
    for name, args in [("scale", (0.5, xs)), ("vecs", (xs,)), ("pairs", ([1, -2],)),
                       ("div_mod", (7, -3)), ("make_vec", (2.0,)), ("total", ([[1], [2]],))]:
        assert_close(w.invoke(name, *args), py.invoke(name, *args))


# -- wrapper set-up -------------------------------------------------------------------------

def test_unknown_backend_lists_available_ones():
    with pytest.raises(ValueError) as info:
        Wrapper(backend="no-such-backend")
    assert all(b in str(info.value) for b in BACKENDS)


def test_backend_not_built_yet_says_so():
    from pyshark.wrapper import registry
    registry.register_backend("future", "pyshark.codegen.future.backend:FutureBackend")
    try:
        with pytest.raises(ValueError, match="not built"):
            Wrapper(backend="future")
    finally:
        registry._BACKENDS.pop("future", None)


def test_missing_file_and_call_before_load():
    w = Wrapper()
    with pytest.raises(FileNotFoundError):
        w.add_source_file(KERNELS / "missing.py")
    w.add_source_file(MAIN)
    with pytest.raises(RuntimeError, match="compile_and_load"):
        w.invoke("scale", 1.0, [1.0])


def test_several_files_and_duplicate_entries(tmp_path):
    w = Wrapper(cache_dir=tmp_path)
    w.add_source_file(MAIN)
    w.add_source_file(KERNELS / "more_kernels.py")
    w.compile_and_load()
    assert "add_one" in w.entries and "scale" in w.entries
    assert list(w.add_one([1, 2])) == [2, 3]
    w.add_source_file(KERNELS / "other_kernels.py")
    with pytest.raises(CompileError, match="scale"):
        w.compile_and_load()


# -- cache ---------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_second_compile_is_a_load(backend, tmp_path, monkeypatch):
    src = tmp_path / "k.py"
    shutil.copy(MAIN, src)
    cache = tmp_path / "cache"
    w1 = Wrapper(backend, cache_dir=cache).add_source_file(src).compile_and_load()
    assert w1.loaded_from_cache is False
    _forbid_translation(monkeypatch)
    w2 = Wrapper(backend, cache_dir=cache).add_source_file(src).compile_and_load()
    assert w2.loaded_from_cache is True
    assert_close(w2.scale(3.0, [1.0]), w1.scale(3.0, [1.0]))
    monkeypatch.undo()
    src.write_text(src.read_text() + "\n# changed\n")
    w3 = Wrapper(backend, cache_dir=cache).add_source_file(src).compile_and_load()
    assert w3.loaded_from_cache is False


def test_options_are_part_of_the_cache_key(tmp_path):
    a = Wrapper(cache_dir=tmp_path).add_source_file(MAIN).compile_and_load()
    b = Wrapper(fastmath=True, cache_dir=tmp_path).add_source_file(MAIN).compile_and_load()
    assert not a.loaded_from_cache and not b.loaded_from_cache


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PYSHARK_CACHE_DIR", str(tmp_path / "env-cache"))
    Wrapper().add_source_file(MAIN).compile_and_load()
    assert (tmp_path / "env-cache" / "python").is_dir()


def test_corrupt_cache_entry_is_rebuilt(tmp_path):
    Wrapper("python", cache_dir=tmp_path).add_source_file(MAIN).compile_and_load()
    for manifest in (tmp_path / "python").glob("*/manifest.json"):
        manifest.write_text("{not json")
    w = Wrapper("python", cache_dir=tmp_path).add_source_file(MAIN).compile_and_load()
    assert w.loaded_from_cache is False and w.total([[1]]) == 1


# -- build + load ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_build_then_load_round_trip(backend, tmp_path, monkeypatch):
    out = tmp_path / "out"
    manifest = build(MAIN, out, backend)
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk == manifest
    assert on_disk["backend"] == backend and on_disk["pyshark_version"] == pyshark.__version__
    assert on_disk["entries"]["scale"]["params"] == [["a", "f32"], ["xs", {"array": "f32"}]]
    assert len(on_disk["source_hash"]) == 64
    _forbid_translation(monkeypatch)
    w = Wrapper.load(out)
    assert w.backend == backend and set(w.entries) == set(on_disk["entries"])
    assert_close(w.scale(2.0, [1.0, 2.0]), np.array([2.0, 4.0], np.float32))
    assert w.make_vec(1.0).z == 3.0


def test_entry_attributes_follow_the_loaded_modules(tmp_path):
    """An entry looked up once is an instance attribute after that; adding a
    module or compiling again drops it, and a subclass with its own
    __getattr__ still sees every lookup."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import pyshark.prelude as ps\n\n@ps.entry\ndef f(x: int) -> int:\n"
                 "    return x + 1\n")
    b.write_text("import pyshark.prelude as ps\n\n@ps.entry\ndef g(x: int) -> int:\n"
                 "    return x * 2\n")
    w = Wrapper("python").add_source_file(a).compile_and_load()
    assert w.f(1) == 2 and "f" in vars(w)
    w.add_source_file(b)
    assert "f" not in vars(w)
    with pytest.raises(AttributeError, match="compile_and_load"):
        w.f
    w.compile_and_load()
    assert w.f(1) == 2 and w.g(3) == 6

    seen = []

    class Counting(Wrapper):
        def __getattr__(self, name):
            seen.append(name)
            return super().__getattr__(name)
    c = Counting("python").add_source_file(a).compile_and_load()
    assert c.f(1) == 2 and c.f(2) == 3
    assert seen == ["f", "f"]
