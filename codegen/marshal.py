"""What the native backends (cpu, opencl) share when they return from
compiled code: the Python exception of an error (code, message number, i64
args) that compiled code reports through the ctx protocol of kir.py. (The
flatten -> call -> unflatten path is wrapper/convert.py's FlatCall.)"""
from __future__ import annotations

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


__all__ = ["ERRORS", "error_from"]
