"""What "run as Python" means for scalar arithmetic, and the `entry` decorator.

numpy scalars already give the defined semantics for + - * (wraparound) and
IEEE floats, but numpy only *warns* on integer // and % by zero and returns 0,
while every PyShark backend must raise ZeroDivisionError. `python_semantics()`
turns exactly that warning into the error and silences the other numpy
RuntimeWarnings (integer overflow, float divide by zero, invalid value),
whose results are the defined semantics.

numpy reports a *float* `x // 0.0` (x nonzero) with the very same warning
("divide by zero encountered in scalar floor_divide") as the integer case,
and the warning says nothing about the operands. So when that warning
arrives, the handler looks at the operation that issued it: the frame's
current instruction (a `//` or `%`), its source span (`co_positions`), and
the values of its two operand expressions, evaluated again in that frame
(PyShark code is pure, so evaluating an operand twice changes nothing). If an
operand is a float the result is numpy's inf/nan and nothing is raised, as
LANGUAGE.md requires; otherwise (integers, or whenever the operation cannot
be identified) it raises ZeroDivisionError.
"""
from __future__ import annotations

import ast
import contextlib
import dis
import functools
import re
import sys
import warnings

import numpy as np

from .static import source_span

ZERO_DIVISION_MESSAGE = r"divide by zero encountered in (scalar )?(floor_divide|remainder|divmod)"
_ZERO_DIVISION_RE = re.compile(ZERO_DIVISION_MESSAGE, re.IGNORECASE)
_DIVISIONS = frozenset({"//", "%", "//=", "%="})


# --- which operation warned ---------------------------------------------------------------
def _warning_frame(filename, lineno):
    """The frame that issued the warning: the innermost one at filename:lineno."""
    f = sys._getframe(2)
    for _ in range(16):
        if f is None:
            return None
        if f.f_code.co_filename == filename and f.f_lineno == lineno:
            return f
        f = f.f_back
    return None


_OPERANDS: dict = {}


def _operand_codes(code, lasti):
    """(left, right) compiled operand expressions of the `//` or `%` at lasti, or None."""
    key = (code, lasti)
    if key in _OPERANDS:
        return _OPERANDS[key]
    found = None
    try:
        ins = next((i for i in dis.get_instructions(code) if i.offset == lasti), None)
        if ins is not None and ins.opname == "BINARY_OP" and ins.argrepr in _DIVISIONS:
            text = source_span(code.co_filename, ins.positions)
            if text is not None:
                found = _parse_operands(text, code.co_filename)
    except Exception:  # an unreadable source or an odd span: "unknown"
        found = None
    if len(_OPERANDS) > 4096:
        _OPERANDS.clear()
    _OPERANDS[key] = found
    return found


def _parse_operands(text, filename):
    try:
        node = ast.parse("(" + text + "\n)", mode="eval").body
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod))):
            return None
        left, right = node.left, node.right
    except SyntaxError:  # `x //= y`: the span is the whole statement
        stmt = ast.parse(text).body[0]
        if not (isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name)):
            return None
        left, right = ast.Name(stmt.target.id, ast.Load()), stmt.value
    return tuple(compile(ast.fix_missing_locations(ast.Expression(e)), filename, "eval")
                 for e in (left, right))


def _is_float(v) -> bool:
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "fc"
    return isinstance(v, (float, np.floating, complex, np.complexfloating))


def divides_floats(frame) -> bool:
    """True when the `//` or `%` that `frame` is executing has a float operand."""
    codes = _operand_codes(frame.f_code, frame.f_lasti)
    if codes is None:
        return False
    # one namespace, so that lambdas and comprehensions inside an operand see the locals
    namespace = dict(frame.f_globals)
    namespace.update(frame.f_locals)
    try:
        values = [eval(c, namespace) for c in codes]
    except Exception:
        return False
    return any(_is_float(v) for v in values)


def _raise_zero_division(message, category, filename, lineno, file=None, line=None):
    """showwarning replacement: the only warnings that reach it are numpy's
    `//` or `%` by zero; integer ones become ZeroDivisionError where they happen."""
    frame = _warning_frame(filename, lineno)
    if frame is not None and divides_floats(frame):
        return                      # float // or % by zero: numpy's inf/nan stand
    raise ZeroDivisionError("integer division or modulo by zero")


@contextlib.contextmanager
def python_semantics():
    """Run PyShark code as Python: integer // and % by zero raise ZeroDivisionError,
    float ones give numpy's inf/nan, other numpy RuntimeWarnings are silenced.

    The error is raised at the operation itself (the warning is routed to a
    showwarning that raises), so it unwinds through user code like Python's
    own ZeroDivisionError. Float `/`, `//` and `%` by zero give inf/nan.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("always", message=ZERO_DIVISION_MESSAGE, category=RuntimeWarning)
        warnings.showwarning = _raise_zero_division
        # divide must warn whatever the caller's np.seterr says, or no error could be raised
        with np.errstate(divide="warn", over="ignore", under="ignore", invalid="ignore"):
            try:
                yield
            except RuntimeWarning as w:  # a caller's filter turned it into an error
                if _ZERO_DIVISION_RE.match(str(w)):
                    raise ZeroDivisionError("integer division or modulo by zero") from None
                raise


def entry(fn):
    """Mark `fn` as an entry point; called as Python it runs under python_semantics()."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with python_semantics():
            return fn(*args, **kwargs)

    wrapper.__pyshark_entry__ = True
    return wrapper
