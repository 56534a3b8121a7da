"""ember.scipy.special: SciPy's special functions over ember arrays, written with lax functions.

Bool and integer arguments promote to the default float dtype (as in
`jax.scipy.special`); the gamma-family and error functions are real-valued
and reject complex arguments.
"""

from __future__ import annotations

import math

from ember import lax
from ember.core import dtypes as _dtypes
from ember.core.array import Array
from ember.core.primitives._rules import broadcast_shapes as _broadcast_shapes
from ember.errors import DTypeError
from ember.lax._convert import convert as _convert
from ember.transforms.custom import custom_jvp
from ember.numpy import _core, _shape

ArrayLike = _core.ArrayLike
Axis = int | tuple[int, ...] | None

__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "expit", "gammainc", "gammaincc", "gammaln", "logit",
           "logsumexp", "polygamma", "xlog1py", "xlogy", "zeta"]  # fmt: skip


def _inexact(op: str, *args: ArrayLike, real: bool = False) -> list[Array]:
    xs = _core.promote_inexact(op, *args)
    if len(xs) > 1:
        shape = _broadcast_shapes(f"scipy.special.{op}", *(x.shape for x in xs))
        xs = [_shape.broadcast_to(x, shape) for x in xs]
    if real and _dtypes.is_complex(xs[0].dtype):
        shapes = ", ".join(f"{x.dtype}{list(x.shape)}" for x in xs)
        raise DTypeError(f"scipy.special.{op}: defined for real arguments only, got {shapes}; pass x.real or abs(x)")
    return xs


def _full_like(x: Array, value) -> Array:
    # With x's weak type, as JAX's constants here: xlogy(2.0, 3.0) stays weakly typed; on x's device.
    return _core.full_for("", x.shape, value, x.dtype, x, weak=x.weak_type)


def _isnan(x: Array) -> Array:
    return lax.ne(x, x)


# --- logsumexp ---------------------------------------------------------------------------------------


def logsumexp(a: ArrayLike, axis: Axis = None, b: ArrayLike | None = None, keepdims: bool = False,
              return_sign: bool = False) -> Array | tuple[Array, Array]:  # fmt: skip
    """log(sum(b * exp(a))) over `axis`, computed without overflow.

    The largest (real part of an) element is factored out first:
    log(sum(b * exp(a))) = m + log(sum(b * exp(a - m))), m = max(a). Entries
    with b == 0 drop out; an all -inf slice gives -inf.

    Args:
      a: the exponents (bool and integers promote to the default float).
      axis: None (all axes), an int or a tuple of ints.
      b: optional weights, broadcast against `a`; may be negative.
      keepdims: keep the reduced axes with size 1.
      return_sign: return (log|sum|, sign(sum)) instead of log(sum), which is NaN for a negative sum.

    Returns:
      The reduced array, or the pair (log|sum|, sign) with return_sign.

    >>> import ember.numpy as enp
    >>> logsumexp(enp.asarray([0.0, 0.0])).item()  # log(2)
    0.6931471...
    """
    if b is not None:
        x, weights = _inexact("logsumexp", a, b)
        x = lax.select(lax.ne(weights, _full_like(weights, 0)), x, _full_like(x, -math.inf))
    else:
        (x,) = _inexact("logsumexp", a)
        weights = None
    axes = _core.canonical_axes("logsumexp", axis, x.ndim)
    is_complex = _dtypes.is_complex(x.dtype)
    real = lax.real(x) if is_complex else x
    peak = lax.reduce_max(real, axes)
    peak = lax.select(lax.is_finite(peak), peak, _full_like(peak, 0))  # all -inf (or empty): nothing to factor out
    # As JAX: the shift is a constant to autodiff. Its derivative cancels (log-sum-exp does not move with
    # it); differentiating it anyway costs a max's derivative and leaves 1 - sum(softmax) rounding behind.
    peak = lax.stop_gradient(peak)
    shifted = lax.sub(x, _convert(lax.expand_dims(peak, axes), x.dtype))
    terms = lax.exp(shifted)
    if weights is not None:
        terms = lax.mul(terms, weights)
    total = lax.reduce_sum(terms, axes)
    sign = lax.sign(total)
    if return_sign or not is_complex:
        total = lax.abs(total)
    out = lax.add(lax.log(total), _convert(peak, total.dtype))
    if keepdims:
        out, sign = lax.expand_dims(out, axes), lax.expand_dims(sign, axes)
    if return_sign:
        return out, sign
    if weights is not None and not is_complex:
        out = lax.select(lax.lt(sign, _full_like(sign, 0)), _full_like(out, math.nan), out)
    return out


# --- error and gamma functions ----------------------------------------------------------------------


def erf(x: ArrayLike) -> Array:
    """The error function 2/sqrt(pi) * integral_0^x exp(-t**2) dt.

    >>> import ember.numpy as enp
    >>> erf(enp.asarray([0.0, 1.0]))
    Array([0.       , 0.8427008], dtype=float32)
    """
    return lax.erf(*_inexact("erf", x, real=True))


def erfc(x: ArrayLike) -> Array:
    """The complementary error function 1 - erf(x), accurate for large x.

    >>> import ember.numpy as enp
    >>> erfc(enp.asarray([0.0, 3.0]))
    Array([1.0000000e+00, 2.2090497e-05], dtype=float32)
    """
    return lax.erfc(*_inexact("erfc", x, real=True))


def erfinv(x: ArrayLike) -> Array:
    """The inverse error function on [-1, 1] (+-inf at +-1, NaN outside).

    >>> import ember.numpy as enp
    >>> erfinv(enp.asarray([0.0, 0.5]))
    Array([0.        , 0.47693628], dtype=float32)
    """
    return lax.erf_inv(*_inexact("erfinv", x, real=True))


def gammaln(x: ArrayLike) -> Array:
    """log|Gamma(x)|.

    >>> import ember.numpy as enp
    >>> gammaln(enp.asarray([1.0, 4.5]))
    Array([0.       , 2.4537365], dtype=float32)
    """
    return lax.lgamma(*_inexact("gammaln", x, real=True))


def digamma(x: ArrayLike) -> Array:
    """The digamma function d/dx log Gamma(x).

    >>> import ember.numpy as enp
    >>> digamma(enp.asarray([1.0, 2.0]))
    Array([-0.5772157 ,  0.42278433], dtype=float32)
    """
    return lax.digamma(*_inexact("digamma", x, real=True))


def polygamma(n: ArrayLike, x: ArrayLike) -> Array:
    """The n-th derivative of digamma at x (n a non-negative integer value).

    >>> import ember.numpy as enp
    >>> polygamma(1, enp.asarray([1.0, 2.0]))
    Array([1.644934  , 0.64493406], dtype=float32)
    """
    return lax.polygamma(*_inexact("polygamma", n, x, real=True))


def zeta(x: ArrayLike, q: ArrayLike | None = None) -> Array:
    """The Hurwitz zeta function sum_k (q + k)**-x; Riemann's zeta when q is None.

    >>> import ember.numpy as enp
    >>> zeta(enp.asarray([2.0, 4.0]))
    Array([1.644934 , 1.0823232], dtype=float32)
    """
    return lax.zeta(*_inexact("zeta", x, 1 if q is None else q, real=True))


def gammainc(a: ArrayLike, x: ArrayLike) -> Array:
    """The regularized lower incomplete gamma function P(a, x).

    >>> import ember.numpy as enp
    >>> gammainc(2.0, enp.asarray([1.0, 3.0]))
    Array([0.26424113, 0.8008517 ], dtype=float32)
    """
    return lax.igamma(*_inexact("gammainc", a, x, real=True))


def gammaincc(a: ArrayLike, x: ArrayLike) -> Array:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x).

    >>> import ember.numpy as enp
    >>> gammaincc(2.0, enp.asarray([1.0, 3.0]))
    Array([0.7357589 , 0.19914827], dtype=float32)
    """
    return lax.igammac(*_inexact("gammaincc", a, x, real=True))


# --- logistic and entropy -----------------------------------------------------------------------------


def expit(x: ArrayLike) -> Array:
    """The logistic sigmoid 1 / (1 + exp(-x)).

    >>> import ember.numpy as enp
    >>> expit(enp.asarray([0.0, 2.0]))
    Array([0.5     , 0.880797], dtype=float32)
    """
    return lax.logistic(*_inexact("expit", x))


def logit(x: ArrayLike) -> Array:
    """The inverse of expit: log(x / (1 - x)); -inf at 0, +inf at 1.

    >>> import ember.numpy as enp
    >>> logit(enp.asarray([0.5, 0.9]))
    Array([0.       , 2.1972244], dtype=float32)
    """
    (p,) = _inexact("logit", x)
    return lax.log(lax.div(p, lax.sub(_full_like(p, 1), p)))


def _x_times_log(op: str, log_fn, x: ArrayLike, y: ArrayLike) -> Array:
    # 0 where x == 0, whatever log(y) is, unless y is NaN (as SciPy).
    x, y = _inexact(op, x, y)
    product = lax.mul(x, log_fn(y))
    zero_x = lax.bitwise_and(lax.eq(x, _full_like(x, 0)), lax.bitwise_not(_isnan(y)))
    return lax.select(zero_x, _full_like(product, 0), product)


def xlogy(x: ArrayLike, y: ArrayLike) -> Array:
    """x * log(y), taken as 0 where x == 0 (unless y is NaN).

    >>> import ember.numpy as enp
    >>> xlogy(enp.asarray([0.0, 2.0]), enp.asarray([0.0, 3.0]))
    Array([0.       , 2.1972246], dtype=float32)
    """
    return _x_times_log("xlogy", lax.log, x, y)


def xlog1py(x: ArrayLike, y: ArrayLike) -> Array:
    """x * log1p(y), taken as 0 where x == 0 (unless y is NaN).

    >>> import ember.numpy as enp
    >>> xlog1py(enp.asarray([0.0, 2.0]), enp.asarray([-1.0, 3.0]))
    Array([0.       , 2.7725887], dtype=float32)
    """
    return _x_times_log("xlog1py", lax.log1p, x, y)


def entr(x: ArrayLike) -> Array:
    """The elementwise entropy -x * log(x): 0 at 0, -inf for x < 0, NaN for NaN.

    >>> import ember.numpy as enp
    >>> entr(enp.asarray([0.0, 0.5, 1.0]))
    Array([ 0.       ,  0.3465736, -0.       ], dtype=float32)
    """
    (p,) = _inexact("entr", x, real=True)
    return _entr(p)


def _entr_values(p: Array) -> Array:
    zero = _full_like(p, 0)
    positive = lax.neg(lax.mul(p, lax.log(lax.select(lax.gt(p, zero), p, _full_like(p, 1)))))
    out = lax.select(lax.gt(p, zero), positive, zero)
    out = lax.select(lax.lt(p, zero), _full_like(p, -math.inf), out)
    return lax.select(_isnan(p), p, out)


# JAX's derivative, -(log(x) + 1) everywhere: +inf at 0 (the slope from the right), NaN for x < 0,
# where entr is -inf and has none (JAX's grad gives NaN there), NaN at NaN. One rule for both modes.
_entr = custom_jvp(_entr_values)
_entr.defjvps(lambda t, ans, p: lax.mul(t, lax.neg(lax.add(lax.log(p), _full_like(p, 1)))))

