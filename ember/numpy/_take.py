"""Index-driven functions of ember.numpy: take, take_along_axis, put_along_axis, nonzero,
argwhere, flatnonzero, diagonal, trace, flip, roll, repeat, tile.

All of them lower to gather/scatter (through `x[...]` and `x.at[...]`) or to
structural primitives. Functions whose output size depends on the data
(nonzero, argwhere, repeat with array repeats) need concrete inputs, or a
static `size=` / `total_repeat_length=`, as in JAX.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives._rules import normalize_axis
from ember.errors import ConcretizationError, InvalidArgumentError, ShapeError
from ember.numpy._core import ArrayLike, asarray, full_for, on_device
from ember.numpy._indexing import getitem


def _index_dtype():
    return dtypes.default_int()


def _iota_along(shape: tuple[int, ...], axis: int) -> Array:
    return lax.broadcasted_iota(_index_dtype(), shape, axis)


def take(a: ArrayLike, indices: ArrayLike, axis: int | None = None, out=None, mode: str | None = None,
         unique_indices: bool = False, indices_are_sorted: bool = False, fill_value=None) -> Array:  # fmt: skip
    """Elements of `a` at `indices` along `axis` (the flattened array when axis is None).

    Out-of-bounds indices follow JAX: mode="fill" (the default) returns `fill_value`
    (NaN for inexact dtypes), "clip" clamps, "wrap" wraps around.

    >>> enp.take(enp.asarray([10, 20, 30]), enp.asarray([2, 0]))
    Array([30, 10], dtype=int32)
    """
    if out is not None:
        raise InvalidArgumentError("take: ember arrays are immutable, so out= is not supported; use the return value")
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    axis = normalize_axis("take", axis, x.ndim)
    idx = asarray(indices)
    if not dtypes.is_integer(idx.dtype):
        raise InvalidArgumentError(f"take: indices must be integers, got {idx.dtype}")
    mode = "fill" if mode is None else mode
    if mode == "wrap":
        from ember.numpy._ufuncs import remainder

        idx, mode = remainder(idx, x.shape[axis]) if x.shape[axis] else idx, "clip"
    return getitem(x, (slice(None),) * axis + (idx,), mode=mode, fill_value=fill_value, ints_as_arrays=True)


def _along_axis_index(op: str, arr: Array, indices: Array, axis: int) -> tuple[tuple, tuple[int, ...]]:
    if indices.ndim != arr.ndim:
        raise ShapeError(f"{op}: indices {indices.shape} must have the same number of dimensions as arr {arr.shape}")
    if not dtypes.is_integer(indices.dtype):
        raise InvalidArgumentError(f"{op}: indices must be integers, got {indices.dtype}")
    shape = []
    for d, (n, m) in enumerate(zip(arr.shape, indices.shape)):
        if d == axis:
            shape.append(m)
        elif n != m and 1 not in (n, m):
            raise ShapeError(f"{op}: arr {arr.shape} and indices {indices.shape} do not broadcast in dimension {d}")
        else:
            shape.append(m if n == 1 else n)
    shape = tuple(shape)
    from ember.numpy._shape import broadcast_to

    index = tuple(broadcast_to(indices, shape) if d == axis else _iota_along(shape, d) for d in range(arr.ndim))
    return index, shape


def take_along_axis(arr: ArrayLike, indices: ArrayLike, axis: int | None = -1, mode: str | None = None, fill_value=None) -> Array:
    """Pick values from `arr` by matching 1-d index slices along `axis` (NumPy's rule).

    >>> enp.take_along_axis(enp.asarray([[10, 30, 20]]), enp.asarray([[0, 2]]), axis=1)
    Array([[10, 20]], dtype=int32)
    """
    x, idx = asarray(arr), asarray(indices)
    if axis is None:
        x, idx, axis = lax.reshape(x, (x.size,)), lax.reshape(idx, (idx.size,)), 0
    axis = normalize_axis("take_along_axis", axis, x.ndim)
    index, _ = _along_axis_index("take_along_axis", x, idx, axis)
    other = [i for i in range(x.ndim) if i != axis]
    for d in other:  # broadcast size-1 dims of arr too
        if x.shape[d] == 1 and index[d].shape[d] != 1:
            index = tuple(lax.full(index[0].shape, 0, _index_dtype()) if i == d else ix for i, ix in enumerate(index))
    return getitem(x, index, mode="fill" if mode is None else mode, fill_value=fill_value, ints_as_arrays=True)


def put_along_axis(arr: ArrayLike, indices: ArrayLike, values: ArrayLike, axis: int | None, inplace: bool = True,
                   *, mode: str | None = None) -> Array:  # fmt: skip
    """A copy of `arr` with `values` written at `indices` along `axis` (pass inplace=False, as in JAX).

    >>> enp.put_along_axis(enp.zeros((1, 3)), enp.asarray([[2]]), 5.0, axis=1, inplace=False)
    Array([[0., 0., 5.]], dtype=float32)
    """
    if inplace:
        raise InvalidArgumentError("put_along_axis: ember arrays are immutable; pass inplace=False and use the result")
    x, idx = asarray(arr), asarray(indices)
    if axis is None:
        flat = lax.reshape(x, (x.size,))
        return lax.reshape(put_along_axis(flat, lax.reshape(idx, (idx.size,)), values, 0, inplace=False, mode=mode), x.shape)
    axis = normalize_axis("put_along_axis", axis, x.ndim)
    index, _ = _along_axis_index("put_along_axis", x, idx, axis)
    return x.at[index].set(values, mode=mode)


# --- data-dependent sizes ------------------------------------------------------------------------


def _concrete(op: str, x: Array, hint: str) -> np.ndarray:
    try:
        return np.asarray(x._concrete(op))  # also a value being differentiated outside jit
    except ConcretizationError:
        raise ConcretizationError(
            f"{op}: the output size depends on the values of a traced array {x.aval.str_short()}; {hint}"
        ) from None


def nonzero(a: ArrayLike, *, size: int | None = None, fill_value=None) -> tuple[Array, ...]:
    """Indices of the nonzero elements, one array per dimension.

    With `size=`, the result has exactly that length (padded with `fill_value`, default 0,
    or truncated), which is what a traced input needs.

    >>> enp.nonzero(enp.asarray([0, 3, 0, 4]))
    (Array([1, 3], dtype=int32),)
    """
    x = asarray(a)
    if x.ndim == 0:
        raise ShapeError("nonzero: calling nonzero on a 0-d array is not allowed (as in NumPy); use atleast_1d(x)")
    if size is None:
        found = np.nonzero(_concrete("nonzero", x, "pass size= to get a fixed-length result"))
        return on_device(tuple(asarray(i.astype(_index_dtype())) for i in found), x._place)  # on x's device
    return _nonzero_static(x, int(size), fill_value)


def _nonzero_static(x: Array, size: int, fill_value) -> tuple[Array, ...]:
    # Written with primitives so it works on traced values: the k-th nonzero element
    # goes to slot k (a running count), slots past the count keep the fill value.
    from ember.numpy._ufuncs import not_equal

    flat_mask = lax.reshape(not_equal(x, 0), (x.size,))
    counts = _running_count(flat_mask)
    slots = lax.select(flat_mask, counts - 1, lax.full(counts.shape, size, counts.dtype))
    flat_positions = lax.iota(_index_dtype(), x.size)
    fills = (0,) * x.ndim if fill_value is None else tuple(np.broadcast_to(np.asarray(fill_value), (x.ndim,)).tolist())
    out = []
    strides = np.cumprod((1,) + x.shape[::-1])[::-1][1:]
    for d, (stride, n) in enumerate(zip(strides, x.shape)):
        coordinate = (flat_positions // int(stride)) % max(n, 1)
        base = lax.full((size,), fills[d], _index_dtype())
        out.append(base.at[slots].set(coordinate, mode="drop"))
    return tuple(out)


def _running_count(mask: Array) -> Array:
    """The number of True values up to and including each position."""
    return _running_count_of(lax.convert_element_type(mask, _index_dtype()))


def _running_count_of(counts: Array) -> Array:
    """Inclusive running sum of a 1-d integer array."""
    return lax.cumsum(counts, axis=0)


def flatnonzero(a: ArrayLike, *, size: int | None = None, fill_value=None) -> Array:
    """Indices of the nonzero elements of the flattened array.

    >>> enp.flatnonzero(enp.asarray([[0, 1], [2, 0]]))
    Array([1, 2], dtype=int32)
    """
    x = asarray(a)
    return nonzero(lax.reshape(x, (x.size,)), size=size, fill_value=fill_value)[0]


def argwhere(a: ArrayLike, *, size: int | None = None, fill_value=None) -> Array:
    """Coordinates of the nonzero elements, one row each: shape (count, ndim).

    >>> enp.argwhere(enp.asarray([[0, 1], [2, 0]]))
    Array([[0, 1],
           [1, 0]], dtype=int32)
    """
    from ember.numpy._shape import stack

    x = asarray(a)
    if x.ndim == 0:  # NumPy: one row of zero coordinates per nonzero scalar
        rows = size if size is not None else int(bool(_concrete("argwhere", x, "pass size=")))
        return full_for("argwhere", (rows, 0), 0, _index_dtype(), x)
    return stack(nonzero(x, size=size, fill_value=fill_value), axis=-1)


# --- diagonals and rearrangements ------------------------------------------------------------------


def diagonal(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The `offset` diagonal of the (axis1, axis2) planes, as the last axis of the result.

    >>> enp.diagonal(enp.arange(9).reshape(3, 3))
    Array([0, 4, 8], dtype=int32)
    """
    from ember.numpy._shape import moveaxis

    x = asarray(a)
    if x.ndim < 2:
        raise ShapeError(f"diagonal: needs at least 2 dimensions, got shape {x.shape}")
    a1, a2 = normalize_axis("diagonal", axis1, x.ndim), normalize_axis("diagonal", axis2, x.ndim)
    if a1 == a2:
        raise InvalidArgumentError(f"diagonal: axis1 and axis2 must differ, got {axis1} and {axis2}")
    x = moveaxis(x, (a1, a2), (-2, -1))
    n, m = x.shape[-2:]
    rows_start, cols_start = max(-offset, 0), max(offset, 0)
    k = max(0, min(n - rows_start, m - cols_start))
    if k == 0:
        return full_for("diagonal", x.shape[:-2] + (0,), 0, x.dtype, x)
    rows = lax.iota(_index_dtype(), k) + rows_start
    cols = lax.iota(_index_dtype(), k) + cols_start
    return getitem(x, (Ellipsis, rows, cols))


def trace(a: ArrayLike, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None) -> Array:
    """Sum along the `offset` diagonal of the (axis1, axis2) planes.

    >>> enp.trace(enp.eye(3))
    Array(3., dtype=float32)
    """
    from ember.numpy._reductions import sum as _sum

    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def flip(m: ArrayLike, axis: int | Sequence[int] | None = None) -> Array:
    """Reverse the order of elements along `axis` (all axes when None).

    >>> enp.flip(enp.arange(3))
    Array([2, 1, 0], dtype=int32)
    """
    from ember.numpy._core import canonical_axes

    x = asarray(m)
    return lax.rev(x, canonical_axes("flip", axis, x.ndim))


def fliplr(m: ArrayLike) -> Array:
    """Reverse along axis 1.

    >>> enp.fliplr(enp.eye(2))
    Array([[0., 1.],
           [1., 0.]], dtype=float32)
    """
    return flip(m, 1)


def flipud(m: ArrayLike) -> Array:
    """Reverse along axis 0.

    >>> enp.flipud(enp.arange(3))
    Array([2, 1, 0], dtype=int32)
    """
    return flip(m, 0)


def roll(a: ArrayLike, shift: ArrayLike | Sequence[int], axis: int | Sequence[int] | None = None) -> Array:
    """Shift elements cyclically along `axis` (the flattened array when None); shifts may be traced.

    >>> enp.roll(enp.arange(5), 2)
    Array([3, 4, 0, 1, 2], dtype=int32)
    """
    x = asarray(a)
    if axis is None:
        return lax.reshape(roll(lax.reshape(x, (x.size,)), shift, 0), x.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else [shift]
    axes = axis if isinstance(axis, (tuple, list)) else [axis]
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise InvalidArgumentError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    for s, ax in zip(shifts, axes):
        ax = normalize_axis("roll", ax, x.ndim)
        n = x.shape[ax]
        if n == 0:
            continue
        doubled = lax.concatenate([x, x], ax)
        start = (n - s) % n if not isinstance(s, Array) else lax.rem(lax.rem(-asarray(s, _index_dtype()), n) + n, n)
        x = lax.dynamic_slice_in_dim(doubled, start, n, ax)
    return x


def repeat(a: ArrayLike, repeats: ArrayLike, axis: int | None = None, *, total_repeat_length: int | None = None) -> Array:
    """Repeat each element `repeats` times along `axis` (flattened when None).

    >>> enp.repeat(enp.asarray([1, 2]), 2)
    Array([1, 1, 2, 2], dtype=int32)
    """
    x = asarray(a)
    if axis is None:
        x, axis = lax.reshape(x, (x.size,)), 0
    axis = normalize_axis("repeat", axis, x.ndim)
    n = x.shape[axis]
    if isinstance(repeats, (int, np.integer)):
        r = int(repeats)
        if r < 0:
            raise InvalidArgumentError(f"repeat: repeats must be non-negative, got {r}")
        spread = lax.broadcast_in_dim(x, x.shape[: axis + 1] + (r,) + x.shape[axis + 1 :],
                                      tuple(range(axis + 1)) + tuple(range(axis + 2, x.ndim + 1)))  # fmt: skip
        return lax.reshape(spread, x.shape[:axis] + (n * r,) + x.shape[axis + 1 :])
    counts = asarray(repeats)
    if counts.ndim == 0:
        return repeat(x, int(_concrete("repeat", counts, "pass repeats as a Python int")), axis)
    if counts.shape != (n,):
        raise ShapeError(f"repeat: repeats of shape {counts.shape} must match axis {axis} of size {n} in shape {x.shape}")
    if total_repeat_length is None:
        values = _concrete("repeat", counts, "pass total_repeat_length= so the output size is static")
        return take(x, asarray(np.repeat(np.arange(n), values).astype(_index_dtype())), axis=axis, mode="clip")
    # Output position j comes from the source element whose running end is the first past j.
    ends = _running_count_of(lax.convert_element_type(counts, _index_dtype()))
    j = lax.iota(_index_dtype(), int(total_repeat_length))
    passed = lax.convert_element_type(lax.le(lax.broadcast_in_dim(ends, (j.shape[0], n), (1,)),
                                             lax.broadcast_in_dim(j, (j.shape[0], n), (0,))), _index_dtype())  # fmt: skip
    source = lax.reduce_sum(passed, (1,))
    return take(x, source, axis=axis, mode="clip")


def tile(A: ArrayLike, reps: int | Sequence[int]) -> Array:
    """Repeat the whole array `reps` times per axis.

    >>> enp.tile(enp.asarray([1, 2]), 2)
    Array([1, 2, 1, 2], dtype=int32)
    """
    x = asarray(A)
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    if any(r < 0 for r in reps):
        raise InvalidArgumentError(f"tile: repetitions must be non-negative, got {reps}")
    ndim = max(x.ndim, len(reps))
    x = lax.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
    reps = (1,) * (ndim - len(reps)) + reps
    spread_shape = tuple(s for r, n in zip(reps, x.shape) for s in (r, n))
    spread = lax.broadcast_in_dim(x, spread_shape, tuple(range(1, 2 * ndim, 2)))
    return lax.reshape(spread, tuple(r * n for r, n in zip(reps, x.shape)))
