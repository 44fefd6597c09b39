"""Bounds-check elimination (codegen/bounds.py): checks disappear only where
the index is provably in range, and out-of-range indices still raise."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from pyshark.codegen import kir as K
from pyshark.codegen.bounds import Facts
from pyshark.codegen.lower import Options, lower_program, symbol
from pyshark.core.check import check_program
from pyshark.core.types import I64
from pyshark.translate import translate_source

HEAD = "import pyshark.prelude as ps\n"


def kernels(src: str) -> str:
    program = translate_source(HEAD + textwrap.dedent(src), "<t>")
    check_program(program)
    return K.pretty_module(lower_program(program, Options()))


def parfor_text(text: str) -> str:
    return text[text.index("parfor"):]


def test_clamped_stencil_indices_need_no_check():
    text = kernels("""
    @ps.entry
    def f(prev: ps.Array[ps.i32]) -> ps.Array[ps.i32]:
        n = len(prev)
        return ps.map(lambda j: min(prev[max(j - 1, 0)], prev[j], prev[min(j + 1, n - 1)]),
                      ps.iota(n))
    """)
    assert "IndexError" not in parfor_text(text)


@pytest.mark.parametrize("index", ["xs[i + 1]", "xs[i - 1]", "xs[max(i - 1, 0) + 1]",
                                   "xs[min(i + 2, n)]", "xs[n - i]"])
def test_unprovable_indices_keep_their_check(index):
    text = kernels(f"""
    @ps.entry
    def f(xs: ps.Array[int]) -> ps.Array[int]:
        n = len(xs)
        return ps.map(lambda i: {index}, ps.iota(n))
    """)
    assert "IndexError" in parfor_text(text)


def test_facts_prove_and_refuse():
    f = Facts()
    i, n = K.KVar("i", I64), K.KVar("n", I64)
    f.ranges["i"] = (K.KConst(0, I64), n)
    f.at_least["n"] = 1
    one, zero = K.KConst(1, I64), K.KConst(0, I64)
    assert f.non_negative(i) and f.below(i, n)
    assert not f.below(K.Bin("add", i, one), n)
    assert not f.non_negative(K.Bin("sub", i, one))
    clamp_lo = K.Sel(K.Bin("gt", zero, K.Bin("sub", i, one)), zero, K.Bin("sub", i, one))
    assert f.non_negative(clamp_lo) and f.below(clamp_lo, n)
    other = K.KVar("m", I64)
    assert not f.below(i, other)              # another length proves nothing


def test_out_of_range_still_raises_on_cpu(tmp_path):
    from pyshark import Wrapper
    p = tmp_path / "m.py"
    p.write_text(HEAD + textwrap.dedent("""
    @ps.entry
    def shift(xs: ps.Array[int]) -> ps.Array[int]:
        n = len(xs)
        return ps.map(lambda i: xs[i + 1], ps.iota(n))

    @ps.entry
    def smooth(xs: ps.Array[int]) -> ps.Array[int]:
        n = len(xs)
        return ps.map(lambda i: xs[max(i - 1, 0)] + xs[min(i + 1, n - 1)], ps.iota(n))
    """))
    w = Wrapper("cpu", cache_dir=tmp_path / "c")
    w.add_source_file(p)
    w.compile_and_load()
    xs = np.arange(100_000, dtype=np.int64)
    with pytest.raises(IndexError):
        w.shift(xs)
    got = w.smooth(xs)
    want = xs[np.maximum(np.arange(len(xs)) - 1, 0)] + xs[np.minimum(np.arange(len(xs)) + 1,
                                                                      len(xs) - 1)]
    assert np.array_equal(got, want)
    assert w.smooth(np.array([5], np.int64)).tolist() == [10]
    assert w.smooth(np.array([], np.int64)).tolist() == []


def test_versioned_loop_checks_once_and_still_raises(tmp_path):
    from pyshark import Wrapper
    src = """
    @ps.entry
    def scaled(xs: ps.Array[int], ws: ps.Array[int]) -> ps.Array[int]:
        n = len(xs)
        return ps.map(lambda i: xs[i] * ws[i], ps.iota(n))
    """
    p = tmp_path / "v.py"
    p.write_text(HEAD + textwrap.dedent(src))
    text = kernels(src)
    assert text.count("parfor") == 2 and "inb_" in text       # fast and checked copies
    w = Wrapper("cpu", cache_dir=tmp_path / "c")
    w.add_source_file(p)
    w.compile_and_load()
    xs = np.arange(100_000, dtype=np.int64)
    assert np.array_equal(w.scaled(xs, xs), xs * xs)                    # the fast copy
    assert np.array_equal(w.scaled(xs[:10], xs), xs[:10] * xs[:10])     # ws longer: fine
    with pytest.raises(IndexError):
        w.scaled(xs, xs[:99_999])                                       # the checked copy


def test_flat_index_split_into_rows_and_columns(tmp_path):
    src = """
    @ps.entry
    def grid(g: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
        rows = len(g)
        cols = len(g[0])
        return ps.tabulate_2d(rows, cols, lambda r, c: g[r, c] + g[max(r - 1, 0), c])
    """
    from pyshark.codegen.stages import build_kernels
    from pyshark.wrapper.backend import Options as BackendOptions
    program = translate_source(HEAD + textwrap.dedent(src), "<t>")
    check_program(program)
    text = K.pretty_module(build_kernels(program, BackendOptions()))   # with the middle end
    fast = text[text.index("parfor"):]
    fast = fast[:fast.index("parfor", 10)] if fast.count("parfor") > 1 else fast
    assert " / " not in fast and " % " not in fast and "IndexError" not in fast
    from pyshark import Wrapper
    p = tmp_path / "g.py"
    p.write_text(HEAD + textwrap.dedent(src))
    w = Wrapper("cpu", cache_dir=tmp_path / "c")
    w.add_source_file(p)
    w.compile_and_load()
    for shape in [(1, 1), (3, 1), (1, 5), (300, 257)]:
        g = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        want = g + g[np.maximum(np.arange(shape[0]) - 1, 0)]
        assert np.array_equal(w.grid(g), want)


SWEEPS = """
def solve(a: ps.Array[ps.f64], y: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    n = len(y)
    yy = ps.copy(y)
    for i in range(1, n):
        yy[i] = yy[i] - a[i] * yy[i - 1]          # a may be shorter than y
    for i in range(n - 2, -1, -1):
        yy[i] = yy[i] - a[i] * yy[i + 1]          # counting down: an affine index
    return yy

@ps.entry
def sweeps(a: ps.Array[ps.f64], ys: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.Array[ps.f64]]:
    return ps.map(lambda y: solve(a, y), ys)

@ps.entry
def strided(xs: ps.Array[ps.f64], m: int, ys: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    # k changes in the loop: its checks are not versioned on k's first value
    def f(y: ps.f64) -> ps.f64:
        s = y
        k = 0
        for _ in range(m):
            s = s + xs[k]
            k = k + 2
        return s
    return ps.map(f, ys)
"""


def test_sequential_loops_in_a_parallel_body_are_versioned(tmp_path):
    from pyshark import Wrapper
    text = kernels(SWEEPS)
    sweeps = text[text.index("entry pyshark_sweeps"):text.index("entry pyshark_strided")]
    # both sweeps: a fast copy without IndexError checks beside the checked one
    assert sweeps.count("inb_") >= 4
    strided = text[text.index("entry pyshark_strided"):]
    assert "inb_" not in strided[strided.index("parfor"):]
    p = tmp_path / "s.py"
    p.write_text(HEAD + textwrap.dedent(SWEEPS))
    ws = [Wrapper(b, cache_dir=tmp_path / "c") for b in ("python", "cpu")]
    for w in ws:
        w.add_source_file(p)
        w.compile_and_load()
    py, cpu = ws
    rng = np.random.default_rng(3)
    ys = rng.standard_normal((5, 9))
    for a in (rng.standard_normal(9), rng.standard_normal(12), np.zeros(0)):
        if len(a) >= 9:
            assert np.array_equal(cpu.sweeps(a, ys), py.sweeps(a, ys))
        else:
            for w in ws:                             # the checked copy raises Python's error
                with pytest.raises(IndexError, match="index 1 "):
                    w.sweeps(a, ys)
    assert np.array_equal(cpu.sweeps(np.ones(3), np.ones((2, 1))), py.sweeps(np.ones(3), np.ones((2, 1))))
    xs = np.arange(10.0)
    ys1 = np.arange(3.0)
    assert np.array_equal(cpu.strided(xs, 5, ys1), py.strided(xs, 5, ys1))
    for w in ws:
        with pytest.raises(IndexError, match="index 10 "):
            w.strided(xs, 6, ys1)
