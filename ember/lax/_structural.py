"""lax's shape, slicing, reduction and contraction functions."""

from __future__ import annotations

from collections.abc import Sequence

from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives import contraction as ct
from ember.core.primitives import reduction as rd
from ember.core.primitives import structural as st
from ember.core.primitives._rules import normalize_axis
from ember.errors import InvalidArgumentError, ShapeError
from ember.lax._convert import convert, operands

ArrayLike = Array | float | int | bool | complex
_py_slice = slice  # the builtin, before this module's `slice` shadows it
Shape = Sequence[int]


def _one(op: str, x) -> Array:
    return operands(op, (x,))[0]


def _ints(values, op: str = "lax", what: str = "a sequence of ints") -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in values)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{op}: expected {what}, got {values!r}") from None


def iota(dtype, size: int) -> Array:
    """0, 1, ..., size - 1 as a 1-d array of `dtype`.

    >>> lax.iota("int32", 4)
    Array([0, 1, 2, 3], dtype=int32)
    """
    return st.iota_p.bind(dtype=dtypes.canonicalize(dtype), shape=(int(size),), dimension=0)


def broadcasted_iota(dtype, shape: Shape, dimension: int) -> Array:
    """An array of `shape` counting along `dimension`.

    >>> lax.broadcasted_iota("int32", (2, 3), 1)
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
    """
    shape = _ints(shape)
    return st.iota_p.bind(dtype=dtypes.canonicalize(dtype), shape=shape, dimension=normalize_axis("broadcasted_iota", dimension, len(shape)))


def full(shape: Shape, fill_value: ArrayLike, dtype=None) -> Array:
    """An array of `shape` filled with `fill_value`.

    >>> lax.full((2, 2), 7.0)
    Array([[7., 7.],
           [7., 7.]], dtype=float32, weak_type=True)
    """
    value = _one("full", fill_value)
    if dtype is not None:
        value = convert(value, dtypes.canonicalize(dtype))
    if value.ndim:
        raise InvalidArgumentError(f"full: fill_value must be a scalar, got shape {value.shape}")
    return broadcast_in_dim(value, shape, ())


def broadcast_in_dim(operand: ArrayLike, shape: Shape, broadcast_dimensions: Sequence[int]) -> Array:
    """Broadcast to `shape`, operand dimension i going to output dimension broadcast_dimensions[i].

    >>> lax.broadcast_in_dim(enp.asarray([1.0, 2.0]), (3, 2), (1,))
    Array([[1., 2.],
           [1., 2.],
           [1., 2.]], dtype=float32)
    """
    x = _one("broadcast_in_dim", operand)
    shape, dims = _ints(shape), _ints(broadcast_dimensions)
    if x.shape == shape and dims == tuple(range(len(shape))):
        return x
    return st.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def broadcast(operand: ArrayLike, sizes: Shape) -> Array:
    """Add leading dimensions of `sizes`.

    >>> lax.broadcast(enp.asarray([1.0, 2.0]), (3,))
    Array([[1., 2.],
           [1., 2.],
           [1., 2.]], dtype=float32)
    """
    x = _one("broadcast", operand)
    sizes = _ints(sizes)
    return broadcast_in_dim(x, sizes + x.shape, tuple(range(len(sizes), len(sizes) + x.ndim)))


def reshape(operand: ArrayLike, new_sizes: Shape, dimensions: Sequence[int] | None = None) -> Array:
    """Reshape in row-major order (after transposing by `dimensions`, if given).

    >>> lax.reshape(enp.arange(6), (2, 3))
    Array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    """
    x = _one("reshape", operand)
    new_sizes = _ints(new_sizes, "reshape", "new_sizes as a sequence of ints")
    dims = None if dimensions is None else _ints(dimensions)
    if x.shape == new_sizes and (dims is None or dims == tuple(range(x.ndim))):
        return x
    return st.reshape_p.bind(x, new_sizes=new_sizes, dimensions=dims)


def transpose(operand: ArrayLike, permutation: Sequence[int]) -> Array:
    """Permute the axes: output axis i is input axis permutation[i].

    >>> lax.transpose(enp.zeros((2, 3)), (1, 0)).shape
    (3, 2)
    """
    x = _one("transpose", operand)
    perm = _ints(permutation)
    if perm == tuple(range(x.ndim)):
        return x
    return st.transpose_p.bind(x, permutation=perm)


def squeeze(array: ArrayLike, dimensions: Sequence[int]) -> Array:
    """Remove the given size-1 dimensions.

    >>> lax.squeeze(enp.zeros((1, 3)), (0,)).shape
    (3,)
    """
    x = _one("squeeze", array)
    dims = tuple(sorted({normalize_axis("squeeze", d, x.ndim) for d in dimensions}))
    return st.squeeze_p.bind(x, dimensions=dims) if dims else x


def expand_dims(array: ArrayLike, dimensions: Sequence[int]) -> Array:
    """Insert size-1 dimensions at the given output positions.

    >>> lax.expand_dims(enp.zeros(3), (0,)).shape
    (1, 3)
    """
    x = _one("expand_dims", array)
    ndim = x.ndim + len(dimensions)
    dims = tuple(sorted(normalize_axis("expand_dims", d, ndim) for d in dimensions))
    return st.expand_dims_p.bind(x, dimensions=dims) if dims else x


def rev(operand: ArrayLike, dimensions: Sequence[int]) -> Array:
    """Reverse the order of elements along `dimensions`.

    >>> lax.rev(enp.arange(3), (0,))
    Array([2, 1, 0], dtype=int32)
    """
    x = _one("rev", operand)
    dims = tuple(sorted(normalize_axis("rev", d, x.ndim) for d in dimensions))
    return st.rev_p.bind(x, dimensions=dims) if dims else x


def concatenate(operands_: Sequence[ArrayLike], dimension: int) -> Array:
    """Join arrays of one dtype along an existing `dimension`.

    >>> lax.concatenate([enp.zeros(2), enp.ones(3)], 0).shape
    (5,)
    """
    xs = operands("concatenate", tuple(operands_))
    if len(xs) == 1:
        return xs[0]
    return st.concatenate_p.bind(*xs, dimension=normalize_axis("concatenate", dimension, xs[0].ndim if xs else 0))


def pad(operand: ArrayLike, padding_value: ArrayLike, padding_config: Sequence[tuple[int, int, int]]) -> Array:
    """Pad each dimension with (low, high, interior) elements; negative low/high crop.

    >>> lax.pad(enp.asarray([1.0, 2.0]), 0.0, [(1, 1, 1)])
    Array([0., 1., 0., 2., 0.], dtype=float32)
    """
    x, value = operands("pad", (operand, padding_value))
    config = tuple(_ints(c) for c in padding_config)
    if all(c == (0, 0, 0) for c in config) and len(config) == x.ndim and value.ndim == 0 and value.dtype == x.dtype:
        return x
    return st.pad_p.bind(x, value, padding_config=config)


def slice(operand: ArrayLike, start_indices: Shape, limit_indices: Shape, strides: Shape | None = None) -> Array:
    """The static slice operand[start:limit:stride] in every dimension.

    >>> lax.slice(enp.arange(10), (2,), (8,), (2,))
    Array([2, 4, 6], dtype=int32)
    """
    x = _one("slice", operand)
    start, limit = _ints(start_indices), _ints(limit_indices)
    strides = None if strides is None else _ints(strides)
    if start == (0,) * x.ndim and limit == x.shape and (strides is None or set(strides) <= {1}):
        return x
    return st.slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides)


def slice_in_dim(operand: ArrayLike, start_index: int | None, limit_index: int | None, stride: int = 1, axis: int = 0) -> Array:
    """`slice` along one axis, with Python-style None and negative indices.

    >>> lax.slice_in_dim(enp.arange(10), 2, -2)
    Array([2, 3, 4, 5, 6, 7], dtype=int32)
    """
    x = _one("slice_in_dim", operand)
    axis = normalize_axis("slice_in_dim", axis, x.ndim)
    lo, hi, _ = _py_slice(start_index, limit_index).indices(x.shape[axis])
    start, limit, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    start[axis], limit[axis], strides[axis] = lo, max(hi, lo), int(stride)
    return slice(x, start, limit, strides)


# --- reductions ----------------------------------------------------------------------------


def _reduce(prim, name: str, operand: ArrayLike, axes: Sequence[int]) -> Array:
    x = _one(name, operand)
    axes = tuple(sorted({normalize_axis(name, a, x.ndim) for a in axes}))
    return prim.bind(x, axes=axes)


def reduce_sum(operand: ArrayLike, axes: Sequence[int]) -> Array:
    """Sum over `axes` (the dtype is kept).

    >>> lax.reduce_sum(enp.ones((2, 3)), (1,))
    Array([3., 3.], dtype=float32)
    """
    return _reduce(rd.reduce_sum_p, "reduce_sum", operand, axes)


def reduce_prod(operand: ArrayLike, axes: Sequence[int]) -> Array:
    """Product over `axes`.

    >>> lax.reduce_prod(enp.full((2,), 3.0), (0,))
    Array(9., dtype=float32, weak_type=True)
    """
    return _reduce(rd.reduce_prod_p, "reduce_prod", operand, axes)


def reduce_max(operand: ArrayLike, axes: Sequence[int]) -> Array:
    """Maximum over `axes` (-inf, or the dtype's minimum, for empty axes).

    >>> lax.reduce_max(enp.asarray([1.0, 3.0, 2.0]), (0,))
    Array(3., dtype=float32)
    """
    return _reduce(rd.reduce_max_p, "reduce_max", operand, axes)


def reduce_min(operand: ArrayLike, axes: Sequence[int]) -> Array:
    """Minimum over `axes` (+inf, or the dtype's maximum, for empty axes).

    >>> lax.reduce_min(enp.asarray([1.0, 3.0, 2.0]), (0,))
    Array(1., dtype=float32)
    """
    return _reduce(rd.reduce_min_p, "reduce_min", operand, axes)


def reduce_and(operand: ArrayLike, axes: Sequence[int]) -> Array:
    """Logical (bool) or bitwise (integer) and over `axes`.

    >>> lax.reduce_and(enp.asarray([True, False]), (0,))
    Array(False, dtype=bool)
    """
    return _reduce(rd.reduce_and_p, "reduce_and", operand, axes)


def reduce_or(operand: ArrayLike, axes: Sequence[int]) -> Array:
    """Logical (bool) or bitwise (integer) or over `axes`.

    >>> lax.reduce_or(enp.asarray([True, False]), (0,))
    Array(True, dtype=bool)
    """
    return _reduce(rd.reduce_or_p, "reduce_or", operand, axes)


def argmax(operand: ArrayLike, axis: int, index_dtype) -> Array:
    """Index of the first maximum along `axis` (NaN counts as the maximum).

    >>> lax.argmax(enp.asarray([1.0, 3.0, 2.0]), 0, "int32")
    Array(1, dtype=int32)
    """
    x = _one("argmax", operand)
    return rd.argmax_p.bind(x, axes=(normalize_axis("argmax", axis, x.ndim),), index_dtype=dtypes.canonicalize(index_dtype))


def argmin(operand: ArrayLike, axis: int, index_dtype) -> Array:
    """Index of the first minimum along `axis` (NaN counts as the minimum).

    >>> lax.argmin(enp.asarray([1.0, 3.0, 2.0]), 0, "int32")
    Array(0, dtype=int32)
    """
    x = _one("argmin", operand)
    return rd.argmin_p.bind(x, axes=(normalize_axis("argmin", axis, x.ndim),), index_dtype=dtypes.canonicalize(index_dtype))


# --- contraction ------------------------------------------------------------------------------


def dot_general(lhs: ArrayLike, rhs: ArrayLike, dimension_numbers, precision=None, preferred_element_type=None) -> Array:
    """Contract `lhs` and `rhs`: ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)).

    The output's dimensions are the batch dimensions, then lhs's free ones, then rhs's.

    >>> lax.dot_general(enp.ones((2, 3)), enp.ones((3, 4)), (((1,), (0,)), ((), ()))).shape
    (2, 4)
    """
    lhs, rhs = operands("dot_general", (lhs, rhs))
    (lc, rc), (lb, rb) = dimension_numbers
    dims = ((_ints(lc), _ints(rc)), (_ints(lb), _ints(rb)))
    pet = None if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    return ct.dot_general_p.bind(lhs, rhs, dimension_numbers=dims, precision=precision, preferred_element_type=pet)


def dot(lhs: ArrayLike, rhs: ArrayLike, precision=None, preferred_element_type=None) -> Array:
    """Vector/matrix product of 1-d or 2-d operands (lhs's last axis with rhs's first).

    >>> lax.dot(enp.ones((2, 3)), enp.ones(3))
    Array([3., 3.], dtype=float32)
    """
    lhs, rhs = operands("dot", (lhs, rhs))
    if lhs.ndim not in (1, 2) or rhs.ndim not in (1, 2):
        raise ShapeError(f"dot: takes 1-d or 2-d operands, got shapes {lhs.shape} and {rhs.shape}; use dot_general")
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (0,)), ((), ())), precision, preferred_element_type)
