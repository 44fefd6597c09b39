"""A selection operator (max, min) in a multicore histogram stores a bin
only when the other value is chosen (mc/seghist._store_if_changed); the
results stay those of Python mode, NaN and signed zeros included."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.wrapper import registry

SRC = textwrap.dedent('''
    import pyshark.prelude as ps

    @ps.entry
    def hmax(bins: ps.Array[ps.i32], vals: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        lowest = ps.lowest(ps.f32)
        return ps.reduce_by_index(ps.replicate(16, lowest), lambda a, b: ps.max(a, b), lowest,
                                  bins, vals)

    @ps.entry
    def hmin(bins: ps.Array[ps.i32], vals: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
        return ps.reduce_by_index(ps.replicate(16, ps.i64(0)), lambda a, b: min(a, b),
                                  ps.i64(9223372036854775807), bins, vals)
''')

BACKENDS = [b for b in ("cpu", "kir") if b in registry.available_backends()]


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("hist_skip") / "hist_skip.py"
    p.write_text(SRC)
    return str(p)


def _load(path, backend):
    w = Wrapper(backend=backend)
    w.add_source_file(path)
    return w.compile_and_load()


def _inputs(n, seed):
    rng = np.random.default_rng(seed)
    bins = rng.integers(-2, 18, n).astype(np.int32)
    vals = rng.standard_normal(n).astype(np.float32)
    if n == 0:
        return bins, vals
    vals[rng.integers(0, n, max(n // 50, 1))] = np.nan
    vals[rng.integers(0, n, max(n // 50, 1))] = -0.0
    vals[rng.integers(0, n, max(n // 50, 1))] = 0.0
    return bins, vals


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [0, 1, 7, 1023, 40000, 100003])
def test_selection_histograms_agree_with_python_mode(path, backend, n):
    bins, vals = _inputs(n, n)
    py, m = _load(path, "python"), _load(path, backend)
    want, got = py.hmax(bins, vals), m.hmax(bins, vals)
    assert np.array_equal(np.signbit(want), np.signbit(got))
    np.testing.assert_array_equal(want, got)
    ivals = (vals * 1000).astype(np.int64) if n else np.zeros(0, np.int64)
    np.testing.assert_array_equal(py.hmin(bins, ivals), m.hmin(bins, ivals))


def test_the_private_histogram_stores_only_when_a_bin_changes():
    from pyshark.codegen import kir as K
    from pyshark.codegen.stages import build_kernels
    from pyshark.translate import translate_source
    from pyshark.core.check import check_program
    from pyshark.wrapper.backend import Options
    prog = translate_source(SRC, "hist_skip.py")
    check_program(prog)
    mod = build_kernels(prog, Options())
    f = next(fn for fn in mod.functions if fn.name.endswith("hmax"))
    guarded = [s for s in K.walk_stms(f.body) if isinstance(s, K.If)
               and len(s.then.stms) == 1 and isinstance(s.then.stms[0], K.Store)
               and not s.orelse.stms]
    assert guarded, "expected a store under an If in the private histogram"
