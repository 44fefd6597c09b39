"""The PyShark prelude: the reference semantics of "run the module as Python".

`import pyshark.prelude as ps` in a PyShark module; run as Python, every name
here computes with numpy, element by element, exactly as compiled code must.
Note that `map filter zip all any sum min max abs round` shadow the builtins
of the same name when imported with `from pyshark.prelude import ...`.

Decisions where LANGUAGE.md is silent (each also noted where it is made):
- Empty results get their element type as described in `build`: a named
  function's annotation, else the compiled program's type when the module
  runs through the Wrapper (`static`: the site table of the translated
  module), else bounded probe calls on made-up values (0, 1, -1), else
  float64 rank 1; a weak neutral element of reduce/scan/reduce_by_index takes
  the element type of the array.
- `all`/`any` evaluate the predicate on every element (no short-circuit), as
  a parallel backend does; an error in any element is raised.
- Every array a prelude function returns is new (never a view of an argument).
- Negative counts for `iota`/`replicate`/`tabulate_2d` raise ShapeError;
  `take`/`drop`/`split` counts outside 0..len raise IndexError;
  `minimum`/`maximum`/`argmin`/`argmax` of an empty array raise ShapeError.
- Float `//` and `%` by zero give numpy's inf/nan (LANGUAGE.md); numpy warns
  for them as for the integer case, so `python_semantics()` looks at the
  operands of the operation that warned (see semantics.py).
- `python_semantics()` changes the process-wide warning filters, so it is not
  thread-safe (like warnings.catch_warnings).
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
