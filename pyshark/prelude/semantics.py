"""What "run as Python" means for scalar arithmetic, and the `entry` decorator.

numpy scalars already give the defined semantics for + - * (wraparound) and
IEEE floats, but numpy only *warns* on integer // and % by zero and returns 0,
while every PyShark backend must raise ZeroDivisionError. `python_semantics()`
turns exactly that warning into the error and silences the other numpy
RuntimeWarnings (integer overflow, float divide by zero, invalid value),
whose results are the defined semantics.
"""
from __future__ import annotations

import contextlib
import functools
import re
import warnings

import numpy as np

ZERO_DIVISION_MESSAGE = r"divide by zero encountered in (scalar )?(floor_divide|remainder|divmod)"
_ZERO_DIVISION_RE = re.compile(ZERO_DIVISION_MESSAGE, re.IGNORECASE)


def _raise_zero_division(message, category, filename, lineno, file=None, line=None):
    """showwarning replacement: the only warnings that reach it are numpy's
    integer // or % by zero, which become ZeroDivisionError where they happen."""
    raise ZeroDivisionError("integer division or modulo by zero")


@contextlib.contextmanager
def python_semantics():
    """Run PyShark code as Python: integer // and % by zero raise ZeroDivisionError,
    other numpy RuntimeWarnings are silenced.

    The error is raised at the operation itself (the warning is routed to a
    showwarning that raises), so it unwinds through user code like Python's
    own ZeroDivisionError. Float `/` by zero still gives inf/nan. (numpy
    reports float `//` and `%` by a zero divisor with the same warning, so
    those raise too, as in Python; the language leaves that case open.)
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
