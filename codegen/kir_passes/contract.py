"""Contraction of a product into the `+` of a reduction operator (a kernel
IR -> kernel IR pass): the fused multiply-add that LANGUAGE.md allows by
default for a dot or matrix product.

Why: a dot product's inner loop is a multiply and an add per element; as
one FMA it is one instruction and one rounding instead of two (on a GPU
the FMA pipe's throughput is the multiply's: a matmul without it runs at
half the arithmetic bound, issue 18). LANGUAGE.md's rule: a float multiply
whose product goes only into the `+` of a reduce/scan/reduce_by_index
operator may be contracted with that `+`; the operator's reassociation
already makes such results equal to Python mode only within tolerance, and
one rounding fewer does not widen that bound. Every other float operation
stays uncontracted (a*b + c in a map is bit-exact with Python mode).

What it rewrites. The lowering applies a reduction's operator with its
float `+` marked `reassoc` (kir.Bin; lower_base.reassociating: only the
operators of reduce, scan and reduce_by_index are), and the map fused into
it computes the element first, bound to a fresh variable:

    t = x * y                       # the map's product: not reassoc
    ...                             # Sets that do not reassign x, y
    s = acc +' t                    # the operator's +

When t is set once, read once (there), and both statements are in one
block with only Sets of other variables between them, the product moves
into the add and both carry `contract`:

    s = acc +'~ (x *~ y)

(an add and a mul already nested that way are marked too). The product
must not be `reassoc` itself: a multiply inside an operator (a complex
product reduction's re*im + im*re) stays as written. Being the only reader
of t, the marked add is where the product goes, and only there.

Not where the accumulator comes from memory: `acc = q[k]` in the same
block (a column reduction's partial sums, mc/colred.py; a histogram's
bin). There each iteration's add waits for the store of the one before,
and the chain, not the arithmetic, sets the speed; an FMA makes it longer
(4 cycles against an add's 2-3 on AMD Zen 5 and Intel Golden Cove cores).
backprop's forward layer (65,536 rows of 16 columns, one thread of the
2-core Zen 5): 0.226 ms contracted, 0.193 ms not (Numba's peer, which does
not contract: 0.192 ms). An accumulator in a register is carried by the
vectorizer in several interleaved copies, so its FMAs are not on one chain.

Spellings: LLVM `contract` fast-math flags on both (codegen/cpu/
emit_llvm.py: the backend makes a vfmadd where the target has FMA), OpenCL
C `mad(x, y, acc)` (codegen/opencl/emit_cl.py: a correctly rounded fma or
the two operations, as the contract allows). kir_interp and the opencl
host code evaluate the pair as written (exact, also allowed).

`contract_products(m)` returns the rewritten module (the input is not
changed); it runs last in every target's kernel IR stages (codegen/
stages.py), so no later pass rebuilds the marked nodes.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from .. import kir as K
from ..kir_traverse import block_exprs, map_bodies, map_expr, map_stm, walk_exprs, walk_stms


def _float(e: K.Expr) -> bool:
    t = K.type_of(e)
    return not isinstance(t, K.Ptr) and t.is_float


def _product(e: K.Expr) -> bool:
    """A float multiply that is not an operator's own (not reassoc)."""
    return isinstance(e, K.Bin) and e.op == "mul" and not e.reassoc and _float(e)


def _operator_add(e: K.Expr) -> bool:
    return isinstance(e, K.Bin) and e.op == "add" and e.reassoc and _float(e)


def _fuse(add: K.Bin, operand: str, prod: K.Bin) -> K.Bin:
    """add with `operand` ("x" or "y") replaced by the marked product."""
    return replace(add, **{operand: replace(prod, contract=True)}, contract=True)


def _mark_nested(e: K.Expr, loaded: frozenset = frozenset()) -> K.Expr:
    """Marks an operator add whose operand is already a product in the tree
    (not one whose other operand is a variable in `loaded`: _from_memory)."""
    if not isinstance(e, (K.Bin, K.Un, K.Cast, K.Sel, K.Load, K.PtrAdd)):
        return e
    e = map_expr(e, lambda x: _mark_nested(x, loaded))
    if _operator_add(e) and not e.contract:
        for side, other in (("y", "x"), ("x", "y")):
            p = getattr(e, side)
            if _product(p) and not _from_memory(getattr(e, other), loaded):
                return _fuse(e, side, p)
    return e


def _loaded(b: K.Block) -> frozenset:
    """The variables b's own statements set to a value loaded from memory."""
    return frozenset(s.var.name for s in b.stms
                     if isinstance(s, K.Set) and isinstance(s.value, K.Load))


def _from_memory(acc: K.Expr, loaded: frozenset) -> bool:
    """Whether an operator add's accumulator operand is a load (directly, or
    a variable set to one in the block): its chain runs through memory."""
    return isinstance(acc, K.Load) or (isinstance(acc, K.KVar) and acc.name in loaded)


class _Counts:
    def __init__(self, body: K.Block):
        self.sets: Counter = Counter()
        self.reads: Counter = Counter()
        for s in walk_stms(body):
            if isinstance(s, K.Set):
                self.sets[s.var.name] += 1
        for e in block_exprs(body):
            if isinstance(e, K.KVar):
                self.reads[e.name] += 1


def _contract_block(b: K.Block, counts: _Counts) -> K.Block:
    loaded = _loaded(b)
    stms = [map_stm(s, expr=lambda e: _mark_nested(e, loaded),
                    block=lambda sb: _contract_block(sb, counts))
            for s in b.stms]
    dropped: set[int] = set()
    for i, s in enumerate(stms):
        if not (isinstance(s, K.Set) and _product(s.value)
                and counts.sets[s.var.name] == 1 and counts.reads[s.var.name] == 1):
            continue
        t = s.var
        operands = _vars(s.value)
        for j in range(i + 1, len(stms)):
            u = stms[j]
            if not isinstance(u, K.Set):
                break
            v = u.value
            side = next((n for n, o in (("y", "x"), ("x", "y"))
                         if _operator_add(v) and getattr(v, n) == t
                         and not _from_memory(getattr(v, o), loaded)), None)
            if side is not None:
                stms[j] = replace(u, value=_fuse(v, side, s.value))
                dropped.add(i)
                break
            if u.var.name in operands or t.name in _vars(v):
                break
    if not dropped:
        return b if all(x is y for x, y in zip(stms, b.stms)) else K.Block(tuple(stms))
    return K.Block(tuple(s for k, s in enumerate(stms) if k not in dropped))


def _vars(e: K.Expr) -> set[str]:
    return {x.name for x in walk_exprs(e) if isinstance(x, K.KVar)}


def contract_products(m: K.Module) -> K.Module:
    """The module with every product that feeds only a reduction operator's
    `+` fused into it and marked `contract` (module docstring)."""
    return map_bodies(m, _contract_body)


def _contract_body(body: K.Block) -> K.Block:
    """body contracted; as it is when no reduction operator's `+` is in it
    (a walk, against the rebuild's two: LocVolCalib has none, and the pass
    took 25 ms of its quick compile)."""
    if not any(_operator_add(e) for e in block_exprs(body)):
        return body
    return _contract_block(body, _Counts(body))


__all__ = ["contract_products"]
