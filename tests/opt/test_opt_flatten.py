"""flatten (codegen/opt/flatten.py, gpu pipeline only): map distribution and
map-loop interchange. The interpreter must compute the same values (bit for
bit) or raise the same exception class after the pass, on the conformance
corpus, on LocVolCalib and on small programs made to hit each decline."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from opt_build import same_outcome
from opt_corpus import MODULES, differences, translated
from pyshark.codegen.opt.flatten import flatten
from pyshark.codegen.pipeline import GPU_PASSES, PASSES, optimise, passes_for
from pyshark.codegen.target import MULTICORE, gpu_target
from pyshark.core import ir
from pyshark.core.check import check_program
from pyshark.core.interp import run_entry
from pyshark.core.pretty import pretty_program
from pyshark.core.traverse import iter_stms
from pyshark.translate import translate_file, translate_source

GPU = gpu_target(256, 32768, False)
ROOT = Path(__file__).resolve().parents[2]


def _outcome(program, entry, args):
    try:
        return ("ok", run_entry(program, entry, [np.copy(a) for a in args]))
    except Exception as exc:       # noqa: BLE001 -- the class is the outcome
        return ("raise", type(exc))


def _same(before, after, entry, *arg_lists):
    check_program(after)
    for args in arg_lists:
        a, b = _outcome(before, entry, args), _outcome(after, entry, args)
        assert same_outcome(a, b), f"{entry}{args}: before {a}, after {b}"


def _top_maps(fun: ir.FunDef) -> list[ir.Let]:
    return [s for s in fun.body.stms if isinstance(s.exp, ir.Map)]


# ---------------------------------------------------------------------------
# The pipeline: the mc list is untouched


def test_mc_pipeline_unchanged():
    assert passes_for(None) is PASSES and passes_for(MULTICORE) is PASSES
    names = [n for n, _ in passes_for(GPU)]
    assert names == [n for n, _ in PASSES + GPU_PASSES]
    assert passes_for(GPU)[len(PASSES)][1].keywords == {"distribute_below": 8192}
    p = translate_file(str(ROOT / "benchmarks/programs/locvolcalib.py"))
    assert pretty_program(optimise(p)) == pretty_program(optimise(p, target=MULTICORE))


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_flatten_on_corpus(stem):
    """After the whole gpu pipeline (and flatten alone on the translated
    program), the corpus computes what it computed before."""
    program, why = translated(stem)
    if program is None:
        pytest.skip(f"{stem} does not translate today ({why})")
    after = optimise(program, check=True, target=GPU)
    diffs = differences(stem, after)
    assert not diffs, "\n".join(diffs[:5])
    alone = flatten(program)
    check_program(alone)
    diffs = differences(stem, alone)
    assert not diffs, "\n".join(diffs[:5])
    versions = flatten(program, distribute_below=3)    # the corpus's small maps distributed
    check_program(versions)
    diffs = differences(stem, versions)
    assert not diffs, "\n".join(diffs[:5])


# ---------------------------------------------------------------------------
# LocVolCalib: the outer map becomes a time loop of maps over the strikes

LVC_ARGS = [[5, 16, 8, 8, 0.0035, 5.0, 0.2, 0.6, 0.5], [0, 16, 8, 8, 0.03, 5.0, 0.2, 0.6, 0.5],
            [3, 4, 3, 5, 0.01, 5.0, 0.2, 0.6, 0.5], [1, 2, 2, 2, 0.01, 5.0, 0.2, 0.6, 0.5],
            [2, 5, 4, 1, 0.01, 5.0, 0.2, 0.6, 0.5],
            [3, 1, 3, 5, 0.01, 5.0, 0.2, 0.6, 0.5],     # IndexError (num_x 1)
            [2, 8, 1, 5, 0.01, 5.0, 0.2, 0.6, 0.5],     # IndexError (num_y 1)
            [2, -1, 1, 5, 0.01, 5.0, 0.2, 0.6, 0.5],    # ShapeError (iota of -1)
            [0, -1, 1, 5, 0.01, 5.0, 0.2, 0.6, 0.5]]    # nothing runs: no error


def _lvc_args(a):
    return [np.int64(x) if isinstance(x, int) else np.float32(x) for x in a]


def test_locvolcalib_interchanged():
    p = translate_file(str(ROOT / "benchmarks/programs/locvolcalib.py"))
    before = optimise(p)
    after = optimise(p, check=True, target=GPU)
    _same(before, after, "locvolcalib", *[_lvc_args(a) for a in LVC_ARGS])
    fun = after.functions["locvolcalib"]
    assert not _top_maps(fun), "the map over strikes is gone from the top level"
    (guard,) = [s for s in fun.body.stms if isinstance(s.exp, ir.If)]
    then = guard.exp.then_body
    (loop,) = [s for s in then.stms if isinstance(s.exp, ir.Loop)]
    outer = guard.exp.cond
    # inside the time loop: maps over the strikes whose functions are maps
    inner = [s for s in loop.exp.body.stms if isinstance(s.exp, ir.Map)]
    over_k = [s for s in inner if s.exp.width == fun.params[0]]
    assert len(over_k) >= 6, pretty_program(after)
    assert all(any(isinstance(x.exp, ir.Map) for x in s.exp.lam.body.stms)
               for s in over_k[:-1])
    # the carried state is the strikes' grids: rank 3
    assert all(p.type.rank == 3 for p in loop.exp.params)
    assert outer.name.startswith("nonempty")


# ---------------------------------------------------------------------------
# Small programs

SRC = '''
import pyshark.prelude as ps

@ps.entry
def steps(xs: ps.Array[ps.f64], n: int, m: int) -> ps.Array[ps.f64]:
    def one(x: ps.f64) -> ps.f64:
        acc = ps.map(lambda i: x * ps.f64(i), ps.iota(m))
        for g in range(n):
            acc = ps.map(lambda a: a * 0.5 + x, acc)
        return ps.sum(acc)
    return ps.map(one, xs)

@ps.entry
def steps_idx(xs: ps.Array[ps.i64], n: int, m: int) -> ps.Array[ps.i64]:
    def one(x: ps.i64) -> ps.i64:
        acc = ps.map(lambda i: x + i, ps.iota(m))
        for g in range(n):
            h = acc[g]
            acc = ps.map(lambda a: a // x + h, acc)
        return acc[0]
    return ps.map(one, xs)

@ps.entry
def ragged(xs: ps.Array[ps.i64], n: int) -> ps.Array[ps.i64]:
    def one(x: ps.i64) -> ps.i64:
        acc = ps.iota(x)
        for g in range(n):
            acc = ps.map(lambda a: a + 1, acc)
        return ps.sum(acc)
    return ps.map(one, xs)

@ps.entry
def rows_out(xs: ps.Array[ps.f32], n: int) -> ps.Array[ps.Array[ps.f32]]:
    def one(x: ps.f32) -> ps.Array[ps.f32]:
        acc = ps.replicate(3, x)
        for g in range(n):
            acc = ps.map(lambda a: a * x, acc)
        return acc
    return ps.map(one, xs)

@ps.entry
def whiles(xs: ps.Array[ps.i64], n: int) -> ps.Array[ps.i64]:
    def one(x: ps.i64) -> ps.i64:
        acc = ps.replicate(2, x)
        for g in range(n):
            acc = ps.map(lambda a: a + 1, acc)
        k = 0
        while k < x:
            k = k + 1
        return acc[0] + k
    return ps.map(one, xs)

@ps.entry
def variant_count(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
    def one(x: ps.i64) -> ps.i64:
        acc = ps.replicate(2, x)
        for g in range(x):
            acc = ps.map(lambda a: a + 1, acc)
        return acc[0]
    return ps.map(one, xs)

@ps.entry
def consumes(xs: ps.Array[ps.i64], n: int) -> ps.Array[ps.i64]:
    def one(x: ps.i64) -> ps.i64:
        acc = ps.replicate(3, x)
        for g in range(n):
            acc = ps.map(lambda a: a + 1, acc)
            acc[0] = x
        return acc[1] + acc[0]
    return ps.map(one, xs)
'''


def _i64(*xs):
    return np.array(xs, np.int64)


CASES = {
    "steps": [[np.array([1.0, -2.0, 0.5]), np.int64(3), np.int64(4)],
              [np.zeros(0), np.int64(3), np.int64(4)],
              [np.array([1.0]), np.int64(0), np.int64(0)],
              [np.array([1.0, 2.0]), np.int64(2), np.int64(-1)]],
    # ZeroDivisionError (x == 0) and IndexError (acc[g] with g >= m) by element
    "steps_idx": [[_i64(1, 2, 3), np.int64(2), np.int64(3)],
                  [_i64(1, 0, 3), np.int64(2), np.int64(3)],
                  [_i64(1, 2), np.int64(5), np.int64(3)],
                  [_i64(0, 2), np.int64(5), np.int64(3)],
                  [_i64(), np.int64(5), np.int64(-3)],
                  [_i64(2), np.int64(5), np.int64(-3)]],
    "ragged": [[_i64(1, 2, 3), np.int64(2)], [_i64(2, 2), np.int64(1)]],
    "rows_out": [[np.array([1.0, 2.0], np.float32), np.int64(3)],
                 [np.zeros(0, np.float32), np.int64(3)]],
    "whiles": [[_i64(1, 2), np.int64(2)]],
    "variant_count": [[_i64(1, 2), ]],
    "consumes": [[_i64(1, 2), np.int64(2)]],
}


@pytest.fixture(scope="module")
def small():
    p = translate_source(SRC, "flat_src.py")
    check_program(p)
    before = optimise(p)
    return before, flatten(before)


@pytest.mark.parametrize("entry", sorted(CASES))
def test_small_same_outcomes(small, entry):
    before, after = small
    _same(before, after, entry, *CASES[entry])


@pytest.mark.parametrize("entry", ["steps", "steps_idx", "rows_out"])
def test_small_interchanged(small, entry):
    before, after = small
    fun = after.functions[entry]
    assert fun is not before.functions[entry]
    soacs = (ir.Map, ir.Reduce)
    loops = [s for s in iter_stms(fun.body) if isinstance(s.exp, ir.Loop)
             and any(isinstance(x.exp, ir.Map)
                     and any(isinstance(y.exp, soacs) for y in x.exp.lam.body.stms)
                     for x in s.exp.body.stms)]
    assert loops, pretty_program(after)


@pytest.mark.parametrize("entry", ["ragged", "whiles", "variant_count", "consumes"])
def test_small_declined(small, entry):
    """Rows whose length depends on the element, while loops, a trip count
    that depends on the element, an in-place update of the carried array:
    the map is left as it is."""
    before, after = small
    assert after.functions[entry] is before.functions[entry]


# ---------------------------------------------------------------------------
# Versions: a map of several SOACs (no loop) is distributed below a width


VERSIONS_SRC = '''
import pyshark.prelude as ps
M = ps.Array[ps.Array[ps.f32]]

@ps.entry
def step(grids: ps.Array[M], k: int) -> ps.Array[M]:
    def one(g: M) -> M:
        t = ps.transpose(g)
        s = ps.map(lambda r: ps.map(lambda x: x * 2.0, r), t)
        return ps.map(lambda r, q: ps.map(lambda a, b: a + b + ps.f32(r[k]), r, q), g,
                      ps.transpose(s))
    return ps.map(one, grids)
'''


@pytest.mark.parametrize("below", [1, 3, 1000])
def test_versions_distribute_only_narrow_maps(below):
    before = optimise(translate_source(VERSIONS_SRC, "versions.py"), passes=PASSES)
    after = flatten(before, distribute_below=below)
    check_program(after)
    ifs = [s for s in after.functions["step"].body.stms if isinstance(s.exp, ir.If)]
    assert ifs, pretty_program(after)
    assert flatten(before) is before or not [
        s for s in flatten(before).functions["step"].body.stms if isinstance(s.exp, ir.If)]
    r = np.random.default_rng(3)
    f = np.float32
    for n in (0, 1, 2, 3, 4):
        g = r.random((n, 3, 2), dtype=f)
        _same(before, after, "step", [g, 0], [g, 1], [g, 5])     # k = 5: IndexError
    _same(before, after, "step", [np.zeros((2, 0, 3), f), 0])
