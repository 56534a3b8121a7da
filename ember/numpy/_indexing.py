"""NumPy indexing of ember arrays, and functional updates through ``x.at[idx]``.

Basic indices (ints, slices with any step, None, Ellipsis) lower to slice,
rev, squeeze and expand_dims. Advanced indices (integer arrays, boolean masks,
and ints mixed with them) lower to one `gather`, placed by NumPy's rule:
advanced dimensions replace the indexed ones when the advanced indices are
adjacent, and go first otherwise. `x.at[idx].op(v)` scatters into the flat
positions that ``x[idx]`` reads, so every index form NumPy has works there too,
and duplicates accumulate like ``np.add.at``.
"""

from __future__ import annotations

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array, from_host
from ember.core.primitives import indexing as ix
from ember.core.transfer import _put
from ember.errors import ConcretizationError, DTypeError, EmberIndexError, ShapeError
from ember.lax._convert import convert
from ember.lax import _fastlane
from ember.numpy._core import full_for


def _static_int(item) -> int | None:
    if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
        return int(item)
    if type(item) is Array and item.ndim == 0 and item.dtype.kind in "iu":
        return int(item)
    return None


def _as_index_array(item, x: Array) -> Array | list[Array]:
    """An integer index array for `item` (a bool mask becomes one array per dimension)."""
    arr = item if isinstance(item, Array) else from_host(np.asarray(item), "indexing")
    if arr.dtype == dtypes.bool_:
        try:
            mask = np.asarray(arr._concrete("boolean mask indexing"))  # concrete, or differentiated outside jit
        except ConcretizationError:
            raise ConcretizationError(
                f"boolean mask indexing needs a concrete mask (the result's size depends on its values), got a traced "
                f"mask {arr.aval.str_short()}; use enp.where(mask, x, 0) or enp.nonzero(mask, size=...) instead"
            ) from None
        index_dtype = np.int64 if dtypes.x64_enabled() else np.int32
        return [_put(from_host(i.astype(index_dtype)), arr._place) for i in np.nonzero(mask)]  # on the mask's device
    if not dtypes.is_integer(arr.dtype):
        raise EmberIndexError(f"arrays used as indices must be of integer or boolean type, got {arr.dtype} "
                              f"(indexing shape {x.shape})")
    return arr


def _is_bool_scalar(item) -> bool:
    if isinstance(item, (bool, np.bool_)):
        return True
    return isinstance(item, (Array, np.ndarray)) and item.ndim == 0 and item.dtype == np.bool_


def _normalize(index, x: Array, ints_as_arrays: bool) -> list:
    """The index as a list of None / slice / int / index Array, with Ellipsis expanded."""
    raw = list(index) if isinstance(index, tuple) else [index]
    items = []
    for item in raw:
        if item is None or item is Ellipsis or isinstance(item, slice):
            items.append(item)
        elif _static_int(item) is not None:
            items.append(_static_int(item))
        elif _is_bool_scalar(item):
            raise EmberIndexError("a scalar boolean index is not supported; index with ints, slices, arrays, None "
                                  "or ...")
        elif isinstance(item, (Array, np.ndarray, list, tuple)):
            converted = _as_index_array(item, x)
            items.extend(converted if isinstance(converted, list) else [converted])
        elif isinstance(item, float):
            raise DTypeError(f"array indices must be integers, got float {item!r} (indexing shape {x.shape})")
        else:
            raise EmberIndexError(f"unsupported index {item!r} of type {type(item).__name__} (indexing shape "
                                  f"{x.shape})")
    ellipses = sum(item is Ellipsis for item in items)
    if ellipses > 1:
        raise EmberIndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(item is not None and item is not Ellipsis for item in items)
    if consumed > x.ndim:
        raise EmberIndexError(f"too many indices for array: array is {x.ndim}-dimensional (shape {x.shape}), but "
                              f"{consumed} were indexed")
    if ellipses:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (x.ndim - consumed)
    else:
        items += [slice(None)] * (x.ndim - consumed)
    has_arrays = any(isinstance(item, Array) for item in items)
    if has_arrays or ints_as_arrays:
        items = [from_host(item) if type(item) is int else item for item in items]
    return items


def getitem(x: Array, index, mode=None, fill_value=None, ints_as_arrays: bool = False) -> Array:
    """x[index] with NumPy's semantics; `mode`/`fill_value` as in JAX's ``x.at[idx].get``."""
    items = _normalize(index, x, ints_as_arrays)
    basic, advanced = [], []
    axis = 0
    for item in items:
        if isinstance(item, Array):
            advanced.append((axis, item))
            basic.append(slice(None))
        else:
            basic.append(item)
        if not isinstance(item, int):
            axis += 1
    y = _basic(x, basic)
    if not advanced:
        return y
    return _advanced(y, advanced, ix.GatherScatterMode.parse(mode), fill_value)


def _out_of_bounds(index: int, axis: int, size: int, shape: tuple[int, ...]) -> str:
    return (f"index {index} is out of bounds for axis {axis} with size {size} (indexing an array of shape {shape}; "
            f"valid indices are {-size} to {size - 1}); to read out-of-bounds positions without an error, use "
            "x.at[idx].get(mode='clip') or x.at[idx].get(mode='fill', fill_value=...)")


def _basic(x: Array, items: list) -> Array:
    start, limit, strides = [], [], []
    reversed_dims, squeezed, new_axes = [], [], []
    dim = out_pos = 0
    for item in items:
        if item is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        size = x.shape[dim]
        if isinstance(item, int):
            if not -size <= item < size:
                raise EmberIndexError(_out_of_bounds(item, dim, size, x.shape))
            item %= size
            start.append(item)
            limit.append(item + 1)
            strides.append(1)
            squeezed.append(dim)
        else:
            lo, hi, step = item.indices(size)
            count = len(range(lo, hi, step))
            if step < 0:
                reversed_dims.append(dim)
                lo, step = size - 1 - lo, -step
            start.append(lo if count else 0)
            limit.append(lo + (count - 1) * step + 1 if count else 0)
            strides.append(step)
            out_pos += 1
        dim += 1
    if reversed_dims:
        x = lax.rev(x, reversed_dims)
    x = lax.slice(x, start, limit, strides)
    if squeezed:
        x = lax.squeeze(x, squeezed)
    if new_axes:
        x = lax.expand_dims(x, new_axes)
    return x


def _index_dtype(size: int):
    return dtypes.int64 if dtypes.x64_enabled() and size >= 2**31 else dtypes.int32


def _advanced(y: Array, advanced: list[tuple[int, Array]], mode: str, fill_value) -> Array:
    from ember.numpy._shape import broadcast_arrays, stack

    axes = [axis for axis, _ in advanced]
    arrays = broadcast_arrays(*[idx for _, idx in advanced])
    normalized = []
    for axis, idx in zip(axes, arrays):
        n = y.shape[axis]
        idx = convert(idx, _index_dtype(n)) if idx.dtype != _index_dtype(n) else idx
        if mode == ix.GatherScatterMode.PROMISE_IN_BOUNDS and type(idx) is Array:
            values = np.asarray(idx)
            if values.size and (values.min() < -n or values.max() >= n):
                bad = values[(values < -n) | (values >= n)].ravel()[0]
                raise EmberIndexError(_out_of_bounds(bad, axis, n, y.shape))
        normalized.append(lax.select(lax.lt(idx, lax.full(idx.shape, 0, idx.dtype)), idx + n, idx))
    batch_shape = normalized[0].shape
    rest = [a for a in range(y.ndim) if a not in axes]
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    first = sum(1 for a in rest if a < axes[0]) if adjacent else 0
    if any(y.shape[a] == 0 for a in axes):  # nothing to gather from: only empty index arrays are valid
        if normalized[0].size:
            raise EmberIndexError(f"cannot take elements from an empty axis (indexing shape {y.shape})")
        rest_shape = [y.shape[a] for a in rest]
        return full_for("gather", tuple(rest_shape[:first]) + batch_shape + tuple(rest_shape[first:]), 0, y.dtype, y,
                        *arrays)
    indices = stack(normalized, axis=-1)
    batch_rank = len(batch_shape)
    offset_dims = tuple(range(first)) + tuple(range(first + batch_rank, batch_rank + len(rest)))
    dn = ix.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(axes), start_index_map=tuple(axes))
    slice_sizes = tuple(1 if a in axes else y.shape[a] for a in range(y.ndim))
    return lax.gather(y, indices, dn, slice_sizes, mode=mode, fill_value=fill_value)


# --- x.at[idx] -------------------------------------------------------------------------------------


class _IndexUpdateHelper:
    """`x.at`: index it to get an `_IndexUpdateRef`."""

    __slots__ = ("array",)

    def __init__(self, array: Array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """`x.at[idx]`: functional updates of the elements ``x[idx]`` selects.

    Duplicate indices accumulate (as ``np.add.at``); out-of-bounds indices are dropped
    by default (mode='drop', as in JAX) or clamped with mode='clip'.
    """

    __slots__ = ("array", "index")

    def __init__(self, array: Array, index):
        self.array = array
        self.index = index

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False, unique_indices=False) -> Array:
        """``x[idx]``, with JAX's out-of-bounds `mode` ('clip', 'fill', 'promise_in_bounds') and `fill_value`.

        >>> enp.arange(3).at[5].get(mode="fill", fill_value=-1)
        Array(-1, dtype=int32)
        """
        return getitem(self.array, self.index, mode=mode, fill_value=fill_value, ints_as_arrays=mode is not None)

    def set(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
        """A copy of x with ``x[idx] = values`` (one of several duplicate writes wins).

        >>> enp.zeros(3).at[1].set(5.0)
        Array([0., 5., 0.], dtype=float32)
        """
        out = _fastlane.index_update(self.array, self.index, values, "set")
        return out if out is not None else _update("set", self.array, self.index, values, ix.scatter_p, mode)

    def add(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
        """A copy of x with ``x[idx] += values``, duplicates accumulating.

        >>> enp.zeros(3).at[enp.asarray([0, 0])].add(1.0)
        Array([2., 0., 0.], dtype=float32)
        """
        out = _fastlane.index_update(self.array, self.index, values, "add")
        return out if out is not None else _update("add", self.array, self.index, values, ix.scatter_add_p, mode)

    def subtract(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
        """A copy of x with ``x[idx] -= values``, duplicates accumulating.

        >>> enp.ones(3).at[1].subtract(1.0)
        Array([1., 0., 1.], dtype=float32)
        """
        from ember.numpy._core import asarray
        from ember.numpy._ufuncs import negative

        return self.add(negative(asarray(values)), mode=mode)

    def multiply(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
        """A copy of x with ``x[idx] *= values``, duplicates accumulating.

        >>> enp.ones(3).at[1].multiply(4.0)
        Array([1., 4., 1.], dtype=float32)
        """
        out = _fastlane.index_update(self.array, self.index, values, "multiply")
        return out if out is not None else _update("multiply", self.array, self.index, values, ix.scatter_mul_p, mode)

    mul = multiply

    def divide(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
        """A copy of x with ``x[idx] /= values`` (inexact dtypes), duplicates accumulating.

        >>> enp.ones(3).at[1].divide(4.0)
        Array([1.  , 0.25, 1.  ], dtype=float32)
        """
        if not dtypes.is_inexact(self.array.dtype):
            raise DTypeError(f"at[].divide: needs a floating or complex array, got {self.array.dtype}; use astype first")
        from ember.numpy._ufuncs import true_divide

        return self.multiply(true_divide(1, _values_as(self.array, values)), mode=mode)

    def min(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
        """A copy of x with ``x[idx] = minimum(x[idx], values)``.

        >>> enp.ones(3).at[1].min(0.0)
        Array([1., 0., 1.], dtype=float32)
        """
        return _update("min", self.array, self.index, values, ix.scatter_min_p, mode)

    def max(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False) -> Array:
        """A copy of x with ``x[idx] = maximum(x[idx], values)``.

        >>> enp.ones(3).at[1].max(7.0)
        Array([1., 7., 1.], dtype=float32)
        """
        return _update("max", self.array, self.index, values, ix.scatter_max_p, mode)


def _values_as(x: Array, values) -> Array:
    from ember.numpy._core import asarray

    v = asarray(values)
    return convert(v, x.dtype, x.weak_type) if v.dtype != x.dtype else v


def _update(method: str, x: Array, index, values, prim, mode) -> Array:
    from ember.numpy._shape import broadcast_to, reshape

    scatter_mode = ix.GatherScatterMode.parse("drop" if mode is None else mode)
    gather_mode = "clip" if scatter_mode == "clip" else "fill"
    positions = lax.reshape(lax.iota(_index_dtype(x.size), x.size), x.shape)
    # Out-of-bounds reads give position -1, which the scatter then drops.
    from ember.numpy._core import asarray

    updates = asarray(values)
    dtype, weak = dtypes.promote((x.dtype, x.weak_type), (updates.dtype, updates.weak_type))
    if method != "set" and dtype != x.dtype:
        # JAX's rule: combine in the promoted dtype, then cast back (ints.at[i].multiply(2.5) scales by 2.5, not 2).
        out = _update(method, convert(x, dtype, weak), index, convert(updates, dtype, weak), prim, mode)
        return convert(out, x.dtype, x.weak_type)
    selected = getitem(positions, index, mode=gather_mode, fill_value=-1, ints_as_arrays=True)
    updates = _values_as(x, updates)
    while updates.ndim > selected.ndim and updates.shape[0] == 1:  # NumPy drops leading 1s of the values
        updates = reshape(updates, updates.shape[1:])
    try:
        updates = broadcast_to(updates, selected.shape)
    except ShapeError:
        raise ShapeError(
            f"at[...].{method}: values of shape {updates.shape} do not broadcast to the shape {selected.shape} that "
            f"the index selects from x of shape {x.shape}; pass values of that shape, or one that broadcasts to it"
        ) from None
    dn = ix.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    flat = prim.bind(reshape(x, (-1,)), reshape(selected, (-1, 1)), reshape(updates, (-1,)), dimension_numbers=dn,
                     mode=scatter_mode, indices_are_sorted=False, unique_indices=False)  # fmt: skip
    return reshape(flat, x.shape)
