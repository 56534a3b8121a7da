"""Advanced indexing (integer arrays, boolean masks, mixed with basic indices) and x.at[...] updates,
compared with NumPy (np.add.at & co. for the accumulating updates)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.numpy as enp
from ember import lax


@st.composite
def index_tuples(draw, shape):
    """A random NumPy index for `shape`: ints, slices, None, ..., integer arrays and boolean masks."""
    items, dim = [], 0
    used_ellipsis = False
    while dim < len(shape) and draw(st.booleans()):
        n = shape[dim]
        kind = draw(st.sampled_from(["int", "slice", "array", "mask", "none", "ellipsis"]))
        if kind == "int" and n:
            items.append(draw(st.integers(-n, n - 1)))
            dim += 1
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0)))
            items.append(slice(draw(bound), draw(bound), step))
            dim += 1
        elif kind == "array" and n:
            index_shape = draw(st.sampled_from([(), (1,), (3,), (2, 1), (2, 3)]))
            values = draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(index_shape)), max_size=int(np.prod(index_shape))))
            items.append(np.array(values, dtype=np.int32).reshape(index_shape))
            dim += 1
        elif kind == "mask":
            width = draw(st.integers(1, len(shape) - dim))
            mask_shape = shape[dim : dim + width]
            bits = draw(st.lists(st.booleans(), min_size=int(np.prod(mask_shape)), max_size=int(np.prod(mask_shape))))
            items.append(np.array(bits, dtype=bool).reshape(mask_shape))
            dim += width
        elif kind == "none":
            items.append(None)
        elif kind == "ellipsis" and not used_ellipsis:
            items.append(Ellipsis)
            used_ellipsis = True
            dim = len(shape)  # the ellipsis may take all remaining dimensions
    return tuple(items)


SHAPES = st.sampled_from([(5,), (4, 3), (2, 3, 4), (3, 1, 2), (0, 3), (2, 0)])


def _numpy_result(x, index):
    try:
        return x[index], None
    except IndexError as err:
        return None, err


@settings(max_examples=300, deadline=None)
@given(data=st.data(), shape=SHAPES)
def test_getitem_matches_numpy(data, shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    index = data.draw(index_tuples(shape))
    want, err = _numpy_result(x, index)
    if err is not None:
        with pytest.raises((IndexError, ember.errors.EmberError)):
            enp.asarray(x)[index]
        return
    got = enp.asarray(x)[index]
    assert got.shape == want.shape, (index, got.shape, want.shape)
    np.testing.assert_array_equal(np.asarray(got), want)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), shape=SHAPES)
def test_at_add_matches_numpy_add_at(data, shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    index = data.draw(index_tuples(shape))
    try:
        selected = x[index]
    except IndexError:
        return
    values = np.arange(selected.size, dtype=np.float32).reshape(selected.shape) + 100
    want = x.copy()
    np.add.at(want, index, values)
    got = enp.asarray(x).at[index].add(values)
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("method, ufunc", [("add", np.add), ("multiply", np.multiply), ("min", np.minimum),
                                           ("max", np.maximum)])  # fmt: skip
def test_duplicate_indices_accumulate(method, ufunc):
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    index = np.array([0, 2, 0, 0, 3])
    values = np.array([5.0, -1.0, 0.5, 2.0, 7.0], np.float32)
    want = x.copy()
    ufunc.at(want, index, values)
    got = getattr(enp.asarray(x).at[index], method)(values)
    np.testing.assert_allclose(np.asarray(got), want)


def test_set_subtract_divide_and_scalar_broadcast():
    x = enp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(x.at[:, 1].set(9.0)), [[0, 9, 2], [3, 9, 5]])
    np.testing.assert_array_equal(np.asarray(x.at[1].subtract(1.0)), [[0, 1, 2], [2, 3, 4]])
    np.testing.assert_allclose(np.asarray(x.at[0, 2].divide(4.0)), [[0, 1, 0.5], [3, 4, 5]])
    assert x.at[0].set(1).dtype == np.float32  # values take the array's dtype


def test_out_of_bounds_modes_follow_jax():
    x = enp.asarray([1, 2, 3])
    # Updates drop out-of-bounds indices by default, or clamp them with mode="clip".
    np.testing.assert_array_equal(np.asarray(x.at[5].set(9)), [1, 2, 3])
    np.testing.assert_array_equal(np.asarray(x.at[enp.asarray([0, 7])].add(10)), [11, 2, 3])
    np.testing.assert_array_equal(np.asarray(x.at[5].set(9, mode="clip")), [1, 2, 9])
    np.testing.assert_array_equal(np.asarray(x.at[-1].set(9)), [1, 2, 9])  # negative indices count from the end
    # Reads: fill or clip on request; a concrete out-of-bounds plain index is an error, never a wrong answer.
    assert int(x.at[7].get(mode="fill", fill_value=-1)) == -1
    assert int(x.at[7].get(mode="clip")) == 3
    assert np.isnan(float(enp.asarray([1.0]).at[3].get(mode="fill")))
    with pytest.raises(IndexError, match="out of bounds"):
        x[enp.asarray([0, 3])]
    with pytest.raises(ember.errors.InvalidArgumentError, match="unknown indexing mode"):
        x.at[0].get(mode="wrap")


def test_index_errors_are_clear():
    x = enp.zeros((2, 3))
    with pytest.raises(IndexError, match="integer or boolean"):
        x[enp.asarray([0.5])]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="scalar boolean"):
        x[True]


def test_gather_and_scatter_directly():
    operand = np.arange(12.0).reshape(3, 4)
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    got = lax.gather(operand, np.array([[2], [0]]), dn, (1, 4))
    np.testing.assert_array_equal(np.asarray(got), operand[[2, 0]])
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    got = lax.scatter_add(operand, np.array([[1], [1]]), np.ones((2, 4)), sdn)
    want = operand.copy()
    want[1] += 2
    np.testing.assert_array_equal(np.asarray(got), want)
    # A window that does not fit: dropped (default) or clamped.
    dn2 = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    flat = np.arange(6.0)
    np.testing.assert_array_equal(np.asarray(lax.gather(flat, np.array([[4]]), dn2, (3,), mode="clip")), [[3, 4, 5]])
    assert np.isnan(np.asarray(lax.gather(flat, np.array([[4]]), dn2, (3,), mode="fill"))).all()


def test_update_values_with_leading_ones_follow_numpy():
    want = np.zeros((3, 4), np.float32)
    want[0] = np.ones((1, 1, 4), np.float32)  # NumPy's setitem drops the leading 1s
    got = enp.zeros((3, 4)).at[0].set(enp.ones((1, 1, 4)))
    np.testing.assert_array_equal(np.asarray(got), want)
