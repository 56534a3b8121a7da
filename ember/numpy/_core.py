"""Shared machinery of ember.numpy: conversion, dtype promotion, axis handling."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host
from ember.core.primitives._rules import normalize_axis
from ember.errors import DTypeError, InvalidArgumentError
from ember.lax._convert import convert, scalar_as

ArrayLike = Array | np.ndarray | bool | int | float | complex | Sequence

_PY_SCALARS = (bool, int, float, complex)


def asarray(a: ArrayLike, dtype=None) -> Array:
    """An ember Array from `a` (no copy when `a` already is one of `dtype`).

    >>> enp.asarray([1.0, 2.0]).dtype
    dtype('float32')
    """
    return _asarray(a, dtype, "asarray")


def _asarray(a, dtype, op: str) -> Array:
    x = from_host(a, op) if not isinstance(a, Array) else a
    if dtype is not None:
        x = convert(x, dtypes.canonicalize(dtype, op))
    return x


def _dtype_and_weak(x, op: str = "asarray") -> tuple[np.dtype, bool]:
    if isinstance(x, Array):
        return x.dtype, x.weak_type
    if type(x) in _PY_SCALARS:
        return dtypes.python_scalar_dtype(x), type(x) is not bool
    if isinstance(x, (np.ndarray, np.generic)):
        return dtypes.to_dtype(x.dtype), False
    return from_host(x, op).dtype, False


def promote_args(op: str, *args) -> list[Array]:
    """Convert `args` to Arrays of their promoted dtype (JAX's lattice); shapes broadcast later."""
    if len(args) == 2:
        fast = _promote_pair_fast(op, *args)
        if fast is not None:
            return fast
    elif len(args) == 1 and isinstance(args[0], Array):
        return [args[0]]
    kinds = [_dtype_and_weak(x, op) for x in args]
    dtype, weak = dtypes.promote(*kinds)
    return [_to(op, x, dtype, weak) for x in args]


def _promote_pair_fast(op: str, x, y) -> list[Array] | None:
    # The common cases: two arrays of one dtype, or an array and a Python
    # scalar of a kind that does not change the array's dtype.
    if isinstance(x, Array):
        if isinstance(y, Array):
            return [x, y] if x.dtype is y.dtype and x.weak_type is y.weak_type else None
        if type(y) in _PY_SCALARS and _KEEPS_DTYPE[type(y)](x.dtype):
            return [x, scalar_as(y, x.dtype, op)]
    elif isinstance(y, Array) and type(x) in _PY_SCALARS and _KEEPS_DTYPE[type(x)](y.dtype):
        return [scalar_as(x, y.dtype, op), y]
    return None


_KEEPS_DTYPE = {
    bool: lambda d: True,
    int: lambda d: d.kind in "iufc" or d == dtypes.bfloat16,
    float: lambda d: d.kind in "fc" or d == dtypes.bfloat16,
    complex: lambda d: d.kind == "c",
}


def _to(op: str, x, dtype: np.dtype, weak: bool) -> Array:
    if type(x) in _PY_SCALARS:
        return scalar_as(x, dtype, op)
    return convert(_asarray(x, None, op), dtype, weak)


def promote_inexact(op: str, *args) -> list[Array]:
    """Promote, then move integer and bool results to the default float dtype (as NumPy's true_divide)."""
    if len(args) == 1 and isinstance(args[0], Array) and args[0].dtype.kind in "fcV":
        return [args[0]]  # already inexact (V: bfloat16)
    xs = promote_args(op, *args)
    if not dtypes.is_inexact(xs[0].dtype):
        target = dtypes.default_float()
        xs = [convert(x, target, x.weak_type) for x in xs]
    return xs


def check_arraylike(op: str, *args) -> None:
    for x in args:
        if isinstance(x, (str, bytes)) or x is None:
            raise DTypeError(f"{op}: expected an array or number, got {type(x).__name__} {x!r}")


def canonical_axes(op: str, axis, ndim: int) -> tuple[int, ...]:
    """`axis` (None, int or sequence) as a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        return (normalize_axis(op, int(axis), ndim),)
    axes = [normalize_axis(op, int(a), ndim) for a in axis]
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"{op}: repeated axis in axis={tuple(axis)}")
    return tuple(sorted(axes))


def dtype_arg(dtype) -> np.dtype | None:
    return None if dtype is None else dtypes.canonicalize(dtype)
