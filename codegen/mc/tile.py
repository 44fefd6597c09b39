"""Register tiling of a two-dimensional map nest whose elements are
reductions: unroll-and-jam of the (i, j) loops around the reduction loop.

The nest `map(i -> map(j -> reduce(op, ne, xs_ij)))` (matmul's
`map(row -> map(col -> reduce(+, 0, map(*, row, col))))` is the classic
one; scalar arithmetic on the reduce's result may follow, as sgemm's
alpha once its scaling map is fused in) computes, per output element, a
sequential fold over k. Folding one element at a time loads both operands
of every step from memory. Here the
i loop is unrolled by MR and the j loop by NR and the MR x NR copies of the
k loop are fused into one (unroll-and-jam, Callahan, Carr and Kennedy;
the register tiling of Futhark's and BLIS' micro-kernels): each k step
reads what the MR rows and NR columns need once (LLVM's CSE merges the
repeated loads) and folds MR * NR accumulators, which stay in registers.
With the reduction operator's `reassoc` (LANGUAGE.md lets reduce
reassociate) LLVM's loop vectorizer turns every accumulator into a vector
of partial folds along k: the inner product form of a GEMM micro-kernel
(both operands unit stride in k), with MR * NR vector accumulators.

Each accumulator still folds its own elements in order k = 0..K-1 from the
neutral element, exactly as the untiled loop does: the jam changes the
order between different output elements only. It is applied when the k
loop it builds cannot fail (no bounds or division checks inside: the first
error of the nest must stay the first one Python mode raises) and every
copy's reduction has the same width; otherwise the caller lowers the nest
element by element. Edges (rows or columns left over after whole MR x NR
blocks) run element by element.
"""
from __future__ import annotations

from contextlib import ExitStack

from pyshark.core import ir
from pyshark.core.traverse import iter_stms
from pyshark.core.types import I64, ScalarType

from .. import kir as K
from .. import scalar as S
from ..lower_base import Delayed, Lowerer
from .common import ZERO, all_scalar, apply_op, check_width, elements

# Rows x columns of the register tile: 16 accumulators (with 16-wide f32
# vectors, half of AVX-512's 32 registers; the other half hold the MR + NR
# operand vectors of a k step).
MR = 4
NR = 4


class _NotJammable(Exception):
    pass


# The most statements (nested bodies included) of a function copied 16
# times: beyond it the code grows more than the registers gain.
MAX_STMS = 64


#: what may follow the reduce in a register-tiled element (matmul's product
#: scaled by alpha after fusion: sgemm's `scale(mult(a, b))`)
_EPILOGUE = (ir.BinOp, ir.UnOp, ir.Convert, ir.Select, ir.AtomExp)


def tiled_reduce(lam: ir.Lambda):
    """(the Reduce, its index) of a function whose only result, a scalar,
    is a reduce's result followed by scalar arithmetic on it (an epilogue
    run per element after the jammed k loop), or None."""
    body = lam.body
    if len(body.result) != 1 or len(lam.ret) != 1 or not isinstance(lam.ret[0], ScalarType):
        return None
    if sum(1 for _ in iter_stms(body)) > MAX_STMS:
        return None
    k = len(body.stms) - 1
    while k >= 0 and isinstance(body.stms[k].exp, _EPILOGUE):
        k -= 1
    if k < 0:
        return None
    last = body.stms[k]
    red = last.exp
    if not isinstance(red, ir.Reduce) or len(last.pat) != 1 or not all_scalar(red.lam.ret):
        return None
    if k == len(body.stms) - 1 and (not isinstance(body.result[0], ir.Var)
                                    or body.result[0].name != last.pat[0].name):
        return None
    return red, k


def lambda_reduce(lam: ir.Lambda):
    """The Reduce statement a function ends in (its result is the function's
    only result, of scalars), or None; None too for a large function."""
    found = tiled_reduce(lam)
    if found is None or found[1] != len(lam.body.stms) - 1:
        return None
    return found[0]


def _has(b: K.Block, kinds) -> bool:
    for s in b.stms:
        if isinstance(s, kinds):
            return True
        if any(_has(sb, kinds) for sb in K.sub_blocks(s)):
            return True
    return False


def register_tiled(lw: Lowerer, inner: ir.Map, i0, i1, j0, j1, open_row, element,
                   store) -> bool:
    """Emits the tile [i0, i1) x [j0, j1) of the nest with MR x NR register
    blocks; False (and nothing emitted) when the nest does not qualify.

    open_row(i): a context manager that opens row i of the outer function
    and yields (environment, columns) for the inner map;
    element(renv, cols, i, j): emits output element (i, j) unjammed;
    store(i, j, value): emits the store of output element (i, j)."""
    found = tiled_reduce(inner.lam)
    if found is None:
        return False
    red, upto = found
    return _attempt(lw, lambda: _emit(lw, inner, red, upto, i0, i1, j0, j1, open_row, element,
                                      store))


def _emit(lw, inner, red, upto, i0, i1, j0, j1, open_row, element, store):
    mr, nr = S.const(MR, I64), S.const(NR, I64)
    nib = lw.let("nib", S.b("div", S.b("sub", i1, i0), mr))
    njb = lw.let("njb", S.b("div", S.b("sub", j1, j0), nr))
    jr = lw.let("jr", S.b("add", j0, S.b("mul", njb, nr)))
    ir_ = lw.let("ir", S.b("add", i0, S.b("mul", nib, mr)))

    def block_rows(ib):
        ia = lw.let("ia", S.b("add", i0, S.b("mul", ib, mr)))
        with ExitStack() as rows_stack:
            rs = [lw.let("ri", S.b("add", ia, S.const(r, I64))) for r in range(MR)]
            opened = [rows_stack.enter_context(open_row(i)) for i in rs]

            def micro(jb):
                ja = lw.let("ja", S.b("add", j0, S.b("mul", jb, nr)))
                js = [lw.let("cj", S.b("add", ja, S.const(c, I64))) for c in range(NR)]
                _micro(lw, inner, red, upto, opened, rs, js, store)
            lw.for_range("jb", ZERO, njb, micro)

            def rest_col(j):
                for (renv, cols), i in zip(opened, rs):
                    element(renv, cols, i, j)
            lw.for_range("j", jr, j1, rest_col)
    lw.for_range("ib", ZERO, nib, block_rows)

    def rest_row(i):
        with open_row(i) as (renv, cols):
            lw.for_range("j", j0, j1, lambda j: element(renv, cols, i, j))
    lw.for_range("i", ir_, i1, rest_row)


def _micro(lw, inner, red, upto, opened, rs, js, store):
    """One MR x NR block: every copy's statements before the reduce, then
    one k loop folding all MR * NR accumulators, then the stores."""
    with ExitStack() as stack:
        copies = []
        width = None
        for (renv, cols), i in zip(opened, rs):
            for j in js:
                env = dict(renv)
                for p, a in zip(inner.lam.params, elements(lw, cols, j)):
                    env[p.name] = a
                cenv = stack.enter_context(lw.open_body(inner.lam.body, upto, env))
                w = lw.scalar(red.width, cenv)
                if width is None:
                    width = w
                elif w != width:
                    raise _NotJammable()
                arrs = [lw.array(a, cenv) for a in red.arrs]
                check_width(lw, w, red.arrs, arrs, inner.lam.body.stms[-1].loc, "reduce")
                accs = [lw.var("acc", t) for t in red.lam.ret]
                for a, ne in zip(accs, red.neutral):
                    lw.emit(K.Set(a, lw.atom(ne, cenv)))
                copies.append((cenv, arrs, accs, i, j))

        def step(k):
            for cenv, arrs, accs, _, _ in copies:
                new = apply_op(lw, red.lam, cenv, accs + elements(lw, arrs, k), True)
                for a, x in zip(accs, new):
                    lw.emit(K.Set(a, x))
        with lw.block() as kb:
            lw.for_range("k", ZERO, width, step)
        if _has(kb[0], (K.Fail, K.Alloc, K.ParFor)):
            raise _NotJammable()
        lw.emit(kb[0].stms[0])
        body = inner.lam.body
        red_var = body.stms[upto].pat[0].name
        for cenv, _, accs, i, j in copies:
            # the element's arithmetic after its reduce (none in a plain matmul)
            cenv[red_var] = accs[0]
            with lw.block() as eb:
                for s in body.stms[upto + 1:]:
                    for v, x in zip(s.pat, lw.lower_exp(s, cenv)):
                        cenv[v.name] = x
            if _has(eb[0], (K.Fail, K.Alloc, K.ParFor)):
                raise _NotJammable()
            for s in eb[0].stms:
                lw.emit(s)
            store(i, j, lw.atom(body.result[0], cenv))


# Elements of a fold computed together (jam_fold): 16 accumulators, as the
# register tile.
KF = 16


def _jammable(a) -> bool:
    if not isinstance(a, Delayed) or a.group.source is None:
        return False
    return lambda_reduce(a.group.source[0]) is not None


def jam_fold(lw: Lowerer, lam, env, arrs, accs: list, lo, hi, reassoc: bool) -> bool:
    """accs = the in-order fold of `lam` over elements lo..hi-1 of arrs,
    where an input is a map whose function ends in a reduction (k-means'
    argmin over the distances to every centroid): the reductions of KF
    consecutive elements run as one jammed loop (KF accumulators, as in
    register_tiled), then the fold applies `lam` to the KF elements in
    order. False (and nothing emitted) when no input is such a map or the
    jammed code could fail; the caller then folds element by element."""
    if not any(_jammable(a) for a in arrs):
        return False
    return _attempt(lw, lambda: _emit_fold(lw, lam, env, arrs, accs, lo, hi, reassoc))


def _emit_fold(lw, lam, env, arrs, accs, lo, hi, reassoc):
    kf = S.const(KF, I64)
    nb = lw.let("nfb", S.b("div", K.Sel(S.b("gt", hi, lo), S.b("sub", hi, lo), ZERO), kf))

    def block(b):
        base = lw.let("fb", S.b("add", lo, S.b("mul", b, kf)))
        with ExitStack() as stack:
            copies = []
            width = None
            per_elem = []
            for u in range(KF):
                i = lw.let("fi", S.b("add", base, S.const(u, I64)))
                cache: dict = {}
                vals = []
                for a in arrs:
                    if not _jammable(a):
                        vals.append(lw.element(a, i, cache))
                        continue
                    key = id(a.group)
                    if key not in cache:
                        mlam, menv, marrs = a.group.source
                        red = lambda_reduce(mlam)
                        cenv = dict(menv)
                        for p, x in zip(mlam.params, elements(lw, marrs, i)):
                            cenv[p.name] = x
                        cenv = stack.enter_context(
                            lw.open_body(mlam.body, len(mlam.body.stms) - 1, cenv))
                        w = lw.scalar(red.width, cenv)
                        if width is None:
                            width = w
                        elif w != width:
                            raise _NotJammable()
                        rarrs = [lw.array(x, cenv) for x in red.arrs]
                        check_width(lw, w, red.arrs, rarrs, mlam.body.stms[-1].loc, "reduce")
                        racc = [lw.var("acc", t) for t in red.lam.ret]
                        for x, ne in zip(racc, red.neutral):
                            lw.emit(K.Set(x, lw.atom(ne, cenv)))
                        copies.append((red, cenv, rarrs, racc))
                        cache[key] = [racc[0]]
                    vals.append(cache[key][a.k])
                per_elem.append(vals)

            def step(k):
                for red, cenv, rarrs, racc in copies:
                    new = apply_op(lw, red.lam, cenv, racc + elements(lw, rarrs, k), True)
                    for x, y in zip(racc, new):
                        lw.emit(K.Set(x, y))
            with lw.block() as kb:
                lw.for_range("k", ZERO, width, step)
                if reassoc:
                    # the operator is associative (reduce's contract): combine
                    # the block's elements as a balanced tree, so that a fold
                    # carried through compares and selects (argmin) waits for
                    # log2(KF) steps per block rather than KF
                    while len(per_elem) > 1:
                        per_elem = [apply_op(lw, lam, env, per_elem[t] + per_elem[t + 1], True)
                                    if t + 1 < len(per_elem) else per_elem[t]
                                    for t in range(0, len(per_elem), 2)]
                for vals in per_elem:
                    new = apply_op(lw, lam, env, accs + vals, reassoc)
                    for x, y in zip(accs, new):
                        lw.emit(K.Set(x, y))
            if _has(kb[0], (K.Fail, K.Alloc, K.ParFor)):
                raise _NotJammable()
            for s in kb[0].stms:
                lw.emit(s)
    lw.for_range("fb", ZERO, nb, block)

    def rest(i):
        new = apply_op(lw, lam, env, accs + elements(lw, arrs, i), reassoc)
        for x, y in zip(accs, new):
            lw.emit(K.Set(x, y))
    lw.for_range("i", S.b("add", lo, S.b("mul", nb, kf)), hi, rest)


def _attempt(lw: Lowerer, emit) -> bool:
    """Runs emit() with its statements held aside: emitted when it succeeds
    (True); dropped, with the bounds conditions it collected for loop
    versioning, when it raises _NotJammable (False)."""
    try:
        with lw.checks_dropped_on(_NotJammable), lw.block() as blk:
            emit()
    except _NotJammable:
        return False
    for s in blk[0].stms:
        lw.emit(s)
    return True
