"""Sampling from arrays: permutation and choice (JAX's algorithms: sort rounds, top-k of Gumbel noise)."""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host
from ember.core.primitives._rules import normalize_axis
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.lax import _elementwise as ew
from ember.lax import _indexing as ix
from ember.lax import _sorting as so
from ember.lax import _structural as st
from ember.lax._convert import convert
from ember.random._distributions import _gumbel, _uniform, randint
from ember.random._keys import KeyArray, Shape, canonical_shape, check_key, const, random_bits, split

ArrayLike = Array | np.ndarray | int


def permutation(key: KeyArray, x: int | ArrayLike, axis: int = 0, independent: bool = False) -> Array:
    """A random permutation of ``arange(x)`` (x an int) or of `x`'s entries along `axis`.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      x: a (concrete) int n, to permute 0..n-1, or an array with at least one dimension.
      axis: the axis to permute along (default 0).
      independent: permute each slice along `axis` on its own, instead of
        moving whole slices (default False).

    Returns:
      The permuted array (default int dtype for an int `x`).

    >>> sorted(ember.random.permutation(ember.random.key(0), 5).tolist())
    [0, 1, 2, 3, 4]
    """
    key = check_key("permutation", key)
    if _is_int(x):
        return _shuffle(key, st.iota(dtypes.default_int(), _count("permutation", x)), 0)
    arr = x if isinstance(x, Array) else from_host(x, "ember.random.permutation")
    if arr.ndim == 0:
        if not dtypes.is_integer(arr.dtype):
            raise DTypeError(
                f"ember.random.permutation: x must be an int or an array with at least one dimension, got a 0-d {arr.dtype} array"
            )
        return _shuffle(key, st.iota(dtypes.default_int(), _count("permutation", arr)), 0)
    axis = normalize_axis("ember.random.permutation", axis, arr.ndim)
    if independent or arr.ndim == 1:
        return _shuffle(key, arr, axis)
    order = _shuffle(key, st.iota(dtypes.default_int(), arr.shape[axis]), 0)
    return _take(arr, order, axis)


def _shuffle(key: Array, x: Array, axis: int) -> Array:
    # Sort by random 32-bit keys; enough rounds that ties (which would bias the order) are
    # unlikely: 3 * log(n) / log(2**32 - 1) rounds, as in JAX.
    rounds = math.ceil(3 * math.log(max(1, x.size)) / math.log(2**32 - 1))
    for _ in range(rounds):
        keys = split(key)
        key, subkey = keys[0], keys[1]
        _, x = so.sort_key_val(random_bits("permutation", subkey, 32, x.shape), x, axis)
    return x


def choice(key: KeyArray, a: int | ArrayLike, shape: int | Shape = (), replace: bool = True, p: ArrayLike | None = None,
           axis: int = 0) -> Array:  # fmt: skip
    """Random entries of `a` (or of ``arange(a)`` for an int), with or without replacement.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      a: a (concrete) int n, to draw from 0..n-1, or an array to draw slices from along `axis`.
      shape: how many draws, as a shape (default (): one draw).
      replace: draw with replacement (default True).
      p: probabilities of the n entries (default: uniform); they need not sum to 1.
      axis: the axis of `a` to draw along (default 0).

    Returns:
      For an int `a`, indices of shape `shape`; for an array, `a` with its
      `axis` replaced by the dimensions of `shape`.

    >>> ember.random.choice(ember.random.key(0), 10, (3,), replace=False).shape
    (3,)
    """
    key = check_key("choice", key)
    shape = canonical_shape("choice", shape)
    if _is_int(a):
        arr, n_inputs = None, _count("choice", a)
    else:
        arr = a if isinstance(a, Array) else from_host(a, "ember.random.choice")
        if arr.ndim == 0:
            if not dtypes.is_integer(arr.dtype):
                raise DTypeError(f"ember.random.choice: a must be an int or an array with at least one dimension, got a 0-d {arr.dtype} array")
            arr, n_inputs = None, _count("choice", arr)
        else:
            axis = normalize_axis("ember.random.choice", axis, arr.ndim)
            n_inputs = arr.shape[axis]
    dtype = dtypes.default_int() if arr is None else arr.dtype
    out_shape = shape if arr is None else arr.shape[:axis] + shape + arr.shape[axis + 1 :]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return const(np.zeros(out_shape, dtype), dtype)
    if n_inputs <= 0:
        raise InvalidArgumentError(f"ember.random.choice: there is nothing to choose from (a has {n_inputs} entries) for {n_draws} draws")
    if not replace and n_draws > n_inputs:
        raise InvalidArgumentError(
            f"ember.random.choice: cannot draw {n_draws} samples from {n_inputs} entries without replacement; pass replace=True"
        )
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            return ind if arr is None else _take(arr, ind, axis)
        permuted = permutation(key, n_inputs if arr is None else arr, axis)
        first = st.slice_in_dim(permuted, 0, n_draws, 1, 0 if arr is None else axis)
        return st.reshape(first, out_shape)
    probs = _probabilities(p, n_inputs)
    if replace:
        # Inverse CDF: the first index whose cumulative probability reaches r, r uniform in (0, total].
        cdf = so.cumsum(probs)
        total = st.reshape(st.slice(cdf, (n_inputs - 1,), (n_inputs,)), ())
        u = _uniform("choice", key, shape, probs.dtype, const(0.0, probs.dtype), const(1.0, probs.dtype))
        ind = _search_left(cdf, ew.mul(total, ew.sub(1.0, u)))
    else:
        # Gumbel top-k: the k largest of log(p) + Gumbel noise are a weighted sample without replacement.
        noise = _gumbel("choice", key, (n_inputs,), probs.dtype)
        _, top = so.top_k(ew.add(noise, ew.log(probs)), n_draws)
        ind = st.reshape(convert(top, dtypes.default_int()), shape)
    return ind if arr is None else _take(arr, ind, axis)


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _count(fn: str, x) -> int:
    n = int(x)  # a traced count raises ConcretizationError: shapes must be static
    if n < 0:
        raise InvalidArgumentError(f"ember.random.{fn}: the count must be non-negative, got {n}")
    return n


def _probabilities(p, n: int) -> Array:
    probs = p if isinstance(p, Array) else from_host(p, "ember.random.choice")
    if not dtypes.is_floating(probs.dtype):
        if dtypes.is_complex(probs.dtype):
            raise DTypeError(f"ember.random.choice: p must be real, got dtype {probs.dtype}")
        probs = convert(probs, dtypes.default_float())
    if probs.shape != (n,):
        raise ShapeError(f"ember.random.choice: p must have shape ({n},), one probability per entry, got shape {probs.shape}")
    return probs


def _search_left(sorted_1d: Array, values: Array) -> Array:
    # searchsorted(side="left"): how many entries are < each value.
    n = sorted_1d.shape[0]
    table = st.broadcast_in_dim(sorted_1d, values.shape + (n,), (values.ndim,))
    below = convert(ew.lt(table, st.broadcast_in_dim(values, values.shape + (n,), tuple(range(values.ndim)))), dtypes.default_int())
    return st.reduce_sum(below, (values.ndim,))


def _take(arr: Array, ind: Array, axis: int) -> Array:
    """``numpy.take(arr, ind, axis)`` for in-bounds indices, as one gather."""
    rest = tuple(range(axis)) + tuple(range(axis + ind.ndim, arr.ndim + ind.ndim - 1))
    dn = ix.GatherDimensionNumbers(offset_dims=rest, collapsed_slice_dims=(axis,), start_index_map=(axis,))
    sizes = arr.shape[:axis] + (1,) + arr.shape[axis + 1 :]
    return ix.gather(arr, st.reshape(ind, ind.shape + (1,)), dn, sizes, mode="promise_in_bounds")
