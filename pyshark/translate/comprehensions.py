"""List comprehensions -> ir.Map (after an ir.Filter of the source for
`if` clauses, so the element expression is evaluated only where Python
evaluates it). A nested comprehension as the element gives a 2-D array.
The result is a new array (owned) that is a list in Python mode.
"""
from __future__ import annotations

import libcst as cst

from ..core import ir
from ..core.types import BOOL, I64, ArrayType, SArray
from .context import Ctx
from .exprs import bool_value, lazy_bool, translate_expr
from .iteration import iter_source
from .scoping import local_names
from .coerce import harden
from .values import ArrayV, flatten_value, new_buffer, py_flags, value_stype


def _lambda_ctx(ctx: Ctx, src, comp: cst.CompFor, locals_: dict):
    """The context of the element (or filter) lambda: a boundary scope whose
    local names are the comprehension's targets (Python 3 gives a
    comprehension its own scope)."""
    sub = ctx.with_scope(ctx.scope.child(boundary=True, local_names=locals_), b=ctx.b.sub())
    params = [sub.b.var(t, "x") for t in src.param_types()]
    from .stmts import bind_target
    bind_target(sub, comp.target, src.element_from_params(sub, params))
    return sub, params


def conditions(ctx: Ctx, tests: list, node):
    """`if a if b` clauses: b only evaluated where a holds."""
    first = bool_value(ctx, translate_expr(ctx, tests[0]), tests[0], "a comprehension condition")
    if len(tests) == 1:
        return first
    return lazy_bool(ctx, first, "land", lambda c: conditions(c, tests[1:], node), node)


def translate_listcomp(ctx: Ctx, node: cst.ListComp) -> ArrayV:
    comp = node.for_in
    if comp.asynchronous is not None:
        raise ctx.error(comp, "async comprehensions are not supported")
    if comp.inner_for_in is not None:
        raise ctx.error(comp.inner_for_in, "a comprehension with two 'for' clauses is not supported",
                        hint="nest comprehensions for 2-D: [[e for y in ys] for x in xs], or use "
                             "ps.flatten of that")
    src = iter_source(ctx, comp.iter)
    locals_ = local_names(ctx.src, node)
    arrays = src.map_arrays(ctx)
    width = src.width
    loc = ctx.loc(node)
    if comp.ifs:
        sub, params = _lambda_ctx(ctx, src, comp, locals_)
        cond = conditions(sub, [c.test for c in comp.ifs], node)
        atom = cond.atom if not cond.weak else ir.Const(bool(cond.atom.value), BOOL)
        lam = ir.Lambda(tuple(params), sub.b.body([atom]), (BOOL,))
        arrays = list(ctx.b.bind(ir.Filter(width, lam, tuple(arrays)), "kept", loc))
        width = ctx.b.bind1(ir.Size(arrays[0], 0), "len", loc)
    sub, params = _lambda_ctx(ctx, src, comp, locals_)
    v = harden(translate_expr(sub, node.elt), ctx.src, node.elt)
    atoms = flatten_value(v)
    if not atoms:
        raise ctx.error(node.elt, "a comprehension element must hold at least one value")
    lam = ir.Lambda(tuple(params), sub.b.body(atoms), tuple(a.type for a in atoms))
    # an empty comprehension is the Python list [], which has no inner
    # dimensions: its rows are of size 0 (a prelude map's come from its function)
    zeros = tuple(ir.Const(0, I64) for t in lam.ret if isinstance(t, ArrayType)
                  for _ in range(t.rank))
    outs = ctx.b.bind(ir.Map(width, lam, tuple(arrays), zeros or None), "comp", loc)
    return ArrayV(SArray(value_stype(v)), tuple(outs), new_buffer(), from_list=True,
                  py=py_flags(v))
