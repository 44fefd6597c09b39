"""A PyShark module -> ir.Program.

Module level: imports, a docstring, NamedTuple records, type aliases,
constants (inlined lazily where used, so weak constants stay weak),
top-level defs (every parameter and the return annotated) and `@ps.entry`
(or `@pyshark.jit`) entries. `__pyshark_cases__` (the embedded test table)
and other dunder assignments are skipped, as is an
`if __name__ == "__main__":` block.
Every top-level def is translated (so errors anywhere are reported) and
becomes a FunDef; entries also get an ir.Entry.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import libcst as cst

from ..compile_times import stage
from ..core import ir
from ..core.ir import C_API_NAMES, C_API_PREFIX, is_c_api_name
from ..core.traverse import iter_stms
from ..core.types import SRecord, SType
from ..errors import CompileError
from .annotations import parse_type
from .builder import Builder, NameGen
from .coerce import ConstantRangeError
from .context import Ctx, Frame, FunState, Scope, disown
from .source import SourceInfo
from .stmts import block_stmts, guarded
from .values import type_name

ENTRY = "pyshark.prelude.entry"
#: @pyshark.jit / @pyshark.jit(...) also marks an entry (its options are the
#: Wrapper's, not the program's, so its arguments are not read here)
JIT = "pyshark.jit"


@dataclass
class TopFun:
    name: str
    node: cst.FunctionDef
    is_entry: bool
    params: list = field(default_factory=list)     # (name, stype, param node)
    ret: Optional[SType] = None
    funv: object = None
    weak_returns: list = field(default_factory=list)  # return expressions converted at the boundary


class ModuleEnv:
    """Everything defined at module level, by name."""

    def __init__(self, src: SourceInfo):
        self.src = src
        self.records: dict[str, SRecord] = {}
        self.aliases: dict[str, SType] = {}
        self.alias_nodes: dict[str, cst.BaseExpression] = {}   # what each alias is bound to
        self.constants: dict[str, tuple[cst.BaseExpression, int]] = {}
        self.functions: dict[str, TopFun] = {}
        self.entry_calls: list = []          # (TopFun of an entry, call node) from PyShark code
        self.summaries: dict = {}            # (def name, py flags of the arguments) -> funcs.Summary
        self.specializations: dict = {}      # (def name, run-time-number mask) -> FunDef name
        self.summarizing: set = set()
        self._evaluating: list[int] = []

    # -- constants ----------------------------------------------------------
    def constant_value(self, ctx: Ctx, name: str, node) -> object:
        expr, order = self.constants[name]
        if self._evaluating and order >= self._evaluating[-1]:
            raise ctx.error(node, f"module constant '{name}' is used before it is defined")
        from .exprs import translate_expr
        self._evaluating.append(order)
        try:
            c2 = ctx.with_scope(Scope(boundary=True))
            return disown(translate_expr(c2, expr))
        finally:
            self._evaluating.pop()

    # -- scanning -----------------------------------------------------------
    def scan(self) -> None:
        order = 0
        for st in block_stmts(self.src.module):
            order += 1
            _guard(self.src, st, self.scan_stmt, st, order)

    def scan_stmt(self, st, order: int) -> None:
        src = self.src
        if isinstance(st, (cst.Import, cst.ImportFrom, cst.Pass)):
            return
        if isinstance(st, cst.Expr):
            if isinstance(st.value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)):
                return
            raise src.error(st, "module-level code other than definitions is not supported",
                            hint="call functions from an entry instead")
        if isinstance(st, cst.Assign):
            if len(st.targets) != 1 or not isinstance(st.targets[0].target, cst.Name):
                raise src.error(st, "a module-level assignment must bind one name")
            return self.scan_binding(st.targets[0].target.value, st.value, st, order)
        if isinstance(st, cst.AnnAssign):
            if not isinstance(st.target, cst.Name) or st.value is None:
                raise src.error(st, "a module-level annotated assignment must bind one name to a value")
            return self.scan_binding(st.target.value, st.value, st, order)
        if isinstance(st, cst.ClassDef):
            return self.scan_record(st)
        if isinstance(st, cst.FunctionDef):
            return self.scan_function(st)
        if isinstance(st, cst.If) and _is_main_guard(st):
            return
        if isinstance(st, cst.AugAssign):
            raise src.error(st, "module-level names cannot be reassigned",
                            hint="module constants are fixed; compute a new constant instead")
        raise src.error(st, f"this statement is not supported at module level ({type(st).__name__})")

    def scan_binding(self, name: str, value: cst.BaseExpression, st, order: int) -> None:
        if name.startswith("__") and name.endswith("__"):
            return                           # __pyshark_cases__, __all__, ...
        if isinstance(value, cst.Lambda):
            raise self.src.error(st, "functions are not values; a lambda may only be an argument "
                                     "to a prelude function such as ps.map",
                                 hint=f"write def {name}(...) -> ...: instead")
        if name in self.functions or name in self.records:
            raise self.src.error(st, f"'{name}' is already defined at module level")
        if isinstance(value, cst.Call):
            # a call into an imported module (numpy.ones -> "numpy"); the
            # module's own records and functions have dotless qualified names
            foreign = [q.split(".")[0] for q in self.src.qualified_names(value.func)
                       if "." in q and q.split(".")[0] not in ("pyshark", "builtins")
                       and "<locals>" not in q]
            if foreign:
                raise self.src.error(
                    value, f"'{name}' is computed by {foreign[0]} at module level: module-level "
                           f"arrays are not allowed (module constants are scalars, tuples and "
                           f"values of the prelude, fixed when the module is compiled)",
                    hint=f"make {name} a parameter of the entries that use it ({name}: "
                         f"ps.Array[ps.f64], say) and pass the array in when you call them")
        st_type = parse_type(self, value, quiet=True)
        if st_type is not None:
            self.aliases[name] = st_type
            self.alias_nodes[name] = value
            self.constants.pop(name, None)
        else:
            self.constants[name] = (value, order)
            self.aliases.pop(name, None)

    def scan_record(self, node: cst.ClassDef) -> None:
        src = self.src
        bases = [b for b in node.bases]
        is_record = any("typing.NamedTuple" in src.qualified_names(b.value) for b in bases
                        if isinstance(b.value, (cst.Name, cst.Attribute)))
        if not is_record:
            raise src.error(node.name, f"class '{node.name.value}' is not supported; only NamedTuple "
                                       f"records are",
                            hint="class Name(NamedTuple): with annotated fields only")
        if node.decorators:
            raise src.error(node.decorators[0], "decorators on records are not supported")
        fields = []
        for st in block_stmts(node.body):
            if isinstance(st, cst.FunctionDef):
                raise src.error(st.name, "classes may not define methods; a record is a NamedTuple "
                                         "with fields only, so write a top-level function")
            if isinstance(st, cst.AnnAssign) and isinstance(st.target, cst.Name):
                if st.value is not None:
                    raise src.error(st.value, "record fields cannot have default values")
                fields.append((st.target.value, parse_type(self, st.annotation.annotation)))
                continue
            if isinstance(st, cst.Expr) and isinstance(st.value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            if isinstance(st, cst.Pass):
                continue
            raise src.error(st, "a record class may only contain annotated fields",
                            hint="x: ps.f32")
        if not fields:
            raise src.error(node.name, f"record '{node.name.value}' has no fields")
        self.records[node.name.value] = SRecord(node.name.value, tuple(fields))

    def scan_function(self, node: cst.FunctionDef) -> None:
        src = self.src
        name = node.name.value
        if node.asynchronous is not None:
            raise src.error(node, "async functions are not supported")
        is_entry = False
        for d in node.decorators:
            dec = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            if isinstance(d.decorator, cst.Call) and ENTRY in src.qualified_names(dec):
                raise src.error(d.decorator, "@ps.entry takes no arguments",
                                hint="write @ps.entry without parentheses")
            quals = src.qualified_names(dec) if isinstance(dec, (cst.Name, cst.Attribute)) else set()
            if ENTRY in quals or JIT in quals:
                is_entry = True
            else:
                raise src.error(d, f"unsupported decorator @{src.code(d.decorator)}",
                                hint="only @ps.entry and @pyshark.jit are supported")
        if name in self.functions:
            raise src.error(node.name, f"function '{name}' is defined twice")
        if is_entry and is_c_api_name(name):
            why = (f"every compiled library exports pyshark_{name} as part of its C API"
                   if name in C_API_NAMES else
                   f"names starting with '{C_API_PREFIX}' belong to the opencl library's C API "
                   f"(pyshark_{C_API_PREFIX}*)")
            other = f"{name}_" if name in C_API_NAMES else f"my_{name}"
            raise src.error(node.name, f"an entry may not be called '{name}': {why}",
                            hint=f"rename the entry (e.g. '{other}')")
        self.functions[name] = TopFun(name, node, is_entry)

    def parse_signature(self, top: TopFun) -> None:
        from .funcs import TopFunV, check_plain_params
        src = self.src
        node = top.node
        for p in check_plain_params(src, node.params, f"top-level function '{top.name}'"):
            if p.annotation is None:
                raise src.error(p, f"parameter '{p.name.value}' of top-level function '{top.name}' "
                                   f"has no type annotation",
                                hint=f"annotate it, e.g. {p.name.value}: ps.f32")
            top.params.append((p.name.value, parse_type(self, p.annotation.annotation), p))
        if node.returns is None:
            raise src.error(node.name, f"top-level function '{top.name}' has no return type annotation",
                            hint="annotate it, e.g. def f(...) -> ps.f32:")
        top.ret = parse_type(self, node.returns.annotation)
        top.funv = TopFunV(top)


def _guard(src: SourceInfo, node, fn, *args):
    """fn(*args); an unexpected exception becomes a CompileError at node."""
    try:
        return fn(*args)
    except CompileError:
        raise
    except ConstantRangeError as exc:
        raise src.error(node, str(exc), hint="plain int arithmetic beyond the i64 range is not "
                                             "supported") from None
    except RecursionError:
        raise src.error(node, "this definition is nested too deeply to translate") from None
    except Exception as exc:  # a translator bug: still report a location
        raise src.error(node, f"internal error: {type(exc).__name__}: {exc}",
                        hint="this is a bug in PyShark; please report it") from exc


def _is_main_guard(st: cst.If) -> bool:
    t = st.test
    return (isinstance(t, cst.Comparison) and isinstance(t.left, cst.Name)
            and t.left.value == "__name__")


def _check_constants(env: ModuleEnv) -> None:
    """Translates every module constant once, so errors in them are reported."""
    names = NameGen()
    fs = FunState(names, "<module>")
    for name, (expr, order) in sorted(env.constants.items(), key=lambda kv: kv[1][1]):
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            continue                 # a string constant is an error only where it is used
        ctx = Ctx(env, env.src, Builder(names), Scope(boundary=True), fs,
                  Frame("<module>", None, expr))
        env._evaluating.append(order)
        try:
            guarded(ctx, expr, _translate_const, ctx, expr)
        finally:
            env._evaluating.pop()


def _translate_const(ctx, expr):
    from .exprs import translate_expr
    return translate_expr(ctx, expr)


def translate_source(source: str, filename: str = "<source>") -> ir.Program:
    """The core program of a PyShark module's source text (CompileError if
    it is outside the subset)."""
    src = SourceInfo.parse(source, filename)
    with stage("translate"):
        program = _translate(src)
    with stage("check"):
        _run_checker(program)
    return program


def _translate(src: SourceInfo) -> ir.Program:
    env = ModuleEnv(src)
    try:
        return _translate_env(env, src)
    finally:
        # each TopFun and its call value point at each other, and hold the
        # def's libcst tree: left to the cyclic collector (see
        # pyshark.compile_times.gc_paused)
        for top in env.functions.values():
            top.funv = None


def _translate_env(env: ModuleEnv, src: SourceInfo) -> ir.Program:
    env.scan()
    for top in env.functions.values():
        _guard(src, top.node.name, env.parse_signature, top)
    _check_constants(env)
    from .funcs import translate_fundef
    functions: dict[str, ir.FunDef] = {}
    entries: dict[str, ir.Entry] = {}
    for top in env.functions.values():
        functions[top.name] = _guard(src, top.node.name, translate_fundef, env, top)
        if top.is_entry:
            entries[top.name] = ir.Entry(
                top.name, tuple(ir.EntryParam(n, st) for n, st, _ in top.params), top.ret,
                src.loc(top.node.name))
    _translate_specializations(env, functions)
    _check_entry_calls(env)
    program = ir.Program(functions, entries, dict(env.records), src.filename)
    _reject_recursion(src, program)
    return program


def _translate_specializations(env: ModuleEnv, functions: dict) -> None:
    """The copies of top-level defs called with run-time Python numbers
    (funcs.specialization); translating one may ask for more."""
    from .funcs import translate_fundef
    from .values import RUNTIME
    done = set()
    while len(done) < len(env.specializations):
        for key, spec in list(env.specializations.items()):
            if key in done:
                continue
            done.add(key)
            name, mask = key
            if spec == name:
                continue
            top = env.functions[name]
            pattern = tuple(RUNTIME if m else False for m in mask)
            functions[spec] = _guard(env.src, top.node.name, translate_fundef, env, top,
                                     pattern, spec)


def _check_entry_calls(env: ModuleEnv) -> None:
    """An entry may return a constant that only the entry boundary converts
    (`return 100` from `-> ps.i8`); called from PyShark code it would stay a
    Python int in Python mode, so such a call is a located error."""
    for top, node in env.entry_calls:
        if top.weak_returns:
            ret, value, t = top.weak_returns[0]
            line = env.src.loc(ret).line
            raise env.src.error(node, f"'{top.name}' is an entry whose return value "
                                      f"{env.src.code(ret)} (line {line}) holds the constant "
                                      f"{value!r}, converted to {type_name(t)} only at the entry "
                                      f"boundary; called from PyShark code it stays a Python "
                                      f"number in Python mode",
                                hint=f"write {type_name(t)}({value!r}) in '{top.name}'")


def _reject_recursion(src: SourceInfo, program: ir.Program) -> None:
    """Recursion is refused: OpenCL kernels cannot recurse and the native
    backends inline calls, so a cycle in the call graph is a located error at
    a call that closes it."""
    calls = {name: [(stm.exp.fn, stm.loc) for stm in iter_stms(fun.body)
                    if isinstance(stm.exp, ir.Call)]
             for name, fun in program.functions.items()}
    state: dict[str, int] = {}          # 1: on the current path, 2: done

    def visit(name: str) -> None:
        state[name] = 1
        for callee, loc in calls.get(name, ()):
            if state.get(callee) == 1:
                line = src.lines[loc.line - 1] if loc and 0 < loc.line <= len(src.lines) else None
                raise CompileError(
                    f"recursive call of '{callee}' (from '{name}') is not supported",
                    loc.file if loc else src.filename, loc.line if loc else 0,
                    loc.col if loc else 0, line,
                    hint="write it as a loop (for/while with carried values) or a SOAC")
            if state.get(callee) is None:
                visit(callee)
        state[name] = 2

    try:
        for name in program.functions:
            if name not in state:
                visit(name)
    finally:
        visit = None                    # a recursive closure is a reference cycle


def _run_checker(program: ir.Program) -> None:
    try:
        from ..core.check import check_program
    except ImportError:
        return
    check_program(program)


def translate_file(path) -> ir.Program:
    """translate_source of a file; errors name the path as given."""
    p = Path(path)
    return translate_source(p.read_text(encoding="utf-8"), str(path))
