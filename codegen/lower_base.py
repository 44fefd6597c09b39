"""Core IR -> kernel IR: the base of the one lowering both native backends
share (the Lowerer's API), which imports no lowering rule.

Compile-by-environment (as a code-generating interpreter would): each core
FunDef body is walked with an environment from core names to lowered values,
and calls are inlined at their call site (the language has no recursion).

Values
- a scalar is a kir expression (bound to a fresh kir variable);
- an array is an `Arr`: base pointer (the allocation), data pointer,
  shape (i64 expressions), element type. Every array is row-major and
  contiguous; sub-arrays that stay contiguous (a row, a reshape, a
  dimension-0 slice with step 1) are views of their base, everything else
  is copied;
- a `Delayed` array is a scalar-result map (or iota) whose only use is as
  the input of a later SOAC of the same body: its element i is computed
  where the consumer reads it, which fuses map-map, map-reduce, map-scan,
  map-filter and map-histogram without materialising the intermediate
  (Futhark's producer-consumer fusion, done as pull arrays).

Memory (codegen decides it statically, no reference counts at run time):
each lowered body is a Scope that owns the allocations made in it and frees
them when it ends, except those it returns. A result that may alias memory
the scope owns but does not hand over whole is copied. Loop-carried arrays
are owned by the loop; an `Update` writes in place when the array is owned
in the current lambda frame and no other live name can see it, else it
copies first (the checker's uniqueness rules make the in-place case the
common one).

Layers: this file holds the walk, values, scopes, emitting statements and
the RuleTable. The rules register into a table per family: "common" ones
(lower_scalar.py scalars and calls, lower_control.py if and loop,
lower_arrays.py the array expressions), "mc" (codegen/mc/, the multicore
SOAC algorithms, one file per primitive) and "gpu" (codegen/gpu/, the
work-group algorithms); the driver (lower.py) builds the table and hands
it to the Lowerer, as Futhark's `Operations` record and JAX's
`register_lowering(..., platform=)` do.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from pyshark.core import ir
from pyshark.core.types import I64, ScalarType
from pyshark.errors import InternalCompilerError

from . import kir as K
from . import par_work
from . import scalar as S
from .bounds import Facts
from .kir_traverse import has_loop, map_expr
from .target import MULTICORE, Target
from .usage import live_after, use_counts


# ---------------------------------------------------------------------------
# Lowered values


@dataclass(frozen=True)
class Arr:
    base: K.Expr                        # the allocation (or the caller's buffer)
    data: K.Expr                        # element 0
    shape: tuple                        # i64 kir expressions, one per dimension
    elem: ScalarType
    aliases: frozenset = frozenset()    # names of bases whose memory this may share

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass
class DelayedGroup:
    """A map of scalar results whose elements are computed where read."""
    n: K.Expr
    compute: Callable[[K.Expr], list]   # index -> element values (emits code)
    source: Optional[tuple] = None      # a map's (lambda, env, input values): mc/tile.py


@dataclass(frozen=True)
class Delayed:
    group: DelayedGroup
    k: int                              # which result of the group
    elem: ScalarType

    @property
    def shape(self) -> tuple:
        return (self.group.n,)

    @property
    def rank(self) -> int:
        return 1


@dataclass(frozen=True)
class ColumnsOf:
    """transpose(arr) left in arr's row-major memory: the multicore target
    reads it only where every later use is a Size or a map of column
    reductions (codegen/mc/colred.py), which walk arr's rows instead."""
    arr: Arr

    @property
    def shape(self) -> tuple:
        return (self.arr.shape[1], self.arr.shape[0])

    @property
    def elem(self) -> ScalarType:
        return self.arr.elem

    @property
    def rank(self) -> int:
        return 2


Value = Union[K.Expr, Arr, Delayed, ColumnsOf]


@dataclass
class Scope:
    owned: list = field(default_factory=list)     # base KVars this body frees
    frame: int = 0                                # lambda frame number
    carried: frozenset = frozenset()              # a loop iteration's: its parameters' names


@dataclass(frozen=True)
class Options:
    unsafe: bool = False                # drop bounds checks
    parallel: bool = True               # emit ParFor at host level
    # Iterations below which a ParFor whose body has no loops runs inline, and
    # elements below which a reduction/scan/filter/histogram stays sequential
    # (a fork-join costs ~10 us on these machines: docs/cpu-backend.md). The tests'
    # "kir" backend sets 1 to exercise the parallel algorithms at every size.
    par_min: int = 1 << 15
    target: Target = MULTICORE          # which algorithm family (codegen/target.py)
    # Loop versioning (par_for, lower_arrays.versioned_for): an unchecked copy
    # of a loop whose bounds checks hold when tested up front. Off in the
    # quick tier of a tiered compile (stages.pipeline_for(quick=True)): the
    # checked loop alone is the same computation, in less code.
    versions: bool = True


# ---------------------------------------------------------------------------
# Rules

#: a rule lowers one core expression: rule(lw, exp, env, stm) -> the values
#: of stm's pattern, or None to decline (the next family's rule then runs)
Rule = Callable[["Lowerer", ir.Exp, dict, ir.Let], Optional[list]]

FAMILIES = ("gpu", "mc_host", "common", "mc")


def families_for(target: Target, in_par: bool) -> tuple:
    """The families whose rules are tried, in order: the target's own
    family at host level ("gpu": work-group algorithms; "mc_host": the
    multicore target's host-level shapes, mc/colred.py), whose rules may
    decline a shape they do not handle; then the family-independent rules;
    then the multicore algorithms, correct on any device and sequential
    inside a parallel loop."""
    if in_par:
        return ("common", "mc")
    return ("mc_host" if target.family == "mc" else target.family, "common", "mc")


class RuleTable:
    """The lowering rules by family and core expression class; mc/, gpu/
    and the common modules fill it through their `register` functions."""

    def __init__(self):
        self.rules: dict[str, dict[type, Rule]] = {f: {} for f in FAMILIES}

    def register(self, family: str, exp_class: type, rule: Rule) -> None:
        table = self.rules[family]
        if exp_class in table:
            raise InternalCompilerError(f"two {family} rules for {exp_class.__name__}")
        table[exp_class] = rule

    def register_all(self, family: str, rules: dict) -> None:
        for exp_class, rule in rules.items():
            self.register(family, exp_class, rule)

    def candidates(self, exp_class: type, families: tuple) -> list:
        """The rules for a class, in the order of `families`."""
        return [r for r in (self.rules[f].get(exp_class) for f in families) if r is not None]


# ---------------------------------------------------------------------------
# The Lowerer


class Lowerer:
    """Lowers one entry (and every function it calls) to a kir.Function.

    Rules read `options`, `facts` (bounds.py), `in_par` (inside a parallel
    loop), `live`/`rest`/`body_counts` (the statement being lowered: names
    live after it, the statements after it, use counts of its body)."""

    def __init__(self, program: ir.Program, module: K.Module, options: Options,
                 rules: RuleTable):
        self.program = program
        self.module = module
        self.options = options
        self.rules = rules
        self.stack: list[list] = [[]]
        self.counter = 0
        self.scopes: list[Scope] = []
        self.frame = 0
        self.in_par = False
        self.facts = Facts()
        self.inputs: frozenset = frozenset()  # the entry's array parameters (never freed here)
        self.created: list[str] = []       # every variable made, in order
        # loop versioning of bounds checks (see par_for): None, or a dict
        # {"mode": "collect"|"assume", "conds": [...], "k": int, "local": set}
        self.version: Optional[dict] = None
        self.reassoc = False               # operator lambdas may reassociate (mc/common.apply_op)
        # the walk (bind_stms): names live after the statement being lowered,
        # the statements after it, the use counts of its body
        self.live: frozenset = frozenset()
        self.live_in_body: frozenset = frozenset()  # the part of `live` the body itself reads
        self.rest: tuple = ()
        self.body_counts: dict = {}

    # -- building kir ---------------------------------------------------------
    def emit(self, s: K.Stm) -> None:
        self.stack[-1].append(s)

    def var(self, hint: str, t) -> K.KVar:
        self.counter += 1
        v = K.KVar(f"{hint}_{self.counter}", t)
        self.created.append(v.name)
        return v

    def let(self, hint: str, e: K.Expr) -> K.Expr:
        if isinstance(e, (K.KVar, K.KConst)):
            return e
        v = self.var(hint, K.type_of(e))
        self.emit(K.Set(v, e))
        self.facts.defs[v.name] = e          # set once: bounds.py may follow it
        return v

    def let_shared(self, hint: str, e: K.Expr) -> K.Expr:
        """let(hint, e), after binding every compound sub-expression that e
        reaches more than once (the same object: scalar.maximum(x, y) reads
        x and y twice) to a variable of its own, innermost first. A
        versioning condition built from nested min/max bounds (bounds.py)
        is a small DAG but an exponential tree: LocVolCalib's largest had
        20,775 nodes over 706 objects, and every later pass, the emitter and
        LLVM saw the tree (10,000 LLVM instructions for one condition,
        written twice). Expressions never fail and have no effects, so
        evaluating a shared one once, just before, changes nothing."""
        seen: dict = {}
        todo = [e]
        while todo:
            x = todo.pop()
            k = id(x)
            if k in seen:
                seen[k] += 1
                continue
            seen[k] = 1
            todo.extend(K.children(x))
        done: dict = {}

        def bind(x: K.Expr) -> K.Expr:
            k = id(x)
            got = done.get(k)
            if got is None:
                got = map_expr(x, bind)
                if seen[k] > 1:
                    got = self.let(hint, got)
                done[k] = got
            return got
        try:
            return self.let(hint, bind(e))
        finally:
            bind = None                 # a recursive closure is a reference cycle

    @contextmanager
    def block(self):
        """Collects the statements emitted inside into `holder[0]` as a Block."""
        holder: list = [None]
        self.stack.append([])
        try:
            yield holder
        finally:
            holder[0] = K.Block(tuple(self.stack.pop()))

    def fail(self, kind: str, text: str, loc=None, args=()) -> K.Fail:
        if loc is not None:
            text = f"{text} (at {loc})"
        return K.Fail(kind, self.module.message(text.replace("{", "{{").replace("}", "}}")
                                                if not args else text), tuple(args))

    def check(self, cond: K.Expr, kind: str, text: str, loc=None, args=()) -> None:
        """Emits `if not cond: fail`."""
        if isinstance(cond, K.KConst):
            if cond.value:
                return
        self.emit(K.If(S.lnot(cond), K.Block((self.fail(kind, text, loc, args),))))

    @contextmanager
    def loop_facts(self, i: K.KVar, lo: K.Expr, hi: K.Expr):
        """Inside a loop over [lo, hi): i is in range, and hi >= 1 when lo is 0."""
        f = self.facts
        f.ranges[i.name] = (lo, hi)
        saved = dict(f.at_least)
        if isinstance(hi, K.KVar) and isinstance(lo, K.KConst) and lo.value == 0:
            for name in f.positive_names(hi):
                f.at_least[name] = max(1, f.at_least.get(name, 0))
        try:
            yield
        finally:
            f.at_least = saved

    def for_range(self, hint: str, lo: K.Expr, hi: K.Expr, body: Callable[[K.KVar], None],
                  unroll: int = 0, simd: bool = True, max_trip: int = 0):
        i = self.var(hint, I64)
        with self.block() as blk, self.loop_facts(i, lo, hi):
            body(i)
        self.emit(K.For(i, lo, hi, blk[0], unroll, simd=simd, max_trip=max_trip))

    def par_for(self, hint: str, n: K.Expr, body: Callable[[K.KVar], None],
                space: Optional[K.Expr] = None):
        """A loop whose iterations are independent: a ParFor at host level
        (inline below a size threshold: parallel_if), else a For. `space`:
        the iterations are tiles that together cover `space` elements."""
        i = self.var(hint, I64)
        zero = S.const(0, I64)
        if self.in_par or not self.options.parallel:
            with self.block() as blk, self.loop_facts(i, zero, n):
                body(i)
            self.emit(K.For(i, zero, n, blk[0], independent=True))
            return
        if not self.options.versions:
            with self.in_parallel(), self.block() as blk, self.loop_facts(i, zero, n):
                body(i)
            self.emit(K.ParFor(i, n, blk[0], self.parallel_if(i, n, blk[0], space)))
            return

        def lower(mode: str, conds: list) -> tuple[K.Block, list]:
            with self.in_parallel(), self.versioning(mode, conds, (i, zero, n)) as version, \
                    self.block() as blk, self.loop_facts(i, zero, n):
                body(i)
            return blk[0], version["conds"]

        checked, conds = lower("collect", [])
        cond = self.parallel_if(i, n, checked, space)
        if not conds or any(never_holds(c) for c in conds):   # no copy that never runs
            self.emit(K.ParFor(i, n, checked, cond))
            return
        # Loop versioning: the index bounds that could not be proved are
        # loop-invariant expressions; test them once, and run a copy of the
        # loop without those checks when they hold (a check is an early exit,
        # which stops LLVM from vectorizing the loop).
        fast, _ = lower("assume", conds)
        ok = conds[0]
        for c in conds[1:]:
            ok = S.land(ok, c)
        ok = self.let_shared("inb", ok)
        self.emit(K.If(ok, K.Block((K.ParFor(i, n, fast, cond),)),
                       K.Block((K.ParFor(i, n, checked, cond),))))

    def parallel_if(self, i: K.KVar, n: K.Expr, body: K.Block,
                    space: Optional[K.Expr] = None) -> Optional[K.Expr]:
        """When a ParFor over `i` in 0..n with `body` is worth waking the
        threads: from par_min iterations for a loop-free body, from par_min
        units of work for a body that loops (codegen/par_work.py; None:
        always, when its loops' counts are not known before it; tiles count
        the elements of their `space`). A GPU launches every ParFor, so it
        gets no guard there."""
        pm = self.options.par_min
        if space is None and not has_loop(body):
            return S.b("ge", n, S.const(pm, I64))
        if self.options.target.gpu:
            return None
        products = par_work.loop_products(body, i, tiled=space is not None)
        if products is None:
            return None
        return par_work.work_guard(n if space is None else space, products,
                                   max(1, pm // par_work.ELEMENTS_PER_UNIT), self.let)

    # -- state the rules change (through these, never by hand) -------------------
    @contextmanager
    def in_parallel(self):
        """Lowering a parallel loop's body: SOACs inside lower sequentially."""
        saved = self.in_par
        self.in_par = True
        try:
            yield
        finally:
            self.in_par = saved

    @contextmanager
    def versioning(self, mode: str, conds: list, loop: tuple):
        """Loop versioning of the bounds checks of `loop` (i, lo, hi): index
        checks inside collect their loop-invariant conditions ("collect") or
        leave out those in `conds` ("assume"); yields the record that
        lower_arrays.norm_index reads and fills."""
        outer = self.version
        self.version = {"mode": mode, "conds": conds, "k": 0, "start": len(self.created),
                        "loop": loop}
        try:
            yield self.version
        finally:
            self.version = outer

    @contextmanager
    def checks_dropped_on(self, exc_type):
        """When exc_type escapes, the code lowered inside is dropped: so are
        the bounds conditions it collected for loop versioning."""
        v = self.version
        saved = (len(v["conds"]), v["k"]) if v is not None else None
        try:
            yield
        except exc_type:
            if v is not None:
                del v["conds"][saved[0]:]
                v["k"] = saved[1]
            raise

    @contextmanager
    def reassociating(self, reassoc: bool):
        """Operators lowered inside may (or may not) be reassociated."""
        saved = self.reassoc
        self.reassoc = reassoc
        try:
            yield
        finally:
            self.reassoc = saved

    @contextmanager
    def walk_state_kept(self, scope: bool = False):
        """Keeps the walk's state (live names, the rest of the body, use counts)
        around lowering that rebinds it (open_body for the functions of a nest),
        and with `scope` a Scope of its own that is popped again."""
        saved = (self.live, self.rest, self.body_counts)
        if scope:
            self.scopes.append(Scope(frame=self.frame))
        try:
            yield
        finally:
            if scope:
                self.scopes.pop()
            self.live, self.rest, self.body_counts = saved

    @contextmanager
    def emitting_into(self, stms: list):
        """Statements emitted inside go to the end of `stms` (a branch being built)."""
        self.stack.append(stms)
        try:
            yield
        finally:
            self.stack.pop()

    def emitted(self) -> list:
        """The statements emitted so far into the innermost block (to look
        back at, never to change)."""
        return self.stack[-1]

    # -- memory -----------------------------------------------------------------
    def own(self, base: K.KVar) -> None:
        """The current scope frees `base` when it ends (unless it hands it over)."""
        self.scopes[-1].owned.append(base)

    def disown(self, base: K.KVar) -> None:
        """The current scope no longer frees `base`: a loop, an accumulator or
        the caller has taken it over."""
        self.scopes[-1].owned = [b for b in self.scopes[-1].owned if b.name != base.name]

    @contextmanager
    def temp_scope(self, free: bool = False, owned=(), carried: frozenset = frozenset()):
        """A Scope of the current frame for an algorithm's temporaries (owning
        `owned` from the start), popped on exit; with `free` what it owns then
        is freed, else the caller has freed or handed over what it made.
        `carried`: a loop iteration's scope, the names of the loop's parameters."""
        sc = Scope(owned=list(owned), frame=self.frame, carried=carried)
        self.scopes.append(sc)
        try:
            yield sc
            if free:
                for b in sc.owned:
                    self.emit(K.Free(b))
        finally:
            self.scopes.pop()

    @contextmanager
    def ownership_restored_on(self, exc_type):
        """When exc_type escapes (a lowering to be tried again another way),
        the current scope owns again what it did, and the live names are back."""
        sc = self.scopes[-1]
        saved = (list(sc.owned), self.live)
        try:
            yield
        except exc_type:
            sc.owned, self.live = list(saved[0]), saved[1]
            raise

    @contextmanager
    def allocations_dropped(self):
        """The current scope forgets what is allocated inside (code lowered to
        be looked at and never emitted)."""
        owned = self.scopes[-1].owned
        held = len(owned)
        try:
            yield
        finally:
            del owned[held:]

    def alloc(self, hint: str, elem: ScalarType, shape: tuple) -> Arr:
        """A fresh array owned by the current scope."""
        count = self.let("cnt", shape_size(shape))
        p = self.var(hint, K.Ptr(elem))
        self.emit(K.Alloc(p, count))
        self.own(p)
        return Arr(p, p, tuple(shape), elem, frozenset({p.name}))

    def count(self, a: Arr) -> K.Expr:
        return shape_size(a.shape)

    def row_size(self, a: Arr) -> K.Expr:
        return shape_size(a.shape[1:])

    def copy_arr(self, a: Value, hint: str = "copy") -> Arr:
        """A fresh, owned, contiguous copy of an array value."""
        if isinstance(a, Delayed):
            return self.materialise(a)
        out = self.alloc(hint, a.elem, tuple(self.let("d", d) for d in a.shape))
        self.emit(K.CopyMem(out.data, a.data, self.count(a)))
        return out

    def iteration_scope(self) -> Optional[Scope]:
        """The scope of the loop iteration whose body the current statement
        is directly in (lower_control's loop: the iteration's scope, then
        the body's), else None."""
        if len(self.scopes) < 2:
            return None
        it = self.scopes[-2]
        return it if it.carried and it.frame == self.frame else None

    def live_after_here(self) -> frozenset:
        """The names that may be read after the current statement; a loop
        parameter of the loop whose body the statement is directly in counts
        only where that body reads it later (the next iteration rebinds it)."""
        it = self.iteration_scope()
        return self.live if it is None else self.live_in_body | (self.live - it.carried)

    def owned_here(self, base: K.Expr) -> Optional[Scope]:
        """The scope of the current lambda frame that owns `base`, if any."""
        if not isinstance(base, K.KVar):
            return None
        for sc in reversed(self.scopes):
            if sc.frame != self.frame:
                return None
            if any(b.name == base.name for b in sc.owned):
                return sc
        return None

    # -- bodies -----------------------------------------------------------------
    def lower_body(self, body: ir.Body, env: dict, outer_live: frozenset = frozenset(),
                   new_frame: bool = False) -> list:
        """Lowers a body in a scope of its own; returns [(value, owned)] for
        its results (owned arrays now belong to the caller's scope)."""
        saved_frame = self.frame
        if new_frame:
            self.counter += 1
            self.frame = self.counter
        self.scopes.append(Scope(frame=self.frame))
        try:
            env = dict(env)
            self.bind_stms(body, len(body.stms), env, outer_live)
            results = [self.atom(a, env) for a in body.result]
            return self.finish_scope(results)
        finally:
            self.scopes.pop()
            self.frame = saved_frame

    def bind_stms(self, body: ir.Body, upto: int, env: dict, outer_live: frozenset) -> None:
        """Lowers body.stms[:upto] into the current scope, binding into env."""
        lives = live_after(body)
        counts = use_counts(body)
        for k, stm in enumerate(body.stms[:upto]):
            self.live = lives[k] | outer_live
            self.live_in_body = lives[k]
            self.body_counts = counts
            self.rest = body.stms[k + 1:]
            vals = self.lower_exp(stm, env)
            if len(vals) != len(stm.pat):
                raise InternalCompilerError(f"lowering {type(stm.exp).__name__} gave "
                                            f"{len(vals)} values for {len(stm.pat)}")
            for v, val in zip(stm.pat, vals):
                env[v.name] = val

    @contextmanager
    def open_body(self, body: ir.Body, upto: int, env: dict, new_frame: bool = True):
        """Lowers the first `upto` statements of a body in a scope of its own
        and yields their environment; the scope's memory is freed on exit
        (the caller lowers the rest itself, e.g. per element of a tile)."""
        saved_frame = self.frame
        if new_frame:
            self.counter += 1
            self.frame = self.counter
        self.scopes.append(Scope(frame=self.frame))
        try:
            inner = dict(env)
            self.bind_stms(body, upto, inner, self.live)
            yield inner
            self.finish_scope([])
        finally:
            self.scopes.pop()
            self.frame = saved_frame

    def finish_scope(self, results: list) -> list:
        """Hands over the results, copying any that share memory the scope
        owns without owning it whole; frees the rest of the scope's memory."""
        sc = self.scopes[-1]
        out = []
        given: set = set()
        for r in results:
            if isinstance(r, Delayed):
                r = self.materialise(r)
            if not isinstance(r, Arr):
                out.append((r, False))
                continue
            owned_names = {b.name for b in sc.owned}
            base_name = r.base.name if isinstance(r.base, K.KVar) else None
            if base_name in owned_names and base_name not in given:
                given.add(base_name)
                out.append((r, True))
            elif r.aliases & (owned_names | given):
                c = self.copy_arr(r)
                self.disown(c.base)
                given.add(c.base.name)
                out.append((c, True))
            else:
                out.append((r, False))
        for b in sc.owned:
            if b.name not in given:
                self.emit(K.Free(b))
        sc.owned = []
        return out

    def adopt(self, results: list) -> list:
        """Registers owned results of a nested body in the current scope."""
        vals = []
        for r, owned in results:
            if owned:
                self.own(r.base)
            vals.append(r)
        return vals

    def apply(self, lam_params, body: ir.Body, env: dict, args: list,
              new_frame: bool = False) -> list:
        """Lowers a lambda or function body with its params bound to args."""
        inner = dict(env)
        for p, a in zip(lam_params, args):
            inner[p.name] = a
        return self.lower_body(body, inner, self.live, new_frame=new_frame)

    def apply_discard(self, lam: ir.Lambda, env: dict, args: list) -> list:
        """Applies a lambda whose array results the caller only reads before
        the next `release`: returns (values, to_free)."""
        res = self.apply(lam.params, lam.body, env, args)
        vals = [r for r, _ in res]
        to_free = [r.base for r, owned in res if owned]
        return vals, to_free

    # -- atoms and expressions ---------------------------------------------------
    def atom(self, a, env: dict) -> Value:
        if isinstance(a, ir.Const):
            return S.const(a.value, a.type)
        try:
            return env[a.name]
        except KeyError:
            raise InternalCompilerError(f"lowering: {a.name} is not bound") from None

    def scalar(self, a, env) -> K.Expr:
        v = self.atom(a, env)
        if isinstance(v, (Arr, Delayed)):
            raise InternalCompilerError(f"lowering: {a} is an array, expected a scalar")
        return v

    def array(self, a, env) -> Value:
        v = self.atom(a, env)
        if not isinstance(v, (Arr, Delayed, ColumnsOf)):
            raise InternalCompilerError(f"lowering: {a} is a scalar, expected an array")
        return v

    def materialise(self, d: Delayed) -> Arr:
        """Computes a delayed array into memory (all results of its group)."""
        out = self.alloc("mat", d.elem, (self.let("n", d.group.n),))

        def body(i):
            vals = d.group.compute(i)
            self.emit(K.Store(out.data, i, vals[d.k]))
        self.par_for("i", d.group.n, body)
        return out

    def element(self, v: Value, i: K.Expr, cache: dict | None = None) -> Value:
        """Element i of an array value: a scalar (Load) or a row view."""
        if isinstance(v, Delayed):
            key = id(v.group)
            if cache is not None and key in cache:
                return cache[key][v.k]
            vals = v.group.compute(i)
            if cache is not None:
                cache[key] = vals
            return vals[v.k]
        if v.rank == 1:
            return self.let("e", K.Load(v.data, i))
        rs = self.row_size(v)
        return Arr(v.base, self.let("row", K.PtrAdd(v.data, S.b("mul", i, rs))),
                   v.shape[1:], v.elem, v.aliases)

    def lower_exp(self, stm: ir.Let, env: dict) -> list:
        """The values of the first rule that does not decline (families_for)."""
        e = stm.exp
        for rule in self.rules.candidates(type(e), families_for(self.options.target,
                                                                  self.in_par)):
            done = rule(self, e, env, stm)
            if done is not None:
                return done
        raise InternalCompilerError(f"lowering: no rule for {type(e).__name__}")


# ---------------------------------------------------------------------------
# Helpers of the rules


def never_holds(c: K.Expr) -> bool:
    """Whether a versioning condition is false whatever the inputs: a conjunct
    compares constants and fails (an index such as i - 1 at i = 0, whose
    check sits under a branch the collection does not see). The unchecked
    copy of the loop would never run: LocVolCalib's was half of its IR."""
    if isinstance(c, K.Bin) and c.op == "and":
        return never_holds(c.x) or never_holds(c.y)
    if isinstance(c, K.KConst):
        return c.value is False
    if (isinstance(c, K.Bin) and c.op in K.CMP_PRIMS and isinstance(c.x, K.KConst)
            and isinstance(c.y, K.KConst)):
        x, y = c.x.value, c.y.value
        return not {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y,
                    "gt": x > y, "ge": x >= y}[c.op]
    return False


def shape_size(shape) -> K.Expr:
    """The element count of a shape (i64 expressions), without `1 *`."""
    out: K.Expr = S.const(1, I64)
    for d in shape:
        out = d if (isinstance(out, K.KConst) and out.value == 1) else S.b("mul", out, d)
    return out
