"""codegen/kir_passes/memory.py: loop-invariant temporaries are allocated once per loop
and reused; everything else stays where it was."""
from __future__ import annotations

import textwrap

import numpy as np

from pyshark.codegen import kir as K
from pyshark.codegen.kir_interp import Buffer, run_function
from pyshark.codegen.lower import Options, lower_program, symbol
from pyshark.codegen.kir_passes.memory import hoist_allocations
from pyshark.core.check import check_program
from pyshark.core.types import F64, I64
from pyshark.translate import translate_source


def walk(b):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from walk(sb)


def allocs_in_loops(f: K.Function) -> int:
    return sum(1 for s in walk(f.body) if isinstance(s, (K.For, K.While))
               for t in walk(s.body) if isinstance(t, K.Alloc))


def test_invariant_temporary_leaves_the_loop_varying_one_stays():
    i, n, m = K.KVar("i", I64), K.KVar("n", I64), K.KVar("m", I64)
    t, u = K.KVar("t", K.Ptr(F64)), K.KVar("u", K.Ptr(F64))
    zero = K.KConst(0, I64)
    body = K.Block((
        K.Alloc(t, n),                           # size invariant: hoisted
        K.Alloc(u, i),                           # size depends on i: stays
        K.Store(t, zero, K.KConst(1.0, F64)),
        K.Free(u),
        K.Free(t),
    ))
    f = K.Function("f", (n, m), K.Block((K.For(i, zero, m, body),)))
    g = hoist_allocations(K.Module([f])).functions[0]
    K.check_module(K.Module([g]))
    first, loop, last = g.body.stms
    assert isinstance(first, K.Alloc) and first.var == t
    assert isinstance(last, K.Free) and last.ptr == t
    assert [type(s).__name__ for s in loop.body.stms] == ["Alloc", "Store", "Free"]
    assert run_function(K.Module([g]), "f", [np.int64(4), np.int64(3)]).leaks() == []


def test_escaping_buffer_is_not_hoisted():
    i, n = K.KVar("i", I64), K.KVar("n", I64)
    t, keep = K.KVar("t", K.Ptr(F64)), K.KVar("keep", K.Ptr(F64))
    zero = K.KConst(0, I64)
    body = K.Block((K.Alloc(t, n), K.Set(keep, t)))     # not freed in the iteration
    f = K.Function("f", (n,), K.Block((K.Set(keep, t), K.For(i, zero, n, body))))
    g = hoist_allocations(K.Module([f])).functions[0]
    assert allocs_in_loops(g) == 1


def test_loop_of_temporaries_runs_with_one_allocation_each():
    src = textwrap.dedent("""
    import pyshark.prelude as ps

    @ps.entry
    def f(xs: ps.Array[ps.f64], k: int) -> ps.f64:
        acc = 0.0
        for it in range(k):
            ys = ps.copy(xs)
            ys[0] = float(it)
            acc = acc + ps.sum(ys)
        return acc
    """)
    p = translate_source(src, "<t>")
    check_program(p)
    m = hoist_allocations(lower_program(p, Options()))
    K.check_module(m)
    f = m.functions[0]
    in_loops = [t.var.name for s in walk(f.body) if isinstance(s, K.For)
                for t in walk(s.body) if isinstance(t, K.Alloc)]
    assert not [n for n in in_loops if n.startswith("copy")]   # the copy is reused
    xs = np.arange(5.0)
    out = Buffer(np.zeros(1))
    r = run_function(m, symbol("f"), [Buffer(xs.copy()), np.int64(5), np.int64(3), out])
    assert r.code == 0 and not r.leaks()
    assert out.array[0] == sum(xs[1:].sum() + it for it in range(3))
