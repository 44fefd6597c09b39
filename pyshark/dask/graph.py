"""Dask graphs for a Plan (plan.py): dask.array's own building blocks
(blockwise, reduction, a HighLevelGraph layer in the shape of
dask.array.cumreduction), never a scheduler of our own.

Every task calls a compiled entry through worker.call with a LibraryRef
(library.py), so what a task carries is a few names, and the module is
loaded once per worker process. Partitioned arrays are chunked along
dimension 0 only (the same chunks for every one, the first array's; the
other dimensions in one chunk each), aligned here; blockwise's own
alignment is off (align_arrays=False): it takes a dimension of length 1 as
one to broadcast, and would hand every task of chunks (0, 1, 0) the whole
row.

- map: one blockwise task per chunk; an entry with several results gives
  them as one array of a structured dtype, split into fields.
- map_overlap (a map with a stated halo k): Dask's own overlap (dask.array.
  overlap.overlap, boundary "none") extends each chunk by k rows of its
  neighbours, after a rechunk that leaves no chunk smaller than k (Dask's
  rule: the halo comes from the adjacent chunk only) and no empty one; the
  same blockwise task runs on the extended chunks; trim_internal cuts the k
  rows off again on inner sides only. This is dask.array.map_overlap's
  composition, spelled out for several arrays and structured results.
- reduce / reduce_by_index: one blockwise task per chunk gives the chunk's
  partial result (a 1-element array, or a 1 x m row of a histogram; a
  structured dtype for tuples), then dask.array.reduction runs the combine
  step (derive.py) over groups of `split_every` partials, in chunk order,
  up to the aggregate (the same combine step, without keepdims).
- scan: one blockwise task per chunk runs the entry's scan on the chunk;
  then, in chunk order, a carried total per chunk (the offset step on the
  previous chunk's last element, an empty chunk carrying its predecessor's
  total on) and the offset step on each chunk after the first non-empty
  one. Dask's cumreduction has the same shape, but takes the last element
  of an empty block (nothing), which breaks at empty chunks; this layer
  does not.
"""
from __future__ import annotations

from functools import partial

import dask.array as da
import numpy as np
from dask.highlevelgraph import HighLevelGraph

from . import worker
from .library import LibraryRef
from .plan import Plan

INNER = "jklmnopqrstuvwxyz"


def struct_dtype(dtypes) -> np.dtype:
    """One dtype for k results: itself for one, a structured one for more."""
    dtypes = [np.dtype(d) for d in dtypes]
    return dtypes[0] if len(dtypes) == 1 else np.dtype([(f"f{j}", d)
                                                          for j, d in enumerate(dtypes)])


def pack(values, dtype: np.dtype, shape=None) -> np.ndarray:
    """k results (scalars or arrays of one shape) as one array of dtype."""
    if dtype.names is None:
        v = np.asarray(values[0], dtype=dtype)
        return v if shape is None else v.reshape(shape)
    first = np.asarray(values[0])
    out = np.empty(first.shape if shape is None else shape, dtype=dtype)
    for name, v in zip(dtype.names, values):
        out[name] = np.asarray(v).reshape(out.shape)
    return out


def unpack(block: np.ndarray, k: int) -> list:
    """The k fields of a packed block (contiguous copies)."""
    if block.dtype.names is None:
        return [block]
    return [np.ascontiguousarray(block[name]) for name in block.dtype.names[:k]]


# -- task functions (run on the workers) ------------------------------------

def _call_entry(ref, runtime, name, order, scalars, blocks):
    """The entry on one chunk: arguments back in parameter order."""
    args = [None] * len(order)
    it_s, it_b = iter(scalars), iter(blocks)
    for k, is_array in enumerate(order):
        args[k] = next(it_b) if is_array else next(it_s)
    out = worker.call(ref, runtime, name, args)
    return out if isinstance(out, tuple) else (out,)


def _map_block(ref, runtime, name, order, scalars, dtype, inner, *blocks):
    outs = _call_entry(ref, runtime, name, order, scalars, blocks)
    rows = blocks[0].shape[0]
    for o in outs:
        if o.shape != (rows,) + tuple(inner):
            from pyshark.errors import ShapeError
            raise ShapeError(f"pyshark.dask: a chunk of {rows} rows gave a result of shape "
                             f"{o.shape}, other chunks {(rows,) + tuple(inner)} (results "
                             f"whose rows differ in shape between chunks are not "
                             f"partitionable)")
    return pack(list(outs), dtype)


def _partial_block(ref, runtime, name, order, scalars, dtype, *blocks):
    outs = _call_entry(ref, runtime, name, order, scalars, blocks)
    first = np.asarray(outs[0])
    return pack(list(outs), dtype, (1,) + first.shape)


def _identity(x, axis=None, keepdims=None):
    return x


def _combine(ref, runtime, scalars, k, x, axis=None, keepdims=False):
    """The combine step on concatenated partials (rows of x along axis 0)."""
    from .derive import COMBINE
    outs = worker.call(ref, runtime, COMBINE, list(scalars) + unpack(x, k))
    outs = outs if isinstance(outs, tuple) else (outs,)
    first = np.asarray(outs[0])
    shape = ((1,) if keepdims else ()) + first.shape
    out = pack(list(outs), x.dtype, shape)
    return out if keepdims or out.ndim else out[()]


def _field(a, name):
    return np.ascontiguousarray(a[name]) if a.ndim else a[name][()]


def _scan_block(ref, runtime, name, order, scalars, dtype, *blocks):
    return pack(list(_call_entry(ref, runtime, name, order, scalars, blocks)), dtype)


def _offset(ref, runtime, scalars, k, carry, block):
    from .derive import OFFSET
    outs = worker.call(ref, runtime, OFFSET, list(scalars) + list(carry) + unpack(block, k))
    return pack(list(outs if isinstance(outs, tuple) else (outs,)), block.dtype)


def _carry(ref, runtime, scalars, k, prev_carry, prev_block):
    """The total of every chunk up to and including prev_block (None: no
    element yet)."""
    if prev_block.shape[0] == 0:
        return prev_carry
    last = prev_block[-1:]
    if prev_carry is None:
        return tuple(f[0] for f in unpack(last, k))
    return tuple(f[0] for f in unpack(_offset(ref, runtime, scalars, k, prev_carry, last), k))


def _apply_carry(ref, runtime, scalars, k, carry, block):
    if carry is None or block.shape[0] == 0:
        return block
    return _offset(ref, runtime, scalars, k, carry, block)


# -- the graphs ---------------------------------------------------------------

def _inputs(arrays: list) -> list:
    """blockwise's (array, index) pairs: dimension 0 is "i", the others
    letters of their own (one chunk each, concatenated)."""
    out, used = [], 0
    for x in arrays:
        inner = INNER[used:used + x.ndim - 1]
        used += x.ndim - 1
        out += [x, "i" + inner]
    return out


def halo_chunks(chunks: tuple, halo: int) -> tuple:
    """Chunks of the same rows where every chunk has >= halo rows (Dask's
    overlap takes the halo from the neighbouring chunk only), no empty
    chunk, and one chunk when the arrays are shorter than the halo:
    too-small chunks join their neighbours (dask.array.overlap.
    ensure_minimum_chunksize)."""
    from dask.array.overlap import ensure_minimum_chunksize
    n = sum(chunks)
    kept = tuple(c for c in chunks if c)
    if n <= halo or not kept:
        return (n,)
    return ensure_minimum_chunksize(halo, kept)


def overlapped(arrays: list, halo: int) -> list:
    """The arrays rechunked (halo_chunks) and each chunk extended by `halo`
    rows of its neighbours along dimension 0, none past the arrays' ends
    (boundary "none": the first and last chunk see the real ends)."""
    chunks = halo_chunks(arrays[0].chunks[0], halo)
    out = []
    for x in arrays:
        x = x.rechunk((chunks,) + (-1,) * (x.ndim - 1))
        depth = {0: halo, **{d: 0 for d in range(1, x.ndim)}}
        out.append(x if len(chunks) == 1 else        # one chunk: nothing to share
                   da.overlap.overlap(x, depth=depth, boundary="none", allow_rechunk=False))
    return out


def map_graph(plan: Plan, ref: LibraryRef, runtime: tuple, order, scalars, arrays,
              dtypes, inner: tuple):
    """The results of a "map" or "map_overlap" plan: Dask arrays chunked as
    arrays[0] (a map) or as halo_chunks of it (map_overlap: each task gets
    its chunk extended by plan.halo rows on each side, and its results are
    trimmed back to the chunk's rows, dask.array.overlap.trim_internal)."""
    dtype = struct_dtype(dtypes)
    rank = len(inner) + 1
    halo = plan.halo if plan.kind == "map_overlap" else 0
    if halo:
        arrays = overlapped(arrays, halo)
    out_ind = "i" + "".join(chr(ord("A") + d) for d in range(rank - 1))
    new_axes = {out_ind[1 + d]: n for d, n in enumerate(inner)}
    func = partial(_map_block, ref, runtime, plan.entry, order, tuple(scalars), dtype, inner)
    res = da.blockwise(func, out_ind, *_inputs(arrays), new_axes=new_axes, dtype=dtype,
                       concatenate=True, align_arrays=False, meta=np.empty((0,) * rank, dtype=dtype),
                       name=f"pyshark-{plan.entry}-" + _token(ref, runtime, scalars, arrays))
    if halo:
        res = da.overlap.trim_internal(res, {0: halo, **{d: 0 for d in range(1, rank)}},
                                       boundary="none")
    if dtype.names is None:
        return (res,)
    return tuple(res.map_blocks(_field, name, dtype=dtypes[j], meta=np.empty(
        (0,) * rank, dtype=dtypes[j])) for j, name in enumerate(dtype.names))


def reduction_graph(plan: Plan, ref: LibraryRef, cref: LibraryRef, runtime: tuple, order,
                    scalars, arrays, dtypes, inner: tuple, split_every=None):
    """The results of a "reduce" (inner == ()) or "reduce_by_index" (inner
    == (m,)) plan: 0-d or 1-d Dask arrays."""
    dtype = struct_dtype(dtypes)
    k = len(dtypes)
    out_ind = "i" + "".join(chr(ord("A") + d) for d in range(len(inner)))
    new_axes = {out_ind[1 + d]: n for d, n in enumerate(inner)}
    func = partial(_partial_block, ref, runtime, plan.entry, order, tuple(scalars), dtype)
    parts = da.blockwise(func, out_ind, *_inputs(arrays), new_axes=new_axes,
                         adjust_chunks={"i": 1}, dtype=dtype, concatenate=True, align_arrays=False,
                         meta=np.empty((0,) * (1 + len(inner)), dtype=dtype),
                         name=f"pyshark-{plan.entry}-partials-"
                              + _token(ref, runtime, scalars, arrays))
    sc = tuple(scalars[plan.scalar_params.index(i)] for i in plan.needs)
    step = partial(_combine, cref, runtime, sc, k)
    res = da.reduction(parts, chunk=_identity, combine=step, aggregate=step, axis=0,
                       keepdims=False, dtype=dtype, split_every=split_every,
                       concatenate=True, meta=np.empty((0,) * len(inner), dtype=dtype),
                       name=f"pyshark-{plan.entry}-combine")
    if dtype.names is None:
        return (res,)
    return tuple(res.map_blocks(_field, name, dtype=dtypes[j], meta=np.empty(
        (0,) * len(inner), dtype=dtypes[j])) for j, name in enumerate(dtype.names))


def scan_graph(plan: Plan, ref: LibraryRef, oref: LibraryRef, runtime: tuple, order,
               scalars, arrays, dtypes):
    """The results of a "scan" plan: 1-d Dask arrays chunked as arrays[0]."""
    dtype = struct_dtype(dtypes)
    k = len(dtypes)
    tok = _token(ref, runtime, scalars, arrays)
    func = partial(_scan_block, ref, runtime, plan.entry, order, tuple(scalars), dtype)
    scanned = da.blockwise(func, "i", *_inputs(arrays), dtype=dtype, concatenate=True, align_arrays=False,
                           meta=np.empty((0,), dtype=dtype),
                           name=f"pyshark-{plan.entry}-chunkscan-{tok}")
    sc = tuple(scalars[plan.scalar_params.index(i)] for i in plan.needs)
    name = f"pyshark-{plan.entry}-scan-{tok}"
    carry = name + "-carry"
    dsk: dict = {(carry, 0): None}
    for i in range(scanned.numblocks[0]):
        if i:
            dsk[(carry, i)] = (_carry, oref, runtime, sc, k, (carry, i - 1),
                               (scanned.name, i - 1))
        dsk[(name, i)] = (_apply_carry, oref, runtime, sc, k, (carry, i), (scanned.name, i))
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[scanned])
    res = da.Array(graph, name, scanned.chunks, dtype=dtype, meta=np.empty((0,), dtype))
    if dtype.names is None:
        return (res,)
    return tuple(res.map_blocks(_field, f, dtype=dtypes[j], meta=np.empty((0,), dtypes[j]))
                 for j, f in enumerate(dtype.names))


def _token(*parts) -> str:
    from dask.base import tokenize
    return tokenize(*parts)
