"""A loop whose carried array starts as an entry's input reads the input in
place (lower_control._lower_loop, `lazy`): no copy before the loop, a
conditional free of the old value, a copy after it only when no iteration
ran; and a result made only of whole blocks is handed to the caller
without the entry's final copy. Where the body needs the array as its own
(a copy in the body, a branch that keeps it, a swap with another carried
array) the loop copies it first, as before. An If directly in a loop body
that keeps the carried array in one branch takes it over from the
iteration instead of copying it in that branch every iteration
(lower_control._carried_taker). Every shape runs in Python
mode and on each compiled backend, including the kir interpreter, which
fails on a leak, a double free or a use after free; the caller's arrays
stay as they were."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from backend_pair import python_and
from pyshark import Wrapper
from pyshark.codegen import kir as K
from pyshark.codegen.lower import Options, lower_program, symbol
from pyshark.codegen.pipeline import optimise
from pyshark.core.check import check_program
from pyshark.translate import translate_source

SRC = '''
import pyshark.prelude as ps


@ps.entry
def smooth(k: int, xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    """A stencil stepped k times: a fresh array per step."""
    n = len(xs)
    for _ in range(k):
        xs = ps.tabulate(n, lambda i: (xs[max(i - 1, 0)] + xs[i] + xs[min(i + 1, n - 1)]) / 3.0)
    return xs


@ps.entry
def bumps(xs: ps.Array[int], k: int) -> ps.Array[int]:
    """The body copies the carried array itself (ps.copy) and updates the
    copy: the loop copies its input first, as before, rather than read it
    in place (the lazy attempt backs off at a whole copy of it)."""
    for i in range(k):
        ys = ps.copy(xs)
        ys[i % len(ys)] += 1
        xs = ys
    return xs


@ps.entry
def some_steps(xs: ps.Array[ps.f64], k: int) -> ps.Array[ps.f64]:
    """Every other step keeps the array it was given."""
    for i in range(k):
        if i % 2 == 0:
            xs = ps.map(lambda x: x + 1.0, xs)
    return xs


@ps.entry
def keep_and_read(xs: ps.Array[ps.f64], k: int) -> ps.Array[ps.f64]:
    """The kept array is read again after the If: it must not be taken over."""
    for i in range(k):
        if i % 3 == 0:
            ys = ps.map(lambda x: x + 1.0, xs)
        else:
            ys = xs
        xs = ps.map(lambda a, b: a * 0.5 + b, ys, xs)
    return xs


@ps.entry
def delayed_across(xs: ps.Array[ps.f64], k: int) -> ps.Array[ps.f64]:
    """d stays a delayed producer of xs across the If (the lowering fuses it
    into the reduce after it): the If must not take xs over and free it
    (the kir interpreter saw a use after free before _may_read)."""
    for i in range(k):
        d = ps.map(lambda x: x * 2.0, xs)
        if i % 2 == 0:
            xs = ps.map(lambda x: x + 1.0, xs)
        s = ps.reduce(max, ps.lowest(ps.f64), d)
        xs = ps.map(lambda x: x * 0.5 + s, xs)
    return xs


@ps.entry
def nested_keep(xs: ps.Array[ps.f64], k: int) -> ps.Array[ps.f64]:
    """An If inside an If inside the loop keeps the array (copied there)."""
    for i in range(k):
        if i % 2 == 0:
            if i % 4 == 0:
                xs = ps.map(lambda x: x * 2.0, xs)
        else:
            xs = ps.map(lambda x: x - 1.0, xs)
    return xs


@ps.entry
def swap(a: ps.Array[int], b: ps.Array[int], k: int) -> tuple[ps.Array[int], ps.Array[int]]:
    """Two carried inputs trade places each step."""
    for _ in range(k):
        a, b = b, ps.map(lambda x: x * 2 + 1, a)
    return a, b


@ps.entry
def row_steps(g: ps.Array[ps.Array[ps.f64]], k: int) -> ps.Array[ps.f64]:
    """The carried array starts as a row of the input (a view)."""
    r = g[1]
    for _ in range(k):
        r = ps.map(lambda x: x * 0.5, r)
    return r


@ps.entry
def until_small(xs: ps.Array[ps.f64]) -> ps.Array[ps.f64]:
    """A while loop over an input."""
    while ps.reduce(lambda a, b: a + b, 0.0, xs) > 1.0:
        xs = ps.map(lambda x: x * 0.5, xs)
    return xs


@ps.entry
def fails_at(xs: ps.Array[int], k: int, bad: int) -> ps.Array[int]:
    """Step `bad` reads out of range: the error leaves the input alone."""
    for i in range(k):
        j = len(xs) if i == bad else 0
        xs = ps.map(lambda x: x + xs[j], xs)
    return xs
'''


def _lowered(name: str) -> K.Block:
    program = translate_source(textwrap.dedent(SRC), "<borrow>")
    check_program(program)
    m = lower_program(optimise(program, check=True), Options())
    K.check_module(m)
    return next(f for f in m.functions if f.name == symbol(name)).body


def _copies_before_loops(body: K.Block) -> list:
    out = []
    for s in body.stms:
        if isinstance(s, (K.For, K.While)):
            break
        out += [t for t in K.walk_stms(K.Block((s,))) if isinstance(t, K.CopyMem)]
    return out


def test_a_stencil_over_an_input_copies_nothing_before_its_loop_or_after_it():
    body = _lowered("smooth")
    assert _copies_before_loops(body) == []
    (late,) = [s for s in body.stms if isinstance(s, K.If)
               and any(isinstance(t, K.CopyMem) for t in K.walk_stms(s.then))]
    assert {v for v in K.expr_vars(late.cond)} == {  # only when no step ran
        v for s in body.stms for v in K.declared_vars(s) if v.startswith("own_")}
    stores = [s for s in body.stms if isinstance(s, K.Store) and isinstance(s.value, K.KVar)
              and isinstance(s.value.type, K.Ptr)]
    assert stores and all(s.value.name.startswith("xs_") for s in stores)   # handed over


@pytest.mark.parametrize("name, before", [("bumps", 1), ("some_steps", 1), ("swap", 2)])
def test_a_body_that_needs_the_array_as_its_own_gets_it_copied_once_first(name, before):
    """(a copy in the body; a branch that keeps the array, which the If
    takes over only from a loop that owns it; a swap): a borrowed value
    there would be copied in every iteration, or freed."""
    body = _lowered(name)
    assert len(_copies_before_loops(body)) == before
    assert not any("own_" in v for s in body.stms for v in K.declared_vars(s))


def test_a_branch_that_keeps_the_carried_array_does_not_copy_it():
    """`if c: x = f(x)` in a loop: the If takes x over from the iteration, the
    branch that replaces it frees it, the other carries it on (before, that
    branch copied x in every iteration)."""
    body = _lowered("some_steps")
    loops = [s for s in body.stms if isinstance(s, K.For)]
    assert loops and not any(isinstance(t, K.CopyMem) for lp in loops for t in K.walk_stms(lp.body))
    (branch,) = [s for lp in loops for s in K.walk_stms(lp.body) if isinstance(s, K.If)
                 and any(isinstance(t, K.ParFor) for t in K.walk_stms(s.then))]
    assert any(isinstance(t, K.Free) for t in branch.then.stms)


@pytest.mark.parametrize("name", ["keep_and_read", "nested_keep", "delayed_across"])
def test_a_kept_array_read_later_or_kept_deeper_is_copied_in_its_branch(name):
    body = _lowered(name)
    loops = [s for s in body.stms if isinstance(s, K.For)]
    assert any(isinstance(t, K.CopyMem) for lp in loops for t in K.walk_stms(lp.body))


@pytest.fixture(scope="module", params=["cpu", "opencl", "kir"])
def mods(request, tmp_path_factory):
    return python_and(request.param, SRC, tmp_path_factory, f"borrow_{request.param}")


def _same(mods, name, *args):
    py, compiled = mods
    kept = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    want = getattr(py, name)(*args)
    got = getattr(compiled, name)(*args)
    for w, g in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,)):
        assert g.dtype == w.dtype and np.array_equal(g, w)
        for a in args:
            if isinstance(a, np.ndarray):
                assert not np.shares_memory(g, a)
    for a, b in zip(args, kept):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b)             # the caller's arrays unchanged
    return got


SIZES = [0, 1, 7, 40_000]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("k", [0, 1, 2, 5])
def test_loops_over_inputs_agree_with_python_mode(mods, n, k):
    rng = np.random.default_rng(n + k)
    xs = rng.normal(size=n)
    _same(mods, "smooth", k, xs) if n else None
    _same(mods, "some_steps", xs, k)
    _same(mods, "keep_and_read", xs, k)
    _same(mods, "nested_keep", xs, k)
    _same(mods, "delayed_across", xs, k)
    _same(mods, "until_small", np.abs(xs) * 4.0)
    if n:
        ints = rng.integers(-50, 50, n)
        _same(mods, "bumps", ints, k)
        a, b = _same(mods, "swap", ints, ints[::-1].copy(), k)
        assert k != 0 or not np.shares_memory(a, b)
        g = rng.normal(size=(3, n))
        _same(mods, "row_steps", g, k)


def test_the_same_input_as_both_carried_arrays(mods):
    xs = np.arange(9, dtype=np.int64)
    for k in (0, 1, 2, 3):
        a, b = _same(mods, "swap", xs, xs, k)
        assert not np.shares_memory(a, b)


@pytest.mark.parametrize("bad", [0, 1, 3])
def test_a_failing_step_raises_and_leaves_the_input(mods, bad):
    py, compiled = mods
    xs = np.arange(40_000, dtype=np.int64)
    for m in (py, compiled):
        with pytest.raises(IndexError):
            m.fails_at(xs, 4, bad)
        assert np.array_equal(xs, np.arange(40_000))
    assert np.array_equal(compiled.fails_at(xs, 4, 9), py.fails_at(xs, 4, 9))


def test_zero_steps_give_a_new_array_on_cpu(tmp_path):
    w = Wrapper("cpu", cache_dir=tmp_path)
    w.add_source(SRC, "borrow_zero.py")
    w.compile_and_load()
    xs = np.linspace(0.0, 1.0, 100_000)
    out = w.smooth(0, xs)
    assert np.array_equal(out, xs) and not np.shares_memory(out, xs)
    out[0] = 5.0
    assert xs[0] == 0.0
