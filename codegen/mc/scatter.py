"""scatter: result = copy of dest; result[idxs[j]] = vals[j] for indices in
range (others, negative ones included, ignored). With duplicate indices the
value that comes last in idxs wins, as numpy's `dest[idxs] = vals` and
Python mode (LANGUAGE.md), on every backend.

Parallel algorithm ("owner" or "last-writer election", the usual way to make
a parallel scatter deterministic; cf. the winner-election step of parallel
BFS, Leiserson & Schardl, SPAA 2010, and Futhark's note that its scatter
leaves duplicates unspecified):

  pass 0  owner[0:m] = -1                          (ParFor over the bins)
  pass 1  for each j with 0 <= idxs[j] < m:        (ParFor over the input)
            owner[idxs[j]] = max(owner[idxs[j]], j)   -- kir.atomic_max
  pass 2  for each j with 0 <= idxs[j] < m and     (ParFor over the input)
            owner[idxs[j]] == j: result[idxs[j]] = vals[j]

After pass 1, owner[b] is the last j that names bin b, so pass 2 writes each
bin once, from its last writer: the same memory as the sequential loop,
whatever the order of iterations. Rows (2-D dest/values) and several
destinations (tuple values) share one owner array. The owner array is i32
when the number of values fits (half the memory traffic of i64; 32-bit
atomic_max is core OpenCL), else i64 (a host `if` on the width picks; a
device without 64-bit atomics fails there with a clear error).

Cost: m stores of -1, n atomic maxes (a compare-and-swap loop that writes
nothing when the bin already holds a larger j, so a hot bin is read-shared,
not fought over) and n reads of owner, on top of the old single pass.
Where it is not needed it is not paid:
- inside a parallel loop (lw.in_par) or with parallel=False the scatter
  is one sequential loop (last-wins by construction);
- on the CPU, fewer than Options.par_min values run the sequential loop,
  since such a ParFor would run inline anyway (kir.py does not promise
  iteration order, so the two-pass code is used whenever it may be split).
gpu/scatter.py uses the same passes on the OpenCL target, always (a host
loop there is Python).
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import I32, I64

from .. import kir as K
from .. import scalar as S
from ..lower import Arr, Lowerer, Scope
from .common import ZERO, check_width, elements

I32_MAX = (1 << 31) - 1


def dest_setup(lw: Lowerer, e, env, stm, what: str):
    """Width checks, and owned copies of the destinations."""
    n = lw.scalar(e.width, env)
    idxs = lw.array(e.idxs, env)
    vals = [lw.array(a, env) for a in e.vals]
    check_width(lw, n, (e.idxs, *e.vals), (idxs, *vals), stm.loc, what)
    dests = [lw.copy_arr(lw.array(d, env), "dst") for d in e.dests]
    m = dests[0].shape[0]
    for name, d, v in zip(e.dests, dests, vals):
        lw.check(S.b("eq", d.shape[0], m), "ShapeError",
                 f"{what}: destination {name.name} has another length", stm.loc)
        for x, y in zip(d.shape[1:], getattr(v, "shape", ())[1:]):
            lw.check(S.lor(S.b("eq", n, ZERO), S.b("eq", x, y)), "ShapeError",
                     f"{what}: values have rows of another shape than the destination",
                     stm.loc)
    return n, idxs, vals, dests, m


def in_range(lw: Lowerer, idx: K.Expr, m: K.Expr):
    """(index as i64, 0 <= index < m) for an index of any integer type."""
    t = K.type_of(idx)
    j = lw.let("j", S.convert(I64, idx))
    ok = S.land(S.b("ge", j, ZERO), S.b("lt", j, m))
    if t.is_unsigned and t.bits == 64:
        ok = S.land(ok, S.b("lt", idx, S.const(1 << 63, t)))
    return j, lw.let("ok", ok)


def store_at(lw: Lowerer, d: Arr, j: K.Expr, v) -> None:
    if isinstance(v, Arr):
        rs = lw.row_size(d)
        lw.emit(K.CopyMem(K.PtrAdd(d.data, S.b("mul", j, rs)), v.data, rs))
    else:
        lw.emit(K.Store(d.data, j, v))


def lower_scatter(lw: Lowerer, e: ir.Scatter, env, stm):
    n, idxs, vals, dests, m = dest_setup(lw, e, env, stm, "scatter")
    if lw.in_par or not lw.options.parallel:
        _sequential(lw, n, idxs, vals, dests, m)
        return dests
    with lw.block() as seq:
        _sequential(lw, n, idxs, vals, dests, m)
    with lw.block() as par:
        owner_scatter(lw, n, idxs, vals, dests, m, stm.loc)
    lw.emit(K.If(S.b("lt", n, S.const(lw.options.par_min, I64)), seq[0], par[0]))
    return dests


def _sequential(lw: Lowerer, n, idxs, vals, dests, m) -> None:
    """One loop in order: a later index overwrites an earlier one."""
    def body(i):
        xs = elements(lw, [idxs, *vals], i)
        j, ok = in_range(lw, xs[0], m)
        with lw.block() as blk:
            for d, v in zip(dests, xs[1:]):
                store_at(lw, d, j, v)
        lw.emit(K.If(ok, blk[0]))
    lw.for_range("i", ZERO, n, body)


def owner_scatter(lw: Lowerer, n, idxs, vals, dests, m, loc) -> None:
    """The three passes (module docstring), with an i32 owner array when
    n <= 2**31 - 1, else an i64 one."""
    if isinstance(n, K.KConst):
        _passes(lw, n, idxs, vals, dests, m, I32 if n.value <= I32_MAX else I64, loc)
        return
    with lw.block() as narrow:
        _passes(lw, n, idxs, vals, dests, m, I32, loc)
    with lw.block() as wide:
        _passes(lw, n, idxs, vals, dests, m, I64, loc)
    lw.emit(K.If(S.b("le", n, S.const(I32_MAX, I64)), narrow[0], wide[0]))


def _passes(lw: Lowerer, n, idxs, vals, dests, m, ot, loc) -> None:
    tgt = lw.options.target
    if ot.bits == 64 and tgt.gpu and not tgt.atomics64:
        lw.emit(lw.fail("ValueError", "scatter: more than 2**31 - 1 values need 64-bit "
                        "atomics, which this device lacks; split the scatter", loc))
        return
    lw.scopes.append(Scope(frame=lw.frame))
    try:
        owner = lw.alloc("owner", ot, (m,))
        none = S.const(-1, ot)
        lw.par_for("b", m, lambda b: lw.emit(K.Store(owner.data, b, none)))

        def claim(i):
            j, ok = in_range(lw, elements(lw, [idxs], i)[0], m)
            old = lw.var("old", ot)
            me = S.convert(ot, i)
            lw.emit(K.If(ok, K.Block((K.atomic_max(owner.data, j, old, me),))))
        lw.par_for("i", n, claim)

        def write(i):
            # every element is evaluated, as in the sequential loop: a value
            # whose computation fails fails here whether it wins or not
            xs = elements(lw, [idxs, *vals], i)
            j, ok = in_range(lw, xs[0], m)
            with lw.block() as store:
                for d, v in zip(dests, xs[1:]):
                    store_at(lw, d, j, v)
            with lw.block() as check:
                mine = S.b("eq", K.Load(owner.data, j), S.convert(ot, i))
                lw.emit(K.If(mine, store[0]))
            lw.emit(K.If(ok, check[0]))
        lw.par_for("i", n, write)
        lw.emit(K.Free(owner.base))
        lw.scopes[-1].owned = []
    finally:
        lw.scopes.pop()
