"""Streaming stores for large fresh results (a kernel IR -> kernel IR pass).

Why: an ordinary store to a line that is not in the cache reads the line
first (write-allocate), so a map writing a fresh f32 result moves 4 bytes
per element more than it needs (saxpy: 16 bytes per element instead of 12).
x86's streaming stores (movntps, `Store.nontemporal`, spelled by
emit_parfor.py) write whole lines past the caches without reading them.
They also leave nothing in the cache: a result read again soon comes back
from memory instead of from L2/L3, and a result that fits in the caches
gains nothing (in a C test with hot caches, 1 MiB results were 1.7x
slower). So they are used only where all hold:

- *Written once, read later by someone else.* A ParFor statement
  `buf[i] = v` at the top level of its body (unconditional, i the counter:
  contiguous, whole lines per chunk), where `buf` is a variable that the
  function declares only by Alloc (a fresh block: not a parameter or a
  view) and mentions elsewhere only to free it or to store it (as a
  pointer: an entry result); so neither the loop nor anything after it in
  the entry reads it. This is the result of a chain of maps that the
  middle end fused into one loop; a materialised intermediate is read
  again in the entry and keeps ordinary stores.
- *Memory bound.* The body has no inner loop and does at most
  OPS_PER_BYTE operations per byte it loads and stores (a math library
  call counting LIBM_OPS): otherwise the loop spends its time computing,
  the memory traffic saved is hidden, and the block copy of the spelling
  costs (Black-Scholes, 2^24 options, both threads, interleaved calls:
  32.3 ms ordinary, 33.6 ms streaming; saxpy's 2 operations per 12 bytes
  stream). 2 per byte is roughly where a 2-core AVX2 machine's arithmetic
  meets its memory bandwidth (16 f32 operations per 8-byte element run
  ~5 G elements/s, ~40 GB/s).
- *Large.* The ParFor becomes `if count >= C: ParFor(marked) else
  ParFor(as before)`, C elements making STREAM_MIN_BYTES of marked stores
  (all marked arrays together). Measured here (2 cores with 2 MiB of L2
  each, a virtual L3 shared with other guests; saxpy, both threads, median
  per call, ordinary -> streaming): 4-8 MiB results the same, 16 MiB
  0.91 -> 0.94 ms, 32 MiB 2.16 -> 1.89 ms, 64 MiB 6.45 -> 4.63 ms, 128 MiB
  13.2 -> 9.7 ms. 32 MiB, where streaming starts to win here, is also past
  the private caches and most of the last-level cache of common machines:
  what an ordinary store leaves there would mostly have been evicted
  before anyone reads it. (The threshold is static: the kernel IR is built
  without asking the host for its cache sizes, and this host reports a
  480 MiB L3 that one process does not get.)

`stream_stores(m)` returns the rewritten module (the input is not changed).
"""
from __future__ import annotations

from dataclasses import replace

from pyshark.core.types import I64, ScalarType

from .. import kir as K
from ..kir_traverse import block_exprs, map_block, map_stm, walk_stms

STREAM_MIN_BYTES = 32 << 20
OPS_PER_BYTE = 2            # memory_bound: above this, computation bounds a loop
LIBM_OPS = K.LIBM_COST      # what a math library call counts as
_LIBM = K.LIBM_PRIMS


def stream_stores(m: K.Module, min_bytes: int | None = None) -> K.Module:
    """m with the stores described in the module docstring marked, each
    marked ParFor behind the test that it stores at least `min_bytes`
    (default STREAM_MIN_BYTES)."""
    if min_bytes is None:
        min_bytes = STREAM_MIN_BYTES
    return K.Module([_function(f, min_bytes) for f in m.functions], list(m.messages))


def _function(f: K.Function, min_bytes: int) -> K.Function:
    fresh = _fresh_unread(f)
    if not fresh:
        return f
    return replace(f, body=_block(f.body, fresh, min_bytes))


def _block(b: K.Block, fresh: set, min_bytes: int) -> K.Block:
    """b with every ParFor in it (at any depth) marked where it qualifies."""
    def stm(s: K.Stm) -> K.Stm:
        if isinstance(s, K.ParFor):
            return _parfor(s, fresh, min_bytes)
        return map_stm(s, block=lambda sb: _block(sb, fresh, min_bytes))
    return map_block(b, stm)


def _parfor(p: K.ParFor, fresh: set, min_bytes: int) -> K.Stm:
    marked = streamable_stores(p, fresh)
    if not marked:
        return p
    body = K.Block(tuple(replace(s, nontemporal=True) if id(s) in marked else s
                         for s in p.body.stms))
    per_iter = sum(_elem_bytes(s) for s in p.body.stms if id(s) in marked)
    c = -(-min_bytes // per_iter)
    big = K.Bin("ge", p.count, K.KConst(c, I64))
    return K.If(big, K.Block((replace(p, body=body),)), K.Block((p,)))


def streamable_stores(p: K.ParFor, fresh: set) -> set:
    """The ids of p's top-level stores `buf[i] = v` that qualify, `fresh`
    being the function's fresh, otherwise unread buffers (by name)."""
    if p.group_size is not None:
        return set()
    if any(isinstance(s, (K.For, K.While)) for s in walk_stms(p.body)):
        return set()
    if not memory_bound(p.body):
        return set()
    cands = {}
    for s in p.body.stms:
        if (isinstance(s, K.Store) and isinstance(s.ptr, K.KVar) and s.ptr.name in fresh
                and s.index == p.var and isinstance(K.type_of(s.value), ScalarType)):
            cands.setdefault(s.ptr.name, []).append(s)
    if not cands:
        return set()
    # every other mention of a candidate in the body disqualifies it
    declared = set().union(*map(K.declared_vars, p.body.stms))
    other: set = set()
    for s in walk_stms(p.body):
        exprs = K.stm_exprs(s)
        if any(s is c for cs in cands.values() for c in cs):
            exprs = (s.index, s.value)
        for e in exprs:
            other |= K.expr_vars(e)
    return {id(s) for name, cs in cands.items() if name not in other and name not in declared
            for s in cs}


def memory_bound(body: K.Block) -> bool:
    """Whether a loop body does little enough work per byte it loads and
    stores that memory, not computation, bounds the loop: at most
    OPS_PER_BYTE operations per byte, a math library call (exp, log, pow,
    ...) counting LIBM_OPS."""
    ops = 0
    loads = set()                       # the same load twice is one
    for e in block_exprs(body):
        if isinstance(e, K.Load):
            loads.add(e)
        elif isinstance(e, (K.Bin, K.Un)) and e.op in _LIBM:
            ops += LIBM_OPS
        elif isinstance(e, (K.Bin, K.Un, K.Cast, K.Sel)):
            ops += 1
    nbytes = sum(_type_bytes(K.type_of(s.value)) for s in walk_stms(body)
                 if isinstance(s, K.Store))
    nbytes += sum(_type_bytes(K.type_of(e)) for e in loads)
    return ops <= OPS_PER_BYTE * nbytes


def _fresh_unread(f: K.Function) -> set:
    """Names that f declares only by Alloc and otherwise mentions only as
    the pointer of a Store (a write), as the value of a Store into a
    parameter (an entry result handed to the caller) or in a Free: buffers
    that f never reads."""
    params = {p.name for p in f.params}
    allocated, other_decl, read = set(), set(), set()
    for s in walk_stms(f.body):
        if isinstance(s, K.Alloc):
            allocated.add(s.var.name)
            read |= K.expr_vars(s.count)
            continue
        if isinstance(s, (K.Set, K.AtomicLoad, K.LocalAlloc)):
            other_decl.add(s.var.name)
        elif isinstance(s, K.AtomicUpdate):
            other_decl.add(s.old.name)
        exprs = list(K.stm_exprs(s))
        if isinstance(s, K.Free) and isinstance(s.ptr, K.KVar):
            exprs = []
        elif isinstance(s, K.Store):
            exprs = [s.index, s.value] if isinstance(s.ptr, K.KVar) else exprs
            if (isinstance(s.value, K.KVar) and isinstance(s.ptr, K.KVar)
                    and s.ptr.name in params):
                exprs = [s.index]
        for e in exprs:
            read |= K.expr_vars(e)
    return allocated - other_decl - read - params


def _elem_bytes(s: K.Store) -> int:
    return _type_bytes(K.type_of(s.value))


def _type_bytes(t) -> int:
    if isinstance(t, K.Ptr):
        return 8
    return t.bytes
