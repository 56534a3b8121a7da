"""NumPy functions behind ndarray methods that ember.numpy lacked: `ptp`, `choose`, `compress`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.errors import ConcretizationError, DTypeError, InvalidArgumentError, ShapeError
from ember.numpy._core import ArrayLike, asarray, promote_args
from ember.numpy._reductions import max as _max
from ember.numpy._reductions import min as _min
from ember.numpy._shape import broadcast_arrays, ravel, stack
from ember.numpy._take import nonzero, take, take_along_axis

__all__ = ["choose", "compress", "ptp"]


def ptp(a: ArrayLike, axis: int | Sequence[int] | None = None, out=None, keepdims: bool = False) -> Array:
    """Peak to peak: ``max(a, axis) - min(a, axis)``.

    Args:
      a: a real array.
      axis: None (all elements), an axis or a tuple of axes.
      out: must be None (ember arrays are immutable).
      keepdims: keep the reduced axes with size one.

    Returns:
      The ranges, in `a`'s dtype (bool: the difference of True and False is True).

    >>> enp.ptp(enp.asarray([[4, 9, 2], [1, 1, 1]]), axis=1)
    Array([7, 0], dtype=int32)
    """
    if out is not None:
        raise InvalidArgumentError("ptp: ember arrays are immutable, so out= is not supported; use the return value")
    x = asarray(a)
    if dtypes.is_complex(x.dtype):
        raise DTypeError(f"ptp: complex numbers have no order, got {x.dtype}; take ptp of x.real or abs(x)")
    high, low = _max(x, axis, keepdims=keepdims), _min(x, axis, keepdims=keepdims)
    return lax.ne(high, low) if x.dtype == dtypes.bool_ else lax.sub(high, low)


_MODES = ("raise", "wrap", "clip")


def choose(a: ArrayLike, choices: Sequence[ArrayLike], out=None, mode: str = "raise") -> Array:
    """Pick, for every element of the integer array `a`, the element of ``choices[a]`` at that place
    (`a` and the choices broadcast together).

    Args:
      a: integer indices into `choices`.
      choices: a sequence of arrays (or an array whose first axis runs over the choices).
      out: must be None (ember arrays are immutable).
      mode: "raise" (indices out of range raise; needs a concrete `a`), "wrap" (modulo the number of
        choices) or "clip".

    Returns:
      An array of the broadcast shape and the promoted dtype of the choices.

    >>> enp.choose(enp.asarray([0, 1, 1]), [enp.asarray([1, 2, 3]), enp.asarray([10, 20, 30])])
    Array([ 1, 20, 30], dtype=int32)
    """
    if out is not None:
        raise InvalidArgumentError("choose: ember arrays are immutable, so out= is not supported; use the return value")
    if mode not in _MODES:
        raise InvalidArgumentError(f"choose: mode must be one of {_MODES}, got {mode!r}")
    index = asarray(a)
    if not dtypes.is_integer(index.dtype):
        raise DTypeError(f"choose: the indices must be integers, got {index.dtype}")
    options = promote_args("choose", *choices) if not isinstance(choices, Array) else list(choices)
    n = len(options)
    if n == 0:
        raise ShapeError("choose: needs at least one choice")
    index, *options = broadcast_arrays(index, *options)
    if mode == "raise":
        try:
            bad = np.asarray(index)
        except ConcretizationError:
            raise ConcretizationError(
                "choose: mode='raise' checks the indices, which needs concrete values; pass mode='clip' or 'wrap' "
                "inside a transform"
            ) from None
        if bad.size and (bad.min() < 0 or bad.max() >= n):
            raise InvalidArgumentError(f"choose: indices must be in [0, {n}), got values from {bad.min()} to {bad.max()}; "
                                       "pass mode='clip' or 'wrap' to map them into range")
    elif mode == "wrap":
        count = lax.full(index.shape, n, index.dtype)
        index = lax.rem(lax.add(lax.rem(index, count), count), count)
    else:
        index = lax.clamp(lax.full((), 0, index.dtype), index, lax.full((), n - 1, index.dtype))
    stacked = stack(options)
    picked = take_along_axis(stacked, lax.expand_dims(index, (0,)), axis=0)
    return lax.squeeze(picked, (0,))


def compress(condition: ArrayLike, a: ArrayLike, axis: int | None = None, *, size: int | None = None,
             fill_value: ArrayLike = 0, out=None) -> Array:  # fmt: skip
    """The slices of `a` along `axis` (the flattened `a` when None) where the 1-d `condition` is true.

    `condition` may be shorter than the axis (the rest is dropped, as in NumPy). The result's length
    depends on the values, so `condition` must be concrete, unless a static `size` is given (as in JAX):
    then the result has exactly `size` slices, padded with `fill_value`.

    Args:
      condition: a 1-d boolean (or numeric) array.
      a: the array.
      axis: the axis to select along, or None.
      size: the static number of slices to return.
      fill_value: the padding when fewer than `size` are selected.
      out: must be None (ember arrays are immutable).

    Returns:
      The selected slices.

    >>> enp.compress(enp.asarray([True, False, True]), enp.asarray([[1, 2, 3], [4, 5, 6]]), axis=1)
    Array([[1, 3],
           [4, 6]], dtype=int32)
    """
    if out is not None:
        raise InvalidArgumentError("compress: ember arrays are immutable, so out= is not supported; use the result")
    cond = asarray(condition)
    if cond.ndim != 1:
        raise ShapeError(f"compress: condition must be 1-d, got shape {cond.shape}")
    x = asarray(a)
    if axis is None:
        x, axis = ravel(x), 0
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise InvalidArgumentError(f"compress: axis {axis} is out of range for an array of {x.ndim} dimensions")
    length = x.shape[axis]
    if cond.shape[0] > length:
        raise ShapeError(f"compress: condition has {cond.shape[0]} entries but the axis has only {length}")
    if size is None:
        try:
            (where,) = nonzero(cond)
        except ConcretizationError:
            raise ConcretizationError(
                "compress: the result's length depends on condition's values; pass size= (and fill_value=) "
                "inside a transform"
            ) from None
        return take(x, where, axis=axis)
    (where,) = nonzero(cond, size=size, fill_value=length)  # past the end: filled
    return take(x, where, axis=axis, mode="fill", fill_value=fill_value)
