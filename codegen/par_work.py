"""The work of a parallel loop whose body loops, as a run-time guard.

A ParFor whose body has no loop goes parallel from `Options.par_min`
iterations (lower_base.par_for). One whose body loops used to go parallel
at any count: on the H100 machine's 16-core host, kmeans at n=256 points
(4 clusters of 4 dimensions), mri_q at 64 voxels of 16 samples and backprop
with 64 inputs took 600-870 us, against 9-12 us on one thread, waking 16
threads for a few thousand inner iterations (benchmarks/results/s24-h100/
tiny.md). The lowering now guards such a ParFor with

    min(n, P) * w >= P       (P = par_min / ELEMENTS_PER_UNIT)

where w, the work of one iteration, counts one for the iteration and, for
every iteration of every loop inside it, the units of work of the loop's
body (STMS_PER_UNIT statements, a math library call counting K.LIBM_COST,
an If its longer branch):
a sum over the body's loops of the product of the trip counts on the path
to each loop. (Tiles of a 2-D space count the space's elements instead, as
n.) Every factor is
saturated at P, so the guard is exact (the product is at least P exactly
when the unsaturated one is) and never overflows. This is the sequential
fallback of Futhark's incremental flattening in its simplest form: one
threshold on the work a version would expose (Henriksen et al., PPoPP 2019,
section 5's size thresholds), with P as the cost of waking the team.

The counts must be known before the loop starts: a trip count written over
variables the body sets is followed through the body's single assignments of
pure expressions; a While, a count read from memory, a count that depends on
the parallel index or on an enclosing loop's index (a triangular nest) or on
a variable set more than once gives no estimate, and the ParFor stays
unconditionally parallel, as before.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Optional

from pyshark.core.types import BOOL, I64

from . import kir as K
from . import scalar as S
from .kir_traverse import declared_vars, map_expr, stm_exprs, walk_exprs, walk_stms

#: at most this many distinct products are kept in a guard; a body with more
#: distinct loop nests (the estimate then counts only the first ones, a lower
#: bound) is large enough that the rest change nothing in practice
MAX_TERMS = 12

#: statements of a loop's body (outside its inner loops) that count as one
#: unit of work per iteration, as one iteration of a loop-free ParFor body
#: (a load or two, the arithmetic, a store) does: an unrolled or strip-mined
#: loop's iteration counts as the several it does. 4 until session 34; 2
#: since PyShark's own team (session 32) wakes for less than libgomp did:
#: scripts/guard_probe.py, us per call with the guard at 4 statements a unit
#: against 2 (the probe's P/2 and P/4, the same for loop bodies), Numba
#: beside: crystal tiny 18.9 -> 10.1 (Numba 12.9) on the H100 machine's
#: host, 6.3 -> 6.2 (6.8) on the 2-core box; kmeans tiny 7.6 -> 9.7 and
#: 12.0 -> 9.7 on two hosts (Numba 171-180), 5.5 -> 3.9 (23) on the box; the
#: other tiny rows within 1 us. Tiles' elements count as before.
STMS_PER_UNIT = 2

#: loop-free ParFor iterations (par_min of them make a ParFor parallel) that
#: one unit of work counts as: a unit is scalar work inside a loop, while a
#: loop-free body vectorises. Measured on the H100 machine's 16-core host
#: (tiny sizes, the threads woken per call), with libgomp (session 25):
#: crystal's frame of 16x16 pixels of 5 waves (~26,000 units then, with each
#: wave's direction computed per pixel) ran in 10 us on 16 threads and 25 us
#: on one; kmeans's 256 points of 4 clusters of 4 dimensions (~10,500 units)
#: in 560 us on 16 threads and 7 us on one. So the guard is P = par_min / 2
#: units.
ELEMENTS_PER_UNIT = 2

#: one loop nest's trip counts (outermost first), pure i64 host expressions
Product = tuple


def _pure(e: K.Expr) -> bool:
    return not any(isinstance(x, (K.Load, K.LocalId, K.GroupId)) for x in walk_exprs(e))


def _assignments(body: K.Block, index: K.KVar) -> tuple[dict, set]:
    """The body's variables set exactly once from pure expressions (name ->
    expression), and the names that are not usable in a trip count (set
    more than once, loop indices, set from memory, the parallel index)."""
    sets: Counter = Counter()
    value: dict = {}
    bad = {index.name}
    for s in walk_stms(body):
        if isinstance(s, K.Set):
            sets[s.var.name] += 1
            value[s.var.name] = s.value
        elif isinstance(s, K.For):
            bad.add(s.var.name)
        else:
            bad |= declared_vars(s)
    once = {}
    for name, n in sets.items():
        if n == 1 and name not in bad and _pure(value[name]):
            once[name] = value[name]
        else:
            bad.add(name)
    return once, bad


def _resolve(e: K.Expr, once: dict, bad: set, depth: int = 0) -> Optional[K.Expr]:
    """e written over variables set outside the body, or None."""
    if depth > 20 or not _pure(e):
        return None
    if isinstance(e, K.KVar):
        if e.name in bad:
            return None
        if e.name in once:
            return _resolve(once[e.name], once, bad, depth + 1)
        return e
    if isinstance(e, K.KConst):
        return e
    failed = []

    def sub(c: K.Expr) -> K.Expr:
        r = _resolve(c, once, bad, depth + 1)
        if r is None:
            failed.append(c)
            return c
        return r
    out = map_expr(e, sub)
    return None if failed else out


def _straight(block: K.Block, combine=max) -> int:
    """Statements of a block, not inside its loops, a math library call
    counting K.LIBM_COST (crystal's cos and sin per wave and pixel: 512
    pixels of 5 waves ran 2.5x faster on 16 threads than on one); an If
    counts its longer branch, the one path an iteration takes at most
    (Rodinia's hotspot cell, a chain of nine cases, counted 62 units a cell
    as the sum of its branches, so its 16 x 16 grid woke the team at P/4:
    4.3 -> 17.8 us a call on the H100 machine's host). `combine` joins the
    branches' counts (scripts/guard_probe.py passes `sum`, the old rule)."""
    n = 0
    for s in block.stms:
        n += 1
        for e in stm_exprs(s):
            n += K.LIBM_COST * sum(1 for x in walk_exprs(e)
                                   if isinstance(x, (K.Un, K.Bin)) and x.op in K.LIBM_PRIMS)
        if isinstance(s, K.If):
            n += combine(_straight(s.then, combine), _straight(s.orelse, combine))
    return n


def loop_products(body: K.Block, index: K.KVar, tiled: bool = False) -> Optional[Counter]:
    """The loop nests of one iteration of a parallel loop over `index`:
    a Counter of products (the trip counts `hi - lo` on the path to each
    loop, outermost first, over variables set before the loop) and the units
    of work one iteration of the loops that share it does; None when some
    loop's count cannot be known up front. `tiled`: the iterations are tiles
    of an iteration space whose size the caller knows; the loops over a
    tile's range (counts that cannot be known up front) count as one, the
    loops inside them as usual: the work of one element of the space."""
    once, bad = _assignments(body, index)
    out: Counter = Counter()

    def walk(block: K.Block, path: tuple) -> bool:
        for s in block.stms:
            if isinstance(s, K.While):
                return False
            if isinstance(s, K.For):
                lo = _resolve(s.lo, once, bad)
                hi = _resolve(s.hi, once, bad)
                if lo is None or hi is None:
                    if tiled:
                        if not walk(s.body, path):
                            return False
                        continue
                    return False
                trip = hi if isinstance(lo, K.KConst) and lo.value == 0 else S.b("sub", hi, lo)
                here = path + (trip,)
                out[here] += max(1, _straight(s.body) // STMS_PER_UNIT)
                if not walk(s.body, here):
                    return False
            elif isinstance(s, K.If):
                if not (walk(s.then, path) and walk(s.orelse, path)):
                    return False
            elif isinstance(s, K.ParFor):
                return False
        return True

    try:
        return out if walk(body, ()) else None
    finally:
        walk = None                     # a recursive closure is a reference cycle


def work_guard(n: K.Expr, products: Counter, par_min: int,
               let: Callable[[str, K.Expr], K.Expr]) -> Optional[K.Expr]:
    """`n * w >= par_min` as an i64 host condition (module docstring), its
    pieces bound with `let` (which emits a Set before the loop); None when
    it always holds."""
    P = S.const(par_min, I64)
    zero = S.const(0, I64)

    def sat(e: K.Expr) -> K.Expr:                  # e >= 0 -> min(e, P)
        if isinstance(e, K.KConst):
            return S.const(min(e.value, par_min), I64)
        v = let("work", e)
        return let("work", S.sel(S.b("lt", v, P), v, P))

    def count(e: K.Expr) -> K.Expr:                # a trip count: clamp(e, 0, P)
        if isinstance(e, K.KConst):
            return S.const(min(max(e.value, 0), par_min), I64)
        v = let("work", e)
        return sat(S.sel(S.b("lt", v, zero), zero, v))

    def mul(x: K.Expr, y: K.Expr) -> K.Expr:
        if isinstance(x, K.KConst) and isinstance(y, K.KConst):
            return S.const(x.value * y.value, I64)
        if isinstance(x, K.KConst) and x.value == 1:
            return y
        if isinstance(y, K.KConst) and y.value == 1:
            return x
        return S.b("mul", x, y)

    def add(x: K.Expr, y: K.Expr) -> K.Expr:
        if isinstance(x, K.KConst) and isinstance(y, K.KConst):
            return S.const(x.value + y.value, I64)
        return S.b("add", x, y)

    trips: dict = {}                               # one clamped value per distinct trip

    def trip(t: K.Expr) -> K.Expr:
        if t not in trips:
            trips[t] = count(t)
        return trips[t]

    w: K.Expr = S.const(1, I64)
    for path, k in sorted(products.items(), key=lambda kv: len(kv[0]))[:MAX_TERMS]:
        p: K.Expr = S.const(k, I64)
        for t in path:
            p = mul(p, trip(t))
            if not (isinstance(p, K.KVar) and p in trips.values()):
                p = sat(p)
        w = sat(add(w, p))
    total = mul(count(n), w)
    if isinstance(total, K.KConst):
        return None if total.value >= par_min else S.const(False, BOOL)
    return S.b("ge", total, P)
