"""The work guard of a ParFor whose body loops (codegen/par_work.py):
parallel from par_min units of work, the count of the parallel loop times
the work of one iteration; no guard where a loop's count is not known
before the loop."""
from __future__ import annotations

import textwrap
from collections import Counter

import numpy as np
import pytest

from pyshark.codegen import kir as K
from pyshark.codegen import par_work
from pyshark.codegen import scalar as S
from pyshark.codegen.kir_interp import _Interp
from pyshark.codegen.lower import Options, lower_program, symbol
from pyshark.core.check import check_program
from pyshark.core.types import I64
from pyshark.translate import translate_source

P = 1 << 15


def lower(src: str, **opts) -> K.Module:
    program = translate_source("import pyshark.prelude as ps\n" + textwrap.dedent(src), "<test>")
    check_program(program)
    m = lower_program(program, Options(**opts))
    K.check_module(m)
    return m


def guard_of(m: K.Module, name: str) -> tuple[K.ParFor, list]:
    """The entry's first ParFor and the host Sets before it."""
    f = next(f for f in m.functions if f.name == symbol(name))
    before = []
    for s in f.body.stms:
        if isinstance(s, K.ParFor):
            return s, before
        if isinstance(s, K.Set):
            before.append(s)
    raise AssertionError("no ParFor at the entry's top level")


def goes_parallel(m: K.Module, name: str, sizes: dict) -> bool:
    """Whether the guard holds for params named by suffix -> value."""
    f = next(f for f in m.functions if f.name == symbol(name))
    env = {}
    for p in f.params:
        for suffix, v in sizes.items():
            if p.name.endswith(suffix):
                env[p.name] = np.int64(v)
    par, before = guard_of(m, name)
    it = _Interp(2, "forward", 0, 1 << 20)
    for s in before:
        if s.var.type == I64:
            env[s.var.name] = it.eval(s.value, env)
    return par.parallel_if is None or bool(it.eval(par.parallel_if, env))


ROW_SUMS = """
@ps.entry
def row_sums(xss: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.f32]:
    return ps.map(lambda row: ps.sum(row), xss)
"""


@pytest.mark.parametrize("rows,cols,par", [
    (256, 4, False),          # kmeans-tiny-sized: a few thousand inner iterations
    (64, 16, False),
    (1, 1 << 20, True),       # one long row: still worth the threads? the guard says work
    (1 << 15, 0, True),       # par_min rows of nothing: as a loop-free body
    (2, 1 << 15, True),
    (0, 1 << 20, False),
    (4096, 4096, True),
    (1 << 40, 1 << 40, True),  # saturated, no overflow
])
def test_row_sums_guard_counts_rows_times_columns(rows, cols, par):
    m = lower(ROW_SUMS)
    assert goes_parallel(m, "row_sums", {"_n0": rows, "_n1": cols}) is par


def test_guard_threshold_follows_par_min():
    m = lower(ROW_SUMS, par_min=8)          # 4 units of work
    assert goes_parallel(m, "row_sums", {"_n0": 2, "_n1": 3}) is True
    assert goes_parallel(m, "row_sums", {"_n0": 1, "_n1": 1}) is False


def test_while_loop_inside_keeps_always_parallel():
    m = lower("""
    @ps.entry
    def steps(xs: ps.Array[ps.i64]) -> ps.Array[ps.i64]:
        def collatz(x: int) -> int:
            n = 0
            while x > 1:
                x = x // 2 if x % 2 == 0 else 3 * x + 1
                n += 1
            return n
        return ps.map(collatz, xs)
    """)
    par, _ = guard_of(m, "steps")
    assert par.parallel_if is None


def test_triangular_nest_has_no_estimate():
    i, j, k = K.KVar("i", I64), K.KVar("j", I64), K.KVar("k", I64)
    n = K.KVar("n", I64)
    inner = K.For(k, S.const(0, I64), j, K.Block(()))
    body = K.Block((K.For(j, S.const(0, I64), i, K.Block((inner,))),))
    assert par_work.loop_products(body, i) is None      # j's count is the parallel index
    body2 = K.Block((K.For(j, S.const(0, I64), n, K.Block((inner,))),))
    assert par_work.loop_products(body2, i) is None     # k's count is j


def test_counts_followed_through_single_assignments():
    i, j, t, n = K.KVar("i", I64), K.KVar("j", I64), K.KVar("t", I64), K.KVar("n", I64)
    body = K.Block((K.Set(t, S.b("add", n, S.const(1, I64))),
                    K.For(j, S.const(0, I64), t, K.Block(()))))
    got = par_work.loop_products(body, i)
    assert got == Counter({(S.b("add", n, S.const(1, I64)),): 1})
    twice = K.Block((K.Set(t, n), K.Set(t, S.b("add", n, S.const(1, I64))),
                     K.For(j, S.const(0, I64), t, K.Block(()))))
    assert par_work.loop_products(twice, i) is None


def test_constant_guard_folds():
    sets = []

    def let(hint, e):
        v = K.KVar(f"{hint}{len(sets)}", I64)
        sets.append(K.Set(v, e))
        return v
    prods = Counter({(S.const(100, I64),): 1})
    assert par_work.work_guard(S.const(1000, I64), prods, P, let) is None      # 101000 >= P
    g = par_work.work_guard(S.const(10, I64), prods, P, let)
    assert isinstance(g, K.KConst) and g.value is False


TRANSPOSE = """
@ps.entry
def tr(xss: ps.Array[ps.Array[ps.f32]]) -> ps.Array[ps.Array[ps.f32]]:
    return ps.transpose(xss)
"""


@pytest.mark.parametrize("rows,cols,par", [(16, 64, False), (256, 256, True), (1, 1 << 15, True),
                                           (0, 1 << 20, False), (64, 127, False), (64, 128, True),
                                           (96, 160, True)])
def test_tiles_count_the_elements_of_their_space(rows, cols, par):
    # a transposed scalar counts TRANSPOSE_ELEMENT_WORK = 2 units: parallel
    # from par_min / 4 = 8192 elements (sgemm small's B, 96 x 160, included)
    m = lower(TRANSPOSE)
    assert goes_parallel(m, "tr", {"_n0": rows, "_n1": cols}) is par


def test_an_if_counts_its_longer_branch_not_both():
    """An iteration takes one path through an If: Rodinia's hotspot cell (a
    chain of nine cases) counted as the sum of its branches woke the team
    for a 16 x 16 grid."""
    from pyshark.codegen.par_work import _straight
    x = K.KVar("x", I64)
    set_x = K.Set(x, S.const(1, I64))
    three = K.Block((set_x, set_x, set_x))
    one = K.Block((set_x,))
    chain = K.Block((K.If(S.const(True, K.BOOL), three, K.Block((K.If(S.const(False, K.BOOL),
                                                                       one, three),))),))
    # the outer If (1) + its longer branch: the inner If (1) + 3, against 3
    assert _straight(chain) == 1 + max(3, 1 + max(1, 3)) == 5


IMAGE_RANGE = """
@ps.entry
def image_range(img: ps.Array[ps.Array[ps.f32]]) -> tuple[ps.f32, ps.f32]:
    # an image's minimum and maximum written per row: a reduction whose
    # elements are row reductions (issue 17's blur-and-normalise shape)
    lo = min(ps.map(lambda row: ps.minimum(row), img))
    hi = max(ps.map(lambda row: ps.maximum(row), img))
    return (lo, hi)
"""


def chunks_and_guard(m: K.Module, name: str, sizes: dict) -> tuple[int, bool]:
    """(the chunk count, whether the guard holds) of the entry's first ParFor."""
    f = next(f for f in m.functions if f.name == symbol(name))
    env = {p.name: np.int64(v) for p in f.params for suffix, v in sizes.items()
           if p.name.endswith(suffix)}
    par, before = guard_of(m, name)
    it = _Interp(2, "forward", 0, 1 << 20)
    for s in before:
        if s.var.type == I64:
            env[s.var.name] = it.eval(s.value, env)
    count = int(it.eval(par.count, env))
    return count, par.parallel_if is None or bool(it.eval(par.parallel_if, env))


@pytest.mark.parametrize("rows,cols,par", [
    (1024, 1024, True),       # was one chunk on one thread: 1024 < par_min rows
    (2, 1 << 15, True),
    (256, 4, False),          # a thousand elements: not worth the team
    (1 << 15, 1, True),
])
def test_a_reduction_of_row_reductions_counts_the_rows_work(rows, cols, par):
    m = lower(IMAGE_RANGE)
    count, guard = chunks_and_guard(m, "image_range", {"_n0": rows, "_n1": cols})
    assert (count > 1 and guard) is par


@pytest.fixture(scope="module", params=["kir", "cpu"])
def image_range(request, tmp_path_factory):
    from backend_pair import python_and
    return python_and(request.param, "import pyshark.prelude as ps\n" + IMAGE_RANGE,
                      tmp_path_factory, "image_range")


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (3, 1), (7, 9), (40, 33), (300, 130)])
@pytest.mark.parametrize("nan", [False, True])
def test_a_reduction_of_row_reductions_agrees_with_python_mode(image_range, shape, nan):
    py, c = image_range
    img = np.random.default_rng(shape[0] * shape[1]).standard_normal(shape).astype(np.float32)
    if nan:
        img[shape[0] // 2, shape[1] - 1] = np.nan
    got, want = c.image_range(img), py.image_range(img)
    for g, w in zip(got, want):
        assert type(g) is type(w) and (g == w or (np.isnan(g) and np.isnan(w)))
