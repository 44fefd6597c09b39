"""codegen/pipeline.py: the pass list, optimise(), and the checker after each pass."""
from __future__ import annotations

import pytest

from opt_build import all_stms, ir, np, same_outcome
from pyshark.codegen.pipeline import PASSES, optimise
from pyshark.core.interp import run_entry
from pyshark.errors import InternalCompilerError
from pyshark.translate import translate_source

SRC = '''
import pyshark.prelude as ps

def sq(x: ps.f32) -> ps.f32:
    return x * x

@ps.entry
def chain(xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
    a = ps.map(lambda x: x + 1.0, xs)
    b = ps.map(lambda x: sq(x), a)
    return ps.map(lambda x, y: x - y, b, ys)

@ps.entry
def two(xs: ps.Array[ps.i32]) -> tuple[ps.Array[ps.i32], ps.Array[ps.i32]]:
    return (ps.map(lambda x: x + 1, xs), ps.map(lambda x: x * 2, xs))

@ps.entry
def rows(xss: ps.Array[ps.Array[ps.f64]]) -> ps.Array[ps.Array[ps.f64]]:
    a = ps.map(lambda r: ps.map(lambda v: v + 1.0, r), xss)
    return ps.map(lambda r: ps.map(lambda v: v * 3.0, r), a)
'''

ARGS = {
    "chain": [[np.array([1.0, 2.0], np.float32), np.array([0.5, 4.0], np.float32)],
              [np.array([1.0], np.float32), np.array([0.5, 4.0], np.float32)]],
    "two": [[np.array([1, -2, 3], np.int32)], [np.zeros(0, np.int32)]],
    "rows": [[np.arange(6.0).reshape(2, 3)], [np.zeros((0, 0))]],
}


def test_pass_list():
    assert [name for name, _ in PASSES] == ["empty-shapes", "inline", "simplify", "cse", "fuse",
                                            "simplify", "hoist"]
    assert all(callable(run) for _, run in PASSES)


def test_optimise_fuses_translated_maps_and_keeps_results():
    p = translate_source(SRC, "t.py")
    q = optimise(p, check=True)
    assert set(q.functions) == {"chain", "two", "rows"}      # sq is inlined away
    for name, nmaps in (("chain", 1), ("two", 1), ("rows", 2)):
        f = q.functions[name]
        assert len(all_stms(f, ir.Map)) == nmaps, name
        assert not all_stms(f, ir.Call)
        for args in ARGS[name]:
            def go(prog):
                try:
                    return ("ok", run_entry(prog, name, list(args)))
                except Exception as exc:       # noqa: BLE001
                    return ("raise", type(exc))
            assert same_outcome(go(p), go(q)), (name, args)
    # the input is left as it was
    assert "sq" in p.functions and all_stms(p.functions["chain"], ir.Call)


def _breaks_ssa(program: ir.Program) -> ir.Program:
    funs = {}
    for name, f in program.functions.items():
        stms = f.body.stms
        funs[name] = ir.FunDef(name, f.params, f.ret, ir.Body(stms + stms[:1], f.body.result))
    return ir.Program(funs, program.entries, program.records, program.filename)


def test_check_names_the_pass_that_broke_the_ir():
    p = translate_source(SRC, "t.py")
    passes = PASSES[:3] + [("broken", _breaks_ssa)] + PASSES[3:]
    with pytest.raises(InternalCompilerError, match="pass 4 'broken'"):
        optimise(p, check=True, passes=passes)
    optimise(p, check=False, passes=passes)            # unchecked: no complaint
