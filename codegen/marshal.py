"""Marshalling shared by the native backends (cpu, opencl): an entry's flat
ABI read from abi.json, the flatten -> call -> unflatten path around it, and
the Python exception of an error (code, message number, i64 args) that
compiled code reports (the ctx protocol of kir.py)."""
from __future__ import annotations

import numpy as np

from pyshark.core import ir
from pyshark.core.types import ScalarType
from pyshark.errors import ShapeError
from pyshark.wrapper import convert

#: kir.ERROR_CODES -> the exception class Python mode raises
ERRORS = {1: IndexError, 2: ZeroDivisionError, 3: AssertionError, 4: ShapeError,
          5: ValueError, 6: MemoryError}


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


class Signature:
    """One entry's flat ABI (abi.json's {"params": [[elem, rank]...],
    "results": [...]}) with what the call path decides once: `params`
    [(dtype, rank)], `results` [(dtype, rank, elem name)], `flat_params`
    (the canonical arguments already are the flat ones) and `simple_result`
    (one scalar result, returned as is)."""

    def __init__(self, spec: dict, entry: ir.Entry):
        self.entry = entry
        self.params = [(np.dtype(ScalarType(e).dtype), r) for e, r in spec["params"]]
        self.results = [(np.dtype(ScalarType(e).dtype), r, e) for e, r in spec["results"]]
        # entries whose parameters are all scalars or arrays of scalars take
        # their canonical arguments as the flat ones
        self.flat_params = len(entry.params) == len(self.params)
        self.simple_result = len(self.results) == 1 and self.results[0][1] == 0

    def flatten(self, canon_args: list) -> list:
        if self.flat_params:
            return canon_args
        return [x for p, a in zip(self.entry.params, canon_args)
                for x in convert.flatten_value(p.stype, a)]

    def output(self, results: list):
        """The entry's value in the output format from its flat results."""
        if self.simple_result:
            return results[0]
        return convert.to_output(self.entry.ret, convert.unflatten_value(self.entry.ret, results))


__all__ = ["ERRORS", "error_from", "Signature"]
