"""Basic indexing of ember arrays: ints, slices with any step, None and Ellipsis."""

from __future__ import annotations

import numpy as np

from ember import lax
from ember.core.array import Array
from ember.errors import DTypeError


def _static_int(item) -> int | None:
    if isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
        return int(item)
    if type(item) is Array and item.ndim == 0 and item.dtype.kind in "iu":
        return int(item)
    return None


def _expand(index, ndim: int) -> list:
    items = list(index) if isinstance(index, tuple) else [index]
    ellipses = sum(item is Ellipsis for item in items)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(item is not None and item is not Ellipsis for item in items)
    if consumed > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {consumed} were indexed")
    if ellipses:
        at = items.index(Ellipsis)
        items[at : at + 1] = [slice(None)] * (ndim - consumed)
    else:
        items += [slice(None)] * (ndim - consumed)
    return items


def getitem(x: Array, index) -> Array:
    """x[index] for basic indices; the result never aliases anything mutable (arrays are immutable)."""
    items = _expand(index, x.ndim)
    start, limit, strides = [], [], []
    reversed_dims, squeezed, new_axes = [], [], []
    dim = out_pos = 0
    for item in items:
        if item is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        size = x.shape[dim]
        position = _static_int(item)
        if position is not None:
            if not -size <= position < size:
                raise IndexError(f"index {position} is out of bounds for axis {dim} with size {size}")
            position %= size
            start.append(position)
            limit.append(position + 1)
            strides.append(1)
            squeezed.append(dim)
        elif isinstance(item, slice):
            lo, hi, step = item.indices(size)
            count = len(range(lo, hi, step))
            if step < 0:
                reversed_dims.append(dim)
                lo, step = size - 1 - lo, -step
            start.append(lo if count else 0)
            limit.append(lo + (count - 1) * step + 1 if count else 0)
            strides.append(step)
            out_pos += 1
        else:
            raise _unsupported(item, x)
        dim += 1
    if reversed_dims:
        x = lax.rev(x, reversed_dims)
    x = lax.slice(x, start, limit, strides)
    if squeezed:
        x = lax.squeeze(x, squeezed)
    if new_axes:
        x = lax.expand_dims(x, new_axes)
    return x


def _unsupported(item, x: Array) -> Exception:
    kind = type(item).__name__
    if isinstance(item, (Array, np.ndarray, list)):
        return IndexError(
            f"indexing an array of shape {x.shape} with a {kind} (integer or boolean array indexing) is not supported yet; "
            "basic indices work: ints, slices, None and ..."
        )
    if isinstance(item, (bool, np.bool_)):
        return IndexError("a bool scalar index is not supported; index with ints, slices, None or ...")
    if isinstance(item, float):
        return DTypeError(f"array indices must be integers, got float {item!r}")
    return IndexError(f"unsupported index {item!r} of type {kind}; index with ints, slices, None or ...")
