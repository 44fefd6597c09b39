"""`@pyshark.jit`: compile one function of a module, script or notebook cell.

    @pyshark.jit(backend="cpu")          # or bare @pyshark.jit: the fastest backend here
    def saxpy(a: ps.f32, xs: ps.Array[ps.f32], ys: ps.Array[ps.f32]) -> ps.Array[ps.f32]:
        return ps.map(lambda x, y: a * x + y, xs, ys)

The program is the decorated function plus the top-level functions,
constants, type aliases, records and imports of its source (the module file,
or the cell text IPython keeps in linecache) that it uses, transitively.
They are found with libcst's scope analysis (ScopeProvider: a name counts
only where it resolves to a module-level binding, so a parameter `xs` does
not pull in a script's `xs = np.random.rand(n)`). Everything else -- top-level
numpy code, prints, `if __name__ == "__main__":` -- is blanked out line by
line, so the program text keeps the ORIGINAL LINE NUMBERS and columns and a
CompileError points into the user's file or cell. A `@pyshark.jit(...)`
decorator is rewritten to the bare `@pyshark.jit` in place (its arguments are
Wrapper options, not program), which the translator reads as an entry marker.

The text goes to `Wrapper.add_source(text, name=file)`; the Wrapper's
on-disk cache is keyed by that text, so a new process (or an edit elsewhere
in the script) loads the compiled module instead of recompiling. Compilation
happens on the FIRST CALL (a CompileError is raised there, not at
decoration); decoration only checks the options.
"""
from __future__ import annotations

import functools
import inspect
import linecache
import threading
from typing import Any, Callable, TypeVar, overload

from .errors import CompileError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["jit", "program_source"]

JIT = "pyshark.jit"


@overload
def jit(fn: F, /) -> F: ...
@overload
def jit(fn: None = None, /, *, backend: str | None = None,
        **wrapper_options: Any) -> Callable[[F], F]: ...


def jit(fn: Callable[..., Any] | None = None, /, *, backend: str | None = None,
        **wrapper_options: Any) -> Any:
    """Compiles `fn` on its first call with `Wrapper(backend, **wrapper_options)`
    (unsafe, fastmath, cache_dir, device, device_arrays, ...: the Wrapper's
    keyword options); `backend` defaults to `available_backends()[0]`.

    The result keeps fn's name, docstring and signature; `.py_func` runs the
    original function as Python mode; `.compile()` compiles ahead of the first
    call and returns the Wrapper. Unknown options raise TypeError here."""
    from .wrapper import Wrapper
    try:
        inspect.signature(Wrapper).bind("python", **wrapper_options)
    except TypeError as exc:
        raise TypeError(f"pyshark.jit: {exc} (the options are Wrapper's: "
                        f"{', '.join(_wrapper_option_names())})") from None
    if backend is not None:
        from .wrapper import known_backends
        if not isinstance(backend, str):
            raise TypeError(f"pyshark.jit: backend must be a str such as 'cpu', not "
                            f"{type(backend).__name__}")
        if backend not in known_backends():
            raise ValueError(f"pyshark.jit: unknown backend {backend!r}; known backends: "
                             f"{', '.join(known_backends())}")

    def decorate(f: F) -> F:
        return _jit_function(f, backend, dict(wrapper_options))

    if fn is None:
        return decorate
    if not callable(fn):
        raise TypeError(f"pyshark.jit decorates a function, not {type(fn).__name__}; "
                        f"write @pyshark.jit or @pyshark.jit(backend=...)")
    return decorate(fn)


def _wrapper_option_names() -> list[str]:
    from .wrapper import Wrapper
    return [p.name for p in inspect.signature(Wrapper).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY]


class _JitState:
    """What one jit function compiles into (on first call, once, thread-safe)."""

    def __init__(self, fn, backend: str | None, options: dict):
        self.fn = fn
        self.backend = backend
        self.options = options
        self.wrapper = None
        self.call = None
        self._lock = threading.Lock()

    def compile(self):
        with self._lock:
            if self.wrapper is None:
                from .wrapper import Wrapper, available_backends
                filename, text = program_source(self.fn)
                w = Wrapper(self.backend or available_backends()[0], **self.options)
                w.add_source(text, name=filename)
                w.compile_and_load()
                self.call = getattr(w, self.fn.__name__)
                self.wrapper = w
        return self.wrapper


def _jit_function(fn, backend: str | None, options: dict):
    from .prelude.semantics import entry
    if not inspect.isfunction(fn):
        raise TypeError(f"pyshark.jit decorates a function defined with def, not "
                        f"{type(fn).__name__}")
    py_func = entry(fn)                    # Python mode: the prelude's semantics
    if fn.__globals__.get("__pyshark_python_mode__"):
        # The program itself, imported by the python backend: run as Python.
        return py_func
    state = _JitState(fn, backend, options)

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        call = state.call
        if call is None:
            state.compile()
            call = state.call
        return call(*args, **kwargs)

    compiled.py_func = py_func
    compiled.compile = state.compile
    compiled.__pyshark_jit__ = state
    return compiled


# -- the program's source ---------------------------------------------------

def program_source(fn) -> tuple[str, str]:
    """(file name, program text) for jit function `fn`: its module's or
    cell's source with every line the program does not use blanked out."""
    filename = fn.__code__.co_filename
    line = fn.__code__.co_firstlineno
    if "<locals>" in fn.__qualname__ or "." in fn.__qualname__:
        raise CompileError(f"@pyshark.jit: '{fn.__qualname__}' is not a top-level function",
                           filename, line, 0, None,
                           hint="define the function at module level (or at the top of "
                                "a notebook cell)")
    linecache.checkcache(filename)
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        raise CompileError(f"@pyshark.jit: the source of '{fn.__name__}' is not available "
                           f"(it was not defined in a file or a notebook cell)",
                           filename, line, 0, None,
                           hint="put it in a .py file, or use Wrapper.add_source(text)")
    return filename, extract_program("".join(lines), fn.__name__, line, filename)


def extract_program(text: str, name: str, line: int, filename: str = "<string>") -> str:
    """The program of top-level function `name` (defined around `line`) in
    module source `text`: the lines of the definitions it uses, transitively,
    with every other line empty; jit decorators become bare `@pyshark.jit`."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

    from .translate.source import SourceInfo
    src = SourceInfo.parse(text, filename)         # a syntax error is a located CompileError
    module = src.module
    positions = src.positions
    out = text.splitlines(keepends=True)

    def span(node) -> tuple[int, int]:
        start, end = positions[node].start.line, positions[node].end.line
        for d in getattr(node, "decorators", ()):
            start = min(start, positions[d].start.line)
        return start, end

    # 1. rewrite @pyshark.jit(...) to @pyshark.jit in place (same lines)
    for st in module.body:
        for d in getattr(st, "decorators", ()):
            if isinstance(d.decorator, cst.Call) and JIT in src.qualified_names(d.decorator.func):
                first, last = span(d)
                col = positions[d].start.column
                head = out[first - 1]
                out[first - 1] = (head[:col] + "@" + src.code(d.decorator.func)
                                  + _newline(head))
                for i in range(first, last):
                    out[i] = _newline(out[i])
    text2 = "".join(out)

    # 2. the module-level definitions and the global names each one uses
    from libcst.metadata import GlobalScope, ScopeProvider
    wrapper = MetadataWrapper(cst.parse_module(text2))
    pos2 = wrapper.resolve(PositionProvider)
    scopes = wrapper.resolve(ScopeProvider)
    body = list(wrapper.module.body)
    spans = []
    for st in body:
        start, end = pos2[st].start.line, pos2[st].end.line
        for d in getattr(st, "decorators", ()):
            start = min(start, pos2[d].start.line)
        spans.append((start, end))

    def owner(node) -> int | None:
        p = pos2.get(node)
        if p is None:
            return None
        for i, (s, e) in enumerate(spans):
            if s <= p.start.line <= e:
                return i
        return None

    defines: dict[str, int] = {}          # name -> the last defining statement
    always: set[int] = set()
    for i, st in enumerate(body):
        for nm in _defined_names(st, always, i):
            defines[nm] = i
    target = None
    for i, st in enumerate(body):
        if (isinstance(st, cst.FunctionDef) and st.name.value == name
                and spans[i][0] <= line <= spans[i][1]):
            target = i
    if target is None:
        raise CompileError(f"@pyshark.jit: no top-level 'def {name}' at line {line} of this "
                           f"source (was the file edited since it was imported?)",
                           filename, line, 0, None)
    uses: dict[int, set[str]] = {}
    global_scope = next((s for s in scopes.values() if isinstance(s, GlobalScope)), None)
    if global_scope is not None:
        for assignment in global_scope.assignments:
            for access in assignment.references:
                i = owner(access.node)
                if i is not None:
                    uses.setdefault(i, set()).add(assignment.name)

    keep = set(always)
    todo = [target]
    while todo:                            # the transitive closure of the target's uses
        i = todo.pop()
        if i not in keep:
            keep.add(i)
            todo.extend(defines[nm] for nm in uses.get(i, ()) if nm in defines)

    lines2 = text2.splitlines(keepends=True)
    kept_lines = set()
    for i in keep:
        kept_lines.update(range(spans[i][0], spans[i][1] + 1))
    return "".join(ln if k + 1 in kept_lines else _newline(ln)
                   for k, ln in enumerate(lines2))


def _defined_names(st, always: set, index: int) -> list[str]:
    """Names a module-level definition binds (def, class, NAME = ..., import).
    `from __future__` and star imports are always kept. Statements that are
    not definitions (if/for/with, calls, ...) bind nothing here."""
    import libcst as cst
    if isinstance(st, (cst.FunctionDef, cst.ClassDef)):
        return [st.name.value]
    if not isinstance(st, cst.SimpleStatementLine):
        return []
    names = []
    for small in st.body:
        if isinstance(small, cst.Assign):
            if len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                names.append(small.targets[0].target.value)
        elif isinstance(small, cst.AnnAssign):
            if isinstance(small.target, cst.Name) and small.value is not None:
                names.append(small.target.value)
        elif isinstance(small, cst.Import):
            for alias in small.names:
                if alias.asname is not None:
                    names.append(alias.asname.name.value)
                else:
                    names.append(_dotted_head(alias.name))
        elif isinstance(small, cst.ImportFrom):
            mod = small.module
            if (isinstance(mod, cst.Name) and mod.value == "__future__") or \
                    isinstance(small.names, cst.ImportStar):
                always.add(index)
                continue
            for alias in small.names:
                target = alias.asname.name if alias.asname is not None else alias.name
                names.append(target.value if isinstance(target, cst.Name) else _dotted_head(target))
    return names


def _dotted_head(node) -> str:
    import libcst as cst
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _newline(line: str) -> str:
    """An empty line with `line`'s own line ending (or none, at the end)."""
    for end in ("\r\n", "\n", "\r"):
        if line.endswith(end):
            return end
    return ""
