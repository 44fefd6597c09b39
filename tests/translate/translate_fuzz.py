"""Mutations of PyShark modules for the translator fuzz test.

`mutate(source, rng)` returns (description, new source): one random change
of a kind a user might make by mistake (a different literal, operator, name,
type or expression; a deleted, duplicated or swapped line; a new statement).
`outcome(source)` translates it and returns None when the result is a
success or a located CompileError, else a description of what went wrong.
"""
from __future__ import annotations

import random
import traceback
from typing import Callable, Optional

import libcst as cst

from pyshark.errors import CompileError
from pyshark.translate import translate_source

LITERALS = ["0", "1", "-1", "2", "3", "7", "100", "127", "128", "255", "300", "-129", "65536",
            "2**31", "2**63", "2**63 - 1", "-2**63", "2**64", "10**30", "0.0", "0.5", "-2.5", "1e308",
            "1e-320", "True", "False", "ps.inf", "ps.nan", "-ps.inf", "ps.f32(1.5)", "ps.i8(3)",
            "ps.u8(200)", "ps.i32(0)", "ps.f64(0.0)", "int(2.5)", "float(3)", "(1, 2)", "[1, 2]", "[]",
            "xs", "x", "None", "'s'", "len(xs)", "ps.iota(3)", "2 ** 70 // 2 ** 60"]
EDGE = ["2**63", "2**64", "-2**63 - 1", "10**30", "2**31", "128", "256", "-1", "0", "1e308", "0.5",
        "2.0**1000"]
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "@"]
COMPARES = ["<", "<=", ">", ">=", "==", "!=", "is", "in", "not in"]
BOOLOPS = ["and", "or"]
UNARY = ["-", "+", "~", "not "]
TYPES = ["ps.f32", "ps.f64", "ps.i8", "ps.i16", "ps.i32", "ps.i64", "ps.u8", "ps.u64", "int", "float",
         "bool", "ps.Array[ps.f32]", "ps.Array[int]", "ps.Array[ps.Array[ps.f64]]",
         "tuple[int, ps.f32]", "tuple[()]", "str", "None", "ps.Array"]
EXTRA_NAMES = ["len", "range", "zip", "enumerate", "min", "max", "abs", "sum", "int", "float", "bool",
               "print", "ps", "xs", "x", "i", "n", "acc", "__name__", "True"]
STATEMENTS = ["x = 0", "xs = ps.copy(xs)", "xs[0] = 1", "return 0", "return x", "pass",
              "assert x > 0, 'positive'", "i = i + 1", "for i in range(3):\n    pass",
              "while False:\n    pass", "def h(v: int) -> int:\n    return v + x",
              "if x > 0:\n    return x", "acc = 0.0", "x, y = (1, 2)", "del x", "global x",
              "xs = [v * 2 for v in xs]", "s = ps.map(lambda v: v + x, xs)"]


class _Collect(cst.CSTVisitor):
    def __init__(self, pred: Callable[[cst.CSTNode], bool]):
        self.pred = pred
        self.found: list[cst.CSTNode] = []

    def on_visit(self, node):
        if self.pred(node):
            self.found.append(node)
        return True


class _Replace(cst.CSTTransformer):
    def __init__(self, target: cst.CSTNode, replacement: cst.CSTNode):
        self.target = target
        self.replacement = replacement

    def on_leave(self, original, updated):
        if original is self.target:
            return self.replacement
        return updated


def _nodes(module: cst.Module, pred) -> list:
    v = _Collect(pred)
    module.visit(v)
    return v.found


def _replace(module: cst.Module, target, replacement) -> str:
    return module.visit(_Replace(target, replacement)).code


def _expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def _functions(module: cst.Module) -> list:
    return _nodes(module, lambda n: isinstance(n, cst.FunctionDef))


def m_literal(module, src, rng):
    lits = _nodes(module, lambda n: isinstance(n, (cst.Integer, cst.Float)))
    if not lits:
        return None
    t = rng.choice(lits)
    new = rng.choice(LITERALS)
    return f"literal {module.code_for_node(t)} -> {new}", _replace(module, t, _expr(new))


def m_expr_to_literal(module, src, rng):
    """An argument, operand or name replaced by a constant (weak values and
    out-of-range constants reach every place a value can go)."""
    v = _ValueNames()
    module.visit(v)
    es = v.found + [a.value for a in _nodes(module, lambda n: isinstance(n, cst.Arg))]
    es += _nodes(module, lambda n: isinstance(n, (cst.BinaryOperation, cst.Subscript, cst.IfExp)))
    if not es:
        return None
    t = rng.choice(es)
    new = rng.choice(EDGE if rng.random() < 0.5 else LITERALS)
    return f"expression {module.code_for_node(t)[:40]} -> {new}", _replace(module, t, _expr(new))


def m_binop(module, src, rng):
    ops = _nodes(module, lambda n: isinstance(n, cst.BinaryOperation))
    if not ops:
        return None
    t = rng.choice(ops)
    sym = rng.choice(BINOPS)
    new = _expr(f"({module.code_for_node(t.left)}) {sym} ({module.code_for_node(t.right)})")
    return f"operator in {module.code_for_node(t)} -> {sym}", _replace(module, t, new)


def m_compare(module, src, rng):
    ops = _nodes(module, lambda n: isinstance(n, cst.Comparison))
    if not ops:
        return None
    t = rng.choice(ops)
    sym = rng.choice(COMPARES)
    right = module.code_for_node(t.comparisons[0].comparator)
    new = _expr(f"({module.code_for_node(t.left)}) {sym} ({right})")
    return f"comparison {module.code_for_node(t)} -> {sym}", _replace(module, t, new)


def m_boolop(module, src, rng):
    ops = _nodes(module, lambda n: isinstance(n, (cst.BooleanOperation, cst.Comparison, cst.Name)))
    if not ops:
        return None
    t = rng.choice(ops)
    other = rng.choice(ops)
    new = _expr(f"({module.code_for_node(t)}) {rng.choice(BOOLOPS)} ({module.code_for_node(other)})")
    return f"boolean op on {module.code_for_node(t)}", _replace(module, t, new)


def m_unary(module, src, rng):
    es = _nodes(module, lambda n: isinstance(n, (cst.Name, cst.Integer, cst.Float, cst.Call,
                                                   cst.Subscript)))
    if not es:
        return None
    t = rng.choice(es)
    new = _expr(f"{rng.choice(UNARY)}({module.code_for_node(t)})")
    return f"unary op on {module.code_for_node(t)}", _replace(module, t, new)


class _ValueNames(cst.CSTVisitor):
    """Names in expression positions (not `.attr`, keywords, params or def names)."""

    def __init__(self):
        self.found: list[cst.Name] = []

    def visit_Name(self, node):
        self.found.append(node)

    def visit_Attribute(self, node):
        node.value.visit(self)
        return False

    def visit_Arg(self, node):
        node.value.visit(self)
        return False

    def visit_Param(self, node):
        return False

    def visit_FunctionDef(self, node):
        node.body.visit(self)
        return False

    def visit_ClassDef(self, node):
        return False

    def visit_ImportFrom(self, node):
        return False

    def visit_Import(self, node):
        return False


def m_name(module, src, rng):
    v = _ValueNames()
    module.visit(v)
    names = v.found
    if not names:
        return None
    t = rng.choice(names)
    pool = sorted({n.value for n in names})
    new = rng.choice(pool if rng.random() < 0.8 else EXTRA_NAMES)
    return f"name {t.value} -> {new}", _replace(module, t, cst.Name(new))


def m_expr(module, src, rng):
    es = _nodes(module, lambda n: isinstance(n, cst.BaseExpression)
                and not isinstance(n, (cst.Name, cst.Attribute)) or isinstance(n, cst.Name))
    if len(es) < 2:
        return None
    t, other = rng.choice(es), rng.choice(es)
    try:
        new = _expr(module.code_for_node(other))
    except Exception:
        return None
    return (f"expression {module.code_for_node(t)[:40]} -> {module.code_for_node(other)[:40]}",
            _replace(module, t, new))


def m_type(module, src, rng):
    anns = _nodes(module, lambda n: isinstance(n, cst.Annotation))
    if not anns:
        return None
    t = rng.choice(anns)
    new = rng.choice(TYPES)
    return f"annotation {module.code_for_node(t.annotation)} -> {new}", \
        _replace(module, t, cst.Annotation(_expr(new)))


def m_call_args(module, src, rng):
    calls = _nodes(module, lambda n: isinstance(n, cst.Call) and n.args)
    if not calls:
        return None
    t = rng.choice(calls)
    args = list(t.args)
    how = rng.choice(["drop", "dup", "swap", "kw"])
    if how == "drop":
        args.pop(rng.randrange(len(args)))
    elif how == "dup":
        args.append(args[rng.randrange(len(args))])
    elif how == "swap" and len(args) > 1:
        i = rng.randrange(len(args) - 1)
        args[i], args[i + 1] = args[i + 1], args[i]
    else:
        i = rng.randrange(len(args))
        args[i] = args[i].with_changes(keyword=cst.Name("x"), equal=cst.AssignEqual())
    args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]
    return f"call args of {module.code_for_node(t)[:40]} ({how})", _replace(module, t, t.with_changes(args=args))


def _lines(src: str) -> list:
    return src.splitlines(keepends=True)


def _body_lines(src: str) -> list[int]:
    """Indexes of indented, non-blank lines (inside functions) that are whole
    simple statements (so deleting or moving one keeps the syntax valid)."""
    lines = _lines(src)
    out = []
    for i, ln in enumerate(lines):
        if not ln.startswith("    ") or not ln.strip() or ln.rstrip().endswith((":", ",", "(", "[")):
            continue
        if ln.lstrip().startswith((")", "]", "}", "#", '"', "'")):
            continue
        prev = lines[i - 1].rstrip() if i else ""
        if prev.endswith((",", "(", "[", "\\")):
            continue
        out.append(i)
    return out


def m_delete_line(module, src, rng):
    idx = _body_lines(src)
    if not idx:
        return None
    lines = _lines(src)
    i = rng.choice(idx)
    return f"delete line {i + 1}: {lines[i].strip()[:40]}", "".join(lines[:i] + lines[i + 1:])


def m_duplicate_line(module, src, rng):
    idx = _body_lines(src)
    if not idx:
        return None
    lines = _lines(src)
    i = rng.choice(idx)
    return f"duplicate line {i + 1}: {lines[i].strip()[:40]}", "".join(lines[:i + 1] + lines[i:])


def m_swap_lines(module, src, rng):
    idx = [i for i in _body_lines(src) if i + 1 in set(_body_lines(src))]
    if not idx:
        return None
    lines = _lines(src)
    i = rng.choice(idx)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return f"swap lines {i + 1} and {i + 2}", "".join(lines)


def m_move_line(module, src, rng):
    idx = _body_lines(src)
    if len(idx) < 2:
        return None
    lines = _lines(src)
    i = rng.choice(idx)
    indent = len(lines[i]) - len(lines[i].lstrip())
    same = [j for j in idx if len(lines[j]) - len(lines[j].lstrip()) == indent and j != i]
    if not same:
        return None
    j = rng.choice(same)
    moved = lines[i]
    rest = lines[:i] + lines[i + 1:]
    j = j if j < i else j - 1
    return f"move line {i + 1} before line {j + 1}", "".join(rest[:j] + [moved] + rest[j:])


def m_insert_statement(module, src, rng):
    idx = _body_lines(src)
    if not idx:
        return None
    lines = _lines(src)
    i = rng.choice(idx)
    indent = " " * (len(lines[i]) - len(lines[i].lstrip()))
    stmt = rng.choice(STATEMENTS)
    new = "".join(indent + ln + "\n" for ln in stmt.splitlines())
    return f"insert before line {i + 1}: {stmt.splitlines()[0]}", "".join(lines[:i] + [new] + lines[i:])


MUTATIONS = ([m_literal] * 4 + [m_expr_to_literal] * 4 + [m_binop] * 3 + [m_compare, m_boolop, m_unary] + [m_name] * 4
             + [m_expr] * 5 + [m_type] * 3 + [m_call_args] * 2
             + [m_delete_line, m_duplicate_line, m_swap_lines, m_move_line] + [m_insert_statement] * 2)


def mutate(source: str, rng: random.Random, rounds: int = 1) -> tuple[str, str]:
    """One to `rounds` random mutations of source: (what was done, new source)."""
    done = []
    for _ in range(rounds):
        try:
            module = cst.parse_module(source)
        except Exception:
            break                      # an earlier mutation broke the syntax: keep it
        for _attempt in range(10):
            m = rng.choice(MUTATIONS)
            try:
                res = m(module, source, rng)
            except Exception:          # the mutation itself could not be built
                res = None
            if res is not None:
                done.append(res[0])
                source = res[1]
                break
    return "; ".join(done), source


def outcome(source: str, filename: str = "fuzz.py") -> Optional[str]:
    """None for a success or a located CompileError; else what went wrong."""
    try:
        translate_source(source, filename)
    except CompileError as err:
        if "internal error" in err.message:
            return f"internal error reported as CompileError:\n{err}"
        if err.line < 1:
            return f"CompileError without a line:\n{err}"
        return None
    except Exception as exc:  # noqa: BLE001 - the point of the test
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
        return f"{type(exc).__name__}: {exc}\n{tb}"
    return None
