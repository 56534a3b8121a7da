"""Indexing primitives: gather, the scatter family, dynamic_slice, dynamic_update_slice.

`gather` and `scatter` follow XLA's general forms (the same dimension numbers
as JAX), general enough for all of NumPy's indexing: `ember.numpy` lowers
``x[idx]`` and ``x.at[idx].op(v)`` to them. Indices carry their index vector
in the last dimension.
"""

from __future__ import annotations

from typing import NamedTuple

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import ANY, DTypes, check_axes, check_dtype
from ember.errors import DTypeError, InvalidArgumentError, ShapeError

INDEX_DTYPES = DTypes("integer dtypes", dtypes.INTEGER)


class GatherDimensionNumbers(NamedTuple):
    """How a gather maps index vectors to operand slices (XLA's GatherDimensionNumbers).

    offset_dims: output dimensions that hold the (uncollapsed) slice dimensions
    collapsed_slice_dims: operand dimensions of slice size 1 that are dropped
    start_index_map: operand dimension that each entry of an index vector indexes
    operand_batching_dims / start_indices_batching_dims: dimensions batched 1:1
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter maps updates into the operand (XLA's ScatterDimensionNumbers).

    update_window_dims: dimensions of `updates` that are window (slice) dimensions
    inserted_window_dims: operand dimensions of window size 1 absent from `updates`
    scatter_dims_to_operand_dims: operand dimension that each index-vector entry indexes
    operand_batching_dims / scatter_indices_batching_dims: dimensions batched 1:1
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode:
    """What happens to out-of-bounds indices.

    CLIP: clamp start indices so the slice fits; FILL_OR_DROP: gather returns the fill
    value, scatter drops the update; PROMISE_IN_BOUNDS: the caller promises (the NumPy
    backend clamps gathers and drops scatters, as JAX does on CPU).
    """

    CLIP = "clip"
    FILL_OR_DROP = "fill"
    PROMISE_IN_BOUNDS = "promise_in_bounds"

    @staticmethod
    def parse(mode) -> str:
        if mode is None:
            return GatherScatterMode.PROMISE_IN_BOUNDS
        mode = str(mode).lower()
        aliases = {"drop": "fill", "fill": "fill", "clip": "clip", "promise_in_bounds": "promise_in_bounds"}
        if mode not in aliases:
            raise InvalidArgumentError(f"unknown indexing mode {mode!r}; use 'clip', 'fill' (or 'drop') or 'promise_in_bounds'")
        return aliases[mode]


def _check_indices(op: str, indices: ShapedArray) -> None:
    check_dtype(op, indices, INDEX_DTYPES, "indices")
    if indices.ndim < 1:
        raise ShapeError(f"{op}: indices must have at least one dimension (the index vector is the last), got {describe(indices)}")


# --- gather ------------------------------------------------------------------------------------

gather_p = Primitive("gather")


def _gather_rule(operand: ShapedArray, indices: ShapedArray, *, dimension_numbers: GatherDimensionNumbers,
                 slice_sizes, mode, fill_value=None, indices_are_sorted=False, unique_indices=False) -> ShapedArray:  # fmt: skip
    dn = dimension_numbers
    _check_indices("gather", indices)
    check_dtype("gather", operand, ANY)
    slice_sizes = tuple(slice_sizes)
    if len(slice_sizes) != operand.ndim:
        raise ShapeError(f"gather: slice_sizes {slice_sizes} needs one entry per dimension of operand {describe(operand)}")
    for d, (size, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= size <= n:
            raise ShapeError(f"gather: slice size {size} of dimension {d} does not fit operand {describe(operand)}")
    if indices.shape[-1] != len(dn.start_index_map):
        raise ShapeError(
            f"gather: the index vector has {indices.shape[-1]} entries (indices {describe(indices)}) but "
            f"start_index_map={dn.start_index_map} names {len(dn.start_index_map)} operand dimensions"
        )
    check_axes("gather", dn.start_index_map, operand.ndim)
    dropped = tuple(dn.collapsed_slice_dims) + tuple(dn.operand_batching_dims)
    check_axes("gather", dropped, operand.ndim)
    for d in dropped:
        if slice_sizes[d] > 1:
            raise ShapeError(f"gather: collapsed or batching dimension {d} must have slice size <= 1, got {slice_sizes[d]}")
    batch_shape = indices.shape[:-1]
    for od, idd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
        if operand.shape[od] != batch_shape[idd]:
            raise ShapeError(f"gather: operand batching dimension {od} ({operand.shape[od]}) and indices batching dimension "
                             f"{idd} ({batch_shape[idd]}) differ")  # fmt: skip
    offset_sizes = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    rank = len(batch_shape) + len(offset_sizes)
    if len(dn.offset_dims) != len(offset_sizes):
        raise ShapeError(f"gather: offset_dims={dn.offset_dims} must name {len(offset_sizes)} output dimensions")
    check_axes("gather", dn.offset_dims, rank)
    offsets, batches = iter(offset_sizes), iter(batch_shape)
    shape = tuple(next(offsets) if i in dn.offset_dims else next(batches) for i in range(rank))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


gather_p.abstract_eval = _gather_rule

# --- scatter --------------------------------------------------------------------------------------


def _scatter_rule(op: str, allowed: DTypes):
    def rule(operand: ShapedArray, indices: ShapedArray, updates: ShapedArray, *, dimension_numbers: ScatterDimensionNumbers,
             mode, indices_are_sorted=False, unique_indices=False) -> ShapedArray:  # fmt: skip
        dn = dimension_numbers
        _check_indices(op, indices)
        check_dtype(op, operand, allowed)
        if updates.dtype != operand.dtype:
            raise DTypeError(f"{op}: updates {describe(updates)} must have the operand's dtype {operand.dtype}")
        if indices.shape[-1] != len(dn.scatter_dims_to_operand_dims):
            raise ShapeError(
                f"{op}: the index vector has {indices.shape[-1]} entries (indices {describe(indices)}) but "
                f"scatter_dims_to_operand_dims={dn.scatter_dims_to_operand_dims} names {len(dn.scatter_dims_to_operand_dims)}"
            )
        check_axes(op, dn.scatter_dims_to_operand_dims, operand.ndim)
        check_axes(op, tuple(dn.inserted_window_dims) + tuple(dn.operand_batching_dims), operand.ndim)
        check_axes(op, dn.update_window_dims, updates.ndim)
        window_operand_dims = [d for d in range(operand.ndim) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
        if len(window_operand_dims) != len(dn.update_window_dims):
            raise ShapeError(f"{op}: update_window_dims={dn.update_window_dims} must name {len(window_operand_dims)} dimensions "
                             f"of updates {describe(updates)} (operand {describe(operand)})")  # fmt: skip
        for wd, od in zip(dn.update_window_dims, window_operand_dims):
            if updates.shape[wd] > operand.shape[od]:
                raise ShapeError(f"{op}: update window dimension {wd} ({updates.shape[wd]}) is larger than operand dimension "
                                 f"{od} ({operand.shape[od]})")  # fmt: skip
        scatter_shape = tuple(s for i, s in enumerate(updates.shape) if i not in dn.update_window_dims)
        if scatter_shape != indices.shape[:-1]:
            raise ShapeError(f"{op}: the scatter dimensions of updates {describe(updates)} are {scatter_shape}, but indices "
                             f"{describe(indices)} give {indices.shape[:-1]}")  # fmt: skip
        return operand

    return rule


scatter_p = Primitive("scatter")
scatter_add_p = Primitive("scatter_add")
scatter_mul_p = Primitive("scatter_mul")
scatter_min_p = Primitive("scatter_min")
scatter_max_p = Primitive("scatter_max")
scatter_p.abstract_eval = _scatter_rule("scatter", ANY)
scatter_add_p.abstract_eval = _scatter_rule("scatter_add", ANY)
scatter_mul_p.abstract_eval = _scatter_rule("scatter_mul", ANY)
_ORDERED = DTypes("real (non-complex) dtypes", dtypes.BOOL + dtypes.INTEGER + dtypes.FLOATING)
scatter_min_p.abstract_eval = _scatter_rule("scatter_min", _ORDERED)
scatter_max_p.abstract_eval = _scatter_rule("scatter_max", _ORDERED)

# --- dynamic slices ---------------------------------------------------------------------------------

# dynamic_slice(operand, *start_indices, slice_sizes): starts are scalars, clamped so the slice fits.
dynamic_slice_p = Primitive("dynamic_slice")


def _check_starts(op: str, operand: ShapedArray, starts) -> None:
    if len(starts) != operand.ndim:
        raise ShapeError(f"{op}: needs {operand.ndim} start indices for operand {describe(operand)}, got {len(starts)}")
    for s in starts:
        if s.shape != ():
            raise ShapeError(f"{op}: start indices must be scalars, got {describe(s)}")
        check_dtype(op, s, INDEX_DTYPES, "a start index")


def _dynamic_slice_rule(operand: ShapedArray, *starts: ShapedArray, slice_sizes) -> ShapedArray:
    _check_starts("dynamic_slice", operand, starts)
    slice_sizes = tuple(int(s) for s in slice_sizes)
    if len(slice_sizes) != operand.ndim or any(not 0 <= s <= n for s, n in zip(slice_sizes, operand.shape)):
        raise ShapeError(f"dynamic_slice: slice_sizes {slice_sizes} do not fit operand {describe(operand)}")
    return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


dynamic_slice_p.abstract_eval = _dynamic_slice_rule

dynamic_update_slice_p = Primitive("dynamic_update_slice")


def _dynamic_update_slice_rule(operand: ShapedArray, update: ShapedArray, *starts: ShapedArray) -> ShapedArray:
    _check_starts("dynamic_update_slice", operand, starts)
    if update.dtype != operand.dtype:
        raise DTypeError(f"dynamic_update_slice: update {describe(update)} must have the operand's dtype {operand.dtype}")
    if update.ndim != operand.ndim or any(u > n for u, n in zip(update.shape, operand.shape)):
        raise ShapeError(f"dynamic_update_slice: update {describe(update)} does not fit in operand {describe(operand)}")
    return operand


dynamic_update_slice_p.abstract_eval = _dynamic_update_slice_rule

__all__ = [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "dynamic_slice_p",
    "dynamic_update_slice_p",
    "gather_p",
    "scatter_add_p",
    "scatter_max_p",
    "scatter_min_p",
    "scatter_mul_p",
    "scatter_p",
]  # fmt: skip
