"""Argument conversion by surface type, without any backend."""
from __future__ import annotations

import collections

import numpy as np
import pytest

from pyshark import ShapeError
from pyshark.core.types import (BOOL, F32, F64, I8, I32, I64, U8, SArray, SRecord, SScalar,
                                STuple)
from pyshark.wrapper import convert

f32, f64, i32, i64, b = SScalar(F32), SScalar(F64), SScalar(I32), SScalar(I64), SScalar(BOOL)
VEC = SRecord("Vec3", (("x", f32), ("y", f32), ("z", f32)))
PARTICLE = SRecord("Particle", (("position", VEC), ("mass", f32), ("ident", i32)))


def arr(t, k=1):
    return convert.lift(t, k)


# -- scalars -------------------------------------------------------------------

def test_scalars_get_the_declared_numpy_type():
    assert type(convert.convert_arg(f32, 0.1, "x")) is np.float32
    assert convert.convert_arg(f32, 0.1, "x") == np.float32(0.1)
    assert type(convert.convert_arg(i32, np.int64(7), "n")) is np.int32
    assert type(convert.convert_arg(f64, 3, "x")) is np.float64
    assert convert.convert_arg(b, np.bool_(True), "flag") is np.True_


def test_out_of_range_int_is_overflow_error_naming_parameter():
    with pytest.raises(OverflowError, match="'n'.*300.*i8"):
        convert.convert_arg(SScalar(I8), 300, "n")
    with pytest.raises(OverflowError, match="'n'"):
        convert.convert_arg(SScalar(U8), -1, "n")


@pytest.mark.parametrize("t,value", [(i32, True), (i32, 1.5), (i32, np.float64(2.0)),
                                     (b, 1), (b, 0.0), (f32, "1.0"), (f64, None)])
def test_wrong_scalar_kind_is_type_error_naming_parameter(t, value):
    with pytest.raises(TypeError, match="parameter 'p'"):
        convert.convert_arg(t, value, "p")


def test_f32_overflow_rounds_to_infinity():
    assert convert.convert_arg(f32, 1e300, "x") == np.inf


# -- arrays of scalars ---------------------------------------------------------------

def test_matching_contiguous_array_is_not_copied():
    xs = np.arange(10, dtype=np.float32)
    got = convert.convert_arg(arr(f32), xs, "xs")
    assert got is xs and np.shares_memory(got, xs)
    m = np.ones((3, 4), dtype=np.int32)
    assert np.shares_memory(convert.convert_arg(arr(i32, 2), m, "m"), m)


def test_non_contiguous_array_is_made_contiguous():
    xs = np.arange(10, dtype=np.float64)[::2]
    got = convert.convert_arg(arr(f64), xs, "xs")
    assert got.flags.c_contiguous and np.array_equal(got, xs)


def test_same_kind_casts_are_allowed():
    assert convert.convert_arg(arr(f64), np.arange(3, dtype=np.int32), "xs").dtype == np.float64
    assert convert.convert_arg(arr(i64), np.arange(3, dtype=np.int8), "xs").dtype == np.int64
    got = convert.convert_arg(arr(f32), np.array([0.1, 1e300]), "xs")
    assert got.dtype == np.float32 and got[0] == np.float32(0.1) and got[1] == np.inf
    got = convert.convert_arg(arr(f32), np.array([1, 2**24 + 1], np.int32), "xs")
    assert got.dtype == np.float32 and got.tolist() == [1.0, 2.0**24]      # rounds to nearest
    got = convert.convert_arg(arr(i32), np.array([5, -7], np.int64), "xs")
    assert got.dtype == np.int32 and got.tolist() == [5, -7]
    assert convert.convert_arg(arr(i64), np.array([3], np.uint64), "xs").tolist() == [3]


@pytest.mark.parametrize("value,t", [(np.zeros(3), i32), (np.zeros(3, np.float32), i64),
                                     (np.zeros(3, np.bool_), i32), (np.zeros(3, np.int32), b),
                                     (np.zeros(3, np.complex64), f64)])
def test_other_dtypes_are_type_errors_naming_both_types(value, t):
    with pytest.raises(TypeError) as info:
        convert.convert_arg(arr(t), value, "xs")
    msg = str(info.value)
    assert "'xs'" in msg and str(value.dtype) in msg and t.t.value in msg


@pytest.mark.parametrize("value,t", [(np.array([2**31], np.int64), i32),
                                     (np.array([300], np.uint16), SScalar(U8)),
                                     (np.array([2**63], np.uint64), i64)])
def test_integer_narrowing_is_range_checked(value, t):
    with pytest.raises(OverflowError, match="'xs'"):
        convert.convert_arg(arr(t), value, "xs")


_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
           np.uint64, np.float32, np.float64]


@pytest.mark.parametrize("src", _DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dst", _DTYPES, ids=lambda d: np.dtype(d).name)
def test_one_casting_rule_for_every_dtype_pair(src, dst):
    """Every pair follows the documented rule (same_kind, bools apart): an
    accepted array arrives as numpy's own astype of it, a refused one is a
    TypeError naming the parameter and both dtypes."""
    from pyshark.core.types import ScalarType
    t = next(st for st in ScalarType if np.dtype(st.dtype) == np.dtype(dst))
    value = np.array([0, 1, 3], dtype=src)
    src_d, dst_d = np.dtype(src), np.dtype(dst)
    allowed = (src_d == dst_d or (src_d.kind != "b" and dst_d.kind != "b"
                                  and np.can_cast(src_d, dst_d, "same_kind")))
    if allowed:
        got = convert.convert_arg(arr(SScalar(t)), value, "xs")
        assert got.dtype == dst_d and np.array_equal(got, value.astype(dst_d))
    else:
        with pytest.raises(TypeError) as info:
            convert.convert_arg(arr(SScalar(t)), value, "xs")
        assert "'xs'" in str(info.value) and src_d.name in str(info.value)


def test_wrong_rank_is_type_error_naming_parameter():
    with pytest.raises(TypeError, match="'xs'.*rank-1.*rank-2"):
        convert.convert_arg(arr(f32), np.zeros((2, 2), np.float32), "xs")
    with pytest.raises(TypeError, match="'xss'"):
        convert.convert_arg(arr(f32, 2), [1.0, 2.0], "xss")
    with pytest.raises(TypeError, match="'xs'"):
        convert.convert_arg(arr(f32), 1.0, "xs")


def test_nested_lists_are_flattened_and_irregular_ones_rejected():
    got = convert.convert_arg(arr(i32, 2), [[1, 2], [3, 4]], "m")
    assert got.dtype == np.int32 and got.shape == (2, 2)
    with pytest.raises(ShapeError, match="'m'"):
        convert.convert_arg(arr(i32, 2), [[1, 2], [3]], "m")
    assert issubclass(ShapeError, ValueError)


def test_empty_list_has_every_dimension_zero():
    assert convert.convert_arg(arr(f32, 3), [], "x").shape == (0, 0, 0)
    assert convert.convert_arg(arr(f32, 2), [[], []], "x").shape == (2, 0)
    assert convert.convert_arg(arr(b), [], "x").dtype == np.bool_


def test_list_elements_are_range_and_kind_checked():
    with pytest.raises(OverflowError, match="'xs'"):
        convert.convert_arg(arr(SScalar(I8)), [1, 200], "xs")
    with pytest.raises(TypeError, match="'xs'"):
        convert.convert_arg(arr(i32), [1.0, 2.5], "xs")
    with pytest.raises(TypeError, match="'xs'"):
        convert.convert_arg(arr(b), [1, 0], "xs")
    assert convert.convert_arg(arr(f32), [1, 2], "xs").dtype == np.float32


# -- tuples, records and arrays of them ---------------------------------------------------

def test_tuples_from_tuples_or_lists_of_the_right_length():
    t = STuple((i32, f64))
    assert convert.convert_arg(t, [1, 2.5], "t") == (1, 2.5)
    with pytest.raises(TypeError, match="'t'"):
        convert.convert_arg(t, (1, 2.5, 3), "t")
    with pytest.raises(TypeError, match=r"'t\[0\]'"):
        convert.convert_arg(t, (1.5, 2.5), "t")


def test_records_from_instances_or_sequences():
    Vec3 = collections.namedtuple("Vec3", "x y z")
    assert convert.convert_arg(VEC, Vec3(1.0, 2.0, 3.0), "v") == (1, 2, 3)
    assert convert.convert_arg(VEC, [1.0, 2.0, 3.0], "v") == (1, 2, 3)
    Other = collections.namedtuple("Other", "a b c")
    with pytest.raises(TypeError, match="'v'"):
        convert.convert_arg(VEC, Other(1.0, 2.0, 3.0), "v")


def test_array_of_records_from_list_structured_array_and_tuple_array():
    from pyshark.prelude import TupleArray
    rows = [[[0.0, 0.0, 0.0], 1.0, 7], [[1.0, 2.0, 3.0], 5.0, 8]]
    from_list = convert.convert_arg(arr(PARTICLE), rows, "ps")
    out = convert.to_output(arr(PARTICLE), from_list)
    assert out.dtype.names == ("position", "mass", "ident")
    assert out.dtype["position"].names == ("x", "y", "z")
    from_struct = convert.convert_arg(arr(PARTICLE), out, "ps")
    ta = TupleArray([TupleArray([np.array([0.0, 1.0], np.float32), np.array([0.0, 2.0], np.float32),
                                 np.array([0.0, 3.0], np.float32)], tuple, 1),
                     np.array([1.0, 5.0], np.float32), np.array([7, 8], np.int32)], tuple, 1)
    from_ta = convert.convert_arg(arr(PARTICLE), ta, "ps")
    for got in (from_struct, from_ta):
        flat_a = convert.flatten_value(arr(PARTICLE), got)
        flat_b = convert.flatten_value(arr(PARTICLE), from_list)
        assert all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(flat_a, flat_b))


def test_flatten_follows_flatten_stype_order():
    from pyshark.core.types import flatten_stype
    st = STuple((arr(STuple((i32, arr(f32)))), f64))
    canon = convert.convert_arg(st, ([(1, [1.0, 2.0]), (2, [3.0, 4.0])], 0.5), "t")
    flat = convert.flatten_value(st, canon)
    types = flatten_stype(st)
    assert len(flat) == len(types) == 3
    assert [np.asarray(v).dtype for v in flat] == [t.elem.dtype if hasattr(t, "elem") else t.dtype
                                                  for t in types]
    back = convert.unflatten_value(st, flat)
    assert all(np.array_equal(a, b) for a, b in zip(convert.flatten_value(st, back), flat))


def test_an_empty_python_mode_result_of_another_dtype_takes_the_declared_one():
    """Results only (lenient): no values, so nothing is lost; arguments stay strict."""
    out = convert.output_from_value(arr(i32, 2), np.zeros((0, 3), np.float64))
    assert out.dtype == np.int32 and out.shape == (0, 3)
    assert convert.output_from_value(arr(b), np.zeros(0, np.float64)).dtype == np.bool_
    with pytest.raises(TypeError, match="'xs'"):
        convert.convert_arg(arr(i32), np.zeros(0, np.float64), "xs")
    with pytest.raises(TypeError):
        convert.output_from_value(arr(i32), np.array([1.5]))


# -- inputs are treated identically on every backend ----------------------------------

def test_ndarray_subclasses_become_plain_arrays_without_a_copy():
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    got = convert.convert_arg(arr(f64, 2), m, "m")
    assert type(got) is np.ndarray and got[0].shape == (2,)        # a matrix row is 2-D
    assert np.shares_memory(got, m)
    rec = np.rec.array([(1.0, 2.0, 3.0)], dtype=[("x", "f4"), ("y", "f4"), ("z", "f4")])
    xs, ys, zs = convert.convert_arg(arr(VEC), rec, "vs")
    assert type(xs) is np.ndarray and xs.tolist() == [1.0] and zs.tolist() == [3.0]
    assert type(convert.convert_arg(f64, np.matrix([[2.0]])[0, 0], "x")) is np.float64


@pytest.mark.parametrize("value", [
    np.ma.array([1.0, 2.0], mask=[False, True]),
    np.ma.array([1.0, 2.0]),                            # even without a masked element
    [np.ma.array([1.0, 2.0], mask=[False, True])],      # a masked row in a list
    [1.0, np.ma.masked]])
def test_masked_arrays_are_type_errors_naming_the_parameter(value):
    t = arr(f64, 2) if isinstance(value, list) and isinstance(value[0], np.ndarray) else arr(f64)
    with pytest.raises(TypeError, match="'xs'.*masked"):
        convert.convert_arg(t, value, "xs")


def test_masked_scalar_and_masked_record_field_are_type_errors():
    with pytest.raises(TypeError, match="'x'.*masked"):
        convert.convert_arg(f64, np.ma.array(1.0, mask=True), "x")
    with pytest.raises(TypeError, match=r"'t\[1\]'.*masked"):
        convert.convert_arg(STuple((i32, arr(f32))), (1, np.ma.array([1.0], dtype=np.float32)), "t")


def test_structured_arrays_match_record_fields_by_name_in_any_order():
    swapped = np.array([(3.0, 1.0, 2.0)], dtype=[("z", "f4"), ("x", "f4"), ("y", "f4")])
    xs, ys, zs = convert.convert_arg(arr(VEC), swapped, "vs")
    assert (xs.tolist(), ys.tolist(), zs.tolist()) == ([1.0], [2.0], [3.0])
    nested = np.zeros(2, dtype=[("ident", "i4"), ("mass", "f4"),
                                ("position", [("y", "f4"), ("z", "f4"), ("x", "f4")])])
    nested["position"]["x"] = [5.0, 6.0]
    nested["ident"] = [7, 8]
    (px, py, pz), mass, ident = convert.convert_arg(arr(PARTICLE), nested, "ps")
    assert px.tolist() == [5.0, 6.0] and ident.tolist() == [7, 8] and ident.dtype == np.int32
    assert convert.convert_arg(VEC, swapped[0], "v") == (1.0, 2.0, 3.0)    # a structured scalar


@pytest.mark.parametrize("names", [("a", "b", "c"), ("f0", "f1", "f2"), ("x", "y"),
                                   ("x", "y", "z", "w")])
def test_structured_arrays_with_other_names_are_type_errors(names):
    value = np.zeros(2, dtype=[(n, "f4") for n in names])
    with pytest.raises(TypeError, match="'vs'.*Vec3.*x, y, z"):
        convert.convert_arg(arr(VEC), value, "vs")
    with pytest.raises(TypeError, match="'v'"):
        convert.convert_arg(VEC, value[0], "v")


def test_tuples_still_take_structured_fields_by_position():
    t = STuple((i32, f64))
    value = np.array([(1, 0.5)], dtype=[("b", "i4"), ("a", "f8")])
    first, second = convert.convert_arg(arr(t), value, "ts")
    assert first.tolist() == [1] and second.tolist() == [0.5]


def test_named_tuples_and_tuple_arrays_match_records_by_name():
    from pyshark.prelude import TupleArray
    Swapped = collections.namedtuple("Swapped", "z y x")
    assert convert.convert_arg(VEC, Swapped(3.0, 2.0, 1.0), "v") == (1.0, 2.0, 3.0)
    cols = [np.array([3.0], np.float32), np.array([2.0], np.float32), np.array([1.0], np.float32)]
    xs, ys, zs = convert.convert_arg(arr(VEC), TupleArray(cols, Swapped, 1), "vs")
    assert (xs.tolist(), zs.tolist()) == ([1.0], [3.0])
    assert [c.tolist() for c in convert.convert_arg(arr(VEC), TupleArray(cols, tuple, 1), "vs")] \
        == [[3.0], [2.0], [1.0]]                                   # no names: by position
    Other = collections.namedtuple("Other", "a b c")
    with pytest.raises(TypeError, match="'vs'"):
        convert.convert_arg(arr(VEC), TupleArray(cols, Other, 1), "vs")


def test_a_python_int_too_large_for_a_float_is_an_overflow_error_naming_the_parameter():
    for t in (f64, f32):
        with pytest.raises(OverflowError, match="'x'.*too large for a float"):
            convert.convert_arg(t, 10 ** 400, "x")
    with pytest.raises(OverflowError, match="'xs'.*401 digits"):
        convert.convert_arg(arr(f64), [1.5, -10 ** 400], "xs")
    got = convert.convert_arg(arr(f32, 2), [[2 ** 70], [1]], "xs")
    assert got.dtype == np.float32 and got[0, 0] == np.float32(2.0 ** 70)
    assert convert.convert_arg(f32, 10 ** 39, "x") == np.inf       # beyond f32: rounds to inf
    assert convert.convert_arg(f64, 2 ** 64, "x") == 2.0 ** 64
