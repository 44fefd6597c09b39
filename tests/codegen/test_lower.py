"""Structural tests of the lowering (core IR -> kernel IR): what it
decides, seen in the kernel IR -- producer fusion, parallel loops at host
level only, in-place updates of loop-carried arrays, frees."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from pyshark.codegen import kir as K
from pyshark.codegen.kir_interp import Buffer, run_function
from pyshark.codegen.lower import Options, lower_program, symbol
from pyshark.codegen.pipeline import optimise
from pyshark.translate import translate_source
from pyshark.core.check import check_program


def lower(src: str, **opts) -> K.Module:
    program = translate_source(HEAD + textwrap.dedent(src), "<test>")
    check_program(program)
    m = lower_program(program, Options(**opts))
    K.check_module(m)
    return m


def lower_optimised(src: str) -> K.Module:
    """A whole module (its own imports) through the middle end (inlining and
    fusion) and the lowering, as the backends compile it."""
    program = translate_source(textwrap.dedent(src), "<test>")
    check_program(program)
    m = lower_program(optimise(program, check=True), Options())
    K.check_module(m)
    return m


def walk(b: K.Block):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from walk(sb)


def stms(m: K.Module, name: str, cls) -> list:
    f = next(f for f in m.functions if f.name == symbol(name))
    return [s for s in walk(f.body) if isinstance(s, cls)]


HEAD = "import pyshark.prelude as ps\n"


def test_map_into_reduce_is_fused_no_intermediate_array():
    m = lower("""
    @ps.entry
    def dot(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.f32:
        return ps.reduce(lambda a, b: a + b, ps.f32(0.0), ps.map(lambda x, y: x * y, xs, ys))
    """)
    allocs = stms(m, "dot", K.Alloc)
    # only the per-thread partials are allocated, never the map's result
    assert [a.var.name.split("_")[0] for a in allocs] == ["part"]
    assert len(stms(m, "dot", K.ParFor)) == 1


def test_map_map_fuses_into_one_parallel_loop():
    m = lower("""
    @ps.entry
    def f(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
        ys = ps.map(lambda x: x + 1.0, xs)
        return ps.map(lambda y: y * 2.0, ys)
    """)
    assert len(stms(m, "f", K.ParFor)) == 1
    assert len(stms(m, "f", K.Alloc)) == 1


def test_reduction_operator_is_reassociable_but_map_arithmetic_is_not():
    m = lower("""
    @ps.entry
    def f(xs: ps.Array[ps.f32]) -> ps.f32:
        return ps.sum(ps.map(lambda x: x * 3.0 + 1.0, xs))
    """)
    f = m.functions[0]
    bins = []

    def collect(e):
        if isinstance(e, K.Bin):
            bins.append(e)
        for c in K.children(e):
            collect(c)
    for s in walk(f.body):
        for e in K.stm_exprs(s):
            collect(e)
    assert any(b.op == "add" and b.reassoc for b in bins)
    assert not any(b.op == "mul" and b.reassoc for b in bins)


def test_no_parallel_loop_inside_a_parallel_loop():
    m = lower("""
    @ps.entry
    def row_sums(xss: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.f32]:
        return ps.map(lambda row: ps.sum(row), xss)
    """)
    pars = stms(m, "row_sums", K.ParFor)
    assert len(pars) == 1
    assert not [s for s in walk(pars[0].body) if isinstance(s, K.ParFor)]
    # a loop inside: the parallel loop is guarded by its work (par_work.py)
    assert pars[0].parallel_if is not None


def test_sequential_option_emits_no_parfor():
    m = lower("""
    @ps.entry
    def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        return ps.scan(lambda a, b: a + b, ps.f32(0.0), xs)
    """, parallel=False)
    assert not stms(m, "f", K.ParFor)


def test_update_of_a_loop_carried_array_is_in_place():
    m = lower("""
    @ps.entry
    def f(n: int) -> ps.Array[int]:
        acc = ps.replicate(n, 0)
        for i in range(n):
            acc[i] = i * i
        return acc
    """)
    loops = stms(m, "f", K.For)
    body_allocs = [s for lp in loops for s in walk(lp.body) if isinstance(s, K.Alloc)]
    assert body_allocs == []          # no copy per iteration
    r = _run(m, "f", [np.int64(5)], [("array", 1)])
    assert r.tolist() == [0, 1, 4, 9, 16]


def test_update_of_a_parameter_copies_it_first():
    m = lower("""
    @ps.entry
    def f(xs: ps.Array[int]) -> ps.Array[int]:
        ys = ps.copy(xs)
        ys[0] = 7
        return ys
    """)
    xs = np.array([1, 2, 3], np.int64)
    out = _run(m, "f", [Buffer(xs), np.int64(3)], [("array", 1)])
    assert out.tolist() == [7, 2, 3] and xs.tolist() == [1, 2, 3]


def test_loop_frees_what_it_does_not_carry():
    m = lower("""
    @ps.entry
    def f(xs: ps.Array[ps.f64], k: int) -> ps.Array[ps.f64]:
        for _ in range(k):
            xs = ps.map(lambda x: x * 0.5, xs)
        return xs
    """)
    xs = np.arange(6, dtype=np.float64)
    out = _run(m, "f", [Buffer(xs.copy()), np.int64(6), np.int64(3)], [("array", 1)])
    assert np.array_equal(out, xs / 8)


def _run(m, name, args, outs):
    """Runs an entry in the kernel-IR interpreter; fails on leaks."""
    cells = []
    for kind, rank in outs:
        ptr, shape = Buffer.pointers(1), Buffer(np.zeros(rank, np.int64))
        cells.append((ptr, shape))
        args = args + [ptr, shape]
    r = run_function(m, symbol(name), args)
    assert r.code == 0, r.message
    assert not r.leaks()
    ptr, shape = cells[0]
    dims = tuple(int(d) for d in shape.array)
    return ptr.array[0].values(int(np.prod(dims))).reshape(dims)


def test_perfect_map_nest_becomes_one_tiled_parallel_loop():
    m = lower("""
    @ps.entry
    def mm(a: ps.Array[ps.Array[ps.f32]], b: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
        bt = ps.transpose(b)
        return ps.map(lambda row: ps.map(lambda col: ps.sum(ps.map(lambda x, y: x * y, row, col)), bt), a)
    """)
    pars = stms(m, "mm", K.ParFor)
    assert len(pars) == 2                      # the transpose, and the (i, j) tiles
    tiles = pars[1]
    # no allocation per row: the nest writes straight into its result
    assert not [s for s in walk(tiles.body) if isinstance(s, K.Alloc)]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    args = [Buffer(a.reshape(-1).copy()), np.int64(2), np.int64(3),
            Buffer(b.reshape(-1).copy()), np.int64(3), np.int64(4)]
    assert np.array_equal(_run(m, "mm", args, [("array", 2)]), a @ b)


def test_versioning_conditions_share_their_parts():
    """A loop-versioning condition built from nested min/max bounds is bound
    piece by piece (Lowerer.let_shared), not written out as a tree: the
    FShark-shaped LocVolCalib's largest was 20,775 nodes over 706 distinct
    sub-expressions (its emitted LLVM IR halved when they were shared)."""
    from pathlib import Path
    from pyshark.codegen.kir_traverse import walk_exprs
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "programs" / "locvolcalib.py"
    program = translate_source(path.read_text(), str(path))
    check_program(program)
    m = lower_program(program, Options())
    K.check_module(m)
    sizes = [sum(1 for _ in walk_exprs(e)) for f in m.functions for s in walk(f.body)
             for e in K.stm_exprs(s)]
    assert max(sizes) < 400
    assert sum(1 for f in m.functions for s in walk(f.body)
               if isinstance(s, K.Set) and s.var.name.startswith("inb")) > 20
