"""Continuous distributions that are a transform of uniform or normal draws.

Each follows JAX's algorithm (``jax.random``), so a key gives the numbers JAX
gives (up to the last bits of erf_inv for the normal-based ones): exponential
from ``-log1p(-u)``, laplace, logistic and cauchy by inverting their CDFs,
and pareto, lognormal, weibull_min, rayleigh, wald, triangular, maxwell,
double_sided_maxwell and rademacher built on those.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives._rules import broadcast_shapes
from ember.errors import DTypeError, ShapeError
from ember.lax import _elementwise as ew
from ember.lax import _structural as st
from ember.lax._convert import convert
from ember.random._distributions import (
    ArrayLike,
    _broadcast,
    _normal_real,
    _param,
    _uniform,
    bernoulli,
    prepare,
)
from ember.random._keys import KeyArray, Shape, canonical_shape, check_key, check_shape, const, split

__all__ = ["cauchy", "double_sided_maxwell", "exponential", "laplace", "logistic", "lognormal", "maxwell", "pareto",
           "rademacher", "rayleigh", "triangular", "wald", "weibull_min"]  # fmt: skip


# --- shared checks (the samplers in _gamma, _discrete and _multivariate use them too) -------------


def result_shape(fn: str, shape, *param_shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The sample shape: `shape` checked against the parameters, or their broadcast shape for None.

    Without parameters there is nothing to take the shape from: None is refused as any non-shape is.
    """
    if shape is not None or not param_shapes:
        shape = canonical_shape(fn, shape)
        check_shape(fn, shape, *param_shapes)
        return shape
    try:
        return broadcast_shapes(f"ember.random.{fn}", *param_shapes)
    except ShapeError:
        shown = ", ".join(str(s) for s in param_shapes)
        raise ShapeError(
            f"ember.random.{fn}: parameters of shapes {shown} do not broadcast together; "
            "pass arrays whose trailing dimensions are equal or 1"
        ) from None


def checked_args(fn: str, key, dtype, shape, *params) -> tuple:
    """``(key, dtype, shape, *params)`` of a floating sampler, checked in that order: the key, the
    dtype, the parameters as arrays of the dtype, and the result shape they must broadcast to (their
    broadcast shape for None)."""
    key, dtype = prepare(fn, key, dtype)
    params = [_param(fn, p, dtype) for p in params]
    return (key, dtype, result_shape(fn, shape, *(p.shape for p in params)), *params)


def uniform_open(fn: str, key: Array, shape: tuple[int, ...], dtype: np.dtype, lo: float,
                 at: Array | None = None) -> Array:  # fmt: skip
    """Uniform draws in [lo, 1) (JAX's ``uniform(key, shape, dtype, minval=lo)``); `at` as in `random_bits`."""
    return _uniform(fn, key, shape, dtype, const(lo, dtype), const(1.0, dtype), at)


def _standard_exponential(fn: str, key: Array, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    # 1 - u lies in (0, 1], so the log is finite.
    return ew.neg(ew.log1p(ew.neg(uniform_open(fn, key, shape, dtype, 0.0))))


# --- inverse-CDF samplers ----------------------------------------------------------------------------


def exponential(key: KeyArray, shape: int | Shape = (), dtype=None) -> Array:
    """Standard exponential samples (density e^-x on x >= 0): ``-log(1 - u)``.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> x = ember.random.exponential(ember.random.key(0), (1000,))
    >>> bool((x >= 0).all()), round(float(x.mean()), 1)
    (True, 1.0)
    """
    key, dtype, shape = checked_args("exponential", key, dtype, shape)
    return _standard_exponential("exponential", key, shape, dtype)


def laplace(key: KeyArray, shape: int | Shape = (), dtype=None) -> Array:
    """Standard Laplace samples (density e^-|x| / 2).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.laplace(ember.random.key(0), (2, 3)).shape
    (2, 3)
    """
    key, dtype, shape = checked_args("laplace", key, dtype, shape)
    # u in (-1, 1): sign(u) log(1 - |u|) is the inverse CDF of a symmetric density.
    u = uniform_open("laplace", key, shape, dtype, -1.0 + float(dtypes.finfo(dtype).epsneg))
    return ew.mul(ew.sign(u), ew.log1p(ew.neg(ew.abs(u))))


def logistic(key: KeyArray, shape: int | Shape = (), dtype=None) -> Array:
    """Standard logistic samples (CDF 1 / (1 + e^-x)): ``log(u) - log1p(-u)``, the inverse CDF.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.logistic(ember.random.key(0), (3,)).dtype
    dtype('float32')
    """
    key, dtype, shape = checked_args("logistic", key, dtype, shape)
    u = uniform_open("logistic", key, shape, dtype, float(dtypes.finfo(dtype).tiny))
    return ew.sub(ew.log(u), ew.log1p(ew.neg(u)))


def cauchy(key: KeyArray, shape: int | Shape = (), dtype=None) -> Array:
    """Standard Cauchy samples (density 1 / (pi (1 + x^2))): ``tan(pi (u - 1/2))``.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.cauchy(ember.random.key(0), (3,)).shape
    (3,)
    """
    key, dtype, shape = checked_args("cauchy", key, dtype, shape)
    u = uniform_open("cauchy", key, shape, dtype, float(dtypes.finfo(dtype).eps))
    return ew.tan(ew.mul(const(math.pi, dtype), ew.sub(u, 0.5)))


def pareto(key: KeyArray, b: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Pareto samples with shape parameter `b` (density b / x^(b+1) on x >= 1): ``exp(E / b)``, E exponential.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      b: the shape parameter (> 0), a scalar or an array.
      shape: the result's shape (default: `b`'s shape); `b` must broadcast to it.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> bool((ember.random.pareto(ember.random.key(0), 3.0, (100,)) >= 1).all())
    True
    """
    key, dtype, shape, b = checked_args("pareto", key, dtype, shape, b)
    return ew.exp(ew.div(_standard_exponential("pareto", key, shape, dtype), _broadcast(b, shape)))


def lognormal(key: KeyArray, sigma: ArrayLike = 1.0, shape: int | Shape | None = None, dtype=None) -> Array:
    """Log-normal samples: ``exp(sigma * N)`` for N standard normal.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      sigma: the standard deviation of the log (default 1), a scalar or an array.
      shape: the result's shape (default: `sigma`'s shape); `sigma` must broadcast to it.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> bool((ember.random.lognormal(ember.random.key(0), 0.5, (10,)) > 0).all())
    True
    """
    key, dtype, shape, sigma = checked_args("lognormal", key, dtype, shape, sigma)
    return ew.exp(ew.mul(_normal_real("lognormal", key, shape, dtype), _broadcast(sigma, shape)))


def weibull_min(key: KeyArray, scale: ArrayLike, concentration: ArrayLike, shape: int | Shape = (), dtype=None) -> Array:
    """Weibull samples: ``scale * E**(1 / concentration)`` for E standard exponential.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      scale: the scale (> 0), a scalar or an array broadcasting to `shape`.
      concentration: the shape parameter k (> 0), a scalar or an array broadcasting to `shape`.
      shape: the result's shape (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.weibull_min(ember.random.key(0), 1.0, 2.0, (4,)).shape
    (4,)
    """
    key, dtype, shape, scale, conc = checked_args("weibull_min", key, dtype, shape, scale, concentration)
    e = _standard_exponential("weibull_min", key, shape, dtype)
    return ew.mul(ew.pow(e, ew.div(const(1.0, dtype), _broadcast(conc, shape))), _broadcast(scale, shape))


def rayleigh(key: KeyArray, scale: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Rayleigh samples: ``scale * sqrt(-2 log u)``.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      scale: the scale (> 0), a scalar or an array.
      shape: the result's shape (default: `scale`'s shape); `scale` must broadcast to it.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.rayleigh(ember.random.key(0), 2.0, (3,)).shape
    (3,)
    """
    key, dtype, shape, scale = checked_args("rayleigh", key, dtype, shape, scale)
    # JAX draws u in [0, 1); u = 0 gives inf with probability 2**-nmant.
    u = uniform_open("rayleigh", key, shape, dtype, 0.0)
    return ew.mul(_broadcast(scale, shape), ew.sqrt(ew.mul(ew.log(u), -2.0)))


def wald(key: KeyArray, mean: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Wald (inverse Gaussian, unit shape) samples with the given mean (Michael, Schucany and Haas 1976).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      mean: the mean (> 0), a scalar or an array.
      shape: the result's shape (default: `mean`'s shape); `mean` must broadcast to it.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> bool((ember.random.wald(ember.random.key(0), 1.0, (10,)) > 0).all())
    True
    """
    key, dtype, shape, mean = checked_args("wald", key, dtype, shape, mean)
    k1, k2 = split(key)
    mu = _broadcast(mean, shape)
    v = _normal_real("wald", k1, shape, dtype)
    z = uniform_open("wald", k2, shape, dtype, 0.0)
    # The method's root x = mu + mu^2 y / 2 - (mu / 2) sqrt(4 mu y + mu^2 y^2) subtracts two nearly equal
    # terms when t = mu y is large (float16 lost a percent); since (1 + t/2)^2 - (t + t^2/4) = 1 it equals
    # mu / (1 + t/2 + sqrt(t) sqrt(1 + t/4)), which has no cancellation (JAX computes the first form).
    t = ew.mul(mu, ew.mul(v, v))
    root = ew.mul(ew.sqrt(t), ew.sqrt(ew.add(ew.div(t, 4.0), 1.0)))
    x = ew.div(mu, ew.add(ew.add(ew.div(t, 2.0), 1.0), root))
    return ew.select(ew.le(z, ew.div(mu, ew.add(mu, x))), x, ew.div(ew.mul(mu, mu), x))


def triangular(key: KeyArray, left: ArrayLike, mode: ArrayLike, right: ArrayLike, shape: int | Shape | None = None,
               dtype=None) -> Array:  # fmt: skip
    """Triangular samples on [left, right] with peak at `mode`, by inverting the CDF.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      left: the lower limit, a scalar or an array.
      mode: the peak (left <= mode <= right), a scalar or an array.
      right: the upper limit, a scalar or an array.
      shape: the result's shape (default: the parameters' broadcast shape).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> x = ember.random.triangular(ember.random.key(0), 0.0, 1.0, 3.0, (100,))
    >>> bool((x >= 0).all() and (x <= 3).all())
    True
    """
    key, dtype, shape, lo, md, hi = checked_args("triangular", key, dtype, shape, left, mode, right)
    lo, md, hi = (_broadcast(p, shape) for p in (lo, md, hi))
    width = ew.sub(hi, lo)
    u = uniform_open("triangular", key, shape, dtype, 0.0)
    below = ew.add(lo, ew.sqrt(ew.mul(ew.mul(u, width), ew.sub(md, lo))))
    above = ew.sub(hi, ew.sqrt(ew.mul(ew.mul(ew.sub(1.0, u), width), ew.sub(hi, md))))
    return ew.select(ew.lt(u, ew.div(ew.sub(md, lo), width)), below, above)


# --- built on normals and signs ------------------------------------------------------------------


def rademacher(key: KeyArray, shape: int | Shape = (), dtype=None) -> Array:
    """Random signs: -1 or +1 with equal probability.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()).
      dtype: the result's dtype, integer or floating (default int32, int64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype` holding -1 and 1.

    >>> sorted(set(ember.random.rademacher(ember.random.key(0), (20,)).tolist()))
    [-1, 1]
    """
    key = check_key("rademacher", key)
    dtype = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype, "ember.random.rademacher")
    if not (dtypes.is_floating(dtype) or dtypes.is_integer(dtype) and not dtypes.is_unsigned(dtype)):
        raise DTypeError(f"ember.random.rademacher: dtype must be a signed integer or floating dtype, got {dtype}")
    return _rademacher(key, canonical_shape("rademacher", shape), dtype)


def _rademacher(key: Array, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    heads = convert(bernoulli(key, const(0.5, dtypes.default_float()), shape), dtype)
    return ew.sub(ew.mul(heads, const(2, dtype)), const(1, dtype))


def maxwell(key: KeyArray, shape: int | Shape = (), dtype=None) -> Array:
    """Maxwell samples: the length of a standard normal vector in three dimensions.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> bool((ember.random.maxwell(ember.random.key(0), (5,)) > 0).all())
    True
    """
    key, dtype, shape = checked_args("maxwell", key, dtype, shape)
    return _maxwell("maxwell", key, shape, dtype)


def _maxwell(fn: str, key: Array, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    n = _normal_real(fn, key, (*shape, 3), dtype)
    return ew.sqrt(st.reduce_sum(ew.mul(n, n), (len(shape),)))


def double_sided_maxwell(key: KeyArray, loc: ArrayLike, scale: ArrayLike, shape: int | Shape = (), dtype=None) -> Array:
    """Double-sided Maxwell samples: ``loc + scale * s * M``, M Maxwell and s a random sign.

    As in JAX, the result's shape is ``shape + broadcast(loc.shape, scale.shape)``; for
    ``shape=()`` JAX doubles the parameters' shape (``(3, 3)`` for a loc of shape (3,)),
    which ember does not copy: it gives ``(3,)``.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      loc: the location, a scalar or an array.
      scale: the scale, a scalar or an array.
      shape: leading dimensions of the result (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of ``shape + params_shape`` and `dtype`.

    >>> ember.random.double_sided_maxwell(ember.random.key(0), 0.0, 1.0, (4,)).shape
    (4,)
    """
    key, dtype, params, loc, scale = checked_args("double_sided_maxwell", key, dtype, None, loc, scale)
    shape = canonical_shape("double_sided_maxwell", shape) + params
    k_maxwell, k_sign = split(key)
    m = _maxwell("double_sided_maxwell", k_maxwell, shape, dtype)
    s = _rademacher(k_sign, shape, dtype)
    return ew.add(ew.mul(ew.mul(s, m), _broadcast(scale, shape)), _broadcast(loc, shape))

