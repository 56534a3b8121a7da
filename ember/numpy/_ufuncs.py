"""NumPy's elementwise functions (ufuncs) written with ember primitives.

Each function promotes its operands with JAX's lattice and lets the primitive
broadcast them. Integer and bool inputs to transcendental functions are first
moved to the default float dtype, as in JAX.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ember._traceback import filter_error
from ember.backends.kernels import BRANCHLESS_MIN
from ember.core import dtypes
from ember.core.array import Array, wrap
from ember.core.primitives import bitwise as bw
from ember.core.primitives import elementwise as ew
from ember.errors import DTypeError, InvalidArgumentError
from ember.lax import _fastlane
from ember.lax._convert import convert
from ember.numpy._core import ArrayLike, full_for, promote_args, promote_inexact


def _doc(fn: Callable, summary: str, example: str) -> Callable:
    output = _EXAMPLE_OUTPUTS[fn.__name__]
    fn.__doc__ = f"{summary}\n\n>>> import ember.numpy as enp\n>>> enp.{fn.__name__}({example})\n{output}\n"
    return fn


# What the generated examples print (checked against NumPy when written; the doctests keep them so).
_EXAMPLE_OUTPUTS = {
    "add": "Array([4., 5.], dtype=float32)",
    "arccos": "Array([1.0471976, 0.       ], dtype=float32)",
    "arccosh": "Array([0.      , 1.316958], dtype=float32)",
    "arcsin": "Array([0.5235988, 1.5707964], dtype=float32)",
    "arcsinh": "Array([0.4812118, 0.8813736], dtype=float32)",
    "arctan": "Array([0.4636476, 0.7853982], dtype=float32)",
    "arctanh": "Array([0.54930615,        inf], dtype=float32)",
    "bitwise_and": "Array([4, 2], dtype=int32)",
    "bitwise_or": "Array([14, 14], dtype=int32)",
    "bitwise_xor": "Array([10, 12], dtype=int32)",
    "cbrt": "Array([ 2.       , -2.9999998], dtype=float32)",
    "ceil": "Array([ 2., -1.], dtype=float32)",
    "cos": "Array([0.87758255, 0.5403023 ], dtype=float32)",
    "cosh": "Array([1.1276261, 1.5430807], dtype=float32)",
    "deg2rad": "Array([1.5707964, 3.1415927], dtype=float32)",
    "equal": "Array([False, False], dtype=bool)",
    "exp": "Array([1.6487212, 2.718282 ], dtype=float32)",
    "exp2": "Array([1.4142135, 2.       ], dtype=float32)",
    "expm1": "Array([0.e+00, 1.e-08], dtype=float32)",
    "fabs": "Array([1., 2.], dtype=float32)",
    "fix": "Array([ 1., -1.], dtype=float32)",
    "floor": "Array([ 1., -2.], dtype=float32)",
    "fmax": "Array([1., 0.], dtype=float32)",
    "fmin": "Array([0., 0.], dtype=float32)",
    "greater": "Array([False, False,  True], dtype=bool)",
    "greater_equal": "Array([False,  True,  True], dtype=bool)",
    "invert": "Array([ 0, -3], dtype=int32)",
    "isneginf": "Array([False, False,  True], dtype=bool)",
    "isposinf": "Array([False,  True, False], dtype=bool)",
    "less": "Array([ True, False, False], dtype=bool)",
    "less_equal": "Array([ True,  True, False], dtype=bool)",
    "log": "Array([-0.6931472,  0.       ], dtype=float32)",
    "log10": "Array([0.     , 0.90309], dtype=float32)",
    "log1p": "Array([0.e+00, 1.e-08], dtype=float32)",
    "log2": "Array([0., 3.], dtype=float32)",
    "logaddexp": "Array([1000.    , 1000.6932], dtype=float32)",
    "logaddexp2": "Array([1000., 1001.], dtype=float32)",
    "logical_and": "Array([ True, False], dtype=bool)",
    "logical_or": "Array([ True,  True], dtype=bool)",
    "logical_xor": "Array([False,  True], dtype=bool)",
    "maximum": "Array([3., 3.], dtype=float32)",
    "minimum": "Array([1., 2.], dtype=float32)",
    "multiply": "Array([3., 6.], dtype=float32)",
    "not_equal": "Array([ True,  True], dtype=bool)",
    "rad2deg": "Array([ 57.29578, 179.99986], dtype=float32)",
    "sin": "Array([0.47942555, 0.841471  ], dtype=float32)",
    "sinh": "Array([0.5210953, 1.1752012], dtype=float32)",
    "sqrt": "Array([0.70710677, 1.        ], dtype=float32)",
    "tan": "Array([0.5463025, 1.5574077], dtype=float32)",
    "tanh": "Array([0.4621172, 0.7615942], dtype=float32)",
    "trunc": "Array([ 1., -1.], dtype=float32)",
}


def _binary(name: str, prim, summary: str, example: str = "enp.asarray([1.0, 2.0]), 3.0") -> Callable[..., Array]:
    def fn(x1: ArrayLike, x2: ArrayLike, /) -> Array:
        return prim.bind(*promote_args(name, x1, x2))

    fn.__name__ = fn.__qualname__ = name
    return _fastlane.binary(prim, _doc(fn, summary, example))


def _unary_inexact(name: str, prim, summary: str, example: str = "enp.asarray([0.5, 1.0])") -> Callable[..., Array]:
    def fn(x: ArrayLike, /) -> Array:
        return prim.bind(*promote_inexact(name, x))

    fn.__name__ = fn.__qualname__ = name
    return _fastlane.unary(prim, _doc(fn, summary, example))


def _unary_same(name: str, prim, summary: str, example: str = "enp.asarray([-1, 2])") -> Callable[..., Array]:
    def fn(x: ArrayLike, /) -> Array:
        return prim.bind(*promote_args(name, x))

    fn.__name__ = fn.__qualname__ = name
    return _fastlane.unary(prim, _doc(fn, summary, example))


# --- arithmetic --------------------------------------------------------------------------------

add = _binary("add", ew.add_p, "x1 + x2, elementwise (logical or for bool).")
multiply = _binary("multiply", ew.mul_p, "x1 * x2, elementwise (logical and for bool).")
maximum = _binary("maximum", ew.max_p, "The elementwise maximum; NaN propagates.")
minimum = _binary("minimum", ew.min_p, "The elementwise minimum; NaN propagates.")
equal = _binary("equal", bw.eq_p, "x1 == x2, elementwise.")
not_equal = _binary("not_equal", bw.ne_p, "x1 != x2, elementwise.")
bitwise_and = _binary("bitwise_and", bw.and_p, "x1 & x2 for bool and integer arrays.", "enp.asarray([12, 10]), 6")
bitwise_or = _binary("bitwise_or", bw.or_p, "x1 | x2 for bool and integer arrays.", "enp.asarray([12, 10]), 6")
bitwise_xor = _binary("bitwise_xor", bw.xor_p, "x1 ^ x2 for bool and integer arrays.", "enp.asarray([12, 10]), 6")
bitwise_invert = invert = _unary_same("invert", bw.not_p, "~x: bitwise not (logical not for bool).")
bitwise_not = invert
sqrt = _unary_inexact("sqrt", ew.sqrt_p, "The non-negative square root.")
exp = _unary_inexact("exp", ew.exp_p, "e ** x.")
log = _unary_inexact("log", ew.log_p, "The natural logarithm.")
sin = _unary_inexact("sin", ew.sin_p, "The sine.")
cos = _unary_inexact("cos", ew.cos_p, "The cosine.")
tanh = _unary_inexact("tanh", ew.tanh_p, "The hyperbolic tangent.")


def subtract(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 - x2, elementwise (not defined for bool, as in NumPy).

    >>> enp.subtract(enp.asarray([3.0, 2.0]), 1.0)
    Array([2., 1.], dtype=float32)
    """
    x1, x2 = promote_args("subtract", x1, x2)
    if x1.dtype == dtypes.bool_:
        raise DTypeError("subtract: not defined for bool operands (as in NumPy); use enp.logical_xor or bitwise_xor")
    return ew.sub_p.bind(x1, x2)


subtract = _fastlane.binary(ew.sub_p, subtract, exclude=(dtypes.bool_,))


def negative(x: ArrayLike, /) -> Array:
    """-x, elementwise (not defined for bool).

    >>> enp.negative(enp.asarray([1.0, -2.0]))
    Array([-1.,  2.], dtype=float32)
    """
    (x,) = promote_args("negative", x)
    if x.dtype == dtypes.bool_:
        raise DTypeError("negative: not defined for bool (as in NumPy); use enp.logical_not")
    return ew.neg_p.bind(x)


negative = _fastlane.unary(ew.neg_p, negative, exclude=(dtypes.bool_,))


def positive(x: ArrayLike, /) -> Array:
    """+x: the operand itself (as an array; bool is rejected as in NumPy).

    >>> enp.positive(enp.asarray([1.0, -2.0]))
    Array([ 1., -2.], dtype=float32)
    """
    (x,) = promote_args("positive", x)
    if x.dtype == dtypes.bool_:
        raise DTypeError("positive: not defined for bool (as in NumPy)")
    return x


def absolute(x: ArrayLike, /) -> Array:
    """|x|; the modulus for complex input (a real result); unsigned and bool pass through.

    >>> enp.absolute(enp.asarray([-1.5, 2.0]))
    Array([1.5, 2. ], dtype=float32)
    """
    (x,) = promote_args("absolute", x)
    if dtypes.is_unsigned(x.dtype) or x.dtype == dtypes.bool_:
        return x
    return ew.abs_p.bind(x)


absolute = _fastlane.unary(ew.abs_p, absolute, exclude=(dtypes.bool_, *dtypes.UNSIGNED))
abs = absolute


def true_divide(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 / x2; integer and bool operands give the default float dtype.

    >>> enp.true_divide(enp.asarray([1, 2]), 2)
    Array([0.5, 1. ], dtype=float32)
    """
    return ew.div_p.bind(*promote_inexact("true_divide", x1, x2))


true_divide = _fastlane.binary(ew.div_p, true_divide, exclude=tuple(d for d in ew.div_p._fast if not dtypes.is_inexact(d)))
divide = true_divide


def _numeric(op: str, *args) -> list[Array]:
    """Promote, then bool to int32: JAX's rule for arithmetic that has no bool meaning."""
    xs = promote_args(op, *args)
    if xs[0].dtype == dtypes.bool_:
        xs = [convert(x, dtypes.int32) for x in xs]
    return xs


def floor_divide(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 // x2 with Python's (flooring) semantics, exactly as NumPy computes it (bool gives int32, as JAX).

    >>> enp.floor_divide(enp.asarray([7, -7]), 2)
    Array([ 3, -4], dtype=int32)
    """
    x1, x2 = _numeric("floor_divide", x1, x2)
    if dtypes.is_complex(x1.dtype):
        raise DTypeError(f"floor_divide: not defined for complex operands ({x1.dtype})")
    if dtypes.is_integer(x1.dtype):
        q = ew.div_p.bind(x1, x2)
        if dtypes.is_unsigned(x1.dtype):
            return q
        r = ew.rem_p.bind(x1, x2)
        adjust = bw.and_p.bind(bw.ne_p.bind(r, _zero(r)), bw.ne_p.bind(bw.lt_p.bind(r, _zero(r)), bw.lt_p.bind(x2, _zero(x2))))
        return ew.sub_p.bind(q, convert(adjust, q.dtype))
    # The quotient is piecewise constant: its tangent is a symbolic zero (as JAX's, which ends in
    # round), not the real zeros its select of x1 / x2 would carry into rules with infinite slopes.
    return ew.stop_gradient_p.bind(_float_divmod(x1, x2)[0])


def remainder(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 % x2 with the sign of x2 (Python's modulo), as NumPy (bool gives int32, as JAX).

    >>> enp.remainder(enp.asarray([7, -7]), 3)
    Array([1, 2], dtype=int32)
    """
    x1, x2 = _numeric("remainder", x1, x2)
    if dtypes.is_complex(x1.dtype):
        raise DTypeError(f"remainder: not defined for complex operands ({x1.dtype})")
    if dtypes.is_integer(x1.dtype):
        r = ew.rem_p.bind(x1, x2)
        if dtypes.is_unsigned(x1.dtype):
            return r
        fix = bw.and_p.bind(bw.ne_p.bind(r, _zero(r)), bw.ne_p.bind(bw.lt_p.bind(r, _zero(r)), bw.lt_p.bind(x2, _zero(x2))))
        return ew.select_n_p.bind(*_broadcast_all(fix, r, ew.add_p.bind(r, x2)))
    return _float_divmod(x1, x2)[1]


mod = remainder


def divmod(x1: ArrayLike, x2: ArrayLike, /) -> tuple[Array, Array]:
    """(x1 // x2, x1 % x2), as NumPy.

    >>> enp.divmod(enp.asarray([7, -7]), 3)
    (Array([ 2, -3], dtype=int32), Array([1, 2], dtype=int32))
    """
    return floor_divide(x1, x2), remainder(x1, x2)


def _zero(x: Array) -> Array:
    return full_for("", (), 0, x.dtype, x)


def _filled(x: Array, value) -> Array:
    # x's shape, dtype and weak type: JAX's constants in floor_divide, remainder and the logical
    # functions keep a Python scalar's weak type (floor_divide(3.0, 2.0) is weak, as in JAX).
    return full_for("", x.shape, value, x.dtype, x, weak=x.weak_type)


def _broadcast_all(*xs: Array, op: str = "broadcast_arrays") -> list[Array]:
    from ember.core.primitives._rules import broadcast_shapes
    from ember.numpy._shape import broadcast_to

    shape = xs[0].shape
    if all(x.shape == shape for x in xs):
        return list(xs)
    target = broadcast_shapes(op, *(x.shape for x in xs))
    return [broadcast_to(x, target) for x in xs]


def _float_divmod(x1: Array, x2: Array) -> tuple[Array, Array]:
    # NumPy's npy_divmod: take fmod, fix its sign to follow x2, then floor the exact quotient.
    x1, x2 = _broadcast_all(x1, x2)
    zero = _filled(x1, 0)
    mod = ew.rem_p.bind(x1, x2)
    div = ew.div_p.bind(ew.sub_p.bind(x1, mod), x2)
    wrong_sign = bw.and_p.bind(bw.ne_p.bind(mod, zero), bw.ne_p.bind(bw.lt_p.bind(x2, zero), bw.lt_p.bind(mod, zero)))
    mod = ew.select_n_p.bind(wrong_sign, mod, ew.add_p.bind(mod, x2))
    div = ew.select_n_p.bind(wrong_sign, div, ew.sub_p.bind(div, _filled(x1, 1)))
    mod = ew.select_n_p.bind(bw.eq_p.bind(mod, zero), mod, _copysign(zero, x2))
    floordiv = ew.floor_p.bind(div)
    half = _filled(x1, 0.5)
    floordiv = ew.select_n_p.bind(bw.gt_p.bind(ew.sub_p.bind(div, floordiv), half), floordiv, ew.add_p.bind(floordiv, _filled(x1, 1)))
    exact_zero = bw.eq_p.bind(div, zero)
    floordiv = ew.select_n_p.bind(exact_zero, floordiv, _copysign(zero, ew.div_p.bind(x1, x2)))
    by_zero = bw.eq_p.bind(x2, zero)
    floordiv = ew.select_n_p.bind(by_zero, floordiv, ew.div_p.bind(x1, x2))
    return floordiv, mod


_SIGNED_OF_SIZE = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


def signbit(x: ArrayLike, /) -> Array:
    """Whether the sign bit is set (True for -0.0 and negative NaNs too).

    >>> enp.signbit(enp.asarray([-0.0, 1.0]))
    Array([ True, False], dtype=bool)
    """
    (x,) = promote_args("signbit", x)
    if dtypes.is_complex(x.dtype):
        raise DTypeError(f"signbit: not defined for complex operands ({x.dtype})")
    if not dtypes.is_floating(x.dtype):
        return bw.lt_p.bind(x, _zero(x)) if dtypes.is_signed(x.dtype) else full_for("signbit", x.shape, False, dtypes.bool_, x)
    bits = ew.bitcast_convert_type_p.bind(x, new_dtype=_SIGNED_OF_SIZE[x.dtype.itemsize])
    return bw.lt_p.bind(bits, _zero(bits))


def _copysign(magnitude: Array, sign_of: Array) -> Array:
    return ew.select_n_p.bind(signbit(sign_of), ew.abs_p.bind(magnitude), ew.neg_p.bind(ew.abs_p.bind(magnitude)))


def power(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 ** x2; integer powers of integers are exact (negative exponents raise, as NumPy).

    >>> enp.power(enp.asarray([2, 3]), 2)
    Array([4, 9], dtype=int32)
    """
    if type(x2) is int and not isinstance(x1, (int, float, complex)):
        if type(x1) is Array and _fastlane.on and x1._place.host:
            # Fast lane: the integer_pow kernel on the buffer, as binding it would run it
            v = x1._value
            if v.dtype in _INTEGER_POW_LANE and (x2 >= 0 or v.dtype.kind in "fc") and -(2**31) <= x2 < 2**31:
                out = _integer_pow(v, y=x2)
                if type(out) is np.ndarray and out.dtype is v.dtype:
                    return wrap(out, x1._weak, x1._place)
        (base,) = _numeric("power", x1)
        if x2 >= 0 or dtypes.is_inexact(base.dtype):
            return ew.integer_pow_p.bind(promote_args("power", base, x2)[0], y=x2)
    x1, x2 = _numeric("power", x1, x2)
    if dtypes.is_inexact(x1.dtype):
        return ew.pow_p.bind(x1, x2)
    return _integer_power(x1, x2)


pow = power
_integer_pow = ew.integer_pow_p.kernel()
_INTEGER_POW_LANE = frozenset(np.dtype(t) for t in ("float16", "float32", "float64", "complex64", "complex128", "int8",
                                                    "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))  # fmt: skip


def _integer_power(x: Array, y: Array) -> Array:
    # Square-and-multiply over the bits of y, wrapping like NumPy's integer power.
    if dtypes.is_signed(y.dtype) and type(y) is Array and (np.asarray(y) < 0).any():
        raise InvalidArgumentError("power: integers to negative integer powers are not allowed (as in NumPy); use a float base")
    x, y = _broadcast_all(x, y)
    one = full_for("power", x.shape, 1, x.dtype, x)
    acc, base, exponent = one, x, y
    for _ in range(8 * x.dtype.itemsize):
        bit = bw.ne_p.bind(bw.and_p.bind(exponent, one), full_for("power", x.shape, 0, x.dtype, x))
        acc = ew.select_n_p.bind(bit, acc, ew.mul_p.bind(acc, base))
        base = ew.mul_p.bind(base, base)
        exponent = bw.shift_right_logical_p.bind(exponent, one)
    return acc


# --- comparisons and logic ------------------------------------------------------------------


def _ordering(name: str, prim):
    def fn(x1: ArrayLike, x2: ArrayLike, /) -> Array:
        x1, x2 = promote_args(name, x1, x2)
        if dtypes.is_complex(x1.dtype):
            # NumPy orders complex numbers lexicographically: by real part, then imaginary.
            r1, r2, i1, i2 = ew.real_p.bind(x1), ew.real_p.bind(x2), ew.imag_p.bind(x1), ew.imag_p.bind(x2)
            same_real = bw.eq_p.bind(r1, r2)
            return ew.select_n_p.bind(*_broadcast_all(same_real, prim.bind(r1, r2), prim.bind(i1, i2)))
        return prim.bind(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    return _doc(fn, f"x1 {_SYMBOL[name]} x2, elementwise (complex numbers compare lexicographically).", "enp.asarray([1, 2, 3]), 2")


_SYMBOL = {"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}
less = _fastlane.binary(bw.lt_p, _ordering("less", bw.lt_p))
less_equal = _fastlane.binary(bw.le_p, _ordering("less_equal", bw.le_p))
greater = _fastlane.binary(bw.gt_p, _ordering("greater", bw.gt_p))
greater_equal = _fastlane.binary(bw.ge_p, _ordering("greater_equal", bw.ge_p))


def _to_bool(name: str, x) -> Array:
    (x,) = promote_args(name, x)
    return x if x.dtype == dtypes.bool_ else bw.ne_p.bind(x, _filled(x, 0))


def _logical(name: str, prim):
    def fn(x1: ArrayLike, x2: ArrayLike, /) -> Array:
        x1, x2 = promote_args(name, x1, x2)  # first, as jnp: two weak bools join to a strong one
        return prim.bind(_to_bool(name, x1), _to_bool(name, x2))

    fn.__name__ = fn.__qualname__ = name
    return _doc(fn, f"The truth value of x1 {name[8:].upper()} x2, elementwise (nonzero is True).", "enp.asarray([True, False]), True")


logical_and = _logical("logical_and", bw.and_p)
logical_or = _logical("logical_or", bw.or_p)
logical_xor = _logical("logical_xor", bw.xor_p)


def logical_not(x: ArrayLike, /) -> Array:
    """NOT x, elementwise (nonzero is True).

    >>> enp.logical_not(enp.asarray([0, 1]))
    Array([ True, False], dtype=bool)
    """
    return bw.not_p.bind(_to_bool("logical_not", x))


_select_kernel = ew.select_n_p.kernel()
_np_where = np.where
_BOOL = np.dtype(np.bool_)


def where(condition: ArrayLike, x: ArrayLike | None = None, y: ArrayLike | None = None, /, *,
          size: int | None = None, fill_value=None) -> Array | tuple[Array, ...]:  # fmt: skip
    """`x` where `condition` is true, else `y`; all three broadcast, x and y promote.

    With only `condition`, the indices of its nonzero elements, as `nonzero(condition, size=,
    fill_value=)` (a traced condition needs `size=`).

    >>> enp.where(enp.asarray([True, False]), 1.0, 0.0)
    Array([1., 0.], dtype=float32, weak_type=True)
    >>> enp.where(enp.asarray([0, 3, 4]), size=3, fill_value=-1)
    (Array([ 1,  2, -1], dtype=int32),)
    """
    if (type(condition) is Array and type(x) is Array and type(y) is Array and _fastlane.on
            and condition._place.host and x._place is condition._place and y._place is condition._place):
        # Fast lane: a bool condition and two cases of one dtype, all of one shape (the common where).
        c, a, b = condition._value, x._value, y._value
        if c.dtype is _BOOL and a.dtype is b.dtype and c.shape == a.shape == b.shape and size is None:
            out = _np_where(c, a, b) if c.size < BRANCHLESS_MIN else _select_kernel(c, b, a)  # (what the kernel runs)
            if type(out) is np.ndarray and out.dtype is a.dtype:
                return wrap(out, x._weak and y._weak, condition._place)
    try:
        return _where(condition, x, y, size, fill_value)
    except Exception as err:  # where is its own traceback boundary, as the lanes are (_fastlane.py)
        filter_error(err)
        raise


where.__ember_boundary__ = True


def _where(condition, x, y, size, fill_value) -> Array | tuple[Array, ...]:
    if x is None and y is None:
        from ember.numpy._take import nonzero

        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise InvalidArgumentError("where: pass both x and y (choose elementwise) or neither (indices of nonzero "
                                   "elements, as nonzero)")  # fmt: skip
    if size is not None or fill_value is not None:
        raise InvalidArgumentError("where: size= and fill_value= apply only to the one-argument form where(condition)")
    cond = _to_bool("where", condition)
    x, y = promote_args("where", x, y)
    cond, x, y = _broadcast_all(cond, x, y, op="where")
    return ew.select_n_p.bind(cond, y, x)


def clip(a: ArrayLike, a_min: ArrayLike | None = None, a_max: ArrayLike | None = None, /, *, min=None, max=None) -> Array:
    """Limit values to [a_min, a_max] (either bound may be None); NaN propagates.

    Complex input is rejected, as by `jax.numpy.clip` (complex numbers have no order).

    >>> enp.clip(enp.asarray([-1.0, 0.5, 2.0]), 0.0, 1.0)
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if dtypes.is_complex(promote_args("clip", *(v for v in (a, lo, hi) if v is not None))[0].dtype):
        raise DTypeError("clip: complex numbers have no order (as in jax.numpy); clip enp.real(x) and enp.imag(x) separately")
    x = a
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return x if isinstance(x, Array) else promote_args("clip", x)[0]


# --- classification and complex parts (used across ember.numpy) -----------------------------------


def isnan(x: ArrayLike, /) -> Array:
    """Whether x is NaN (a complex number is NaN when either part is).

    >>> enp.isnan(enp.asarray([1.0, float("nan")]))
    Array([False,  True], dtype=bool)
    """
    (x,) = promote_args("isnan", x)
    if not dtypes.is_inexact(x.dtype):
        return full_for("isnan", x.shape, False, dtypes.bool_, x)
    return bw.ne_p.bind(x, x)


def isfinite(x: ArrayLike, /) -> Array:
    """Whether x is neither infinite nor NaN (both parts, for complex).

    >>> enp.isfinite(enp.asarray([1.0, float("inf")]))
    Array([ True, False], dtype=bool)
    """
    (x,) = promote_args("isfinite", x)
    if dtypes.is_complex(x.dtype):
        return bw.and_p.bind(ew.is_finite_p.bind(ew.real_p.bind(x)), ew.is_finite_p.bind(ew.imag_p.bind(x)))
    if not dtypes.is_floating(x.dtype):
        return full_for("isfinite", x.shape, True, dtypes.bool_, x)
    return ew.is_finite_p.bind(x)


def isinf(x: ArrayLike, /) -> Array:
    """Whether x is +inf or -inf (either part, for complex).

    >>> enp.isinf(enp.asarray([1.0, float("-inf")]))
    Array([False,  True], dtype=bool)
    """
    (x,) = promote_args("isinf", x)
    if not dtypes.is_inexact(x.dtype):
        return full_for("isinf", x.shape, False, dtypes.bool_, x)
    magnitude = ew.abs_p.bind(x) if not dtypes.is_complex(x.dtype) else None
    if magnitude is None:
        return bw.or_p.bind(isinf(ew.real_p.bind(x)), isinf(ew.imag_p.bind(x)))
    return bw.eq_p.bind(magnitude, full_for("isinf", (), float("inf"), magnitude.dtype, x))


def real(val: ArrayLike, /) -> Array:
    """The real part (the array itself for real input).

    >>> enp.real(enp.asarray([1 + 2j]))
    Array([1.], dtype=float32)
    """
    (x,) = promote_args("real", val)
    return ew.real_p.bind(x) if dtypes.is_complex(x.dtype) else x


def imag(val: ArrayLike, /) -> Array:
    """The imaginary part (zeros for real input).

    >>> enp.imag(enp.asarray([1 + 2j]))
    Array([2.], dtype=float32)
    """
    (x,) = promote_args("imag", val)
    return ew.imag_p.bind(x) if dtypes.is_complex(x.dtype) else _filled(x, 0)


def conjugate(x: ArrayLike, /) -> Array:
    """The complex conjugate (the array itself for real input).

    >>> enp.conjugate(enp.asarray([1 + 2j]))
    Array([1.-2.j], dtype=complex64)
    """
    (x,) = promote_args("conjugate", x)
    return ew.conj_p.bind(x) if dtypes.is_complex(x.dtype) else x


conj = conjugate


def _shift_operands(op: str, x1, x2) -> list[Array]:
    x1, x2 = _numeric(op, x1, x2)
    if not dtypes.is_integer(x1.dtype):
        raise DTypeError(f"{op}: defined for integer (and bool) operands only, got {x1.dtype} (as in NumPy)")
    return [x1, x2]


def left_shift(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 << x2 for integers (0 once the shift reaches the bit width; bool gives int32, as JAX).

    >>> enp.left_shift(enp.asarray([1, 3]), 2)
    Array([ 4, 12], dtype=int32)
    """
    x1, x2 = _shift_operands("left_shift", x1, x2)
    return bw.shift_left_p.bind(x1, x2)


def right_shift(x1: ArrayLike, x2: ArrayLike, /) -> Array:
    """x1 >> x2: arithmetic for signed integers, logical for unsigned ones (as NumPy).

    >>> enp.right_shift(enp.asarray([-8, 8]), 1)
    Array([-4,  4], dtype=int32)
    """
    x1, x2 = _shift_operands("right_shift", x1, x2)
    prim = bw.shift_right_arithmetic_p if dtypes.is_signed(x1.dtype) else bw.shift_right_logical_p
    return prim.bind(x1, x2)


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


__all__ = [
    "abs",
    "absolute",
    "add",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_not",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "clip",
    "conj",
    "conjugate",
    "cos",
    "divide",
    "divmod",
    "equal",
    "exp",
    "floor_divide",
    "greater",
    "greater_equal",
    "imag",
    "invert",
    "isfinite",
    "isinf",
    "isnan",
    "left_shift",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "negative",
    "not_equal",
    "positive",
    "pow",
    "power",
    "real",
    "remainder",
    "right_shift",
    "signbit",
    "sin",
    "sqrt",
    "subtract",
    "tanh",
    "true_divide",
    "where",
]  # fmt: skip
