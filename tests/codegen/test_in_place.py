"""codegen/kir_passes/in_place.py: a row built in a temporary and copied into
the result is built in its place when the sizes agree at run time; a
temporary that is read, copied elsewhere or whose destination is touched
keeps its copy; results are Python mode's, irregular rows still raise
ShapeError (and an error inside a row is still the row's own)."""
from __future__ import annotations

import numpy as np
import pytest

from backend_pair import python_and
from pyshark.codegen import kir as K
from pyshark.codegen.kir_interp import Buffer, run_function
from pyshark.codegen.kir_passes.in_place import rows_in_place
from pyshark.codegen.stages import pipeline_for, run_stages
from pyshark.core.types import F64, I64
from pyshark.errors import ShapeError
from pyshark.translate import translate_source

i, j, n, m = (K.KVar(x, I64) for x in "ijnm")
t, dst, other = (K.KVar(x, K.Ptr(F64)) for x in ("t", "dst", "other"))
ZERO = K.KConst(0, I64)


def walk(b):
    for s in b.stms:
        yield s
        for sb in K.sub_blocks(s):
            yield from walk(sb)


def _row_fn(mid_extra=(), copy_count=m) -> K.Function:
    """parfor i in 0..n { t = alloc(m); for j: t[j] = i * m + j; copy(dst + i * m, t, m); free(t) }"""
    val = K.Cast(F64, K.Bin("add", K.Bin("mul", i, m), j))
    fill = K.For(j, ZERO, m, K.Block((K.Store(t, j, val),)))
    body = K.Block((K.Alloc(t, m), fill) + tuple(mid_extra) + (
        K.CopyMem(K.PtrAdd(dst, K.Bin("mul", i, m)), t, copy_count), K.Free(t)))
    return K.Function("f", (n, m, dst, other), K.Block((K.ParFor(i, n, body),)))


def _copies(f: K.Function) -> list:
    return [s for s in walk(f.body) if isinstance(s, K.CopyMem)]


def _run(f: K.Function, rows: int, cols: int):
    out = np.full(rows * cols, -1.0)
    res = run_function(K.Module([f]), "f", [np.int64(rows), np.int64(cols), Buffer(out),
                                              Buffer(np.zeros(rows * cols + 1))])
    assert res.leaks() == []
    return out


def test_row_is_built_in_its_place():
    f = _row_fn()
    g = rows_in_place(K.Module([f])).functions[0]
    K.check_module(K.Module([g]))
    (par,) = g.body.stms
    kinds = [type(s).__name__ for s in par.body.stms]
    assert kinds == ["Set", "If", "For", "If"]           # ip, t = dst | alloc, fill, copy unless ip
    sel = par.body.stms[1]
    assert isinstance(sel.then.stms[0], K.Set) and sel.then.stms[0].var == t
    assert isinstance(sel.orelse.stms[0], K.Alloc)
    tail = par.body.stms[3]
    assert [type(s).__name__ for s in tail.then.stms] == ["CopyMem", "Free"]
    for rows, cols in ((0, 3), (1, 1), (4, 5), (3, 0)):
        np.testing.assert_array_equal(_run(g, rows, cols), _run(f, rows, cols))
        np.testing.assert_array_equal(_run(g, rows, cols), np.arange(rows * cols, dtype=float))


def test_temporary_that_is_read_or_whose_destination_is_touched_keeps_its_copy():
    k = K.KVar("k", F64)
    read_back = K.Set(k, K.Load(t, ZERO))                       # t is read
    touch_dst = K.Store(dst, ZERO, K.KConst(1.0, F64))          # dst written beside t
    derived = K.KVar("d2", K.Ptr(F64))
    via_alias = (K.Set(derived, K.PtrAdd(dst, i)), K.Set(k, K.Load(derived, ZERO)))
    moved_size = K.Set(m, K.Bin("add", m, K.KConst(0, I64)))   # the copy's size reassigned
    for extra in ((read_back,), (touch_dst,), via_alias, (moved_size,)):
        f = _row_fn(extra)
        g = rows_in_place(K.Module([f])).functions[0]
        assert g == f or len(_copies(g)) == 1 and not any(
            isinstance(s, K.Set) and s.var.name.startswith("ip_rp") for s in walk(g.body)), extra
    # a copy of t elsewhere: t is mentioned outside the pattern
    f = _row_fn((K.CopyMem(other, t, m),))
    g = rows_in_place(K.Module([f])).functions[0]
    assert not any(isinstance(s, K.Set) and s.var.name.startswith("ip_rp") for s in walk(g.body))


def test_sizes_that_disagree_take_the_copy():
    # a copy of m - 1 elements: ip is false at run time, the old code runs
    short = K.Bin("sub", m, K.KConst(1, I64))
    f = _row_fn(copy_count=short)
    g = rows_in_place(K.Module([f])).functions[0]
    assert any(isinstance(s, K.Set) and s.var.name.startswith("ip_rp") for s in walk(g.body))
    np.testing.assert_array_equal(_run(g, 3, 4), _run(f, 3, 4))


SRC = """
import pyshark.prelude as ps

@ps.entry
def pairs(a: ps.Array[ps.Array[ps.f32]]) -> tuple[ps.Array[ps.Array[ps.f32]], ps.Array[ps.Array[ps.f32]]]:
    # a map of rows whose function returns two arrays (unzipped): each row
    # used to be built in two temporaries and copied
    return ps.unzip(ps.map(lambda r: ps.unzip(ps.map(lambda x: (x + 1.0, x * x), r)), a))

@ps.entry
def neighbours(a: ps.Array[ps.Array[ps.i64]], k: int) -> ps.Array[ps.Array[ps.i64]]:
    # row i reads row i + k: IndexError past the end, as in Python mode
    return ps.map(lambda i, r: ps.map(lambda x, y: x - y, r, a[i + k]), ps.iota(len(a)), a)

@ps.entry
def ragged(n: int, m: int) -> ps.Array[ps.Array[ps.i64]]:
    # row 2 is longer: ShapeError after it ran
    return ps.map(lambda i: ps.map(lambda j: i * j, ps.iota(m + (1 if i == 2 else 0))), ps.iota(n))

@ps.entry
def cube_steps(u: ps.Array[ps.Array[ps.Array[ps.f32]]], steps: int
               ) -> ps.Array[ps.Array[ps.Array[ps.f32]]]:
    # a 3-D result whose planes and rows are built in place, each step's
    # grid the next step's input (an alias of the destination, set after it
    # is built)
    n = len(u)
    for _ in range(steps):
        u = [[[u[i][j][k] if i == 0 or j == 0 or k == 0 or i == n - 1 or j == n - 1 or k == n - 1
               else (u[i - 1][j][k] + u[i + 1][j][k] + u[i][j - 1][k] + u[i][j][k + 1]) * 0.25
               for k in range(n)] for j in range(n)] for i in range(n)]
    return ps.array(u)

@ps.entry
def ragged_planes(n: int, m: int) -> ps.Array[ps.Array[ps.Array[ps.i64]]]:
    # plane 1's rows are longer: ShapeError
    return ps.array([[[i + j + k for k in range(m + (1 if i == 1 else 0))] for j in range(m)]
                     for i in range(n)])
"""


def test_map_of_rows_is_built_in_place():
    program = translate_source(SRC, "<t>")
    m = run_stages(program, pipeline_for(), check=True, until="rows-in-place")
    f = next(f for f in m.functions if f.name.endswith("pairs"))
    assert [s for s in walk(f.body) if isinstance(s, K.Set) and s.var.name.startswith("ip_rp")]
    for s in walk(f.body):          # every copy of a row is now the fallback's
        if isinstance(s, K.ParFor):
            assert not any(isinstance(u, K.CopyMem) for u in s.body.stms)


def _copies_unguarded(b: K.Block, guarded: bool = False) -> list:
    """The CopyMems not inside `if not ip_rp.. {}` (a row's fallback) or
    `if not own.. {}` (a loop's input copied when no step ran)."""
    out = []
    for s in b.stms:
        if isinstance(s, K.CopyMem) and not guarded:
            out.append(s)
        g = guarded or (isinstance(s, K.If) and isinstance(s.cond, K.Un) and s.cond.op == "not"
                        and s.cond.x.__class__ is K.KVar
                        and s.cond.x.name.startswith(("ip_rp", "own")))
        for sb in K.sub_blocks(s):
            out += _copies_unguarded(sb, g)
    return out


def test_planes_and_rows_of_a_3d_result_are_built_in_place():
    """Both levels: a row into its plane, the plane into the result, also
    where the result becomes the loop's next input after it is built."""
    program = translate_source(SRC, "<t>")
    m = run_stages(program, pipeline_for(), check=True, until="rows-in-place")
    f = next(f for f in m.functions if f.name.endswith("cube_steps"))
    assert len({s.var.name for s in walk(f.body)
                if isinstance(s, K.Set) and s.var.name.startswith("ip_rp")}) >= 2
    assert _copies_unguarded(f.body) == []


@pytest.fixture(scope="module", params=["kir", "cpu"])
def wrappers(request, tmp_path_factory):
    return python_and(request.param, SRC, tmp_path_factory, "in_place")


@pytest.mark.parametrize("rows,cols", [(0, 0), (0, 3), (1, 1), (3, 0), (5, 7), (40, 33)])
def test_rows_agree_with_python_mode(wrappers, rows, cols):
    py, w = wrappers
    rng = np.random.default_rng(rows * 100 + cols)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    if rows and cols:
        a[rows - 1, 0] = np.nan
    for got, want in zip(w.pairs(a), py.pairs(a)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    ai = rng.integers(-50, 50, (rows, cols))
    got, want = w.neighbours(ai, 0), py.neighbours(ai, 0)
    assert got.shape == want.shape and np.array_equal(got, want)
    if rows <= 2:
        got, want = w.ragged(rows, cols), py.ragged(rows, cols)
        assert got.shape == want.shape and np.array_equal(got, want)


def test_errors_are_python_modes(wrappers):
    py, w = wrappers
    a = np.ones((6, 5), np.int64)
    for x in (py, w):
        with pytest.raises(IndexError):
            x.neighbours(a, 1)
        with pytest.raises(ShapeError):
            x.ragged(4, 3)


def test_destination_reached_through_an_earlier_alias_keeps_its_copy():
    # dst was set from `other` before the loop: reading `other` in the row
    # reads the destination's block
    k = K.KVar("k", F64)
    f = _row_fn((K.Set(k, K.Load(other, ZERO)),))
    body = f.body.stms
    f2 = K.Function("f", f.params, K.Block((K.Set(dst, other),) + body))
    g = rows_in_place(K.Module([f2])).functions[0]
    assert not any(isinstance(s, K.Set) and s.var.name.startswith("ip_rp") for s in walk(g.body))
    # without the alias the same row is built in place
    g = rows_in_place(K.Module([f])).functions[0]
    assert any(isinstance(s, K.Set) and s.var.name.startswith("ip_rp") for s in walk(g.body))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 9])
@pytest.mark.parametrize("steps", [0, 1, 2])
def test_a_3d_result_in_place_agrees_with_python_mode(wrappers, n, steps):
    py, w = wrappers
    u = np.random.default_rng(n).standard_normal((n, n, n)).astype(np.float32)
    got, want = w.cube_steps(u, steps), py.cube_steps(u, steps)
    assert got.shape == want.shape and np.array_equal(got, want)
    assert np.array_equal(u, np.random.default_rng(n).standard_normal((n, n, n)).astype(np.float32))
    got, want = w.ragged_planes(1, n), py.ragged_planes(1, n)
    assert got.shape == want.shape and np.array_equal(got, want)
    for x in (py, w):
        with pytest.raises(ShapeError):
            x.ragged_planes(3, n)


def _into_fresh_block(alias_before: bool) -> K.Function:
    """for s in 0..2 { blk = alloc(n * m); [d2 = blk;] parfor i { t = alloc(m);
    fill t; x = d2[0]; copy(blk + i * m, t, m); free(t) }; [d2 = blk] }: the
    row reads d2, which is set from the block being written either before
    the rows (it then points into it) or after them (the previous step's
    block, as an iterated stencil's grid)."""
    s_, x = K.KVar("s", I64), K.KVar("x", F64)
    blk, d2 = K.KVar("blk", K.Ptr(F64)), K.KVar("d2", K.Ptr(F64))
    f = _row_fn((K.Set(x, K.Load(d2, ZERO)),))
    (par,) = f.body.stms
    body = [K.CopyMem(K.PtrAdd(blk, K.Bin("mul", i, m)), u.src, u.count)
            if isinstance(u, K.CopyMem) else u for u in par.body.stms]
    par = K.ParFor(i, n, K.Block(tuple(body)))
    alias = K.Set(d2, blk)
    step = [K.Alloc(blk, K.Bin("mul", n, m))] + ([alias] if alias_before else []) + [par] + (
        [] if alias_before else [alias])
    return K.Function("f", (n, m, dst, other), K.Block((
        K.Set(d2, other), K.For(s_, ZERO, K.KConst(2, I64), K.Block(tuple(step))))))


def test_an_alias_of_the_destination_made_before_the_rows_keeps_the_copy():
    g = rows_in_place(K.Module([_into_fresh_block(alias_before=True)])).functions[0]
    assert not any(isinstance(s, K.Set) and s.var.name.startswith("ip_rp") for s in walk(g.body))


def test_an_alias_made_after_the_rows_points_to_an_earlier_block():
    g = rows_in_place(K.Module([_into_fresh_block(alias_before=False)])).functions[0]
    assert any(isinstance(s, K.Set) and s.var.name.startswith("ip_rp") for s in walk(g.body))
