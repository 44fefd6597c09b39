"""Unroll-and-jam of a parallel loop around a data-dependent while loop,
with predication (a kernel IR -> kernel IR pass).

A loop `for i: pre(i); while c: body; post(i)` inside a parallel loop (an
escape-time fractal's column loop, any per-element iteration to
convergence) runs one dependent chain at a time: each while iteration
waits for the previous one's latency, and nothing vectorizes. Here U
consecutive iterations of the for loop run together: their `pre` parts,
then one while loop that runs while any copy's condition holds, where each
copy computes its body and keeps the new values only while it is active
(`x = active ? x' : x`: if-conversion, as in whole-function vectorization,
Karrenberg and Hack, and ISPC's SPMD-on-SIMD model), then their `post`
parts. The U independent chains overlap in the pipeline, and LLVM's SLP
vectorizer may pack them into vector instructions.

Each copy performs exactly its own iterations on its own values: results
are bit for bit the sequential loop's. What an inactive copy computes is
thrown away, so the while body must be safe to run on any values: it may
not load, store, fail, allocate, loop, or divide or shift integers (whose
preconditions the lowering proved only for the real iterations). `pre` and
the while body may not store, so running `pre` of copy u+1 before `post`
of copy u changes nothing (loads in `pre` do not read through a pointer
that `post` stores through: within a ParFor, the noalias contract makes
other pointer variables distinct memory); only `post` may fail. The last
(hi - lo) mod U iterations run the original loop.
"""
from __future__ import annotations

from pyshark.core.types import BOOL, I64

from .. import kir as K
from ..kir_traverse import block_exprs, map_block, map_bodies, map_stm, walk_stms

U = 16


# ---------------------------------------------------------------------------
# what qualifies


_UNSAFE_INT = frozenset({"div", "rem", "shl", "shr"})


def _while_body_safe(b: K.Block) -> bool:
    for s in walk_stms(b):
        if not isinstance(s, (K.Set, K.If)):
            return False
    for e in block_exprs(b):
        if isinstance(e, (K.Load, K.NumThreads)):
            return False
        if isinstance(e, K.Bin) and e.op in _UNSAFE_INT and not K.type_of(e.x).is_float:
            return False
    return True


def _split(body: K.Block):
    """(pre, while, post) of a qualifying for-loop body, or None."""
    whiles = [k for k, s in enumerate(body.stms) if isinstance(s, K.While)]
    if len(whiles) != 1:
        return None
    k = whiles[0]
    pre, w, post = K.Block(body.stms[:k]), body.stms[k], K.Block(body.stms[k + 1:])
    for s in walk_stms(pre):
        if not isinstance(s, (K.Set, K.If)):
            return None
    for s in walk_stms(post):
        if not isinstance(s, (K.Set, K.If, K.Store, K.Fail)):
            return None
    if not _while_body_safe(w.body):
        return None
    if any(isinstance(e, K.NumThreads) for e in block_exprs(pre)):
        return None
    stored = set()
    for s in walk_stms(post):
        if isinstance(s, K.Store):
            stored |= K.expr_vars(s.ptr)
    for e in list(block_exprs(pre)) + list(block_exprs(post)):
        if isinstance(e, K.Load) and K.expr_vars(e.ptr) & stored:
            return None
    return pre, w, post


def _assigned(b: K.Block) -> list:
    """Variables a block sets (KVars, first occurrence order)."""
    out: dict = {}
    for s in walk_stms(b):
        if isinstance(s, K.Set):
            out.setdefault(s.var.name, s.var)
    return list(out.values())


# ---------------------------------------------------------------------------
# the transformation


class _Jammer:
    def __init__(self):
        self.n = 0

    def fresh(self, hint: str, t) -> K.KVar:
        self.n += 1
        return K.KVar(f"{hint}_jw{self.n}", t)

    def loop(self, f: K.For) -> list:
        parts = _split(f.body)
        if parts is None:
            return [f]
        pre, w, post = parts
        declared: dict = {f.var.name: f.var}
        for s in f.body.stms:
            for v in _assigned(K.Block((s,))):
                declared.setdefault(v.name, v)
        carried = [v for v in _assigned(w.body) if v.name in {x.name for x in _assigned(pre)}]
        maps = []
        for u in range(U):
            maps.append({n: self.fresh(f"{n}_u{u}", v.type) for n, v in declared.items()})
        lo = self.fresh("jlo", I64)
        nb = self.fresh("jnb", I64)
        b = self.fresh("jb", I64)
        out: list = [K.Set(lo, f.lo),
                     K.Set(nb, K.Bin("div", K.Sel(K.Bin("gt", f.hi, lo), K.Bin("sub", f.hi, lo),
                                                  K.KConst(0, I64)), K.KConst(U, I64)))]
        stms: list = []
        base = K.Bin("add", lo, K.Bin("mul", b, K.KConst(U, I64)))
        for u, m in enumerate(maps):
            stms.append(K.Set(m[f.var.name], K.Bin("add", base, K.KConst(u, I64))))
            stms += K.rename_block(pre, m).stms
        anyv = self.fresh("jany", BOOL)

        def any_active():
            e = None
            for m in maps:
                c = K.rename_expr(w.cond, m)
                e = c if e is None else K.Bin("or", e, c)
            return K.Set(anyv, e)
        stms.append(any_active())
        wbody: list = []
        for m in maps:
            act = self.fresh("jact", BOOL)
            wbody.append(K.Set(act, K.rename_expr(w.cond, m)))
            olds = []
            for v in carried:
                o = self.fresh("jold", v.type)
                wbody.append(K.Set(o, m[v.name]))
                olds.append((m[v.name], o))
            wbody += K.rename_block(w.body, m).stms
            for x, o in olds:
                wbody.append(K.Set(x, K.Sel(act, x, o)))
        wbody.append(any_active())
        stms.append(K.While(anyv, K.Block(tuple(wbody))))
        for m in maps:
            stms += K.rename_block(post, m).stms
        out.append(K.For(b, K.KConst(0, I64), nb, K.Block(tuple(stms))))
        rest = K.Bin("add", lo, K.Bin("mul", nb, K.KConst(U, I64)))
        out.append(K.For(f.var, rest, f.hi, f.body))
        return out

    def block(self, b: K.Block, in_par: bool) -> K.Block:
        """b with its for loops jammed, inner loops first; only inside a
        ParFor (in_par), where the chains of its iterations are independent."""
        def stm(s: K.Stm):
            inner = map_stm(s, block=lambda sb: self.block(sb, in_par or isinstance(s, K.ParFor)))
            return self.loop(inner) if in_par and isinstance(inner, K.For) else inner
        return map_block(b, stm)


def jam_while_loops(m: K.Module) -> K.Module:
    """The module with every qualifying for loop inside a ParFor jammed U
    ways around its while loop."""
    j = _Jammer()
    return map_bodies(m, lambda b: j.block(b, False))
