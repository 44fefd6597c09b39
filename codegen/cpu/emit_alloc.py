"""The cpu emitter's allocation (part of emit_llvm.py; see its docstring):
`pyshark.alloc`, the one function every kir.Alloc calls."""
from __future__ import annotations

import os

from llvmlite import ir

from .. import kir as K
from .llvm_types import I1 as _I1, I32 as _I32, I64 as _I64, PTR as _PTR

_HUGE = 1 << 21             # transparent huge page size on x86-64
_HUGE_MIN = 1 << 22         # blocks from 4 MiB on are advised as huge pages
# malloc's blocks from 256 KiB on are padded by _STAGGER too (block_allocator)
_PAD_MIN = 1 << 18
_MADV_HUGEPAGE = 14
# Large blocks come from glibc's heap rather than from mmap: with mmap, each
# fresh result is a new mapping whose pages the kernel faults in and zeroes
# on first touch (a 64 MiB saxpy result: 32 huge-page faults, ~12 ms of
# kernel time, more than the kernel's own 8 ms of streaming), and free()
# unmaps it again. runtime.keep_heap (called when a module loads) keeps
# blocks under 32 MiB in the heap and the heap's top untrimmed; glibc caps
# the mmap threshold at 32 MiB, so for larger blocks the allocation turns
# mmap off (M_MMAP_MAX = 0) around its own call and restores glibc's default
# after. The cost: freed large blocks stay in the process (reused by the
# next large allocation, ours or numpy's) instead of going back at once.
_M_MMAP_MAX = -4
_DEFAULT_MMAP_MAX = 65536
MIN_ALLOC_ELEMS = 1
# Staggered large blocks are padded by STAGGER bytes, so that blocks of one
# size allocated one after another start about 1 KiB apart modulo the page
# (4 KiB): a constant pad, so that a freed block fits the next one of its
# size exactly (no heap growth, no page faults; see block_allocator)
_STAGGER = 4096 + 1024 + 64


def stagger_blocks() -> bool:
    """Whether large blocks are staggered (else 2 MiB aligned): measured per
    CPU family, 2026-11-26 (benchmarks/README.md, "Session 25"). On the H100
    machine's Intel Xeon host (Emerald Rapids) 2 MiB-aligned grids cost srad
    2.4x on one thread (4K aliasing: every grid at the same page offset) and
    staggering removed it; on this project's 2-core AMD Zen 3 staggering cost
    srad 10-40% (its 4 MiB grids then keep one whole huge page of two) and
    changed nothing else. So: aligned on AMD Zen (LLVM's `znver*`), staggered
    elsewhere. `PYSHARK_ALLOC_STAGGER=0/1` overrides it (part of the cache
    key, as the host CPU is)."""
    env = os.environ.get("PYSHARK_ALLOC_STAGGER")
    if env in ("0", "1"):
        return env == "1"
    from .link import host_cpu
    return not host_cpu().startswith("znver")


def block_allocator(mod: "emit_llvm.ModEmitter") -> ir.Function:
    """`pyshark.alloc(ctx, count, size, limit, i1 par) -> noalias ptr`: a
    block of max(count, 1) * size bytes, or NULL after recording
    `Fail("MemoryError", ALLOC_FAIL_MESSAGE, (count, size))` in ctx (when
    max(count, 1) > limit, or the allocation fails; `par`: as a ParFor body
    fails, emit_unwind.Runtime.fail_fn). Defined once per module and never
    inlined, so that every Alloc's block is an identified object to LLVM's
    alias analysis: loads and stores through one block are known not to
    touch another or an argument, and LLVM's loop load elimination keeps a
    recurrence's `bb[i-1]` in a register (the tridiagonal solves). Inline,
    the two allocation paths below met in a phi, which alias analysis
    cannot identify. The checks live here too: an Alloc is a call and a
    null test where it was ~35 instructions ("Compile time").

    Small blocks: malloc (16-byte aligned; the vector code uses unaligned
    loads, and aligned_alloc's slower path showed in profiles), from 256 KiB
    (_PAD_MIN) on padded by STAGGER bytes where large blocks are staggered
    (stagger_blocks: not on AMD Zen). Why the pad: glibc places blocks
    of one size one after another 16 bytes past a multiple of their size,
    so a stencil's two step grids of 1 MiB lay 1 MiB + 16 bytes apart; once
    the heap's pages are transparent huge pages (numpy and the large-block
    path below advise them, and a long-running process reuses that memory),
    physical = virtual within 2 MiB, and element i of both grids falls in
    the same L2 set (1 MiB is a multiple of the set period). On the H100
    machine's Intel host hotspot_rodinia small then took 0.70-0.80 ms a
    call against 0.38-0.45 fresh; padded, 0.39-0.46 ms in the same
    process states (benchmarks/README.md, "Session 35"). On the 2-core Zen 5,
    whose THP never showed the effect, two A/Bs in fresh processes
    disagreed (pathfinder small 20% slower padded in one, the same in the
    other): no measured gain there, so no pad. Large
    blocks: from the heap, advised as transparent huge pages (what numpy's
    allocator does), so that a fresh result costs one page fault per 2 MiB
    rather than per 4 KiB; either 2 MiB aligned, or (stagger_blocks) 64-byte
    aligned (the streaming stores' lines) and padded by STAGGER bytes so that
    blocks of one size start at different offsets modulo 4 KiB, their whole
    huge pages advised. 2 MiB-aligned
    grids share their low address bits: each load of one grid follows a
    store to another at the same 4 KiB offset, and on the H100 machine's
    Intel host srad (medium, one thread) took 640-690 ms that way against
    271-279 ms staggered, hotspot 118-186 against 56-72 ms. The heap block
    itself is what the caller frees."""
    decls = mod.decls
    fn = decls.cache.get("pyshark.alloc")
    if fn is not None:
        return fn
    fn = ir.Function(decls.module, ir.FunctionType(_PTR, [_PTR, _I64, _I64, _I64, _I1]),
                     name="pyshark.alloc")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("nounwind")
    fn.return_value.add_attribute("noalias")
    decls.cache["pyshark.alloc"] = fn
    ctx, count, size, limit, par = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    try_bb, huge_bb, small_bb, got_bb, fail_bb, fail_par, fail_host = (
        fn.append_basic_block(n) for n in ("try", "huge", "small", "got", "fail", "fail.par",
                                           "fail.host"))
    n = b.select(b.icmp_signed("<", count, _I64(MIN_ALLOC_ELEMS)), _I64(MIN_ALLOC_ELEMS), count)
    b.cbranch(b.icmp_signed(">", n, limit), fail_bb, try_bb)
    b.position_at_end(try_bb)
    raw = b.mul(n, size)
    b.cbranch(b.icmp_signed(">=", raw, _I64(_HUGE_MIN)), huge_bb, small_bb)
    b.position_at_end(small_bb)
    staggered = stagger_blocks()
    if staggered:
        raw_small = b.select(b.icmp_signed(">=", raw, _I64(_PAD_MIN)), b.add(raw, _I64(_STAGGER)),
                             raw)
    else:
        raw_small = raw
    small = b.call(decls.get("malloc", _PTR, [_I64]), [raw_small])
    b.branch(got_bb)
    b.position_at_end(huge_bb)
    # from the heap, not a fresh mapping: a freed block stays mapped and the
    # next one reuses it without page faults (runtime.keep_heap)
    mallopt = decls.get("mallopt", _I32, [_I32, _I32])
    b.call(mallopt, [_I32(_M_MMAP_MAX), _I32(0)])
    aligned_alloc = decls.get("aligned_alloc", _PTR, [_I64, _I64])
    madvise = decls.get("madvise", _I32, [_PTR, _I64, _I32])
    if staggered:
        # 64-byte aligned: the streaming stores' whole lines need it (emit_parfor.py)
        size64 = b.and_(b.add(raw, _I64(_STAGGER + 63)), _I64(-64))
        hp = b.call(aligned_alloc, [_I64(64), size64])
        b.call(mallopt, [_I32(_M_MMAP_MAX), _I32(_DEFAULT_MMAP_MAX)])
        with b.if_then(b.icmp_unsigned("!=", hp, ir.Constant(_PTR, None))):
            # the whole huge pages inside the block
            at = b.ptrtoint(hp, _I64)
            lo = b.and_(b.add(at, _I64(_HUGE - 1)), _I64(-_HUGE))
            hi = b.and_(b.add(at, raw), _I64(-_HUGE))
            with b.if_then(b.icmp_unsigned("<", lo, hi)):
                b.call(madvise, [b.inttoptr(lo, _PTR), b.sub(hi, lo), _I32(_MADV_HUGEPAGE)])
    else:
        nbytes = b.and_(b.add(raw, _I64(_HUGE - 1)), _I64(-_HUGE))
        hp = b.call(aligned_alloc, [_I64(_HUGE), nbytes])
        b.call(mallopt, [_I32(_M_MMAP_MAX), _I32(_DEFAULT_MMAP_MAX)])
        with b.if_then(b.icmp_unsigned("!=", hp, ir.Constant(_PTR, None))):
            b.call(madvise, [hp, nbytes, _I32(_MADV_HUGEPAGE)])
    huge_end = b.block
    b.branch(got_bb)
    b.position_at_end(got_bb)
    p = b.phi(_PTR)
    p.add_incoming(small, small_bb)
    p.add_incoming(hp, huge_end)
    ok_bb = fn.append_basic_block("ok")
    b.cbranch(b.icmp_unsigned("==", p, ir.Constant(_PTR, None)), fail_bb, ok_bb)
    b.position_at_end(ok_bb)
    b.ret(p)
    b.position_at_end(fail_bb)
    b.cbranch(par, fail_par, fail_host)
    args = [ctx, _I32(K.ERROR_CODES["MemoryError"]), _I32(mod.alloc_msg), count, size,
            _I64(0), _I64(0)]
    for bb, is_par in ((fail_par, True), (fail_host, False)):
        b.position_at_end(bb)
        b.call(mod.runtime.fail_fn(is_par), args)
        b.ret(ir.Constant(_PTR, None))
    return fn


__all__ = ["block_allocator", "MIN_ALLOC_ELEMS"]
