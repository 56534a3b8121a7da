"""Basic indexing of ember arrays (ints, slices, None, Ellipsis), checked exactly against NumPy.

Every expected value is NumPy's own `numpy_x[idx]`; the comparison is exact
(shape, dtype and values).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
import ember.numpy as enp


def source(shape, dtype=np.int32) -> np.ndarray:
    """Distinct values, so that any mix-up of elements shows."""
    return np.arange(math.prod(shape)).astype(dtype).reshape(shape)


def check(x_np: np.ndarray, index) -> None:
    got = enp.asarray(x_np)[index]
    want = x_np[index]
    assert isinstance(got, ember.Array)
    got_np = np.asarray(got)
    assert got_np.shape == np.shape(want), (index, got_np.shape, np.shape(want))
    assert got.dtype == x_np.dtype
    np.testing.assert_array_equal(got_np, want)


# --- hand-picked cases -----------------------------------------------------------------------------

X23 = source((2, 3))
X345 = source((3, 4, 5))


@pytest.mark.parametrize("index", [0, 1, 2, -1, -2, -3])
def test_int_1d(index):
    check(source((3,)), index)


@pytest.mark.parametrize(
    "index",
    [0, -1, (1, 2), (-1, -3), (0, -1), (1,), (1, slice(None)), (slice(None), 0), (slice(None), -1)],
)
def test_ints_2d(index):
    check(X23, index)


SLICES = [
    slice(None), slice(1, None), slice(None, 2), slice(1, 3), slice(None, None, 2), slice(None, None, -1),
    slice(None, None, -2), slice(3, 0, -1), slice(-1, None, -1), slice(-2, -5, -1), slice(4, 1, -2),
    slice(-100, 100), slice(100, -100, -1), slice(10, 20), slice(-20, -10), slice(3, 1), slice(2, 2),
    slice(0, 5, 7), slice(None, None, 100), slice(None, None, -100), slice(-1, -1, -1), slice(1, -1),
    slice(-4, None, 3), slice(None, -6, -3), slice(2**62, None, -1), slice(-(2**70), 2**70, 3),
]


@pytest.mark.parametrize("index", SLICES, ids=str)
def test_slices_1d(index):
    check(source((5,)), index)
    check(source((0,)), index)
    check(source((1,)), index)


@pytest.mark.parametrize("index", SLICES[:12], ids=str)
def test_slices_on_every_axis(index):
    check(X345, index)
    check(X345, (slice(None), index))
    check(X345, (Ellipsis, index))
    check(X345, (index, 1, index))
    check(X345, (index, index, index))


@pytest.mark.parametrize(
    "index",
    [
        None, (None,), (None, None), (0, None), (None, 0), (slice(None), None), (None, Ellipsis, None),
        (Ellipsis,), Ellipsis, (Ellipsis, 0), (0, Ellipsis), (0, Ellipsis, 0), (Ellipsis, -1, slice(None, None, -1)),
        (None, 1, None, slice(1, None), None, -2), (1, Ellipsis, None), (Ellipsis, None), (None, Ellipsis),
        (slice(None, None, -1), None, Ellipsis, None, 2), (0, 0, 0), (-1, -1, -1), (2, Ellipsis, 3, 4),
        (), (slice(None), slice(None), slice(None)), (0, slice(2, 2)), (None, slice(4, 0, -1), 0),
    ],
    ids=str,
)
def test_mixtures(index):
    check(X345, index)


@pytest.mark.parametrize("index", [(), Ellipsis, None, (None, None), (Ellipsis, None), (None, Ellipsis, None)], ids=str)
def test_zero_d(index):
    check(np.array(7, dtype=np.int32), index)
    check(np.array(1.5, dtype=np.float32), index)


@pytest.mark.parametrize(
    "index",
    [slice(None), slice(1, None), (slice(None), slice(None), 0), (0, slice(None)), (Ellipsis, None),
     (None, slice(None, None, -1)),
     (slice(None), slice(None), 1), (1, slice(None), slice(None, None, -2))],
    ids=str,
)
def test_empty_arrays(index):
    check(source((2, 0, 3)), index)


def test_empty_arrays_int_index_on_non_empty_axis():
    check(source((0, 3)), (slice(None), 2))
    check(source((3, 0)), 1)
    check(source((3, 0)), (-1, slice(None, None, -1)))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.float16, np.float32, np.complex64])
def test_dtypes_are_kept(dtype):
    x = (np.arange(12).reshape(3, 4) % 5).astype(dtype)
    for index in [(1,), (slice(None, None, -1), 2), (Ellipsis, slice(1, 3)), (None, 0, -1)]:
        check(x, index)


def test_bfloat16():
    import ml_dtypes

    x = np.arange(6, dtype=np.float32).reshape(2, 3).astype(ml_dtypes.bfloat16)
    check(x, (slice(None, None, -1), 1))


@pytest.mark.parametrize(
    "make", [np.int8, np.int16, np.int64, np.uint8, np.uint64, int, lambda i: enp.asarray(i),
             lambda i: enp.asarray(np.int8(i)), lambda i: enp.asarray(np.uint32(i))],
    ids=["np.int8", "np.int16", "np.int64", "np.uint8", "np.uint64", "int",
         "ember-int32", "ember-int8", "ember-uint32"],
)
def test_integer_like_indices(make):
    x = source((4, 5))
    for i in (0, 3):
        want = x[i]
        got = np.asarray(enp.asarray(x)[make(i)])
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.asarray(enp.asarray(x)[:, make(i)]), x[:, i])


def test_negative_numpy_and_ember_int_indices():
    x = source((4, 5))
    np.testing.assert_array_equal(np.asarray(enp.asarray(x)[np.int32(-1)]), x[-1])
    np.testing.assert_array_equal(np.asarray(enp.asarray(x)[enp.asarray(-2), enp.asarray(-5)]), x[-2, -5])


def test_ember_ints_as_slice_bounds():
    x = source((6,))
    check(x, slice(np.int64(1), np.int8(5), np.int16(2)))
    got = enp.asarray(x)[enp.asarray(1) : enp.asarray(-1) : enp.asarray(2)]
    np.testing.assert_array_equal(np.asarray(got), x[1:-1:2])


def test_indexing_does_not_alias():
    base = source((3, 4))
    x = enp.asarray(base)
    row = x[1]
    base[1] = -1
    np.testing.assert_array_equal(np.asarray(row), [4, 5, 6, 7])
    view = np.asarray(row)
    assert not view.flags.writeable
    np.testing.assert_array_equal(np.asarray(x), source((3, 4)))


def test_chained_indexing():
    x_np = source((3, 4, 5))
    x = enp.asarray(x_np)
    np.testing.assert_array_equal(np.asarray(x[1][::-1][:, 2]), x_np[1][::-1][:, 2])
    np.testing.assert_array_equal(np.asarray(x[..., ::2][None][0, -1]), x_np[..., ::2][None][0, -1])


def test_weak_type_is_kept():
    assert enp.asarray(2.0)[None].weak_type is True
    assert enp.asarray([2.0])[0].weak_type is False


# --- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, index",
    [((3,), 3), ((3,), -4), ((3,), 100), ((2, 3), (0, 3)), ((2, 3), (-3, 0)), ((2, 3), (Ellipsis, 5)),
     ((0,), 0), ((0,), -1), ((2, 0), (0, 0)), ((3,), np.int64(3)), ((3,), 2**70)],
    ids=str,
)
def test_out_of_bounds_int_raises_index_error(shape, index):
    x_np = source(shape)
    with pytest.raises(IndexError):
        x_np[index]  # the reference agrees
    with pytest.raises(IndexError) as info:
        enp.asarray(x_np)[index]
    message = str(info.value)
    assert "out of bounds" in message or "index" in message


def test_out_of_bounds_message_names_index_axis_and_size():
    with pytest.raises(IndexError, match=r"5.*axis 1.*size 3"):
        enp.zeros((2, 3))[0, 5]


def test_out_of_bounds_ember_int_index():
    with pytest.raises(IndexError):
        enp.zeros(3)[enp.asarray(3)]


@pytest.mark.parametrize(
    "shape, index",
    [((), 0), ((), (0,)), ((3,), (0, 0)), ((2, 3), (0, 0, 0)), ((2, 3), (Ellipsis, 0, 0, 0)), ((2,), (None, 0, 0)),
     ((2, 3), (slice(None), slice(None), slice(None)))],
    ids=str,
)
def test_too_many_indices_raise_index_error(shape, index):
    x_np = source(shape)
    with pytest.raises(IndexError):
        x_np[index]
    with pytest.raises(IndexError, match="too many indices"):
        enp.asarray(x_np)[index]


@pytest.mark.parametrize(
    "index", [(Ellipsis, Ellipsis), (Ellipsis, 0, Ellipsis), (None, Ellipsis, None, Ellipsis)], ids=str
)
def test_two_ellipses_raise_index_error(index):
    with pytest.raises(IndexError):
        source((2, 3))[index]
    with pytest.raises(IndexError, match="ellipsis"):
        enp.asarray(source((2, 3)))[index]


def test_zero_step_raises_value_error():
    with pytest.raises(ValueError):
        source((3,))[::0]
    with pytest.raises(ValueError):
        enp.zeros(3)[::0]


@pytest.mark.parametrize("index", [1.0, (0, 1.5), "a", object()], ids=["float", "tuple-float", "str", "object"])
def test_non_integer_indices_raise(index):
    with pytest.raises((IndexError, TypeError)):
        enp.zeros((2, 3))[index]


def test_float_ember_array_index_raises():
    with pytest.raises((IndexError, TypeError)):
        enp.zeros((2, 3))[enp.asarray(1.0)]


# --- property-based comparison with NumPy -------------------------------------------------------------

shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)


@st.composite
def wide_slices(draw, size: int):
    """Slices whose bounds may lie far outside [-size, size] and whose step may be any non-zero int or None."""
    bound = st.none() | st.integers(-size - 4, size + 4) | st.sampled_from([-(2**40), 2**40])
    step = st.none() | st.integers(-6, 6).filter(bool)
    return slice(draw(bound), draw(bound), draw(step))


@st.composite
def basic_index_tuples(draw, shape):
    """A random basic index for `shape`: ints (negative too), slices, None, at most one Ellipsis."""
    items = []
    dims = list(shape)
    use_ellipsis = draw(st.booleans())
    # With an Ellipsis, index only a prefix and a suffix of the dimensions around it.
    n_before = draw(st.integers(0, len(dims))) if use_ellipsis else len(dims)
    n_after = draw(st.integers(0, len(dims) - n_before)) if use_ellipsis else 0
    indexed = dims[:n_before] + (dims[len(dims) - n_after:] if n_after else [])
    for position, size in enumerate(indexed):
        if use_ellipsis and position == n_before:
            items.append(Ellipsis)
        while draw(st.integers(0, 4)) == 4:  # rarely, and never in the minimal example
            items.append(None)
        choices = [wide_slices(size)]
        if size > 0:
            choices.append(st.integers(-size, size - 1))
        items.append(draw(st.one_of(*choices)))
    if use_ellipsis and Ellipsis not in items:  # every dimension was indexed before it
        items.append(Ellipsis)
    while draw(st.integers(0, 4)) == 4:  # rarely, and never in the minimal example
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]  # a bare index, not a tuple
    return tuple(items)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=shapes)
def test_random_basic_indices_match_numpy(data, shape):
    x_np = source(shape)
    index = data.draw(basic_index_tuples(shape), label="index")
    check(x_np, index)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
def test_hypothesis_basic_indices_match_numpy(data, shape):
    # Hypothesis' own generator of basic indices, as a second, independent source of cases.
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True), label="index")
    check(source(shape, np.float32), index)
