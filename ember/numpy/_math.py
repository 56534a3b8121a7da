"""NumPy's remaining elementwise math functions, written with ember primitives.

Trigonometric, hyperbolic, exponential and logarithmic functions, NaN-aware
extrema, integer number theory (gcd, lcm) and classification; rounding and the
floating-point decompositions are in `ember.numpy._rounding`, which shares this
module's helpers.

Dtypes follow `jax.numpy`: operands promote on JAX's lattice; integer and
bool inputs of transcendental functions move to the default float dtype;
integer-only operations move bool to int32, as JAX does. A dtype NumPy
rejects is rejected here too, with an error naming the function. float16
and bfloat16 formulas of several steps run in float32 and round once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ember import lax
from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives import bitwise as bw
from ember.core.primitives import elementwise as ew
from ember.core.transfer import constant
from ember.errors import DTypeError
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, full_for, promote_args, promote_inexact
from ember.numpy._ufuncs import _broadcast_all, _doc, _numeric, isinf, isnan

_HALF = (dtypes.float16, dtypes.bfloat16)
_UNSIGNED_OF = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}


# --- helpers ------------------------------------------------------------------------------------


def _const(like: Array, value) -> Array:
    """A 0-d constant of `like`'s dtype, weak when `like` is (so it never promotes anything), on its device."""
    return constant(np.asarray(value, dtype=like.dtype), like.weak_type and like.dtype != dtypes.bool_, like._place)


def _select(pred: Array, on_true: Array, on_false: Array) -> Array:
    pred, on_true, on_false = _broadcast_all(pred, on_true, on_false)
    return ew.select_n_p.bind(pred, on_false, on_true)


def _weak_as(out: Array, like: Array | None) -> Array:
    """`out` with `like`'s weak type (strong for None)."""
    weak = like is not None and like.weak_type
    return out if out.weak_type == weak else convert(out, out.dtype, weak)


def _falses(x: Array, value: bool = False, weak: bool = False) -> Array:
    return full_for("", x.shape, value, dtypes.bool_, x, weak=weak)


def _no_complex(op: str, x: Array) -> None:
    if dtypes.is_complex(x.dtype):
        raise DTypeError(
            f"{op}: not defined for complex input ({x.dtype}), as in NumPy; "
            "apply it to enp.real(x) and enp.imag(x), or to enp.abs(x)"
        )


def _real_inexact(op: str, *args) -> list[Array]:
    """Promote to a floating dtype (integers and bool to the default float); reject complex."""
    xs = promote_inexact(op, *args)
    _no_complex(op, xs[0])
    return xs


def _integers_only(op: str, x: Array) -> None:
    if not dtypes.is_integer(x.dtype):
        raise DTypeError(f"{op}: defined for integer inputs only, got {x.dtype} (as in NumPy); convert with x.astype(int)")


def _work(x: Array) -> Array:
    """float16 and bfloat16 computed in float32, rounded once at the end by `_back`."""
    return convert(x, dtypes.float32) if x.dtype in _HALF else x


def _back(y: Array, like: Array) -> Array:
    return convert(y, like.dtype, like.weak_type) if y.dtype != like.dtype else y


def _unary(name: str, prim, summary: str, example: str = "enp.asarray([0.5, 1.0])", real_only: bool = False) -> Callable:
    def fn(x: ArrayLike, /) -> Array:
        (x,) = _real_inexact(name, x) if real_only else promote_inexact(name, x)
        return prim.bind(x)

    fn.__name__ = fn.__qualname__ = name
    return _doc(fn, summary, example)


# --- trigonometric, hyperbolic, exponential and logarithmic ----------------------------------------

tan = _unary("tan", ew.tan_p, "The tangent, elementwise.")
arcsin = _unary("arcsin", ew.asin_p, "The inverse sine, in [-pi/2, pi/2] (NaN outside [-1, 1] for real x).")
arccos = _unary("arccos", ew.acos_p, "The inverse cosine, in [0, pi] (NaN outside [-1, 1] for real x).")
arctan = _unary("arctan", ew.atan_p, "The inverse tangent, in [-pi/2, pi/2].")
sinh = _unary("sinh", ew.sinh_p, "The hyperbolic sine, elementwise.")
cosh = _unary("cosh", ew.cosh_p, "The hyperbolic cosine, elementwise.")
arcsinh = _unary("arcsinh", ew.asinh_p, "The inverse hyperbolic sine, elementwise.")
arccosh = _unary("arccosh", ew.acosh_p, "The inverse hyperbolic cosine (NaN below 1 for real x).", "enp.asarray([1.0, 2.0])")
arctanh = _unary("arctanh", ew.atanh_p, "The inverse hyperbolic tangent (NaN outside [-1, 1] for real x).")
exp2 = _unary("exp2", ew.exp2_p, "2 ** x, elementwise.")
expm1 = _unary("expm1", ew.expm1_p, "exp(x) - 1, accurate for small x.", "enp.asarray([0.0, 1e-8])")
log1p = _unary("log1p", ew.log1p_p, "log(1 + x), accurate for small x.", "enp.asarray([0.0, 1e-8])")
cbrt = _unary("cbrt", ew.cbrt_p, "The real cube root (negative for negative x).", "enp.asarray([8.0, -27.0])", real_only=True)
fabs = _unary("fabs", ew.abs_p, "|x| as a float (complex input is rejected, as in NumPy).", "enp.asarray([-1, 2])", real_only=True)
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh


def _scaled_log(name: str, base: float) -> Callable:
    def fn(x: ArrayLike, /) -> Array:
        (x,) = promote_inexact(name, x)
        log = ew.log_p.bind(_work(x))
        if dtypes.is_complex(x.dtype):  # scale both parts, as NumPy (a complex division would turn -inf into NaN)
            re, im = ew.real_p.bind(log), ew.imag_p.bind(log)
            return ew.complex_p.bind(ew.mul_p.bind(re, _const(re, 1 / np.log(base))), ew.mul_p.bind(im, _const(im, 1 / np.log(base))))
        scale = constant(np.asarray(1 / np.log(base), log.dtype), False, log._place)  # strong, as JAX's: log2(2.0) is strong
        return _back(ew.mul_p.bind(log, scale), x)

    fn.__name__ = fn.__qualname__ = name
    return _doc(fn, f"The base-{base:g} logarithm, elementwise.", "enp.asarray([1.0, 8.0])")


log2 = _scaled_log("log2", 2.0)
log10 = _scaled_log("log10", 10.0)


def _angle_scale(name: str, factor: float, summary: str) -> Callable:
    def fn(x: ArrayLike, /) -> Array:
        (x,) = _real_inexact(name, x)
        return ew.mul_p.bind(x, _const(x, factor))

    fn.__name__ = fn.__qualname__ = name
    return _doc(fn, summary, "enp.asarray([90.0, 180.0])" if name.startswith("deg") else "enp.asarray([1.0, 3.14159])")


deg2rad = _angle_scale("deg2rad", np.pi / 180, "Degrees to radians: x * pi / 180.")
rad2deg = _angle_scale("rad2deg", 180 / np.pi, "Radians to degrees: x * 180 / pi.")
radians, degrees = deg2rad, rad2deg


def arctan2(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The angle of the point (x2, x1) in (-pi, pi]: arctan(x1 / x2) in the right quadrant.

    >>> enp.arctan2(enp.asarray([1.0, -1.0]), -1.0)
    Array([ 2.3561945, -2.3561945], dtype=float32)
    """
    return ew.atan2_p.bind(*_real_inexact("arctan2", x1, x2))


atan2 = arctan2


def hypot(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """sqrt(x1**2 + x2**2) without overflow or underflow in the squares.

    >>> enp.hypot(enp.asarray([3.0, 1e30]), enp.asarray([4.0, 1e30]))
    Array([5.0000000e+00, 1.4142135e+30], dtype=float32)
    """
    x1, x2 = _real_inexact("hypot", x1, x2)
    a, b = ew.abs_p.bind(_work(x1)), ew.abs_p.bind(_work(x2))
    big, small = ew.max_p.bind(a, b), ew.min_p.bind(a, b)  # max propagates NaN
    zero, one, inf = _const(big, 0), _const(big, 1), _const(big, np.inf)
    is_zero = bw.eq_p.bind(big, zero)
    # big * sqrt(1 + (small / big)**2); the ratio is at most 1, so nothing overflows.
    ratio = ew.div_p.bind(small, _select(is_zero, one, big))
    out = ew.mul_p.bind(big, ew.sqrt_p.bind(ew.add_p.bind(one, ew.mul_p.bind(ratio, ratio))))
    out = _select(bw.or_p.bind(bw.eq_p.bind(a, inf), bw.eq_p.bind(b, inf)), inf, out)  # hypot(inf, nan) = inf
    return _back(out, x1)


def _logaddexp(name: str, exp_prim, log_scale: float | None) -> Callable:
    def fn(x1: ArrayLike, x2: ArrayLike, /) -> Array:
        x1, x2 = _real_inexact(name, x1, x2)
        a, b = _work(x1), _work(x2)
        delta = ew.sub_p.bind(a, b)
        # max + log1p(exp(-|x1 - x2|)); a NaN delta means NaN input or equal infinities: then x1 + x2 is right.
        tail = ew.log1p_p.bind(exp_prim.bind(ew.neg_p.bind(ew.abs_p.bind(delta))))
        if log_scale is not None:
            tail = ew.mul_p.bind(tail, _const(tail, log_scale))
        out = ew.add_p.bind(ew.max_p.bind(a, b), tail)
        return _back(_select(bw.ne_p.bind(delta, delta), ew.add_p.bind(a, b), out), x1)

    fn.__name__ = fn.__qualname__ = name
    base = "2**" if log_scale else "exp("
    summary = f"log{'2' if log_scale else ''}({base}x1{')' if not log_scale else ''} + {base}x2{')' if not log_scale else ''}), without overflow."
    return _doc(fn, summary, "enp.asarray([1.0, 1000.0]), 1000.0")


logaddexp = _logaddexp("logaddexp", ew.exp_p, None)
logaddexp2 = _logaddexp("logaddexp2", ew.exp2_p, 1 / np.log(2))


def float_power(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 ** x2 computed in the widest enabled float: float64 with x64 on, float32 off (complex stays complex).

    >>> enp.float_power(enp.asarray([2, 3]), -1)
    Array([0.5       , 0.33333334], dtype=float32)
    """
    x1, x2 = promote_inexact("float_power", x1, x2)
    target = dtypes.default_complex() if dtypes.is_complex(x1.dtype) else dtypes.default_float()
    return ew.pow_p.bind(convert(x1, target, x1.weak_type), convert(x2, target, x2.weak_type))


def sinc(x: ArrayLike, /) -> Array:
    """The normalized sinc function sin(pi x) / (pi x), with sinc(0) = 1.

    >>> enp.sinc(enp.asarray([0.0, 0.5, 1.0]))
    Array([ 1.0000000e+00,  6.3661975e-01, -2.7827534e-08], dtype=float32)
    """
    (x,) = promote_inexact("sinc", x)
    work = _work(x)
    one = _const(work, 1)
    is_zero = bw.eq_p.bind(work, _const(work, 0))
    pi_x = _select(is_zero, one, ew.mul_p.bind(_const(work, np.pi), work))
    return _back(_select(is_zero, one, ew.div_p.bind(ew.sin_p.bind(pi_x), pi_x)), x)


# --- extrema, remainders and steps ---------------------------------------------------------------


def _nan_ignoring(name: str, prim, strict) -> Callable:
    def fn(x1: ArrayLike, x2: ArrayLike, /) -> Array:
        x1, x2 = promote_args(name, x1, x2)
        if not dtypes.is_inexact(x1.dtype):
            return prim.bind(x1, x2)
        if dtypes.is_complex(x1.dtype):
            r1, i1, r2, i2 = (part.bind(v) for v in (x1, x2) for part in (ew.real_p, ew.imag_p))
            # Lexicographic on (real, imaginary), as NumPy orders complex numbers.
            first = bw.or_p.bind(strict.bind(r1, r2), bw.and_p.bind(bw.eq_p.bind(r1, r2), strict.bind(i1, i2)))
        else:
            first = strict.bind(x1, x2)
        keep = bw.or_p.bind(bw.and_p.bind(first, bw.not_p.bind(isnan(x1))), isnan(x2))
        return _select(keep, x1, x2)

    fn.__name__ = fn.__qualname__ = name
    word = "maximum" if name == "fmax" else "minimum"
    return _doc(fn, f"The elementwise {word}, ignoring NaN (NaN only where both are NaN).", "enp.asarray([1.0, float('nan')]), 0.0")


fmax = _nan_ignoring("fmax", ew.max_p, bw.gt_p)
fmin = _nan_ignoring("fmin", ew.min_p, bw.lt_p)


def fmod(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The C remainder: x1 - trunc(x1 / x2) * x2, with the sign of x1 (integer x % 0 gives 0).

    >>> enp.fmod(enp.asarray([7, -7]), 3)
    Array([ 1, -1], dtype=int32)
    """
    x1, x2 = _numeric("fmod", x1, x2)
    _no_complex("fmod", x1)
    if dtypes.is_integer(x1.dtype):
        x2 = _select(bw.eq_p.bind(x2, _const(x2, 0)), _const(x2, 1), x2)
    return ew.rem_p.bind(x1, x2)


def heaviside(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The Heaviside step: 0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0 (NaN stays NaN).

    >>> enp.heaviside(enp.asarray([-1.0, 0.0, 2.0]), 0.5)
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    x1, x2 = _real_inexact("heaviside", x1, x2)
    zero, one = _const(x1, 0), _const(x1, 1)
    out = _select(bw.lt_p.bind(x1, zero), zero, _select(bw.gt_p.bind(x1, zero), one, x2))
    return _select(isnan(x1), x1, out)


def sign(x: ArrayLike, /) -> Array:
    """-1, 0 or 1 by the sign of x (NaN for NaN); x / |x| for complex x, as NumPy 2.

    >>> enp.sign(enp.asarray([-2.0, 0.0, 3.0]))
    Array([-1.,  0.,  1.], dtype=float32)
    """
    (x,) = promote_args("sign", x)
    if x.dtype == dtypes.bool_:
        raise DTypeError("sign: not defined for bool (as in NumPy); convert with x.astype(int)")
    return ew.sign_p.bind(x)


def square(x: ArrayLike, /) -> Array:
    """x * x, elementwise (bool becomes int32, as in JAX).

    >>> enp.square(enp.asarray([2, -3]))
    Array([4, 9], dtype=int32)
    """
    return ew.square_p.bind(*_numeric("square", x))


def reciprocal(x: ArrayLike, /) -> Array:
    """1 / x in x's dtype; for integers the truncated quotient, as NumPy (1 // 0 gives 0 here).

    >>> enp.reciprocal(enp.asarray([2.0, 0.5]))
    Array([0.5, 2. ], dtype=float32)
    """
    (x,) = _numeric("reciprocal", x)
    if dtypes.is_complex(x.dtype):
        return _complex_reciprocal(x)
    if dtypes.is_floating(x.dtype):
        return ew.div_p.bind(_const(x, 1), x)
    # 1 / x truncates to 0 unless |x| == 1.
    out = convert(bw.eq_p.bind(x, _const(x, 1)), x.dtype)
    if dtypes.is_signed(x.dtype):
        out = ew.sub_p.bind(out, convert(bw.eq_p.bind(x, _const(x, -1)), x.dtype))
    return out


def _complex_reciprocal(z: Array) -> Array:
    # NumPy's algorithm (Smith's, scaled by the larger part), so that 1 / 0j is NaN as in NumPy, not inf.
    re, im = ew.real_p.bind(z), ew.imag_p.bind(z)
    one = _const(re, 1)
    by_real = bw.le_p.bind(ew.abs_p.bind(im), ew.abs_p.bind(re))
    r1 = ew.div_p.bind(im, re)
    d1 = ew.add_p.bind(re, ew.mul_p.bind(im, r1))
    r2 = ew.div_p.bind(re, im)
    d2 = ew.add_p.bind(ew.mul_p.bind(re, r2), im)
    out_re = _select(by_real, ew.div_p.bind(one, d1), ew.div_p.bind(r2, d2))
    out_im = _select(by_real, ew.neg_p.bind(ew.div_p.bind(r1, d1)), ew.neg_p.bind(ew.div_p.bind(one, d2)))
    return ew.complex_p.bind(out_re, out_im)


# --- integers ------------------------------------------------------------------------------------


def _magnitude(x: Array) -> Array:
    """|x| as the unsigned integer of the same width (|int8(-128)| is 128)."""
    unsigned = _UNSIGNED_OF[x.dtype.itemsize]
    return convert(ew.abs_p.bind(x) if dtypes.is_signed(x.dtype) else x, unsigned)


def _gcd_unsigned(a: Array, b: Array) -> Array:
    # Euclid on all lanes at once; Lame's bound gives at most ~1.44 * bits + 2 steps.
    a, b = _broadcast_all(a, b)
    zero, one = _const(a, 0), _const(a, 1)
    for _ in range(8 * a.dtype.itemsize * 3 // 2 + 2):
        nonzero = bw.ne_p.bind(b, zero)
        r = ew.rem_p.bind(a, _select(nonzero, b, one))
        a, b = _select(nonzero, b, a), _select(nonzero, r, zero)
    return a


def gcd(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The greatest common divisor of |x1| and |x2| (gcd(0, 0) = 0), for integers.

    >>> enp.gcd(enp.asarray([12, 20]), 8)
    Array([4, 4], dtype=int32)
    """
    x1, x2 = promote_args("gcd", x1, x2)
    _integers_only("gcd", x1)
    return convert(_gcd_unsigned(_magnitude(x1), _magnitude(x2)), x1.dtype, x1.weak_type)  # weak as JAX's, for ints


def lcm(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """The least common multiple of |x1| and |x2| (0 when either is 0), for integers.

    >>> enp.lcm(enp.asarray([4, 6]), 10)
    Array([20, 30], dtype=int32)
    """
    x1, x2 = promote_args("lcm", x1, x2)
    _integers_only("lcm", x1)
    a, b = _magnitude(x1), _magnitude(x2)
    g = _gcd_unsigned(a, b)
    zero = _const(g, 0)
    is_zero = bw.eq_p.bind(g, zero)
    out = ew.mul_p.bind(ew.div_p.bind(a, _select(is_zero, _const(g, 1), g)), b)  # a / gcd * b, wrapping as NumPy
    return convert(_select(is_zero, zero, out), x1.dtype, x1.weak_type)


def bitwise_count(x: ArrayLike, /) -> Array:
    """The number of 1 bits in |x|, as uint8.

    >>> enp.bitwise_count(enp.asarray([7, -8]))
    Array([3, 1], dtype=uint8)
    """
    (x,) = promote_args("bitwise_count", x)
    if x.dtype == dtypes.bool_:
        return convert(x, dtypes.uint8)
    _integers_only("bitwise_count", x)
    return convert(bw.population_count_p.bind(_magnitude(x)), dtypes.uint8)


# --- classification and complex numbers -----------------------------------------------------------


def _isinf_signed(name: str, value: float) -> Callable:
    def fn(x: ArrayLike, /) -> Array:
        (x,) = promote_args(name, x)
        _no_complex(name, x)
        if not dtypes.is_floating(x.dtype):
            return _falses(x)
        return bw.eq_p.bind(x, full_for(name, (), value, x.dtype, x))  # a strong constant: JAX's isposinf(2.0) is strong

    fn.__name__ = fn.__qualname__ = name
    return _doc(fn, f"Whether x is {'+' if value > 0 else '-'}inf (always False for integers).", "enp.asarray([1.0, float('inf'), -float('inf')])")


isposinf = _isinf_signed("isposinf", np.inf)
isneginf = _isinf_signed("isneginf", -np.inf)


def iscomplex(x: ArrayLike, /) -> Array:
    """Whether the imaginary part is nonzero (False everywhere for real dtypes).

    >>> enp.iscomplex(enp.asarray([1 + 1j, 2 + 0j]))
    Array([ True, False], dtype=bool)
    """
    (x,) = promote_args("iscomplex", x)
    if not dtypes.is_complex(x.dtype):
        return _falses(x, False, x.weak_type)  # JAX compares weak zeros: weak for a Python scalar
    im = ew.imag_p.bind(x)
    return bw.ne_p.bind(im, _const(im, 0))


def isreal(x: ArrayLike, /) -> Array:
    """Whether the imaginary part is zero (True everywhere for real dtypes).

    >>> enp.isreal(enp.asarray([1 + 1j, 2 + 0j]))
    Array([False,  True], dtype=bool)
    """
    (x,) = promote_args("isreal", x)
    if not dtypes.is_complex(x.dtype):
        return _falses(x, True, x.weak_type)
    im = ew.imag_p.bind(x)
    return bw.eq_p.bind(im, _const(im, 0))


def isclose(a: ArrayLike, b: ArrayLike, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Array:
    """|a - b| <= atol + rtol * |b|, elementwise; infinities are close only to themselves.

    >>> enp.isclose(enp.asarray([1.0, 1.1]), 1.000001)
    Array([ True, False], dtype=bool)
    """
    x, y = promote_inexact("isclose", a, b)
    wx, wy = _work(x), _work(y)
    # inf - inf would warn (NumPy's isclose does not); infinities are decided below anyway.
    diff = ew.abs_p.bind(ew.sub_p.bind(wx, _select(isinf(wx), _const(wy, 0), wy)))
    scale = ew.abs_p.bind(wy)
    close = bw.le_p.bind(diff, ew.add_p.bind(_const(scale, atol), ew.mul_p.bind(_const(scale, rtol), scale)))
    x_inf, y_inf = isinf(x), isinf(y)
    # Infinities: close exactly when equal; NaN: never, unless equal_nan and both are NaN.
    close = bw.and_p.bind(close, bw.not_p.bind(bw.or_p.bind(x_inf, y_inf)))
    close = bw.or_p.bind(close, bw.and_p.bind(bw.and_p.bind(x_inf, y_inf), bw.eq_p.bind(x, y)))
    x_nan, y_nan = isnan(x), isnan(y)
    close = bw.and_p.bind(close, bw.not_p.bind(bw.or_p.bind(x_nan, y_nan)))
    if equal_nan:
        close = bw.or_p.bind(close, bw.and_p.bind(x_nan, y_nan))
    return close


def angle(z: ArrayLike, deg: bool = False) -> Array:
    """The counterclockwise angle of z from the positive real axis, in radians (degrees with deg=True).

    >>> enp.angle(enp.asarray([1j, -1.0]))
    Array([1.5707964, 3.1415927], dtype=float32)
    """
    (z,) = promote_inexact("angle", z)
    if dtypes.is_complex(z.dtype):
        re, im = ew.real_p.bind(z), ew.imag_p.bind(z)
    else:
        re, im = z, constant(np.zeros((), z.dtype), False, z._place)  # strong, as JAX's angle of a real number
    out = ew.atan2_p.bind(*_broadcast_all(_work(im), _work(re)))
    if deg:
        out = ew.mul_p.bind(out, _const(out, 180 / np.pi))
    return _back(out, re)


def nan_to_num(x: ArrayLike, copy: bool = True, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Array:
    """NaN -> `nan`, +inf -> `posinf`, -inf -> `neginf` (defaults: 0 and the dtype's largest finite values).

    >>> enp.nan_to_num(enp.asarray([float("nan"), float("inf"), 1.0]))
    Array([0.0000000e+00, 3.4028235e+38, 1.0000000e+00], dtype=float32)
    """
    del copy  # ember arrays are immutable
    (x,) = promote_args("nan_to_num", x)
    if not dtypes.is_inexact(x.dtype):
        return x
    if dtypes.is_complex(x.dtype):
        parts = (nan_to_num(part.bind(x), nan=nan, posinf=posinf, neginf=neginf) for part in (ew.real_p, ew.imag_p))
        return ew.complex_p.bind(*parts)
    info = dtypes.finfo(x.dtype)
    x = lax.convert_element_type(x, x.dtype) if x.weak_type else x  # JAX's result is strong
    out = _select(isnan(x), _const(x, nan), x)
    out = _select(bw.eq_p.bind(out, _const(x, np.inf)), _const(x, info.max if posinf is None else posinf), out)
    return _select(bw.eq_p.bind(out, _const(x, -np.inf)), _const(x, info.min if neginf is None else neginf), out)


__all__ = [
    "acos",
    "acosh",
    "angle",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_count",
    "cbrt",
    "cosh",
    "deg2rad",
    "degrees",
    "exp2",
    "expm1",
    "fabs",
    "float_power",
    "fmax",
    "fmin",
    "fmod",
    "gcd",
    "heaviside",
    "hypot",
    "isclose",
    "iscomplex",
    "isneginf",
    "isposinf",
    "isreal",
    "lcm",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logaddexp2",
    "nan_to_num",
    "rad2deg",
    "radians",
    "reciprocal",
    "sign",
    "sinc",
    "sinh",
    "square",
    "tan",
]  # fmt: skip
