"""The PyShark prelude: the reference semantics of "run the module as Python".

`import pyshark.prelude as ps` in a PyShark module; run as Python, every name
here computes with numpy, element by element, exactly as compiled code must.
Note that `map filter zip all any sum min max abs round` shadow the builtins
of the same name when imported with `from pyshark.prelude import ...`.
"""
from ..errors import ShapeError
from .arrays import (argmax, argmin, array, concat, copy, drop, flatten, head, init, iota, last,
                     length, maximum, minimum, product, replicate, reverse, rotate, split, sum,
                     tail, take, transpose, unflatten, unzip, update, zip)
from .mathfns import (abs, acos, asin, atan, atan2, ceil, cos, cosh, exp, floor, isinf, isnan,
                      log, log2, log10, max, min, pow, round, sign, sin, sinh, sqrt, tan, tanh,
                      trunc)
from .scalars import (Array, ArrayAlias, f32, f64, highest, i8, i16, i32, i64, inf, lowest, nan,
                      u8, u16, u32, u64)
from .semantics import entry, python_semantics
from .soacs import (all, any, filter, foldl, foldr, map, partition, reduce, reduce_by_index,
                    reduce_comm, scan, scatter, tabulate, tabulate_2d)
from .tuple_array import TupleArray

__all__ = [
    # scalar types and extremes
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64",
    "inf", "nan", "highest", "lowest",
    # annotations, arrays of tuples, errors
    "Array", "ArrayAlias", "TupleArray", "ShapeError",
    # entries and Python-mode semantics
    "entry", "python_semantics",
    # SOACs
    "map", "reduce", "reduce_comm", "scan", "filter", "partition", "reduce_by_index", "scatter",
    "all", "any", "foldl", "foldr", "tabulate", "tabulate_2d",
    # array functions
    "iota", "replicate", "length", "head", "last", "tail", "init", "take", "drop", "split",
    "reverse", "concat", "rotate", "transpose", "flatten", "unflatten", "copy", "update", "array",
    "zip", "unzip", "sum", "product", "minimum", "maximum", "argmin", "argmax",
    # math
    "sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "pow", "floor", "ceil", "round", "trunc", "abs", "sign", "min", "max",
    "isnan", "isinf",
]
