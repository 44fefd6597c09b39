"""worker.py and library.py: a compiled module travels as bytes, is
installed into a worker's own (empty) cache under its key and loaded
once per process; nothing compiles there (no Dask needed)."""
from __future__ import annotations

import numpy as np
import pytest

from pyshark.dask import worker
from pyshark.dask.library import pack


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty PYSHARK_CACHE_DIR and an empty per-process table."""
    monkeypatch.setenv("PYSHARK_CACHE_DIR", str(tmp_path / "worker-cache"))
    monkeypatch.setattr(worker, "_LOADED", {})
    monkeypatch.setattr(worker, "STATS", type(worker.STATS)())
    return tmp_path / "worker-cache"


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_install_load_once_and_call(wrappers, fresh_cache, backend):
    w = wrappers[backend]
    lib = pack(w.artifact_dir("saxpy"), backend, w.options.as_dict())
    assert lib.key == w.artifact_dir("saxpy").name and lib.nbytes > 0
    assert any(rel == "manifest.json" for rel, _ in lib.files)
    ref = lib.ref(embed=True)
    xs = np.arange(5, dtype=np.float32)
    for _ in range(3):
        out = worker.call(ref, (), "saxpy", [np.float32(2), xs, xs])
        assert np.array_equal(out, w.saxpy(2, xs, xs))
    assert worker.STATS["installs"] == 1 and worker.STATS["loads"] == 1
    assert worker.STATS["hits"] == 2
    assert (fresh_cache / backend / lib.key / "manifest.json").is_file()


def test_a_ref_without_bytes_needs_the_library_here(wrappers, fresh_cache):
    w = wrappers["cpu"]
    lib = pack(w.artifact_dir("dot"), "cpu", w.options.as_dict())
    with pytest.raises(RuntimeError, match="not on this worker"):
        worker.module(lib.ref())
    worker.register(lib)               # what the worker plugin does
    mod = worker.module(lib.ref())
    assert "dot" in mod.entries


def test_a_corrupt_install_is_written_again(wrappers, fresh_cache):
    w = wrappers["cpu"]
    lib = pack(w.artifact_dir("dot"), "cpu", w.options.as_dict())
    target = worker.install(lib)
    (target / "module.so").write_bytes(b"\x7fELF broken")
    mod = worker.module(lib.ref(embed=True))
    xs = np.ones(4)
    assert mod.call("dot", [xs, xs]) == 4.0


def test_a_device_list_gives_each_worker_one(monkeypatch):
    monkeypatch.setattr(worker, "worker_index", lambda: 3)
    rt = worker.resolve_runtime((("device", ("0:0", "0:1")), ("num_threads", None)))
    assert rt == {"device": "0:1"}
