"""The compiled program's types, for Python mode's empty results.

An empty result has no element to learn its type from. Where the module was
translated (entries called through the Wrapper's python backend), the
translator has already typed every prelude call, so Python mode uses those
types instead of guessing:

* The python backend builds a *site table* from the core IR: for every
  source position `(line, col)` (0-based col, in characters) the Lets the
  translator emitted there, as `(kind, flat_types)` with `kind` the Exp class
  name (`"Map"`, `"Reduce"`, ...) and `flat_types` the types of the Let's
  results, each a `(numpy dtype, rank)` pair (tuples and records are
  flattened, as in the IR).
* While an entry runs, `active(filename, table)` makes the table visible for
  the module's file.
* A prelude function that has to type an empty result calls `site_types`
  with the Exp kinds its lowering emits (map: `Map`; sum: `Reduce`; ...).
  The caller's call expression is found from the calling frame (its current
  instruction's `co_positions()` start is the start of `ps.map(...)`, which
  is where the translator locates the call's Lets). Among the Lets of those
  kinds at that position the one of highest rank is the call's own (a nested
  row Map of `tabulate_2d` has a lower rank; a parent expression starting at
  the same position, `ps.map(f, xs)[0]`, has another kind); if several
  differ (a local def translated once per use) the answer is "unknown".

Without a table (a module imported and called directly) `site_types` says
"unknown" and the caller falls back to its own rules (build.py).
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import contextvars
import linecache
import os
import sys

import numpy as np

_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("pyshark_site_tables", default=None)
_PRELUDE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@contextlib.contextmanager
def active(filename: str, table):
    """Makes `table` (a site table, or a callable returning one) the types of
    the module in `filename` while the block runs."""
    tables = dict(_ACTIVE.get() or {})
    tables[os.path.abspath(filename)] = table
    token = _ACTIVE.set(tables)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def _user_frame():
    """The innermost frame outside the prelude package (the prelude call's caller)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PRELUDE_DIR):
        f = f.f_back
    return f


_POSITIONS: dict = {}


def _positions(code, lasti):
    """co_positions() of the instruction at lasti: (line, end_line, col, end_col),
    the columns in UTF-8 bytes."""
    positions = _POSITIONS.get(code)
    if positions is None:
        positions = _POSITIONS[code] = list(code.co_positions())
    k = lasti // 2
    if not 0 <= k < len(positions) or None in positions[k]:
        return None
    return positions[k]


def _chars(filename, line, col_bytes):
    """A UTF-8 byte column of a source line as a character column (the IR's)."""
    text = linecache.getline(filename, line)
    if text.isascii():
        return col_bytes
    return len(text.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))


def source_span(filename, pos):
    """The source text of a co_positions() span, or None."""
    lines = linecache.getlines(filename)
    if pos is None or None in pos or not lines or pos[1] > len(lines):
        return None
    l0, l1, c0, c1 = pos
    chunk = [ln.encode("utf-8") for ln in lines[l0 - 1:l1]]
    if len(chunk) == 1:
        chunk[0] = chunk[0][c0:c1]
    else:
        chunk[0], chunk[-1] = chunk[0][c0:], chunk[-1][:c1]
    return b"".join(chunk).decode("utf-8", errors="replace")


def _caller():
    """(table, frame) for the prelude call being executed, or None."""
    tables = _ACTIVE.get()
    if not tables:
        return None
    f = _user_frame()
    if f is None:
        return None
    table = tables.get(os.path.abspath(f.f_code.co_filename))
    if table is None:
        return None
    if callable(table):
        table = table()
        if table is None:
            return None
    return table, f


def call_site():
    """(table, line, col) where the prelude call being executed starts, or None."""
    found = _caller()
    if found is None:
        return None
    table, f = found
    pos = _positions(f.f_code, f.f_lasti)
    if pos is None:
        return None
    filename = f.f_code.co_filename
    return table, pos[0], _chars(filename, pos[0], pos[2])


def argument_site(k: int):
    """(table, line, col) where argument k of the prelude call being executed
    starts (for functions whose lowering emits nothing of its own, such as
    `ps.array`), or None."""
    found = _caller()
    if found is None:
        return None
    table, f = found
    filename = f.f_code.co_filename
    pos = _positions(f.f_code, f.f_lasti)
    text = source_span(filename, pos)
    if text is None:
        return None
    try:
        call = ast.parse("(" + text + "\n)", mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or k >= len(call.args):
        return None
    arg = call.args[k]
    line = pos[0] + arg.lineno - 1
    col = arg.col_offset + (pos[2] - 1 if arg.lineno == 1 else 0)   # "(" was prepended
    return table, line, _chars(filename, line, col)


def site_types(kinds, lead: int = 0, drop: int = 0, site=None):
    """The flat element types the compiled program gives the result of the
    prelude call being executed: the results of its Let of one of `kinds`,
    without their first `drop` values and `lead` outer dimensions, as
    [(dtype, rank), ...]; None when unknown."""
    site = site if site is not None else call_site()
    if site is None:
        return None
    table, line, col = site
    found = [types for kind, types in table.get((line, col), ()) if kind in kinds and types]
    if not found:
        return None
    top = builtins.max(t[0][1] for t in found)
    found = {t for t in found if t[0][1] == top}
    if len(found) != 1:
        return None
    (types,) = found
    types = types[drop:]
    if not types or builtins.any(rank < lead for _, rank in types):
        return None
    return [(np.dtype(dt), rank - lead) for dt, rank in types]


__all__ = ["active", "argument_site", "call_site", "site_types", "source_span"]
