"""lax's sorting and scan functions: sort, sort_key_val, top_k and the cumulative reductions."""

from __future__ import annotations

from collections.abc import Sequence

from ember.core.array import Array
from ember.core.primitives import sorting as so
from ember.core.primitives._rules import normalize_axis
from ember.errors import InvalidArgumentError
from ember.lax._convert import operands

__all__ = ["cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum", "sort", "sort_key_val", "top_k"]

ArrayLike = Array | float | int | bool | complex


def _one(op: str, x) -> Array:
    return operands(op, (x,))[0]


def _int(op: str, name: str, value) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidArgumentError(f"{op}: {name} must be an int, got {value!r}")
    return int(value)


def sort(operand: ArrayLike | Sequence[ArrayLike], dimension: int = -1, is_stable: bool = True,
         num_keys: int = 1) -> Array | tuple[Array, ...]:  # fmt: skip
    """Sort along `dimension`; several operands of one shape sort together by their first `num_keys`.

    The order is total, as in JAX: NaN sorts after +inf, -0.0 ties with 0.0,
    complex numbers compare by (real, imag). Ties keep their order when
    `is_stable`. With a sequence of operands the result is a tuple, each
    operand permuted like the keys.

    Args:
      operand: an array, or a sequence of arrays of one shape (dtypes may differ).
      dimension: the axis to sort along.
      is_stable: keep the relative order of equal keys.
      num_keys: how many leading operands are keys, compared lexicographically.

    Returns:
      The sorted array, or a tuple of sorted arrays when `operand` is a sequence.

    >>> lax.sort(enp.asarray([3.0, float("nan"), 1.0]))
    Array([ 1.,  3., nan], dtype=float32)
    >>> keys, values = lax.sort((enp.asarray([2, 1, 2]), enp.asarray([0.5, 1.5, 2.5])))
    >>> values
    Array([1.5, 0.5, 2.5], dtype=float32)
    """
    many = isinstance(operand, (list, tuple))
    xs = [_one("sort", x) for x in operand] if many else [_one("sort", operand)]
    if not xs:
        raise InvalidArgumentError("sort: needs at least one operand")
    dim = normalize_axis("sort", _int("sort", "dimension", dimension), xs[0].ndim)
    num_keys = _int("sort", "num_keys", num_keys)
    out = so.sort_p.bind(*xs, dimension=dim, is_stable=bool(is_stable), num_keys=num_keys)
    return tuple(out) if many else out[0]


def sort_key_val(keys: ArrayLike, values: ArrayLike, dimension: int = -1, is_stable: bool = True) -> tuple[Array, Array]:
    """Sort `keys` along `dimension` and permute `values` the same way.

    Args:
      keys: the array that decides the order.
      values: an array of the same shape, carried along.
      dimension: the axis to sort along.
      is_stable: keep the relative order of equal keys.

    Returns:
      (sorted keys, values in the keys' sorted order).

    >>> lax.sort_key_val(enp.asarray([3, 1, 2]), enp.asarray([30, 10, 20]))
    (Array([1, 2, 3], dtype=int32), Array([10, 20, 30], dtype=int32))
    """
    k, v = sort((keys, values), dimension, is_stable, num_keys=1)
    return k, v


def top_k(operand: ArrayLike, k: int) -> tuple[Array, Array]:
    """The `k` largest entries along the last axis, largest first, and their int32 indices.

    NaN counts as larger than every number; equal entries keep the lower index
    first (as JAX).

    Args:
      operand: a real array with at least one dimension.
      k: how many entries to keep, 0 <= k <= operand.shape[-1].

    Returns:
      (values, indices), each of shape operand.shape[:-1] + (k,).

    >>> lax.top_k(enp.asarray([1.0, 4.0, 2.0, 4.0]), 2)
    (Array([4., 4.], dtype=float32), Array([1, 3], dtype=int32))
    """
    x = _one("top_k", operand)
    values, indices = so.top_k_p.bind(x, k=_int("top_k", "k", k))
    return values, indices


def _cumulative(prim, name: str, operand: ArrayLike, axis: int, reverse: bool) -> Array:
    x = _one(name, operand)
    axis = normalize_axis(name, _int(name, "axis", axis), x.ndim)
    return prim.bind(x, axis=axis, reverse=bool(reverse))


def cumsum(operand: ArrayLike, axis: int = 0, reverse: bool = False) -> Array:
    """Running sum along `axis` (from the end when `reverse`); the dtype is kept.

    float16 and bfloat16 accumulate in float32.

    >>> lax.cumsum(enp.asarray([1, 2, 3]))
    Array([1, 3, 6], dtype=int32)
    """
    return _cumulative(so.cumsum_p, "cumsum", operand, axis, reverse)


def cumprod(operand: ArrayLike, axis: int = 0, reverse: bool = False) -> Array:
    """Running product along `axis` (from the end when `reverse`).

    >>> lax.cumprod(enp.asarray([1.0, 2.0, 3.0]), reverse=True)
    Array([6., 6., 3.], dtype=float32)
    """
    return _cumulative(so.cumprod_p, "cumprod", operand, axis, reverse)


def cummax(operand: ArrayLike, axis: int = 0, reverse: bool = False) -> Array:
    """Running maximum along `axis` (NaN propagates; complex compares by (real, imag)).

    >>> lax.cummax(enp.asarray([1, 3, 2, 5]))
    Array([1, 3, 3, 5], dtype=int32)
    """
    return _cumulative(so.cummax_p, "cummax", operand, axis, reverse)


def cummin(operand: ArrayLike, axis: int = 0, reverse: bool = False) -> Array:
    """Running minimum along `axis` (NaN propagates; complex compares by (real, imag)).

    >>> lax.cummin(enp.asarray([3, 1, 2, 0]))
    Array([3, 1, 1, 0], dtype=int32)
    """
    return _cumulative(so.cummin_p, "cummin", operand, axis, reverse)


def cumlogsumexp(operand: ArrayLike, axis: int = 0, reverse: bool = False) -> Array:
    """Running log(sum(exp(x))) along `axis`, computed without overflow or underflow.

    >>> lax.cumlogsumexp(enp.asarray([0.0, 0.0, 1000.0]))
    Array([0.000000e+00, 6.931472e-01, 1.000000e+03], dtype=float32)
    """
    return _cumulative(so.cumlogsumexp_p, "cumlogsumexp", operand, axis, reverse)
