"""Which entries can run on Dask, and how: the structure analysis of an
entry's core IR (no Dask here).

An entry partitions along the leading dimension of its array parameters
when running it on each chunk of those arrays (the same chunks of each)
gives pieces that a known step puts together into what it gives on the
whole arrays:

- "map": every result is an array whose row i depends only on row i of the
  inputs (a `map` over the leading dimension, after let-bindings of
  scalars; the map's function may be any nest). The pieces are
  concatenated: the entry itself is the per-chunk task (map_blocks).
- "reduce": the result is a `reduce`/`reduce_comm` (`sum`, `min`, `max`,
  ... translate to one) of such arrays. The entry on a chunk is the
  chunk's partial result; partials are combined by a program built from
  the entry's own operator and neutral element (derive.py).
- "scan": the result is a `scan` of such arrays: the entry per chunk, then
  each chunk's elements combined with the carried total of the chunks
  before it (op is associative).
- "reduce_by_index": the result is a histogram into a fresh
  `replicate(m, neutral)` of such arrays: the entry per chunk gives a
  partial histogram; partials are combined element-wise with the operator.

The analysis gives every top-level value of the entry body a kind, in one
forward walk (an abstract interpretation over the lattice below): CHUNK
(an array whose chunk of rows is the same expression of the input chunks),
LEN (the leading length n itself), UNIFORM (the same in every chunk and in
the whole: scalar parameters, constants, inner sizes), the reductions'
outputs, or a reason why it depends on the whole arrays (taint). Whatever
reaches the results, or an assert, decides; the first reason is reported
with its source location and a hint (NotPartitionable).

The asserts the translator inserts that input lengths agree compare LEN
with LEN; they hold in every chunk when they hold in the whole, which the
caller checks before it builds the graph (every partitioned array must
have the same leading length).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pyshark.core import ir
from pyshark.core.traverse import free_vars
from pyshark.core.types import ArrayType, ScalarType, SArray, SScalar, STuple


class NotPartitionable(ValueError):
    """An entry that pyshark.dask cannot split along its arrays' leading
    dimension; the message names the part of the program that prevents it
    and how to restructure it."""


CHUNK, LEN, UNIFORM, LENCHECK, INDEX = "chunk", "len", "uniform", "lencheck", "index"
REDUCED, SCANNED, HIST = "reduced", "scanned", "hist"
KINDS = ("map", "reduce", "scan", "reduce_by_index", "map_overlap")


@dataclass(frozen=True)
class Taint:
    """Why a value depends on the whole arrays (not chunk by chunk)."""
    why: str
    loc: ir.Loc | None = None
    hint: str = ""


@dataclass(frozen=True)
class Plan:
    """How to run one entry on Dask.

    `kind`: one of KINDS. `array_params` / `scalar_params`: the entry's
    parameter indices (arrays are partitioned along dimension 0, scalars go
    to every task). For the reductions: `stm` is the Reduce, Scan or
    ReduceByIndex of the body, `closure` the top-level statements its
    operator and neutral element need (scalars only), `needs` the scalar
    parameters those read, and `acc_types` its accumulator element types."""
    kind: str
    entry: str
    fun: ir.FunDef
    array_params: tuple[int, ...]
    scalar_params: tuple[int, ...]
    result_ranks: tuple[int, ...]
    stm: ir.Let | None = None
    closure: tuple[ir.Let, ...] = ()
    needs: tuple[int, ...] = ()
    acc_types: tuple[ScalarType, ...] = ()
    notes: tuple[str, ...] = field(default=())
    halo: int = 0

    @property
    def op(self):
        return None if self.stm is None else self.stm.exp

    def explain(self) -> str:
        """One line: what runs per chunk and how the pieces combine."""
        return {
            "map": "map over the leading dimension: the entry runs per chunk (map_blocks), "
                   "pieces concatenated",
            "reduce": "reduction: the entry runs per chunk (partial results), partials "
                      "combined in a tree (dask.array.reduction) by a compiled reduce with "
                      "the entry's operator and neutral element",
            "scan": "scan: the entry runs per chunk, then each chunk is combined with the "
                    "carried total of the chunks before it by a compiled map of the operator",
            "reduce_by_index": "histogram: the entry runs per chunk (partial histograms), "
                               "combined element-wise in a tree (dask.array.reduction) by a "
                               "compiled reduce of the operator",
            "map_overlap": f"map with a stated halo of {self.halo} rows (dask.array."
                           f"map_overlap): the entry runs per chunk extended by up to "
                           f"{self.halo} neighbour rows on each side (none past the arrays' "
                           f"ends), the extension trimmed from its results",
        }[self.kind]


def user_name(v) -> str:
    """`xs_2` -> `xs` (the translator's unique names end in _N)."""
    name = v.name if isinstance(v, ir.Var) else str(v)
    head, _, tail = name.rpartition("_")
    return head if head and tail.isdigit() else name


def analyse(program: ir.Program, name: str) -> Plan:
    """The Plan of entry `name` of a translated program that `inline` and
    `simplify` have run on (prepare() does both); NotPartitionable when
    the entry cannot be partitioned."""
    where, fun, arrays, scalars = _signature(program, name)
    return _Analysis(where, fun, arrays, scalars, name).run()


def stencil(program: ir.Program, name: str, halo: int) -> Plan:
    """The Plan of entry `name` run with a stated halo (issue 19's
    map_overlap): its results are arrays whose row i is computed from rows
    i - halo .. i + halo of the array parameters (and the scalars), the
    entry handling the arrays' ends itself. reach.py derives how far rows
    read when the index expressions are i + d, clamped (a smaller halo is
    refused, halo="auto" takes it), and refuses absolute positions and
    wrapping negative indices; where it cannot decide, the stated halo is
    trusted. Also checked: array parameters and results,
    results of rank >= 1 (row-aligned: each chunk's result rows are
    checked against its rows when it runs), and an entry that the analysis
    finds to be a reduction, scan or histogram is refused (a halo does not
    make its pieces combine). A plain map gets kind "map" (no halo needed)."""
    auto = halo == "auto"
    if not auto and (not isinstance(halo, int) or isinstance(halo, bool) or halo < 0):
        raise ValueError(f"pyshark.dask: halo must be an int >= 0 or 'auto', not {halo!r}")
    where, fun, arrays, scalars = _signature(program, name)
    try:
        plan = _Analysis(where, fun, arrays, scalars, name).run()
    except NotPartitionable:
        plan = None
    if plan is not None and plan.kind == "map":
        return plan
    if plan is not None:
        raise NotPartitionable(f"{where}: halo= applies to maps over the leading dimension "
                               f"(results row-aligned with the arrays); this entry is a "
                               f"{plan.kind}, run it without halo=")
    res = fun.body.result
    if any(not isinstance(a.type, ArrayType) for a in res):
        raise NotPartitionable(f"{where}: halo= applies to maps over the leading dimension; "
                               f"this entry returns a scalar (results must be arrays, row i "
                               f"for row i of the arrays)")
    from .reach import Refuse, reach
    try:
        need = reach(fun, tuple(arrays))
    except Refuse as exc:
        at = f" at {exc.loc}" if exc.loc is not None else ""
        raise NotPartitionable(f"{where} cannot run chunk by chunk with a halo{at}: "
                               f"{exc.why}") from None
    if auto:
        if need is None:
            raise NotPartitionable(f"{where}: halo='auto' could not derive how far a row "
                                   f"reads (an index that is not i + d, clamped); state it: "
                                   f"halo=k")
        halo = need
    elif need is not None and need > halo:
        raise NotPartitionable(f"{where}: a row reads (or compares its position with) rows "
                               f"up to {need} away, more than halo={halo}: pass halo={need}")
    note = f"reach {need} derived from the index expressions" if need is not None else \
        "reach not derived (the stated halo is trusted)"
    ranks = tuple(a.type.rank for a in res)
    return Plan("map_overlap", name, fun, tuple(arrays), tuple(scalars), ranks, halo=halo,
                notes=(note,))


def _signature(program: ir.Program, name: str):
    """(where, fun, array param indices, scalar param indices), or
    NotPartitionable for parameters and results Dask arrays cannot carry."""
    entry = program.entries[name]
    fun = program.entry_fun(name)
    where = f"entry {name!r}"
    if entry.loc is not None:
        where += f" ({entry.loc})"
    arrays, scalars = [], []
    for k, p in enumerate(entry.params):
        st = p.stype
        while isinstance(st, SArray):
            st = st.elem
        if not isinstance(st, SScalar):
            raise NotPartitionable(
                f"{where}: parameter {p.name!r} has type {p.stype!r}; pyshark.dask "
                f"partitions arrays of scalars (a Dask array has one dtype): pass each field "
                f"of a tuple or record as an array of its own")
        (arrays if isinstance(p.stype, SArray) else scalars).append(k)
    for st in (entry.ret.elems if isinstance(entry.ret, STuple) else (entry.ret,)):
        while isinstance(st, SArray):
            st = st.elem
        if not isinstance(st, SScalar):
            raise NotPartitionable(
                f"{where}: it returns {entry.ret!r}; pyshark.dask returns scalars, arrays of "
                f"scalars and tuples of them (return the fields of an array of tuples as a "
                f"tuple of arrays: ps.unzip)")
    if len(fun.params) != len(entry.params):
        raise NotPartitionable(f"{where}: parameters of tuple or record type are not "
                               f"partitionable")
    if not arrays:
        raise NotPartitionable(f"{where}: it has no array parameter to partition")
    return where, fun, arrays, scalars


def prepare(program: ir.Program) -> ir.Program:
    """The entry bodies the analysis reads: no calls (inline), copies
    propagated and dead code gone (simplify), as the compiler sees them."""
    from pyshark.codegen.opt.inline import inline
    from pyshark.codegen.opt.simplify import simplify
    return simplify(inline(program))


_HINT_GATHER = ("a map whose function reads whole arrays by index (a stencil or a gather) "
                "needs its neighbours: when row i reads rows up to k away, state it: "
                "pyshark.dask.run(entry, *args, halo=k) (dask.array.map_overlap), or pass "
                "the shifted arrays as parameters")


class _Analysis:
    def __init__(self, where, fun: ir.FunDef, arrays, scalars, name):
        self.where = where
        self.fun = fun
        self.name = name
        self.arrays = tuple(arrays)
        self.scalars = tuple(scalars)
        self.kind: dict[str, object] = {}
        self.defs: dict[str, ir.Let] = {}
        self.reductions: dict[str, ir.Let] = {}
        self.bad_asserts: list[Taint] = []

    def fail(self, taint: Taint):
        loc = f" at {taint.loc}" if taint.loc is not None else ""
        msg = f"{self.where} cannot be partitioned along its arrays' leading dimension{loc}: " \
              f"{taint.why}"
        if taint.hint:
            msg += f"\n  hint: {taint.hint}"
        raise NotPartitionable(msg)

    def k(self, atom):
        if isinstance(atom, ir.Const):
            return UNIFORM
        return self.kind.get(atom.name, UNIFORM)

    def run(self) -> Plan:
        for k, p in enumerate(self.fun.params):
            self.kind[p.name] = CHUNK if k in self.arrays else UNIFORM
        for stm in self.fun.body.stms:
            kinds = self.stm(stm)
            for v, kd in zip(stm.pat, kinds):
                self.kind[v.name] = kd
                self.defs[v.name] = stm
        if self.bad_asserts:
            self.fail(self.bad_asserts[0])
        return self.result()

    # -- statements ------------------------------------------------------

    def stm(self, stm: ir.Let) -> list:
        e = stm.exp
        n = len(stm.pat)
        loc = stm.loc
        used = {v: self.kind.get(v, UNIFORM) for v in free_vars(e)}
        taints = [kd for kd in used.values() if isinstance(kd, Taint)]
        if isinstance(e, ir.Assert):
            kd = self.k(e.cond)
            if isinstance(kd, Taint):
                self.bad_asserts.append(Taint(f"an assert depends on the whole arrays: {kd.why}",
                                              loc or kd.loc, kd.hint))
            elif kd not in (UNIFORM, LENCHECK):
                self.bad_asserts.append(Taint("an assert reads the arrays' contents", loc))
            return []
        if taints and not isinstance(e, ir.SOACS):
            return [taints[0]] * n
        if isinstance(e, ir.Size):
            kd = self.k(e.arr)
            if kd == CHUNK:
                return [LEN if e.dim == 0 else UNIFORM]
            return [kd if isinstance(kd, Taint) else self.other(kd, "size of", loc)]
        if isinstance(e, ir.BinOp) and e.op in ("eq", "ne", "ge", "le") and LEN in \
                (self.k(e.x), self.k(e.y)):
            a, b = self.k(e.x), self.k(e.y)
            if a == b == LEN and e.op in ("eq", "ne"):
                return [LENCHECK]       # the translator's "arrays differ in length"
            zero = (isinstance(e.y, ir.Const) and e.y.value == 0 and e.op == "ge") or \
                (isinstance(e.x, ir.Const) and e.x.value == 0 and e.op == "le")
            if zero:
                return [LENCHECK]       # n >= 0: true in every chunk
        if isinstance(e, (ir.AtomExp, ir.BinOp, ir.UnOp, ir.Convert, ir.Select, ir.ArrayLit,
                          ir.If, ir.Loop)):
            kinds = set(used.values())
            if kinds <= {UNIFORM}:
                return [UNIFORM] * n
            if kinds <= {UNIFORM, LENCHECK} and not isinstance(e, (ir.If, ir.Loop)):
                return [LENCHECK] * n        # `and` of length checks
            if isinstance(e, ir.AtomExp) and len(kinds) == 1:
                return [self.k(e.atom)]
            if LEN in kinds:
                return [Taint("it uses the arrays' length (len(...)) as a value; each chunk "
                              "sees only its own length", loc,
                              "pass the length as a scalar parameter")] * n
            what = {ir.If: "an if statement", ir.Loop: "a loop"}.get(type(e), "a scalar")
            return [Taint(f"{what} reads the arrays' elements or a reduction's result (" +
                          ", ".join(user_name(v) for v, kd in used.items() if kd != UNIFORM) +
                          ")", loc,
                          "keep the entry to one map, reduction, scan or reduce_by_index over "
                          "the arrays; do further work in another entry")] * n
        if isinstance(e, ir.Iota):
            kd = self.k(e.n)
            return [INDEX if kd == LEN else self.other(kd, "iota", loc)]
        if isinstance(e, ir.Replicate):
            kn, kv = self.k(e.n), self.k(e.value)
            if kv == UNIFORM and kn in (LEN, UNIFORM):
                return [CHUNK if kn == LEN else UNIFORM]
            return [self.other(kn if kn != UNIFORM else kv, "replicate", loc)]
        if isinstance(e, ir.Copy):
            kd = self.k(e.arr)
            return [kd if kd in (CHUNK, UNIFORM) else self.other(kd, "copy", loc)]
        if isinstance(e, ir.SOACS):
            return self.soac(stm, used)
        # Index, Slice, Update, Concat, Rotate, Transpose, Reshape
        kinds = set(used.values())
        if kinds <= {UNIFORM}:
            return [UNIFORM] * n
        what = type(e).__name__.lower()
        hint = {"index": _HINT_GATHER, "slice": _HINT_GATHER, "rotate": _HINT_GATHER,
                "concat": "concatenate the Dask arrays outside the entry (dask.array."
                          "concatenate)",
                "transpose": "transpose the Dask array outside the entry",
                "reshape": "reshape the Dask array outside the entry"}.get(what, "")
        return [Taint(f"{_EXP_NAMES.get(what, what)} of a partitioned array (" +
                      ", ".join(user_name(v) for v, kd in used.items() if kd != UNIFORM) +
                      ") mixes rows of different chunks", loc, hint)] * n

    def other(self, kd, what: str, loc) -> object:
        if isinstance(kd, Taint):
            return kd
        if kd == UNIFORM:
            return UNIFORM
        if kd == LEN:
            return Taint(f"{what} the arrays' length", loc, "pass the length as a scalar "
                                                                "parameter")
        return Taint(f"{what} a value ({kd}) that is not partitioned row by row", loc)

    def soac(self, stm: ir.Let, used: dict) -> list:
        e = stm.exp
        n = len(stm.pat)
        loc = stm.loc
        name = type(e).__name__
        lam_free = free_vars(e.lam) if getattr(e, "lam", None) is not None else frozenset()
        order = {CHUNK: 0, INDEX: 0, LEN: 2}
        for v in sorted(lam_free, key=lambda v: (order.get(self.kind.get(v), 1), v)):
            kd = self.kind.get(v, UNIFORM)
            if kd == UNIFORM:
                continue
            if isinstance(kd, Taint):
                return [kd] * n
            if kd in (CHUNK, INDEX) or v in {p.name for p in self.fun.params}:
                return [Taint(f"the function of {_SOAC_NAMES[name]} reads the whole array "
                              f"{user_name(v)!r} (indexes it, or passes it on), so a row "
                              f"needs rows of other chunks", loc, _HINT_GATHER)] * n
            what = "the arrays' length" if kd == LEN else repr(user_name(v))
            return [Taint(f"the function of {_SOAC_NAMES[name]} reads {what}, which "
                          f"differs per chunk", loc,
                          "pass the length as a scalar parameter")] * n
        ins = (e.idxs,) + e.vals if isinstance(e, (ir.ReduceByIndex, ir.Scatter)) else e.arrs
        in_kinds = {self.k(a) for a in ins}
        width = self.k(e.width)
        bad = [kd for kd in in_kinds if isinstance(kd, Taint)]
        if bad:
            return [bad[0]] * n
        if in_kinds <= {UNIFORM} and width == UNIFORM:
            if isinstance(e, (ir.ReduceByIndex, ir.Scatter)) and \
                    any(self.k(d) != UNIFORM for d in e.dests):
                return [self.other(self.k(e.dests[0]), "reduce_by_index into", loc)] * n
            return [UNIFORM] * n
        if INDEX in in_kinds:
            return [Taint(f"{_SOAC_NAMES[name]} runs over the arrays' indices (iota, "
                          f"tabulate, enumerate or range(len(xs))), which are global positions",
                          loc, "map over the arrays themselves (zip them), or pass the "
                               "indices as an array parameter")] * n
        if not (in_kinds <= {CHUNK} and width == LEN):
            odd = sorted(str(kd) for kd in in_kinds if kd != CHUNK)
            return [Taint(f"{_SOAC_NAMES[name]} mixes partitioned arrays with "
                          f"{', '.join(odd) or 'another width'}", loc)] * n
        if isinstance(e, ir.Map):
            return [CHUNK] * n
        if isinstance(e, (ir.Reduce, ir.Scan, ir.ReduceByIndex)):
            for a in e.neutral:
                if self.k(a) != UNIFORM:
                    return [Taint(f"the neutral element of {_SOAC_NAMES[name]} depends on "
                                  f"the arrays", loc)] * n
            if isinstance(e, ir.ReduceByIndex):
                why = self.fresh_dests(e)
                if why:
                    return [Taint(why, loc,
                                  "write reduce_by_index(replicate(m, ne), op, ne, is, vs) "
                                  "and combine it with the initial array in another entry")] * n
            for v in stm.pat:
                self.reductions[v.name] = stm
            return [{ir.Reduce: REDUCED, ir.Scan: SCANNED,
                     ir.ReduceByIndex: HIST}[type(e)]] * n
        if isinstance(e, ir.Filter):
            return [Taint("filter keeps a data-dependent number of rows per chunk (Dask "
                          "arrays need known chunk sizes)", loc,
                          "return a mask from a map and filter the Dask array with it "
                          "(x[mask])")] * n
        return [Taint("scatter writes to positions anywhere in the result", loc,
                      "use reduce_by_index, which pyshark.dask partitions")] * n

    def fresh_dests(self, e: ir.ReduceByIndex) -> str:
        """"" when every destination is a replicate of the neutral element
        (so each chunk's histogram is a partial one), else why not."""
        for d, ne in zip(e.dests, e.neutral):
            stm = self.defs.get(d.name) if isinstance(d, ir.Var) else None
            if stm is None or not isinstance(stm.exp, ir.Replicate) or stm.exp.value != ne:
                return (f"reduce_by_index adds into {user_name(d)!r}, which is not a fresh "
                        f"replicate of its neutral element: every chunk would add it once")
            if d.type.rank != 1:
                return "reduce_by_index into an array of rank > 1 is not partitioned yet"
        return ""

    # -- the result ------------------------------------------------------

    def result(self) -> Plan:
        res = self.fun.body.result
        kinds = [self.k(a) for a in res]
        for kd in kinds:
            if isinstance(kd, Taint):
                self.fail(kd)
        ranks = tuple(a.type.rank if isinstance(a.type, ArrayType) else 0 for a in res)
        base = dict(entry=self.name, fun=self.fun, array_params=self.arrays,
                    scalar_params=self.scalars, result_ranks=ranks)
        if all(kd == CHUNK for kd in kinds):
            return Plan("map", **base)
        stms = {id(self.reductions.get(a.name)) for a in res if isinstance(a, ir.Var)}
        if len(stms) == 1 and all(kd in (REDUCED, SCANNED, HIST) for kd in kinds):
            stm = self.reductions[res[0].name]
            if tuple(a.name for a in res) != tuple(v.name for v in stm.pat):
                self.fail(Taint("the entry returns its reduction's results in another order or "
                                "in part", stm.loc, "return exactly what the reduction gives"))
            e = stm.exp
            if any(not isinstance(v.type, ScalarType) for v in e.lam.params):
                self.fail(Taint(f"{_SOAC_NAMES[type(e).__name__]} with an array-valued "
                                f"operator is not partitioned yet", stm.loc))
            if isinstance(e, ir.Scan) and any(a.type.rank != 1 for a in res):
                self.fail(Taint("a scan of arrays of rank > 1 is not partitioned yet", stm.loc))
            closure, needs = self.closure(e, stm.loc)
            kind = {REDUCED: "reduce", SCANNED: "scan", HIST: "reduce_by_index"}[kinds[0]]
            return Plan(kind, stm=stm, closure=closure, needs=needs,
                        acc_types=tuple(p.type for p in e.lam.params[:len(e.neutral)]), **base)
        what = ", ".join(sorted({kd if isinstance(kd, str) else "?" for kd in kinds}))
        self.fail(Taint(f"its results ({what}) are not one map, one reduction, one scan or "
                        f"one reduce_by_index over the arrays",
                        hint="split the entry: one entry per partitioned step"))

    def closure(self, e, loc) -> tuple[tuple[ir.Let, ...], tuple[int, ...]]:
        """The top-level statements the operator and the neutral element
        read (transitively), and the scalar parameters they need."""
        want = set(free_vars(e.lam)) | {a.name for a in e.neutral if isinstance(a, ir.Var)}
        params = {p.name: k for k, p in enumerate(self.fun.params)}
        keep: list[ir.Let] = []
        for stm in reversed(self.fun.body.stms):
            if any(v.name in want for v in stm.pat):
                if isinstance(stm.exp, ir.Size):
                    self.fail(Taint("the reduction's operator reads a size of the arrays",
                                    loc))
                keep.append(stm)
                want |= set(free_vars(stm.exp))
        needs = tuple(sorted(params[v] for v in want if v in params))
        if any(k in self.arrays for k in needs):
            self.fail(Taint("the reduction's operator reads an array parameter", loc))
        return tuple(reversed(keep)), needs


_SOAC_NAMES = {"Map": "map", "Reduce": "reduce", "Scan": "scan", "Filter": "filter",
               "ReduceByIndex": "reduce_by_index", "Scatter": "scatter"}
_EXP_NAMES = {"index": "indexing", "slice": "slicing", "update": "an in-place update",
              "rotate": "rotate", "concat": "concatenation"}


def surface_of(t) -> object:
    """The surface type of a core scalar or array-of-scalars type."""
    if isinstance(t, ScalarType):
        return SScalar(t)
    st = SScalar(t.elem)
    for _ in range(t.rank):
        st = SArray(st)
    return st


def result_stype(types) -> object:
    types = list(types)
    return surface_of(types[0]) if len(types) == 1 else STuple(tuple(map(surface_of, types)))
