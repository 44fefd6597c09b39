"""Random scalar programs (hypothesis): constant folding, the algebraic
identities, facts from asserts and branches, copy propagation and CSE never
change what the interpreter computes or raises, at any dtype, with edge-case
constants."""
from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opt_build import BOOL, F32, F64, I8, I32, I64, U8, U32, B, check_same, fun, ir, prog
from pyshark.codegen.pipeline import optimise
from pyshark.core import ops

TYPES = [I8, U8, I32, U32, I64, F32, F64, BOOL]


def _edge_values(t):
    if t is BOOL:
        return [False, True]
    if t.is_float:
        return [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e30, math.inf, -math.inf, math.nan, 3.0]
    lo, hi = ((-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.is_signed
              else (0, (1 << t.bits) - 1))
    return sorted({0, 1, 2, 3, 7, hi, lo, lo + 1, hi - 1, -1 if t.is_signed else 5,
                   t.bits, t.bits - 1})


@st.composite
def programs(draw):
    t = draw(st.sampled_from(TYPES))
    n_stms = draw(st.integers(1, 12))
    script = []
    for _ in range(n_stms):
        kind = draw(st.sampled_from(["bin", "bin", "bin", "un", "conv", "sel", "alias",
                                     "assert", "if"]))
        script.append((kind, draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6)),
                       draw(st.integers(0, 10**6))))
    args = [draw(st.sampled_from(_edge_values(t))) for _ in range(2)]
    return t, script, args


def _build(t, script):
    def body(b: B, x, y):
        pools = {t: [x, y]}

        def pick(ty, r):
            pool = pools.setdefault(ty, [])
            consts = [ir.Const(v, ty) for v in _edge_values(ty)]
            choices = pool + consts
            return choices[r % len(choices)]

        out = []
        for kind, r1, r2, r3 in script:
            ty = [k for k in pools if pools[k]][r1 % len([k for k in pools if pools[k]])]
            if kind == "bin":
                names = sorted(n for n, o in ops.BINARY.items() if o.accepts(ty))
                op = names[r2 % len(names)]
                v = b.bin(op, pick(ty, r2 // 7), pick(ty, r3))
            elif kind == "un":
                names = sorted(n for n, o in ops.UNARY.items() if o.accepts(ty))
                if not names:
                    continue
                v = b.un(names[r2 % len(names)], pick(ty, r3))
            elif kind == "conv":
                v = b.let(ir.Convert(TYPES[r2 % len(TYPES)], pick(ty, r3)))
            elif kind == "sel":
                cond = pick(BOOL, r2)
                v = b.let(ir.Select(cond, pick(ty, r3), pick(ty, r3 // 5)))
            elif kind == "assert":
                b.let(ir.Assert(pick(BOOL, r2), "failed", "AssertionError"))
                continue
            elif kind == "if":
                arith = sorted(n for n, o in ops.BINARY.items()
                               if o.accepts(ty) and n not in ir.COMPARISONS)
                cond = pick(BOOL, r2)

                def branch(sb, r):
                    return sb.bin(arith[r % len(arith)], pick(ty, r // 3), pick(ty, r // 11))
                v = b.let(ir.If(cond, b.block(branch, r3), b.block(branch, r2 + r3), (ty,)))
            else:
                v = b.let(ir.AtomExp(pick(ty, r3)))
            pools.setdefault(v.type, []).append(v)
            out.append(v)
        return tuple(out) or (x,)
    return prog(fun("f", [t, t], body))


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_scalar_programs(case):
    t, script, args = case
    p = _build(t, script)
    q = optimise(p, check=True)
    check_same(p, q, "f", [t.numpy_type(a) for a in args])
