"""Elementwise arithmetic and transcendental primitives, plus select, clamp and casts.

Operands share one dtype and broadcast like NumPy. Transform rules (jvp,
transpose, batching) are attached by the autodiff and vmap layers.
"""

from __future__ import annotations

import numpy as np

from ember.core import dtypes
from ember.core.abstract import ShapedArray, describe
from ember.core.ad import (
    Zero,
    broadcast_to,
    defjvp,
    deflinear,
    defnondiff,
    instantiate,
    is_undefined,
    unbroadcast,
    zeros,
)
from ember.core.array import wrap
from ember.core.primitive import Primitive
from ember.core.primitives import bitwise as _bw
from ember.core.primitives import structural as _st
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

# The identity, whose derivative is zero by definition (lax.stop_gradient).
stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.abstract_eval = lambda x: x


# --- differentiation rules ------------------------------------------------------------------
# jvp rules: one function per operand, ``(t, ans, *operands) -> contribution`` (core/ad.py sums
# them and broadcasts to the output). Elementwise primitives broadcast, so transposes sum the
# cotangent back to each operand's shape with `unbroadcast`.

_neg, _add, _sub, _mul, _div, _select = neg_p.bind, add_p.bind, sub_p.bind, mul_p.bind, div_p.bind, select_n_p.bind


def _const(x, value):
    """A weakly typed scalar of x's dtype."""
    return wrap(np.asarray(value, dtype=x.dtype), True)


def _full_like(x, value):
    c = _const(x, value)
    return c if x.shape == () else _st.broadcast_in_dim_p.bind(c, shape=x.shape, broadcast_dimensions=())


def _where_zero(x, value):
    """x, with its zeros replaced by `value` (keeps log and division finite where a factor is zero anyway)."""
    return _select(_bw.eq_p.bind(x, _const(x, 0)), x, _full_like(x, value))


def _bcast_select(which, on_false, on_true):
    """select_n with NumPy broadcasting of the predicate and both cases."""
    shape = broadcast_shapes("select_n", which.shape, on_false.shape, on_true.shape)
    return _select(broadcast_to(which, shape), broadcast_to(on_false, shape), broadcast_to(on_true, shape))


def _square(x):
    return _mul(x, x)


defnondiff(floor_p, ceil_p, round_p, is_finite_p, bitcast_convert_type_p)


def _sign_jvp(t, ans, x):
    # Real sign is piecewise constant. Complex sign(z) = z / |z| moves along the unit circle:
    # d sign = (t - s Re(conj(s) t)) / |z| (0 at z = 0).
    if not dtypes.is_complex(x.dtype):
        return Zero(ans.aval)

    def as_complex(r):
        return convert_element_type_p.bind(r, new_dtype=x.dtype, weak_type=False)

    along = as_complex(real_p.bind(_mul(conj_p.bind(ans), t)))
    return _div(_sub(t, _mul(ans, along)), as_complex(_where_zero(abs_p.bind(x), 1)))


defjvp(sign_p, _sign_jvp)
# nextafter(x, y) is x moved by one ulp: as a function of x it is the identity to first order.
defjvp(nextafter_p, lambda t, ans, x, y: t, None)
deflinear(neg_p, lambda ct, x: [_neg(ct)])
defjvp(exp_p, lambda t, ans, x: _mul(t, ans))
defjvp(exp2_p, lambda t, ans, x: _mul(t, _mul(ans, _const(x, np.log(2)))))
defjvp(log_p, lambda t, ans, x: _div(t, x))
defjvp(log1p_p, lambda t, ans, x: _div(t, _add(x, _const(x, 1))))
defjvp(expm1_p, lambda t, ans, x: _mul(t, _add(ans, _const(x, 1))))
defjvp(tanh_p, lambda t, ans, x: _mul(t, _sub(_const(x, 1), _square(ans))))  # 1 - tanh^2
defjvp(logistic_p, lambda t, ans, x: _mul(t, _mul(ans, _sub(_const(x, 1), ans))))
defjvp(sin_p, lambda t, ans, x: _mul(t, cos_p.bind(x)))
defjvp(cos_p, lambda t, ans, x: _neg(_mul(t, sin_p.bind(x))))
defjvp(tan_p, lambda t, ans, x: _mul(t, _add(_const(x, 1), _square(ans))))  # 1 + tan^2
defjvp(asin_p, lambda t, ans, x: _mul(t, rsqrt_p.bind(_sub(_const(x, 1), _square(x)))))
defjvp(acos_p, lambda t, ans, x: _neg(_mul(t, rsqrt_p.bind(_sub(_const(x, 1), _square(x))))))
defjvp(atan_p, lambda t, ans, x: _div(t, _add(_const(x, 1), _square(x))))
defjvp(sinh_p, lambda t, ans, x: _mul(t, cosh_p.bind(x)))
defjvp(cosh_p, lambda t, ans, x: _mul(t, sinh_p.bind(x)))
defjvp(asinh_p, lambda t, ans, x: _mul(t, rsqrt_p.bind(_add(_square(x), _const(x, 1)))))
# 1 / (sqrt(x - 1) sqrt(x + 1)): right on the principal branch for complex x too
defjvp(acosh_p, lambda t, ans, x: _div(t, _mul(sqrt_p.bind(_sub(x, _const(x, 1))), sqrt_p.bind(_add(x, _const(x, 1))))))
defjvp(atanh_p, lambda t, ans, x: _div(t, _sub(_const(x, 1), _square(x))))
defjvp(sqrt_p, lambda t, ans, x: _div(t, _mul(_const(x, 2), ans)))
defjvp(rsqrt_p, lambda t, ans, x: _mul(t, _mul(_const(x, -0.5), _div(ans, x))))  # -x^(-3/2) / 2
defjvp(cbrt_p, lambda t, ans, x: _mul(t, _div(_const(x, 1 / 3), _square(ans))))
defjvp(square_p, lambda t, ans, x: _mul(t, _mul(_const(x, 2), x)))


def _abs_jvp(t, ans, x):
    if dtypes.is_complex(x.dtype):  # d|x| = Re(conj(x) t) / |x|, taken as 0 at x = 0
        return _div(real_p.bind(_mul(conj_p.bind(x), t)), _where_zero(ans, 1))
    return _mul(t, sign_p.bind(x))


defjvp(abs_p, _abs_jvp)
# The transposes of real, imag and conj follow JAX (linear maps over the reals).
deflinear(real_p, lambda ct, x: [complex_p.bind(ct, _const(ct, 0))])
deflinear(imag_p, lambda ct, x: [complex_p.bind(_const(ct, 0), _neg(ct))])
deflinear(conj_p, lambda ct, x: [conj_p.bind(ct)])
deflinear(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])
deflinear(copy_p, lambda ct, x: [ct])
defnondiff(stop_gradient_p)


def _sum_of_tangents(prim, sign_of_y):
    """jvp of add/sub: tx + sign * ty, broadcast to the output (symbolic zeros stay symbolic)."""

    def jvp(primals, tangents):
        ans = prim.bind(*primals)
        tx, ty = tangents
        if type(ty) is not Zero and sign_of_y < 0:
            ty = _neg(ty)
        if type(tx) is Zero and type(ty) is Zero:
            return ans, Zero(ans.aval)
        out = ty if type(tx) is Zero else tx if type(ty) is Zero else _add(tx, ty)
        return ans, broadcast_to(out, ans.shape)

    def transpose(ct, x, y):
        return [unbroadcast(ct, x.aval) if is_undefined(x) else None,
                unbroadcast(ct if sign_of_y > 0 else _neg(ct), y.aval) if is_undefined(y) else None]  # fmt: skip

    prim.jvp, prim.transpose = jvp, transpose


_sum_of_tangents(add_p, +1)
_sum_of_tangents(sub_p, -1)

defjvp(mul_p, lambda t, ans, x, y: _mul(t, y), lambda t, ans, x, y: _mul(x, t))
mul_p.transpose = lambda ct, x, y: [unbroadcast(_mul(ct, y), x.aval) if is_undefined(x) else None,
                                    unbroadcast(_mul(x, ct), y.aval) if is_undefined(y) else None]  # fmt: skip
defjvp(div_p, lambda t, ans, x, y: _div(t, y), lambda t, ans, x, y: _neg(_mul(t, _div(ans, y))))
div_p.transpose = lambda ct, x, y: [unbroadcast(_div(ct, y), x.aval), None]  # linear in x only
# rem(x, y) = x - y trunc(x / y): d/dy = -trunc(x / y)
defjvp(rem_p, lambda t, ans, x, y: t,
       lambda t, ans, x, y: _neg(_mul(t, _mul(sign_p.bind(_div(x, y)), floor_p.bind(abs_p.bind(_div(x, y)))))))  # fmt: skip


def _pow_jvp_x(t, ans, x, y):
    # y x^(y-1), and 0 where y == 0 (also at x == 0, where x^(y-1) is infinite)
    jac = _mul(y, pow_p.bind(x, _sub(y, _const(y, 1))))
    return _mul(t, _bcast_select(_bw.eq_p.bind(y, _const(y, 0)), jac, _const(y, 0)))


def _pow_jvp_y(t, ans, x, y):
    # log(x) x^y, with log(0) read as 0 so that 0^y has derivative 0 in y
    return _mul(t, _mul(log_p.bind(_where_zero(x, 1)), ans))


defjvp(pow_p, _pow_jvp_x, _pow_jvp_y)


def _chooser_weight(x, ans, y):
    """1 where x alone attains the max/min, 1/2 where x and y tie, 0 elsewhere (JAX's balanced rule).

    As arithmetic on the two tests, ``[x == ans] - 0.5 [x == y]``, which gives those three values
    exactly (a tie is x == y == ans; NaN is equal to nothing): NumPy casts and subtracts several times
    faster than it selects, and a ReLU's backward pass is full of these. Weakly typed, as the
    constants the rule used to select between."""

    def indicator(test):
        return broadcast_to(convert_element_type_p.bind(test, new_dtype=ans.dtype, weak_type=True), ans.shape)

    return _sub(indicator(_bw.eq_p.bind(x, ans)), _mul(_const(ans, 0.5), indicator(_bw.eq_p.bind(x, y))))


defjvp(max_p, lambda t, ans, x, y: _mul(t, _chooser_weight(x, ans, y)), lambda t, ans, x, y: _mul(t, _chooser_weight(y, ans, x)))
defjvp(min_p, lambda t, ans, x, y: _mul(t, _chooser_weight(x, ans, y)), lambda t, ans, x, y: _mul(t, _chooser_weight(y, ans, x)))
defjvp(atan2_p, lambda t, ans, x, y: _mul(t, _div(y, _add(_square(x), _square(y)))),
       lambda t, ans, x, y: _neg(_mul(t, _div(x, _add(_square(x), _square(y))))))  # fmt: skip


def _complex_jvp(primals, tangents):
    ans = complex_p.bind(*primals)
    if all(type(t) is Zero for t in tangents):
        return ans, Zero(ans.aval)
    return ans, broadcast_to(complex_p.bind(*[instantiate(t) for t in tangents]), ans.shape)


complex_p.jvp = _complex_jvp
complex_p.transpose = lambda ct, x, y: [unbroadcast(real_p.bind(ct), x.aval) if is_undefined(x) else None,
                                        unbroadcast(_neg(imag_p.bind(ct)), y.aval) if is_undefined(y) else None]  # fmt: skip


def _integer_pow_jvp(t, ans, x, *, y):
    if y == 0:
        return Zero(ans.aval)
    return _mul(t, _mul(_const(x, y), x if y == 2 else integer_pow_p.bind(x, y=y - 1)))


defjvp(integer_pow_p, _integer_pow_jvp)


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    ans = select_n_p.bind(which, *cases)
    if all(type(t) is Zero for t in tangents[1:]):
        return ans, Zero(ans.aval)
    return ans, select_n_p.bind(which, *[instantiate(t) for t in tangents[1:]])


def _select_n_transpose(ct, which, *cases):
    zero = zeros(ct.aval)
    return [None] + [select_n_p.bind(which, *[ct if j == i else zero for j in range(len(cases))]) if is_undefined(c) else None
                     for i, c in enumerate(cases)]  # fmt: skip


select_n_p.jvp, select_n_p.transpose = _select_n_jvp, _select_n_transpose


def _clamp_part(keep):
    """jvp of clamp for one operand: its tangent (broadcast to x) where `keep(lo, x, hi)`, else 0."""
    return lambda t, ans, lo, x, hi: _select(keep(lo, x, hi), zeros(x.aval), broadcast_to(t, x.shape))


defjvp(clamp_p,
       _clamp_part(lambda lo, x, hi: _bw.and_p.bind(_bw.gt_p.bind(lo, x), _bw.lt_p.bind(lo, hi))),
       _clamp_part(lambda lo, x, hi: _bw.and_p.bind(_bw.gt_p.bind(x, lo), _bw.lt_p.bind(x, hi))),
       _clamp_part(lambda lo, x, hi: _bw.lt_p.bind(hi, x)))  # fmt: skip


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    ans = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is Zero or not dtypes.is_inexact(x.dtype) or not dtypes.is_inexact(ans.dtype):
        return ans, Zero(ans.aval)
    return ans, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = lambda ct, x, **params: [
    convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type)]  # fmt: skip

# --- batching rules ---------------------------------------------------------------------------
# Elementwise primitives broadcast like NumPy, so a batched operand only needs its batch axis first.

# (Every `Elementwise` primitive gets its broadcasting rule when it is created, in _rules.py.)
from ember.core.batching import batch_at_front, defvectorized  # noqa: E402

for _prim in (convert_element_type_p, reduce_precision_p, copy_p, stop_gradient_p):
    defvectorized(_prim)


def _bitcast_batch(size, args, dims, *, new_dtype):
    # A wider or narrower dtype adds or removes a last axis: keep the batch axis in front of it.
    (x,), (d,) = args, dims
    x = _st.transpose_p.bind(x, permutation=(d, *[i for i in range(x.ndim) if i != d])) if d != 0 else x
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), 0


bitcast_convert_type_p.batch = _bitcast_batch


@batch_at_front
def _select_n_batch(size, args):
    # Cases must share one shape and the predicate be () or that shape: all get the batch axis first.
    which, *cases = args
    shape = cases[0].shape
    if which.shape != shape:
        which = _st.broadcast_in_dim_p.bind(which, shape=shape, broadcast_dimensions=tuple(range(which.ndim)))
    return select_n_p.bind(which, *cases), 0


select_n_p.batch = _select_n_batch


@batch_at_front
def _clamp_batch(size, args):
    lo, x, hi = args
    lo, hi = (b if b.shape == x.shape else _st.broadcast_in_dim_p.bind(b, shape=x.shape, broadcast_dimensions=(0,))
              for b in (lo, hi))  # fmt: skip
    return clamp_p.bind(lo, x, hi), 0


clamp_p.batch = _clamp_batch

__all__ = [name for name in dir() if name.endswith("_p")] + ["broadcast_shapes"]
