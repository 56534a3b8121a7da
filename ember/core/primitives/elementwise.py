"""Elementwise arithmetic and transcendental primitives, plus select, clamp and casts.

Operands share one dtype and broadcast like NumPy. Transform rules (jvp,
transpose, batching) are attached by the autodiff and vmap layers.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.primitive import Primitive
from ember.core.primitives._rules import (
    ANY,
    COMPLEX,
    FLOATING,
    INEXACT,
    NUMERIC,
    REAL_NUMERIC,
    SIGNED_OR_INEXACT,
    DTypes,
    Elementwise,
    broadcast_shapes,
    check_dtype,
    check_same_dtypes,
    to_bool,
    to_real,
)
from ember.errors import DTypeError, InvalidArgumentError, ShapeError

# --- unary -------------------------------------------------------------------------

neg_p = Elementwise("neg", NUMERIC)
sign_p = Elementwise("sign", NUMERIC)
floor_p = Elementwise("floor", FLOATING)
ceil_p = Elementwise("ceil", FLOATING)
is_finite_p = Elementwise("is_finite", FLOATING, to_bool)
exp_p = Elementwise("exp", INEXACT)
exp2_p = Elementwise("exp2", INEXACT)
log_p = Elementwise("log", INEXACT)
log1p_p = Elementwise("log1p", INEXACT)
expm1_p = Elementwise("expm1", INEXACT)
tanh_p = Elementwise("tanh", INEXACT)
logistic_p = Elementwise("logistic", INEXACT)
sin_p = Elementwise("sin", INEXACT)
cos_p = Elementwise("cos", INEXACT)
tan_p = Elementwise("tan", INEXACT)
asin_p = Elementwise("asin", INEXACT)
acos_p = Elementwise("acos", INEXACT)
atan_p = Elementwise("atan", INEXACT)
sinh_p = Elementwise("sinh", INEXACT)
cosh_p = Elementwise("cosh", INEXACT)
asinh_p = Elementwise("asinh", INEXACT)
acosh_p = Elementwise("acosh", INEXACT)
atanh_p = Elementwise("atanh", INEXACT)
sqrt_p = Elementwise("sqrt", INEXACT)
rsqrt_p = Elementwise("rsqrt", INEXACT)
cbrt_p = Elementwise("cbrt", FLOATING)
square_p = Elementwise("square", NUMERIC)
abs_p = Elementwise("abs", SIGNED_OR_INEXACT, to_real)
real_p = Elementwise("real", COMPLEX, to_real)
imag_p = Elementwise("imag", COMPLEX, to_real)
conj_p = Elementwise("conj", COMPLEX)

# --- binary ------------------------------------------------------------------------

add_p = Elementwise("add", ANY)
sub_p = Elementwise("sub", NUMERIC)
mul_p = Elementwise("mul", ANY)
div_p = Elementwise("div", NUMERIC)
rem_p = Elementwise("rem", REAL_NUMERIC)
pow_p = Elementwise("pow", INEXACT)
max_p = Elementwise("max", ANY)
min_p = Elementwise("min", ANY)
atan2_p = Elementwise("atan2", FLOATING)
nextafter_p = Elementwise("nextafter", FLOATING)
complex_p = Elementwise("complex", DTypes("float32 or float64", (dtypes.float32, dtypes.float64)), dtypes.complex_dtype)

# --- with parameters ---------------------------------------------------------------

ROUND_AWAY_FROM_ZERO, ROUND_TO_NEAREST_EVEN = 0, 1

round_p = Elementwise("round", FLOATING)
integer_pow_p = Elementwise("integer_pow", NUMERIC)


def _integer_pow_rule(x: ShapedArray, *, y: int) -> ShapedArray:
    check_dtype("integer_pow", x, NUMERIC)
    if not isinstance(y, (int, np.integer)) or isinstance(y, (bool, np.bool_)):
        raise DTypeError(f"integer_pow: the exponent must be a Python int, got {y!r}; use lax.pow for other exponents")
    if y < 0 and dtypes.is_integer(x.dtype):
        raise InvalidArgumentError(
            f"integer_pow: negative exponent {y} on integer operand {describe(x)}; convert to a float dtype first"
        )
    return x


def _round_rule(x: ShapedArray, *, rounding_method: int = ROUND_AWAY_FROM_ZERO) -> ShapedArray:
    check_dtype("round", x, FLOATING)
    if rounding_method not in (ROUND_AWAY_FROM_ZERO, ROUND_TO_NEAREST_EVEN):
        raise InvalidArgumentError(f"round: rounding_method must be 0 (away from zero) or 1 (to nearest even), got {rounding_method!r}")
    return x


integer_pow_p.abstract_eval = _integer_pow_rule
round_p.abstract_eval = _round_rule

# select_n(which, *cases): cases[which] elementwise; `which` is bool (two cases) or int32.
select_n_p = Primitive("select_n")


def _select_n_rule(which: ShapedArray, *cases: ShapedArray) -> ShapedArray:
    if not cases:
        raise InvalidArgumentError("select_n: needs at least one case")
    dtype = check_same_dtypes("select_n", cases)
    if any(c.shape != cases[0].shape for c in cases):
        raise ShapeError(f"select_n: cases must share one shape, got {', '.join(describe(c) for c in cases)}")
    if which.dtype == dtypes.bool_:
        if len(cases) > 2:
            raise DTypeError(f"select_n: a bool predicate selects between at most 2 cases, got {len(cases)}; use an int32 predicate")
    elif which.dtype != dtypes.int32:
        raise DTypeError(f"select_n: the predicate must be bool or int32, got {describe(which)}")
    if which.shape not in ((), cases[0].shape):
        raise ShapeError(
            f"select_n: the predicate's shape {which.shape} must be () or the cases' shape {cases[0].shape}; broadcast it first"
        )
    return ShapedArray(cases[0].shape, dtype, all(c.weak_type for c in cases))


select_n_p.abstract_eval = _select_n_rule

# clamp(lo, x, hi) = min(max(x, lo), hi); lo and hi are scalars or x's shape.
clamp_p = Primitive("clamp")


def _clamp_rule(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    check_same_dtypes("clamp", (lo, x, hi))
    check_dtype("clamp", x, REAL_NUMERIC | DTypes("bool", dtypes.BOOL))
    for name, bound in (("lo", lo), ("hi", hi)):
        if bound.shape not in ((), x.shape):
            raise ShapeError(f"clamp: {name} has shape {bound.shape}; it must be () or the operand's shape {x.shape}")
    return x


clamp_p.abstract_eval = _clamp_rule

# --- casts ---------------------------------------------------------------------------

convert_element_type_p = Primitive("convert_element_type")


def _convert_rule(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool = False) -> ShapedArray:
    new_dtype = dtypes.to_dtype(new_dtype)
    return ShapedArray(x.shape, new_dtype, weak_type)


convert_element_type_p.abstract_eval = _convert_rule

bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_rule(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    new_dtype = dtypes.to_dtype(new_dtype)
    if dtypes.bool_ in (x.dtype, new_dtype) or dtypes.is_complex(x.dtype) or dtypes.is_complex(new_dtype):
        raise DTypeError(f"bitcast_convert_type: cannot bitcast {describe(x)} to {new_dtype}; bool and complex are not bitcastable")
    old, new = x.dtype.itemsize, new_dtype.itemsize
    if old == new:
        shape = x.shape
    elif old > new:
        shape = (*x.shape, old // new)
    else:
        if not x.shape or x.shape[-1] != new // old:
            raise ShapeError(
                f"bitcast_convert_type: {describe(x)} to the wider {new_dtype} needs a last dimension of {new // old}"
            )
        shape = x.shape[:-1]
    return ShapedArray(shape, new_dtype, False)


bitcast_convert_type_p.abstract_eval = _bitcast_rule

reduce_precision_p = Primitive("reduce_precision")


def _reduce_precision_rule(x: ShapedArray, *, exponent_bits: int, mantissa_bits: int) -> ShapedArray:
    check_dtype("reduce_precision", x, FLOATING)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise InvalidArgumentError(
            f"reduce_precision: needs exponent_bits >= 1 and mantissa_bits >= 0, got {exponent_bits} and {mantissa_bits}"
        )
    return x


reduce_precision_p.abstract_eval = _reduce_precision_rule

copy_p = Primitive("copy")
copy_p.abstract_eval = lambda x: x

__all__ = [name for name in dir() if name.endswith("_p")] + ["broadcast_shapes"]
