"""Multivariate samplers: multivariate_normal, orthogonal (Haar) matrices, uniform points in an Lp ball.

As JAX: multivariate_normal is ``mean + factor @ z`` for a factor of the
covariance (Cholesky, or the eigen/singular decomposition), orthogonal is the
QR factor of a Gaussian matrix with the signs of R's diagonal moved into Q,
and ball divides generalized normal draws by their Lp norm plus an
exponential draw (Barthe, Guedon, Mendelson and Naor 2005). The linear
algebra is ``ember.lax.linalg``'s (cholesky, eigh, svd, qr primitives), so the
samples differentiate in `mean` and `cov` and batch under `vmap`.
"""

from __future__ import annotations

import operator

import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host
from ember.errors import ConcretizationError, DTypeError, InvalidArgumentError, ShapeError
from ember.lax import _elementwise as ew
from ember.lax import linalg
from ember.lax import _structural as st
from ember.lax._convert import convert
from ember.random._continuous import _standard_exponential, result_shape
from ember.random._distributions import ArrayLike, _broadcast, _float_dtype, _normal_real, normal, prepare
from ember.random._gamma import _generalized_normal, _positive_power
from ember.random._keys import KeyArray, Shape, canonical_shape, check_key, const, split

__all__ = ["ball", "multivariate_normal", "orthogonal"]

_METHODS = ("cholesky", "eigh", "svd")


def _inexact(fn: str, x, name: str) -> Array:
    x = x if isinstance(x, Array) else from_host(x, f"ember.random.{fn}")
    if dtypes.is_complex(x.dtype):
        raise DTypeError(f"ember.random.{fn}: {name} must be real, got shape {x.shape} and dtype {x.dtype}")
    return x


def multivariate_normal(key: KeyArray, mean: ArrayLike, cov: ArrayLike, shape: int | Shape | None = None, dtype=None,
                        method: str = "cholesky") -> Array:  # fmt: skip
    """Samples of a multivariate normal distribution with the given mean and covariance.

    ``mean + L @ z`` for z standard normal and L a factor of cov (L L^T = cov).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      mean: the mean, of shape ``(..., n)``.
      cov: the covariance, symmetric positive (semi)definite, of shape ``(..., n, n)``;
        its batch dimensions broadcast with the mean's.
      shape: the batch shape of the result (default: the broadcast of ``mean.shape[:-1]``
        and ``cov.shape[:-2]``, which must broadcast to it).
      dtype: a floating dtype (default: the parameters' floating dtype, float32 for integers).
      method: how to factor cov: ``"cholesky"`` (default), or ``"eigh"`` / ``"svd"`` for
        a singular (semidefinite) covariance.

    Returns:
      An array of ``shape + (n,)`` and `dtype`.

    >>> cov = enp.asarray([[2.0, 0.5], [0.5, 1.0]])
    >>> ember.random.multivariate_normal(ember.random.key(0), enp.zeros(2), cov, (5,)).shape
    (5, 2)
    """
    key = check_key("multivariate_normal", key)
    if method not in _METHODS:
        raise InvalidArgumentError(f"ember.random.multivariate_normal: method must be one of {_METHODS}, got {method!r}")
    mean, cov = _inexact("multivariate_normal", mean, "mean"), _inexact("multivariate_normal", cov, "cov")
    if dtype is None:
        floats = [x.dtype for x in (mean, cov) if dtypes.is_floating(x.dtype)]
        dtype = max(floats, key=lambda d: d.itemsize) if floats else None
    dtype = _float_dtype("multivariate_normal", dtype)
    mean, cov = convert(mean, dtype), convert(cov, dtype)
    if mean.ndim < 1:
        raise ShapeError(f"ember.random.multivariate_normal: mean must have shape (..., n), got a 0-d {mean.dtype} array")
    n = mean.shape[-1]
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ShapeError(
            f"ember.random.multivariate_normal: cov must have shape (..., n, n) with n = {n} (the mean's last "
            f"dimension, mean.shape = {mean.shape}), got cov.shape = {cov.shape}"
        )
    batch = result_shape("multivariate_normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method == "cholesky":
        factor = linalg.cholesky(cov)
    elif method == "eigh":
        v, w = linalg.eigh(cov)
        factor = ew.mul(v, st.broadcast_in_dim(ew.sqrt(w), v.shape, (*range(w.ndim - 1), v.ndim - 1)))
    else:
        u, s, _ = linalg.svd(cov)
        factor = ew.mul(u, st.broadcast_in_dim(ew.sqrt(s), u.shape, (*range(s.ndim - 1), u.ndim - 1)))
    z = _normal_real("multivariate_normal", key, (*batch, n), dtype)
    # (factor @ z)_i = sum_j factor_ij z_j, broadcasting the batch dimensions.
    full = (*batch, n, n)
    product = ew.mul(_broadcast(factor, full), st.broadcast_in_dim(z, full, (*range(len(batch)), len(batch) + 1)))
    return ew.add(_broadcast(mean, (*batch, n)), st.reduce_sum(product, (len(batch) + 1,)))


def _static_dim(fn: str, name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"ember.random.{fn}: {name} must be a non-negative int, got {value!r}")
    try:
        d = operator.index(value) if not isinstance(value, Array) else int(value)
    except ConcretizationError:
        raise ConcretizationError(
            f"ember.random.{fn}: {name} sets the result's shape, so it must be a concrete int, not a traced value"
        ) from None
    except TypeError:
        raise InvalidArgumentError(f"ember.random.{fn}: {name} must be a non-negative int, got {type(value).__name__} {value!r}") from None
    if d < 0:
        raise InvalidArgumentError(f"ember.random.{fn}: {name} must be a non-negative int, got {d}")
    return d


def orthogonal(key: KeyArray, n: int, shape: int | Shape = (), dtype=None, m: int | None = None) -> Array:
    """Random matrices with orthonormal columns (or rows), distributed uniformly (Haar measure).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      n: the number of rows, a concrete int.
      shape: batch dimensions in front (default ()).
      dtype: a floating or complex dtype (default float32, float64 with ``enable_x64``);
        complex gives unitary matrices.
      m: the number of columns (default n); for m > n the rows are orthonormal.

    Returns:
      An array of ``shape + (n, m)`` and `dtype`.

    >>> q = ember.random.orthogonal(ember.random.key(0), 3)
    >>> bool(enp.allclose(q @ q.T, enp.eye(3), atol=1e-5))
    True
    """
    key, dtype = prepare("orthogonal", key, dtype, complex_ok=True)
    shape = canonical_shape("orthogonal", shape)
    n = _static_dim("orthogonal", "n", n)
    m = n if m is None else _static_dim("orthogonal", "m", m)
    rows, cols = max(n, m), min(n, m)
    z = normal(key, (*shape, rows, cols), dtype)
    if z.size == 0:
        return st.reshape(z, (*shape, n, m)) if n >= m else st.transpose(z, (*range(len(shape)), len(shape) + 1, len(shape)))
    q, r = linalg.qr(z, full_matrices=False)
    # Q R with R's diagonal made positive is unique, so the result does not depend on the QR routine's signs.
    eye = st.broadcast_in_dim(const(np.eye(cols), dtype), r.shape, (len(shape), len(shape) + 1))
    diag = st.reduce_sum(ew.mul(r, eye), (len(shape) + 1,))
    phase = ew.div(diag, convert(ew.abs(diag), dtype)) if dtypes.is_complex(dtype) else ew.sign(diag)
    q = ew.mul(q, st.broadcast_in_dim(phase, q.shape, (*range(len(shape)), len(shape) + 1)))
    return q if n >= m else st.transpose(q, (*range(len(shape)), len(shape) + 1, len(shape)))


def ball(key: KeyArray, d: int, p: float = 2, shape: int | Shape = (), dtype=None) -> Array:
    """Points drawn uniformly from the unit Lp ball in d dimensions.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      d: the dimension, a concrete int.
      p: the norm's exponent (> 0; default 2), a concrete number.
      shape: batch dimensions in front (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of ``shape + (d,)`` and `dtype` whose rows have Lp norm at most 1.

    >>> x = ember.random.ball(ember.random.key(0), 3, shape=(100,))
    >>> x.shape, bool((enp.linalg.norm(x, axis=-1) <= 1).all())
    ((100, 3), True)
    """
    key, dtype = prepare("ball", key, dtype)
    d = _static_dim("ball", "d", d)
    p = _positive_power("ball", p)
    shape = canonical_shape("ball", shape)
    k1, k2 = split(key)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = _standard_exponential("ball", k2, shape, dtype)
    norm = ew.pow(ew.add(st.reduce_sum(ew.pow(ew.abs(g), p), (len(shape),)), e), 1.0 / p)
    return ew.div(g, st.broadcast_in_dim(norm, (*shape, d), tuple(range(len(shape)))))
