"""Facts the passes share: known array lengths, which statements may raise,
which arrays may be consumed, and keys that compare atoms exactly.

Known lengths are dominance facts, recorded statement by statement in a
scoped table (a ChainMap per nested body): after `n = size(xs, 0)` the length
of xs is n; after a Map of width w over xs succeeds, xs and the results have
length w; iota/replicate of a non-negative count have that length; views and
copies inherit the dimensions of their source. A SOAC's width check cannot
fail when every input has a known length equal to the width.

`may_raise` is conservative: a statement "may raise" unless it provably
neither raises nor consumes an array nor fails to terminate (a while loop
always "may raise"). Dead-code elimination and the fusion guards use it.
"""
from __future__ import annotations

from collections import ChainMap
from typing import Callable, Optional

from pyshark.core import ir
from pyshark.core.traverse import FIELD_NAMES, binder_vars, iter_stms, map_exp
from pyshark.core.types import ArrayType


def atom_key(a: ir.Atom):
    """A hashable key equal only for the same name or the same constant bits
    (0.0 and -0.0 differ, NaN equals NaN, 1 and True differ by type)."""
    if a.__class__ is ir.Var:
        return ("v", a.name)
    return ("c", a.type, repr(a.value))


def same_atom(a: ir.Atom, b: ir.Atom) -> bool:
    return atom_key(a) == atom_key(b)


def _ident(a):
    return a


_COMMUTATIVE = frozenset({"add", "mul", "eq", "ne", "band", "bor", "bxor", "land", "lor"})
_NESTED = (ir.If, ir.Loop, ir.Map, ir.Reduce, ir.Scan, ir.Filter, ir.ReduceByIndex, ir.Call)


def _key_of(v):
    cls = v.__class__
    if cls is ir.Var or cls is ir.Const:
        return atom_key(v)
    if cls is tuple:
        return tuple(_key_of(x) for x in v)
    if cls is ir.SliceDim:
        return ("slice", _key_of(v.start), _key_of(v.stop), _key_of(v.step))
    return v                # None, str, int, bool, types


def exp_key(e: ir.Exp):
    """A hashable key equal for expressions that compute the same value from the
    same operands (commutative operators normalised); None for expressions
    with nested bodies and for calls."""
    cls = e.__class__
    if cls in _NESTED:
        return None
    if cls is ir.BinOp:
        x, y = atom_key(e.x), atom_key(e.y)
        t = e.x.type
        if e.op in _COMMUTATIVE or e.op in ("min", "max") and not t.is_float:
            x, y = sorted((x, y), key=repr)
        return ("BinOp", e.op, x, y)
    return (cls.__name__,) + tuple(_key_of(getattr(e, n)) for n in _fields(cls))


def _fields(cls):
    return FIELD_NAMES[cls]


class Facts:
    """Scoped dominance facts: array dimension lengths and non-negative scalars.

    `resolve` maps a stored atom to its current form (simplify substitutes
    names as it goes; an atom recorded earlier may have been renamed since)."""

    def __init__(self, parent: Optional["Facts"] = None,
                 resolve: Callable[[ir.Atom], ir.Atom] = _ident):
        if parent is None:
            self.lens: ChainMap = ChainMap()
            self.nonneg: ChainMap = ChainMap()
            self.conds: ChainMap = ChainMap()     # bool name -> ("eq"|"land", x, y)
            self.equal: ChainMap = ChainMap()     # (key, key) -> True after an assert
            self.resolve = resolve
        else:
            self.lens = parent.lens.new_child()
            self.nonneg = parent.nonneg.new_child()
            self.conds = parent.conds.new_child()
            self.equal = parent.equal.new_child()
            self.resolve = parent.resolve

    def child(self, resolve: Optional[Callable[[ir.Atom], ir.Atom]] = None) -> "Facts":
        f = Facts(self)
        if resolve is not None:
            f.resolve = resolve
        return f

    # -- queries ---------------------------------------------------------------
    def length(self, arr: str, dim: int = 0) -> Optional[ir.Atom]:
        a = self.lens.get((arr, dim))
        return None if a is None else self.resolve(a)

    def is_nonneg(self, a: ir.Atom) -> bool:
        a = self.resolve(a)
        if a.__class__ is ir.Const:
            return a.type.is_int and a.value >= 0
        return a.name in self.nonneg or getattr(a.type, "is_unsigned", False)

    def has_length(self, arr: ir.Var, width: ir.Atom) -> bool:
        n = self.length(arr.name, 0)
        return n is not None and same_atom(n, self.resolve(width))

    def same_value(self, a: ir.Atom, b: ir.Atom) -> bool:
        """a and b are the same atom, or an assert that they are equal (of
        integers) has passed."""
        a, b = self.resolve(a), self.resolve(b)
        if same_atom(a, b):
            return True
        ka, kb = atom_key(a), atom_key(b)
        return (ka, kb) in self.equal or (kb, ka) in self.equal

    def widths_ok(self, width: ir.Atom, arrs) -> bool:
        """Every array provably has length `width` (so a width check passes)."""
        return all(self.has_length(a, width) for a in arrs)

    # -- recording -------------------------------------------------------------
    def set_length(self, arr: str, dim: int, n: Optional[ir.Atom]) -> None:
        if n is not None and (arr, dim) not in self.lens:
            self.lens[(arr, dim)] = n

    def set_nonneg(self, name: str) -> None:
        self.nonneg[name] = True

    def _copy_dims(self, dst: ir.Var, src: ir.Var, shift: int = 0, start: int = 0) -> None:
        """dims d >= start of dst are dims d + shift of src."""
        if not isinstance(dst.type, ArrayType):
            return
        for d in range(start, dst.type.rank):
            self.set_length(dst.name, d, self.length(src.name, d + shift))

    def _holds(self, c: ir.Atom, depth: int = 0) -> None:
        """Records the equalities the true bool c implies (an assert passed)."""
        d = self.conds.get(c.name) if c.__class__ is ir.Var and depth < 8 else None
        if d is None:
            return
        op, x, y = d
        if op == "land":
            self._holds(x, depth + 1)
            self._holds(y, depth + 1)
        else:
            self.equal[(atom_key(self.resolve(x)), atom_key(self.resolve(y)))] = True

    def record(self, stm: ir.Let) -> None:
        """Adds what holds once stm has run without raising."""
        e, pat = stm.exp, stm.pat
        cls = e.__class__
        if cls is ir.BinOp:
            if e.op == "land" or e.op == "eq" and e.x.type.is_int:
                self.conds[pat[0].name] = (e.op, e.x, e.y)
        elif cls is ir.Assert:
            self._holds(e.cond)
        elif cls is ir.Size:
            self.set_nonneg(pat[0].name)
            self.set_length(e.arr.name, e.dim, pat[0])
        elif cls in (ir.Map, ir.Scan, ir.Reduce, ir.Filter):
            w = e.width
            for a in e.arrs:
                self.set_length(a.name, 0, w)
            if cls in (ir.Map, ir.Scan) and (e.arrs or self.is_nonneg(w)):
                for v in pat:
                    self.set_length(v.name, 0, w)
            if e.arrs and w.__class__ is ir.Var:
                self.set_nonneg(w.name)      # the width equals a length
        elif cls in (ir.Iota, ir.Replicate):
            if self.is_nonneg(e.n):
                self.set_length(pat[0].name, 0, e.n)
            if cls is ir.Replicate and e.value.__class__ is ir.Var:
                self._copy_dims(pat[0], e.value, -1, 1)
        elif cls in (ir.Copy, ir.Rotate, ir.Update):
            self._copy_dims(pat[0], e.arr)
        elif cls is ir.AtomExp and e.atom.__class__ is ir.Var:
            self._copy_dims(pat[0], e.atom)
        elif cls is ir.Transpose:
            r = pat[0]
            self.set_length(r.name, 0, self.length(e.arr.name, 1))
            self.set_length(r.name, 1, self.length(e.arr.name, 0))
            self._copy_dims(r, e.arr, 0, 2)
        elif cls is ir.Index:
            self._copy_dims(pat[0], e.arr, len(e.idxs))
        elif cls is ir.Slice:
            d_out = 0
            for d, dim in enumerate(e.dims):
                if dim.__class__ is ir.SliceDim:
                    if dim.start is None and dim.stop is None and dim.step is None:
                        self.set_length(pat[0].name, d_out, self.length(e.arr.name, d))
                    d_out += 1
            self._copy_dims(pat[0], e.arr, len(e.dims) - d_out, d_out)
        elif cls is ir.Reshape:
            for d, n in enumerate(e.shape):
                self.set_length(pat[0].name, d, n)
        elif cls is ir.ArrayLit:
            self.set_length(pat[0].name, 0, ir.Const(len(e.elems), ir.ScalarType.I64))
            if e.elems and e.elems[0].__class__ is ir.Var:
                self._copy_dims(pat[0], e.elems[0], -1, 1)
        elif cls in (ir.Scatter, ir.ReduceByIndex):
            for v, d in zip(pat, e.dests):
                self._copy_dims(v, d)

    def for_body(self, e: ir.Exp, resolve=None) -> "Facts":
        """Child facts for the bodies nested in e (lambda rows, loop index)."""
        f = self.child(resolve)
        cls = e.__class__
        if cls in (ir.Map, ir.Filter):
            for p, a in zip(e.lam.params, e.arrs):
                f._copy_dims(p, a, 1)
        elif cls in (ir.Reduce, ir.Scan):
            k = len(e.neutral)
            for p, a in zip(e.lam.params[k:], e.arrs):
                f._copy_dims(p, a, 1)
        elif cls is ir.Loop and e.form.__class__ is ir.ForLoop:
            f.set_nonneg(e.form.index.name)
        return f


# ---------------------------------------------------------------------------
# May a statement raise?

_INT_PARTIAL = frozenset({"floordiv", "mod"})


def binop_may_raise(e: ir.BinOp, facts: Optional[Facts] = None) -> bool:
    """Integer floordiv/mod by a possibly-zero divisor (ZeroDivisionError) and
    integer pow with a possibly-negative exponent (ValueError) may raise."""
    if not e.x.type.is_int:
        return False
    y = facts.resolve(e.y) if facts is not None else e.y
    if e.op in _INT_PARTIAL:
        return not (y.__class__ is ir.Const and y.value != 0)
    if e.op in ("pow", "power"):
        return not (y.__class__ is ir.Const and y.value >= 0
                    or facts is not None and facts.is_nonneg(y))
    return False


def body_may_raise(body: ir.Body, facts: Facts) -> bool:
    """Whether some statement of body may raise (facts recorded along the way)."""
    for stm in body.stms:
        if may_raise(stm.exp, facts):
            return True
        facts.record(stm)
    return False


def may_raise(e: ir.Exp, facts: Facts) -> bool:
    """Conservative: False only when e provably does not raise, consume an array
    or run forever, given facts (those holding just before e)."""
    cls = e.__class__
    if cls in (ir.AtomExp, ir.UnOp, ir.Convert, ir.Select, ir.Size, ir.Iota,
               ir.Replicate, ir.Copy, ir.Rotate, ir.Transpose):
        return False
    if cls is ir.BinOp:
        return binop_may_raise(e, facts)
    if cls is ir.ArrayLit:
        return e.type.rank > 1 and len(e.elems) > 1
    if cls is ir.Concat:
        return e.arrs[0].type.rank > 1 and len(e.arrs) > 1
    if cls is ir.Slice:
        for d in e.dims:
            if d.__class__ is not ir.SliceDim:
                return True
            if d.step is not None:
                s = facts.resolve(d.step)
                if not (s.__class__ is ir.Const and s.value != 0):
                    return True
        return False
    if cls is ir.If:
        return (body_may_raise(e.then_body, facts.child())
                or body_may_raise(e.else_body, facts.child()))
    if cls is ir.Loop:
        if e.form.__class__ is not ir.ForLoop:
            return True         # may not terminate
        return body_may_raise(e.body, facts.for_body(e))
    if cls in (ir.Map, ir.Reduce, ir.Scan, ir.Filter):
        if not facts.widths_ok(e.width, e.arrs) or not rows_regular(e):
            return True
        return body_may_raise(e.lam.body, facts.for_body(e))
    # Assert, Index, Update, Call, Reshape, Scatter, ReduceByIndex
    return True


def raise_classes(e: ir.Exp, facts: Facts) -> Optional[frozenset]:
    """The exception classes e may raise (empty when it provably raises
    nothing), or None when that is not known: indexing, calls, while loops
    (which may not terminate) and everything may_raise does not look into.

    The golden rule asks for the same exception class, not the same message:
    two computations that may each raise only ShapeError can run in either
    order (fuse reorders a zip's length assert and a producer that way)."""
    if not may_raise(e, facts):
        return frozenset()
    cls = e.__class__
    if cls is ir.Assert:
        return frozenset((e.error,))
    if cls is ir.BinOp:
        return frozenset(("ValueError" if e.op in ("pow", "power") else "ZeroDivisionError",))
    if cls is ir.If:
        t = body_raise_classes(e.then_body, facts.child())
        f = body_raise_classes(e.else_body, facts.child())
        return None if t is None or f is None else t | f
    if cls is ir.Loop and e.form.__class__ is ir.ForLoop:
        return body_raise_classes(e.body, facts.for_body(e))
    if cls in (ir.Map, ir.Reduce, ir.Scan, ir.Filter):
        inner = body_raise_classes(e.lam.body, facts.for_body(e))
        if inner is None:
            return None
        if not facts.widths_ok(e.width, e.arrs) or not rows_regular(e):
            inner = inner | {"ShapeError"}
        return inner
    return None


def body_raise_classes(body: ir.Body, facts: Facts) -> Optional[frozenset]:
    """The union of raise_classes over body's statements (facts recorded
    along the way), or None when one is not known."""
    out: frozenset = frozenset()
    for stm in body.stms:
        r = raise_classes(stm.exp, facts)
        if r is None:
            return None
        out |= r
        facts.record(stm)
    return out


def one_class(*classes) -> bool:
    """Whether the known class sets together hold at most one exception
    class (so the order in which they may raise cannot be observed)."""
    if any(c is None for c in classes):
        return False
    return len(frozenset().union(*classes)) <= 1


# ---------------------------------------------------------------------------
# Regular rows


def rows_regular(e: ir.Exp) -> bool:
    """Whether the arrays a Map (or Scan) stacks provably have one shape.

    A Map whose lambda returns arrays raises ShapeError when two rows differ
    in shape. Rows are regular when every dimension of every array result is
    invariant across iterations: a constant, a name bound outside the lambda,
    or the size of an array whose dimension is (an array bound outside, a
    row of one, a map over an invariant width, ...). Other SOACs stack nothing
    (Scan with array elements counts as irregular)."""
    cls = e.__class__
    if all(not isinstance(t, ArrayType) for t in e.lam.ret):
        return True
    if cls is not ir.Map:
        return cls in (ir.Reduce, ir.Filter)
    return RegularResults(e).results_ok()


class RegularResults:
    """results_ok(): are the dimensions of a map's array results invariant
    across its iterations (rows_regular; flatten.py extends it to loops)?"""

    def __init__(self, m: ir.Map):
        self.m = m
        self.defs: dict[str, ir.Let] = {}
        self.rows: dict[str, ir.Var] = {p.name: a for p, a in zip(m.lam.params, m.arrs)}
        for stm in iter_stms(m.lam.body):
            for v in stm.pat:
                self.defs[v.name] = stm
            x = stm.exp
            if x.__class__ in (ir.Map, ir.Filter):
                self.rows.update({p.name: a for p, a in zip(x.lam.params, x.arrs)})
            elif x.__class__ in (ir.Reduce, ir.Scan):
                k = len(x.neutral)
                self.rows.update({p.name: a for p, a in zip(x.lam.params[k:], x.arrs)})
        self.varying = {p.name for p in m.lam.params} | {v.name for v in
                                                         binder_vars(m.lam.body)}

    def results_ok(self) -> bool:
        for r, t in zip(self.m.lam.body.result, self.m.lam.ret):
            if isinstance(t, ArrayType) and not all(self.dim(r, d, 0) for d in range(t.rank)):
                return False
        return True

    def atom(self, a: ir.Atom, depth: int) -> bool:
        if a.__class__ is ir.Const or a.name not in self.varying:
            return True
        stm = self.defs.get(a.name)
        return (stm is not None and stm.exp.__class__ is ir.Size
                and self.dim(stm.exp.arr, stm.exp.dim, depth + 1))

    def dim(self, v: ir.Var, d: int, depth: int) -> bool:
        """Dimension d of v is the same in every iteration."""
        if v.name not in self.varying:
            return True
        if depth > 64:
            return False
        depth += 1
        if v.name in self.rows:
            return self.dim(self.rows[v.name], d + 1, depth)
        stm = self.defs.get(v.name)
        if stm is None:
            return False
        e = stm.exp
        cls = e.__class__
        if cls in (ir.Map, ir.Scan):
            if d == 0:
                return self.atom(e.width, depth)
            r = e.lam.body.result[stm.pat.index(v)]
            return cls is ir.Map and r.__class__ is ir.Var and self.dim(r, d - 1, depth)
        if cls in (ir.Iota, ir.Replicate):
            if d == 0:
                return self.atom(e.n, depth)
            return e.value.__class__ is ir.Var and self.dim(e.value, d - 1, depth)
        if cls in (ir.Copy, ir.Rotate, ir.Update):
            return self.dim(e.arr, d, depth)
        if cls is ir.AtomExp:
            return e.atom.__class__ is ir.Var and self.dim(e.atom, d, depth)
        if cls is ir.Transpose:
            return self.dim(e.arr, 1 - d if d < 2 else d, depth)
        if cls is ir.Index:
            return self.dim(e.arr, d + len(e.idxs), depth)
        if cls is ir.Reshape:
            return self.atom(e.shape[d], depth)
        if cls is ir.ArrayLit:
            return d == 0 or e.elems[0].__class__ is ir.Var and self.dim(e.elems[0], d - 1,
                                                                            depth)
        if cls in (ir.Scatter, ir.ReduceByIndex):
            return self.dim(e.dests[stm.pat.index(v)], d, depth)
        if cls is ir.Slice:
            kept = [k for k, x in enumerate(e.dims) if x.__class__ is ir.SliceDim]
            if d < len(kept):
                x = e.dims[kept[d]]
                return x.start is None and x.stop is None and x.step is None \
                    and self.dim(e.arr, kept[d], depth)
            return self.dim(e.arr, d - len(kept) + len(e.dims), depth)
        return False


# ---------------------------------------------------------------------------
# Consumption


def contains_update(e: ir.Exp) -> bool:
    """Whether e is or contains an in-place Update (so may consume an array)."""
    if e.__class__ is ir.Update:
        return True
    if e.__class__ is ir.Call:
        return False         # a callee cannot consume its arguments
    found = []

    def visit(b: ir.Body) -> ir.Body:
        if not found and any(contains_update(s.exp) for s in b.stms):
            found.append(True)
        return b
    map_exp(e, _ident, visit)
    return bool(found)


def alias_edges(body: ir.Body) -> dict[str, set[str]]:
    """name -> the names whose storage it may share, for every statement in
    body (nested ones too): views, atom copies, branch results, loop
    parameters with their initial values and results, call arguments."""
    edges: dict[str, set[str]] = {}

    def edge(dst: str, src) -> None:
        if src.__class__ is ir.Var:
            edges.setdefault(dst, set()).add(src.name)

    for stm in iter_stms(body):
        e = stm.exp
        cls = e.__class__
        if cls is ir.Update:
            edge(stm.pat[0].name, e.arr)
        elif cls is ir.AtomExp:
            edge(stm.pat[0].name, e.atom)
        elif cls in (ir.Index, ir.Slice, ir.Transpose, ir.Reshape):
            edge(stm.pat[0].name, e.arr)
        elif cls is ir.If:
            for i, v in enumerate(stm.pat):
                edge(v.name, e.then_body.result[i])
                edge(v.name, e.else_body.result[i])
        elif cls is ir.Loop:
            for i, (p, a) in enumerate(zip(e.params, e.inits)):
                edge(p.name, a)
                edge(p.name, e.body.result[i])
                edge(stm.pat[i].name, p)
        elif cls is ir.Call:
            for v in stm.pat:
                for a in e.args:
                    edge(v.name, a)
    return edges


def alias_closure(edges: dict[str, set[str]], seeds) -> set[str]:
    """seeds and every name they may share storage with, following edges."""
    out: set[str] = set()
    todo = list(seeds)
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.add(n)
        todo.extend(edges.get(n, ()))
    return out


def consumable_names(body: ir.Body) -> set[str]:
    """Names whose storage an Update anywhere in body may overwrite: the arrays
    updated, closed backwards over aliasing (alias_edges)."""
    seeds = {s.exp.arr.name for s in iter_stms(body) if s.exp.__class__ is ir.Update}
    return alias_closure(alias_edges(body), seeds)


__all__ = ["Facts", "atom_key", "same_atom", "exp_key", "may_raise", "body_may_raise",
           "binop_may_raise", "raise_classes", "body_raise_classes", "one_class",
           "rows_regular", "contains_update", "alias_edges",
           "alias_closure", "consumable_names"]
