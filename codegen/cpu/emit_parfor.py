"""The LLVM spelling of `kir.ParFor` (part of emit_llvm.py; see its docstring).

`spell_parfor(mod, host, s)` emits, for a ParFor met in the function `host`
is emitting:
- the body function `NAME.parforK(ctx, captures..., lo, hi)` running
  `for i in lo..hi-1` (pointer captures `noalias`);
- the outlined function `NAME.parforK.omp(data)` that the thread team
  (team.c's pysharkrt_parallel) runs on every thread: static stealing (libomp's `schedule(static_steal)`;
  `_claim_loop`). The n iterations are cut into blocks of `block`, the
  blocks dealt into S = min(T, MAX_SLOTS) contiguous shares, one per
  thread; thread t claims the blocks of share t mod S in order with
  `atomicrmw add` on that share's counter, then goes round the ring
  claiming from the others' counters, until lo >= n everywhere or, when
  the body can fail, ctx->code is set. Idle, every thread runs the same
  rows in every region, so a time-stepped stencil finds its part of the
  last step's grid in its own L2 (the one shared counter of sessions
  16-27 dealt blocks anew each region: `PYSHARK_SCHEDULE=dynamic` brings it
  back, S = 1, for A/B measurements). Under load the others take a
  descheduled thread's remaining blocks, and the join waits for at most
  the block it holds (a static chunk per thread made the join wait for a
  descheduled thread's whole chunk).
  It also stops claiming when the SIGINT flag is set (emit_unwind.py).
  `block` (`block_size`, computed by the host) is about n / (8 T), at least
  4096 iterations for a loop-free body (its vectorized loop stays long;
  fewer only when n / T is fewer), and a multiple of 64 iterations (of the
  streaming block below, for a body with nontemporal stores) once that
  long, so a block's lines are whole. Nothing may assume which thread runs
  an iteration (the mc algorithms index partials by chunk, not thread);
- the host side: with n > 1, parallel_if and min(NumThreads, n) > 1 it packs
  {ctx, n, counters, block, S, blocks, captures...} on the stack (the S
  counters zeroed, each on its own cache line) and calls
  pysharkrt_parallel with the whole team of NumThreads, even when n is smaller
  (the threads without a block return at once): libgomp re-formed its team
  whenever the size differed from the previous region's (regions of 15,
  16 and 8 blocks one after another, sgemm at 128 x 160 on 16 threads, took
  0.27 ms a call against 0.035 ms with one team size), and the team keeps
  the rule; otherwise it calls
  the body function on [0, n) (in strips of SEQ_CHUNK iterations with a
  SIGINT poll between them when the body does not loop; a body that loops
  polls at every iteration); then it unwinds when ctx->code is not 0, and
  polls.

Nontemporal stores (`Store.nontemporal`, set by codegen/kir_passes/streaming.py).
x86 streams only aligned vectors (movntps/movntdq; an unaligned
`!nontemporal` store is spelled as an ordinary one), and the loop vectorizer
will not widen a `!nontemporal` scalar store at all unless the scalar
store's own alignment covers two elements, which `p[i]` for every i cannot
honestly claim. So a body function with such stores runs its chunk in
blocks of `_BLOCK_BYTES` / (largest element size) indices, aligned to
multiples of the block size: the body runs over the block as usual, its
nontemporal stores writing into an L1-resident buffer per pointer (ordinary
stores to a stack array, vectorized like any loop); then each buffer is
copied out, its whole 64-byte lines by `store <L x T> ..., align 64,
!nontemporal` (one movntps zmm per line), the partial lines at the chunk's
two ends by ordinary stores. The whole lines go out this way only when the
pointer is 64-byte aligned (checked at run time per call: nothing relies on
what the allocator returned; Alloc promises 16 bytes, large blocks are
at least 64-byte aligned); otherwise every element goes out by ordinary stores. The
copy costs an L1 store and load per element, little beside the memory
traffic it saves. Each claimed block ends with an `sfence` (x86; `fence seq_cst`
elsewhere), also before a failing chunk's early return: streaming stores
are weakly ordered, and the fence orders them before the chunk's return, so
they reach the other threads like ordinary stores through the team's
end-of-region gate (whether its locked instructions would order them alone is
then no question). A failing chunk's current block is not copied out:
kir.Store leaves a failed ParFor's nontemporal results unspecified.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from llvmlite import ir

from .. import kir as K
from ..kir_traverse import has_loop, walk_stms
from .emit_llvm import FnEmitter
from .llvm_types import (CTX_CODE, CTX_SIGINT, CTX_TYPE, I1, I32, I64, PTR, VOID, alloca,
                         counted_loop, elem_size, mem_type, reg_type, streaming_fence)
from .emit_ssa import ssa_vars
from .emit_stream import LINE as _LINE, copy_lines
from .emit_unwind import BODY_POLL_STRIDE, SEQ_CHUNK, Unwinder, strips

_BLOCK_BYTES = 2048         # the per-array block buffer of a streaming loop
_BLOCKS_PER_THREAD = 8      # dynamic scheduling: blocks a thread claims, on average
_MIN_BLOCK = 4096           # ... but at least this many iterations of a loop-free body
_ALIGN = 64                 # block starts are multiples of this (once blocks are that long)
MAX_SLOTS = 64              # static stealing: at most this many shares (threads beyond share)
_LINE_I64 = _LINE // 8      # one claim counter per cache line


def nontemporal_stores(body: K.Block) -> list:
    """The nontemporal stores of a ParFor body (the checker allows them only
    at its top level, as `p[i] = v` through a captured pointer p)."""
    return [s for s in body.stms if isinstance(s, K.Store) and s.nontemporal]


def streams(body: K.Block) -> bool:
    """Whether a ParFor body writes past the caches: nontemporal stores, or
    nontemporal copies at any depth (emit_stream.py); its body function
    then ends with an sfence, also on a failing chunk's early return."""
    return bool(nontemporal_stores(body)) or any(
        isinstance(s, K.CopyMem) and s.nontemporal for s in walk_stms(body))


def _streaming_loop(bem: FnEmitter, s: K.ParFor, lo: ir.Value, hi: ir.Value):
    """The body function's loop over [lo, hi) when the body has nontemporal
    stores (see the module docstring)."""
    b = bem.b
    stores = nontemporal_stores(s.body)
    elem = {st.ptr.name: mem_type(K.type_of(st.value)) for st in stores}
    sizes = {n: elem_size(K.type_of(st.value)) for st in stores for n in [st.ptr.name]}
    block = _stream_block(stores)
    tmps = {}
    for n in sorted(elem):
        a = bem.alloca_builder.alloca(ir.ArrayType(elem[n], block), name=n + ".line")
        a.align = _LINE
        a.type = PTR
        tmps[n] = a
    aligned = ir.Constant(I1, 1)
    for n in tmps:
        low = b.and_(b.ptrtoint(bem.values[n], I64), I64(_LINE - 1))
        aligned = b.and_(aligned, b.icmp_unsigned("==", low, I64(0)))

    def blocks(start, _done):
        # [start, end): up to the next multiple of `block`, at most hi
        end = b.and_(b.add(start, I64(block)), I64(-block))
        end = b.select(b.icmp_signed("<", end, hi), end, hi)
        base = b.and_(start, I64(-block))
        bem.streaming = {n: (tmps[n], base) for n in tmps}
        bem.for_loop(s.var, start, end, s.body)
        bem.streaming = None
        for n, tmp in tmps.items():
            _flush(bem, tmp, elem[n], _LINE // sizes[n], bem.values[n], base,
                   b.sub(start, base), b.sub(end, base), aligned)
        return end
    counted_loop(b, bem.fn, lo, hi, blocks, "nt")
    streaming_fence(bem)


def _flush(bem: FnEmitter, tmp, ty, line: int, p, base, s, e, aligned):
    """p[base + k] = tmp[k] for k in [s, e): the whole lines (`line`
    elements) by aligned nontemporal vector stores when `aligned`, the rest
    by ordinary stores."""
    b = bem.b
    up = b.and_(b.add(s, I64(line - 1)), I64(-line))
    ls = b.select(aligned, b.select(b.icmp_signed("<", up, e), up, e), e)
    le = b.select(aligned, b.and_(e, I64(-line)), e)
    le = b.select(b.icmp_signed("<", le, ls), ls, le)
    dst = b.gep(p, [base], inbounds=True, source_etype=ty)
    copy_lines(bem, dst, tmp, ty, line, _LINE, (s, ls, le, e))


def _alignment(s: K.ParFor) -> int:
    """What a claimed block's start is a multiple of (once blocks are that
    long): the streaming block of a body with nontemporal stores (so every
    64-byte line inside is whole), else 64 iterations."""
    stores = nontemporal_stores(s.body)
    return _stream_block(stores) if stores else _ALIGN


def _stream_block(stores: list) -> int:
    """Indices per block of a streaming loop: _BLOCK_BYTES of its widest
    nontemporal element (at least a line's worth)."""
    return max(_LINE, _BLOCK_BYTES // max(elem_size(K.type_of(st.value)) for st in stores))


def block_size(b: ir.IRBuilder, n: ir.Value, nt: ir.Value, align: int, loops: bool) -> ir.Value:
    """Iterations per claimed block: ceil(n / (nt * _BLOCKS_PER_THREAD)), at
    least min(_MIN_BLOCK, ceil(n / nt)) when the body has no loop (so its
    vectorized loop stays long), rounded up to a multiple of `align` when at
    least `align`."""
    def ceil_div(a, d):
        return b.sdiv(b.add(a, b.sub(d, I64(1))), d)

    def max_(x, y):
        return b.select(b.icmp_signed(">", x, y), x, y)
    blk = ceil_div(n, b.mul(nt, I64(_BLOCKS_PER_THREAD)))
    if not loops:
        per_thread = ceil_div(n, nt)
        floor = b.select(b.icmp_signed("<", per_thread, I64(_MIN_BLOCK)), per_thread,
                         I64(_MIN_BLOCK))
        blk = max_(blk, floor)
    up = b.and_(b.add(blk, I64(align - 1)), I64(-align))
    return b.select(b.icmp_signed(">=", blk, I64(align)), up, blk)


def schedule_slots() -> int:
    """How many claim slots a ParFor has at most: MAX_SLOTS (static
    stealing), or 1 with `PYSHARK_SCHEDULE=dynamic` (every thread claims
    from one shared counter: the dynamic schedule of sessions 16-27, kept
    for A/B measurements; part of the cache key)."""
    return 1 if os.environ.get("PYSHARK_SCHEDULE") == "dynamic" else MAX_SLOTS


@dataclass
class Claims:
    """What the outlined function reads to claim blocks: `count`
    iterations in `blocks` blocks of `block`, dealt to `slots` slots
    whose counters (i64, one per cache line) start at `counters`."""
    count: ir.Value
    counters: ir.Value
    block: ir.Value
    slots: ir.Value
    blocks: ir.Value


def _counters(host: FnEmitter, team: ir.Value, count: ir.Value, blk: ir.Value):
    """The host's side of static stealing: min(team, schedule_slots())
    slots, their counters zeroed (one stack array per host function, reused
    by its ParFors one after another), and the number of blocks."""
    b = host.b
    if host.claim_counters is None:
        host.claim_counters = alloca(host.alloca_builder,
                                     ir.ArrayType(I64, MAX_SLOTS * _LINE_I64),
                                     name="claims")
        host.claim_counters.align = _LINE
    cap = I64(schedule_slots())
    slots = b.select(b.icmp_signed("<", team, cap), team, cap)
    memset = host.decls.get("llvm.memset.p0.i64", VOID, [PTR, ir.IntType(8), I64, I1])
    b.call(memset, [host.claim_counters, ir.Constant(ir.IntType(8), 0),
                    b.mul(slots, I64(_LINE)), I1(0)])
    nblocks = b.sdiv(b.add(count, b.sub(blk, I64(1))), blk)
    return host.claim_counters, slots, nblocks


def _claim_loop(mod, ofn: ir.Function, ob: ir.IRBuilder, octx: ir.Value, c: Claims,
                can_fail: bool, run_block) -> None:
    """Static stealing (libomp's `schedule(static_steal)`; Cilk-style work
    stealing over static shares): slot v owns blocks [v*B/S, (v+1)*B/S) of
    the B blocks. Thread t claims its own slot's blocks (t mod S) in order,
    one `atomicrmw add` on that slot's counter each, then those of the
    slots after it, round the ring, until every slot is exhausted. Idle, a
    thread runs the same blocks in every region, so an iterated stencil
    finds its rows in its own L2 from the last step (the shared counter of
    the dynamic schedule dealt them anew each time); under load the others
    take a descheduled thread's blocks, as before. Whoever runs a block
    runs it whole; every block runs once, whatever number of threads
    the team actually starts (one, in the JIT's stand-in)."""
    b = ob
    tid = b.zext(b.call(mod.decls.get("pysharkrt_thread_num", I32, []), []), I64)
    mine = b.urem(tid, c.slots)
    entry = b.block
    ring, victim, claim, run, nxt, done_bb = (
        ofn.append_basic_block(n) for n in ("ring", "victim", "claim", "run", "next", "done"))
    b.branch(ring)
    b.position_at_end(ring)
    j = b.phi(I64)
    j.add_incoming(I64(0), entry)
    b.cbranch(b.icmp_unsigned("<", j, c.slots), victim, done_bb)
    b.position_at_end(victim)
    v = b.add(mine, j)
    v = b.select(b.icmp_unsigned(">=", v, c.slots), b.sub(v, c.slots), v)
    begin = b.udiv(b.mul(v, c.blocks), c.slots)
    end = b.udiv(b.mul(b.add(v, I64(1)), c.blocks), c.slots)
    counter = b.gep(c.counters, [b.mul(v, I64(_LINE_I64))], inbounds=True, source_etype=I64)
    b.branch(claim)
    b.position_at_end(claim)
    if mod.runtime.sigaction_ok:
        # SIGINT: claim nothing more (the host polls after the loop)
        taking = ofn.append_basic_block("claim.take")
        flag = b.load_atomic(mod.runtime.flag(), "monotonic", 4, typ=I32)
        want = b.load(b.gep(octx, [I32(0), I32(CTX_SIGINT)], inbounds=True,
                            source_etype=CTX_TYPE), typ=I32)
        stop = b.and_(b.icmp_unsigned("!=", flag, I32(0)), b.icmp_signed("!=", want, I32(0)))
        b.cbranch(stop, done_bb, taking).set_weights([1, 1 << 20])
        b.position_at_end(taking)
    # a plain load first: an exhausted slot is passed without a locked
    # instruction (the ring's probes at the end of every region)
    seen = b.load_atomic(counter, "monotonic", 8, typ=I64)
    probing = ofn.append_basic_block("claim.add")
    b.cbranch(b.icmp_signed("<", b.add(begin, seen), end), probing, nxt)
    b.position_at_end(probing)
    k = b.add(begin, b.atomic_rmw("add", counter, I64(1), "monotonic"))
    b.cbranch(b.icmp_signed("<", k, end), run, nxt)
    b.position_at_end(run)
    olo = b.mul(k, c.block)
    ohi = b.add(olo, c.block)
    ohi = b.select(b.icmp_signed("<", ohi, c.count), ohi, c.count)
    run_block(b, olo, ohi)
    if can_fail:
        # a failed ParFor stops claiming (the first failure wins anyway)
        code = b.load_atomic(octx_code(b, octx), "monotonic", 4, typ=I32)
        b.cbranch(b.icmp_signed("==", code, I32(0)), claim, done_bb)
    else:
        b.branch(claim)
    b.position_at_end(nxt)
    j.add_incoming(b.add(j, I64(1)), nxt)
    b.branch(ring)
    b.position_at_end(done_bb)
    b.ret_void()


def octx_code(b: ir.IRBuilder, ctx: ir.Value) -> ir.Value:
    """&ctx->code (read by the claiming loop while other threads may set it)."""
    return b.gep(ctx, [I32(0), I32(CTX_CODE)], inbounds=True, source_etype=CTX_TYPE)


def spell_parfor(mod, host: FnEmitter, s: K.ParFor):
    """Emit ParFor `s` met in `host` (see the module docstring)."""
    b = host.b
    k = mod.parfor_count.get(host.prefix, 0)
    mod.parfor_count[host.prefix] = k + 1
    stem = f"{host.prefix}.parfor{k}"

    # captures: what the body reads and does not declare, by name
    caps = K.parfor_captures(s)
    cap_types = [reg_type(v.type) for v in caps]

    # the body function: void stem(ctx, captures..., lo, hi)
    bty = ir.FunctionType(VOID, [PTR] + cap_types + [I64, I64])
    bfn = ir.Function(mod.module, bty, name=stem)
    bfn.linkage = "internal"
    bfn.attributes.add("nounwind")
    # one copy of the loop, called by the team and by the inline path (its
    # own noalias parameters let it vectorize without run-time checks)
    bfn.attributes.add("noinline")
    bfn.args[0].name = "ctx"
    bem = FnEmitter(mod, bfn, bfn.args[0], in_par=True, prefix=stem)
    bem.ssa = ssa_vars(s.body, tuple(v.name for v in caps) + (s.var.name,))
    bem.unwind = Unwinder(bem, s.body, entry=False)
    bem.unwind.fence = streams(s.body)
    loops = has_loop(s.body)
    for v, a in zip(caps, bfn.args[1:-2]):
        a.name = v.name
        if isinstance(v.type, K.Ptr):
            a.add_attribute("noalias")
        bem.values[v.name] = a
    lo, hi = bfn.args[-2], bfn.args[-1]
    lo.name, hi.name = "lo", "hi"
    if nontemporal_stores(s.body):
        _streaming_loop(bem, s, lo, hi)
    else:
        bem.for_loop(s.var, lo, hi, s.body, BODY_POLL_STRIDE if loops else 0)
        if streams(s.body) and not bem.b.block.is_terminated:
            streaming_fence(bem)
    bem.finish(None)
    bem.unwind.finish()

    # the outlined function the team runs on every thread: static
    # stealing (see the module docstring and _claim_loop)
    data_ty = ir.LiteralStructType([PTR, I64, PTR, I64, I64, I64] + cap_types)
    ofn = ir.Function(mod.module, ir.FunctionType(VOID, [PTR]), name=stem + ".omp")
    ofn.linkage = "internal"
    ofn.attributes.add("nounwind")
    ob = ir.IRBuilder(ofn.append_basic_block("entry"))
    data = ofn.args[0]
    data.name = "data"

    def gep(bb, ptr, i):
        return bb.gep(ptr, [I32(0), I32(i)], inbounds=True, source_etype=data_ty)

    def field(bb, ptr, i, ty):
        return bb.load(gep(bb, ptr, i), typ=ty)
    octx = field(ob, data, 0, PTR)
    claims = Claims(count=field(ob, data, 1, I64), counters=field(ob, data, 2, PTR),
                    block=field(ob, data, 3, I64), slots=field(ob, data, 4, I64),
                    blocks=field(ob, data, 5, I64))
    ocaps = [field(ob, data, 6 + j, ty) for j, ty in enumerate(cap_types)]
    # a body that loops polls for SIGINT, failing the ParFor when it comes
    can_fail = K.block_can_fail(s.body) or (loops and mod.runtime.sigaction_ok)
    _claim_loop(mod, ofn, ob, octx, claims, can_fail,
                lambda bb, olo, ohi: bb.call(bfn, [octx] + ocaps + [olo, ohi]))

    # the host side
    count = host.expr(s.count)
    cap_vals = [host.expr(v) for v in caps]
    go = b.icmp_signed(">", count, I64(1))
    if s.parallel_if is not None:
        go = b.and_(go, host.expr(s.parallel_if))
    par_bb, seq_bb, done = (host.new_block("parfor.par"), host.new_block("parfor.seq"),
                            host.new_block("parfor.end"))
    b.cbranch(go, par_bb, seq_bb)
    b.position_at_end(par_bb)
    team = host.num_threads()
    nt = b.select(b.icmp_signed("<", count, team), count, team)
    team_bb = host.new_block("parfor.team")
    b.cbranch(b.icmp_signed(">", nt, I64(1)), team_bb, seq_bb)
    b.position_at_end(team_bb)
    slot = alloca(host.alloca_builder, data_ty, name=stem + ".data")
    blk = block_size(b, count, nt, _alignment(s), has_loop(s.body))
    counters, slots, nblocks = _counters(host, team, count, blk)
    for j, v in enumerate([host.ctx, count, counters, blk, slots, nblocks] + cap_vals):
        b.store(v, b.gep(slot, [I32(0), I32(j)], inbounds=True, source_etype=data_ty))
    team_run = mod.decls.get("pysharkrt_parallel", VOID, [PTR, PTR, I32, I32])
    # always the whole team (threads without a block return at once; libgomp
    # re-formed its team when the size changed from one region to the next)
    b.call(team_run, [ofn, slot, b.trunc(team, I32), I32(0)])
    b.branch(done)
    b.position_at_end(seq_bb)
    if loops or not mod.runtime.sigaction_ok:
        b.call(bfn, [host.ctx] + cap_vals + [I64(0), count])
        b.branch(done)
    else:
        _inline_strips(host, bfn, cap_vals, count, done, can_fail)
    b.position_at_end(done)
    if can_fail:
        code = b.load(host.ctx_field(CTX_CODE), typ=I32)
        ok_bb = host.new_block("parfor.ok")
        b.cbranch(b.icmp_signed("!=", code, I32(0)), host.unwind.target(), ok_bb)
        b.position_at_end(ok_bb)
    host.poll()


def _inline_strips(host: FnEmitter, bfn, cap_vals: list, count, done, can_fail: bool):
    """The inline path of a body without loops: the body function on strips
    of SEQ_CHUNK iterations, polling for SIGINT between them (one thread
    through 10^9 elements would otherwise not look up for a second)."""
    b = host.b

    def run(c, e, end):
        b.call(bfn, [host.ctx] + cap_vals + [c, e])
        if can_fail:
            # a failed strip ends the loop (the host unwinds after it)
            go = host.new_block("parfor.strip.ok")
            failed = b.icmp_signed("!=", b.load(host.ctx_field(CTX_CODE), typ=I32), I32(0))
            b.cbranch(failed, end, go)
            b.position_at_end(go)
    strips(host, I64(0), count, SEQ_CHUNK, run)
    b.branch(done)
