"""Index-set splitting (codegen/kir_passes/split.py): the Rodinia-shaped
hotspot (a corner/edge/interior if/elif chain), clamped stencils and
`i < k` splits give Python mode's values and errors on the kir
interpreter and the native backends, at every small size, at sizes off
the vector width, with split points outside the range, and with an index
out of range; and the split really happens (pieces, no branch or check
left in the interior)."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from pyshark import Wrapper
from pyshark.codegen import kir as K
from pyshark.codegen.kir_passes.split import split_index_sets
from pyshark.codegen import stages
from pyshark.codegen.stages import build_kernels
from pyshark.codegen.target import gpu_target
from pyshark.core.check import check_program
from pyshark.translate import translate_source
from pyshark.wrapper.registry import available_backends

SRC = '''
import pyshark.prelude as ps

Grid = ps.Array[ps.Array[ps.f32]]


def step(temp: Grid, power: Grid, rows: int, cols: int, cap: ps.f32, rx: ps.f32,
         ry: ps.f32, rz: ps.f32, amb: ps.f32) -> Grid:
    def cell(r: int, c: int) -> ps.f32:
        t = temp[r, c]
        if r == 0 and c == 0:
            d = cap * (power[r, c] + (temp[r, c + 1] - t) * rx + (temp[r + 1, c] - t) * ry + (amb - t) * rz)
        elif r == 0 and c == cols - 1:
            d = cap * (power[r, c] + (temp[r, c - 1] - t) * rx + (temp[r + 1, c] - t) * ry + (amb - t) * rz)
        elif r == rows - 1 and c == cols - 1:
            d = cap * (power[r, c] + (temp[r, c - 1] - t) * rx + (temp[r - 1, c] - t) * ry + (amb - t) * rz)
        elif r == rows - 1 and c == 0:
            d = cap * (power[r, c] + (temp[r, c + 1] - t) * rx + (temp[r - 1, c] - t) * ry + (amb - t) * rz)
        elif r == 0:
            d = cap * (power[r, c] + (temp[r, c + 1] + temp[r, c - 1] - 2.0 * t) * rx + (temp[r + 1, c] - t) * ry + (amb - t) * rz)
        elif r == rows - 1:
            d = cap * (power[r, c] + (temp[r, c + 1] + temp[r, c - 1] - 2.0 * t) * rx + (temp[r - 1, c] - t) * ry + (amb - t) * rz)
        elif c == cols - 1:
            d = cap * (power[r, c] + (temp[r + 1, c] + temp[r - 1, c] - 2.0 * t) * ry + (temp[r, c - 1] - t) * rx + (amb - t) * rz)
        elif c == 0:
            d = cap * (power[r, c] + (temp[r + 1, c] + temp[r - 1, c] - 2.0 * t) * ry + (temp[r, c + 1] - t) * rx + (amb - t) * rz)
        else:
            d = cap * (power[r, c] + (temp[r + 1, c] + temp[r - 1, c] - 2.0 * t) * ry
                       + (temp[r, c + 1] + temp[r, c - 1] - 2.0 * t) * rx + (amb - t) * rz)
        return t + d

    return ps.tabulate_2d(rows, cols, cell)


@ps.entry
def hotspot(iterations: int, temp: Grid, power: Grid, cap: ps.f32, rx: ps.f32, ry: ps.f32,
            rz: ps.f32, amb: ps.f32) -> Grid:
    rows = len(temp)
    cols = len(temp[0])
    for it in range(iterations):
        temp = step(temp, power, rows, cols, cap, rx, ry, rz, amb)
    return temp


@ps.entry
def clamped(g: Grid) -> Grid:
    rows = len(g)
    cols = len(g[0])
    return ps.tabulate_2d(rows, cols, lambda r, c: g[max(r - 1, 0), c] + g[min(r + 1, rows - 1), c]
                          + g[r, max(c - 1, 0)] + g[r, min(c + 1, cols - 1)] - 4.0 * g[r, c])


@ps.entry
def below(xs: ps.Array[int], k: int) -> ps.Array[int]:
    return ps.tabulate(len(xs), lambda i: xs[i] * 2 if i < k else xs[i] - 1)


@ps.entry
def at_most(xs: ps.Array[int], k: int) -> ps.Array[int]:
    return ps.tabulate(len(xs), lambda i: xs[i] + 7 if i <= k else xs[i] - 3 if i > k + 2 else 0)


@ps.entry
def shifted(xs: ps.Array[int], k: int) -> ps.Array[int]:
    # i + k may leave the array: the first bad index raises, as in Python mode
    return ps.tabulate(len(xs), lambda i: xs[i] if i == 0 else xs[i + k])


@ps.entry
def edges(g: ps.Array[ps.Array[int]], k: int) -> ps.Array[ps.Array[int]]:
    rows = len(g)
    cols = len(g[0])
    return ps.tabulate_2d(rows, cols, lambda r, c: g[r, c] if r == 0 or c == cols - 1
                          else g[r - 1, c + k])
'''

CARRIED = '''

@ps.entry
def carried(xs: ps.Array[int], k: int) -> tuple[int, ps.Array[int]]:
    # sequential loops whose accumulators cross the split points
    total = 0
    for i in range(len(xs)):
        total = total + (xs[i] if i < k else -xs[i])

    def row(i: int) -> int:
        acc = 0
        for j in range(len(xs)):
            acc = acc + (xs[j] * i if j == 0 or j == len(xs) - 1 else xs[j - 1])
        return acc
    return (total, ps.tabulate(len(xs), row))
'''
SRC = SRC + CARRIED

HUGE = '''

@ps.entry
def hashed_rows(n: int, m: int) -> ps.Array[ps.u64]:
    # ps.u64(t) checks 0 <= t <= 2**63 - 1: a comparison with a constant
    # beyond every range (its split point once wrapped, and the piece after
    # it raised OverflowError for every t)
    def row(p: int) -> ps.u64:
        acc = ps.u64(0)
        for t in range(m):
            acc = acc + ((ps.u64(p) * 6364136223846793005 + ps.u64(t) * 1442695040888963407) >> 11)
        return acc
    return ps.tabulate(n, row)


@ps.entry
def huge_bounds(xs: ps.Array[int]) -> ps.Array[int]:
    return ps.tabulate(len(xs), lambda i: xs[i] if i <= 9223372036854775807 and i >= -9223372036854775807
                       else 0 if i < 4611686018427387904 else 1)
'''
SRC = SRC + HUGE

ARGS = dict(cap=np.float32(0.5), rx=np.float32(0.1), ry=np.float32(0.2), rz=np.float32(0.05),
            amb=np.float32(80.0))


def _modules(backend, tmp_path_factory):
    """Python mode, `backend`, and `backend` without the split (whose error
    messages the split must keep: Python mode's are numpy's)."""
    if backend not in available_backends():
        pytest.skip(f"{backend} unavailable")
    d = tmp_path_factory.mktemp(f"split_{backend}")
    src = d / "splitmod.py"
    src.write_text(textwrap.dedent(SRC))
    out = []
    for b, tag in (("python", "py"), (backend, "on"), (backend, "off")):
        w = Wrapper(b, cache_dir=d / f"cache_{tag}")
        w.add_source_file(src)
        with pytest.MonkeyPatch.context() as mp:
            if tag == "off":
                mp.setattr(stages, "split_index_sets", lambda m: m)
            out.append(w.compile_and_load())
    return out


@pytest.fixture(scope="module", params=["kir", "cpu", "opencl"])
def mods(request, tmp_path_factory):
    return _modules(request.param, tmp_path_factory)


def _same(mods, name, *args):
    py, nat, ref = mods
    try:
        want = getattr(py, name)(*args)
    except Exception as exc:            # the error Python mode raises
        with pytest.raises(type(exc)) as got:
            getattr(nat, name)(*args)
        with pytest.raises(type(exc)) as before:
            getattr(ref, name)(*args)
        assert str(got.value) == str(before.value)
        return
    got = getattr(nat, name)(*args)
    pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
    for g, w in pairs:
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-4)


SHAPES = [(1, 1), (1, 5), (5, 1), (2, 2), (2, 3), (3, 2), (3, 3), (4, 7), (7, 17), (9, 33),
          (16, 16), (5, 0), (0, 0)]


@pytest.mark.parametrize("shape", SHAPES)
def test_hotspot_chain_matches_python(mods, shape):
    rng = np.random.default_rng(sum(shape))
    t = rng.uniform(300, 340, shape).astype(np.float32)
    p = rng.uniform(0, 1, shape).astype(np.float32)
    if shape[0] == 0:
        return                           # len(temp[0]) raises in both; tested below
    _same(mods, "hotspot", 3, t, p, *ARGS.values())


@pytest.mark.parametrize("shape", SHAPES[:-2])
def test_clamped_stencil_matches_python(mods, shape):
    g = np.random.default_rng(7).uniform(-1, 1, shape).astype(np.float32)
    _same(mods, "clamped", g)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 9, 17])
@pytest.mark.parametrize("k", [-5, -1, 0, 1, 2, 8, 16, 17, 40, 2**62, -2**62, 2**63 - 1, -2**63])
def test_split_point_anywhere(mods, n, k):
    xs = np.arange(n, dtype=np.int64) * 3 + 1
    _same(mods, "below", xs, k)
    _same(mods, "at_most", xs, k)


@pytest.mark.parametrize("n", [0, 1, 3, 17])
@pytest.mark.parametrize("m", [0, 1, 5])
def test_comparisons_with_constants_beyond_every_range(mods, n, m):
    _same(mods, "hashed_rows", n, m)
    _same(mods, "huge_bounds", np.arange(n, dtype=np.int64) - 1)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10])
@pytest.mark.parametrize("k", [-1, 0, 1, 3, 11])
def test_carried_values_cross_pieces(mods, n, k):
    _same(mods, "carried", np.arange(n, dtype=np.int64) + 2, k)


@pytest.mark.parametrize("n,k", [(5, 0), (5, 1), (5, 4), (5, 5), (5, -1), (5, -6), (1, 3),
                                 (17, 2), (17, -18), (17, 2**62)])
def test_out_of_range_raises_like_python(mods, n, k):
    xs = np.arange(n, dtype=np.int64)
    _same(mods, "shifted", xs, k)


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 5), (6, 9)])
@pytest.mark.parametrize("k", [-1, 0, 1, 2, -3])
def test_out_of_range_in_2d_raises_like_python(mods, shape, k):
    g = np.arange(shape[0] * shape[1], dtype=np.int64).reshape(shape)
    _same(mods, "edges", g, k)


# -- the split happens ------------------------------------------------------


def _kernels(target="cpu"):
    program = translate_source(textwrap.dedent(SRC), "<split>")
    check_program(program)
    return build_kernels(program, target=gpu_target(256, 32768, False) if target != "cpu" else None,
                         check=True)


def _fn(m, name):
    return next(f for f in m.functions if f.name == f"pyshark_{name}")


def _innermost_fors(b):
    for s in K.walk_stms(b):
        if isinstance(s, K.For) and not any(isinstance(t, (K.For, K.While))
                                            for t in K.walk_stms(s.body)):
            yield s


def test_cpu_interior_is_straight_line():
    m = _kernels()
    f = _fn(m, "hotspot")
    clean = [s for s in _innermost_fors(f.body)
             if not any(isinstance(t, (K.If, K.Fail)) for t in K.walk_stms(s.body))]
    # the interior of the unchecked version; the checked one (run only when a
    # run-time bounds check fails) keeps its form: the budget goes to the loop
    # expected to run
    assert len(clean) >= 1
    (step,) = [s for s in K.walk_stms(f.body) if isinstance(s, K.For)
               and any(isinstance(t, K.ParFor) for t in K.walk_stms(s.body))]
    n_par = sum(isinstance(s, K.ParFor) for s in K.walk_stms(step.body))
    assert n_par == 2                    # the row pieces as one region, and the fallback


def test_cpu_row_pieces_are_one_region():
    """The pieces of a ParFor over rows (its iterations loop) are one ParFor
    that picks the piece per row, not a ParFor per piece (one fork and join
    per step of a stencil, and no boundary strip run by the calling thread
    alone while the team waits)."""
    f = _fn(_kernels(), "hotspot")
    (step,) = [s for s in K.walk_stms(f.body) if isinstance(s, K.For)
               and any(isinstance(t, K.ParFor) for t in K.walk_stms(s.body))]
    guarded = [s for s in K.walk_stms(step.body) if isinstance(s, K.If)
               and any(isinstance(t, K.ParFor) for t in s.then.stms)]
    assert guarded                                  # the split version, the original its else
    for g in guarded:
        pars = [t for t in g.then.stms if isinstance(t, K.ParFor)]
        assert len(pars) == 1
        (first,) = [t for t in pars[0].body.stms if not isinstance(t, K.Set)][:1]
        assert isinstance(first, K.If)              # if r < a {top} elif r < b {interior} else {bottom}


def test_opencl_rows_are_split_when_asked():
    """The gpu pipeline leaves the stage out (more launches: slower on the
    H200, docs/opencl-backend.md); the pass still splits a gpu target's
    flat 2-D space by rows when run."""
    program = translate_source(textwrap.dedent(SRC), "<split>")
    m = build_kernels(program, target=gpu_target(256, 32768, False), until="hoist-allocations")
    before = sum(isinstance(s, K.ParFor) for s in K.walk_stms(_fn(m, "hotspot").body))
    f = _fn(split_index_sets(m), "hotspot")
    assert sum(isinstance(s, K.ParFor) for s in K.walk_stms(f.body)) >= before + 3   # 3 rows + fallback


def test_no_comparison_no_split():
    program = translate_source(textwrap.dedent('''
        import pyshark.prelude as ps
        @ps.entry
        def f(xs: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
            return ps.map(lambda x: x * 2.0, xs)
        '''), "<plain>")
    check_program(program)
    m = build_kernels(program, until="hoist-allocations")
    assert K.pretty_module(split_index_sets(m)) == K.pretty_module(m)


@pytest.mark.parametrize("budget", [0, 10, 60, 200, 600, 3000])
def test_growth_stays_within_the_budget(budget):
    """split_function adds at most `budget` statements, counting a split's
    inner splits once, and a declined split (one over the budget, made or
    declined before its pieces exist) spends nothing: a larger budget never
    gives less growth."""
    from pyshark.codegen.kir_passes.split import split_function
    program = translate_source(textwrap.dedent(SRC), "<split>")
    check_program(program)
    m = build_kernels(program, until="hoist-allocations")
    f = _fn(m, "hotspot")

    def size(fn):
        return sum(1 for _ in K.walk_stms(fn.body))
    grown = size(split_function(f, budget)) - size(f)
    assert grown <= budget
    if budget:
        assert grown >= size(split_function(f, budget // 2)) - size(f) >= 0
    K.check_module(K.Module([split_function(f, budget)], list(m.messages)))


def test_one_region_keeps_the_rows_of_a_piece_that_folds_to_nothing():
    """parfor r in 0..n { if r == 0 {} else { for c: out[r*m + c] = r } }:
    the r == 0 piece folds to nothing; in the one region its row must still
    do nothing, not run the next piece's body with r = -1."""
    from pyshark.codegen.kir_interp import Buffer, run_function
    from pyshark.core.types import F64, I64
    r, c, n, m = (K.KVar(x, I64) for x in "rcnm")
    out = K.KVar("out", K.Ptr(F64))
    row = K.For(c, K.KConst(0, I64), m, K.Block((
        K.Store(out, K.Bin("add", K.Bin("mul", r, m), c), K.Cast(F64, r)),)))
    body = K.Block((K.If(K.Bin("eq", r, K.KConst(0, I64)), K.Block(()), K.Block((row,))),))
    f = K.Function("f", (n, m, out), K.Block((K.ParFor(r, n, body),)))
    g = split_index_sets(K.Module([f]))
    K.check_module(g)
    pars = [s for s in K.walk_stms(g.functions[0].body) if isinstance(s, K.ParFor)]
    assert any(isinstance(p.body.stms[0], K.If) and p.var.name != "r" for p in pars)   # split, one region
    for rows in (0, 1, 2, 5):
        got = np.full(rows * 3, -1.0)
        run_function(g, "f", [np.int64(rows), np.int64(3), Buffer(got)])
        want = np.repeat(np.arange(rows, dtype=np.float64), 3)
        want[:3] = -1.0
        assert np.array_equal(got, want[:rows * 3]), rows
