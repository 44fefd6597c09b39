"""DaskEntry: one entry, planned once, called with Dask arrays.

Construction finds the entry's Wrapper (a Wrapper attribute knows it, a
@pyshark.jit function compiles into one), translates the entry's module
again to read its core IR (plan.py), packs the compiled module's cache
entry (library.py) and compiles the derived steps (derive.py) with the
same backend, on the client, once. A call checks the arguments against
the entry's parameters, aligns the chunks of the partitioned arrays, ships
the modules to the workers (cluster.py, once per Client) and builds the
graph (graph.py): nothing is computed until the user asks.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from pyshark.core.types import SArray, SScalar, STuple, stype_base, stype_rank
from pyshark.errors import ShapeError

from . import derive
from .library import compile_derived, pack
from .plan import NotPartitionable, analyse, prepare, stencil


@lru_cache(maxsize=16)
def _program(text: str, filename: str):
    """The module translated and prepared for the analysis, once per source
    (the IR is immutable: entries of one module share it)."""
    from pyshark.translate import translate_source
    return prepare(translate_source(text, filename))


def find_wrapper(entry, name: str | None):
    """(Wrapper, entry name) of a Wrapper attribute, a jit function, or a
    Wrapper and a name."""
    from pyshark.wrapper import Wrapper
    if isinstance(entry, Wrapper):
        if name is None:
            raise TypeError("pyshark.dask: give the entry's name with a Wrapper "
                            "(partition(w, 'saxpy')), or pass w.saxpy")
        return entry, name
    state = getattr(entry, "__pyshark_jit__", None)
    if state is not None:
        return state.compile(), entry.__name__
    w = getattr(entry, "__pyshark_wrapper__", None)
    if w is not None:
        return w, entry.__name__
    raise TypeError(f"pyshark.dask: expected a compiled entry (a Wrapper's entry attribute or "
                    f"a @pyshark.jit function), not {type(entry).__name__}")


def _dtypes(st) -> list[np.dtype]:
    elems = st.elems if isinstance(st, STuple) else (st,)
    out = []
    for e in elems:
        base = stype_base(e)
        if not isinstance(base, SScalar):
            raise NotPartitionable(f"pyshark.dask: a result of type {e!r} is not an array "
                                   f"of scalars or a scalar")
        out.append(np.dtype(base.t.dtype))
    return out


class DaskEntry:
    """An entry ready to run on Dask; call it like the entry itself."""

    def __init__(self, entry, name=None, *, device=None, num_threads=None, client=None,
                 split_every=None, halo=None):
        self.wrapper, self.name = find_wrapper(entry, name)
        w = self.wrapper
        self.entry = w.entry(self.name)
        source = w.entry_source(self.name)
        if source is None:
            raise NotPartitionable(f"pyshark.dask: entry {self.name!r} was loaded from a build "
                                   f"output without its source; compile it from source")
        filename, text = source
        program = _program(text, filename)
        self.plan = analyse(program, self.name) if halo is None else \
            stencil(program, self.name, halo)
        rt = dict(w.runtime_options)
        rt.pop("device_arrays", None)
        if device is not None:
            rt["device"] = tuple(device) if isinstance(device, (list, tuple)) else device
        if num_threads is not None:
            rt["num_threads"] = num_threads
        self.runtime = tuple(sorted(rt.items()))
        self.client = client
        self.split_every = split_every
        opts = w.options.as_dict()
        self.library = pack(w.artifact_dir(self.name), w.backend, opts)
        self.derived = None
        if self.plan.kind in ("reduce", "reduce_by_index"):
            program = derive.combine_program(self.plan)
        elif self.plan.kind == "scan":
            program = derive.offset_program(self.plan)
        else:
            program = None
        if program is not None:
            self.derived = compile_derived(program, w.backend, opts, rt, w.cache_dir)
        self.dtypes = _dtypes(self.entry.ret)

    def __repr__(self) -> str:
        return f"<DaskEntry {self.name} ({self.plan.kind}) backend={self.wrapper.backend!r}>"

    @property
    def libraries(self) -> list:
        return [self.library] + ([self.derived] if self.derived is not None else [])

    def __call__(self, *args):
        import dask.array as da

        from . import graph
        params = self.entry.params
        if len(args) != len(params):
            raise TypeError(f"{self.name}() takes {len(params)} arguments "
                            f"({', '.join(p.name for p in params)}), {len(args)} given")
        order = tuple(isinstance(p.stype, SArray) for p in params)
        scalars = [a for a, is_arr in zip(args, order) if not is_arr]
        arrays = []
        for a, p, is_arr in zip(args, params, order):
            if not is_arr:
                if isinstance(a, (da.Array, np.ndarray)) and np.ndim(a):
                    raise TypeError(f"{self.name}(): parameter {p.name!r} is a scalar, "
                                    f"not an array")
                continue
            x = a if isinstance(a, da.Array) else da.asarray(np.asarray(a))
            if x.ndim != stype_rank(p.stype):
                raise ShapeError(f"{self.name}(): parameter {p.name!r} has rank "
                                 f"{stype_rank(p.stype)}, the array given has {x.ndim}")
            arrays.append(x)
        lengths = {x.shape[0] for x in arrays}
        if any(n != n for n in lengths):
            raise ValueError(f"{self.name}(): an array has unknown chunk sizes; call "
                             f"x.compute_chunk_sizes() first")
        if len(lengths) > 1:
            raise ShapeError(f"{self.name}(): the partitioned arrays differ in length "
                             f"({', '.join(str(x.shape[0]) for x in arrays)})")
        chunks0 = arrays[0].chunks[0]
        arrays = [x if x.chunks[0] == chunks0 and all(len(c) == 1 for c in x.chunks[1:])
                  else x.rechunk((chunks0,) + (-1,) * (x.ndim - 1)) for x in arrays]
        refs = self._ship()
        kind = self.plan.kind
        if kind in ("map", "map_overlap"):
            # a stencil's inner sizes need a row (tabulate over 0 rows has none)
            inner = self._probe(args, order, int(kind == "map_overlap"))[0][1:] if any(
                r > 1 for r in self.plan.result_ranks) else ()
            out = graph.map_graph(self.plan, refs[0], self.runtime, order, scalars, arrays,
                                  self.dtypes, inner)
        elif kind in ("reduce", "reduce_by_index"):
            inner = self._probe(args, order)[0] if kind == "reduce_by_index" else ()
            out = graph.reduction_graph(self.plan, refs[0], refs[1], self.runtime, order,
                                        scalars, arrays, self.dtypes, inner,
                                        self.split_every)
        else:
            out = graph.scan_graph(self.plan, refs[0], refs[1], self.runtime, order, scalars,
                                   arrays, self.dtypes)
        return out if isinstance(self.entry.ret, STuple) else out[0]

    def _probe(self, args, order, rows: int = 0) -> list[tuple]:
        """The shapes of the entry's results on `rows` rows of zeros (run on
        the client): the inner dimensions of a map's results, the length of
        a histogram."""
        zero = []
        for a, p, is_arr in zip(args, self.entry.params, order):
            if is_arr:
                base = stype_base(p.stype)
                zero.append(np.zeros((rows,) + tuple(a.shape[1:]), dtype=base.t.dtype))
            else:
                zero.append(a)
        out = getattr(self.wrapper, self.name)(*zero)
        out = out if isinstance(out, tuple) else (out,)
        return [tuple(int(n) for n in np.shape(o)) for o in out]

    def _ship(self) -> list:
        """The LibraryRefs the tasks carry: by name when a distributed Client
        has the modules (a worker plugin), else with the bytes inside."""
        try:
            from .cluster import active_client, ship
        except ImportError:             # dask without distributed: local schedulers only
            return [lib.ref(embed=True) for lib in self.libraries]
        client = self.client or active_client()
        if client is None:
            return [lib.ref(embed=True) for lib in self.libraries]
        ship(client, self.libraries)
        return [lib.ref() for lib in self.libraries]
