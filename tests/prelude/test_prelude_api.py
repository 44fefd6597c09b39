"""The public names: all importable, __all__ complete, builtins not disturbed."""
import builtins

import pyshark.prelude as ps
from pyshark.errors import ShapeError

REQUIRED = """i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 inf nan highest lowest Array TupleArray ShapeError
entry python_semantics map reduce reduce_comm scan filter partition reduce_by_index scatter all any
foldl foldr tabulate tabulate_2d iota replicate length head last tail init take drop split reverse
concat rotate transpose flatten unflatten copy update array zip unzip sum product minimum maximum
argmin argmax sqrt exp log log2 log10 sin cos tan asin acos atan atan2 sinh cosh tanh pow floor ceil
round trunc abs sign min max isnan isinf""".split()


def test_every_required_name_is_exported():
    for name in REQUIRED:
        assert name in ps.__all__, name
        assert getattr(ps, name) is not None
    for name in ps.__all__:
        assert hasattr(ps, name), name
    ns = {}
    exec("from pyshark.prelude import *", ns)
    assert ns["map"] is ps.map and ns["ShapeError"] is ShapeError
    assert ps.ShapeError is ShapeError and issubclass(ShapeError, ValueError)


def test_builtins_are_untouched():
    assert builtins.map is not ps.map and builtins.sum is not ps.sum and builtins.min is not ps.min
    assert list(builtins.map(abs, [-1])) == [1]
    assert ps.map is not builtins.map


def test_prelude_functions_have_docstrings():
    for name in ps.__all__:
        obj = getattr(ps, name)
        if callable(obj) and not isinstance(obj, type) or name in ("Array", "TupleArray"):
            assert obj.__doc__, name
