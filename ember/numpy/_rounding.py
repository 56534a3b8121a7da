"""NumPy's rounding and floating-point decomposition functions, written with ember primitives.

Rounding (floor, ceil, trunc, fix, rint, round, modf) and the functions that take
floats apart bit by bit (copysign, nextafter, spacing, frexp, ldexp). Dtypes
follow `jax.numpy` as in `ember.numpy._math`, whose helpers these share:
integer and bool inputs of floor/ceil/trunc/fix are returned unchanged, rint
moves them to the default float, and complex input is rejected where NumPy
rejects it. The bit-level functions are exact for every value, subnormals,
signed zeros, infinities and NaNs included; their derivatives are given by
custom_jvp rules (bit manipulations have none of their own).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives import bitwise as bw
from ember.core.primitives import elementwise as ew
from ember.errors import DTypeError, InvalidArgumentError
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, full_for, promote_args, promote_inexact
from ember.numpy._math import _back, _const, _no_complex, _real_inexact, _select, _weak_as, _work
from ember.numpy._ufuncs import _doc, floor_divide, isinf
from ember.transforms.custom import custom_jvp

_SIGNED_OF = {1: dtypes.int8, 2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


# --- bits ---------------------------------------------------------------------------------------


def _bits(x: Array) -> Array:
    return ew.bitcast_convert_type_p.bind(x, new_dtype=_SIGNED_OF[x.dtype.itemsize])


def _from_bits(bits: Array, dtype: np.dtype) -> Array:
    return ew.bitcast_convert_type_p.bind(bits, new_dtype=dtype)


def _copysign_bits(magnitude: Array, sign_of: Array) -> Array:
    # Bit by bit, so that zeros, infinities and NaNs keep exactly their payload.
    m, s = _bits(magnitude), _bits(sign_of)
    sign = _const(m, np.iinfo(m.dtype).min)
    return _from_bits(bw.or_p.bind(bw.and_p.bind(m, bw.not_p.bind(sign)), bw.and_p.bind(s, sign)), magnitude.dtype)


# Bit manipulations have no derivative of their own: these rules give the calculus ones.
_copysign = custom_jvp(_copysign_bits)
# d copysign(m, s) / dm = sign(m) sign(s) (as +-1, from the sign bits); s only decides a sign.
_copysign.defjvps(lambda t, ans, m, s: ew.mul_p.bind(t, ew.mul_p.bind(_copysign_bits(_const(m, 1), m),
                                                                     _copysign_bits(_const(m, 1), s))), None)  # fmt: skip


# --- rounding -------------------------------------------------------------------------------------


def _rounding(name: str, prim, summary: str) -> Callable:
    def fn(x: ArrayLike, /) -> Array:
        (x,) = promote_args(name, x)
        if not dtypes.is_inexact(x.dtype):
            return x  # integers and bool are already integral (NumPy 2 keeps their dtype too)
        _no_complex(name, x)
        return prim(x)

    fn.__name__ = fn.__qualname__ = name
    return _doc(fn, summary, "enp.asarray([1.5, -1.5])")


def _trunc(x: Array) -> Array:
    return _select(bw.lt_p.bind(x, _const(x, 0)), ew.ceil_p.bind(x), ew.floor_p.bind(x))


floor = _rounding("floor", ew.floor_p.bind, "The largest integer <= x (integer input is returned unchanged).")
ceil = _rounding("ceil", ew.ceil_p.bind, "The smallest integer >= x (integer input is returned unchanged).")
trunc = _rounding("trunc", _trunc, "x rounded toward zero (integer input is returned unchanged).")
fix = _rounding("fix", _trunc, "x rounded toward zero, as trunc (integer input is returned unchanged).")


def rint(x: ArrayLike, /) -> Array:
    """x rounded to the nearest integer, ties to even; integers and bool become the default float, as in JAX.

    >>> enp.rint(enp.asarray([0.5, 1.5, -2.5]))
    Array([ 0.,  2., -2.], dtype=float32)
    """
    (x,) = promote_inexact("rint", x)
    if dtypes.is_complex(x.dtype):
        return ew.complex_p.bind(rint(ew.real_p.bind(x)), rint(ew.imag_p.bind(x)))
    return ew.round_p.bind(x, rounding_method=ew.ROUND_TO_NEAREST_EVEN)


def round(a: ArrayLike, decimals: int = 0, out: None = None) -> Array:
    """Round to `decimals` decimal places, ties to even (negative `decimals` round to tens, hundreds, ...).

    Integers keep their dtype (exact, also for negative `decimals`); complex
    numbers round both parts. bool is rejected, as by `jax.numpy.round`.

    >>> enp.round(enp.asarray([1.25, 2.5, -0.125]), 1)
    Array([ 1.2,  2.5, -0.1], dtype=float32)
    """
    if out is not None:
        raise InvalidArgumentError("round: the `out` argument is not supported (ember arrays are immutable)")
    decimals = operator.index(decimals)
    (x,) = promote_args("round", a)
    if x.dtype == dtypes.bool_:
        raise DTypeError("round: not defined for bool (as in jax.numpy); convert with x.astype(float) or x.astype(int)")
    if dtypes.is_integer(x.dtype):
        return x if decimals >= 0 else _round_integer(x, -decimals)
    if dtypes.is_complex(x.dtype):
        return ew.complex_p.bind(_round_float(ew.real_p.bind(x), decimals), _round_float(ew.imag_p.bind(x), decimals))
    return _round_float(x, decimals)


around = round


def _round_float(x: Array, decimals: int) -> Array:
    even = ew.ROUND_TO_NEAREST_EVEN
    if decimals == 0:
        return ew.round_p.bind(x, rounding_method=even)
    # As NumPy: scale, round, unscale (dividing by 10**-decimals rather than multiplying by an inexact 0.1...).
    work = _work(x)
    scale = _const(work, 10.0 ** builtins.abs(decimals))
    if decimals > 0:
        out = ew.div_p.bind(ew.round_p.bind(ew.mul_p.bind(work, scale), rounding_method=even), scale)
    else:
        out = ew.mul_p.bind(ew.round_p.bind(ew.div_p.bind(work, scale), rounding_method=even), scale)
    return _back(out, x)


def _round_integer(x: Array, places: int) -> Array:
    # Exact: split x = q * 10**places + r with 0 <= r < 10**places, then round q half to even.
    factor = 10**places
    if factor > np.iinfo(x.dtype).max:
        return full_for("round", x.shape, 0, x.dtype, x)
    f = _const(x, factor)
    q = floor_divide(x, f)
    r = ew.sub_p.bind(x, ew.mul_p.bind(q, f))
    rest = ew.sub_p.bind(f, r)
    odd = bw.ne_p.bind(bw.and_p.bind(q, _const(q, 1)), _const(q, 0))
    up = bw.or_p.bind(bw.gt_p.bind(r, rest), bw.and_p.bind(bw.eq_p.bind(r, rest), odd))
    return ew.mul_p.bind(ew.add_p.bind(q, convert(up, x.dtype)), f)


def modf(x: ArrayLike, /) -> tuple[Array, Array]:
    """(fractional part, integral part), both with the sign of x; modf(inf) = (0, inf).

    >>> enp.modf(enp.asarray([3.5, -2.25]))
    (Array([ 0.5 , -0.25], dtype=float32), Array([ 3., -2.], dtype=float32))
    """
    (x,) = _real_inexact("modf", x)
    whole = _trunc(x)
    frac = _select(isinf(x), _const(x, 0), ew.sub_p.bind(x, whole))
    return _weak_as(_copysign(frac, x), x), whole


# --- floating-point manipulation -----------------------------------------------------------------


def copysign(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """|x1| with the sign bit of x2 (so -0.0 and negative NaNs count as negative).

    >>> enp.copysign(enp.asarray([1.0, -2.0]), -0.0)
    Array([-1., -2.], dtype=float32)
    """
    x1, x2 = _real_inexact("copysign", x1, x2)
    return _weak_as(_copysign(x1, x2), x1)  # the bit operations drop the weak type JAX's result keeps


def nextafter(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The next representable floating-point value after x1 in the direction of x2.

    >>> enp.nextafter(enp.asarray([1.0]), 2.0)
    Array([1.0000001], dtype=float32)
    """
    return ew.nextafter_p.bind(*_real_inexact("nextafter", x1, x2))


def spacing(x: ArrayLike, /) -> Array:
    """The distance from x to the adjacent representable number away from zero (NaN for infinities).

    Signs follow NumPy's conventions per dtype: float16 spacing is always
    positive; bfloat16 (ml_dtypes) is negative for -0.0; float32/64 are
    positive for -0.0.

    >>> enp.spacing(enp.asarray([1.0, -1.0]))
    Array([ 1.1920929e-07, -1.1920929e-07], dtype=float32)
    """
    (x,) = _real_inexact("spacing", x)
    x = _weak_as(x, None)  # JAX's spacing is strong
    inf = _const(x, np.inf)
    if x.dtype == dtypes.float16:
        out = ew.sub_p.bind(ew.nextafter_p.bind(x, inf), x)
        return _select(isinf(x), _const(x, np.nan), out)
    if x.dtype == dtypes.bfloat16:
        toward = _copysign(inf, x)
    else:
        toward = _select(bw.lt_p.bind(x, _const(x, 0)), _const(x, -np.inf), inf)
    return ew.sub_p.bind(ew.nextafter_p.bind(x, toward), x)  # inf - inf gives the NaN for infinities


def _float_info(dtype: np.dtype) -> tuple[int, int, int, int]:
    info = dtypes.finfo(dtype)
    return int(info.nmant), int(info.minexp), int(info.maxexp), (1 << int(info.nexp)) - 1


def _frexp(x: Array) -> tuple[Array, Array]:
    # Bits: x = (-1)**s * 1.m * 2**(E - bias); the mantissa in [0.5, 1) gets the biased exponent bias - 1.
    nmant, minexp, _, mask = _float_info(x.dtype)
    bias = 1 - minexp
    tiny = dtypes.finfo(x.dtype).tiny
    subnormal = bw.lt_p.bind(ew.abs_p.bind(x), _const(x, tiny))
    normal = _select(subnormal, ew.mul_p.bind(x, _const(x, 2.0**nmant)), x)  # exact
    adjust = _select(subnormal, lax.full((), -nmant, dtypes.int32), lax.full((), 0, dtypes.int32))
    bits = _bits(normal)
    biased = bw.and_p.bind(bw.shift_right_logical_p.bind(bits, _const(bits, nmant)), _const(bits, mask))
    exponent = ew.add_p.bind(ew.sub_p.bind(convert(biased, dtypes.int32), lax.full((), bias - 1, dtypes.int32)), adjust)
    mantissa_bits = bw.or_p.bind(bw.and_p.bind(bits, _const(bits, ~(mask << nmant))), _const(bits, (bias - 1) << nmant))
    mantissa = _from_bits(mantissa_bits, x.dtype)
    special = bw.or_p.bind(bw.eq_p.bind(x, _const(x, 0)), bw.not_p.bind(ew.is_finite_p.bind(x)))
    return _select(special, x, mantissa), _select(special, lax.full((), 0, dtypes.int32), exponent)


def frexp(x: ArrayLike, /) -> tuple[Array, Array]:
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1; exponent is int32.

    Exact for every value, subnormals included; 0, inf and NaN give (x, 0).

    >>> enp.frexp(enp.asarray([8.0, 0.3]))
    (Array([0.5, 0.6], dtype=float32), Array([ 4, -1], dtype=int32))
    """
    (x,) = _real_inexact("frexp", x)
    return _frexp_mantissa(x), _frexp(x)[1]


def _power_of_two(k: Array, dtype: np.dtype) -> Array:
    """2.0**k in `dtype` from its bits, for int32 k in the normal exponent range."""
    nmant, minexp, _, _ = _float_info(dtype)
    k = convert(ew.add_p.bind(k, lax.full((), 1 - minexp, dtypes.int32)), _SIGNED_OF[dtype.itemsize])
    return _from_bits(bw.shift_left_p.bind(k, _const(k, nmant)), dtype)


def ldexp(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 * 2**x2 for integer x2, exactly (one correct rounding into the subnormals, inf on overflow).

    >>> enp.ldexp(enp.asarray([1.0, 0.75]), enp.asarray([3, -1]))
    Array([8.   , 0.375], dtype=float32)
    """
    (x,) = _real_inexact("ldexp", x1)
    (e,) = promote_args("ldexp", x2)
    if dtypes.is_inexact(e.dtype):
        raise DTypeError(f"ldexp: the exponent x2 must be an integer array, got {e.dtype} (as in NumPy); use x2.astype(int)")
    nmant, minexp, maxexp, _ = _float_info(x.dtype)
    # Beyond [lowest, highest] the result is 0 or inf whatever the mantissa; clamping first keeps int32 sums exact.
    lowest, highest = minexp - nmant - 2, maxexp + 1
    span = 2 * (highest - lowest)
    if e.dtype == dtypes.bool_:
        e = convert(e, dtypes.int32)
    else:
        info = np.iinfo(e.dtype)
        e = ew.clamp_p.bind(_const(e, builtins.max(-span, info.min)), e, _const(e, builtins.min(span, info.max)))
        e = convert(e, dtypes.int32)
    return convert(_ldexp(x, e), x.dtype, x.weak_type and e.weak_type)


@custom_jvp
def _ldexp(x: Array, e: Array) -> Array:
    """x * 2**e for int32 e within twice the dtype's exponent range, exactly (one rounding)."""
    nmant, minexp, maxexp, _ = _float_info(x.dtype)
    lowest, highest = minexp - nmant - 2, maxexp + 1
    mantissa, exponent = _frexp(x)
    total = ew.add_p.bind(exponent, e)
    total = ew.clamp_p.bind(lax.full((), lowest, dtypes.int32), total, lax.full((), highest, dtypes.int32))
    # mantissa * 2**a is exact (a small), then * 2**b (a normal power) rounds once.
    b = ew.clamp_p.bind(lax.full((), minexp, dtypes.int32), total, lax.full((), maxexp - 1, dtypes.int32))
    a = ew.sub_p.bind(total, b)
    return ew.mul_p.bind(ew.mul_p.bind(mantissa, _power_of_two(a, x.dtype)), _power_of_two(b, x.dtype))


def _times_power_of_two(t: Array, e: Array) -> Array:
    """t * 2**e with multiplications only (so it transposes), in two halves so that each factor stays
    finite for |e| up to twice the exponent range."""
    half = ew.div_p.bind(e, _const(e, 2))
    one = _const(t, 1)
    return ew.mul_p.bind(ew.mul_p.bind(t, _ldexp(one, half)), _ldexp(one, ew.sub_p.bind(e, half)))


_ldexp.defjvps(lambda t, ans, x, e: _times_power_of_two(t, e), None)  # linear in x

# frexp's mantissa is x * 2**-exponent with a piecewise-constant exponent.
_frexp_mantissa = custom_jvp(lambda x: _frexp(x)[0])
_frexp_mantissa.defjvps(lambda t, ans, x: _times_power_of_two(t, ew.neg_p.bind(_frexp(x)[1])))


__all__ = [
    "around",
    "ceil",
    "copysign",
    "fix",
    "floor",
    "frexp",
    "ldexp",
    "modf",
    "nextafter",
    "rint",
    "round",
    "spacing",
    "trunc",
]
