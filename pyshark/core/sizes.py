"""Scalar expressions over names bound outside a function, for the sizes of
what the function returns (core/stand_in.py) and the statements that compute
them (core/empty_shapes.py).

A sym is a `Lit` (a constant), an `ir.Var` bound outside, or a `Node` (an
operator on syms, or the size of an outside array's dimension). `Syms`
makes them, interned (structurally equal syms are the same object, so `is`
compares them and a shared subexpression is computed once), and folds
constants with the operator table's reference functions (core/ops.py), so
folding computes what the interpreter would. `Syms.atom` turns a sym into
an atom, appending the Lets that compute it to `Syms.stms`; none of them
can raise (the caller guards divisors).
"""
from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np

from . import ir, ops
from .types import BOOL, I64, ScalarType


class Lit:
    """A constant; equal constants are one object (0.0 and -0.0 are two)."""
    __slots__ = ("value", "type")

    def __init__(self, value, t: ScalarType):
        self.value = value
        self.type = t

    def __repr__(self) -> str:
        return f"{self.value!r}{self.type.value}"


class Node:
    """`op` applied to `args`: a BinOp/UnOp operator, "convert", "select", or
    "size" (args: an outside array Var and a dimension)."""
    __slots__ = ("op", "args", "type")

    def __init__(self, op: str, args: tuple, t: ScalarType):
        self.op = op
        self.args = args
        self.type = t

    def __repr__(self) -> str:
        return f"{self.op}{self.args!r}"


Sym = Union[Lit, ir.Var, Node]


def zero_value(t: ScalarType):
    return False if t.is_bool else 0.0 if t.is_float else 0


def _key(a):
    return id(a) if isinstance(a, (Lit, Node)) else a


class Syms:
    """A table of interned syms, and the Lets computing the ones turned into atoms."""

    def __init__(self, fresh: Optional[Callable[[ScalarType], ir.Var]] = None, loc=None):
        self._table: dict = {}
        self._vars: dict = {}
        self._atoms: dict = {}
        self._nonneg: dict = {}
        self.fresh = fresh
        self.loc = loc
        self.stms: list[ir.Let] = []
        self.true = self.lit(True, BOOL)
        self.false = self.lit(False, BOOL)

    # -- leaves ---------------------------------------------------------------
    def lit(self, value, t: ScalarType) -> Lit:
        value = t.dtype.type(value).item()
        key = ("lit", t, repr(value))
        hit = self._table.get(key)
        if hit is None:
            hit = self._table[key] = Lit(value, t)
        return hit

    def zero(self, t: ScalarType) -> Lit:
        return self.lit(zero_value(t), t)

    def i64(self, n: int) -> Lit:
        return self.lit(n, I64)

    def const(self, c: ir.Const) -> Lit:
        return self.lit(c.value, c.type)

    def var(self, v: ir.Var) -> ir.Var:
        """The outside name v (one object per name)."""
        return self._vars.setdefault(v.name, v)

    def size(self, arr: ir.Var, dim: int) -> Node:
        return self._node("size", (self.var(arr), dim), I64)

    def _node(self, op: str, args: tuple, t: ScalarType) -> Node:
        key = (op, t) + tuple(_key(a) for a in args)
        hit = self._table.get(key)
        if hit is None:
            hit = self._table[key] = Node(op, args, t)
        return hit

    # -- operators, folded -----------------------------------------------------------
    def bin(self, op: str, x: Sym, y: Sym) -> Sym:
        """x op y; the caller has made sure it cannot raise (ops.Op.raises_on)."""
        t = x.type
        o = ops.binary(op)
        rt = o.result_type(t)
        if isinstance(x, Lit) and isinstance(y, Lit):
            with np.errstate(all="ignore"):
                r = o.reference(t)(t.dtype.type(x.value), t.dtype.type(y.value))
            return self.lit(r, rt)
        simple = self._identity(op, x, y, t)
        if simple is not None:
            return simple
        return self._node(op, (x, y), rt)

    def _identity(self, op, x, y, t) -> Optional[Sym]:
        if t.is_bool:
            if op in ("land", "lor") and x is y:
                return x
            if op == "land":
                return y if x is self.true else x if y is self.true else \
                    self.false if self.false in (x, y) else None
            if op == "lor":
                return y if x is self.false else x if y is self.false else \
                    self.true if self.true in (x, y) else None
            return None
        if not t.is_int:
            return None
        zero, one = self.zero(t), self.lit(1, t)
        if op in ("add", "sub") and y is zero:
            return x
        if op == "add" and x is zero:
            return y
        if op == "mul" and (y is one or x is one):
            return x if y is one else y
        if op == "max" and (y is zero and self.nonneg(x) or x is zero and self.nonneg(y)):
            return x if y is zero else y
        if op in ("eq", "le", "ge") and x is y:
            return self.true
        if op in ("ne", "lt", "gt") and x is y:
            return self.false
        return None

    def un(self, op: str, x: Sym) -> Sym:
        o = ops.unary(op)
        t = x.type
        if isinstance(x, Lit):
            with np.errstate(all="ignore"):
                r = o.reference(t)(t.dtype.type(x.value))
            return self.lit(r, o.result_type(t))
        return self._node(op, (x,), o.result_type(t))

    def convert(self, to: ScalarType, x: Sym) -> Sym:
        if x.type == to:
            return x
        if isinstance(x, Lit) and not (x.type.is_float and not to.is_float
                                       and not np.isfinite(x.value)):
            with np.errstate(all="ignore"):
                return self.lit(np.asarray(x.type.dtype.type(x.value)).astype(to.dtype)[()], to)
        return self._node("convert", (x,), to)

    def select(self, c: Sym, x: Sym, y: Sym) -> Sym:
        if c is self.true or x is y:
            return x
        if c is self.false:
            return y
        if x.type.is_bool:          # bool selects as and/or: simpler to fold
            if x is self.true:
                return self.bin("lor", c, y)
            if y is self.false:
                return self.bin("land", c, x)
        return self._node("select", (c, x, y), x.type)

    def implies(self, conj: Sym, c: Sym) -> bool:
        """c is one of the conjuncts of conj (an and-chain), or true."""
        while True:
            if c is conj or c is self.true:
                return True
            if not (isinstance(conj, Node) and conj.op == "land"):
                return False
            if conj.args[1] is c:
                return True
            conj = conj.args[0]

    def conjuncts(self, c: Sym) -> list:
        out = []
        while isinstance(c, Node) and c.op == "land":
            out.append(c.args[1])
            c = c.args[0]
        out.append(c)
        return out[::-1]

    # shorthands
    def and_(self, x: Sym, y: Sym) -> Sym:
        """x && y, without repeating a conjunct x already has."""
        for c in self.conjuncts(y):
            if not self.implies(x, c):
                x = self.bin("land", x, c)
        return x

    def or_(self, x: Sym, y: Sym) -> Sym:
        return self.bin("lor", x, y)

    def not_(self, x: Sym) -> Sym:
        return self.un("not", x)

    def nonneg_or_zero(self, n: Sym) -> Sym:
        """max(n, 0): the length of iota(n) or replicate(n, x)."""
        return self.bin("max", n, self.zero(n.type))

    def nonneg(self, x: Sym) -> bool:
        """x is an integer that cannot be negative (sizes, and sums, products,
        maxima and selects of them; wrap-around ignored)."""
        hit = self._nonneg.get(id(x))
        if hit is None:
            hit = self._nonneg[id(x)] = self._is_nonneg(x)
        return hit

    def _is_nonneg(self, x) -> bool:
        if isinstance(x, Lit):
            return not x.type.is_float and x.value >= 0
        if isinstance(x, ir.Var):
            return x.type.is_unsigned
        if x.op == "size":
            return True
        if x.op == "max":
            return any(self.nonneg(a) for a in x.args)
        if x.op in ("add", "mul", "min", "floordiv"):
            return all(self.nonneg(a) for a in x.args)
        if x.op == "select":
            return self.nonneg(x.args[1]) and self.nonneg(x.args[2])
        return False

    # -- to atoms -----------------------------------------------------------------
    def atom(self, s: Sym) -> ir.Atom:
        """An atom holding s; the Lets computing it are appended to self.stms."""
        if isinstance(s, Lit):
            return ir.Const(s.value, s.type)
        if isinstance(s, ir.Var):
            return s
        hit = self._atoms.get(id(s))
        if hit is not None:
            return hit
        if s.op == "size":
            exp = ir.Size(s.args[0], s.args[1])
        elif s.op == "convert":
            exp = ir.Convert(s.type, self.atom(s.args[0]))
        elif s.op == "select":
            exp = ir.Select(*(self.atom(a) for a in s.args))
        elif len(s.args) == 2:
            exp = ir.BinOp(s.op, self.atom(s.args[0]), self.atom(s.args[1]))
        else:
            exp = ir.UnOp(s.op, self.atom(s.args[0]))
        v = self.fresh(s.type)
        self.stms.append(ir.Let((v,), exp, self.loc))
        self._atoms[id(s)] = v
        return v
