"""scatter: result = copy of dest; result[idxs[j]] = vals[j] for indices in
range (others, negative ones included, ignored). With duplicate indices the
value that comes last in idxs wins, as numpy's `dest[idxs] = vals` and
Python mode (LANGUAGE.md), on every backend, whatever the order in which a
ParFor runs its iterations (kir.py promises none).

- Inside a parallel loop (lw.in_par), with parallel=False, and on the CPU
  below Options.par_min values: one loop in input order (a later index
  overwrites an earlier one).
- CPU, parallel (`partitioned`): the slots, not the input, are split.
  ParFor over T = NumThreads contiguous slot ranges [lo, hi), bounded by
  splitters sampled from the indices so that each holds about an equal
  share of the writes (`_slot_bounds`); iteration c
  scans ALL of idxs in order and writes vals[j] where lo <= idxs[j] < hi.
  Every slot has one writer that sees its indices in input order, so the
  last one wins, with no atomics and no extra memory (Futhark's multicore
  "owner computes" split of a histogram by bins, applied to scatter). The
  price is T reads of the index array (streaming, which the prefetchers
  serve well); each value is read once. A first version elected each slot's
  last writer with an atomic max (below): its locked read-modify-writes
  at random addresses serialise the cache misses and made a 10^6-element
  scatter 4-5x slower than the racy loop on this 2-core machine, against
  about 1.3x for this one (docs/cpu-backend.md).
- OpenCL (gpu/scatter.py calls `owner_scatter`): owner election, where
  thousands of work-items make the T-fold read impossible and atomics are
  cheap:
    pass 0  owner[0:m] = -1                          (ParFor over the slots)
    pass 1  for each j with 0 <= idxs[j] < m:        (ParFor over the input)
              owner[idxs[j]] = max(owner[idxs[j]], j)   -- kir.atomic_max
    pass 2  for each j with 0 <= idxs[j] < m and     (ParFor over the input)
              owner[idxs[j]] == j: result[idxs[j]] = vals[j]
  (the winner election of deterministic parallel BFS, e.g. Leiserson &
  Schardl, SPAA 2010). The owner array is i32 when n <= 2**31 - 1 (32-bit
  atomic_max is core OpenCL), else i64 (a host `if` on n picks; a device
  without 64-bit atomics fails there with a clear error).
Rows (2-D dest/values) and several destinations (tuple values) follow the
same rule: one decision per index, all destinations written together.

Vector code: LLVM vectorizes these loops with a vector scatter (AVX-512's
`vpscatterqq`), which pays where the stores are sparse (the split's scan on
16 threads stores a sixteenth of what it reads: 4-5x faster than scalar on
the H100 machine's Intel host) but not where they are dense on a CPU whose
scatter is microcoded (AMD Zen 5: 2x slower than scalar stores). On a
`target.slow_scatter` target the sequential loop is a kir.For with
`simd=False`. There the split's scan stores every value without a branch
(`_branchless`: into its slot, or into a sink of the thread's own), and
runs from 2 threads on: 2^20 values of a permutation 0.70-0.74 of Numba's
loop, where one scalar loop was 1.08-1.15. It fetches its inputs 4 KiB
ahead by `prefetchnta` (kir.Prefetch): each thread streams all of them,
and on Zen such lines are not made L3 victims, so the slots it writes
stay in L3 (2^23 values into a quarter of the slots, 16 MiB: 1.03-1.14 ->
0.63-0.90 of Numba, alternating processes). Where a value is computed (a
delayed map) the scan keeps its branch, and one scalar loop runs instead
up to DENSE_THREADS threads: the vector scan (1.5-1.6 ms for 2^20 values
on 2 threads) lost to it (0.86-0.91 ms), and a scalar scan with a branch,
whose `mine` test goes either way at random, lost more (4.0 ms)
(docs/cpu-backend.md, "Scatter").
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.traverse import uses
from pyshark.core.types import I32, I64, U64

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, Delayed, Lowerer
from .common import ONE, ZERO, check_width, elements, trial

I32_MAX = (1 << 31) - 1


def _reads(v, base: str) -> bool:
    """Whether computing the value v may read the memory of the array whose
    base is `base`: an array aliasing it, or a delayed map whose inputs or
    lambda's free names do (iota and replicate read no memory)."""
    if isinstance(v, Arr):
        return base in v.aliases or getattr(v.base, "name", None) == base
    if isinstance(v, Delayed) and v.group.source is not None:
        lam, lam_env, arrs = v.group.source
        return (any(_reads(a, base) for a in arrs)
                or any(_reads(lam_env.get(name), base) for name in uses(lam)))
    return False


def _dest(lw: Lowerer, dest: ir.Var, env, inputs: list, others: list):
    """The destination `dest` itself where the result may take its memory:
    an array this frame owns whole, that no variable live after the
    statement holds and that nothing the statement reads (indices, values,
    the other destinations) may alias, as an owned update takes it
    (lower_arrays._h_update): nothing can see the difference, since nothing
    reads the destination afterwards; else an owned copy. A BFS level's
    `dist = ps.scatter(dist, frontier, level)` then writes its few nodes in
    place instead of copying dist every level (session 37)."""
    a = lw.array(dest, env)
    if isinstance(a, Arr) and isinstance(a.base, K.KVar):
        b = a.base.name
        if (lw.owned_here(a.base) is not None and a.aliases == frozenset({b})
                and not any(_reads(env.get(n), b) for n in lw.live_after_here())
                and not any(_reads(v, b) for v in inputs + others)):
            return a
    return lw.copy_arr(a, "dst")


def dest_setup(lw: Lowerer, e, env, stm, what: str):
    """Width checks, and the destinations, owned (_dest)."""
    n = lw.scalar(e.width, env)
    idxs = lw.array(e.idxs, env)
    vals = [lw.array(a, env) for a in e.vals]
    check_width(lw, n, (e.idxs, *e.vals), (idxs, *vals), stm.loc, what)
    dests = [_dest(lw, d, env, [idxs, *vals],
                   [lw.array(o, env) for k, o in enumerate(e.dests) if k != j])
             for j, d in enumerate(e.dests)]
    m = dests[0].shape[0]
    for name, d, v in zip(e.dests, dests, vals):
        lw.check(S.b("eq", d.shape[0], m), "ShapeError",
                 f"{what}: destinations of lengths {{}} and {{}}", stm.loc, (m, d.shape[0]))
        for x, y in zip(d.shape[1:], getattr(v, "shape", ())[1:]):
            lw.check(S.lor(S.b("eq", n, ZERO), S.b("eq", x, y)), "ShapeError",
                     f"{what}: values have rows of another shape than the destination",
                     stm.loc)
    return n, idxs, vals, dests, m


def as_index(lw: Lowerer, idx: K.Expr) -> K.Expr:
    """An index of any integer type as i64 (a u64 past 2**63 turns negative)."""
    return lw.let("j", S.convert(I64, idx))


def in_range(lw: Lowerer, idx: K.Expr, m: K.Expr):
    """(index as i64, 0 <= index < m) for an index of any integer type."""
    t = K.type_of(idx)
    j = as_index(lw, idx)
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
        partitioned(lw, n, idxs, vals, dests, m)
    small = S.b("lt", n, S.const(lw.options.par_min, I64))
    if lw.options.target.slow_scatter:
        most = 1 if _branchless(lw, vals, dests) else DENSE_THREADS
        small = S.lor(small, S.b("le", K.NumThreads(), S.const(most, I64)))
    lw.emit(K.If(small, seq[0], par[0]))
    return dests


#: slow_scatter targets: up to this many threads one scalar loop beats the
#: split's scan with a branch (module docstring); its branchless scan
#: (_branchless) pays from 2 threads on
DENSE_THREADS = 2


def _branchless(lw: Lowerer, vals, dests) -> bool:
    """Whether the split's scan stores every value, into its slot or into a
    sink of its own (slow_scatter targets): scalar elements, from values
    already in memory (a delayed value would be computed by every thread)."""
    return (lw.options.target.slow_scatter and all(len(d.shape) == 1 for d in dests)
            and all(isinstance(v, Arr) for v in vals))


def _sequential(lw: Lowerer, n, idxs, vals, dests, m) -> None:
    """One loop in order: a later index overwrites an earlier one."""
    def body(i):
        xs = elements(lw, [idxs, *vals], i)
        j, ok = in_range(lw, xs[0], m)
        with lw.block() as blk:
            for d, v in zip(dests, xs[1:]):
                store_at(lw, d, j, v)
        lw.emit(K.If(ok, blk[0]))
    lw.for_range("i", ZERO, n, body, simd=not lw.options.target.slow_scatter)


def partitioned(lw: Lowerer, n, idxs, vals, dests, m) -> None:
    """The CPU's parallel scatter: slot ranges, each scanned in input order
    (module docstring), bounded by sampled splitters (_slot_bounds). Delayed
    indices are computed into memory first (each range reads all of them);
    delayed values too when their code can fail (Python mode computes every
    value), else each is computed only where its index lands in the range
    being written, so once in all."""
    with lw.temp_scope(free=True):
        if isinstance(idxs, Delayed):
            idxs = lw.materialise(idxs)
        if any(isinstance(v, Delayed) for v in vals) and _can_fail(lw, vals):
            vals = [lw.materialise(v) if isinstance(v, Delayed) else v for v in vals]
        nch = lw.let("nch", K.NumThreads())
        bounds = _slot_bounds(lw, n, idxs, m, nch)
        branchless = _branchless(lw, vals, dests)

        def part(c):
            lo = lw.let("lo", K.Load(bounds.data, c))
            hi = lw.let("hi", K.Load(bounds.data, S.b("add", c, ONE)))
            with lw.block() as scan, lw.temp_scope(free=True):
                sinks = [lw.alloc("sink", d.elem, (S.const(SINK, I64),)) for d in dests
                         ] if branchless else []

                def body(i):
                    if branchless:
                        # lo <= j < hi in one unsigned compare (0 <= lo, hi <= m; an
                        # index negative or past 2**63 is past hi - lo as u64)
                        j = as_index(lw, elements(lw, [idxs], i)[0])
                        for a in (idxs, *vals):
                            ahead = S.const(PREFETCH_BYTES // a.elem.bytes, I64)
                            lw.emit(K.Prefetch(a.data, S.b("add", i, ahead)))
                        mine = lw.let("mine", S.b("lt", S.convert(U64, S.b("sub", j, lo)),
                                                  S.convert(U64, S.b("sub", hi, lo))))
                        for d, v, sink in zip(dests, elements(lw, vals, i), sinks):
                            at = S.sel(mine, K.PtrAdd(d.data, j),
                                       K.PtrAdd(sink.data, S.const(SINK // 2, I64)))
                            lw.emit(K.Store(at, ZERO, v))
                        return
                    j, ok = in_range(lw, elements(lw, [idxs], i)[0], m)
                    mine = lw.let("mine", S.land(ok, S.land(S.b("ge", j, lo), S.b("lt", j, hi))))
                    with lw.block() as store:
                        for d, v in zip(dests, elements(lw, vals, i)):
                            store_at(lw, d, j, v)
                    lw.emit(K.If(mine, store[0]))
                lw.for_range("i", ZERO, n, body, simd=not branchless)
            lw.emit(K.If(S.b("lt", lo, hi), scan[0]))
        lw.par_for("c", nch, part)


#: the branchless scan fetches its inputs this far ahead without keeping them
#: in L3 (kir.Prefetch): every thread streams all of them past the slots it
#: writes, which then stay in L3
PREFETCH_BYTES = 4096
#: the branchless scan's sink: SINK elements per thread and destination, the
#: one in the middle written, so that no two threads' sinks share a cache line
SINK = 256
#: _slot_bounds: indices sampled, and the equal slot ranges they are counted in
SAMPLES, BUCKETS = 512, 256


def _slot_bounds(lw: Lowerer, n, idxs, m, nch) -> Arr:
    """bounds[0..nch]: slot range c is [bounds[c], bounds[c+1]), each about
    an equal share of the writes, so that indices crowded into part of the
    destination (a histogram's hot bins, a quarter of the slots) still keep
    every thread busy. Sample sort's splitter choice (Frazer & McKellar,
    JACM 1970; Blelloch et al., SPAA 1991): up to SAMPLES indices at an even
    stride are counted into BUCKETS equal slot ranges, and range c ends at
    the end of the bucket where the running count reaches (c+1)/nch of the
    sampled indices in range; with none in range, equal ranges. Any bounds
    are correct (each slot still has one writer); only the balance depends
    on the sample."""
    nb = S.const(BUCKETS, I64)
    hist = lw.alloc("smp", I64, (nb,))
    bounds = lw.alloc("bnd", I64, (lw.let("nb1", S.b("add", nch, ONE)),))
    lw.for_range("b", ZERO, nb, lambda b: lw.emit(K.Store(hist.data, b, ZERO)))
    ns = lw.let("ns", S.minimum(n, S.const(SAMPLES, I64)))
    step = lw.let("step", S.b("div", n, S.maximum(ns, ONE)))

    def sample(s):
        j, ok = in_range(lw, elements(lw, [idxs], S.b("mul", s, step))[0], m)
        with lw.block() as count:
            b = lw.let("bk", S.b("div", S.b("mul", j, nb), m))
            lw.emit(K.Store(hist.data, b, S.b("add", K.Load(hist.data, b), ONE)))
        lw.emit(K.If(ok, count[0]))
    lw.for_range("s", ZERO, ns, sample)
    run = lw.var("run", I64)
    lw.emit(K.Set(run, ZERO))

    def running(b):
        lw.emit(K.Set(run, S.b("add", run, K.Load(hist.data, b))))
        lw.emit(K.Store(hist.data, b, run))
    lw.for_range("b", ZERO, nb, running)
    total = lw.let("total", run)

    def bound(c):
        # the bucket where the running count first reaches c/nch of the total
        k = lw.var("k", I64)
        lw.emit(K.Set(k, ZERO))
        want = lw.let("want", S.b("mul", c, total))
        lw.for_range("b", ZERO, nb, lambda b: lw.emit(K.Set(k, S.b("add", k, K.Cast(
            I64, S.b("lt", S.b("mul", K.Load(hist.data, b), nch), want))))))
        sampled = S.minimum(m, S.b("div", S.b("mul", S.b("add", k, ONE), m), nb))
        equal = S.b("div", S.b("mul", c, m), nch)
        lw.emit(K.Store(bounds.data, c, S.sel(S.b("gt", total, ZERO), sampled, equal)))
    lw.for_range("c", ONE, nch, bound)
    lw.emit(K.Store(bounds.data, ZERO, ZERO))
    lw.emit(K.Store(bounds.data, nch, m))
    return bounds


def _can_fail(lw: Lowerer, vals) -> bool:
    """Whether computing an element of the values can fail (the code is
    lowered aside and dropped)."""
    probe = lw.var("probe", I64)
    return K.block_can_fail(trial(lw, lambda: elements(lw, vals, probe))[1])


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
    with lw.temp_scope():
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
