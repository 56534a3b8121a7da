"""Distributions built on random bits: uniform, normal, randint and friends.

Each follows JAX's algorithm, so a key gives the numbers JAX gives: floats
from the mantissa-bits trick, normals through erf_inv, integers from two
words of bits and a modulus, categorical through the Gumbel-max trick.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtypes
from ember.core.array import Array, from_host
from ember.core.primitives._rules import normalize_axis
from ember.errors import DTypeError
from ember.lax import _elementwise as ew
from ember.lax import _structural as st
from ember.lax._convert import convert
from ember.random._keys import (
    _UINT_OF_BITS,
    KeyArray,
    Shape,
    canonical_shape,
    check_key,
    check_shape,
    const,
    random_bits,
    split,
)

ArrayLike = Array | np.ndarray | float | int

_SQRT2 = math.sqrt(2.0)


def _float_dtype(fn: str, dtype, complex_ok: bool = False) -> np.dtype:
    dtype = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype, f"ember.random.{fn}")
    if not (dtypes.is_floating(dtype) or complex_ok and dtypes.is_complex(dtype)):
        kinds = "a floating or complex dtype" if complex_ok else "a floating dtype (float16, bfloat16, float32, float64)"
        other = "; for integers use ember.random.randint" if dtypes.is_integer(dtype) else ""
        raise DTypeError(f"ember.random.{fn}: dtype must be {kinds}, got {dtype}{other}")
    return dtype


def prepare(fn: str, key, dtype, complex_ok: bool = False) -> tuple[Array, np.dtype]:
    """The checked key and the floating (or complex, with `complex_ok`) result dtype (default float32,
    float64 under x64)."""
    return check_key(fn, key), _float_dtype(fn, dtype, complex_ok)


def _param(fn: str, x, dtype: np.dtype) -> Array:
    """A distribution parameter (scalar or array, concrete or traced) as a non-weak array of `dtype`."""
    return convert(x if isinstance(x, Array) else from_host(x, f"ember.random.{fn}"), dtype)


# --- uniform -----------------------------------------------------------------------------------


def uniform(key: KeyArray, shape: int | Shape = (), dtype=None, minval: ArrayLike = 0.0, maxval: ArrayLike = 1.0) -> Array:
    """Floats drawn uniformly from [minval, maxval).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()); `minval` and `maxval` must broadcast to it.
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).
      minval: the inclusive lower bound, a scalar or an array (default 0).
      maxval: the exclusive upper bound, a scalar or an array (default 1).

    Returns:
      An array of `shape` and `dtype`.

    >>> x = ember.random.uniform(ember.random.key(0), (3,), minval=-1.0, maxval=1.0)
    >>> x.shape, x.dtype
    ((3,), dtype('float32'))
    """
    key, dtype = prepare("uniform", key, dtype)
    shape = canonical_shape("uniform", shape)
    lo, hi = _param("uniform", minval, dtype), _param("uniform", maxval, dtype)
    check_shape("uniform", shape, lo.shape, hi.shape)
    return _uniform("uniform", key, shape, dtype, lo, hi)


def _uniform(fn: str, key: Array, shape: tuple[int, ...], dtype: np.dtype, lo: Array, hi: Array,
             at: Array | None = None) -> Array:  # fmt: skip
    # With `at` (flat positions, see random_bits), the draws at those positions of `shape`, in at's shape.
    nbits = 8 * dtype.itemsize
    nmant = int(dtypes.finfo(dtype).nmant)
    # Fewer than 8 mantissa bits (bfloat16): draw bytes, as JAX does.
    rng_bits = 8 if nmant < 8 else nbits
    uint = _UINT_OF_BITS[nbits]
    bits = random_bits(fn, key, rng_bits, shape, at)
    shape = shape if at is None else at.shape
    if rng_bits != nbits:
        bits = convert(bits, uint)
    # Random mantissa under the exponent of 1.0 gives a float in [1, 2); subtract 1.
    one = const(np.array(1.0, dtype).view(uint), uint)
    mantissa = ew.shift_right_logical(st.reshape(bits, (bits.size,)), const(rng_bits - nmant, uint))
    # (1-d: the bitcast kernel turns 0-d operands into shape (1,).)
    floats = st.reshape(ew.bitcast_convert_type(ew.bitwise_or(mantissa, one), dtype), shape)
    floats = ew.sub(floats, 1.0)
    # max(lo, .): rounding of floats * (hi - lo) + lo must not step below lo.
    return ew.max(lo, ew.add(ew.mul(floats, ew.sub(hi, lo)), lo))


# --- normal family -----------------------------------------------------------------------------


def normal(key: KeyArray, shape: int | Shape = (), dtype=None) -> Array:
    """Standard normal samples (mean 0, variance 1; complex: variance 1 split evenly over the parts).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()).
      dtype: a floating or complex dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.normal(ember.random.key(0), (2, 2)).shape
    (2, 2)
    """
    key, dtype = prepare("normal", key, dtype, complex_ok=True)
    shape = canonical_shape("normal", shape)
    if dtypes.is_complex(dtype):
        real = dtypes.real_dtype(dtype)
        k_re, k_im = split(key)
        re, im = _normal_real("normal", k_re, shape, real), _normal_real("normal", k_im, shape, real)
        return ew.div(ew.complex(re, im), const(_SQRT2, dtype))
    return _normal_real("normal", key, shape, dtype)


def _normal_real(fn: str, key: Array, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    # sqrt(2) * erf_inv(u) with u uniform in (-1, 1): the inverse normal CDF of (u + 1) / 2.
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(fn, key, shape, dtype, const(lo, dtype), const(1.0, dtype))
    return ew.mul(const(_SQRT2, dtype), ew.erf_inv(u))


def truncated_normal(key: KeyArray, lower: ArrayLike, upper: ArrayLike, shape: int | Shape | None = None, dtype=None) -> Array:
    """Standard normal samples conditioned on lying in the open interval (lower, upper).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      lower: the lower bound, a scalar or an array.
      upper: the upper bound, a scalar or an array.
      shape: the result's shape (default: the broadcast shape of `lower` and `upper`).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype` with values strictly between the bounds.

    >>> x = ember.random.truncated_normal(ember.random.key(0), -2.0, 2.0, (1000,))
    >>> bool((x > -2).all() and (x < 2).all())
    True
    """
    key, dtype = prepare("truncated_normal", key, dtype)
    lower, upper = _param("truncated_normal", lower, dtype), _param("truncated_normal", upper, dtype)
    if shape is None:
        shape = np.broadcast_shapes(lower.shape, upper.shape)
    shape = canonical_shape("truncated_normal", shape)
    check_shape("truncated_normal", shape, lower.shape, upper.shape)
    # Invert the normal CDF on the image of the interval: x = sqrt(2) erf_inv(u), u uniform in [erf(a/sqrt2), erf(b/sqrt2)).
    sqrt2 = const(_SQRT2, dtype)
    a, b = ew.erf(ew.div(lower, sqrt2)), ew.erf(ew.div(upper, sqrt2))
    out = ew.mul(sqrt2, ew.erf_inv(_uniform("truncated_normal", key, shape, dtype, a, b)))
    # Rounding (or u landing on a) may reach a bound; clamp into the open interval.
    above = ew.nextafter(lower, const(np.inf, dtype))
    below = ew.nextafter(upper, const(-np.inf, dtype))
    return ew.min(ew.max(out, above), below)


# --- integers and booleans ------------------------------------------------------------------------


def randint(key: KeyArray, shape: int | Shape, minval: ArrayLike, maxval: ArrayLike, dtype=None) -> Array:
    """Integers drawn uniformly from [minval, maxval).

    Two words of random bits are reduced to the span, so the bias for a span
    that is not a power of two is below span * 2**-(2 * bits). Spans up to
    2**(bits/2) give JAX's numbers; for wider spans JAX's reduction wraps
    (and is visibly non-uniform), so ember scales both words instead. Where
    maxval <= minval the result is minval. maxval may exceed the dtype's range
    by one (``randint(k, s, 0, 256, "uint8")`` covers every byte).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape; `minval` and `maxval` must broadcast to it.
      minval: the inclusive lower bound, an int or integer array.
      maxval: the exclusive upper bound, an int or integer array.
      dtype: an integer dtype (default int32, int64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.randint(ember.random.key(0), (4,), 0, 10).dtype
    dtype('int32')
    """
    key = check_key("randint", key)
    dtype = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype, "ember.random.randint")
    if not dtypes.is_integer(dtype):
        raise DTypeError(f"ember.random.randint: dtype must be an integer dtype, got {dtype}; for floats use ember.random.uniform")
    shape = canonical_shape("randint", shape)
    lo, hi = (x if isinstance(x, Array) else from_host(x, "ember.random.randint") for x in (minval, maxval))
    check_shape("randint", shape, lo.shape, hi.shape)
    lo, hi = (x if dtypes.is_integer(x.dtype) else convert(x, dtypes.default_int()) for x in (lo, hi))

    # maxval = dtype max + 1 (or more) means "up to the top of the range".
    hi_out_of_range = ew.gt(hi, _clip_convert(const(np.iinfo(dtype).max, dtype), hi.dtype))
    lo, hi = _clip_convert(lo, dtype), _clip_convert(hi, dtype)

    nbits = 8 * dtype.itemsize
    uint = _UINT_OF_BITS[nbits]
    k1, k2 = split(key)
    higher, lower = random_bits("randint", k1, nbits, shape), random_bits("randint", k2, nbits, shape)

    empty = ew.le(hi, lo)
    span = convert(ew.sub(hi, lo), uint)  # wraps: int8 [-128, 127) has span 255
    span = _where(empty, const(1, uint), span)
    # One past the top: span + 1, which wraps to 0 (= 2**nbits) for the full range.
    span = _where(ew.bitwise_and(hi_out_of_range, ew.bitwise_not(empty)), ew.add(span, const(1, uint)), span)

    # The offset is X mod span for the 2n-bit number X = higher * 2**n + lower. JAX computes it as
    # ((higher mod span) * (2**n mod span) + lower mod span) mod span, which is exact while
    # span <= 2**(n/2); above that its n-bit products wrap and the draw is far from uniform, so
    # there ember takes floor(X * span / 2**2n) instead (Lemire's multiply-shift on both words).
    multiplier = _rem(const(2 ** (nbits // 2), uint), span)
    multiplier = _rem(ew.mul(multiplier, multiplier), span)
    offset = ew.add(ew.mul(_rem(higher, span), multiplier), _rem(lower, span))
    offset = _rem(offset, span)
    high_part, low_part = _mul_wide(higher, span)
    carry = ew.lt(ew.add(low_part, _mul_wide(lower, span)[0]), low_part)
    scaled = ew.add(high_part, convert(carry, uint))
    wide = ew.gt(span, const(2 ** (nbits // 2), uint))
    offset = _where(wide, scaled, offset)
    return ew.add(lo, convert(offset, dtype))


def _clip_convert(x: Array, dtype: np.dtype) -> Array:
    """`x` converted to integer `dtype`, saturating at its range (JAX's _convert_and_clip_integer)."""
    if x.dtype == dtype:
        return convert(x, dtype)
    info, own = np.iinfo(dtype), np.iinfo(x.dtype)
    lo, hi = const(max(info.min, own.min), x.dtype), const(min(info.max, own.max), x.dtype)
    return convert(ew.min(ew.max(x, lo), hi), dtype)


def _where(pred: Array, on_true: Array, on_false: Array) -> Array:
    shape = np.broadcast_shapes(pred.shape, on_true.shape, on_false.shape)
    pred, on_true, on_false = (_broadcast(x, shape) for x in (pred, on_true, on_false))
    return ew.select(pred, on_true, on_false)


def _broadcast(x: Array, shape: tuple[int, ...]) -> Array:
    if x.shape == shape:
        return x
    x = st.reshape(x, (1,) * (len(shape) - x.ndim) + x.shape)
    return st.broadcast_in_dim(x, shape, tuple(range(len(shape))))


def _mul_wide(x: Array, y: Array) -> tuple[Array, Array]:
    """The high and low n-bit words of the 2n-bit product of n-bit unsigned x and y (schoolbook on half-words)."""
    uint = x.dtype
    half = 4 * uint.itemsize
    shift, mask = const(half, uint), const(2**half - 1, uint)
    x0, x1 = ew.bitwise_and(x, mask), ew.shift_right_logical(x, shift)
    y0, y1 = ew.bitwise_and(y, mask), ew.shift_right_logical(y, shift)
    p00, p01, p10, p11 = ew.mul(x0, y0), ew.mul(x0, y1), ew.mul(x1, y0), ew.mul(x1, y1)
    mid = ew.add(ew.add(ew.shift_right_logical(p00, shift), ew.bitwise_and(p01, mask)), ew.bitwise_and(p10, mask))
    high = ew.add(ew.add(p11, ew.shift_right_logical(p01, shift)), ew.add(ew.shift_right_logical(p10, shift), ew.shift_right_logical(mid, shift)))
    return high, ew.mul(x, y)


def _rem(x: Array, span: Array) -> Array:
    # x mod span, with span 0 standing for 2**nbits (so x mod 0 = x, as XLA's rem gives).
    zero = ew.eq(span, const(0, span.dtype))
    safe = _where(zero, const(1, span.dtype), span)
    return _where(zero, x, ew.rem(x, safe))


def bernoulli(key: KeyArray, p: ArrayLike = 0.5, shape: int | Shape | None = None) -> Array:
    """Booleans that are True with probability `p`.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      p: the probability of True, a float or a floating array (default 0.5).
      shape: the result's shape (default: `p`'s shape); `p` must broadcast to it.

    Returns:
      A bool array of `shape`.

    >>> ember.random.bernoulli(ember.random.key(0), 0.3, (5,)).dtype
    dtype('bool')
    """
    key = check_key("bernoulli", key)
    p = p if isinstance(p, Array) else from_host(p, "ember.random.bernoulli")
    if not dtypes.is_floating(p.dtype):
        raise DTypeError(
            f"ember.random.bernoulli: the probability p must have a floating dtype, got shape {p.shape} and dtype {p.dtype}; "
            "pass p as a float, e.g. p.astype('float32')"
        )
    p = convert(p, p.dtype)
    shape = p.shape if shape is None else canonical_shape("bernoulli", shape)
    check_shape("bernoulli", shape, p.shape)
    u = _uniform("bernoulli", key, shape, p.dtype, const(0.0, p.dtype), const(1.0, p.dtype))
    return ew.lt(u, p)


# --- Gumbel and categorical ------------------------------------------------------------------------


def gumbel(key: KeyArray, shape: int | Shape = (), dtype=None) -> Array:
    """Standard Gumbel samples: -log(-log(u)) for u uniform in [tiny, 1).

    Args:
      key: a key from `key`, `split` or `fold_in`.
      shape: the result's shape (default ()).
      dtype: a floating dtype (default float32, float64 with ``enable_x64``).

    Returns:
      An array of `shape` and `dtype`.

    >>> ember.random.gumbel(ember.random.key(0), (3,)).shape
    (3,)
    """
    key, dtype = prepare("gumbel", key, dtype)
    shape = canonical_shape("gumbel", shape)
    return _gumbel("gumbel", key, shape, dtype)


def _gumbel(fn: str, key: Array, shape: tuple[int, ...], dtype: np.dtype) -> Array:
    tiny = const(dtypes.finfo(dtype).tiny, dtype)
    u = _uniform(fn, key, shape, dtype, tiny, const(1.0, dtype))
    return ew.neg(ew.log(ew.neg(ew.log(u))))


def categorical(key: KeyArray, logits: ArrayLike, axis: int = -1, shape: int | Shape | None = None) -> Array:
    """Category indices drawn with probabilities softmax(logits) along `axis`.

    Uses the Gumbel-max trick: argmax(logits + Gumbel noise). A logit of -inf
    is never drawn. Integer logits are taken as floats.

    Args:
      key: a key from `key`, `split` or `fold_in`.
      logits: unnormalised log-probabilities; the other axes are a batch.
      axis: the category axis (default -1).
      shape: the result's shape (default: the batch shape); it must end with
        the batch shape, and extra leading dimensions draw repeatedly.

    Returns:
      Indices of the default integer dtype and shape `shape`.

    >>> import ember.numpy as enp
    >>> ember.random.categorical(ember.random.key(0), enp.log(enp.asarray([0.2, 0.8])), shape=(4,)).shape
    (4,)
    """
    key = check_key("categorical", key)
    logits = logits if isinstance(logits, Array) else from_host(logits, "ember.random.categorical")
    if not dtypes.is_floating(logits.dtype):
        if dtypes.is_complex(logits.dtype):
            raise DTypeError(f"ember.random.categorical: logits must be real, got dtype {logits.dtype}")
        logits = convert(logits, dtypes.default_float())
    if logits.ndim == 0:
        raise DTypeError("ember.random.categorical: logits must have at least one axis (the categories), got a 0-d array")
    axis = normalize_axis("ember.random.categorical", axis, logits.ndim)
    batch_shape = logits.shape[:axis] + logits.shape[axis + 1 :]
    shape = batch_shape if shape is None else canonical_shape("categorical", shape)
    check_shape("categorical", shape, batch_shape)
    prefix = shape[: len(shape) - len(batch_shape)]
    batch = shape[len(prefix) :]
    noise_shape = prefix + batch[:axis] + logits.shape[axis : axis + 1] + batch[axis:]
    noise = _gumbel("categorical", key, noise_shape, logits.dtype)
    scores = ew.add(noise, _broadcast(logits, noise_shape))
    return st.argmax(scores, len(prefix) + axis, dtypes.default_int())
