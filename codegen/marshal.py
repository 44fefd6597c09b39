"""What the native backends (cpu, opencl) share at the boundary with
compiled code: the entry ABI they record in abi.json (`abi_of`), and the
Python exception of an error (code, message number, i64 args) that compiled
code reports through the ctx protocol of kir.py. (The flatten -> call ->
unflatten path is wrapper/convert.py's FlatCall.)"""
from __future__ import annotations

from pyshark.core import ir
from pyshark.core.types import ScalarType
from pyshark.errors import RUNTIME_ERRORS

#: kir.ERROR_CODES -> the exception class Python mode raises
ERRORS = {code: cls for code, cls in RUNTIME_ERRORS.values()}


def error_from(code: int, msg: int, args, messages: list) -> Exception:
    """The exception for an error reported by compiled code: ERRORS[code]
    with message template `messages[msg]` filled with the i64 `args`."""
    cls = ERRORS.get(code, RuntimeError)
    if 0 <= msg < len(messages):
        text = messages[msg]
        try:
            text = text.format(*list(args)[:text.count("{}")])
        except (IndexError, ValueError):
            pass
    else:
        text = f"error {code} in compiled code"
    return cls(text)


def abi_of(program: ir.Program) -> dict:
    """Per entry: the core parameter and result types in ABI order, each
    [scalar type, rank] (an array is a pointer and one i64 per dimension)."""
    out = {}
    for name in program.entries:
        fun = program.entry_fun(name)
        out[name] = {
            "params": [_tjson(p.type) for p in fun.params],
            "results": [_tjson(t) for t in fun.ret],
        }
    return out


def _tjson(t):
    if isinstance(t, ScalarType):
        return [t.value, 0]
    return [t.elem.value, t.rank]


__all__ = ["ERRORS", "abi_of", "error_from"]
