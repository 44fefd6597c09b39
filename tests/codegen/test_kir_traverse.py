"""codegen/kir_traverse.py: the role table covers every kernel IR node class
(naming its fields in order), every rebuild keeps every field, and the
walks, folds and renames driven by it."""
from __future__ import annotations

import dataclasses

import pytest

from pyshark.codegen import kir as K
from pyshark.codegen import kir_traverse as T
from pyshark.core.types import BOOL, F32, I32, I64

i, n = K.KVar("i", I64), K.KVar("n", I64)
P = K.Ptr(I32)


def test_every_node_class_is_in_the_table_with_its_fields_in_order():
    classes = set(T.EXPR_CLASSES) | set(T.STM_CLASSES) | {K.Block, K.Function}
    assert set(T.FIELDS) == classes
    for cls in classes:
        names = tuple(f.name for f in dataclasses.fields(cls))
        assert T.FIELD_NAMES[cls] == names, cls.__name__
    roles = {r for roles in T.FIELDS.values() for _, r in roles}
    assert roles <= {T.STATIC, T.EXPR, T.OPT_EXPR, T.EXPRS, T.BINDER, T.BINDERS, T.BLOCK,
                     T.STMS}


# A value for every role, different from every field's default, so that a
# rebuild that fell back on a default would show.
def _sample(cls, name: str, role: str, k: int):
    if role == T.EXPR:
        return K.KVar(f"e_{name}", P if name in ("ptr", "dst", "src") else I64)
    if role == T.OPT_EXPR:
        return K.KVar(f"e_{name}", BOOL)
    if role == T.EXPRS:
        return (K.KVar("a0", I64), K.KVar("a1", I64))
    if role == T.BINDER:
        return K.KVar(f"v_{name}", P if cls in (K.Alloc, K.LocalAlloc) else I64)
    if role == T.BINDERS:
        return (K.KVar("p0", P), n)
    if role == T.BLOCK:
        return K.Block((K.Set(K.KVar(f"b_{name}", I64), i),))
    if role == T.STMS:
        return (K.Set(i, n),)
    static = {"op": "add", "reassoc": True, "contract": True, "to": F32, "bits": True, "nontemporal": True,
              "zeroed": True, "unroll": 4, "independent": True, "simd": False, "max_trip": 16,
              "kind": "IndexError", "msg": 3,
              "group_size": 64, "count": 16, "name": f"s{k}", "type": I64, "value": 7}
    return static[name]


def _instance(cls):
    return cls(*[_sample(cls, name, role, k) for k, (name, role) in enumerate(T.FIELDS[cls])])


def _copy(x):
    """An equal value that is not the same object (forces a rebuild)."""
    if isinstance(x, tuple):
        return tuple(_copy(v) for v in x)
    return dataclasses.replace(x)


@pytest.mark.parametrize("cls", list(T.EXPR_CLASSES), ids=lambda c: c.__name__)
def test_map_expr_rebuilds_with_every_field(cls):
    e = _instance(cls)
    out = T.map_expr(e, _copy)
    assert out == e and type(out) is cls
    if T.children(e):
        assert out is not e and all(a is not b for a, b in zip(T.children(out), T.children(e)))
    assert T.map_expr(e, lambda c: c) is e


@pytest.mark.parametrize("cls", list(T.STM_CLASSES), ids=lambda c: c.__name__)
def test_map_stm_rebuilds_with_every_field(cls):
    s = _instance(cls)
    out = T.map_stm(s, _copy, _copy, _copy)
    assert out == s and type(out) is cls
    for f in dataclasses.fields(cls):
        assert getattr(out, f.name) == getattr(s, f.name), f.name
    assert T.map_stm(s) is s                        # nothing changed: the node itself
    assert T.rename_block(K.Block((s,)), {}).stms == (s,)


def test_a_renamed_zeroed_alloc_stays_zeroed():
    """kir.rename_block rebuilt Alloc without `zeroed` (issue 16)."""
    z, z2 = K.KVar("z", P), K.KVar("z2", P)
    b = K.Block((K.Alloc(z, n, zeroed=True), K.Free(z)))
    (a, f) = K.rename_block(b, {"z": z2, "n": i}).stms
    assert a == K.Alloc(z2, i, zeroed=True) and f == K.Free(z2)


def test_expanded_parfor_keeps_zeroed_allocations_it_does_not_expand():
    """expand.py's interleaving rebuilt the body's other Allocs without
    `zeroed` (issue 16): a zeroed block whose size the body computes stays
    in the body, and stays zeroed."""
    from pyshark.codegen.kir_passes.expand import expand_allocations
    out, tmp, z, k = K.KVar("out", K.Ptr(I64)), K.KVar("tmp", K.Ptr(I64)), K.KVar("z", P), \
        K.KVar("k", I64)
    body = K.Block((
        K.Alloc(tmp, K.KConst(3, I64)),                 # expanded and interleaved
        K.Set(k, K.Bin("add", i, K.KConst(1, I64))),
        K.Alloc(z, k, zeroed=True),                     # size from the body: stays
        K.Store(tmp, K.KConst(0, I64), K.Cast(I64, K.Load(z, i))),
        K.Store(out, i, K.Load(tmp, K.KConst(0, I64))),
        K.Free(z), K.Free(tmp)))
    m = K.Module([K.Function("f", (out, n), K.Block((K.ParFor(i, n, body),)))])
    got = expand_allocations(m)
    K.check_module(got)
    allocs = [s for s in K.walk_stms(got.functions[0].body) if isinstance(s, K.Alloc)]
    assert [a.zeroed for a in allocs if a.var == z] == [True]
    assert not any(isinstance(s, K.Alloc) and s.var == tmp for s in K.walk_stms(got.functions[0].body))


def test_an_expanded_zeroed_allocation_gets_a_zeroed_arena():
    """Each iteration leaves its block 0, so the arena of all of them is a
    zeroed block too (expand.py used to allocate it plain)."""
    from pyshark.codegen.kir_passes.expand import expand_allocations
    out, z = K.KVar("out", K.Ptr(I32)), K.KVar("z", P)
    body = K.Block((K.Alloc(z, K.KConst(4, I64), zeroed=True),
                    K.Store(out, i, K.Load(z, K.KConst(1, I64))), K.Free(z)))
    m = K.Module([K.Function("f", (out, n), K.Block((K.ParFor(i, n, body),)))])
    got = expand_allocations(m)
    K.check_module(got)
    allocs = [s for s in K.walk_stms(got.functions[0].body) if isinstance(s, K.Alloc)]
    assert len(allocs) == 1 and allocs[0].var != z and allocs[0].zeroed


def test_walks_and_folds_visit_nested_blocks_in_order():
    x, y = K.KVar("x", I64), K.KVar("y", I64)
    inner = K.Set(y, K.Bin("mul", x, K.Load(K.KVar("q", K.Ptr(I64)), i)))
    b = K.Block((K.Set(x, n), K.For(i, K.KConst(0, I64), x, K.Block((
        K.If(K.Bin("lt", i, n), K.Block((inner,))),)))))
    kinds = [type(s).__name__ for s in T.walk_stms(b)]
    assert kinds == ["Set", "For", "If", "Set"]
    assert T.fold_stms(b, lambda acc, s: acc + 1, 0) == 4
    assert [type(e).__name__ for e in T.walk_exprs(inner.value)] == \
        ["Bin", "KVar", "Load", "KVar", "KVar"]
    assert T.fold_exprs(inner.value, lambda acc, e: acc | {type(e)}, set()) == \
        {K.Bin, K.KVar, K.Load}
    assert T.free_vars_of_block(b) == {"n", "q"}
    assert T.declared_vars(b.stms[1]) == {"i", "y"}
    assert T.has_expr(inner.value, K.Load) and not T.has_expr(n, K.Load)


def test_map_block_splices_lists_and_keeps_an_unchanged_block():
    x = K.KVar("x", I64)
    b = K.Block((K.Set(x, n), K.Free(K.KVar("p", P))))
    assert T.map_block(b, lambda s: s) is b
    two = T.map_block(b, lambda s: [s, s] if isinstance(s, K.Set) else s)
    assert [type(s) for s in two.stms] == [K.Set, K.Set, K.Free]
    assert T.map_block(b, lambda s: []).stms == ()


def test_rename_reaches_binders_loops_and_parfor_bodies():
    x, x2, j = K.KVar("x", I64), K.KVar("x2", I64), K.KVar("j", I64)
    b = K.Block((K.ParFor(i, n, K.Block((
        K.For(j, K.KConst(0, I64), i, K.Block((K.Set(x, K.Bin("add", x, j)),)), unroll=2),)),
        parallel_if=K.Bin("gt", n, K.KConst(4, I64)), group_size=None),))
    got = T.rename_block(b, {"x": x2, "n": K.KVar("m", I64)})
    p = got.stms[0]
    assert p.count.name == "m" and p.parallel_if.x.name == "m"
    loop = p.body.stms[0]
    assert loop.unroll == 2 and loop.body.stms[0] == K.Set(x2, K.Bin("add", x2, j))
    assert T.free_vars_of_block(got) == {"m"}          # x2 is declared inside
