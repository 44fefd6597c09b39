"""A map of a map of a reduction over the rows of two matrices (matmul) on a
GPU: two-dimensional local-memory tiling with register blocking.

The shape (after inlining and fusion; segmap.lower_map tries it first):
    out = map(\\row. pre1; map(\\col. pre2; ys = map(g, row, col);
                                r = reduce(op, ne, ys); suffix), Y), X)
where X and Y are rank-2 arrays bound outside the nest, row and col their
rows, g reads its two arrays (row and col, in either order) at its own index
only, and each function returns one scalar. The prefixes may hold
element-invariant scalar code (sizes, asserts, arithmetic: run once on the
host before the launch, under `n > 0` and `n > 0 and m > 0`, as Python mode
runs them at the first element) and per-element code that cannot fail; the
suffix is per-element scalar code. Further matrices Z may be zipped with X
when the inner map only zips their rows with Y's: the suffix then reads
Z[i, j] (sgemm's `alpha * A B + beta * C` once fuse.py has moved the
product into the sum). Anything else declines (None) before emitting a
statement, and segmap's other shapes (a flat 2-D nest) lower it.

The algorithm is the classic register-blocked SGEMM tiling (Volkov and
Demmel, "Benchmarking GPUs to tune dense linear algebra", SC 2008; the
CUDA SGEMM tutorials' "2-D blocktiling" with vectorised shared-memory
reads, e.g. Boehm, "How to optimize a CUDA matmul kernel", 2022): a
work-group of TY x TX work-items (16 x 16 for groups of 256) computes a
block of R*TY x R*TX outputs, each work-item an R x R register block (R =
8 for elements of up to 4 bytes: 128 x 128 blocks; 4 for 8-byte ones). A
work-item's rows are quads of q consecutive rows (16 bytes: q = 4 for f32,
2 for f64), quad a // q at (a // q) * q * TY + ty * q, so its operands of
one k are R / q 16-byte loads from local memory (one ld.shared.v4 each on
NVIDIA). The k dimension is walked in chunks of TK (16 for f32, 8 for
f64: TK_BY_SIZE): the group copies X[i0:i0+bm, k0:k0+TK] and
Y[j0:j0+bn, k0:k0+TK] into local memory k-major (rows of bm + PAD
elements: 16-byte aligned, transposing stores on distinct banks), read one
chunk ahead into registers (prefetch), a barrier, the fold of the chunk
unrolled (R*R applications of g and op per 2R/q loads; the kir `contract`
pass makes a product and + one FMA), a barrier. Where two copies of the
tiles fit the target's local memory (DBUF), chunks alternate between them
and each needs one barrier: chunk t+1 is stored into the other buffer
after chunk t's fold (the classic double-buffered shared memory of CUDA
SGEMM kernels). Every output element is folded in index order over k,
chunk after chunk, from the neutral element: the same association as the
sequential fold (as gpu/segmap.py's n-body tiling). Rows and columns past
the edge load a valid (clamped) row and store nothing; the last partial
chunk loads and folds only what is left.

A kernel per block size, halving R down to MIN_R: for 4-byte elements 128 x
128 blocks (R = 8), 64 x 64 (R = 4) and 32 x 32 (R = 2), for 8-byte ones
64 x 64 and 32 x 32. The host launches the biggest whose blocks number at
least SMALL x the compute units (NumThreads / 64), else the smallest, so
that a 1024 x 1024 output (64 big blocks) still fills 132 SMs, and a 256 x
256 one 64 of them. Measurements: docs/opencl-backend.md.

A work-group kernel may not fail: the width checks (Python mode's
ShapeError when row and col differ in length) run on the host before the
launch; a body that can still fail (an index, an integer division)
declines.
"""
from __future__ import annotations

from types import SimpleNamespace

from pyshark.core import ir
from pyshark.core.types import I64

from .. import kir as K
from .. import scalar as S
from ..lower_base import Arr, Lowerer
from ..mc.common import ONE, ZERO, all_scalar, apply_op, check_width, elements, empty_dims
from ..usage import free_vars, use_counts
from .common import HOSTABLE, PER_ITEM, can_fail, group_size, trial

# register block: R x R outputs per work-item, by the larger element size of
# the two matrices (8 x 8 f32 accumulators and 16 operands fit the 255
# registers of an NVIDIA thread; 8 x 8 f64 would not)
R_BY_SIZE = {1: 8, 2: 8, 4: 8, 8: 4}
# k-chunk lengths by element size, the first that fits in local memory: 16
# for f32 (3.33 against 3.48 ms at 4096 on the H100; one buffer for the
# 128 x 128 blocks in the target's 32 KiB), 8 for f64 (9.0 against 9.7 ms)
TK_BY_SIZE = {1: (16, 8), 2: (16, 8), 4: (16, 8), 8: (8,)}
PREFETCH = True         # whole chunks read into registers one chunk ahead
RUNS = False            # a work-item loads a run of k of one row (places()):
                        # 127 registers instead of 174 on the H100, yet 4.17
                        # against 3.75 ms at 4096 f32 (docs/opencl-backend.md)
QUAD = 16               # bytes of a work-item's rows (columns) that lie next to
                        # each other: one 16-byte load from local memory
PAD = 4                 # local rows of bm + PAD elements: 16-byte aligned, and the
                        # transposing stores of a chunk hit distinct banks
DBUF = True             # two local tiles of each matrix, used in turn: one barrier
                        # per chunk instead of two
LOCAL_MEM = 0           # bytes of local memory the kernel may take; 0: the target's
                        # (32 KiB); an experiment knob (matmul_variants.py "tk16_dbuf":
                        # 48 KiB, NVIDIA's static limit, fits two buffers of TK = 16)
SMALL = 1               # half the block side (R = 4: 64 x 64 blocks for f32) when the
                        # blocks number fewer than SMALL x the compute units (1024 x
                        # 1024 makes 64 blocks of 128 x 128 for 132 SMs: 4 x 4
                        # fills them), and again down to R = MIN_R; 0: never
MIN_R = 2               # the smallest register block: 32 x 32 blocks, for a 256 x 256
                        # f64 product (16 blocks of 64 x 64 left 116 of the H100's
                        # 132 SMs idle: 350 us, against NumPy's 126 us on the host)


def _c(v: int) -> K.KConst:
    return S.const(v, I64)


def _quad_offset(t_count: int, q: int, a: int) -> int:
    """The offset of row a of a work-item's R rows from t * q (t its index
    along the block's side of t_count work-items): quads of q consecutive
    rows, quad a // q after t_count * q rows of the quads before it."""
    return (a // q) * q * t_count + a % q


def _log2(v: int) -> int:
    return v.bit_length() - 1


def _split(stms, dep: set, sized: set, host: list, item: list) -> bool:
    """Sorts prefix statements into element-invariant (host) and per-element
    (item) ones, growing `dep`; False when one may not run in either place.
    A size of an array in `sized` (a row of X or Y) is element-invariant."""
    for s in stms:
        fv = free_vars(s.exp)
        scalar = all_scalar([v.type for v in s.pat])
        if isinstance(s.exp, ir.Size) and s.exp.arr.name in sized:
            host.append(s)
        elif isinstance(s.exp, HOSTABLE) and scalar and not (fv & dep):
            host.append(s)
        elif isinstance(s.exp, PER_ITEM):
            item.append(s)
            dep |= {v.name for v in s.pat}
        else:
            return False
    return True


def _match(lw: Lowerer, e: ir.Map, env):
    """The parts of the shape (module docstring), or None."""
    lam = e.lam
    if len(e.arrs) != len(lam.params) or len(lam.ret) != 1 or not lam.body.stms:
        return None
    X = env.get(e.arrs[0].name)
    if not isinstance(X, Arr) or X.rank != 2:
        return None
    # further matrices Z zipped with X, whose rows only the inner map zips
    # with Y's rows, so that its suffix reads Z[i, j] (sgemm's beta * C)
    zrows = {}
    for q, a in zip(lam.params[1:], e.arrs[1:]):
        Z = env.get(a.name)
        if not isinstance(Z, Arr) or Z.rank != 2:
            return None
        zrows[q.name] = Z
    last = lam.body.stms[-1]
    inner = last.exp
    res = lam.body.result
    if (not isinstance(inner, ir.Map) or len(last.pat) != 1 or len(res) != 1
            or not isinstance(res[0], ir.Var) or res[0].name != last.pat[0].name):
        return None
    il = inner.lam
    if len(inner.arrs) != len(il.params) or len(il.ret) != 1 or not all_scalar(il.ret):
        return None
    zs = []                 # (the inner parameter, Z) of each element of Z read
    for q, a in zip(il.params[1:], inner.arrs[1:]):
        if a.name not in zrows:
            return None
        zs.append((q.name, zrows[a.name]))
    if len(zs) != len(zrows) or set(zrows) & (free_vars(il) | set().union(
            *(free_vars(st.exp) for st in lam.body.stms[:-1]))):
        return None
    row, col = lam.params[0].name, il.params[0].name
    outer_bound = {v.name for s in lam.body.stms for v in s.pat} | {row}
    Y = env.get(inner.arrs[0].name)
    if inner.arrs[0].name in outer_bound or not isinstance(Y, Arr) or Y.rank != 2:
        return None
    # the inner width: known on the host before the nest (it shapes the output)
    w = inner.width
    sizes = {s.pat[0].name: s.exp for s in lam.body.stms[:-1] if isinstance(s.exp, ir.Size)}
    if isinstance(w, ir.Const):
        m = _c(w.value)
    elif w.name not in outer_bound and isinstance(env.get(w.name), (K.KVar, K.KConst)):
        m = env[w.name]
    elif w.name in sizes and isinstance(env.get(sizes[w.name].arr.name), Arr) \
            and sizes[w.name].arr.name not in outer_bound:
        m = env[sizes[w.name].arr.name].shape[sizes[w.name].dim]
    else:
        return None
    host1, item1, host2, item2 = [], [], [], []
    dep = {row}
    if not _split(lam.body.stms[:-1], dep, {row}, host1, item1):
        return None
    stms = il.body.stms
    soacs = [j for j, s in enumerate(stms) if not isinstance(s.exp, PER_ITEM + HOSTABLE)]
    if len(soacs) != 2 or soacs[1] != soacs[0] + 1:
        return None
    k = soacs[0]
    mp, red = stms[k].exp, stms[k + 1].exp
    if not (isinstance(mp, ir.Map) and isinstance(red, ir.Reduce)):
        return None
    dep |= {col}
    if not _split(stms[:k], dep, {row, col}, host2, item2):
        return None
    if any(not isinstance(s.exp, PER_ITEM) for s in stms[k + 2:]):
        return None
    zp = {q for q, _ in zs}
    if any(zp & free_vars(st.exp) for st in stms[:k + 2]):
        return None                     # Z's elements are read by the suffix only
    names = [a.name for a in mp.arrs]
    if len(names) != 2 or sorted(names) != sorted([row, col]):
        return None
    if len(mp.lam.ret) != 1 or len(red.lam.ret) != 1 or not all_scalar(red.lam.ret):
        return None
    ys = stms[k].pat[0].name
    counts = use_counts(il.body)
    if ([a.name for a in red.arrs] != [ys] or counts.get(ys, 0) != 1
            or any(isinstance(a, ir.Var) and a.name == ys for a in red.neutral)
            or ys in free_vars(red.lam)):
        return None
    inside = dep | {v.name for s in stms for v in s.pat}
    hosted = {v.name for s in host1 + host2 for v in s.pat}
    for wd in (mp.width, red.width):
        if isinstance(wd, ir.Var) and (wd.name in dep or (wd.name in inside | outer_bound
                                                         and wd.name not in hosted)):
            return None
    G = group_size(lw)
    if G <= 0 or G & (G - 1):
        return None
    tx = 1 << ((_log2(G) + 1) // 2)         # TY x TX work-items, TX >= TY
    ty = G // tx
    xs, ys = X.elem.dtype.itemsize, Y.elem.dtype.itemsize
    budget = LOCAL_MEM or lw.options.target.local_mem
    cfgs = []       # the block shapes that fit in local memory, biggest first
    big = R_BY_SIZE.get(max(xs, ys), 4)
    rs = [big]
    while SMALL and rs[-1] > MIN_R:
        rs.append(rs[-1] // 2)
    for r in rs:
        bm, bn = r * ty, r * tx
        # the longest chunk first, then two buffers before one (f32 128 x 128
        # with TK = 16 fits the 32 KiB of the target once: measured best)
        fit = [(t, nbuf) for t in TK_BY_SIZE.get(max(xs, ys), (8,))
               for nbuf in ((2, 1) if DBUF and PREFETCH else (1,))
               if ((bm + PAD) * xs + (bn + PAD) * ys) * t * nbuf <= budget]
        if fit:
            cfgs.append(SimpleNamespace(r=r, bm=bm, bn=bn, tk=fit[0][0], nbuf=fit[0][1]))
    if not cfgs:
        return None
    return SimpleNamespace(X=X, Y=Y, m=m, row=row, col=col, host1=host1, item1=item1,
                           host2=host2, item2=item2, k=k, mp=mp, red=red, inner=inner,
                           G=G, tx=tx, ty=ty, cfgs=cfgs, swap=names[0] == col, zs=zs)


def tiled_map_map_reduce(lw: Lowerer, e: ir.Map, env, stm):
    p = _match(lw, e, env)
    if p is None:
        return None
    il = p.inner.lam
    X, Y, G = p.X, p.Y, p.G
    n = lw.scalar(e.width, env)
    with lw.walk_state_kept(scope=True):
        with lw.block() as pre:
            arrs = [lw.array(a, env) for a in e.arrs]
            check_width(lw, n, e.arrs, arrs, stm.loc, "map")
            m = p.m
            (ed,) = empty_dims(lw, e, env)       # the rows of an empty map
            nr = lw.let("nr", K.Sel(S.b("gt", n, ZERO), m, ed[0]))
        # the rows' sizes for the host statements (which read no memory)
        henv = dict(env)
        henv[p.row] = Arr(X.base, X.data, X.shape[1:], X.elem, X.aliases)
        henv[p.col] = Arr(Y.base, Y.data, Y.shape[1:], Y.elem, Y.aliases)
        with lw.block() as outer:           # under n > 0: row 0's statements
            for s in p.host1:
                for v, val in zip(s.pat, lw.lower_exp(s, henv)):
                    henv[v.name] = val
            check_width(lw, m, p.inner.arrs,
                        [Y] + [SimpleNamespace(shape=(Z.shape[1],)) for _, Z in p.zs],
                        stm.loc, "map")
        with lw.block() as guarded:         # under m > 0: element (0, 0)'s
            for s in p.host2:
                for v, val in zip(s.pat, lw.lower_exp(s, henv)):
                    henv[v.name] = val
            kw = lw.scalar(p.mp.width, henv)
            rw = lw.scalar(p.red.width, henv)
            check_width(lw, kw, p.mp.arrs, [henv[a.name] for a in p.mp.arrs], stm.loc, "map")
            check_width(lw, rw, p.red.arrs, [SimpleNamespace(shape=(kw,))], stm.loc, "reduce")
            for c in p.cfgs:
                tk, bm, bn = c.tk, c.bm, c.bn
                c.full = lw.let("ft", S.b("shr", kw, _c(_log2(tk))))      # whole chunks
                c.tail = lw.let("tl", S.b("sub", kw, S.b("shl", c.full, _c(_log2(tk)))))
                c.nbj = lw.let("nbj", S.b("shr", S.b("add", m, _c(bn - 1)), _c(_log2(bn))))
                c.nbi = lw.let("nbi", S.b("shr", S.b("add", n, _c(bm - 1)), _c(_log2(bm))))
                c.count = lw.let("gw", S.b("mul", S.b("mul", c.nbi, c.nbj), _c(G)))
        out_ptr = lw.var("map", K.Ptr(il.ret[0]))

        def kernel(c):
            tk, bm, bn, full, tail, nbj = c.tk, c.bm, c.bn, c.full, c.tail, c.nbj
            sx, sy = bm + PAD, bn + PAD
            xt = lw.var("xt", K.Ptr(X.elem, "local"))
            yt = lw.var("yt", K.Ptr(Y.elem, "local"))
            lw.emit(K.LocalAlloc(xt, c.nbuf * tk * sx))
            lw.emit(K.LocalAlloc(yt, c.nbuf * tk * sy))
            lid = lw.let("lid", K.LocalId())
            ty = lw.let("ty", S.b("shr", lid, _c(_log2(p.tx))))
            tx = lw.let("tx", S.b("and", lid, _c(p.tx - 1)))
            grp = lw.let("grp", K.GroupId())
            bi = lw.let("bi", K.Bin("div", grp, nbj))
            i0 = lw.let("i0", S.b("mul", bi, _c(bm)))
            j0 = lw.let("j0", S.b("mul", S.b("sub", grp, S.b("mul", bi, nbj)), _c(bn)))
            # this work-item's rows and columns within the block: quads of Q
            # consecutive ones (one vector load from local memory each)
            q = min(QUAD // max(X.elem.dtype.itemsize, Y.elem.dtype.itemsize), c.r)
            tyq = lw.let("tyq", S.b("mul", ty, _c(q)))
            txq = lw.let("txq", S.b("mul", tx, _c(q)))
            ro = [_quad_offset(p.ty, q, a) for a in range(c.r)]      # + tyq
            co = [_quad_offset(p.tx, q, b) for b in range(c.r)]      # + txq
            rows = [lw.let("ri", S.b("add", S.b("add", i0, tyq), _c(o))) for o in ro]
            cols = [lw.let("cj", S.b("add", S.b("add", j0, txq), _c(o))) for o in co]
            last_i, last_j = lw.let("li", S.b("sub", n, ONE)), lw.let("lj", S.b("sub", m, ONE))
            ci = [lw.let("i", K.Sel(S.b("lt", r, n), r, last_i)) for r in rows]
            cj = [lw.let("j", K.Sel(S.b("lt", c, m), c, last_j)) for c in cols]
            rowv = [elements(lw, [X], i)[0] for i in ci]
            colv = [elements(lw, [Y], j)[0] for j in cj]
            envs = {}
            for a in range(c.r):
                for b in range(c.r):
                    ev = dict(henv)
                    ev[p.row], ev[p.col] = rowv[a], colv[b]
                    for s in p.item1 + p.item2:
                        for v, val in zip(s.pat, lw.lower_exp(s, ev)):
                            ev[v.name] = val
                    envs[a, b] = ev
            accs = {}
            for ab, ev in envs.items():
                accs[ab] = lw.var("acc", p.red.lam.ret[0])
                lw.emit(K.Set(accs[ab], lw.atom(p.red.neutral[0], ev)))

            def places(arr: Arr, rows_in_block: int, base, last, stride: int) -> list:
                """This work-item's elements of a tile: [(guard or None,
                column, local offset, global offset at k = 0)], stored
                k-major (the padding keeps the transposing stores free of
                bank conflicts); a row past the edge reads the last row.
                When the tile divides into runs of v = total / G elements
                along k, each work-item takes one run of one row (one
                address for its v loads: fewer registers; a warp still
                reads whole 32-byte sectors); otherwise consecutive
                work-items take consecutive k."""
                out, total = [], rows_in_block * tk
                v = total // G
                if RUNS and total % G == 0 and 0 < v <= tk and tk % v == 0:
                    r = lw.let("lr", S.b("shr", lid, _c(_log2(tk // v))))
                    c0 = lw.let("lc", S.b("shl", S.b("and", lid, _c(tk // v - 1)), _c(_log2(v))))
                    g = lw.let("gr", S.b("add", base, r))
                    g = lw.let("gr", K.Sel(S.b("le", g, last), g, last))
                    lo = lw.let("lo", S.b("add", S.b("mul", c0, _c(stride)), r))
                    go = lw.let("go", S.b("add", S.b("mul", g, arr.shape[1]), c0))
                    for j in range(v):
                        out.append((None, S.b("add", c0, _c(j)), S.b("add", lo, _c(j * stride)),
                                    S.b("add", go, _c(j))))
                    return out
                for q in range((total + G - 1) // G):
                    el = lw.let("el", S.b("add", lid, _c(G * q)))
                    r = lw.let("lr", S.b("shr", el, _c(_log2(tk))))
                    c = lw.let("lc", S.b("and", el, _c(tk - 1)))
                    g = lw.let("gr", S.b("add", base, r))
                    g = lw.let("gr", K.Sel(S.b("le", g, last), g, last))
                    out.append((S.b("lt", el, _c(total)) if total % G else None, c,
                                lw.let("lo", S.b("add", S.b("mul", c, _c(stride)), r)),
                                lw.let("go", S.b("add", S.b("mul", g, arr.shape[1]), c))))
                return out
            xplaces = places(X, bm, i0, last_i, sx)
            yplaces = places(Y, bn, j0, last_j, sy)
            both = [(xt, X, pl) for pl in xplaces] + [(yt, Y, pl) for pl in yplaces]

            def fetch(k0) -> list:
                """The work-item's elements of the chunk at k0 (whole), read
                into registers: issued before the fold of the chunk before
                it, they arrive while it runs (prefetching)."""
                out = []
                for tile, arr, (lim, c, lo, go) in both:
                    ld = K.Load(arr.data, S.b("add", go, k0))
                    if lim is None:
                        out.append(lw.let("pf", ld))
                    else:       # a place past the tile: read a valid element
                        out.append(lw.let("pf", K.Load(arr.data, K.Sel(lim, S.b("add", go, k0),
                                                                         ZERO))))
                return out

            def put(vals, offs=None) -> None:
                """Stores a chunk's elements in the local tiles (at offsets
                offs = (x, y) into them: the other buffer)."""
                for (tile, arr, (lim, c, lo, go)), v in zip(both, vals):
                    if offs is not None:
                        lo = S.b("add", lo, offs[0] if tile is xt else offs[1])
                    st = K.Store(tile, lo, v)
                    lw.emit(st if lim is None else K.If(lim, K.Block((st,))))

            def load_tail(k0) -> None:
                for tile, arr, (lim, c, lo, go) in both:
                    st = K.Store(tile, lo, K.Load(arr.data, S.b("add", go, k0)))
                    cond = S.b("lt", S.b("add", k0, c), kw)
                    if lim is not None:
                        cond = S.land(lim, cond)
                    lw.emit(K.If(cond, K.Block((st,))))

            def step(kk, bases=None):
                """One k of the chunk in local memory: R + R loads, R * R
                applications of g and the operator (FMAs for a dot); bases:
                the work-item's first row and column in the buffer in use."""
                if isinstance(kk, int):     # unrolled: base + a constant
                    xb, yb = bases or (tyq, txq)
                    xv = [lw.let("xv", K.Load(xt, S.b("add", xb, _c(kk * sx + o)))) for o in ro]
                    yv = [lw.let("yv", K.Load(yt, S.b("add", yb, _c(kk * sy + o)))) for o in co]
                else:
                    xb = lw.let("xk", S.b("add", tyq, S.b("mul", kk, _c(sx))))
                    yb = lw.let("yk", S.b("add", txq, S.b("mul", kk, _c(sy))))
                    xv = [lw.let("xv", K.Load(xt, S.b("add", xb, _c(o)))) for o in ro]
                    yv = [lw.let("yv", K.Load(yt, S.b("add", yb, _c(o)))) for o in co]
                for (a, b), ev in envs.items():
                    args = [yv[b], xv[a]] if p.swap else [xv[a], yv[b]]
                    v = lw.apply(p.mp.lam.params, p.mp.lam.body, ev, args, new_frame=True)
                    new = apply_op(lw, p.red.lam, ev, [accs[a, b], v[0][0]], reassoc=True)
                    lw.emit(K.Set(accs[a, b], new[0]))

            # whole chunks: chunk t's elements were fetched into registers
            # during chunk t-1's fold; stored, a barrier, the next chunk
            # fetched (the last fetch reads the last chunk again: no branch),
            # the fold unrolled over the chunk, a barrier (DBUF: one barrier,
            # chunk_dbuf)
            dbuf = c.nbuf == 2
            with lw.block() as whole:
                if PREFETCH:
                    regs = fetch(ZERO)
                    pv = [lw.var("pv", K.type_of(r)) for r in regs]
                    for a, r in zip(pv, regs):
                        lw.emit(K.Set(a, r))

                def chunk_dbuf(t):
                    # chunk t is in buffer t & 1 (stored during chunk t-1);
                    # chunk t+1 is fetched, chunk t folded, chunk t+1 stored in
                    # the other buffer (last read before the previous barrier),
                    # one barrier
                    par = lw.let("par", S.b("and", t, ONE))
                    xo = lw.let("xo", S.b("mul", par, _c(tk * sx)))
                    yo = lw.let("yo", S.b("mul", par, _c(tk * sy)))
                    nxt = lw.let("kn", S.b("shl", K.Sel(S.b("lt", S.b("add", t, ONE), full),
                                                        S.b("add", t, ONE), t),
                                           _c(_log2(tk))))
                    for a, r in zip(pv, fetch(nxt)):
                        lw.emit(K.Set(a, r))
                    bases = (lw.let("xb", S.b("add", tyq, xo)), lw.let("yb", S.b("add", txq, yo)))
                    for kk in range(tk):
                        step(kk, bases)
                    put(pv, (lw.let("xn", S.b("sub", _c(tk * sx), xo)),
                             lw.let("yn", S.b("sub", _c(tk * sy), yo))))
                    lw.emit(K.Barrier())

                def chunk(t):
                    if PREFETCH:
                        put(pv)
                    else:
                        put(fetch(lw.let("k0", S.b("shl", t, _c(_log2(tk))))))
                    lw.emit(K.Barrier())
                    if PREFETCH:
                        nxt = lw.let("kn", S.b("shl", K.Sel(S.b("lt", S.b("add", t, ONE), full),
                                                            S.b("add", t, ONE), t),
                                               _c(_log2(tk))))
                        for a, r in zip(pv, fetch(nxt)):
                            lw.emit(K.Set(a, r))
                    for kk in range(tk):
                        step(kk)
                    lw.emit(K.Barrier())
                if dbuf:
                    put(pv)
                    lw.emit(K.Barrier())
                lw.for_range("kt", ZERO, full, chunk_dbuf if dbuf else chunk)
            lw.emit(K.If(S.b("gt", full, ZERO), whole[0]))
            with lw.block() as last:
                k0 = lw.let("k0", S.b("shl", full, _c(_log2(tk))))
                load_tail(k0)
                lw.emit(K.Barrier())
                lw.for_range("kk", ZERO, tail, step)
            lw.emit(K.If(S.b("gt", tail, ZERO), last[0]))
            for (a, b), ev in envs.items():
                ev[il.body.stms[p.k + 1].pat[0].name] = accs[a, b]
                with lw.block() as st:
                    for q, Z in p.zs:           # Z[i, j], inside the edge guard
                        ev[q] = lw.element(lw.element(Z, rows[a], {}), cols[b], {})
                    for s in il.body.stms[p.k + 2:]:
                        for v, val in zip(s.pat, lw.lower_exp(s, ev)):
                            ev[v.name] = val
                    lw.emit(K.Store(out_ptr, S.b("add", S.b("mul", rows[a], m), cols[b]),
                                    lw.atom(il.body.result[0], ev)))
                lw.emit(K.If(S.land(S.b("lt", rows[a], n), S.b("lt", cols[b], m)), st[0]))

        bodies = [trial(lw, lambda c=c: kernel(c))[1] for c in p.cfgs]
    if any(can_fail(b) for b in bodies):
        return None
    for s in pre[0].stms:
        lw.emit(s)
    lw.emit(K.Alloc(out_ptr, S.b("mul", n, nr)))
    lw.own(out_ptr)
    launches = [K.ParFor(lw.var("gi", I64), c.count, b, None, group_size=G)
                for c, b in zip(p.cfgs, bodies)]
    # the biggest blocks that number at least SMALL x the compute units (they
    # fill the device), else the smallest
    launch = launches[-1]
    units = S.b("shr", K.NumThreads(), _c(6))              # NumThreads = units x 64
    for c, big_launch in reversed(list(zip(p.cfgs[:-1], launches[:-1]))):
        few = S.b("lt", S.b("mul", c.nbi, c.nbj), S.b("mul", units, _c(SMALL)))
        launch = K.If(few, K.Block((launch,)), K.Block((big_launch,)))
    inner = K.If(S.b("gt", m, ZERO), K.Block(guarded[0].stms + (launch,)))
    lw.emit(K.If(S.b("gt", n, ZERO), K.Block(outer[0].stms + (inner,))))
    return [Arr(out_ptr, out_ptr, (n, nr), il.ret[0], frozenset({out_ptr.name}))]
