"""A C-like printer for the kernel IR (`pyshark show --ir kernels`)."""
from __future__ import annotations

from . import kir as K

_BIN_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%", "and": "&",
            "or": "|", "xor": "^", "shl": "<<", "shr": ">>", "eq": "==", "ne": "!=",
            "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def pretty_expr(e: K.Expr) -> str:
    if isinstance(e, (K.KVar, K.KConst)):
        return repr(e)
    if isinstance(e, K.Bin):
        sym = _BIN_SYM.get(e.op)
        flag = ("'" if e.reassoc else "") + ("~" if e.contract else "")
        if sym is None:
            return f"{e.op}{flag}({pretty_expr(e.x)}, {pretty_expr(e.y)})"
        return f"({pretty_expr(e.x)} {sym}{flag} {pretty_expr(e.y)})"
    if isinstance(e, K.Un):
        return f"{e.op}({pretty_expr(e.x)})"
    if isinstance(e, K.Cast):
        return f"({'bits ' if e.bits else ''}{e.to.value}){pretty_expr(e.x)}"
    if isinstance(e, K.Sel):
        return f"({pretty_expr(e.cond)} ? {pretty_expr(e.x)} : {pretty_expr(e.y)})"
    if isinstance(e, K.Load):
        return f"{pretty_expr(e.ptr)}[{pretty_expr(e.index)}]"
    if isinstance(e, K.PtrAdd):
        return f"({pretty_expr(e.ptr)} + {pretty_expr(e.offset)})"
    if isinstance(e, K.NumThreads):
        return "num_threads()"
    if isinstance(e, K.LocalId):
        return "local_id()"
    if isinstance(e, K.GroupId):
        return "group_id()"
    return f"?{e!r}"


def _lines(b: K.Block, ind: str, out: list, messages: list):
    for s in b.stms:
        if isinstance(s, K.Set):
            out.append(f"{ind}{s.var.name}: {s.var.type!r} = {pretty_expr(s.value)}")
        elif isinstance(s, K.Store):
            nt = "  # nontemporal" if s.nontemporal else ""
            out.append(f"{ind}{pretty_expr(s.ptr)}[{pretty_expr(s.index)}] = {pretty_expr(s.value)}{nt}")
        elif isinstance(s, K.Alloc):
            what = "alloc_zeroed" if s.zeroed else "alloc"
            out.append(f"{ind}{s.var.name}: {s.var.type!r} = {what}({pretty_expr(s.count)})")
        elif isinstance(s, K.Free):
            out.append(f"{ind}free({pretty_expr(s.ptr)})")
        elif isinstance(s, K.Prefetch):
            out.append(f"{ind}prefetch({pretty_expr(s.ptr)}[{pretty_expr(s.index)}])")
        elif isinstance(s, K.CopyMem):
            nt = "  # nontemporal" if s.nontemporal else ""
            out.append(f"{ind}copy({pretty_expr(s.dst)}, {pretty_expr(s.src)}, "
                       f"{pretty_expr(s.count)}){nt}")
        elif isinstance(s, K.If):
            out.append(f"{ind}if {pretty_expr(s.cond)} {{")
            _lines(s.then, ind + "  ", out, messages)
            if s.orelse.stms:
                out.append(f"{ind}}} else {{")
                _lines(s.orelse, ind + "  ", out, messages)
            out.append(f"{ind}}}")
        elif isinstance(s, K.For):
            hint = (f" unroll {s.unroll}" if s.unroll > 1 else "") + (
                " independent" if s.independent else "") + ("" if s.simd else " scalar") + (
                f" trip <= {s.max_trip}" if s.max_trip else "")
            out.append(f"{ind}for {s.var.name} in {pretty_expr(s.lo)}..{pretty_expr(s.hi)}{hint} {{")
            _lines(s.body, ind + "  ", out, messages)
            out.append(f"{ind}}}")
        elif isinstance(s, K.While):
            out.append(f"{ind}while {pretty_expr(s.cond)} {{")
            _lines(s.body, ind + "  ", out, messages)
            out.append(f"{ind}}}")
        elif isinstance(s, K.ParFor):
            cond = f" if {pretty_expr(s.parallel_if)}" if s.parallel_if is not None else ""
            group = f" groups of {s.group_size}" if s.group_size is not None else ""
            out.append(f"{ind}parfor {s.var.name} in 0..{pretty_expr(s.count)}{group}{cond} {{")
            _lines(s.body, ind + "  ", out, messages)
            out.append(f"{ind}}}")
        elif isinstance(s, K.Fail):
            msg = messages[s.msg] if 0 <= s.msg < len(messages) else f"#{s.msg}"
            args = "".join(", " + pretty_expr(a) for a in s.args)
            out.append(f"{ind}fail {s.kind}({msg!r}{args})")
        elif isinstance(s, K.Barrier):
            out.append(f"{ind}barrier")
        elif isinstance(s, K.LocalAlloc):
            out.append(f"{ind}{s.var.name}: {s.var.type!r} = local_alloc({s.count})")
        elif isinstance(s, K.AtomicLoad):
            out.append(f"{ind}{s.var.name} = atomic_load {pretty_expr(s.ptr)}[{pretty_expr(s.index)}]")
        elif isinstance(s, K.AtomicUpdate):
            out.append(f"{ind}atomic {pretty_expr(s.ptr)}[{pretty_expr(s.index)}]: "
                       f"{s.old.name} -> {pretty_expr(s.value)}")
        else:
            out.append(f"{ind}?{s!r}")


def pretty_function(f: K.Function, messages: list | None = None) -> str:
    params = ", ".join(f"{p.name}: {p.type!r}" for p in f.params)
    out = [f"entry {f.name}({params}) {{"]
    _lines(f.body, "  ", out, messages or [])
    out.append("}")
    return "\n".join(out)


def pretty_module(m: K.Module) -> str:
    return "\n\n".join(pretty_function(f, m.messages) for f in m.functions)
