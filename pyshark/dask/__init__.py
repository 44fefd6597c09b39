"""pyshark.dask: compiled entries as Dask tasks, planned from the entry's
own core IR.

    import dask.array as da
    import pyshark.dask as psd

    xs = da.random.random(10**9, chunks=10**7).astype("f4")
    ys = psd.run(w.saxpy, 2.0, xs, xs)       # a map: lazy, one task per chunk
    zs = psd.run(w.smooth, xs, halo=1)       # a stencil: map_overlap, 1 row of halo
    total = psd.run(w.dot, xs, xs)           # a reduction: a tree of compiled combines
    total.compute()

`partition(entry)` analyses the entry (plan.py) once and returns a
DaskEntry, callable with Dask (or numpy) arrays for its array parameters
and Python/numpy scalars for its scalar ones; `run(entry, *args)` is
`partition(entry)(*args)`. An entry that cannot be split along its arrays'
leading dimension raises NotPartitionable, naming what prevents it.

The entry's compiled module and the programs derived from it (derive.py)
travel to each worker once, by a distributed worker plugin when a Client
is active (client=, else the default client), else inside the tasks; each
worker process loads each module once (worker.py). Dask is imported only
here, on use: `import pyshark` does not need it (pip install
"pyshark[dask]").
"""
from __future__ import annotations

from .plan import KINDS, NotPartitionable, Plan

__all__ = ["partition", "run", "explain", "DaskEntry", "NotPartitionable", "Plan", "KINDS"]


def partition(entry, name: str | None = None, *, device=None, num_threads: int | None = None,
              client=None, split_every: int | None = None,
              halo: int | str | None = None) -> "DaskEntry":
    """A DaskEntry for `entry`: a Wrapper's entry attribute (`w.saxpy`), a
    `@pyshark.jit` function, or a Wrapper with the entry's `name`.

    `device` (opencl): the device of every worker, or a list of them: worker
    i takes device[i % len] (one GPU per worker). `num_threads` (cpu): the
    threads of each worker's calls (default: the backend's, every core; with
    several workers on one machine give cores // workers). `client`: the
    distributed Client whose workers receive the compiled modules by plugin
    (default: the default client, if any). `split_every`: the fan-in of the
    reduction tree (dask.array.reduction's). `halo`: the entry is a map
    whose row i reads rows up to `halo` away (a stencil): each chunk runs
    extended by that many neighbour rows on each side (dask.array.
    map_overlap, none past the arrays' ends, where the entry sees the real
    ends), the extension trimmed off; "auto": the reach derived from the
    index expressions (reach.py), which also refuses a smaller stated halo;
    where it cannot be derived the stated one is trusted (docs/dask.md)."""
    from .entry import DaskEntry
    return DaskEntry(entry, name, device=device, num_threads=num_threads, client=client,
                     split_every=split_every, halo=halo)


def run(entry, *args, **options):
    """partition(entry, **options)(*args): the entry's results as Dask arrays."""
    return partition(entry, **options)(*args)


def explain(entry, name: str | None = None, *, halo: int | str | None = None) -> str:
    """How pyshark.dask runs the entry (or why it cannot)."""
    try:
        p = partition(entry, name, halo=halo).plan
    except NotPartitionable as exc:
        return f"not partitionable: {exc}"
    return f"{p.entry}: {p.explain()}"


def __getattr__(name: str):
    if name == "DaskEntry":
        from .entry import DaskEntry
        return DaskEntry
    raise AttributeError(f"module 'pyshark.dask' has no attribute {name!r}")
