"""Calls of prelude functions and of the supported builtins, lowered to core IR.

The translator resolves a call's name (`ps.map`, `from pyshark.prelude import
map`, `len`) to a qualified name and hands the translated arguments here:

    is_prelude_name(qualname) -> bool
    lower_call(ctx, qualname, args, node) -> Value

`args` are Values, FunVs (function arguments) and TypeArgs (`ps.highest(ps.f32)`);
`node.args[i].value` locates errors about argument i. The lowerings live in
prelude_scalars / prelude_soacs / prelude_arrays; docs/prelude-lowering.md
records the decisions where LANGUAGE.md is silent.
"""
from __future__ import annotations

import libcst as cst

from . import prelude_arrays, prelude_scalars, prelude_soacs
from .prelude_common import PCall, display_name

HANDLERS: dict = {}
HANDLERS.update(prelude_scalars.handlers())
HANDLERS.update(prelude_soacs.handlers())
HANDLERS.update(prelude_arrays.handlers())


def is_prelude_name(qualname: str) -> bool:
    """True for the prelude functions and builtins that lower_call handles."""
    return qualname in HANDLERS


def lower_call(ctx, qualname: str, args: list, node: cst.Call):
    """The value of `qualname(*args)`, emitting core statements into ctx.b."""
    handler = HANDLERS.get(qualname)
    if handler is None:
        raise ctx.src.error(node, f"{display_name(qualname)} is not a PyShark prelude function")
    for a in getattr(node, "args", ()):
        if a.keyword is not None or a.star:
            what = f"keyword argument '{a.keyword.value}'" if a.keyword is not None else "*args"
            raise ctx.src.error(a, f"{display_name(qualname)} does not take a {what}",
                                hint="pass the arguments by position")
    return handler(PCall(ctx, qualname, args, node))
