"""Streaming (nontemporal) copies on the cpu target: kir.CopyMem with
`nontemporal`, which mc/segmap.py's streamed tiles emit to write a tile
computed in a small buffer out to a large fresh result.

Why: an ordinary store to a line not in the cache reads the line first
(write-allocate), so writing a result larger than the caches moves its
bytes twice; x86's streaming stores write whole lines without reading them
(kir_passes/streaming.py, emit_parfor.py). A copy streams only its whole
64-byte lines, by aligned vector stores marked `!nontemporal` (movntps and
kin: x86 streams only aligned vectors); the elements before dst's first
line boundary and after its last whole line are ordinary stores, as are
all of them when dst is not aligned to its element size. The loads from
the buffer are unaligned vector loads. The copy itself orders nothing: the
ParFor body function that holds it ends with an sfence (emit_parfor.py),
which the checker guarantees exists (kir_check: only inside a ParFor)."""
from __future__ import annotations

from llvmlite import ir

from .llvm_types import I64, counted_loop

LINE = 64                   # bytes of a cache line: the streaming alignment


def stream_copy(em, dst: ir.Value, src: ir.Value, n: ir.Value, ty: ir.Type, size: int) -> None:
    """dst[0:n] = src[0:n] (n >= 0, elements of LLVM type ty, `size` bytes
    each): whole lines of dst streamed, the rest ordinary (module docstring)."""
    b = em.b
    line = max(1, LINE // size)
    mis = b.and_(b.ptrtoint(dst, I64), I64(LINE - 1))
    # elements before the first line boundary; dst not aligned to its element
    # size never reaches one: then every element is ordinary (head = n)
    gap = b.udiv(b.and_(b.sub(I64(LINE), mis), I64(LINE - 1)), I64(size))
    odd = b.icmp_unsigned("!=", b.urem(mis, I64(size)), I64(0))
    head = b.select(odd, n, b.select(b.icmp_signed("<", gap, n), gap, n))
    whole = b.add(head, b.and_(b.sub(n, head), I64(-line)))
    copy_lines(em, dst, src, ty, line, size, (I64(0), head, whole, n))


def copy_lines(em, dst: ir.Value, src: ir.Value, ty: ir.Type, line: int, src_align: int,
               cuts: tuple) -> None:
    """dst[k] = src[k] for k in [s, e), cuts = (s, ls, le, e): [ls, le) by
    whole-line (`line` elements, dst[ls] 64-byte aligned) nontemporal vector
    stores, loading src with alignment src_align; the rest element by
    element, ordinary."""
    b = em.b
    s, ls, le, e = cuts
    vty = ir.VectorType(ty, line)

    def one(k, _done):
        v = b.load(b.gep(src, [k], inbounds=True, source_etype=ty), typ=ty)
        b.store(v, b.gep(dst, [k], inbounds=True, source_etype=ty))
        return b.add(k, I64(1))

    def whole_line(k, _done):
        v = b.load(b.gep(src, [k], inbounds=True, source_etype=ty), typ=vty, align=src_align)
        st = b.store(v, b.gep(dst, [k], inbounds=True, source_etype=ty), align=LINE)
        st.set_metadata("nontemporal", em.mod.nontemporal_md())
        return b.add(k, I64(line))
    counted_loop(b, em.fn, s, ls, one, "nt")
    counted_loop(b, em.fn, ls, le, whole_line, "nt")
    counted_loop(b, em.fn, le, e, one, "nt")
