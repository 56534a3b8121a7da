"""Order statistics, averages, covariances and histograms of ember.numpy.

quantile / percentile / median (and their nan- forms) sort along the reduced
axes and interpolate between neighbouring order statistics with NumPy's
methods (Hyndman & Fan's nine and NumPy's lower, higher, midpoint, nearest);
they are differentiable in the data and, for the interpolating methods, in `q`.
average, cov and corrcoef are sums and matrix products. histogram, bincount
and digitize count with a searchsorted and a scatter-add; their result sizes
are static (a number of bins, or `length=` for bincount), as in JAX, so they
work under jit and vmap. Checks that need values (increasing bins, negative
counts, q in range) run where the values are concrete, as NumPy's do.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.core.transfer import follow
from ember.errors import ConcretizationError, DTypeError, InvalidArgumentError, ShapeError
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, asarray, canonical_axes, full_for, promote_args, promote_inexact
from ember.numpy._reductions import Axis
from ember.numpy._reductions import max as _max
from ember.numpy._reductions import min as _min
from ember.numpy._reductions import sum as _sum
from ember.numpy._shape import broadcast_to, moveaxis, ravel, reshape, transpose
from ember.numpy._take import take_along_axis
from ember.numpy._ufuncs import conjugate, isnan, logical_not, real, sqrt, where

__all__ = [
    "average",
    "bincount",
    "corrcoef",
    "cov",
    "digitize",
    "histogram",
    "histogram_bin_edges",
    "median",
    "nanmedian",
    "nanpercentile",
    "nanquantile",
    "percentile",
    "quantile",
]  # fmt: skip


def known(x: Array) -> np.ndarray | None:
    """The value of `x` when it is concrete (eagerly, or a primal being differentiated), else None."""
    try:
        return np.asarray(x._concrete("a value check"))
    except ConcretizationError:
        return None


def _no_complex(op: str, x: Array) -> None:
    if dtypes.is_complex(x.dtype):
        raise DTypeError(
            f"{op}: complex input ({x.dtype}{x.shape}) has no order; apply {op} to enp.real(x) and enp.imag(x)"
        )


# --- quantiles ----------------------------------------------------------------------------------

# Hyndman & Fan's continuous methods: the virtual index is n*q + alpha + q*(1 - alpha - beta) - 1.
_CONTINUOUS = {"interpolated_inverted_cdf": (0.0, 1.0), "hazen": (0.5, 0.5), "weibull": (0.0, 0.0),
               "median_unbiased": (1 / 3, 1 / 3), "normal_unbiased": (3 / 8, 3 / 8)}  # fmt: skip
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf", "averaged_inverted_cdf",
            "closest_observation", *_CONTINUOUS)  # fmt: skip


def _positions(method: str, n, q: Array) -> tuple[Array, Array, Array | None]:
    """(lower index, upper index, weight of the upper) in the sorted data, as floats of q's dtype;
    weight None where the method picks one order statistic. `n` counts the valid values (an int,
    or an array per slice for the nan- functions)."""
    from ember.numpy._ufuncs import logical_and, remainder

    pick = {
        "lower": lax.floor,
        "higher": lax.ceil,
        "nearest": lambda v: lax.round(v, lax.RoundingMethod.TO_NEAREST_EVEN),
    }
    if method in pick:
        i = pick[method](q * (n - 1))
        return i, i, None
    if method in ("inverted_cdf", "closest_observation"):
        v = n * q - 1 if method == "inverted_cdf" else n * q - 1.5
        lo = lax.floor(v)
        at_lower = v == lo
        if method == "closest_observation":  # the nearest even order statistic (1-based) at a tie
            at_lower = logical_and(at_lower, remainder(lo, 2) == 1)
        i = lax.max(where(at_lower, lo, lo + 1), 0 * lo)
        return i, i, None
    if method in ("linear", "midpoint"):
        v = q * (n - 1)
    elif method == "averaged_inverted_cdf":
        v = n * q - 1
    else:
        alpha, beta = _CONTINUOUS[method]
        v = n * q + (alpha + q * (1 - alpha - beta)) - 1
    lo = lax.floor(v)
    gamma = v - lo
    if method == "midpoint":
        gamma = where(gamma == 0, 0 * gamma, 0 * gamma + 0.5)
    elif method == "averaged_inverted_cdf":
        gamma = where(gamma == 0, 0 * gamma + 0.5, 0 * gamma + 1)
    last = n - 1 + 0 * v  # past either end: the extreme order statistic
    above, below = v >= last, v < 0
    lo_ = where(above, last, where(below, 0 * v, lo))
    hi_ = where(above, last, where(below, 0 * v, lo + 1))
    return lo_, hi_, gamma


def _lerp(a: Array, b: Array, t: Array) -> Array:
    # NumPy's two-sided form: exact at both ends, as np.quantile computes it.
    d = b - a
    return where(t >= 0.5, b - d * (1 - t), a + d * t)


def _quantile(op: str, a, q, axis, out, method: str, keepdims: bool, nan_aware: bool, scale: float,
              weights=None) -> Array:  # fmt: skip
    if out is not None:
        raise InvalidArgumentError(f"{op}: ember arrays are immutable, so out= is not supported; use the return value")
    if method not in _METHODS:
        raise InvalidArgumentError(f"{op}: method={method!r} is not one of {_METHODS}")
    if weights is not None and method != "inverted_cdf":
        raise InvalidArgumentError(
            f"{op}: only method='inverted_cdf' supports weights (as NumPy), got method={method!r}"
        )
    # As JAX: the result has the inexact dtype of `a` alone (q's dtype only sets the precision of positions).
    (x,), (qs,) = promote_inexact(op, a), promote_inexact(op, q)
    _no_complex(op, x)
    _no_complex(op, qs)
    q_now = known(qs)
    if q_now is not None and not np.all((q_now >= 0) & (q_now <= scale)):
        raise InvalidArgumentError(f"{op}: q must be in the range [0, {scale:g}], got {q_now}")
    axes = canonical_axes(op, axis, x.ndim)
    rest = [d for d in range(x.ndim) if d not in axes]
    rest_shape = tuple(x.shape[d] for d in rest)
    n = math.prod(x.shape[d] for d in axes)
    kept = tuple(1 if d in axes else s for d, s in enumerate(x.shape)) if keepdims else rest_shape
    if n == 0 or qs.size == 0:
        return full_for(op, qs.shape + kept, math.nan, x.dtype, x, qs)
    flat = reshape(transpose(x, (*rest, *axes)), (*rest_shape, n))
    index_dtype = dtypes.promote_types(qs.dtype, dtypes.float32)  # positions of a half-precision q in float32
    qf = reshape(convert(qs, index_dtype), (qs.size,))
    qf = qf / scale if scale != 1 else qf
    if weights is not None:
        w = _quantile_weights(op, x, weights, axis, axes, nan_aware, index_dtype)
        ordered, w = lax.sort((flat, reshape(transpose(w, (*rest, *axes)), (*rest_shape, n))), flat.ndim - 1, True, 1)
        lo = hi = _weighted_position(w, qf, n)
        gamma = None
    elif nan_aware:
        ordered = lax.sort(flat, flat.ndim - 1, True)  # NaN last
        count = _sum(convert(logical_not(isnan(flat)), index_dtype), axis=-1, keepdims=True)
        lo, hi, gamma = _positions(method, count, broadcast_to(qf, (*rest_shape, qs.size)))
    else:
        ordered = lax.sort(flat, flat.ndim - 1, True)
        lo, hi, gamma = _positions(method, n, qf)
    shape = (*rest_shape, qs.size)

    def at(i: Array) -> Array:
        return take_along_axis(ordered, broadcast_to(convert(i, dtypes.default_int()), shape), -1)

    if gamma is None:
        out = at(lo)
    elif op in ("median", "nanmedian"):
        # np.median's mean of the middle value(s), summed as np.mean sums half precision (in float32, so
        # two float16 60000s do not overflow): the median of [1, inf] is inf, where lerp gives inf - inf
        wide = dtypes.promote_types(x.dtype, dtypes.float32)
        pair = convert((convert(at(lo), wide) + convert(at(hi), wide)) * 0.5, x.dtype)
        out = where(gamma == 0, at(lo), pair)
    else:
        out = _lerp(at(lo), at(hi), convert(broadcast_to(gamma, shape), x.dtype))
    if not nan_aware:  # any NaN makes the quantile NaN, as in NumPy
        last = lax.slice_in_dim(ordered, n - 1, n, axis=ordered.ndim - 1)
        out = where(isnan(last), lax.full((), math.nan, x.dtype), out)
    return reshape(moveaxis(out, -1, 0), qs.shape + kept)


def _quantile_weights(op: str, x: Array, weights, axis, axes, nan_aware: bool, dtype) -> Array:
    """The weights as an array of x's shape in `dtype` (zero at NaN values for the nan- functions)."""
    w = asarray(weights)
    if dtypes.is_complex(w.dtype):
        raise DTypeError(f"{op}: weights must be real, got {w.dtype}{w.shape}")
    if w.shape != x.shape:
        if not (
            w.ndim == 1 and len(axes) == 1 and isinstance(axis, (int, np.integer)) and w.shape[0] == x.shape[axes[0]]
        ):
            raise ShapeError(f"{op}: weights of shape {w.shape} must have a's shape {x.shape}, or be 1-d along the "
                             "one reduced axis")  # fmt: skip
        w = lax.broadcast_in_dim(w, x.shape, axes)
    value = known(w)
    if value is not None and (np.any(value < 0) or not np.all(np.any(value != 0, axis=axes))):
        raise InvalidArgumentError(
            f"{op}: weights must be non-negative, with at least one non-zero along the reduced axes"
        )
    w = convert(w, dtype)
    return where(isnan(x), 0 * w, w) if nan_aware else w


def _weighted_position(w: Array, q: Array, n: int) -> Array:
    """NumPy's weighted inverted_cdf: the first sorted position whose share of the total weight reaches q."""
    cdf = lax.cumsum(w, w.ndim - 1)
    cdf = cdf / lax.slice_in_dim(cdf, n - 1, n, axis=w.ndim - 1)
    cdf = where(cdf == 0, -1 + 0 * cdf, cdf)  # leading zero weights never count as reaching q = 0
    below = lax.expand_dims(cdf, (w.ndim - 1,)) < lax.broadcast_in_dim(q, (*w.shape[:-1], q.shape[0], 1), (w.ndim - 1,))
    first = _sum(convert(below, dtypes.default_int()), axis=-1)
    return convert(lax.min(first, lax.full(first.shape, n - 1, first.dtype)), q.dtype)


_QUANTILE_ARGS = """
    Args:
      a: the data (bool and integers are averaged in the default float dtype; complex is rejected).
      q: {what}, a scalar or an array of any shape{traced}.
      axis: the axis or axes to reduce (None: all).
      out: must be None (ember arrays are immutable).
      overwrite_input: ignored (ember never writes into its inputs).
      method: "linear" (default), "lower", "higher", "midpoint", "nearest", or one of NumPy's
        Hyndman & Fan methods ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
        "interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased", "normal_unbiased").
      keepdims: keep the reduced axes with size 1.
      weights: non-negative weights of a's shape (or 1-d along a single int `axis`), with
        method="inverted_cdf" only, as NumPy: the first sorted value whose cumulative share of the
        weight reaches q.

    Returns:
      q's shape followed by the shape of the unreduced axes, in the inexact dtype of `a` (as JAX;
      NumPy also promotes with q's). An empty reduction gives NaN (np.median's answer; np.quantile
      raises IndexError).
"""


def quantile(a: ArrayLike, q: ArrayLike, axis: Axis = None, out=None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: ArrayLike | None = None) -> Array:  # fmt: skip
    """The q-th quantiles of `a` over `axis`; NaN where a reduced slice holds a NaN.
    {args}
    >>> enp.quantile(enp.asarray([1.0, 2.0, 3.0, 4.0]), 0.5)
    Array(2.5, dtype=float32)
    >>> enp.quantile(enp.asarray([[1, 5], [3, 2]]), enp.asarray([0.0, 1.0]), axis=1, method="lower").tolist()
    [[1.0, 2.0], [5.0, 3.0]]
    """
    return _quantile("quantile", a, q, axis, out, method, keepdims, False, 1, weights)


def percentile(a: ArrayLike, q: ArrayLike, axis: Axis = None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: ArrayLike | None = None) -> Array:  # fmt: skip
    """The q-th percentiles of `a` over `axis` (quantile of q / 100).
    {args}
    >>> enp.percentile(enp.asarray([1.0, 2.0, 3.0, 4.0]), 25)
    Array(1.75, dtype=float32)
    """
    return _quantile("percentile", a, q, axis, out, method, keepdims, False, 100, weights)


def nanquantile(a: ArrayLike, q: ArrayLike, axis: Axis = None, out=None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights: ArrayLike | None = None) -> Array:  # fmt: skip
    """The q-th quantiles of the non-NaN values of `a` over `axis` (NaN where all are NaN).
    {args}
    >>> enp.nanquantile(enp.asarray([1.0, float("nan"), 3.0]), 0.5)
    Array(2., dtype=float32)
    """
    return _quantile("nanquantile", a, q, axis, out, method, keepdims, True, 1, weights)


def nanpercentile(a: ArrayLike, q: ArrayLike, axis: Axis = None, out=None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights: ArrayLike | None = None) -> Array:  # fmt: skip
    """The q-th percentiles of the non-NaN values of `a` over `axis`.
    {args}
    >>> enp.nanpercentile(enp.asarray([1.0, float("nan"), 3.0]), 100)
    Array(3., dtype=float32)
    """
    return _quantile("nanpercentile", a, q, axis, out, method, keepdims, True, 100, weights)


for _fn, _what in ((quantile, "the quantiles, in [0, 1]"), (percentile, "the percentiles, in [0, 100]"),
                   (nanquantile, "the quantiles, in [0, 1]"), (nanpercentile, "the percentiles, in [0, 100]")):  # fmt: skip
    _fn.__doc__ = _fn.__doc__.replace(
        "{args}", _QUANTILE_ARGS.format(what=_what, traced=" (may be traced; checked against its range when concrete)")
    )


def median(a: ArrayLike, axis: Axis = None, out=None, overwrite_input: bool = False, keepdims: bool = False) -> Array:
    """The median of `a` over `axis` (the mean of the two middle values for an even count); NaN
    where a reduced slice holds a NaN.

    Args:
      a: the data (bool and integers give the default float dtype; complex is rejected).
      axis: the axis or axes to reduce (None: all).
      out: must be None.
      overwrite_input: ignored.
      keepdims: keep the reduced axes with size 1.

    Returns:
      The medians, of the unreduced axes' shape.

    >>> enp.median(enp.asarray([[1.0, 4.0, 2.0], [3.0, 0.0, 8.0]]), axis=1).tolist()
    [2.0, 3.0]
    """
    return _quantile("median", a, 0.5, axis, out, "midpoint", keepdims, False, 1)


def nanmedian(
    a: ArrayLike, axis: Axis = None, out=None, overwrite_input: bool = False, keepdims: bool = False
) -> Array:
    """The median of the non-NaN values of `a` over `axis` (NaN where all are NaN).

    Args:
      a: the data.
      axis: the axis or axes to reduce (None: all).
      out: must be None.
      overwrite_input: ignored.
      keepdims: keep the reduced axes with size 1.

    Returns:
      The medians, of the unreduced axes' shape.

    >>> enp.nanmedian(enp.asarray([1.0, float("nan"), 4.0, 2.0]))
    Array(2., dtype=float32)
    """
    return _quantile("nanmedian", a, 0.5, axis, out, "midpoint", keepdims, True, 1)


# --- average, cov, corrcoef -----------------------------------------------------------------------


def average(a: ArrayLike, axis: Axis = None, weights: ArrayLike | None = None, returned: bool = False, *,
            keepdims: bool = False) -> Array | tuple[Array, Array]:  # fmt: skip
    """The weighted average of `a` over `axis`: sum(a * w) / sum(w).

    Args:
      a: the data.
      axis: the axis or axes to average over (None: all).
      weights: an array of `a`'s shape, or of the shape of the averaged axes (in the order `axis`
        names them); None weighs every element 1.
      returned: also return the sum of the weights (broadcast to the average's shape).
      keepdims: keep the averaged axes with size 1.

    Returns:
      The average (inexact dtype), or (average, sum of weights) with `returned`. Weights that sum
      to zero give NaN or inf under a trace; concrete ones raise InvalidArgumentError (NumPy: ZeroDivisionError).

    >>> enp.average(enp.asarray([1.0, 2.0, 4.0]), weights=enp.asarray([3.0, 1.0, 0.0]))
    Array(1.25, dtype=float32)
    """
    from ember.numpy._reductions import mean

    x = asarray(a)
    axes = canonical_axes("average", axis, x.ndim)
    if weights is None:
        avg = mean(x, axis=axes, keepdims=keepdims)
        if not returned:
            return avg
        count = math.prod(x.shape[d] for d in axes)
        return avg, lax.full(avg.shape, count, avg.dtype)
    x, w = promote_inexact("average", x, weights)
    if w.shape != x.shape:
        if axis is None:
            raise ShapeError(f"average: weights of shape {w.shape} differ from a's {x.shape}; pass axis= to weigh "
                             "only the averaged axes")  # fmt: skip
        given = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        named = [canonical_axes("average", d, x.ndim)[0] for d in given]
        if w.shape != tuple(x.shape[d] for d in named):
            raise ShapeError(f"average: weights of shape {w.shape} match neither a's shape {x.shape} nor the "
                             f"averaged axes {tuple(named)} of sizes {tuple(x.shape[d] for d in named)}")  # fmt: skip
        order = sorted(range(len(named)), key=lambda i: named[i])
        w = lax.broadcast_in_dim(transpose(w, order), x.shape, tuple(sorted(named)))
    total = _sum(w, axis=axes, keepdims=keepdims)
    w_now = known(total)
    if w_now is not None and np.any(w_now == 0):
        raise InvalidArgumentError(f"average: weights sum to zero over axis {axis}, so the average is undefined")
    avg = _sum(x * w, axis=axes, keepdims=keepdims) / total
    if returned:
        return avg, broadcast_to(total, avg.shape)
    return avg


def cov(m: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: ArrayLike | None = None, aweights: ArrayLike | None = None, *, dtype=None) -> Array:  # fmt: skip
    """The covariance matrix of the variables in `m` (and `y`): rows are variables unless rowvar=False.

    Args:
      m: a 1-d or 2-d array of observations.
      y: more variables, shaped like `m`.
      rowvar: rows are variables (True) or observations (False).
      bias: normalise by N instead of N - 1 (ignored when ddof is given).
      ddof: the delta degrees of freedom.
      fweights: integer frequency weights, one per observation.
      aweights: observation weights, one per observation.
      dtype: the result dtype (default: the inexact promotion of the inputs).

    Returns:
      The (variables, variables) covariance matrix; a 0-d array for a single variable.

    >>> enp.cov(enp.asarray([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    x = asarray(m)
    if x.ndim > 2:
        raise ShapeError(
            f"cov: m has more than 2 dimensions (shape {x.shape}); reshape it to (variables, observations)"
        )
    args = [x] if y is None else [x, asarray(y)]
    if y is not None and args[1].ndim > 2:
        raise ShapeError(f"cov: y has more than 2 dimensions (shape {args[1].shape})")
    args = promote_inexact("cov", *args)
    if dtype is not None:
        target = dtypes.canonicalize(dtype, "cov")
        if not dtypes.is_inexact(target):
            raise DTypeError(f"cov: dtype must be floating or complex, got {target}")
        args = [convert(v, target) for v in args]
    rows = [lax.reshape(v, (1, v.size)) if v.ndim < 2 else v for v in args]
    if not rowvar:  # NumPy's rules: m is transposed unless 1-d, y unless it has one row
        rows[0] = rows[0] if args[0].ndim == 1 else transpose(rows[0])
        rows[1:] = [r if r.shape[0] == 1 else transpose(r) for r in rows[1:]]
    if len(rows) == 2 and rows[0].shape[1] != rows[1].shape[1]:
        raise ShapeError(
            f"cov: m and y have different numbers of observations: {rows[0].shape[1]} and {rows[1].shape[1]}"
        )
    X = lax.concatenate(rows, 0) if len(rows) == 2 else rows[0]
    n_obs = X.shape[1]
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    for name, wt, integer in (("fweights", fweights, True), ("aweights", aweights, False)):
        if wt is None:
            continue
        wt = asarray(wt)
        if wt.ndim != 1 or wt.shape[0] != n_obs:
            raise ShapeError(f"cov: {name} must be 1-d with one weight per observation ({n_obs}), got shape {wt.shape}")
        if integer and not dtypes.is_integer(wt.dtype) and wt.dtype != dtypes.bool_:
            value = known(wt)
            if value is not None and np.any(value != np.around(value)):
                raise DTypeError(f"cov: fweights must be integers, got {wt.dtype} values")
        value = known(wt)
        if value is not None and np.any(value < 0):
            raise InvalidArgumentError(f"cov: {name} must be non-negative")
        wt = convert(wt, dtypes.real_dtype(X.dtype))
        w = wt if w is None else w * wt
    if w is None:
        avg = _sum(X, axis=1, keepdims=True) / n_obs
        fact = n_obs - ddof
    else:
        v1 = _sum(w)
        avg = _sum(X * w, axis=1, keepdims=True) / v1
        if ddof == 0:
            fact = v1
        elif aweights is None:
            fact = v1 - ddof
        else:
            fact = v1 - ddof * _sum(w * convert(asarray(aweights), w.dtype)) / v1
    fact = lax.max(fact, 0 * fact) if isinstance(fact, Array) else builtins.max(fact, 0)
    centered = X - avg
    weighted = centered if w is None else centered * w
    c = lax.dot_general(centered, conjugate(weighted), (((1,), (1,)), ((), ())))
    c = c / fact
    return lax.reshape(c, ()) if c.shape == (1, 1) else c


def corrcoef(x: ArrayLike, y: ArrayLike | None = None, rowvar: bool = True, *, dtype=None) -> Array:
    """Pearson correlation coefficients: cov(x, y) scaled to a unit diagonal, clipped to [-1, 1].

    Args:
      x: a 1-d or 2-d array of observations (rows are variables unless rowvar=False).
      y: more variables, shaped like `x`.
      rowvar: rows are variables (True) or observations (False).
      dtype: the result dtype.

    Returns:
      The (variables, variables) correlation matrix; a 0-d array for a single variable.

    >>> enp.corrcoef(enp.asarray([[0.0, 1.0, 2.0], [1.0, 3.0, 2.0]])).tolist()
    [[1.0, 0.5], [0.5, 1.0]]
    """
    from ember.numpy._ufuncs import clip, imag

    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = lax.reshape(real(_diagonal(c)), (c.shape[0],))
    s = sqrt(d)
    c = c / lax.broadcast_in_dim(s, c.shape, (0,)) / lax.broadcast_in_dim(s, c.shape, (1,))
    if dtypes.is_complex(c.dtype):
        return lax.complex(clip(real(c), -1, 1), clip(imag(c), -1, 1))
    return clip(c, -1, 1)


def _diagonal(c: Array) -> Array:
    from ember.numpy._take import diagonal

    return diagonal(c)


# --- histograms, bincount, digitize -------------------------------------------------------------------


def _bins_count(op: str, bins) -> int | None:
    if isinstance(bins, str):
        raise InvalidArgumentError(f"{op}: bins={bins!r}: estimators by name are not supported; pass a number of bins "
                                   "or the edges")  # fmt: skip
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, (bool, np.bool_)):
        if bins < 1:
            raise InvalidArgumentError(f"{op}: bins must be a positive integer, got {bins}")
        return int(bins)
    return None


def histogram_bin_edges(a: ArrayLike, bins: int | ArrayLike = 10, range: Sequence[float] | None = None,
                        weights: ArrayLike | None = None) -> Array:  # fmt: skip
    """The edges of the bins `histogram` counts `a` in.

    Args:
      a: the data (flattened; complex is rejected).
      bins: the number of equal-width bins, or the increasing edges themselves.
      range: (lower, upper) of the equal-width bins; default (a.min(), a.max()), widened by 0.5 on
        each side when they are equal. A data-dependent range stays traceable: the number of
        edges never depends on values.
      weights: ignored (NumPy's estimators by name would use it).

    Returns:
      bins + 1 edges in the inexact dtype of `a` (or the given edges, in the promoted dtype).

    >>> enp.histogram_bin_edges(enp.asarray([0.0, 1.0, 4.0]), bins=4).tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0]
    """
    return _edges("histogram_bin_edges", a, bins, range)[1]


def _edges(op: str, a, bins, range) -> tuple[Array, Array]:
    x = asarray(a)
    _no_complex(op, x)
    x = ravel(x)
    count = _bins_count(op, bins)
    if count is None:
        x, edges = promote_inexact(op, x, bins)
        if edges.ndim != 1 or edges.shape[0] < 1:
            raise ShapeError(f"{op}: bins must be an int or a 1-d array of edges, got shape {edges.shape}")
        value = known(edges)
        if value is not None and np.any(value[1:] < value[:-1]):
            raise InvalidArgumentError(f"{op}: bins must increase monotonically, got {value.tolist()}")
        return x, edges
    (x,) = promote_inexact(op, x)
    if range is not None:
        first, last = (np.asarray(v) for v in range)
        lo, hi = float(first), float(last)
        if lo > hi:
            raise InvalidArgumentError(f"{op}: range=({lo}, {hi}): max must be larger than min")
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise InvalidArgumentError(f"{op}: range=({lo}, {hi}) must be finite")
        if lo == hi:
            first, last = first - 0.5, last + 0.5
        # As NumPy: spaced in the range's own precision (float64 for Python floats), then rounded to the
        # data's dtype. Other spacing moves edges by an ulp, and data lying on an edge changes bins.
        return x, follow(op, asarray(np.linspace(first, last, count + 1).astype(x.dtype)), x)
    if x.size == 0:
        first, last = full_for(op, (), 0.0, x.dtype, x), full_for(op, (), 1.0, x.dtype, x)
    else:
        first, last = _min(x), _max(x)
        now = known(lax.concatenate([lax.reshape(first, (1,)), lax.reshape(last, (1,))], 0))
        if now is not None and not np.all(np.isfinite(now.astype(np.float64))):
            raise InvalidArgumentError(f"{op}: the range [{now[0]}, {now[1]}] found in the data is not finite; "
                                       "pass range= or drop the NaN/inf values")  # fmt: skip
        same = lax.eq(first, last)
        first, last = where(same, first - 0.5, first), where(same, last + 0.5, last)
    from ember.numpy._creation import linspace

    return x, linspace(first, last, count + 1, dtype=x.dtype)


def histogram(a: ArrayLike, bins: int | ArrayLike = 10, range: Sequence[float] | None = None,
              density: bool | None = None, weights: ArrayLike | None = None) -> tuple[Array, Array]:  # fmt: skip
    """Count (or weigh) the values of `a` in bins: (hist, bin_edges).

    Bins are half-open [edge_i, edge_i+1) except the last, which includes its upper edge; values
    outside the edges are not counted, as in NumPy.

    Args:
      a: the data (flattened; complex is rejected).
      bins: the number of equal-width bins, or the increasing edges.
      range: (lower, upper) of the equal-width bins (default: the data's min and max).
      density: return the probability density (each count / (total * bin width)).
      weights: a weight per value of `a` (same shape); the bins sum them instead of counting.

    Returns:
      (hist, bin_edges): hist has len(bin_edges) - 1 entries, of the default integer dtype when
      counting (NumPy's intp; JAX gives floats), of the weights' dtype when weighing (bool weights
      count as integers) and inexact with `density`; bin_edges as `histogram_bin_edges`.

    >>> hist, edges = enp.histogram(enp.asarray([0.0, 0.5, 1.0, 3.0]), bins=3)
    >>> hist
    Array([2, 1, 1], dtype=int32)
    >>> edges.tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    from ember.numpy._sorting import searchsorted

    x, edges = _edges("histogram", a, bins, range)
    nbins = edges.shape[0] - 1
    if weights is None:
        w = lax.full(x.shape, 1, dtypes.default_int())
    else:
        w = asarray(weights)
        if w.shape != asarray(a).shape:
            raise ShapeError(f"histogram: weights of shape {w.shape} must match a's shape {asarray(a).shape}")
        w = ravel(w)
        if w.dtype == dtypes.bool_:
            w = convert(w, dtypes.default_int())
    if density:
        w = promote_inexact("histogram", w, edges)[0]
    index = searchsorted(edges, x, side="right")
    # The last bin is closed: a value equal to the last edge goes into it.
    index = where(x == lax.reshape(lax.slice_in_dim(edges, nbins, nbins + 1), ()), nbins, index)
    counts = lax.full((nbins + 2,), 0, w.dtype).at[index].add(w, mode="drop")
    hist = lax.slice_in_dim(counts, 1, nbins + 1)
    if density:
        widths = convert(lax.sub(lax.slice_in_dim(edges, 1, nbins + 1), lax.slice_in_dim(edges, 0, nbins)), hist.dtype)
        hist = hist / widths / _sum(hist)
    return hist, edges


def bincount(x: ArrayLike, weights: ArrayLike | None = None, minlength: int = 0, *, length: int | None = None) -> Array:
    """The number of occurrences of each value 0, 1, ... in the non-negative integer array `x`.

    Args:
      x: a 1-d array of non-negative integers (or bools).
      weights: a weight per element of `x`; the bins sum them instead of counting.
      minlength: the least number of bins.
      length: the number of bins, static, as in JAX: needed when `x` is traced (under jit or
        vmap). Values at or past it are dropped; traced negative values count in bin 0 (as in
        JAX), concrete ones raise (as in NumPy).

    Returns:
      max(x.max() + 1, minlength) bins (or `length`): default integers when counting, the weights'
      dtype when weighing (bool weights count as integers; NumPy gives float64).

    >>> enp.bincount(enp.asarray([0, 1, 1, 3]))
    Array([1, 2, 0, 1], dtype=int32)
    >>> enp.bincount(enp.asarray([0, 1, 1]), weights=enp.asarray([0.5, 1.0, 2.0]), length=3)
    Array([0.5, 3. , 0. ], dtype=float32)
    """
    v = asarray(x)
    if not (dtypes.is_integer(v.dtype) or v.dtype == dtypes.bool_):
        raise DTypeError(f"bincount: x must hold integers, got {v.dtype}{v.shape}; convert with x.astype(int)")
    if v.ndim != 1:
        raise ShapeError(f"bincount: x must be 1-d, got shape {v.shape}; ravel it first")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise InvalidArgumentError(f"bincount: minlength must not be negative, got {minlength}")
    value = known(v)
    if value is not None and value.size and value.min() < 0:
        raise InvalidArgumentError(f"bincount: x must be non-negative, got the value {value.min()}")
    if length is None:
        if value is None:
            raise ConcretizationError(f"bincount: the number of bins depends on the values of a traced array "
                                      f"{v.aval.str_short()}; pass length= (a static number of bins)")  # fmt: skip
        length = builtins.max(minlength, int(value.max()) + 1 if value.size else 0)
    length = operator.index(length)
    if weights is None:
        w = lax.full(v.shape, 1, dtypes.default_int())
    else:
        w = asarray(weights)
        if w.shape != v.shape:
            raise ShapeError(f"bincount: weights of shape {w.shape} must match x's shape {v.shape}")
        if w.dtype == dtypes.bool_:
            w = convert(w, dtypes.default_int())
    if v.dtype == dtypes.bool_:
        v = convert(v, dtypes.default_int())
    index = lax.max(v, lax.full(v.shape, 0, v.dtype))
    return full_for("bincount", (length,), 0, w.dtype, v, w).at[index].add(w, mode="drop")


def digitize(x: ArrayLike, bins: ArrayLike, right: bool = False) -> Array:
    """The index of the bin each value of `x` falls in.

    For increasing bins, i with bins[i-1] <= x < bins[i] (bins[i-1] < x <= bins[i] with right=True);
    decreasing bins count from the other end, as in NumPy. Values below or above every edge give 0
    or len(bins).

    Args:
      x: the values (any shape; complex is rejected).
      bins: a 1-d monotonic array of edges (checked where concrete).
      right: whether the bins include their right edge instead of their left.

    Returns:
      Default-integer indices of x's shape.

    >>> enp.digitize(enp.asarray([0.2, 6.4, 3.0, 1.6]), enp.asarray([0.0, 1.0, 2.5, 4.0, 10.0]))
    Array([1, 4, 3, 2], dtype=int32)
    """
    from ember.numpy._sorting import searchsorted

    v, b = promote_args("digitize", x, bins)
    _no_complex("digitize", v)
    if b.ndim != 1:
        raise ShapeError(f"digitize: bins must be 1-d, got shape {b.shape}")
    value = known(b)
    if value is not None and value.size > 1:
        up, down = np.all(value[1:] >= value[:-1]), np.all(value[1:] <= value[:-1])
        if not (up or down):
            raise InvalidArgumentError(
                f"digitize: bins must be monotonically increasing or decreasing, got {value.tolist()}"
            )
    side = "left" if right else "right"
    n = b.shape[0]
    if n == 0:
        return full_for("digitize", v.shape, 0, dtypes.default_int(), v, b)
    rising = searchsorted(b, v, side=side)
    falling = n - searchsorted(lax.rev(b, (0,)), v, side=side)
    increasing = lax.ge(lax.reshape(lax.slice_in_dim(b, n - 1, n), ()), lax.reshape(lax.slice_in_dim(b, 0, 1), ()))
    return convert(where(increasing, rising, falling), dtypes.default_int())
