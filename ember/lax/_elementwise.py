"""lax's elementwise functions: thin wrappers that bind one primitive each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.core import dtypes
from ember.core.array import Array
from ember.core.primitives import bitwise as bw
from ember.core.primitives import elementwise as ew
from ember.core.primitives import special as sp
from ember.core.pytree import tree_map
from ember.lax import _fastlane
from ember.lax._convert import convert, operands

ArrayLike = Array | float | int | bool | complex

# name: (primitive, what it computes, example operands)
_UNARY = {
    "neg": (ew.neg_p, "-x", "[1.0, -2.0]"),
    "sign": (ew.sign_p, "the sign of x (-1, 0 or 1; x/|x| for complex)", "[-2.0, 0.0, 3.0]"),
    "floor": (ew.floor_p, "the largest integer <= x", "[1.5, -1.5]"),
    "ceil": (ew.ceil_p, "the smallest integer >= x", "[1.5, -1.5]"),
    "is_finite": (ew.is_finite_p, "whether x is neither infinite nor NaN", "[1.0, float('inf')]"),
    "exp": (ew.exp_p, "e**x", "[0.0, 1.0]"),
    "exp2": (ew.exp2_p, "2**x", "[0.0, 3.0]"),
    "log": (ew.log_p, "the natural logarithm", "[1.0, 2.0]"),
    "log1p": (ew.log1p_p, "log(1 + x), accurate for small x", "[0.0, 1e-8]"),
    "expm1": (ew.expm1_p, "exp(x) - 1, accurate for small x", "[0.0, 1e-8]"),
    "tanh": (ew.tanh_p, "the hyperbolic tangent", "[0.0, 1.0]"),
    "logistic": (ew.logistic_p, "1 / (1 + exp(-x)), the sigmoid", "[0.0, 2.0]"),
    "sin": (ew.sin_p, "the sine", "[0.0, 1.0]"),
    "cos": (ew.cos_p, "the cosine", "[0.0, 1.0]"),
    "tan": (ew.tan_p, "the tangent", "[0.0, 1.0]"),
    "asin": (ew.asin_p, "the inverse sine", "[0.0, 0.5]"),
    "acos": (ew.acos_p, "the inverse cosine", "[0.0, 0.5]"),
    "atan": (ew.atan_p, "the inverse tangent", "[0.0, 1.0]"),
    "sinh": (ew.sinh_p, "the hyperbolic sine", "[0.0, 1.0]"),
    "cosh": (ew.cosh_p, "the hyperbolic cosine", "[0.0, 1.0]"),
    "asinh": (ew.asinh_p, "the inverse hyperbolic sine", "[0.0, 1.0]"),
    "acosh": (ew.acosh_p, "the inverse hyperbolic cosine", "[1.0, 2.0]"),
    "atanh": (ew.atanh_p, "the inverse hyperbolic tangent", "[0.0, 0.5]"),
    "sqrt": (ew.sqrt_p, "the square root", "[4.0, 2.0]"),
    "rsqrt": (ew.rsqrt_p, "1 / sqrt(x)", "[4.0, 1.0]"),
    "cbrt": (ew.cbrt_p, "the real cube root", "[8.0, -27.0]"),
    "square": (ew.square_p, "x * x", "[3.0, -2.0]"),
    "abs": (ew.abs_p, "|x| (the modulus for complex x, as a real array)", "[-1.5, 2.0]"),
    "real": (ew.real_p, "the real part of a complex array", "[1 + 2j]"),
    "imag": (ew.imag_p, "the imaginary part of a complex array", "[1 + 2j]"),
    "erf": (sp.erf_p, "the error function", "[0.0, 1.0]"),
    "erfc": (sp.erfc_p, "1 - erf(x), accurate for large x", "[0.0, 3.0]"),
    "erf_inv": (sp.erf_inv_p, "the inverse error function", "[0.0, 0.5]"),
    "lgamma": (sp.lgamma_p, "log|Gamma(x)|", "[1.0, 4.5]"),
    "digamma": (sp.digamma_p, "the digamma function d/dx log Gamma(x)", "[1.0, 2.0]"),
    "bitwise_not": (bw.not_p, "~x (logical not for bool)", "[1, 2]"),
    "population_count": (bw.population_count_p, "the number of set bits", "[1, 7]"),
    "clz": (bw.clz_p, "the number of leading zero bits", "[1, 7]"),
}

_BINARY = {
    "add": (ew.add_p, "x + y", "[1.0, 2.0], 3.0"),
    "sub": (ew.sub_p, "x - y", "[1.0, 2.0], 3.0"),
    "mul": (ew.mul_p, "x * y", "[1.0, 2.0], 3.0"),
    "div": (ew.div_p, "x / y (truncating toward zero for integers)", "[7, -7], 2"),
    "rem": (ew.rem_p, "the remainder of x / y with the sign of x (C's fmod)", "[7, -7], 3"),
    "pow": (ew.pow_p, "x ** y", "[2.0, 3.0], 2.0"),
    "max": (ew.max_p, "the elementwise maximum (NaN propagates)", "[1.0, 5.0], 3.0"),
    "min": (ew.min_p, "the elementwise minimum (NaN propagates)", "[1.0, 5.0], 3.0"),
    "atan2": (ew.atan2_p, "the angle of the point (y=x, x=y): atan(x / y) in the right quadrant", "[1.0, -1.0], -1.0"),
    "nextafter": (ew.nextafter_p, "the next representable number after x toward y", "[1.0], 2.0"),
    "complex": (ew.complex_p, "x + 1j * y", "[1.0], 2.0"),
    "eq": (bw.eq_p, "x == y", "[1, 2], 2"),
    "ne": (bw.ne_p, "x != y", "[1, 2], 2"),
    "lt": (bw.lt_p, "x < y", "[1, 2], 2"),
    "le": (bw.le_p, "x <= y", "[1, 2], 2"),
    "gt": (bw.gt_p, "x > y", "[1, 2], 2"),
    "ge": (bw.ge_p, "x >= y", "[1, 2], 2"),
    "bitwise_and": (bw.and_p, "x & y (logical and for bool)", "[12, 10], 6"),
    "bitwise_or": (bw.or_p, "x | y (logical or for bool)", "[12, 10], 6"),
    "bitwise_xor": (bw.xor_p, "x ^ y (logical xor for bool)", "[12, 10], 6"),
    "shift_left": (bw.shift_left_p, "x << y (0 once y >= the bit width)", "[1, 3], 2"),
    "shift_right_logical": (bw.shift_right_logical_p, "x >> y filling with zeros", "[-8, 8], 1"),
    "shift_right_arithmetic": (bw.shift_right_arithmetic_p, "x >> y filling with the sign bit", "[-8, 8], 1"),
    "polygamma": (sp.polygamma_p, "the m-th derivative of digamma at x (called as polygamma(m, x))", "[1.0], 2.0"),
    "zeta": (sp.zeta_p, "the Hurwitz zeta function zeta(s, q) = sum_k (q + k)**-s", "[2.0], 1.0"),
    "igamma": (sp.igamma_p, "the regularized lower incomplete gamma function P(a, x)", "[2.0], 1.0"),
    "igammac": (sp.igammac_p, "the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)", "[2.0], 1.0"),
    "random_gamma_grad": (sp.random_gamma_grad_p, "dx/da for a Gamma(a) sample x held at its quantile P(a, x): "
                          "-(dP/da) / (dP/dx) (the implicit gradient of ember.random.gamma)", "[2.0], 1.0"),
}

# What each example above prints, checked against NumPy/SciPy when written (the doctests check it stays so).
_OUTPUTS = {
    "neg": "Array([-1.,  2.], dtype=float32)",
    "sign": "Array([-1.,  0.,  1.], dtype=float32)",
    "floor": "Array([ 1., -2.], dtype=float32)",
    "ceil": "Array([ 2., -1.], dtype=float32)",
    "is_finite": "Array([ True, False], dtype=bool)",
    "exp": "Array([1.      , 2.718282], dtype=float32)",
    "exp2": "Array([1., 8.], dtype=float32)",
    "log": "Array([0.       , 0.6931472], dtype=float32)",
    "log1p": "Array([0.e+00, 1.e-08], dtype=float32)",
    "expm1": "Array([0.e+00, 1.e-08], dtype=float32)",
    "tanh": "Array([0.       , 0.7615942], dtype=float32)",
    "logistic": "Array([0.5     , 0.880797], dtype=float32)",
    "sin": "Array([0.      , 0.841471], dtype=float32)",
    "cos": "Array([1.       , 0.5403023], dtype=float32)",
    "tan": "Array([0.       , 1.5574077], dtype=float32)",
    "asin": "Array([0.       , 0.5235988], dtype=float32)",
    "acos": "Array([1.5707964, 1.0471976], dtype=float32)",
    "atan": "Array([0.       , 0.7853982], dtype=float32)",
    "sinh": "Array([0.       , 1.1752012], dtype=float32)",
    "cosh": "Array([1.       , 1.5430807], dtype=float32)",
    "asinh": "Array([0.       , 0.8813736], dtype=float32)",
    "acosh": "Array([0.      , 1.316958], dtype=float32)",
    "atanh": "Array([0.        , 0.54930615], dtype=float32)",
    "sqrt": "Array([2.       , 1.4142135], dtype=float32)",
    "rsqrt": "Array([0.5, 1. ], dtype=float32)",
    "cbrt": "Array([ 2.       , -2.9999998], dtype=float32)",
    "square": "Array([9., 4.], dtype=float32)",
    "abs": "Array([1.5, 2. ], dtype=float32)",
    "real": "Array([1.], dtype=float32)",
    "imag": "Array([2.], dtype=float32)",
    "erf": "Array([0.       , 0.8427008], dtype=float32)",
    "erfc": "Array([1.0000000e+00, 2.2090497e-05], dtype=float32)",
    "erf_inv": "Array([0.        , 0.47693628], dtype=float32)",
    "lgamma": "Array([0.       , 2.4537365], dtype=float32)",
    "digamma": "Array([-0.5772157 ,  0.42278433], dtype=float32)",
    "bitwise_not": "Array([-2, -3], dtype=int32)",
    "population_count": "Array([1, 3], dtype=int32)",
    "clz": "Array([31, 29], dtype=int32)",
    "add": "Array([4., 5.], dtype=float32)",
    "sub": "Array([-2., -1.], dtype=float32)",
    "mul": "Array([3., 6.], dtype=float32)",
    "div": "Array([ 3, -3], dtype=int32)",
    "rem": "Array([ 1, -1], dtype=int32)",
    "pow": "Array([4., 9.], dtype=float32)",
    "max": "Array([3., 5.], dtype=float32)",
    "min": "Array([1., 3.], dtype=float32)",
    "atan2": "Array([ 2.3561945, -2.3561945], dtype=float32)",
    "nextafter": "Array([1.0000001], dtype=float32)",
    "complex": "Array([1.+2.j], dtype=complex64)",
    "eq": "Array([False,  True], dtype=bool)",
    "ne": "Array([ True, False], dtype=bool)",
    "lt": "Array([ True, False], dtype=bool)",
    "le": "Array([ True,  True], dtype=bool)",
    "gt": "Array([False, False], dtype=bool)",
    "ge": "Array([False,  True], dtype=bool)",
    "bitwise_and": "Array([4, 2], dtype=int32)",
    "bitwise_or": "Array([14, 14], dtype=int32)",
    "bitwise_xor": "Array([10, 12], dtype=int32)",
    "shift_left": "Array([ 4, 12], dtype=int32)",
    "shift_right_logical": "Array([2147483644,          4], dtype=int32)",
    "shift_right_arithmetic": "Array([-4,  4], dtype=int32)",
    "polygamma": "Array([0.64493406], dtype=float32)",
    "zeta": "Array([1.644934], dtype=float32)",
    "igamma": "Array([0.26424113], dtype=float32)",
    "igammac": "Array([0.7357589], dtype=float32)",
    "random_gamma_grad": "Array([0.7507787], dtype=float32)",
}


def _make(name: str, prim, summary: str, example: str, nin: int) -> Callable[..., Array]:
    if nin == 1:

        def fn(x: ArrayLike) -> Array:
            return prim.bind(*operands(name, (x,)))

    else:

        def fn(x: ArrayLike, y: ArrayLike) -> Array:
            return prim.bind(*operands(name, (x, y)))

    first, _, rest = example.partition("], ")
    args = f"enp.asarray({first}]), {rest}" if rest else f"enp.asarray({example})"
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"Computes {summary}, elementwise.\n\n"
        f"Operands must share a dtype (Python scalars adopt it); shapes broadcast.\n\n"
        f">>> import ember.numpy as enp, ember.lax as lax\n>>> lax.{name}({args})\n{_OUTPUTS[name]}\n"
    )
    if not hasattr(prim, "_fast"):  # (not an Elementwise primitive: no lane)
        return fn
    return _fastlane.unary(prim, fn) if nin == 1 else _fastlane.binary(prim, fn)


def _build() -> dict[str, Callable[..., Array]]:
    table = {name: _make(name, *spec, nin=1) for name, spec in _UNARY.items()}
    table.update({name: _make(name, *spec, nin=2) for name, spec in _BINARY.items()})
    return table


globals().update(_build())


def conj(x: ArrayLike) -> Array:
    """The complex conjugate; a floating operand is first converted to complex, as in JAX.

    >>> lax.conj(enp.asarray([1 + 2j]))
    Array([1.-2.j], dtype=complex64)
    """
    (x,) = operands("conj", (x,))
    if dtypes.is_floating(x.dtype):
        x = convert(x, dtypes.complex_dtype(x.dtype), x.weak_type)  # JAX's conj of a weak float is weak
    return ew.conj_p.bind(x)


def integer_pow(x: ArrayLike, y: int) -> Array:
    """x ** y for a static Python int y, by repeated multiplication.

    >>> lax.integer_pow(enp.asarray([2.0, 3.0]), 3)
    Array([ 8., 27.], dtype=float32)
    """
    (x,) = operands("integer_pow", (x,))
    return ew.integer_pow_p.bind(x, y=y)


class RoundingMethod:
    """How `round` breaks ties: AWAY_FROM_ZERO (0) or TO_NEAREST_EVEN (1)."""

    AWAY_FROM_ZERO = ew.ROUND_AWAY_FROM_ZERO
    TO_NEAREST_EVEN = ew.ROUND_TO_NEAREST_EVEN


def round(x: ArrayLike, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO) -> Array:
    """Round to the nearest integer, ties away from zero (default) or to even.

    >>> lax.round(enp.asarray([0.5, 1.5, 2.5]))
    Array([1., 2., 3.], dtype=float32)
    """
    (x,) = operands("round", (x,))
    return ew.round_p.bind(x, rounding_method=int(rounding_method))


def select_n(which: ArrayLike, *cases: ArrayLike) -> Array:
    """Pick `cases[which]` elementwise; `which` is bool (two cases) or int32.

    >>> lax.select_n(enp.asarray([True, False]), enp.zeros(2), enp.ones(2))
    Array([1., 0.], dtype=float32)
    """
    which = operands("select_n", (which,))[0]
    return ew.select_n_p.bind(which, *operands("select_n", cases))


def select(pred: ArrayLike, on_true: ArrayLike, on_false: ArrayLike) -> Array:
    """`on_true` where `pred` holds, else `on_false` (no broadcasting, as in lax).

    >>> lax.select(enp.asarray([True, False]), enp.ones(2), enp.zeros(2))
    Array([1., 0.], dtype=float32)
    """
    return select_n(pred, on_false, on_true)


def clamp(min: ArrayLike, x: ArrayLike, max: ArrayLike) -> Array:
    """min(max(x, lo), hi) with scalar or same-shaped bounds.

    >>> lax.clamp(0.0, enp.asarray([-1.0, 0.5, 2.0]), 1.0)
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    lo, x, hi = operands("clamp", (min, x, max))
    return ew.clamp_p.bind(lo, x, hi)


def convert_element_type(operand: ArrayLike, new_dtype) -> Array:
    """Cast to `new_dtype` (complex -> real keeps the real part; the result is not weak).

    Float to integer rounds toward zero and saturates, as JAX (XLA) does on every backend: values
    beyond the integer type's range (infinities included) become its minimum or maximum, NaN becomes 0.

    >>> lax.convert_element_type(enp.asarray([1.7, -1.7]), "int32")
    Array([ 1, -1], dtype=int32)
    >>> lax.convert_element_type(enp.asarray([-1.2, 300.0, float("nan")]), "uint8")
    Array([  0, 255,   0], dtype=uint8)
    """
    (x,) = operands("convert_element_type", (operand,))
    return convert(x, dtypes.canonicalize(new_dtype, "convert_element_type"))


def bitcast_convert_type(operand: ArrayLike, new_dtype) -> Array:
    """Reinterpret the bits as `new_dtype` (a narrower dtype adds a trailing axis).

    >>> lax.bitcast_convert_type(enp.asarray([1.0]), "int32")
    Array([1065353216], dtype=int32)
    """
    (x,) = operands("bitcast_convert_type", (operand,))
    return ew.bitcast_convert_type_p.bind(x, new_dtype=dtypes.to_dtype(new_dtype))


def reduce_precision(operand: ArrayLike, exponent_bits: int, mantissa_bits: int) -> Array:
    """Round to the nearest value with the given exponent and mantissa widths.

    >>> lax.reduce_precision(enp.asarray([1.0001]), exponent_bits=8, mantissa_bits=7)
    Array([1.], dtype=float32)
    """
    (x,) = operands("reduce_precision", (operand,))
    return ew.reduce_precision_p.bind(x, exponent_bits=int(exponent_bits), mantissa_bits=int(mantissa_bits))


def stop_gradient(x: Any) -> Any:
    """`x` (an array or a pytree of arrays) unchanged, but with a zero derivative: differentiation
    treats it as a constant.

    >>> ember.grad(lambda x: x * lax.stop_gradient(x))(3.0)
    Array(3., dtype=float32, weak_type=True)
    """
    return tree_map(lambda leaf: ew.stop_gradient_p.bind(*operands("stop_gradient", (leaf,))), x)


__all__ = [*_UNARY, *_BINARY, "conj", "integer_pow", "round", "RoundingMethod", "select_n", "select", "clamp",
           "convert_element_type", "bitcast_convert_type", "reduce_precision", "stop_gradient"]  # fmt: skip
