"""Pieces the work-group algorithms share: emitting a work-group ParFor,
local memory, asking whether generated code can fail (a work-group
kernel may not: kir.py's GPU extension), and which statements of a map's
function may run on the host or per work-item (segmap.py, tile2d.py)."""
from __future__ import annotations

from typing import Callable

from pyshark.core import ir
from pyshark.core.types import I64, ScalarType
from pyshark.errors import InternalCompilerError

from .. import kir as K
from ..lower_base import Lowerer
from ..mc.common import trial  # noqa: F401  (the gpu algorithms import it from here)


walk = K.walk_stms


def can_fail(b: K.Block) -> bool:
    """Whether a block of kernel IR can stop with an error, or allocates or
    frees (none of which a work-group kernel may do)."""
    return K.block_can_fail(b) or any(isinstance(s, K.Free) for s in walk(b))


def group_size(lw: Lowerer) -> int:
    return lw.options.target.group_size


def group_for(lw: Lowerer, hint: str, count: K.Expr, body: Callable[[K.KVar], None]) -> None:
    """A work-group ParFor over `count` work-items, rounded up to whole
    groups of the target's group size: body(i) emits the code of work-item
    i (the global index; it may be >= count, the body guards itself). SOACs
    inside are sequential (in_par), as in any ParFor body. The body must not
    fail (see kir.py): an InternalCompilerError says a gpu/ algorithm forgot
    to keep failing code out."""
    i = lw.var(hint, I64)
    with lw.in_parallel(), lw.block() as blk:
        body(i)
    if can_fail(blk[0]):
        raise InternalCompilerError("a work-group kernel body that can fail")
    lw.emit(K.ParFor(i, count, blk[0], None, group_size=group_size(lw)))


def local_alloc(lw: Lowerer, hint: str, elem: ScalarType, count: int) -> K.KVar:
    """`count` elements of local memory (emit at the top of a group body)."""
    p = lw.var(hint, K.Ptr(elem, "local"))
    lw.emit(K.LocalAlloc(p, count))
    return p


# What may run once on the host before the tiled kernel (element-invariant
# statements of the map's function): no memory, no loops.
HOSTABLE = (ir.AtomExp, ir.BinOp, ir.UnOp, ir.Convert, ir.Select, ir.Assert, ir.Size)
# What may run per work-item around the fold.
PER_ITEM = (ir.AtomExp, ir.BinOp, ir.UnOp, ir.Convert, ir.Select, ir.Size, ir.Index)
