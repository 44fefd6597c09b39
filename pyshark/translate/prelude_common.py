"""Helpers shared by the prelude lowerings: argument checks with located
errors, SOAC lambdas built from FunVs, sizes and length checks.

Every lowering receives a `PCall` (the call being lowered) so that an error
can point at the offending argument and every emitted Let carries the call's
location (run-time errors then point at the source).
"""
from __future__ import annotations

from typing import Optional, Sequence

import libcst as cst

from ..core import ir
from ..core.types import BOOL, I64, SArray, SScalar, SType, flatten_stype
from .coerce import coerce, harden
from .ops import convert
from .values import (ArrayV, FunV, ScalarV, TupleV, TypeArg, Value, flatten_value, new_buffer,
                     or_py, py_flags, rebuild_value, type_name, value_stype, widen_py)


def display_name(qualname: str) -> str:
    """How a prelude function is named in messages: ps.map, len."""
    if qualname.startswith("builtins."):
        return qualname[len("builtins."):]
    return "ps." + qualname.rsplit(".", 1)[-1]


def describe(v) -> str:
    """A value's kind for messages ('ps.f32', 'an int constant', 'a function')."""
    if isinstance(v, FunV):
        return "a function"
    if isinstance(v, TypeArg):
        return f"the type {type_name(v.stype)}"
    if isinstance(v, ScalarV) and v.weak:
        return {"bool": "a bool constant", "i64": "an int constant"}.get(v.type.value, "a float constant")
    if isinstance(v, (ScalarV, TupleV, ArrayV)):
        return type_name(value_stype(v))
    return type(v).__name__


ORDINAL = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}


class PCall:
    """One prelude call being lowered: its context, arguments and CST node."""

    def __init__(self, ctx, qualname: str, args: list, node: cst.Call):
        self.ctx = ctx
        self.qualname = qualname
        self.name = display_name(qualname)
        self.args = list(args)
        self.node = node
        self.src = ctx.src
        self.loc = ctx.loc(node)

    # -- locating -------------------------------------------------------
    def arg_node(self, i: int) -> cst.CSTNode:
        try:
            return self.node.args[i].value
        except (AttributeError, IndexError):
            return self.node

    def error(self, i: Optional[int], msg: str, hint: Optional[str] = None):
        """A CompileError at argument i (at the call when i is None)."""
        return self.src.error(self.node if i is None else self.arg_node(i), msg, hint)

    # -- emitting -------------------------------------------------------
    @property
    def b(self):
        return self.ctx.b

    def bind1(self, exp: ir.Exp, hint: str = "t") -> ir.Var:
        return self.ctx.b.bind1(exp, hint, self.loc)

    def bind(self, exp: ir.Exp, hint: str = "t") -> tuple[ir.Var, ...]:
        return self.ctx.b.bind(exp, hint, self.loc)

    def emit_assert(self, cond: ir.Atom, msg: str, error: str) -> None:
        self.ctx.b.emit(ir.Assert(cond, msg, error), (), self.loc)

    # -- argument checks ------------------------------------------------
    def count(self, lo: int, hi: Optional[int] = -1, usage: str = "") -> None:
        """Checks the number of arguments (hi None: no upper bound; -1: exactly lo)."""
        if hi == -1:
            hi = lo
        n = len(self.args)
        if n < lo or (hi is not None and n > hi):
            if hi is None:
                want = f"at least {lo}"
            elif hi == lo:
                want = f"{lo}"
            else:
                want = f"{lo} to {hi}"
            s = "" if want == "1" else "s"
            raise self.error(None, f"{self.name} takes {want} argument{s}, got {n}",
                             hint=f"call it as {usage}" if usage else None)

    def array(self, i: int, what: str = "") -> ArrayV:
        """Argument i as an array; `what` says what is expected ("arrays after
        the function"), by default "an array as argument i+1"."""
        v = self.args[i]
        if not isinstance(v, ArrayV):
            hint = None
            if isinstance(v, TupleV) and any(isinstance(e, ArrayV) for e in v.elems):
                hint = "a tuple of arrays is not an array; ps.zip(...) makes an array of tuples"
            raise self.error(i, f"{self.name} expects {what or f'an array as argument {i + 1}'}, "
                                f"but argument {i + 1} is {describe(v)}", hint)
        return v

    def value(self, i: int) -> Value:
        v = self.args[i]
        if not isinstance(v, (ScalarV, TupleV, ArrayV)):
            raise self.error(i, f"{self.name} expects a value as argument {i + 1}, "
                                f"not {describe(v)}")
        return v

    def scalar(self, i: int, what: str = "a scalar") -> ScalarV:
        v = self.args[i]
        if not isinstance(v, ScalarV):
            hint = "apply it element by element with ps.map" if isinstance(v, ArrayV) else None
            raise self.error(i, f"{self.name} expects {what} as argument {i + 1}, "
                                f"but it is {describe(v)}", hint)
        return v

    def fun(self, i: int, arity: int) -> FunV:
        f = self.args[i]
        if isinstance(f, TypeArg) and f.convert is not None:
            from .calls import PreludeFunV          # ps.f32 passed as its conversion
            f = PreludeFunV(f.convert, f.node)
        if not isinstance(f, FunV):
            raise self.error(i, f"{self.name} expects a function as argument {i + 1}, "
                                f"but argument {i + 1} is {describe(f)}",
                             hint="pass a lambda or the name of a function")
        fa = f.arity
        if fa is not None and fa != arity:
            s = "" if arity == 1 else "s"
            raise self.error(i, f"the function passed to {self.name} must take {arity} "
                                f"argument{s}, but it takes {fa}")
        return f

    def count_i64(self, i: int, what: str = "a count") -> ir.Atom:
        """An integer argument as an i64 atom (weak constants become Consts)."""
        v = self.scalar(i, f"an integer ({what})")
        if v.type.is_bool or v.type.is_float:
            raise self.error(i, f"{self.name} expects an integer as argument {i + 1} ({what}), "
                                f"not {describe(v)}", hint="convert it, e.g. int(...)")
        if v.weak:
            return harden(v, self.src, self.arg_node(i)).atom
        if v.type is I64:
            return v.atom
        return convert(self.ctx, I64, v, self.arg_node(i)).atom

    # -- arrays -----------------------------------------------------------
    def size(self, arr: ArrayV, dim: int = 0) -> ir.Var:
        assert arr.parts, "arrays of empty tuples are not supported"
        return self.bind1(ir.Size(arr.parts[0], dim), "n")

    def same_length(self, arrs: Sequence[ArrayV], what: str) -> ir.Var:
        """The length of arrs[0]; a ShapeError Assert for each other array
        whose length is not visibly the same."""
        n0 = self.size(arrs[0])
        for a in arrs[1:]:
            if a.parts and a.parts[0] == arrs[0].parts[0]:
                continue
            n = self.size(a)
            eq = self.bind1(ir.BinOp("eq", n0, n), "same")
            self.emit_assert(eq, f"{what}: arrays differ in length", "ShapeError")
        return n0

    def lam(self, f: FunV, param_stypes: Sequence[SType], i_fun: int,
            ret: Optional[SType] = None, what: str = "", ctx=None,
            pre_args: Sequence[Value] = (), strict: bool = True,
            param_py: Optional[Sequence[Optional[Sequence]]] = None) -> tuple[ir.Lambda, SType]:
        """A SOAC lambda applying f to values of param_stypes.

        With `ret`, f's result is coerced to it: strictly by default (a weak
        result must already have that type, since Python mode keeps what f
        returns, e.g. as reduce's accumulator), leniently with strict=False
        (where Python mode stores the result into an array, which converts
        it). Without `ret`, weak results take their default type, as Python
        mode's `collect` gives them. `pre_args` are values passed before the
        lambda's own parameters (tabulate_2d). `param_py` gives the PyInfos
        of each parameter (None: numpy values), the elements of a list of
        Python numbers for instance (values.py, pynum.py); `self.result_py`
        is left with the PyInfos of f's result."""
        sub = (ctx or self.ctx).nested()
        params: list[ir.Var] = []
        args = list(pre_args)
        for k, st in enumerate(param_stypes):
            ps_ = [sub.b.var(t, "x") for t in flatten_stype(st)]
            params += ps_
            flags = param_py[k] if param_py is not None else None
            args.append(rebuild_value(st, ps_, py=flags))
        res = f.apply(sub, args, self.node)
        if not isinstance(res, (ScalarV, TupleV, ArrayV)):
            raise self.error(i_fun, f"the function passed to {self.name} must return a value, "
                                    f"not {describe(res)}")
        if ret is not None:
            res = coerce(res, ret, self.src, self.arg_node(i_fun), strict=strict,
                         what=what or f"the result of the function passed to {self.name}")
        else:
            res = harden(res, self.src, self.arg_node(i_fun))
        self.result_py = py_flags(res)
        atoms = flatten_value(res)
        lam = ir.Lambda(tuple(params), sub.b.body(atoms), tuple(a.type for a in atoms))
        return lam, value_stype(res)

    def pred_lam(self, f: FunV, param_stypes: Sequence[SType], i_fun: int,
                 param_py=None) -> ir.Lambda:
        lam, _ = self.lam(f, param_stypes, i_fun, ret=SScalar(BOOL),
                          what=f"the predicate passed to {self.name}", param_py=param_py)
        return lam

    def operator_lam(self, f: FunV, st: SType, i_fun: int, acc_py: Sequence,
                     x_py: Sequence, **kw) -> tuple[ir.Lambda, tuple]:
        """The lambda of a reduction operator f(acc, x) whose accumulator
        starts with PyInfos acc_py and then holds f's results, and the
        accumulator's PyInfos (a fixed point: a result that may be a Python
        number makes the accumulator one on the next call; growing value
        sets are widened, so it ends)."""
        acc = tuple(acc_py)
        while True:
            lam, _ = self.lam(f, [st, st], i_fun, param_py=[acc, x_py], **kw)
            more = widen_py(acc, or_py(acc, self.result_py))
            if more == acc:
                return lam, acc
            acc = more


def fresh_array(st: SArray, parts: Sequence[ir.Var]) -> ArrayV:
    """A newly computed array (owned by this function)."""
    return ArrayV(st, tuple(parts), new_buffer())


def view_array(st: SArray, parts: Sequence[ir.Var], of: ArrayV) -> ArrayV:
    """An array that may share storage with `of` (slice, rotation, ...): an
    alias that is never owned (-|buffer|, the translator's convention), so
    the ownership check sees the alias and refuses updates of the view."""
    return ArrayV(st, tuple(parts), -abs(of.buffer))


def elem_rebuild(st: SType, atoms: Sequence[ir.Atom], of: ArrayV) -> Value:
    """An element of `of` (a row of a 2-D array aliases it, never owned); an
    element of a list may be a Python number where the list holds them."""
    return rebuild_value(st, atoms, -abs(of.buffer), py=of.part_py())


def bool_lambda(ctx, op: str) -> ir.Lambda:
    """\\a b -> a op b on bools (land / lor)."""
    sub = ctx.b.sub()
    a, b = sub.var(BOOL, "a"), sub.var(BOOL, "b")
    r = sub.bind1(ir.BinOp(op, a, b), "r")
    return ir.Lambda((a, b), sub.body([r]), (BOOL,))
