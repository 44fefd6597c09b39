"""A checker for the kernel IR: operand types, declared-before-use, and the
ParFor rules (no nesting, no assignment to captured variables).

It runs in tests after every lowering, so an emitter can trust its input.
"""
from __future__ import annotations

from pyshark.core.types import BOOL, I64, ScalarType

from . import kir as K
from .kir_traverse import block_exprs, has_expr, walk_stms


class KirError(Exception):
    """Kernel IR that breaks the rules in kir.py (a compiler bug)."""


def _expr(e: K.Expr, scope: dict) -> K.KType:
    if isinstance(e, K.KVar):
        if e.name not in scope:
            raise KirError(f"{e.name} read before it is set")
        if scope[e.name] != e.type:
            raise KirError(f"{e.name} has type {scope[e.name]!r}, used as {e.type!r}")
        return e.type
    if isinstance(e, K.KConst):
        if not isinstance(e.type, ScalarType):
            raise KirError(f"constant of non-scalar type {e!r}")
        return e.type
    for c in K.children(e):
        _expr(c, scope)
    if isinstance(e, K.Bin):
        tx, ty = K.type_of(e.x), K.type_of(e.y)
        if e.op not in K.BIN_PRIMS:
            raise KirError(f"unknown binary primitive {e.op}")
        if tx != ty or not isinstance(tx, ScalarType):
            raise KirError(f"{e.op} on {tx!r} and {ty!r}")
        if K.scalar_class(tx) not in K.BIN_CLASSES[e.op]:
            raise KirError(f"{e.op} on {tx!r} (kir.BIN_CLASSES gives it no meaning)")
        if e.contract and not (e.op in ("add", "mul") and tx.is_float):
            raise KirError(f"contract on {e.op} of {tx!r} (only float add and mul)")
    elif isinstance(e, K.Un):
        t = K.type_of(e.x)
        if e.op not in K.UN_PRIMS:
            raise KirError(f"unknown unary primitive {e.op}")
        if not isinstance(t, ScalarType):
            raise KirError(f"{e.op} on {t!r}")
        if K.scalar_class(t) not in K.UN_CLASSES[e.op]:
            raise KirError(f"{e.op} on {t!r} (kir.UN_CLASSES gives it no meaning)")
    elif isinstance(e, K.Cast):
        frm = K.type_of(e.x)
        if not isinstance(frm, ScalarType):
            raise KirError(f"cast of a pointer {e!r}")
        if e.bits and (frm.bits != e.to.bits or BOOL in (frm, e.to)):
            raise KirError(f"bit cast between {frm!r} and {e.to!r} (same width, no bool)")
    elif isinstance(e, K.Sel):
        if K.type_of(e.cond) != BOOL:
            raise KirError(f"select on non-bool {e.cond!r}")
        if K.type_of(e.x) != K.type_of(e.y):
            raise KirError(f"select of {K.type_of(e.x)!r} and {K.type_of(e.y)!r}")
    elif isinstance(e, (K.Load, K.PtrAdd)):
        if not isinstance(K.type_of(e.ptr), K.Ptr):
            raise KirError(f"{type(e).__name__} through a non-pointer {e.ptr!r}")
        idx = e.index if isinstance(e, K.Load) else e.offset
        if K.type_of(idx) != I64:
            raise KirError(f"index {idx!r} is not i64")
    return K.type_of(e)


def _declare(scope: dict, var: K.KVar):
    old = scope.get(var.name)
    if old is not None and old != var.type:
        raise KirError(f"{var.name} declared as {old!r} and {var.type!r}")
    scope[var.name] = var.type


def _block(b: K.Block, scope: dict, in_par: bool, outer: set | None):
    for s in b.stms:
        _stm(s, scope, in_par, outer)


def _stm(s: K.Stm, scope: dict, in_par: bool, outer: set | None):
    if isinstance(s, K.AtomicUpdate):
        _atomic(s, scope, in_par, outer)
        return
    for e in K.stm_exprs(s):
        _expr(e, scope)
    if isinstance(s, (K.Set, K.Alloc)):
        if outer is not None and s.var.name in outer:
            raise KirError(f"a ParFor body assigns {s.var.name}, declared outside it")
        if isinstance(s, K.Set) and K.type_of(s.value) != s.var.type:
            raise KirError(f"set {s.var.name}: {s.var.type!r} = {K.type_of(s.value)!r}")
        if isinstance(s, K.Alloc):
            if not isinstance(s.var.type, K.Ptr):
                raise KirError(f"alloc into non-pointer {s.var.name}")
            if K.type_of(s.count) != I64:
                raise KirError("alloc count is not i64")
        _declare(scope, s.var)
    elif isinstance(s, K.Store):
        pt = K.type_of(s.ptr)
        if not isinstance(pt, K.Ptr) or pt.elem != K.type_of(s.value):
            raise KirError(f"store of {K.type_of(s.value)!r} through {pt!r}")
        if K.type_of(s.index) != I64:
            raise KirError("store index is not i64")
        if not isinstance(s.nontemporal, bool):
            raise KirError(f"store nontemporal flag {s.nontemporal!r} is not a bool")
    elif isinstance(s, (K.If, K.While)):
        if K.type_of(s.cond) != BOOL:
            raise KirError(f"{type(s).__name__} condition is not bool")
        for sb in K.sub_blocks(s):
            # variables first set inside a branch stay visible after it (C
            # scoping at function level); the emitter declares them up front.
            _block(sb, scope, in_par, outer)
    elif isinstance(s, K.For):
        if K.type_of(s.lo) != I64 or K.type_of(s.hi) != I64 or s.var.type != I64:
            raise KirError("for bounds and counter must be i64")
        _declare(scope, s.var)
        _block(s.body, scope, in_par, outer)
    elif isinstance(s, K.LocalAlloc):
        t = s.var.type
        if not (isinstance(t, K.Ptr) and t.space == "local" and isinstance(t.elem, ScalarType)):
            raise KirError(f"local alloc into {t!r} (needs a local pointer to scalars)")
        if not isinstance(s.count, int) or s.count <= 0:
            raise KirError(f"local alloc of {s.count!r} elements (needs a positive int)")
        _declare(scope, s.var)
    elif isinstance(s, K.AtomicLoad):
        pt = K.type_of(s.ptr)
        if not (isinstance(pt, K.Ptr) and pt.space == "global" and pt.elem == s.var.type):
            raise KirError(f"atomic load of {s.var.type!r} through {pt!r} (needs global memory)")
        if K.type_of(s.index) != I64:
            raise KirError("atomic load index is not i64")
        if outer is not None and s.var.name in outer:
            raise KirError(f"a ParFor body assigns {s.var.name}, declared outside it")
        _declare(scope, s.var)
    elif isinstance(s, K.ParFor):
        if in_par:
            raise KirError("nested ParFor")
        if s.group_size is not None:
            _check_group_body(s)
        if s.var.type != I64 or K.type_of(s.count) != I64:
            raise KirError("ParFor counter and count must be i64")
        if s.parallel_if is not None and K.type_of(s.parallel_if) != BOOL:
            raise KirError("ParFor parallel_if is not bool")
        inner = dict(scope)
        _declare(inner, s.var)
        _block(s.body, inner, True, set(scope))
    elif isinstance(s, K.Fail):
        if s.kind not in K.ERROR_CODES:
            raise KirError(f"unknown error kind {s.kind}")
        if len(s.args) > 4 or any(K.type_of(a) != I64 for a in s.args):
            raise KirError("Fail takes at most four i64 arguments")
    elif isinstance(s, K.Prefetch):
        if not isinstance(K.type_of(s.ptr), K.Ptr) or K.type_of(s.index) != I64:
            raise KirError("prefetch of a non-pointer or at a non-i64 index")
    elif isinstance(s, K.CopyMem):
        if K.type_of(s.dst) != K.type_of(s.src) or not isinstance(K.type_of(s.dst), K.Ptr):
            raise KirError("copy between different pointer types")
        if not isinstance(s.nontemporal, bool):
            raise KirError(f"copy nontemporal flag {s.nontemporal!r} is not a bool")
    elif isinstance(s, K.Free):
        if not isinstance(K.type_of(s.ptr), K.Ptr):
            raise KirError("free of a non-pointer")


_GROUP_EXPRS = (K.LocalId, K.GroupId)
_GROUP_STMS = (K.Barrier, K.LocalAlloc, K.AtomicLoad)


def _atomic(s: K.AtomicUpdate, scope: dict, in_par: bool, outer: set | None):
    pt = _expr(s.ptr, scope)
    if not isinstance(pt, K.Ptr) or not isinstance(pt.elem, ScalarType) or pt.elem is BOOL \
            or pt.elem.bits not in (32, 64):
        raise KirError(f"atomic update through {pt!r} (needs 32- or 64-bit scalars)")
    if _expr(s.index, scope) != I64:
        raise KirError("atomic update index is not i64")
    if s.old.type != pt.elem:
        raise KirError(f"atomic update's old value {s.old.name} is not {pt.elem!r}")
    if outer is not None and s.old.name in outer:
        raise KirError(f"a ParFor body assigns {s.old.name}, declared outside it")
    _declare(scope, s.old)
    if _expr(s.value, scope) != pt.elem:
        raise KirError(f"atomic update stores {K.type_of(s.value)!r} through {pt!r}")


def _uses_group_ops(b: K.Block) -> bool:
    return (any(isinstance(s, _GROUP_STMS) for s in walk_stms(b))
            or any(isinstance(e, _GROUP_EXPRS) for e in block_exprs(b)))


def _check_group_body(p: K.ParFor) -> None:
    if not isinstance(p.group_size, int) or p.group_size <= 0:
        raise KirError(f"group size {p.group_size!r} (needs a positive int)")
    if any(isinstance(s, (K.Fail, K.Alloc, K.Free)) for s in walk_stms(p.body)):
        raise KirError("a work-group ParFor body may not Fail, Alloc or Free")
    for s in walk_stms(p.body):
        if isinstance(s, K.LocalAlloc) and s not in p.body.stms:
            raise KirError(f"local alloc of {s.var.name} below the body's top level")


def _check_group_ops_placement(b: K.Block) -> None:
    """LocalId, GroupId, Barrier, LocalAlloc and AtomicLoad only in
    work-group ParFors."""
    for s in b.stms:
        if isinstance(s, K.ParFor):
            if s.group_size is None and _uses_group_ops(s.body):
                raise KirError("work-group operations in a ParFor without a group size")
            continue
        if isinstance(s, _GROUP_STMS) or any(has_expr(e, _GROUP_EXPRS) for e in K.stm_exprs(s)):
            raise KirError(f"work-group operation outside a ParFor: {s!r}")
        for sb in K.sub_blocks(s):
            _check_group_ops_placement(sb)


def _check_nontemporal_placement(b: K.Block, par: K.ParFor | None = None,
                                 facts: tuple = (frozenset(), frozenset())) -> None:
    """Nontemporal copies only inside a ParFor body (at any depth), into
    global memory; nontemporal stores only as `p[i] = v` at the top level
    of a ParFor body, p a pointer variable to global memory that the body does not
    declare or otherwise mention, and i the ParFor's counter (kir.Store).
    `facts` (the ids of the enclosing ParFor body's statements and the names
    it declares) is computed once per ParFor: recomputing it for every
    nested block made this check quadratic in the body's size."""
    top, declared = facts
    for s in b.stms:
        if isinstance(s, K.CopyMem) and s.nontemporal and (
                par is None or K.type_of(s.dst).space != "global"):
            raise KirError(f"a nontemporal copy outside a ParFor body or into local "
                           f"memory: {s!r}")
        if isinstance(s, K.Store) and s.nontemporal:
            ok = (id(s) in top and isinstance(s.ptr, K.KVar) and s.ptr.name not in declared
                  and K.type_of(s.ptr).space == "global" and s.index == par.var)
            if not ok:
                raise KirError(f"a nontemporal store not of the form p[i] = v at the top "
                               f"of a ParFor body: {s!r}")
        inner, inner_facts = par, facts
        if isinstance(s, K.ParFor):
            _check_nontemporal_only_written(s)
            inner = s
            inner_facts = (frozenset(map(id, s.body.stms)),
                           frozenset().union(*map(K.declared_vars, s.body.stms)))
        for sb in K.sub_blocks(s):
            _check_nontemporal_placement(sb, inner, inner_facts)


def _check_nontemporal_only_written(p: K.ParFor) -> None:
    nt = [s for s in p.body.stms if isinstance(s, K.Store) and s.nontemporal]
    if not nt:
        return
    names = {s.ptr.name for s in nt if isinstance(s.ptr, K.KVar)}
    for s in walk_stms(p.body):
        exprs = (s.index, s.value) if any(s is t for t in nt) else K.stm_exprs(s)
        for e in exprs:
            bad = K.expr_vars(e) & names
            if bad:
                raise KirError(f"a ParFor body stores {sorted(bad)[0]} nontemporally and "
                               f"also reads or writes it otherwise")


def check_function(f: K.Function, module: K.Module | None = None) -> None:
    scope: dict = {}
    for p in f.params:
        _declare(scope, p)
    _block(f.body, scope, False, None)
    _check_group_ops_placement(f.body)
    _check_nontemporal_placement(f.body)
    if module is not None:
        for s in walk_stms(f.body):
            if isinstance(s, K.Fail) and not 0 <= s.msg < len(module.messages):
                raise KirError(f"Fail names message {s.msg}, which does not exist")


def check_module(m: K.Module) -> None:
    names = [f.name for f in m.functions]
    if len(set(names)) != len(names):
        raise KirError("duplicate function names")
    for f in m.functions:
        check_function(f, m)
