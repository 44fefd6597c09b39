"""Inlining: every Call of a FunDef is replaced by the callee's body.

Algorithm: callees first (a depth-first walk of the call graph, memoised; the
language has no recursion, a cycle is an internal error), so a body spliced in
is already free of calls. At each call the callee's parameters are
substituted by the arguments and every name bound in the callee's body is
renamed to a fresh name of the caller (`base_N` past the caller's highest N),
keeping names unique within the FunDef (SSA). The call's pattern is then bound
to the renamed results with `AtomExp` lets (simplify propagates them), or with
`Copy` where the caller updates the result in place and the result may share
storage with an argument or another result: a call result was always a new
value for the uniqueness checker, an alias of the caller's array is not.

Afterwards no Call remains. When the program has entries, the FunDefs that
are not entries are dropped (nothing calls them any more); a program without
entries keeps all its FunDefs.
"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.errors import InternalCompilerError

from .analysis import alias_closure, alias_edges, consumable_names
from .rewrite import NameGen, binder_vars, fundef_names, map_exp, subst


def inline(program: ir.Program) -> ir.Program:
    """The program with every call inlined (see the module docstring)."""
    done: dict[str, ir.FunDef] = {}
    active: list[str] = []

    def get(name: str) -> ir.FunDef:
        if name in done:
            return done[name]
        if name in active:
            cycle = " -> ".join(active[active.index(name):] + [name])
            raise InternalCompilerError(f"inline: recursive call chain {cycle}")
        if name not in program.functions:
            raise InternalCompilerError(f"inline: call of unknown function {name!r}")
        active.append(name)
        done[name] = _Inliner(program.functions[name], get).run()
        active.pop()
        return done[name]

    try:
        for name in program.functions:
            get(name)
    finally:
        get = None                      # a recursive closure is a reference cycle
    keep = [n for n in program.functions if not program.entries or n in program.entries]
    return ir.Program({n: done[n] for n in keep}, dict(program.entries),
                      dict(program.records), program.filename)


class _Inliner:
    def __init__(self, fun: ir.FunDef, get):
        self.fun = fun
        self.get = get
        self.names = NameGen(fundef_names(fun))
        self.consumable: set[str] | None = None

    def run(self) -> ir.FunDef:
        body = self.body(self.fun.body)
        if body is self.fun.body:
            return self.fun
        return ir.FunDef(self.fun.name, self.fun.params, self.fun.ret, body, self.fun.loc)

    def body(self, b: ir.Body) -> ir.Body:
        out: list[ir.Let] = []
        changed = False
        for stm in b.stms:
            e = stm.exp
            if e.__class__ is ir.Call:
                self.splice(stm, out)
                changed = True
                continue
            e2 = map_exp(e, lambda a: a, self.body)
            if e2 is not e:
                stm = ir.Let(stm.pat, e2, stm.loc)
                changed = True
            out.append(stm)
        return ir.Body(tuple(out), b.result) if changed else b

    def splice(self, stm: ir.Let, out: list) -> None:
        call: ir.Call = stm.exp
        callee = self.get(call.fn)
        m: dict = {p.name: a for p, a in zip(callee.params, call.args)}
        for v in binder_vars(callee.body):
            m[v.name] = self.names.var(v)
        body = subst(callee.body, m)
        out.extend(body.stms)
        for k, (v, r) in enumerate(zip(stm.pat, body.result)):
            exp = ir.AtomExp(r)
            if r.__class__ is ir.Var and self.needs_copy(v, k, callee):
                exp = ir.Copy(r)
            out.append(ir.Let((v,), exp, stm.loc))

    def needs_copy(self, v: ir.Var, k: int, callee: ir.FunDef) -> bool:
        """The caller updates result k in place, and it may share storage with an
        argument or with another result of the call."""
        if self.consumable is None:
            self.consumable = consumable_names(self.fun.body)
        if v.name not in self.consumable:
            return False
        edges = alias_edges(callee.body)
        shares = [alias_closure(edges, [r.name]) if r.__class__ is ir.Var else set()
                  for r in callee.body.result]
        if shares[k] & {p.name for p in callee.params}:
            return True
        return any(shares[k] & s for i, s in enumerate(shares) if i != k)
