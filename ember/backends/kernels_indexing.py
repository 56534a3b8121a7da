"""Kernels of the indexing primitives (gather, scatter family, dynamic slices) against `xp`.

Both gather and scatter are computed by building one broadcast index array
per operand dimension and letting advanced indexing (gather, set) or
``ufunc.at`` (scatter-add/mul/min/max, which accumulate duplicates) do the work.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np


def make_indexing_kernels(xp: ModuleType) -> dict[str, Any]:
    def scatter(ufunc):
        def kernel(operand, indices, updates, *, dimension_numbers, mode, indices_are_sorted=False, unique_indices=False):
            return scatter_kernel(xp, ufunc, operand, indices, updates, dimension_numbers, mode)

        return kernel

    return {
        "gather": lambda operand, indices, **p: gather_kernel(xp, operand, indices, **p),
        "scatter": scatter(None),
        "scatter_add": scatter(xp.add),
        "scatter_mul": scatter(xp.multiply),
        "scatter_min": scatter(xp.minimum),
        "scatter_max": scatter(xp.maximum),
        "dynamic_slice": lambda operand, *starts, slice_sizes: operand[_clamped_slices(operand.shape, starts, slice_sizes)],
        "dynamic_update_slice": lambda operand, update, *starts: _update_slice(operand, update, starts),
    }


def _clamped_slices(shape, starts, sizes) -> tuple[slice, ...]:
    out = []
    for n, start, size in zip(shape, starts, sizes):
        s = min(max(int(start), 0), n - size)
        out.append(slice(s, s + size))
    return tuple(out)


def _update_slice(operand, update, starts):
    out = operand.copy()
    out[_clamped_slices(operand.shape, starts, update.shape)] = update
    return out


def _place(xp, values, axis: int, rank: int):
    """`values` (1-d) as an array of `rank` dims that varies along `axis` only."""
    shape = [1] * rank
    shape[axis] = values.shape[0]
    return values.reshape(shape)


def gather_kernel(xp, operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value=None,
                  indices_are_sorted=False, unique_indices=False):  # fmt: skip
    dn = dimension_numbers
    batch_shape = indices.shape[:-1]
    nb = len(batch_shape)
    rank = nb + operand.ndim  # the gathered block: batch dims, then one dim per operand dim
    starts = indices.astype(np.int64)
    in_bounds = None
    index_arrays = []
    for d in range(operand.ndim):
        n, size = operand.shape[d], slice_sizes[d]
        if d in dn.start_index_map:
            start = starts[..., dn.start_index_map.index(d)]
            if mode == "fill":
                ok = (start >= 0) & (start <= n - size)
                in_bounds = ok if in_bounds is None else in_bounds & ok
            start = xp.clip(start, 0, n - size)
            index = start.reshape(batch_shape + (1,) * operand.ndim) + _place(xp, xp.arange(size), nb + d, rank)
        elif d in dn.operand_batching_dims:
            batch_axis = dn.start_indices_batching_dims[dn.operand_batching_dims.index(d)]
            index = _place(xp, xp.arange(n), batch_axis, rank)
        else:
            index = _place(xp, xp.arange(size), nb + d, rank)
        index_arrays.append(index)
    block = xp.broadcast_to(operand[tuple(index_arrays)], batch_shape + tuple(slice_sizes))
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    block = block.reshape(batch_shape + tuple(s for d, s in enumerate(slice_sizes) if d not in dropped))
    if in_bounds is not None:
        fill = _fill_value(operand.dtype, fill_value)
        block = xp.where(in_bounds.reshape(batch_shape + (1,) * (block.ndim - nb)), block, xp.asarray(fill, dtype=operand.dtype))
    out_rank = block.ndim
    batch_axes, offset_axes = iter(range(nb)), iter(range(nb, out_rank))
    perm = [next(offset_axes) if i in dn.offset_dims else next(batch_axes) for i in range(out_rank)]
    return xp.transpose(block, perm)


def _fill_value(dtype, fill_value):
    if fill_value is not None:
        return fill_value
    if dtype.kind in "fcV" or dtype.name == "bfloat16":
        return np.nan
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return True


def scatter_kernel(xp, ufunc, operand, indices, updates, dn, mode):
    batch_shape = indices.shape[:-1]
    nb = len(batch_shape)
    window_axes = list(dn.update_window_dims)
    scatter_axes = [i for i in range(updates.ndim) if i not in window_axes]
    updates = xp.transpose(updates, scatter_axes + window_axes)  # batch dims first, then the window
    window_shape = updates.shape[nb:]
    rank = nb + len(window_shape)
    window_operand_dims = [d for d in range(operand.ndim) if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    starts = indices.astype(np.int64)
    valid = None
    index_arrays = []
    for d in range(operand.ndim):
        n = operand.shape[d]
        window = window_operand_dims.index(d) if d in window_operand_dims else None
        size = window_shape[window] if window is not None else 1
        index = None
        if d in dn.scatter_dims_to_operand_dims:
            start = starts[..., dn.scatter_dims_to_operand_dims.index(d)]
            if mode == "clip" and size <= n:
                start = xp.clip(start, 0, n - size)
            else:  # fill/drop and promise_in_bounds: updates that do not fit are dropped; so are clip mode's
                # into an empty dimension, where no start fits (JAX clamps, then XLA drops what still does not fit)
                ok = (start >= 0) & (start <= n - size)
                valid = ok if valid is None else valid & ok
            index = start.reshape(batch_shape + (1,) * len(window_shape))
        elif d in dn.operand_batching_dims:
            batch_axis = dn.scatter_indices_batching_dims[dn.operand_batching_dims.index(d)]
            index = _place(xp, xp.arange(n), batch_axis, rank)
        if window is not None:
            offsets = _place(xp, xp.arange(size), nb + window, rank)
            index = offsets if index is None else index + offsets
        index_arrays.append(xp.zeros((), dtype=np.int64) if index is None else index)
    full = np.broadcast_shapes(*(a.shape for a in index_arrays), updates.shape)
    index_arrays = [xp.broadcast_to(a, full) for a in index_arrays]
    updates = xp.broadcast_to(updates, full)
    if valid is not None:
        keep = xp.broadcast_to(valid.reshape(batch_shape + (1,) * len(window_shape)), full)
        index_arrays = [a[keep] for a in index_arrays]
        updates = updates[keep]
    out = operand.copy()
    if ufunc is None:
        out[tuple(index_arrays)] = updates
    else:
        ufunc.at(out, tuple(index_arrays), updates)
    return out
