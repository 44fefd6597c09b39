"""Statements of a function body: assignment and unpacking, owned in-place
updates, assert, return (including returns inside if branches), if/elif/else
with merging of the names the branches bind, and the unsupported ones with
located errors. Loops are in loops.py.

A block is translated in "return mode" when it is the body of a function:
an `if` that contains a return gets the rest of the block appended to each
branch, so the ir.If itself yields the function's result.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..core import ir
from ..errors import CompileError
from .annotations import parse_type
from .coerce import ConstantRangeError, coerce, weak_retyped
from .context import Ctx, LocalDef, Unbound, array_buffers
from .exprs import FUNCTION_NOT_VALUE, merged_meta, translate_condition, translate_expr
from .scoping import free_names
from .unify import merge_branches
from .values import (ArrayV, ScalarV, TupleV, Value, flatten_value, or_py, py_flags, rebuild_value,
                     type_name, value_stype)


def block_stmts(block) -> list:
    """The statements of a block (or of a module), with `a = 1; b = 2` lines split up."""
    if isinstance(block, cst.SimpleStatementSuite):
        return list(block.body)
    out = []
    for s in block.body:
        if isinstance(s, cst.SimpleStatementLine):
            out.extend(s.body)
        else:
            out.append(s)
    return out


class _HasReturn(cst.CSTVisitor):
    def __init__(self):
        self.found = False

    def visit_Return(self, node):
        self.found = True

    def visit_FunctionDef(self, node):
        return False

    def visit_Lambda(self, node):
        return False


def contains_return(node: cst.CSTNode) -> bool:
    v = _HasReturn()
    node.visit(v)
    return v.found


def orelse_stmts(node: cst.If) -> list:
    if node.orelse is None:
        return []
    if isinstance(node.orelse, cst.If):
        return [node.orelse]
    return block_stmts(node.orelse.body)


def translate_block(ctx: Ctx, stmts: list, ret_mode: bool) -> Optional[Value]:
    """Translates statements; in return mode yields the value returned (None
    when a path falls off the end)."""
    for i, st in enumerate(stmts):
        rest = stmts[i + 1:]
        ctx.fs.followers.append(rest)
        try:
            if ret_mode and isinstance(st, cst.Return):
                return guarded(ctx, st, translate_return, ctx, st)
            if ret_mode and isinstance(st, cst.If) and contains_return(st):
                return guarded(ctx, st, translate_if_returning, ctx, st, rest)
            guarded(ctx, st, translate_stmt, ctx, st)
        finally:
            ctx.fs.followers.pop()
    return None


def guarded(ctx: Ctx, st, fn, *args):
    """Runs fn; an unexpected exception becomes a CompileError located at st."""
    try:
        return fn(*args)
    except CompileError:
        raise
    except ConstantRangeError as exc:
        raise ctx.error(st, str(exc), hint="plain int arithmetic beyond the i64 range is not "
                                           "supported") from None
    except RecursionError:
        raise ctx.error(st, "this statement is nested too deeply to translate") from None
    except Exception as exc:  # a translator bug: still report a location
        raise ctx.error(st, f"internal error: {type(exc).__name__}: {exc}",
                        hint="this is a bug in PyShark; please report it") from exc


UNSUPPORTED_STMTS = {
    cst.Break: ("'break' is not supported in v1; use a while loop whose condition ends the search", None),
    cst.Continue: ("'continue' is not supported in v1; use an if around the rest of the loop body",
                   None),
    cst.Try: ("'try' statements are not supported; errors propagate to the caller", None),
    cst.TryStar: ("'try' statements are not supported; errors propagate to the caller", None),
    cst.With: ("'with' statements are not supported", None),
    cst.Raise: ("'raise' is not supported", 'use assert cond, "message"'),
    cst.Del: ("'del' is not supported", "bind a new name instead"),
    cst.Import: ("imports inside functions are not supported", "import at module level"),
    cst.ImportFrom: ("imports inside functions are not supported", "import at module level"),
    cst.ClassDef: ("classes inside functions are not supported",
                   "define NamedTuple records at module level"),
    cst.Nonlocal: ("'nonlocal' is not supported", "return the new value instead"),
    cst.Match: ("'match' statements are not supported", "use if/elif/else"),
}


def translate_stmt(ctx: Ctx, st) -> None:
    from .loops import translate_for, translate_while
    if isinstance(st, cst.Expr):
        v = st.value
        if isinstance(v, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)):
            return               # docstring
        translate_expr(ctx, v)
        return
    if isinstance(st, cst.Pass):
        return
    if isinstance(st, cst.Assign):
        return translate_assign(ctx, st)
    if isinstance(st, cst.AnnAssign):
        return translate_annassign(ctx, st)
    if isinstance(st, cst.AugAssign):
        return translate_augassign(ctx, st)
    if isinstance(st, cst.Return):
        raise ctx.error(st, "'return' inside a loop is not supported in v1",
                        hint="carry the result in a variable and return after the loop; a while "
                             "loop's condition can end it early")
    if isinstance(st, cst.Assert):
        return translate_assert(ctx, st)
    if isinstance(st, cst.If):
        return translate_if(ctx, st)
    if isinstance(st, cst.For):
        return translate_for(ctx, st)
    if isinstance(st, cst.While):
        return translate_while(ctx, st)
    if isinstance(st, cst.FunctionDef):
        from .funcs import translate_local_def
        return translate_local_def(ctx, st)
    if isinstance(st, cst.Global):
        names = ", ".join(n.name.value for n in st.names)
        raise ctx.error(st, f"module-level name '{names}' cannot be assigned at run time "
                            f"('global' is not supported)",
                        hint="pass the value in and return the new value")
    for kind, (msg, hint) in UNSUPPORTED_STMTS.items():
        if isinstance(st, kind):
            raise ctx.error(st, msg, hint)
    raise ctx.error(st, f"this statement is not supported in PyShark: {type(st).__name__}")


# ---------------------------------------------------------------------------
# Binding names


def bind_name(ctx: Ctx, name_node: cst.Name, value: Value, origin: Optional[cst.CSTNode] = None,
              verb: str = "rebinding") -> None:
    """Binds a name; `origin` (the value's expression) locates later errors about it."""
    name = name_node.value
    ctx.scope.set(name, value, origin if origin is not None else name_node)


def bind_target(ctx: Ctx, target: cst.BaseExpression, value: Value,
                origin: Optional[cst.CSTNode] = None) -> None:
    """Binds a Name or a (nested) tuple of names to value."""
    if isinstance(target, cst.Name):
        return bind_name(ctx, target, value, origin)
    if isinstance(target, (cst.Tuple, cst.List)):
        els = target.elements
        if any(isinstance(e, cst.StarredElement) for e in els):
            raise ctx.error(target, "star-unpacking is not supported")
        if not isinstance(value, TupleV):
            what = "an array" if isinstance(value, ArrayV) else type_name(value_stype(value))
            raise ctx.error(target, f"cannot unpack {what} into {len(els)} names",
                            hint="index the array instead, e.g. xs[0]" if isinstance(value, ArrayV)
                            else None)
        if len(value.elems) != len(els):
            raise ctx.error(target, f"cannot unpack a tuple of {len(value.elems)} values into "
                                    f"{len(els)} names")
        origins = [None] * len(els)
        if isinstance(origin, cst.Tuple) and len(origin.elements) == len(els):
            origins = [e.value for e in origin.elements]
        for e, v, o in zip(els, value.elems, origins):
            bind_target(ctx, e.value, v, o)
        return
    if isinstance(target, cst.StarredElement):
        raise ctx.error(target, "star-unpacking is not supported")
    raise ctx.error(target, "only names and tuples of names can be bound here")


def translate_assign(ctx: Ctx, st: cst.Assign) -> None:
    if isinstance(st.value, cst.Lambda):
        raise ctx.error(st, FUNCTION_NOT_VALUE, hint="define a local def, or pass the lambda directly")
    subs = [t.target for t in st.targets if isinstance(t.target, cst.Subscript)]
    if subs:
        if len(st.targets) != 1:
            raise ctx.error(st, "an in-place update cannot be combined with other targets")
        return translate_update(ctx, subs[0], st.value, st)
    for t in st.targets:
        if isinstance(t.target, cst.Attribute):
            raise ctx.error(t.target, "records and tuples are immutable",
                            hint="build a new record, e.g. v = Vec3(x, v.y, v.z)")
    value = translate_expr(ctx, st.value)
    for t in st.targets:
        bind_target(ctx, t.target, value, st.value)


AUG_OPS = {
    cst.AddAssign: "add", cst.SubtractAssign: "sub", cst.MultiplyAssign: "mul",
    cst.DivideAssign: "truediv", cst.FloorDivideAssign: "floordiv", cst.ModuloAssign: "mod",
    cst.PowerAssign: "pow", cst.BitAndAssign: "band", cst.BitOrAssign: "bor",
    cst.BitXorAssign: "bxor", cst.LeftShiftAssign: "shl", cst.RightShiftAssign: "shr",
}


def translate_augassign(ctx: Ctx, st: cst.AugAssign) -> None:
    """`x op= e` is `x = x op e`; `xs[i] op= e` (and `xss[i, j] op= e`) is
    the owned update `xs[i] = xs[i] op e` (LANGUAGE.md). Python reads the
    target, then evaluates e: the same order here (all of it is pure)."""
    op = AUG_OPS.get(type(st.operator))
    if op is None:
        raise ctx.error(st, "the '@=' operator is not supported",
                        hint="write the product with ps.map and ps.reduce")

    def combined(sub_ctx: Ctx) -> Value:
        from .ops import binop
        x = translate_expr(sub_ctx, st.target)
        y = translate_expr(sub_ctx, st.value)
        return binop(sub_ctx, op, x, y, st, st.target, st.value)

    if isinstance(st.target, cst.Subscript):
        return translate_update(ctx, st.target, st.value, st, compute=combined)
    if isinstance(st.target, cst.Attribute):
        raise ctx.error(st.target, "records and tuples are immutable",
                        hint="build a new record, e.g. v = Vec3(x, v.y, v.z)")
    if not isinstance(st.target, cst.Name):
        raise ctx.error(st.target, "only a name or an array element can be the target of "
                                   "an augmented assignment")
    bind_name(ctx, st.target, combined(ctx), st)


def translate_annassign(ctx: Ctx, st: cst.AnnAssign) -> None:
    if st.value is None:
        raise ctx.error(st, "a declaration without a value is not supported", hint="assign a value")
    if not isinstance(st.target, cst.Name):
        raise ctx.error(st.target, "only a name can be annotated")
    stype = parse_type(ctx.env, st.annotation.annotation)
    v = translate_expr(ctx, st.value, stype)
    v = coerce(v, stype, ctx.src, st.value, strict=True, what=f"the value of '{st.target.value}'")
    bind_name(ctx, st.target, v, st.value)


def translate_assert(ctx: Ctx, st: cst.Assert) -> None:
    cond = translate_condition(ctx, st.test)
    msg = ""
    if st.msg is not None:
        if isinstance(st.msg, (cst.SimpleString, cst.ConcatenatedString)):
            msg = st.msg.evaluated_value or ""
            if isinstance(msg, bytes):
                msg = msg.decode("utf-8", "replace")
        elif isinstance(st.msg, cst.FormattedString):
            msg = assert_fstring(ctx, st.msg)
        else:
            raise ctx.error(st.msg, "an assert message must be a string literal or an f-string "
                                    "of scalars")
    if cond.weak and cond.atom.value:
        return
    ctx.b.emit(ir.Assert(cond.atom, msg, "AssertionError"), (), ctx.loc(st))


def assert_fstring(ctx: Ctx, node: cst.FormattedString) -> str:
    """The message of `assert c, f"..."`. Each field must be a scalar
    expression; it is checked (translated into a builder that is thrown
    away: Python evaluates the message only when the assert fails, so it must
    not add run-time checks such as an index's). Compiled code carries the
    f-string's text with each field as written (`{len(xs)}`): only the
    exception class is part of the golden rule (docs/translator-decisions.md)."""
    out = []
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            out.append(part.value)
            continue
        v = translate_expr(ctx.nested(), part.expression)
        if not isinstance(v, ScalarV):
            raise ctx.error(part.expression, f"an assert message may interpolate scalars only, "
                                             f"not {type_name(value_stype(v))}",
                            hint="interpolate an element or a length, e.g. {len(xs)}")
        out.append("{" + ctx.src.code(part.expression) + "}")
    text = "".join(out)
    return text.replace("{{", "{").replace("}}", "}") if "{{" in text or "}}" in text else text


def translate_return(ctx: Ctx, st: cst.Return) -> Value:
    frame = ctx.frame
    if st.value is None:
        raise ctx.error(st, "a PyShark function must return a value")
    v = translate_expr(ctx, st.value, frame.ret_stype)
    if frame.ret_stype is not None:
        top = ctx.env.functions.get(frame.name)
        entry = top is not None and top.is_entry and top.node is frame.def_node
        retyped = weak_retyped(v, frame.ret_stype) if entry else None
        if retyped is not None:
            top.weak_returns.append((st.value,) + retyped)
        kind = "" if entry else "local function " if top is None or top.node is not frame.def_node \
            else "helper "
        v = coerce(v, frame.ret_stype, ctx.src, st.value, strict=not entry,
                   what=f"the return value of {kind}'{frame.name}'")
    ctx.fs.ret_nodes[id(v)] = (v, st.value)
    return v


# ---------------------------------------------------------------------------
# Owned in-place updates


_NAME_CACHE: dict = {}


def _names_of(node) -> set:
    key = id(node)
    hit = _NAME_CACHE.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    from .funcs import names_in
    names = names_in(node)
    _NAME_CACHE[key] = (node, names)
    return names


def used_later(ctx: Ctx, name: str) -> bool:
    """Whether `name` occurs in code that runs after the current statement:
    the rest of every enclosing block and every enclosing loop (conservative),
    directly or through a visible local def that reads it (late binding: a
    def used later sees the name's value then)."""
    names = {name}
    defs = {d: free_names(b.node) for d, b in ctx.scope.visible().items() if isinstance(b, LocalDef)}
    grown = True
    while grown:
        grown = False
        for d, free in defs.items():
            if d not in names and free & names:
                names.add(d)
                grown = True
    for nodes in ctx.fs.followers:
        for n in nodes:
            if names & _names_of(n):
                return True
    return False


def translate_update(ctx: Ctx, target: cst.Subscript, value_node, st, compute=None) -> None:
    """`xs[i] = v` on an owned array; `compute(ctx)` gives the stored value
    instead of `value_node` (augmented assignment: xs[i] op v)."""
    from .indexing import index_atom
    base = target.value
    if isinstance(base, cst.Subscript):
        raise ctx.error(target, "chained indexing 'xss[i][j] = v' does not update xss in place",
                        hint="write xss[i, j] = v")
    if not isinstance(base, cst.Name):
        raise ctx.error(target, "only a local array name can be updated in place")
    name = base.value
    arr = ctx.scope.lookup(name)
    if isinstance(arr, Unbound):
        raise ctx.error(base, arr.message, arr.hint)
    if arr is None and name in ctx.env.constants:
        raise ctx.error(base, f"module constant '{name}' cannot be updated",
                        hint=f"update a copy: {name.lower()}_copy = ps.copy({name})")
    if not isinstance(arr, ArrayV):
        got = "not bound" if arr is None else type_name(value_stype(arr)) if not isinstance(arr, LocalDef) \
            else "a function"
        raise ctx.error(base, f"'{name}' is not an array ({got}); only arrays can be updated in place")
    idxs = []
    for el in target.slice:
        if not isinstance(el.slice, cst.Index):
            raise ctx.error(el, "slice assignment is not supported",
                            hint="update one element at a time, or build a new array with ps.map")
        idxs.append(index_atom(ctx, el.slice.value))
    if len(idxs) > arr.rank:
        raise ctx.error(target, f"too many indices ({len(idxs)}) for a rank-{arr.rank} array")
    if arr.from_list and len(idxs) > 1:
        raise ctx.error(target, f"'{name}' is a list in Python mode, where {name}[i, j] does not work",
                        hint=f"wrap it in ps.array(...) where it is built")
    # ownership
    if arr.buffer <= 0:
        params = {ctx.fs.param_vars.get(p.name) for p in arr.parts}
        if arr.parts and None not in params and len(params) == 1:
            (param,) = params
            if param == name:
                raise ctx.error(target, f"in-place update of parameter '{name}', which this function "
                                        f"does not own; update ps.copy({name}) instead",
                                hint=f"{name} = ps.copy({name}) before the update")
            raise ctx.error(target, f"in-place update of '{name}', which aliases parameter '{param}' "
                                    f"(this function does not own it); update a copy instead",
                            hint=f"{name} = ps.copy({param}) before the update")
        raise ctx.error(target, f"in-place update of '{name}', which this function does not own (it "
                                f"may share storage with a parameter, a constant or another array); "
                                f"update ps.copy({name}) instead")
    home = ctx.scope.function_of(name)
    if home is not None and home is not ctx.scope.function_boundary():
        raise ctx.error(target, f"in-place update of '{name}', which this local function captures "
                                f"from the enclosing function, is not supported",
                        hint=f"return a new array instead, e.g. ps.update({name}, i, v)")
    for other, v in ctx.scope.visible().items():
        if other == name or not isinstance(v, (ArrayV, TupleV)):
            continue
        if abs(arr.buffer) not in array_buffers(v):
            continue
        if used_later(ctx, other):
            raise ctx.error(target, f"in-place update of '{name}' while '{other}' still aliases it; "
                                    f"update ps.copy({name}) instead",
                            hint=f"bind {other} = ps.copy({name}) if it should keep the old values")
    # the value: numpy converts what is stored into an array, so a weak value
    # takes the element type; a list (Python mode) keeps the Python number
    st_elem = arr.stype
    for _ in idxs:
        st_elem = st_elem.elem
    v = compute(ctx) if compute is not None else translate_expr(ctx, value_node, st_elem)
    v = coerce(v, st_elem, ctx.src, value_node, strict=arr.from_list,
               what=f"a value stored into '{name}'" + (" (a list in Python mode)" if arr.from_list else ""))
    atoms = flatten_value(v)
    parts = tuple(ctx.b.bind1(ir.Update(p, tuple(idxs), a), name, ctx.loc(st))
                  for p, a in zip(arr.parts, atoms))
    py = or_py(arr.part_py(), py_flags(v)) if arr.from_list else arr.py
    bind_name(ctx, base, ArrayV(arr.stype, parts, arr.buffer, arr.from_list, py), verb="updating")


# ---------------------------------------------------------------------------
# if statements


def translate_if(ctx: Ctx, st: cst.If) -> None:
    """An if whose branches do not return: names they bind flow out."""
    cond = translate_condition(ctx, st.test)
    ct, ce = ctx.nested(), ctx.nested()
    translate_block(ct, block_stmts(st.body), False)
    translate_block(ce, orelse_stmts(st), False)
    names = list(dict.fromkeys(list(ct.scope.vars) + list(ce.scope.vars)))
    merged: list[tuple[str, Value, Value]] = []
    for n in names:
        before = ctx.scope.bound(n)
        vt, ve = ct.scope.bound(n), ce.scope.bound(n)
        if isinstance(vt, LocalDef) or isinstance(ve, LocalDef):
            if vt is not ve:
                ctx.scope.set(n, Unbound(*_branch_def_message(ctx, st, n, vt, ve, before)))
            continue
        for v in (vt, ve):
            if isinstance(v, Unbound):
                ctx.scope.set(n, v)
                break
        else:
            if vt is None or ve is None:
                which = "if" if ve is None else "else"
                ctx.scope.set(n, Unbound(f"'{n}' is bound only when the {which} branch runs; "
                                         f"bind it before the if"))
            elif vt is ve:
                if before is not vt:
                    ctx.scope.set(n, vt, ct.scope.origin(n))
            else:
                merged.append((n, vt, ve))
    if not merged and not ct.b.stms and not ce.b.stms:
        return
    res_t, res_e = [], []
    for n, vt, ve in merged:
        a, b = merge_branches(ctx, vt, ve, ct.scope.origin(n) or st, ce.scope.origin(n) or st,
                              f"the values '{n}' gets in the two branches")
        res_t.append(a)
        res_e.append(b)
    at = [x for v in res_t for x in flatten_value(v)]
    ae = [x for v in res_e for x in flatten_value(v)]
    hints = [n for (n, vt, _), v in zip(merged, res_t) for _ in flatten_value(v)]
    outs = list(ctx.b.bind(ir.If(cond.atom, ct.b.body(at), ce.b.body(ae), tuple(a.type for a in at)),
                           loc=ctx.loc(st), hints=hints))
    for (n, vt, ve), a, b in zip(merged, res_t, res_e):
        k = len(flatten_value(a))
        val = merged_meta(rebuild_value(value_stype(a), outs[:k]), vt, ve)
        outs = outs[k:]
        ctx.scope.set(n, val, st)


def _branch_def_message(ctx: Ctx, st: cst.If, n: str, vt, ve, before) -> tuple[str, str]:
    """Why a name that a local def binds in a branch cannot be used after the if."""
    line = ctx.loc(st).line
    if isinstance(vt, LocalDef) and isinstance(ve, LocalDef) and before is not vt and before is not ve:
        return (f"the local function '{n}' is defined in both branches of the if at line {line}; "
                f"PyShark binds a local function once",
                f"define one '{n}' before the if and choose inside it, or give the two "
                f"functions different names")
    if isinstance(vt, LocalDef) and isinstance(ve, LocalDef):
        which = "if" if before is ve else "else"
        return (f"the local function '{n}' is redefined only in the {which} branch of the if at "
                f"line {line}", f"define '{n}' once, or give the new function another name")
    if (isinstance(vt, LocalDef)) != (isinstance(ve, LocalDef)) and vt is not None and ve is not None:
        return (f"'{n}' is a local function on one path through the if at line {line} and a "
                f"value on the other", "use different names for the function and the value")
    which = "if" if isinstance(vt, LocalDef) else "else"
    return (f"the local function '{n}' is defined only in the {which} branch of the if at "
            f"line {line}", "define it before the if")


def _ret_node(ctx: Ctx, v: Value, default):
    """The return expression that gave v (for locating errors)."""
    hit = ctx.fs.ret_nodes.get(id(v))
    return hit[1] if hit is not None and hit[0] is v else default


def translate_if_returning(ctx: Ctx, st: cst.If, rest: list) -> Optional[Value]:
    """An if containing a return, in return mode: the rest of the block runs
    in each branch that falls through, and the If yields the result."""
    cond = translate_condition(ctx, st.test)
    ct, ce = ctx.nested(), ctx.nested()
    vt = translate_block(ct, block_stmts(st.body) + rest, True)
    if vt is None:
        return None
    ve = translate_block(ce, orelse_stmts(st) + rest, True)
    if ve is None:
        if st.orelse is None and not rest:
            ctx.fs.falloff = ctx.src.code(st.test)
        return None
    a, b = merge_branches(ctx, vt, ve, _ret_node(ctx, vt, st), _ret_node(ctx, ve, st),
                          f"the values '{ctx.frame.name}' returns")
    at, ae = flatten_value(a), flatten_value(b)
    outs = ctx.b.bind(ir.If(cond.atom, ct.b.body(at), ce.b.body(ae), tuple(x.type for x in at)),
                      "ret", ctx.loc(st))
    return merged_meta(rebuild_value(value_stype(a), outs), vt, ve)
