"""The golden-rule tolerance (`assert_close`) and the shared test-case runner.

`pyshark test` and the pytest suite both use the runner here, so a case
means the same thing everywhere. A case is
    {"entry": "saxpy", "args": [2.0, [1.0], [3.0]], "expected": [5.0]}
or  {"entry": "element_at", "args": [[1, 2], 5], "raises": "IndexError"},
read from the module's embedded table (a module-level assignment
`__pyshark_cases__ = [...]`, read with ast, never executed) and from
NAME.cases.json beside the module (`{"cases": [...]}`).
"""
from __future__ import annotations

import ast
import copy
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import NOT_ASSERTED, RUNTIME_ERRORS, CompileError, ShapeError

__all__ = ["assert_close", "Case", "Outcome", "CaseResult", "RAISES", "load_cases",
           "embedded_cases", "find_modules", "compiled_wrapper", "run_case",
           "check_expected", "check_against_python", "run_module", "DEFAULT_TOLERANCE",
           "conformance_dir"]

#: dtype -> (rtol, atol) used by assert_close when none is given
DEFAULT_TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-12)}

#: what a case's "raises" may name: every run-time error compiled code raises
RAISES = {name: cls for name, (_, cls) in RUNTIME_ERRORS.items() if name not in NOT_ASSERTED}


# ---------------------------------------------------------------------------
# assert_close


def assert_close(got, want, *, rtol: float | None = None, atol: float | None = None) -> None:
    """Raises AssertionError unless `got` equals `want` under the golden rule.

    Ints and bools compare exactly (with their dtype when both sides are
    numpy values); floats within atol + rtol * |want| (f32: 1e-5/1e-6, f64:
    1e-12/1e-12 by default); NaN matches NaN, infinities match exactly, the
    sign of zero is not compared. Works on scalars, n-d arrays, tuples,
    records, structured arrays; an empty array matches any empty array of
    the same rank.
    """
    _close(got, want, rtol, atol, "value")


def _fail(path: str, msg: str):
    raise AssertionError(f"{path}: {msg}")


def _is_tuple(v) -> bool:
    return isinstance(v, tuple)


def _close(g, w, rtol, atol, path: str) -> None:
    if _is_tuple(w) or _is_tuple(g):
        if not (_is_tuple(w) and _is_tuple(g)):
            _fail(path, f"got {short(g)}, want {short(w)}")
        if len(g) != len(w):
            _fail(path, f"got {len(g)} values, want {len(w)}: got {short(g)}, want {short(w)}")
        gf, wf = getattr(type(g), "_fields", None), getattr(type(w), "_fields", None)
        if gf is not None and wf is not None and tuple(gf) != tuple(wf):
            _fail(path, f"record fields {tuple(gf)} differ from {tuple(wf)}")
        for i, (a, b) in enumerate(zip(g, w)):
            _close(a, b, rtol, atol, f"{path}.{wf[i]}" if wf else f"{path}[{i}]")
        return
    ga, wa = np.asarray(g), np.asarray(w)
    if ga.size == 0 or wa.size == 0:
        if ga.size != wa.size or ga.ndim != wa.ndim:
            _fail(path, f"got {short(g)} (shape {ga.shape}), want {short(w)} (shape {wa.shape})")
        return
    if ga.shape != wa.shape:
        _fail(path, f"shape {ga.shape} differs from {wa.shape}: got {short(g)}, want {short(w)}")
    if ga.dtype.names is not None or wa.dtype.names is not None:
        gn, wn = ga.dtype.names or (), wa.dtype.names or ()
        if len(gn) != len(wn) or not gn:
            _fail(path, f"got {short(g)} ({ga.dtype}), want {short(w)} ({wa.dtype})")
        for a, b in zip(gn, wn):
            _close(ga[a], wa[b], rtol, atol, f"{path}.{b}")
        return
    typed = all(isinstance(v, (np.ndarray, np.generic)) for v in (g, w))
    if typed and ga.dtype != wa.dtype:
        _fail(path, f"dtype {ga.dtype} differs from {wa.dtype}: got {short(g)}, want {short(w)}")
    kinds = {ga.dtype.kind, wa.dtype.kind}
    if "f" in kinds:
        _close_float(ga, wa, rtol, atol, path, g, w)
    elif kinds <= set("biu"):
        if ("b" in kinds) != (kinds == {"b"}):
            _fail(path, f"got {short(g)}, want {short(w)} (bool against a number)")
        if not np.array_equal(ga, wa):
            _fail(path, f"got {short(g)}, want {short(w)}{_where_differs(ga != wa)}")
    elif not np.array_equal(ga, wa):
        _fail(path, f"got {short(g)}, want {short(w)}")


def _tolerance(ga, wa, rtol, atol):
    floats = [a.dtype for a in (ga, wa) if a.dtype.kind == "f"]
    narrow = min(floats, key=lambda d: d.itemsize)
    drtol, datol = DEFAULT_TOLERANCE.get(narrow, DEFAULT_TOLERANCE[np.dtype(np.float32)])
    return (drtol if rtol is None else rtol), (datol if atol is None else atol)


def _close_float(ga, wa, rtol, atol, path, g, w) -> None:
    if "b" in (ga.dtype.kind, wa.dtype.kind):
        _fail(path, f"got {short(g)}, want {short(w)} (bool against a float)")
    rtol, atol = _tolerance(ga, wa, rtol, atol)
    gd, wd = ga.astype(np.float64), wa.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        both_nan = np.isnan(gd) & np.isnan(wd)
        inf = np.isinf(wd) | np.isinf(gd)
        ok = np.where(inf, gd == wd, np.abs(gd - wd) <= atol + rtol * np.abs(wd))
        ok = both_nan | (ok & ~np.isnan(gd) & ~np.isnan(wd))
    if not np.all(ok):
        _fail(path, f"got {short(g)}, want {short(w)} (rtol={rtol}, atol={atol})"
                    f"{_where_differs(~ok)}")


def _where_differs(mask) -> str:
    mask = np.asarray(mask)
    if mask.ndim == 0:
        return ""
    idx = tuple(int(i) for i in np.argwhere(mask)[0])
    return f"; first difference at index {idx[0] if len(idx) == 1 else idx}"


def short(v, limit: int = 160) -> str:
    """A compact one-line rendering of a value for failure messages."""
    if isinstance(v, np.ndarray):
        text = _array_text(v)
        text += f" ({v.dtype})" if v.dtype.names is None else ""
    elif isinstance(v, np.generic):
        text = f"{str(v)} ({v.dtype})"
    elif isinstance(v, tuple):
        inner = ", ".join(short(x, limit) for x in v)
        name = type(v).__name__ if hasattr(type(v), "_fields") else ""
        text = f"{name}({inner}{',' if len(v) == 1 and not name else ''})"
    elif isinstance(v, BaseException):
        text = f"{type(v).__name__}: {v}"
    else:
        text = json.dumps(v) if _jsonable(v) else repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _array_text(v: np.ndarray) -> str:
    if v.ndim == 0:
        return str(v[()])
    parts = [_array_text(x) for x in (v if len(v) <= 8 else v[:3])]
    if len(v) > 8:
        parts += ["..."] + [_array_text(x) for x in v[-3:]]
    return "[" + ", ".join(parts) + "]"


def _jsonable(v) -> bool:
    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    module: Path
    entry: str
    args: list
    expected: Any = None
    raises: str | None = None
    origin: str = ""          # "embedded" or the .cases.json file name
    index: int = 0

    @property
    def id(self) -> str:
        return f"{self.module.stem}::{self.entry}#{self.index}"


_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "NaN": math.nan, "Infinity": math.inf}


class _Floats(ast.NodeTransformer):
    """Lets embedded cases write nan/inf (`ps.nan`, `float("inf")`, `math.inf`)."""

    def visit_Name(self, node):
        if node.id in _SPECIAL_FLOATS:
            return ast.copy_location(ast.Constant(_SPECIAL_FLOATS[node.id]), node)
        return node

    def visit_Attribute(self, node):
        if node.attr in _SPECIAL_FLOATS:
            return ast.copy_location(ast.Constant(_SPECIAL_FLOATS[node.attr]), node)
        return node

    def visit_Call(self, node):
        if (isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            return ast.copy_location(ast.Constant(float(node.args[0].value)), node)
        return self.generic_visit(node)


CASES_NAME = "__pyshark_cases__"


def embedded_cases(source: str, filename: str = "<source>") -> list[dict]:
    """The `__pyshark_cases__ = [...]` table of a module, read without running it."""
    tree = ast.parse(source, filename)
    for node in tree.body:
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) and node.value else [])
        if any(isinstance(t, ast.Name) and t.id == CASES_NAME for t in targets):
            try:
                value = ast.literal_eval(_Floats().visit(node.value))
            except ValueError as exc:
                raise ValueError(f"{filename}:{node.lineno}: {CASES_NAME} must be a literal "
                                 f"list of case dicts ({exc})") from None
            return _validate(value, f"{filename}:{node.lineno}")
    return []


def _validate(cases, where: str) -> list[dict]:
    if isinstance(cases, dict) and "cases" in cases:
        cases = cases["cases"]
    if not isinstance(cases, (list, tuple)):
        raise ValueError(f"{where}: test cases must be a list of dicts")
    for i, c in enumerate(cases):
        if not isinstance(c, dict) or "entry" not in c or "args" not in c:
            raise ValueError(f"{where}: case {i} needs 'entry' and 'args'")
        if ("expected" in c) == ("raises" in c):
            raise ValueError(f"{where}: case {i} needs exactly one of 'expected' and 'raises'")
        if "raises" in c and c["raises"] not in RAISES:
            raise ValueError(f"{where}: case {i}: 'raises' must be one of {', '.join(RAISES)}")
    return list(cases)


def load_cases(path: str | Path) -> list[Case]:
    """Embedded cases first, then those of NAME.cases.json beside the module."""
    path = Path(path)
    raw = [(c, "embedded") for c in embedded_cases(path.read_text(), str(path))]
    json_path = path.with_name(path.stem + ".cases.json")
    if json_path.is_file():
        data = json.loads(json_path.read_text())
        raw += [(c, json_path.name) for c in _validate(data, str(json_path))]
    return [Case(path, c["entry"], list(c["args"]), c.get("expected"), c.get("raises"),
                 origin, i) for i, (c, origin) in enumerate(raw)]


def find_modules(path: str | Path) -> list[Path]:
    """A module, or the PyShark modules directly inside a folder (sorted).

    In a folder, a PyShark module is a .py file that mentions pyshark.prelude
    (scripts that only use the Wrapper, like examples/demo.py, are not)."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.glob("*.py")
                      if not p.name.startswith(("_", "test_"))
                      and "pyshark.prelude" in p.read_text(errors="replace"))
    if path.is_file():
        return [path]
    raise FileNotFoundError(f"no such module or folder: {path}")


def conformance_dir() -> Path:
    """The conformance corpus: $PYSHARK_CONFORMANCE, else <repo>/../shared/conformance
    (the repository being the folder above the pyshark package), else the
    same place beside the repository this one was cloned from when that is
    a local folder (a scratch clone, e.g. /tmp/fresh, of a checkout that
    sits beside shared/)."""
    env = os.environ.get("PYSHARK_CONFORMANCE")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parent.parent
    here = repo.parent / "shared" / "conformance"
    if here.is_dir():
        return here
    origin = _local_origin(repo)
    if origin is not None and (origin.parent / "shared" / "conformance").is_dir():
        return origin.parent / "shared" / "conformance"
    return here


def _local_origin(repo: Path) -> Path | None:
    """The folder of the repository's `origin` remote when it is a local
    path (read from .git/config; no git process)."""
    config = repo / ".git" / "config"
    try:
        text = config.read_text()
    except OSError:
        return None
    section = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == '[remote "origin"]' and line.startswith("url"):
            url = line.split("=", 1)[1].strip()
            if url.startswith("file://"):
                url = url[len("file://"):]
            path = Path(url)
            if not path.is_absolute():
                path = (repo / path).resolve()
            return path if path.is_dir() else None
    return None


# ---------------------------------------------------------------------------
# Running cases


_WRAPPERS: dict = {}


def compiled_wrapper(path: str | Path, backend: str):
    """A loaded Wrapper per (module, backend), kept for the process (a
    CompileError is kept too, and raised again)."""
    from pyshark.wrapper import Wrapper
    key = (str(Path(path).resolve()), backend)
    if key not in _WRAPPERS:
        try:
            w = Wrapper(backend)
            w.add_source_file(path)
            _WRAPPERS[key] = w.compile_and_load()
        except CompileError as exc:
            _WRAPPERS[key] = exc
    found = _WRAPPERS[key]
    if isinstance(found, BaseException):
        raise found
    return found


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None

    def describe(self) -> str:
        return short(self.error) if self.error is not None else short(self.value)


def run_case(wrapper, case: Case) -> Outcome:
    """Calls the case's entry with its JSON args (the Wrapper converts them by
    the entry's surface types; a JSON float for f32 is rounded first)."""
    try:
        return Outcome(value=wrapper.invoke(case.entry, *copy.deepcopy(case.args)))
    except Exception as exc:        # every failure is an outcome to report, not a crash
        return Outcome(error=exc)


def check_expected(wrapper, case: Case, outcome: Outcome) -> str | None:
    """None when the outcome is what the case says, else a message."""
    if case.raises is not None:
        want = RAISES[case.raises]
        if outcome.error is None:
            return f"got {outcome.describe()}, want {case.raises}"
        if not isinstance(outcome.error, want):
            return f"got {outcome.describe()}, want {case.raises}"
        return None
    if outcome.error is not None:
        return f"got {outcome.describe()}, want {short(case.expected)}"
    from pyshark.wrapper.convert import output_from_value
    _, entry = wrapper._lookup(case.entry)
    try:
        want = output_from_value(entry.ret, case.expected, "expected")
    except (TypeError, ValueError, OverflowError) as exc:
        return f"bad 'expected' in the case: {exc}"
    try:
        assert_close(outcome.value, want)
    except AssertionError as exc:
        return f"got {short(outcome.value)}, want {short(want)} ({exc})"
    return None


def check_against_python(outcome: Outcome, reference: Outcome) -> str | None:
    """The golden rule: a backend's outcome against Python mode's."""
    if reference.error is not None or outcome.error is not None:
        if reference.error is None or outcome.error is None:
            return f"got {outcome.describe()}, Python mode gives {reference.describe()}"
        if type(outcome.error) is not type(reference.error):
            return f"raised {outcome.describe()}, Python mode raises {reference.describe()}"
        return None
    try:
        assert_close(outcome.value, reference.value)
    except AssertionError as exc:
        return f"differs from Python mode: {exc}"
    return None


@dataclass
class CaseResult:
    case: Case | None
    backend: str
    message: str | None = None      # None: passed
    module: Path | None = None

    @property
    def passed(self) -> bool:
        return self.message is None

    def line(self) -> str:
        mod = self.module or (self.case.module if self.case else "?")
        if self.case is None:
            return f"FAIL {mod} [{self.backend}]: {self.message}"
        args = ", ".join(short(a, 80) for a in self.case.args)
        return (f"FAIL {mod}::{self.case.entry} [{self.backend}] ({args}): {self.message}")


def run_module(path: str | Path, backends: list[str]) -> list[CaseResult]:
    """Every case of one module on every backend, each also checked against
    Python mode. A module that does not compile gives one failure per backend."""
    path = Path(path)
    cases = load_cases(path)
    if not cases:
        # no cases to run, but a module that does not compile is still a failure
        from .translate import translate_file
        try:
            translate_file(path)
        except CompileError as exc:
            return [CaseResult(None, "translate", f"does not compile:\n{exc}", path)]
        return []
    reference: dict[int, Outcome] = {}
    py = None
    if any(b != "python" for b in backends):
        try:
            py = compiled_wrapper(path, "python")
        except CompileError:
            py = None
    results = []
    for backend in backends:
        try:
            w = compiled_wrapper(path, backend)
        except CompileError as exc:
            results.append(CaseResult(None, backend, f"does not compile:\n{exc}", path))
            continue
        for case in cases:
            outcome = run_case(w, case)
            if backend == "python":
                reference[case.index] = outcome
            msg = check_expected(w, case, outcome)
            if msg is None and backend != "python" and py is not None:
                if case.index not in reference:
                    reference[case.index] = run_case(py, case)
                msg = check_against_python(outcome, reference[case.index])
            results.append(CaseResult(case, backend, msg, path))
    return results
