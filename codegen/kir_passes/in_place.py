"""Rows computed in place (the cpu and kir targets): a row that the
lowering computes into a temporary and then copies into its place in the
result is computed in its place, when the sizes agree at run time.

    t = alloc(c)                        ip = (c == n)
    ... t[j] = v ...              =>    if ip { t = dst } else { t = alloc(c) }
    check                               ... t[j] = v ...
    copy(dst, t, n)                     check
    free(t)                             if not ip { copy(dst, t, n); free(t) }

This is copy elision by destination passing (the result's row is the
destination of the function that makes it; Futhark's in-place lowering of
map results, and memory-block merging, do the same). The lowering of a map
whose rows are arrays (mc/segmap.py, `store_row`) always copies: it learns
a row's shape only after the row is built, and checks it (an irregular
result is a ShapeError after the row ran, as in Python mode). srad's pixel
nest wrote its five unzipped rows into five temporaries and copied each:
11% of its instructions were those copies, besides the extra stores.

When it applies: in one block, `Alloc(t, c)`, later `CopyMem(dst, t, n)`
(an ordinary one: a nontemporal copy streams a tile past the caches on
purpose, mc/stream_tile.py) followed at once by `Free(t)`; in between t is
only the pointer of Stores (never loaded, never copied from, never a value
or part of another pointer, never assigned), and t is mentioned nowhere else in the function;
`dst` and `n` read only variables that nothing between the Alloc and the
copy assigns, and no pointer variable that may point into dst's block (one
`dst` reads, or one set from or to such a variable, transitively) is
mentioned between them, so nothing there reads or writes the destination
except through t.

Nested levels (session 36): a plane of a 3-D result whose rows this pass
has put in place is written only through those rows (_row_pair: `if ip {
p = t + e } else { p = alloc }` ... `if not ip { copy(t + e, p); free(p) }`)
and can be put in place in turn, so a 3-D comprehension builds each row in
the result itself. And the alias test looks only at the statements that
can run between the destination block's Alloc and the copy (_region): in
an iterated stencil the grid read by the rows is set from the result after
the rows are built (`u = new`), so it points to the previous step's block,
not into the one being written. heat3d (96^3, 10 steps, 2-core Zen 5): one
copy of the whole grid a step fewer, 1.77 -> 1.69 ms.

Why it is exact: with ip the stores land where the copy would have put
them: t[j] for j < c = n is dst[j] (a Store to an allocated block is in its
bounds, kir.py). Nothing between reads dst, so no value changes; the
copy's reads of t are gone with the copy. Errors are the same statements
in the same order (the check still comes after the row); when the row or
the check fails, dst holds part of a row, and dst is a block of the
failing call, which nobody sees again. Without ip (an irregular row: the
check is about to fail) the code is the old one. Each ParFor iteration
still writes only its own row of dst, as its copy did.
"""
from __future__ import annotations

from collections import Counter

from pyshark.core.types import BOOL

from .. import kir as K
from .. import scalar as S
from ..kir_traverse import (binders, declared_vars, map_bodies, map_block, map_stm,
                            stm_exprs, sub_blocks, walk_exprs, walk_stms)


def _mentions(s: K.Stm, names: set) -> bool:
    """Whether a statement reads or declares any of `names` (nested too)."""
    for u in _all_stms(s):
        if any(v.name in names for v in binders(u)):
            return True
        if any(K.expr_vars(e) & names for e in stm_exprs(u)):
            return True
    return False


def _only_stored_through(s: K.Stm, t: str) -> bool:
    """t appears in s (nested too) only as the pointer of a Store, `t[i] = v`."""
    for u in _all_stms(s):
        if any(v.name == t for v in binders(u)):
            return False
        if isinstance(u, K.Store):
            if t in K.expr_vars(u.index) or t in K.expr_vars(u.value):
                return False
            if t in K.expr_vars(u.ptr) and not (u.ptr.__class__ is K.KVar and u.ptr.name == t):
                return False
            continue
        if any(t in K.expr_vars(e) for e in stm_exprs(u)):
            return False
    return True


def _row_pair(head: K.Stm, t: str) -> str | None:
    """The pointer p when `head` starts a row this pass already put in place
    inside t: `if ip { p = t + e } else { p = alloc(c) }` (try_row's head,
    ip an `ip_rp` flag). The row then writes into t through p when ip holds,
    and is copied into t from p's own block when it does not: either way t
    is only written."""
    if not (isinstance(head, K.If) and head.cond.__class__ is K.KVar
            and head.cond.name.startswith("ip_rp") and len(head.then.stms) == 1
            and len(head.orelse.stms) == 1):
        return None
    st, al = head.then.stms[0], head.orelse.stms[0]
    if not (isinstance(st, K.Set) and isinstance(al, K.Alloc) and st.var.name == al.var.name):
        return None
    return st.var.name if _written_into(st.value, t) else None


def _written_into(dst: K.Expr, t: str) -> bool:
    """dst is t, or t plus offsets that do not read t."""
    while isinstance(dst, K.PtrAdd):
        if t in K.expr_vars(dst.offset):
            return False
        dst = dst.ptr
    return dst.__class__ is K.KVar and dst.name == t


def _row_tail(s: K.Stm, t: str, pending: set) -> bool:
    """`if not ip { copy(t + e, p, n); free(p) }`: the tail of a row pair."""
    if not (isinstance(s, K.If) and isinstance(s.cond, K.Un) and s.cond.op == "not"
            and s.cond.x.__class__ is K.KVar and s.cond.x.name.startswith("ip_rp")
            and not s.orelse.stms and len(s.then.stms) == 2):
        return False
    cp, fr = s.then.stms
    return (isinstance(cp, K.CopyMem) and not cp.nontemporal and cp.src.__class__ is K.KVar
            and cp.src.name in pending
            and _written_into(cp.dst, t) and t not in K.expr_vars(cp.count)
            and isinstance(fr, K.Free) and fr.ptr.__class__ is K.KVar
            and fr.ptr.name == cp.src.name)


def _only_written_through(b: K.Block, t: str) -> bool:
    """t appears in b (nested too) only where its block is written: the
    pointer of a Store, or the base of a row this pass already put in place
    (_row_pair, with its tail: the row's pointer p was checked to be only
    stored through, and is copied from only under `not ip`, where it is a
    block of its own). A plane of a 3-D result whose rows were put in place
    is such a t, and can be put in place in turn."""
    pending: set = set()
    for s in b.stms:
        p = _row_pair(s, t)
        if p is not None:
            pending.add(p)
            continue
        if _row_tail(s, t, pending):
            pending.discard(s.then.stms[0].src.name)
            continue
        if isinstance(s, K.Store):
            if not _only_stored_through(s, t):
                return False
            continue
        if any(t in K.expr_vars(e) for e in stm_exprs(s)) or any(v.name == t for v in binders(s)):
            return False
        if not all(_only_written_through(sb, t) for sb in sub_blocks(s)):
            return False
    return not pending


def _definitions(body: K.Block) -> dict:
    """name -> the statements of body that bind it (nested too)."""
    out: dict = {}
    for s in walk_stms(body):
        for v in binders(s):
            out.setdefault(v.name, []).append(s)
    return out


def _region(body: K.Block, defs: dict, root: str, cp: K.Stm) -> K.Block | None:
    """The statements that can run between the one `Alloc(root)` of the
    function and the statement holding `cp`, when both are in one block B:
    B's statements after the Alloc, up to and including that statement. A
    pointer set from root anywhere else (later in B, or in an earlier pass
    of a loop around B) points to an earlier block of root, which the code
    between does not touch: it is live and another block, or freed and
    never read again. `defs`: _definitions(body)."""
    d = defs.get(root, ())
    if len(d) != 1 or not isinstance(d[0], K.Alloc):
        return None
    return _after_alloc(body, d[0], cp)


def _after_alloc(b: K.Block, alloc: K.Alloc, cp: K.Stm) -> K.Block | None:
    """_region's search: the block holding `alloc`, from it to cp's statement."""
    for i, s in enumerate(b.stms):
        if s is alloc:
            for j in range(i + 1, len(b.stms)):
                if any(u is cp for u in _all_stms(b.stms[j])):
                    return K.Block(b.stms[i + 1:j + 1])
            return None
        for sb in sub_blocks(s):
            r = _after_alloc(sb, alloc, cp)
            if r is not None:
                return r
    return None


def _all_stms(s: K.Stm):
    yield s
    for b in sub_blocks(s):
        yield from walk_stms(b)


def _aliases(body: K.Block, roots: set, extra: list = ()) -> set:
    """The pointer variables that may point into the same block as one of
    roots: closed under `p = e` (anywhere in body, and the pairs of
    `extra`: the Sets this pass has added) in both directions, p with the
    variables e reads; roots included."""
    out = set(roots)
    sets = [(s.var.name, {x.name for x in walk_exprs(s.value)
                          if x.__class__ is K.KVar and isinstance(x.type, K.Ptr)})
            for s in walk_stms(body) if isinstance(s, K.Set) and isinstance(s.var.type, K.Ptr)]
    sets += list(extra)
    changed = True
    while changed:
        changed = False
        for v, reads in sets:
            if v in out or reads & out:
                new = ({v} | reads) - out
                if new:
                    out |= new
                    changed = True
    return out


def _mention_counts(stms) -> Counter:
    """Reads and declarations of every variable in statements (nested too)."""
    n: Counter = Counter()
    for s in stms:
        for u in _all_stms(s):
            for v in binders(u):
                n[v.name] += 1
            for e in stm_exprs(u):
                for x in walk_exprs(e):
                    if x.__class__ is K.KVar:
                        n[x.name] += 1
    return n


def _count_mentions(stms, t: str) -> int:
    """Reads and declarations of t in statements (nested too)."""
    return _mention_counts(stms)[t]


class _Pass:
    def __init__(self, fn_body: K.Block):
        self.fn_body = fn_body
        self.k = 0
        self._fn_counts: Counter | None = None
        self._defs: dict | None = None      # _definitions of the function's body, when asked
        self.added: list = []           # (p, the pointer variables it is set from) of heads made

    def fn_counts(self) -> Counter:
        """_mention_counts of the function's body as the pass found it (what
        each candidate is counted against), computed once: a walk per
        candidate was most of this pass's time on LocVolCalib."""
        if self._fn_counts is None:
            self._fn_counts = _mention_counts(self.fn_body.stms)
        return self._fn_counts

    def block(self, b: K.Block) -> K.Block:
        b = map_block(b, lambda s: map_stm(s, block=self.block))
        stms = list(b.stms)
        k = 0
        while k < len(stms):
            s = stms[k]
            if isinstance(s, K.Alloc) and not s.zeroed:
                done = self.try_row(stms, k)
                if done is not None:
                    stms = done
            k += 1
        return K.Block(tuple(stms))

    def try_row(self, stms: list, p: int):
        a = stms[p]
        t = a.var.name
        q = next((j for j in range(p + 1, len(stms))
                  if isinstance(stms[j], K.CopyMem) and stms[j].src.__class__ is K.KVar
                  and stms[j].src.name == t and not stms[j].nontemporal), None)
        if q is None or q + 1 >= len(stms):
            return None
        cp, fr = stms[q], stms[q + 1]
        if not (isinstance(fr, K.Free) and fr.ptr.__class__ is K.KVar and fr.ptr.name == t):
            return None
        if t in K.expr_vars(cp.dst) or t in K.expr_vars(cp.count):
            return None
        mid = stms[p + 1:q]
        if not _only_written_through(K.Block(tuple(mid)), t):
            return None
        # t nowhere else: the Alloc, the stores, the copy and the free
        uses = _count_mentions(mid, t)
        if self.fn_counts()[t] != uses + 3:
            return None
        reads = K.expr_vars(cp.dst) | K.expr_vars(cp.count)
        assigned: set = set()
        for s in mid:
            assigned |= declared_vars(s)
        if reads & assigned:
            return None
        ptrs = {x.name for x in walk_exprs(cp.dst)
                if x.__class__ is K.KVar and isinstance(x.type, K.Ptr)}
        if len(ptrs) == 1 and self._defs is None:
            self._defs = _definitions(self.fn_body)     # once: a walk per candidate cost
        region = (_region(self.fn_body, self._defs, next(iter(ptrs)), cp)  # LocVolCalib 15 ms
                  if len(ptrs) == 1 else None)
        touched = _aliases(region if region is not None else self.fn_body, ptrs, self.added)
        if any(_mentions(s, touched) for s in mid):
            return None
        self.k += 1
        ip = K.KVar(f"ip_rp{self.k}", BOOL)
        tv = a.var
        head = [K.Set(ip, S.b("eq", a.count, cp.count)),
                K.If(ip, K.Block((K.Set(tv, cp.dst),)), K.Block((a,)))]
        tail = [K.If(S.lnot(ip), K.Block((cp, fr)), K.Block(()))]
        # the function as rewritten: an enclosing row's temporary is counted,
        # and its destination's aliases followed, against these statements
        self.fn_counts().update(_mention_counts(head + tail))
        self.fn_counts().subtract(_mention_counts([a, cp, fr]))
        self.added.append((tv.name, ptrs))
        return stms[:p] + head + mid + tail + stms[q + 2:]


def rows_in_place(m: K.Module) -> K.Module:
    """The module with rows copied out of temporaries computed in place."""
    def per_function(body: K.Block) -> K.Block:
        return _Pass(body).block(body)
    return map_bodies(m, per_function)
