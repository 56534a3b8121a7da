"""Sorting, searching, uniqueness and running sums of ember.numpy.

Everything here is built on the `sort` primitive (several operands sorted
together by leading keys) and the cumulative primitives. Moving data by a
permutation needs no gather: sorting the pair (permutation, values) by the
permutation applies its inverse, and sorting by a 0/1 key compacts the marked
elements to the front in order (a static-size `nonzero`).

Orderings are JAX's: NaN sorts last, -0.0 ties with 0.0, complex numbers
compare by (real, imag).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives._rules import normalize_axis
from ember.errors import ConcretizationError, DTypeError, InvalidArgumentError, ShapeError
from ember.lax._convert import convert
from ember.core.transfer import follow
from ember.numpy._core import ArrayLike, asarray, dtype_arg, full_for, promote_args
from ember.numpy._shape import broadcast_to, concatenate, moveaxis, ravel, reshape
from ember.numpy._ufuncs import isnan, logical_and, logical_not, logical_or, not_equal, where

__all__ = [
    "argpartition",
    "argsort",
    "cumprod",
    "cumsum",
    "diff",
    "nancumprod",
    "nancumsum",
    "partition",
    "searchsorted",
    "sort",
    "unique",
]  # fmt: skip

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


# --- helpers ----------------------------------------------------------------------------------


def _int(op: str, name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise InvalidArgumentError(f"{op}: {name} must be an int, got {value!r}")
    return operator.index(value)


def _along(op: str, a: ArrayLike, axis) -> tuple[Array, int]:
    """The array and the one axis an op works along (axis=None: the flattened array)."""
    x = asarray(a)
    if axis is None:
        return ravel(x), 0
    axis = _int(op, "axis", axis)
    if x.ndim == 0:
        raise ShapeError(f"{op}: a 0-d array has no axis {axis} to work along; pass axis=None or reshape it to 1-d")
    return x, normalize_axis(op, axis, x.ndim)


def _check_kind_order(op: str, kind, order) -> None:
    if kind not in _KINDS:
        raise InvalidArgumentError(f"{op}: kind={kind!r} is not one of {_KINDS[1:]}; ember picks the algorithm, use stable=")
    if order is not None:
        raise InvalidArgumentError(f"{op}: order= sorts structured arrays by field, which ember does not have; pass order=None")


def _iota(shape: tuple[int, ...], axis: int, dtype=None) -> Array:
    return lax.broadcasted_iota(dtype or dtypes.default_int(), shape, axis)


def _sorted_together(keys: Sequence[Array], payloads: Sequence[Array], axis: int, stable: bool, descending: bool) -> list[Array]:
    """Sort `payloads` along `axis` by `keys` (descending keeps ties in their original order)."""
    if not descending:
        return list(lax.sort((*keys, *payloads), axis, stable, len(keys))[len(keys):])
    # A stable ascending sort of the reversed axis, reversed back: equal keys stay in order.
    flipped = [lax.rev(x, (axis,)) for x in (*keys, *payloads)]
    out = lax.sort(flipped, axis, stable, len(keys))[len(keys):]
    return [lax.rev(x, (axis,)) for x in out]


# --- sort, argsort, partition ------------------------------------------------------------------


def sort(a: ArrayLike, axis: int | None = -1, kind: str | None = None, order=None, stable: bool = True,
         descending: bool = False) -> Array:  # fmt: skip
    """A sorted copy of `a` along `axis` (the flattened array when axis is None).

    NaN sorts to the end (to the front when descending); complex numbers sort
    by real part, then imaginary part.

    Args:
      a: the array to sort.
      axis: the axis to sort along, or None to sort the flattened array.
      kind: accepted for NumPy compatibility; the algorithm is ember's (use `stable`).
      order: must be None (structured arrays are not supported).
      stable: keep equal elements in their original order.
      descending: sort from largest to smallest.

    Returns:
      The sorted array, of `a`'s dtype.

    >>> enp.sort(enp.asarray([3.0, float("nan"), 1.0, 2.0]))
    Array([ 1.,  2.,  3., nan], dtype=float32)
    """
    _check_kind_order("sort", kind, order)
    x, axis = _along("sort", a, axis)
    if not descending:
        return lax.sort(x, axis, bool(stable))
    return lax.rev(lax.sort(lax.rev(x, (axis,)), axis, bool(stable)), (axis,))


def argsort(a: ArrayLike, axis: int | None = -1, kind: str | None = None, order=None, stable: bool = True,
            descending: bool = False) -> Array:  # fmt: skip
    """Indices that sort `a` along `axis` (of the flattened array when axis is None).

    With `stable` (the default) equal elements keep their original order, also
    when `descending`. The indices have the default integer dtype.

    Args:
      a: the array to sort.
      axis: the axis to sort along, or None for the flattened array.
      kind: accepted for NumPy compatibility; use `stable`.
      order: must be None.
      stable: equal elements keep their original order.
      descending: order from largest to smallest.

    Returns:
      An integer array of `a`'s shape (flattened when axis is None).

    >>> enp.argsort(enp.asarray([3, 1, 2, 1]))
    Array([1, 3, 2, 0], dtype=int32)
    """
    _check_kind_order("argsort", kind, order)
    x, axis = _along("argsort", a, axis)
    return _sorted_together([x], [_iota(x.shape, axis)], axis, bool(stable), bool(descending))[0]


def _kth(op: str, kth, size: int) -> None:
    values = [kth] if not isinstance(kth, (list, tuple, np.ndarray, Array)) else list(np.asarray(kth).ravel())
    for k in values:
        k = _int(op, "kth", k)
        if not -size <= k < size:
            raise InvalidArgumentError(f"{op}: kth={k} is out of bounds for an axis of size {size}")


def partition(a: ArrayLike, kth: int | Sequence[int], axis: int | None = -1) -> Array:
    """`a` rearranged along `axis` so that the element at `kth` is the one a full sort puts there.

    Every element before position kth is <= it and every element after is >=
    it (NaN counts as the largest). ember returns the fully sorted array, which
    satisfies these guarantees for every kth at once.

    Args:
      a: the array.
      kth: the position (or positions) whose element must be in sorted place.
      axis: the axis, or None for the flattened array.

    Returns:
      An array of `a`'s shape and dtype.

    >>> enp.partition(enp.asarray([5, 1, 4, 2, 3]), 2)[2]
    Array(3, dtype=int32)
    """
    x, axis = _along("partition", a, axis)
    _kth("partition", kth, x.shape[axis])
    return lax.sort(x, axis, True)


def argpartition(a: ArrayLike, kth: int | Sequence[int], axis: int | None = -1) -> Array:
    """Indices that would partition `a` at `kth` along `axis` (see `partition`).

    Args:
      a: the array.
      kth: the position (or positions) that must hold the sorted element.
      axis: the axis, or None for the flattened array.

    Returns:
      Default-integer indices: a stable argsort, which partitions at every kth.

    >>> enp.argpartition(enp.asarray([5, 1, 4, 2, 3]), 1)[:2]
    Array([1, 3], dtype=int32)
    """
    x, axis = _along("argpartition", a, axis)
    _kth("argpartition", kth, x.shape[axis])
    return argsort(x, axis)


# --- running sums and products --------------------------------------------------------------------


def _accumulation_dtype(x: Array, dtype) -> np.dtype:
    # As jnp: bool and small integers accumulate in the default (unsigned) integer.
    target = dtype_arg(dtype) or x.dtype
    if target == dtypes.bool_:
        return dtypes.default_int()
    if dtype is None:
        if dtypes.is_signed(target) and target.itemsize < dtypes.default_int().itemsize:
            return dtypes.default_int()
        if dtypes.is_unsigned(target) and target.itemsize < dtypes.default_uint().itemsize:
            return dtypes.default_uint()
    return target


def _cumulative(op: str, fn, a: ArrayLike, axis, dtype, out, nan_as=None) -> Array:
    if out is not None:
        raise InvalidArgumentError(f"{op}: ember arrays are immutable, so out= is not supported; use the return value")
    x, axis = _along(op, a, axis)
    if nan_as is not None and dtypes.is_inexact(x.dtype):
        x = where(isnan(x), asarray(nan_as, x.dtype), x)
    target = dtype_arg(dtype)
    if target == dtypes.bool_ and x.dtype != dtypes.bool_:
        x = convert(x, dtypes.bool_)  # as jnp: cast first, accumulate in an integer, cast back
    result = fn(convert(x, _accumulation_dtype(x, dtype)), axis)  # strong, as jnp.cumsum's (lax.cumsum keeps weak)
    return convert(result, dtypes.bool_) if target == dtypes.bool_ else result


def cumsum(a: ArrayLike, axis: int | None = None, dtype=None, out=None) -> Array:
    """Running sum along `axis` (of the flattened array when axis is None).

    Bool and integers narrower than the default integer accumulate in it, as in JAX.

    Args:
      a: the array.
      axis: the axis to accumulate along, or None for the flattened array.
      dtype: the accumulation and result dtype.
      out: must be None (ember arrays are immutable).

    Returns:
      An array of `a`'s shape (1-d when axis is None).

    >>> enp.cumsum(enp.asarray([[1, 2], [3, 4]]))
    Array([ 1,  3,  6, 10], dtype=int32)
    """
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


def cumprod(a: ArrayLike, axis: int | None = None, dtype=None, out=None) -> Array:
    """Running product along `axis` (of the flattened array when axis is None).

    >>> enp.cumprod(enp.asarray([1.0, 2.0, 3.0]))
    Array([1., 2., 6.], dtype=float32)
    """
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


def nancumsum(a: ArrayLike, axis: int | None = None, dtype=None, out=None) -> Array:
    """Running sum treating NaN as zero.

    >>> enp.nancumsum(enp.asarray([1.0, float("nan"), 2.0]))
    Array([1., 1., 3.], dtype=float32)
    """
    return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, out, nan_as=0)


def nancumprod(a: ArrayLike, axis: int | None = None, dtype=None, out=None) -> Array:
    """Running product treating NaN as one.

    >>> enp.nancumprod(enp.asarray([2.0, float("nan"), 3.0]))
    Array([2., 2., 6.], dtype=float32)
    """
    return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, out, nan_as=1)


def diff(a: ArrayLike, n: int = 1, axis: int = -1, prepend: ArrayLike | None = None,
         append: ArrayLike | None = None) -> Array:  # fmt: skip
    """The n-th discrete difference along `axis`: out[i] = a[i + 1] - a[i], n times.

    Bool arrays give a[i + 1] != a[i]. Scalars in `prepend`/`append` are
    broadcast to one slice along `axis`; arrays must match `a` off that axis.

    Args:
      a: an array with at least one dimension.
      n: how many times to difference (0 returns `a`).
      axis: the axis.
      prepend, append: values joined to `a` along `axis` before differencing.

    Returns:
      An array whose `axis` is n shorter (never below 0).

    >>> enp.diff(enp.asarray([1, 4, 9, 16]))
    Array([3, 5, 7], dtype=int32)
    """
    x = asarray(a)
    n = _int("diff", "n", n)
    if n < 0:
        raise InvalidArgumentError(f"diff: the order n must be non-negative, got {n}")
    if x.ndim == 0:
        raise ShapeError("diff: needs an array with at least one dimension, got a 0-d array")
    axis = normalize_axis("diff", _int("diff", "axis", axis), x.ndim)
    if prepend is not None or append is not None:
        parts = [_edge(p, x, axis) for p in (prepend,) if p is not None] + [x]
        parts += [_edge(p, x, axis) for p in (append,) if p is not None]
        x = concatenate(parts, axis)
    for _ in range(n):
        upper = lax.slice_in_dim(x, 1, None, axis=axis)
        lower = lax.slice_in_dim(x, 0, max(x.shape[axis] - 1, 0), axis=axis)
        x = lax.ne(upper, lower) if x.dtype == dtypes.bool_ else lax.sub(upper, lower)
    return x


def _edge(value: ArrayLike, x: Array, axis: int) -> Array:
    v = asarray(value)
    if v.ndim == 0:
        shape = list(x.shape)
        shape[axis] = 1
        return broadcast_to(v, tuple(shape))
    return v


# --- searchsorted -----------------------------------------------------------------------------------


def searchsorted(a: ArrayLike, v: ArrayLike, side: str = "left", sorter: ArrayLike | None = None) -> Array:
    """Where to insert `v` into the sorted 1-d `a` to keep it sorted.

    side="left" gives the number of elements of `a` strictly less than each
    value, side="right" the number less than or equal (NaN is the largest, as
    in the sort order). The count comes from one stable sort of `a` joined with
    the queries and one running sum, O((N + M) log(N + M)) for N = a.size and
    M = v.size, whatever their sizes; it does not depend on `a`'s order, so
    `sorter` (a permutation sorting `a`, as NumPy takes) is checked but not needed.

    Args:
      a: a 1-d array, sorted ascending.
      v: the values to insert (any shape).
      side: "left" or "right".
      sorter: optional integer permutation that sorts `a`.

    Returns:
      int32 insertion indices of `v`'s shape.

    >>> enp.searchsorted(enp.asarray([1.0, 2.0, 2.0, 3.0]), enp.asarray([2.0, 2.5]), side="right")
    Array([3, 3], dtype=int32)
    """
    if side not in ("left", "right"):
        raise InvalidArgumentError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a, v = promote_args("searchsorted", a, v)
    if a.ndim != 1:
        raise ShapeError(f"searchsorted: a must be 1-d, got shape {a.shape}; ravel it or search each row with vmap")
    if sorter is not None:
        order = asarray(sorter)
        if order.shape != a.shape or not dtypes.is_integer(order.dtype):
            raise DTypeError(f"searchsorted: sorter must be an integer array of a's shape {a.shape}, got {order.dtype}{order.shape}")
    n, m = a.shape[0], v.size
    if n == 0 or m == 0:
        return full_for("searchsorted", v.shape, 0, dtypes.int32, a, v)
    queries = ravel(v)
    # Queries go before equal elements of `a` for "left", after them for "right"; a stable sort keeps that.
    joined = concatenate([queries, a] if side == "left" else [a, queries])
    index = lax.iota(dtypes.int32, n + m)
    _, origin = lax.sort((joined, index), 0, True, 1)
    from_a = lax.ge(origin, m) if side == "left" else lax.lt(origin, n)
    counts = lax.cumsum(convert(from_a, dtypes.int32))  # at a query: the number of a's before it
    _, by_origin = lax.sort((origin, counts), 0, True, 1)
    found = lax.slice_in_dim(by_origin, 0, m) if side == "left" else lax.slice_in_dim(by_origin, n, n + m)
    return reshape(found, v.shape)


# --- unique -------------------------------------------------------------------------------------------


def _columns(x: Array) -> list[Array]:
    """The columns of the 2-d `x` as 1-d arrays (the sort keys of its rows)."""
    return [lax.reshape(lax.slice_in_dim(x, j, j + 1, axis=1), (x.shape[0],)) for j in range(x.shape[1])]


def _differs(upper: Array, lower: Array, equal_nan: bool) -> Array:
    ne = not_equal(upper, lower)
    if equal_nan and dtypes.is_inexact(upper.dtype):
        ne = logical_and(ne, logical_not(logical_and(isnan(upper), isnan(lower))))
    return ne


def _resize(x: Array, length: int) -> Array:
    """`x` (1-d) cut or padded with its first element to `length`."""
    have = x.shape[0]
    if length <= have:
        return lax.slice_in_dim(x, 0, length)
    return lax.pad(x, lax.slice_in_dim(x, 0, 1).reshape(()), [(0, length - have, 0)])


def unique(ar: ArrayLike, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: int | None = None, *, equal_nan: bool = True, size: int | None = None,
           fill_value: ArrayLike | None = None):  # fmt: skip
    """The sorted unique elements of `ar` (unique slices along `axis` when given).

    Without `size` the number of unique elements decides the output shape, so
    `ar` must be concrete. With `size` the output has exactly that many entries,
    as in JAX: extra slots hold `fill_value` (default: the smallest element),
    their index is that of the smallest element and their count is 0; surplus
    unique elements are dropped.

    Args:
      ar: the array.
      return_index: also return the index of each unique element's first occurrence.
      return_inverse: also return, for each element of `ar`, the index of its unique element.
      return_counts: also return how often each unique element occurs.
      axis: None to flatten, or the axis whose slices are compared as wholes.
      equal_nan: NaNs count as one value.
      size: the static number of unique elements to return.
      fill_value: pads the output when there are fewer than `size` unique elements.

    Returns:
      The unique array, or a tuple (unique, index?, inverse?, counts?) with the
      requested extras (default-integer arrays; inverse has `ar`'s shape when
      axis is None).

    >>> enp.unique(enp.asarray([3, 1, 3, 2]))
    Array([1, 2, 3], dtype=int32)
    >>> enp.unique(enp.asarray([3, 1, 3]), size=4, fill_value=-1, return_counts=True)
    (Array([ 1,  3, -1, -1], dtype=int32), Array([1, 2, 0, 0], dtype=int32))
    """
    x = asarray(ar)
    if axis is None:
        rows, rest = ravel(x), ()
        keys = [rows]
    else:
        axis = normalize_axis("unique", _int("unique", "axis", axis), x.ndim)
        if x.ndim == 0:
            raise ShapeError("unique: a 0-d array has no axis; pass axis=None")
        moved = moveaxis(x, axis, 0)
        rest = moved.shape[1:]
        rows = reshape(moved, (moved.shape[0], math.prod(rest)))
        keys = _columns(rows)
    if size is not None:
        size = _int("unique", "size", size)
        if size < 0:
            raise InvalidArgumentError(f"unique: size must be >= 0, got {size}")
    n = rows.shape[0]
    int_ = dtypes.default_int()
    origin = lax.iota(int_, n)
    if keys:
        *sorted_keys, perm = lax.sort((*keys, origin), 0, True, len(keys))
    else:  # slices with no elements are all equal
        sorted_keys, perm = [], origin
    if n:
        steps = [_differs(lax.slice_in_dim(k, 1, None), lax.slice_in_dim(k, 0, n - 1), equal_nan) for k in sorted_keys]
        step = steps[0] if steps else lax.full((n - 1,), False)
        for s in steps[1:]:
            step = logical_or(step, s)
        starts_group = concatenate([lax.full((1,), True), step])
    else:
        starts_group = lax.full((0,), True)
    count = lax.reduce_sum(convert(starts_group, int_), (0,))
    if size is None:
        try:
            length = int(count)
        except ConcretizationError as err:
            raise ConcretizationError(
                "unique: the number of unique elements depends on the values; pass size= (and fill_value=) "
                "to get a static shape inside a transform"
            ) from err
    else:
        length = size

    # Group starts to the front, in order: the sorted unique values, their first indices and positions.
    position = lax.iota(int_, n)
    _, *front = lax.sort((logical_not(starts_group), *sorted_keys, perm, position), 0, True, 1)
    *front_keys, first_index, start = front
    valid = lax.lt(lax.iota(int_, length), count)

    if n == 0:
        filled = lax.full((length, math.prod(rest)), 0 if fill_value is None else fill_value, x.dtype)
        values = lax.reshape(filled, (length, *rest)) if axis is not None else lax.reshape(filled, (length,))
    else:
        columns = []
        for k in front_keys:
            k = _resize(k, length)
            pad = lax.full((length,), _smallest(k) if fill_value is None else asarray(fill_value, x.dtype).reshape(()), x.dtype)
            columns.append(lax.select(valid, k, pad))
        values = _assemble(columns, length, rest, x.dtype, axis is not None)
    if axis is not None:
        values = moveaxis(values, 0, axis)

    results = [convert(values, values.dtype, x.weak_type)]  # JAX: the unique values of a weak array are weak
    if return_index:
        if n:
            index = lax.select(valid, _resize(first_index, length), lax.full((length,), _first(perm), int_))
        else:
            index = lax.full((length,), 0, int_)
        results.append(index)
    if return_inverse:
        group = lax.sub(lax.cumsum(convert(starts_group, int_)), lax.full((n,), 1, int_))
        _, inverse = lax.sort((perm, group), 0, True, 1)
        results.append(reshape(inverse, x.shape) if axis is None else inverse)
    if return_counts:
        bounds = _resize(start, length + 1) if n else lax.full((length + 1,), 0, int_)
        bounds = lax.select(lax.lt(lax.iota(int_, length + 1), count), bounds, lax.full((length + 1,), n, int_))
        results.append(lax.sub(lax.slice_in_dim(bounds, 1, None), lax.slice_in_dim(bounds, 0, length)))
    # An empty `ar`'s results are made from its shape alone: on its device, as the others.
    return follow("unique", results[0] if len(results) == 1 else tuple(results), x)


def _first(x: Array) -> Array:
    return lax.reshape(lax.slice_in_dim(x, 0, 1), ())


def _smallest(sorted_column: Array) -> Array:
    return _first(sorted_column)


def _assemble(columns: list[Array], length: int, rest: tuple[int, ...], dtype, by_axis: bool) -> Array:
    if not by_axis:
        return columns[0]
    if not columns:
        return lax.full((length, *rest), 0, dtype)
    stacked = lax.concatenate([lax.reshape(c, (length, 1)) for c in columns], 1)
    return lax.reshape(stacked, (length, *rest))
