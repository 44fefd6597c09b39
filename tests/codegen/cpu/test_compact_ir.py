"""The compile-time measures of the cpu emitter keep behaviour: variables as
SSA values (emit_ssa.py), failure paths out of line, and a module split into
parts compiled in parallel threads and linked together (split.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from cpu_harness import I0, I1, I64, K, Built, c64, v
from pyshark.codegen.cpu import load_library, optimise_and_build
from pyshark.codegen.cpu.emit import emit_module, emit_module_parts
from pyshark.codegen.cpu.emit_ssa import ssa_vars
from pyshark.codegen.cpu.split import GluePart
from test_cpu_memory_control import _module

x, y, z, i, n = v("x", I64), v("y", I64), v("z", I64), v("i", I64), v("n", I64)


def test_ssa_vars_are_declared_once_where_they_dominate():
    body = K.Block((
        K.Set(x, c64(1)),                                   # once, read below: SSA
        K.If(K.Bin("gt", n, I0), K.Block((K.Set(y, x),)),   # y set in a branch, read after
             K.Block((K.Set(y, c64(2)),))),
        K.Set(z, y),                                        # z read before its set in the loop
        K.For(i, I0, n, K.Block((K.Set(z, K.Bin("add", z, i)),))),
    ))
    assert ssa_vars(body, ("n",)) == {"n", "x", "i"}
    # read in a loop before its only declaration there: the previous iteration's value
    loop = K.Block((K.For(i, I0, n, K.Block((
        K.If(K.Bin("gt", i, I0), K.Block((K.Set(z, K.Bin("add", x, I1)),))),
        K.Set(x, i),))),))
    assert "x" not in ssa_vars(loop, ("n",))


def test_fail_is_a_call_of_one_cold_function():
    text = emit_module(_module())
    assert text.count("cmpxchg") <= 1           # only in pyshark.fail.par (for pyshark.alloc)
    assert 'define internal void @"pyshark.fail"' in text
    assert text.count('call void @"pyshark.fail"') >= 2


def test_split_module_links_and_behaves(tmp_path: Path):
    m = _module()
    K.check_module(m)
    parts = emit_module_parts(m, 2)
    # two parts of optimised code, and the optnone glue entries in a third
    # (compiled at code generation level 0)
    assert len(parts) == 3
    assert [isinstance(p, GluePart) for p in parts] == [False, False, True]
    assert "optnone" in parts[2] and all("optnone" not in p for p in parts[:2])
    # one SIGINT flag per library: defined in part 0, declared in the others
    assert sum('"pyshark.sigint.flag" = hidden global' in p for p in parts) <= 1
    out = tmp_path / "split.so"
    optimise_and_build(parts, out)
    lib = Built(m, load_library(out), "\n".join(parts))
    o = np.zeros(2, np.int64)
    for x0, steps in [(1, 0), (27, 111)]:
        lib.call("collatz", x0, o)
        assert o[0] == steps
    ys = np.arange(10, dtype=np.int64) * 10
    rc, ctx = lib.call("checked_get", ys, 10, 12, o)
    assert rc == K.ERROR_CODES["IndexError"] and list(ctx.args) == [12, 10, 0, 0]
    rc, ctx = lib.call("alloc_n", 1 << 60)
    assert rc == K.ERROR_CODES["MemoryError"] and list(ctx.args) == [1 << 60, 8, 0, 0]
    # the JIT fallback joins the parts back into one module
    jit = tmp_path / "split.ll"
    optimise_and_build(parts, jit, cc=None)
    lib2 = Built(m, load_library(jit), "")
    lib2.call("collatz", 27, o)
    assert o[0] == 111


GLUE_SRC = '''
import pyshark.prelude as ps


@ps.entry
def normalise(xs: ps.Array[int], k: int) -> ps.Array[int]:
    s = ps.reduce(lambda a, b: a + b, 0, ps.map(lambda x: x * x, xs))
    ys = ps.map(lambda x: x * 1000 // (s + 1), xs)
    return ps.map(lambda i: ys[i] + ys[(i + k) % len(ys)] + xs[i - k], ps.iota(len(ys)))
'''


def test_a_glue_entry_spreads_its_parfors_over_parts(tmp_path: Path):
    """An entry whose host code is optnone glue learns nothing from its
    ParFor bodies' inferred attributes, so each body (with its .omp) is a
    unit of its own (split.py): one entry's bodies are compiled in several
    threads, defined hidden in their part and declared in the entry's."""
    import textwrap
    from pyshark import Wrapper
    from pyshark.codegen.stages import build_kernels
    from pyshark.core.check import check_program
    from pyshark.translate import translate_source
    program = translate_source(textwrap.dedent(GLUE_SRC), "<glue>")
    check_program(program)
    m = build_kernels(program)
    parts = emit_module_parts(m, 2)
    assert len(parts) == 3
    host = [p for p in parts if 'define i32 @"pyshark_normalise"' in p]
    other = [p for p in parts if p not in host]
    assert len(host) == 1 and 'optnone' in host[0] and isinstance(host[0], GluePart)
    assert 'declare hidden void @"pyshark_normalise.parfor' in host[0]
    assert all('define hidden void @"pyshark_normalise.parfor' in p for p in other)
    src = tmp_path / "glue.py"
    src.write_text(textwrap.dedent(GLUE_SRC))
    xs = np.arange(-300, 701, dtype=np.int64)
    py = Wrapper("python")
    py.add_source_file(src)
    py.compile_and_load()
    w = Wrapper("cpu", cache_dir=str(tmp_path / "cache"), num_threads=2)
    w.add_source_file(src)
    w.compile_and_load()
    for k in (0, 3, 1000):
        np.testing.assert_array_equal(w.normalise(xs, k), py.normalise(xs, k))
    import pytest
    with pytest.raises(IndexError):
        w.normalise(xs, -5000)


def test_glue_parts_compile_at_codegen_level_0():
    """A GluePart (only optnone glue) gets a level-0 target machine in
    either tier; other parts the tier's level (link._part_level)."""
    from pyshark.codegen.cpu import link
    assert link._part_level(GluePart("x"), quick=True) == link.GLUE_CODEGEN_LEVEL == 0
    assert link._part_level(GluePart("x"), quick=False) == 0
    assert link._part_level("x", quick=True) == link.QUICK_CODEGEN_LEVEL
    assert link._part_level("x", quick=False) == 3
    a, b, c = link._part_machines([3, 0, 3])
    assert a is not c and len({id(a), id(b), id(c)}) == 3


def test_a_module_of_glue_alone_is_not_split():
    """Nothing but glue (no ParFor, no hot host loop): one module, as before."""
    from llvmlite import ir
    from pyshark.codegen.cpu.split import split_module
    mod = ir.Module("glue")
    for name in ("e1", "e2"):
        fn = ir.Function(mod, ir.FunctionType(ir.IntType(32), []), name)
        fn.attributes.add("optnone")
        fn.attributes.add("noinline")
        b = ir.IRBuilder(fn.append_basic_block())
        acc = ir.Constant(ir.IntType(32), 0)
        for k in range(300):
            acc = b.add(acc, ir.Constant(ir.IntType(32), k))
        b.ret(acc)
    parts = split_module(mod, ["e1", "e2"], 2)
    assert len(parts) == 1 and not isinstance(parts[0], GluePart)

