"""Simplification: copy propagation, constant folding, dead code elimination.

Each round is a forward rewriting walk followed by a backward liveness walk;
rounds repeat until the function no longer changes (at most _MAX_ROUNDS).

Forward (in evaluation order, with a scoped substitution and the dominance
facts of analysis.Facts):
- copy propagation: `let y = a` (AtomExp) is dropped and y replaced by a;
- constant folding of BinOp/UnOp/Convert/Select on constants by running the
  reference interpreter's own handlers (numpy dtypes, so integers wrap as at
  run time). Nothing is folded that raises (integer division or modulo by
  zero, negative integer powers), nor what numpy leaves undefined (shifts by
  a negative or too large amount, float to int conversion out of range);
- algebraic identities that hold bit for bit (none on floats, where -0.0
  and NaN break them): on integers x+0, x-0, x*1, x//1, x|0, x^0, x<<0,
  x>>0; x==x, x<=x, x<x ... on integers and bools; `and`/`or` with a
  constant; select(c, x, x), select(c, true, false); a conversion to the
  operand's own type; `x >= 0` / `x < 0` for x known non-negative (sizes,
  unsigned values, for-loop indices);
- `size(xs, d)` is replaced by a known length of xs (analysis.Facts), so the
  widths of SOACs over the same array become the same name; `size(m, d)`
  of a map's result whose rows' shape is known (row_dims) by that row
  dimension (a select on the width when the empty map's differs), so the
  Size is no longer a use of m that blocks fusing m into its consumer;
- facts from assertions and branches: after `assert(c)` c is true (and so
  is the comparison c names; both parts of an `and`); when c is `x == y` on
  integers or bools, y is replaced by x; `x >= 0` makes x non-negative;
  `assert(true)` is dropped; in the then (else) branch of `if c`, c is true
  (false), with the same consequences in the then branch;
- a map whose function only reshapes its row (to a shape that does not
  depend on the row) becomes one reshape of the whole array;
- `if` on a constant condition is replaced by the branch taken; an `if` whose
  branches compute nothing becomes selects; a for loop with a constant bound
  <= 0 becomes its initial values (arrays copied, a loop result is fresh).

Backward (dead code elimination): a Let whose results are all unused is
dropped when it cannot raise (analysis.may_raise, with the facts that held
before it: SOACs qualify when their lambda cannot raise and every input
provably has the width's length). Unused results of a Map or an If are
removed from the statement (the Map keeps at least one).
"""
from __future__ import annotations

import math
import warnings
from collections import ChainMap
from functools import partial

import numpy as np

from pyshark.core import interp as _interp
from pyshark.core import ir
from pyshark.core.empty_shapes import keep_empty_dims, keep_row_dims
from pyshark.core.typeof import exp_types
from pyshark.core.types import BOOL, I64, ArrayType

from .analysis import Facts, exp_key, may_raise, same_atom
from .rewrite import map_exp, map_functions, uses

_MAX_ROUNDS = 6
TRUE = ir.Const(True, BOOL)
ZERO = ir.Const(0, I64)
FALSE = ir.Const(False, BOOL)


def simplify(program: ir.Program) -> ir.Program:
    """The program with every FunDef simplified (see the module docstring)."""
    return map_functions(program, simplify_fun)


def simplify_fun(fun: ir.FunDef) -> ir.FunDef:
    body = simplify_body(fun.body)
    if body is fun.body:
        return fun
    return ir.FunDef(fun.name, fun.params, fun.ret, body, fun.loc)


def simplify_body(body: ir.Body) -> ir.Body:
    """body simplified on its own (names bound outside it are left as they are);
    body itself when nothing changes."""
    orig = body
    for _ in range(_MAX_ROUNDS):
        s = _Simplifier()
        new = s.dce(s.body(body, _Env()))
        if new == body:
            break
        body = new
    return orig if body == orig else body


# ---------------------------------------------------------------------------
# Constant folding with the interpreter's handlers

_IT = _interp.Interpreter(ir.Program({}, {}))


def _fits(t, v: float) -> bool:
    lo, hi = ((-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed
              else (0, (1 << t.bits) - 1))
    return math.isfinite(v) and lo <= math.trunc(v) <= hi


def fold_const(e: ir.Exp):
    """The Const that e (whose operands are all constants) evaluates to, as the
    interpreter computes it; None when e would raise or is not foldable."""
    cls = e.__class__
    if cls is ir.BinOp and e.op in ("shl", "shr"):
        if not 0 <= e.y.value < e.x.type.bits:
            return None
    if cls is ir.Convert and e.x.type.is_float and e.to.is_int and not _fits(e.to, e.x.value):
        return None
    (t,) = exp_types(e)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (v,) = _interp._DISPATCH[cls](_IT, e, {}, None)
    except Exception:       # noqa: BLE001 -- raises at run time: leave it there
        return None
    if not isinstance(v, np.generic) or v.dtype != t.dtype:
        return None
    return ir.Const(v.item(), t)


# ---------------------------------------------------------------------------
# The forward walk


def _same(x):
    return x


class _Env:
    """Scoped state of the forward walk: substitution, facts, true conditions.
    (The facts resolve atoms through the substitution itself, not through a
    bound method of the _Env: that would make each _Env a reference cycle.)"""

    def __init__(self, parent: "_Env | None" = None, exp: ir.Exp | None = None):
        if parent is None:
            self.sub: ChainMap = ChainMap()
            self.truths: ChainMap = ChainMap()
            self.defs: ChainMap = ChainMap()
            self.facts = Facts(resolve=partial(_resolve, self.sub))
        else:
            self.sub = parent.sub.new_child()
            self.truths = parent.truths.new_child()
            self.defs = parent.defs.new_child()
            resolve = partial(_resolve, self.sub)
            self.facts = (parent.facts.for_body(exp, resolve) if exp is not None
                          else parent.facts.child(resolve))

    def child(self, exp: ir.Exp | None = None) -> "_Env":
        return _Env(self, exp)

    def atom(self, a: ir.Atom) -> ir.Atom:
        return _resolve(self.sub, a)


def _resolve(sub: ChainMap, a: ir.Atom) -> ir.Atom:
    """`a` through the substitution `sub`."""
    while a.__class__ is ir.Var:
        r = sub.get(a.name)
        if r is None:
            return a
        a = r
    return a


class _Simplifier:
    def __init__(self):
        # id(Let) -> (Let, cannot raise); the Let is kept so ids are not reused.
        self.safe: dict[int, tuple] = {}

    # -- bodies and statements ---------------------------------------------
    def body(self, b: ir.Body, env: _Env) -> ir.Body:
        out: list[ir.Let] = []
        for stm in b.stms:
            self.stm(stm, env, out)
        return ir.Body(tuple(out), tuple(env.atom(a) for a in b.result))

    def emit(self, stm: ir.Let, env: _Env, out: list) -> None:
        e = stm.exp
        self.safe[id(stm)] = (stm, not may_raise(e, env.facts))
        out.append(stm)
        env.facts.record(stm)
        cls = e.__class__
        if cls is ir.BinOp or cls is ir.UnOp:
            env.defs[stm.pat[0].name] = e
        elif cls is ir.Map and e.row_dims is not None:
            dims = iter(zip(e.row_dims, e.empty_dims or (ZERO,) * len(e.row_dims)))
            for v in stm.pat:
                if isinstance(v.type, ArrayType):
                    env.defs[v.name] = (e.width, [next(dims) for _ in range(v.type.rank - 1)])
        elif cls is ir.Assert:
            self.assume(e.cond, env)

    def stm(self, stm: ir.Let, env: _Env, out: list) -> None:
        e = stm.exp
        cls = e.__class__
        if cls is ir.If:
            return self.if_(stm, env, out)
        if cls is ir.Loop and e.form.__class__ is ir.ForLoop:
            n = env.atom(e.form.bound)
            if n.__class__ is ir.Const and n.value <= 0:
                for v, a in zip(stm.pat, e.inits):
                    a = env.atom(a)
                    if isinstance(v.type, ArrayType):
                        self.emit(ir.Let((v,), ir.Copy(a), stm.loc), env, out)
                    else:
                        env.sub[v.name] = a
                return
        e1 = map_exp(e, env.atom, _same)         # operands first: the facts for the
        e2 = map_exp(e1, _same, lambda b: self.body(b, env.child(e1)))   # nested bodies
        r = self.fold(e2, env)
        if r is None and cls is ir.Size:
            r = self.size_of_map(stm, e2, env, out)
        if r is None and cls is ir.Map:
            r = self.map_of_reshape(stm, e2, env, out)
        if r is None:
            self.emit(stm if e2 is e else ir.Let(stm.pat, e2, stm.loc), env, out)
        elif r == ():
            pass                            # dropped (assert(true))
        elif isinstance(r, tuple):          # aliases of the pattern
            for v, a in zip(stm.pat, r):
                env.sub[v.name] = a
        else:
            self.emit(ir.Let(stm.pat, r, stm.loc), env, out)

    def if_(self, stm: ir.Let, env: _Env, out: list) -> None:
        e: ir.If = stm.exp
        c = env.atom(e.cond)
        if c.__class__ is ir.Const:
            taken = e.then_body if c.value else e.else_body
            for s in taken.stms:
                self.stm(s, env, out)
            for v, a in zip(stm.pat, taken.result):
                env.sub[v.name] = env.atom(a)
            return
        then_env, else_env = env.child(), env.child()
        self.assume(c, then_env)
        else_env.sub[c.name] = FALSE
        tb = self.body(e.then_body, then_env)
        eb = self.body(e.else_body, else_env)
        if not tb.stms and not eb.stms:
            if all(same_atom(x, y) for x, y in zip(tb.result, eb.result)):
                for v, a in zip(stm.pat, tb.result):
                    env.sub[v.name] = a
                return
            if all(not isinstance(v.type, ArrayType) for v in stm.pat):
                for v, x, y in zip(stm.pat, tb.result, eb.result):
                    sel = ir.Select(c, x, y)
                    r = self.fold(sel, env)
                    if isinstance(r, tuple):
                        env.sub[v.name] = r[0]
                    else:
                        self.emit(ir.Let((v,), r or sel, stm.loc), env, out)
                return
        self.emit(ir.Let(stm.pat, ir.If(c, tb, eb, e.ret), stm.loc), env, out)

    def size_of_map(self, stm: ir.Let, e: ir.Size, env: _Env, out: list):
        """`size(m, d)`, d >= 1, of a map result m whose rows' shape is known
        (row_dims): the row's dimension, or the empty map's when the width
        is 0 (empty_dims; None is 0). The map ran without raising, so its
        rows had that shape. A fusion guard counts the Size as a use of m:
        without it sgemm's `scale(mult(a, b))` stayed two passes."""
        d = env.defs.get(e.arr.name)
        if d.__class__ is not tuple or e.dim < 1:
            return None
        width, dims = d
        row, empty = (env.atom(x) for x in dims[e.dim - 1])
        if same_atom(row, empty):
            return (row,)
        pos = ir.Var(f"{stm.pat[0].name}_rows", BOOL)
        self.emit(ir.Let((pos,), ir.BinOp("gt", env.atom(width), ZERO), stm.loc), env, out)
        return ir.Select(pos, row, empty)

    def map_of_reshape(self, stm: ir.Let, e: ir.Map, env: _Env, out: list):
        """`map(\\row -> reshape(shape, row), xs)`, shape free of the row, is
        `reshape((w, *shape), xs)`: one reshape of the whole array, which no
        backend copies, where the map copied row by row (on the GPU a
        ParFor of whole-row copies: one work-item per frame, 38 ms for
        crystal's two 1000^2 frames on the H100; its tabulate of
        tabulate_2d is such a map once flatten distributes it). The same
        outcome: for w > 0 the products agree exactly when each row's does,
        and either raises ShapeError; for w = 0 the map ran no row and gives
        its empty dimensions, as the reshape of an empty array to
        (0, *empty_dims) does (selects on w > 0, as size_of_map makes)."""
        lam = e.lam
        if len(e.arrs) != 1 or len(lam.params) != 1 or len(lam.body.stms) != 1:
            return None
        let = lam.body.stms[0]
        x = let.exp
        if (x.__class__ is not ir.Reshape or x.arr.name != lam.params[0].name
                or len(let.pat) != 1 or len(lam.body.result) != 1
                or lam.body.result[0].__class__ is not ir.Var
                or lam.body.result[0].name != let.pat[0].name):
            return None
        empty = e.empty_dims or (ZERO,) * len(x.shape)
        w = env.atom(e.width)
        pos = None
        dims = []
        for d, z in zip(x.shape, empty):
            d, z = env.atom(d), env.atom(z)
            if same_atom(d, z) or (w.__class__ is ir.Const and w.value > 0):
                dims.append(d)
                continue
            if pos is None:
                pos = ir.Var(f"{stm.pat[0].name}_rows", BOOL)
                self.emit(ir.Let((pos,), ir.BinOp("gt", w, ZERO), stm.loc), env, out)
            sel = ir.Var(f"{stm.pat[0].name}_d{len(dims)}", I64)
            self.emit(ir.Let((sel,), ir.Select(pos, d, z), stm.loc), env, out)
            dims.append(sel)
        return ir.Reshape((w, *dims), e.arrs[0])

    # -- facts ---------------------------------------------------------------
    def assume(self, c: ir.Atom, env: _Env) -> None:
        """Records that the bool atom c is true from here on (in env's scope)."""
        if c.__class__ is not ir.Var:
            return
        env.sub[c.name] = TRUE
        d = env.defs.get(c.name)
        if d is None or d.__class__ is not ir.BinOp:
            return
        env.truths[exp_key(d)] = True
        x, y, op = env.atom(d.x), env.atom(d.y), d.op
        if op == "land":
            self.assume(x, env)
            self.assume(y, env)
        elif op == "eq" and not x.type.is_float:
            if y.__class__ is ir.Var and not same_atom(x, y):
                env.sub[y.name] = x
            elif x.__class__ is ir.Var and y.__class__ is ir.Const:
                env.sub[x.name] = y
        elif x.type.is_int:
            zero_lo = y.__class__ is ir.Const and (op == "ge" and y.value >= 0
                                                   or op == "gt" and y.value >= -1)
            zero_hi = x.__class__ is ir.Const and (op == "le" and x.value >= 0
                                                   or op == "lt" and x.value >= -1)
            if zero_lo and x.__class__ is ir.Var:
                env.facts.set_nonneg(x.name)
            elif zero_hi and y.__class__ is ir.Var:
                env.facts.set_nonneg(y.name)

    # -- folding -------------------------------------------------------------
    def fold(self, e: ir.Exp, env: _Env):
        """None (keep e), () (drop the statement), a tuple of atoms (the
        pattern's values) or a simpler expression."""
        cls = e.__class__
        if cls is ir.AtomExp:
            return (e.atom,)
        if cls is ir.BinOp:
            return self.fold_binop(e, env)
        if cls is ir.UnOp or cls is ir.Convert:
            if e.x.__class__ is ir.Const:
                c = fold_const(e)
                return None if c is None else (c,)
            if cls is ir.Convert and e.to == e.x.type:
                return (e.x,)
            return None
        if cls is ir.Select:
            if e.cond.__class__ is ir.Const:
                return (e.x if e.cond.value else e.y,)
            if same_atom(e.x, e.y):
                return (e.x,)
            if e.x.type == BOOL and e.x.__class__ is ir.Const and e.y.__class__ is ir.Const:
                return (e.cond,) if e.x.value else ir.UnOp("not", e.cond)
            return None
        if cls is ir.Size:
            n = env.facts.length(e.arr.name, e.dim)
            return None if n is None else (n,)
        if cls is ir.Assert:
            if e.cond.__class__ is ir.Const and e.cond.value:
                return ()
            return None
        return None

    def fold_binop(self, e: ir.BinOp, env: _Env):
        x, y, op = e.x, e.y, e.op
        xc, yc = x.__class__ is ir.Const, y.__class__ is ir.Const
        if xc and yc:
            c = fold_const(e)
            return None if c is None else (c,)
        t = x.type
        if op in ir.COMPARISONS:
            if same_atom(x, y) and not t.is_float:
                return (ir.Const(op in ("eq", "le", "ge"), BOOL),)
            if env.truths.get(exp_key(e)):
                return (TRUE,)
            if t.is_int:
                facts = env.facts
                if yc and y.value == 0 and facts.is_nonneg(x) and op in ("ge", "lt"):
                    return (ir.Const(op == "ge", BOOL),)
                if xc and x.value == 0 and facts.is_nonneg(y) and op in ("le", "gt"):
                    return (ir.Const(op == "le", BOOL),)
            return None
        if t.is_int:
            if op in ("add", "bor", "bxor") and yc and y.value == 0 \
                    or op in ("sub", "shl", "shr") and yc and y.value == 0 \
                    or op in ("mul", "floordiv") and yc and y.value == 1:
                return (x,)
            if op in ("add", "bor", "bxor") and xc and x.value == 0 \
                    or op == "mul" and xc and x.value == 1:
                return (y,)
        elif t.is_bool and op in ("land", "lor"):
            for a, b in ((x, y), (y, x)):
                if a.__class__ is ir.Const:
                    neutral = a.value == (op == "land")
                    return (b,) if neutral else (a,)
        return None

    # -- dead code -----------------------------------------------------------
    def is_safe(self, stm: ir.Let) -> bool:
        hit = self.safe.get(id(stm))
        return hit is not None and hit[0] is stm and hit[1]

    def dce(self, b: ir.Body) -> ir.Body:
        """b without its dead statements; self.refs is then every name the
        pruned b references (nested bodies included: prune gathers them as
        it prunes, so no body is walked again for each body around it)."""
        live = uses(b.result)
        out = []
        for stm in reversed(b.stms):
            if not any(v.name in live for v in stm.pat) and self.is_safe(stm):
                continue
            stm = self.prune(stm, live)
            live |= self.refs
            out.append(stm)
        out.reverse()
        self.refs = live
        return ir.Body(tuple(out), b.result)

    def prune(self, stm: ir.Let, live: set) -> ir.Let:
        """stm without its unused Map/If results, its nested bodies pruned;
        self.refs is then every name its expression references."""
        e, pat = stm.exp, stm.pat
        keep = [i for i, v in enumerate(pat) if v.name in live]
        if e.__class__ is ir.Map and len(keep) < len(pat):
            keep = keep or [0]
            lam = e.lam
            body = ir.Body(lam.body.stms, tuple(lam.body.result[i] for i in keep))
            lam = ir.Lambda(lam.params, body, tuple(lam.ret[i] for i in keep))
            e = ir.Map(e.width, lam, e.arrs, keep_empty_dims(e, keep), keep_row_dims(e, keep))
            pat = tuple(pat[i] for i in keep)
        elif e.__class__ is ir.If and len(keep) < len(pat):
            def sub(b):
                return ir.Body(b.stms, tuple(b.result[i] for i in keep))
            e = ir.If(e.cond, sub(e.then_body), sub(e.else_body),
                      tuple(e.ret[i] for i in keep))
            pat = tuple(pat[i] for i in keep)
        refs: set = set()

        def atom(a):
            if a.__class__ is ir.Var:
                refs.add(a.name)
            return a

        def body(b):
            b = self.dce(b)
            refs.update(self.refs)
            return b
        e = map_exp(e, atom, body)
        self.refs = refs
        if e is stm.exp and pat is stm.pat:
            return stm
        return ir.Let(pat, e, stm.loc)
