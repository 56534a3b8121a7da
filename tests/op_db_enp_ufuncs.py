"""op_db entries for ember.numpy's elementwise functions: NumPy's ufuncs and their relatives.

The reference is NumPy's function of the same name. Result dtypes follow
jax.numpy (integer and bool inputs of transcendental functions give the
default float; bool in integer arithmetic gives int32), so NumPy's own result
dtype is not compared, only its values. Where NumPy would compute in a
narrower float than ember (float16 for int8 input), the reference gets
float64 input instead.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from op_db import (
    ALL,
    BF16,
    COARSE_GRID,
    BOOL,
    BOOL_INT_ONLY,
    FLOATING,
    INTEGER,
    NO_BOOL,
    NO_COMPLEX,
    NUMERIC,
    REAL,
    SIXTY_FOUR_BIT,
    OpInfo,
    Sample,
    binary_samples,
    make_array,
    register,
    to_bool,
    to_float,
    to_real,
    unary_samples,
    upcast,
    with_specials,
)

import ember.numpy as enp

INT_ARITHMETIC = "integer number theory: NumPy rejects bool, floating and complex inputs"
ROUND_BOOL = "jax.numpy.round rejects bool (lax.round needs a float); NumPy would give float16"
NO_POSITIVE_BOOL = "NumPy rejects bool for +x and -x (use logical_not / invert)"
C64 = np.dtype(np.complex64)
NOT_COMPLEX = REAL


def _int32_if_bool(dtype):
    return np.dtype(np.int32) if dtype == np.bool_ else dtype


def _float_power_dtype(dtype):
    if dtype.kind == "c":
        return dtype
    return np.dtype(np.float64 if dtype in SIXTY_FOUR_BIT else np.float32)


def _is_array(a) -> bool:
    return isinstance(a, (np.ndarray, np.generic))  # 0-d bool samples are NumPy scalars


def _float64_ints(fn):
    """`fn` with bool and integer arrays as float64 (NumPy itself would compute int8 in float16)."""

    def ref(*args, **kwargs):
        return fn(*(a.astype(np.float64) if _is_array(a) and a.dtype.kind in "biu" else a for a in args), **kwargs)

    return ref


def _in_result_float(fn):
    """`fn` on arrays already in ember's result dtype (for references that must run in that dtype)."""

    def ref(*args, **kwargs):
        return fn(*(a.astype(to_float(a.dtype)) if _is_array(a) and a.dtype.kind in "biu" else a for a in args), **kwargs)

    return ref


def _nonzero(make):
    """Replace integer zeros by ones: NumPy's integer x / 0 gives platform-dependent values."""

    def make_nonzero(rng, dtype):
        samples = make(rng, dtype)
        if np.dtype(dtype).kind in "iu":
            for s in samples:
                s.args = tuple(np.where(a == 0, np.ones_like(a), a) if _is_array(a) else a for a in s.args)
        return samples

    return make_nonzero


def _plus(*makes):
    def make(rng, dtype):
        return [s for m in makes for s in m(rng, dtype)]

    return make


def _huge(dtype):
    """Values whose squares overflow `dtype` (what hypot's scaling is for)."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" and dtype != BF16:
        return make_array(np.random.default_rng(0), (3,), dtype)
    big = float(ml_dtypes.finfo(dtype).max)
    return np.array([big / 4, big / 3, 3.0]).astype(dtype)


def _tiny(dtype):
    """Values whose squares underflow `dtype`."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" and dtype != BF16:
        return make_array(np.random.default_rng(1), (3,), dtype)
    small = float(ml_dtypes.finfo(dtype).tiny)
    return np.array([small, small * 4, small * 0.5]).astype(dtype)


def _ties(dtype):
    values = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 4.0, -7.0])
    if np.dtype(dtype) == np.bool_:
        return values > 1
    if np.dtype(dtype).kind == "u":
        values = np.abs(values)
    if np.dtype(dtype).kind == "c":
        return (values + 1j * values[::-1]).astype(dtype)
    return values.astype(dtype)


def _extremes(dtype):
    """The largest, smallest normal and smallest subnormal values of a float dtype, both signs, and 1."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f" and dtype != BF16:
        return make_array(np.random.default_rng(2), (4,), dtype)
    info = ml_dtypes.finfo(dtype)
    values = [float(info.max), float(info.tiny), float(info.smallest_subnormal), 3 * float(info.smallest_subnormal), 1.0]
    return np.array(values + [-v for v in values]).astype(dtype)


def _sinc_samples(rng, dtype):
    # Complex sinc divides two numbers of size ~cosh(pi * imag); the runner compares real and imaginary
    # parts separately, so keep |imag| small enough that a few ulps of |sinc| fit the smaller part's tolerance.
    return unary_samples(-1.0, 1.0)(rng, dtype) if np.dtype(dtype).kind == "c" else unary_samples()(rng, dtype)


def _ufunc(name, dtypes=ALL, unsupported="", *, ref=None, samples=None, out=None, nin=1, specials=False, **kw):
    samples = samples or (unary_samples() if nin == 1 else binary_samples())
    if specials:
        samples = with_specials(samples)
    register(OpInfo(f"enp.{name}", getattr(enp, name), ref or getattr(np, name), dtypes, samples, unsupported,
                    out_dtype=out, **kw))  # fmt: skip


# --- transcendental: integers and bool go to the default float ----------------------------------------

for _name, _samples, _aliases in [
    ("sqrt", unary_samples(0.0, 5.0), ()), ("exp", unary_samples(), ()), ("log", unary_samples(0.05, 5.0), ()),
    ("sin", unary_samples(), ()), ("cos", unary_samples(), ()), ("tan", unary_samples(-1.4, 1.4), ()),
    ("tanh", unary_samples(), ()), ("sinh", unary_samples(), ()), ("cosh", unary_samples(), ()),
    ("arcsinh", unary_samples(), ("asinh",)), ("arctan", unary_samples(), ("atan",)), ("exp2", unary_samples(), ()),
    ("expm1", unary_samples(), ()), ("log1p", unary_samples(-0.9, 5.0), ()), ("log2", unary_samples(0.05, 9.0), ()),
    ("log10", unary_samples(0.05, 9.0), ()), ("sinc", _sinc_samples, ()),
]:  # fmt: skip
    _ufunc(_name, ALL, ref=_float64_ints(getattr(np, _name)), samples=_samples, out=to_float, specials=True, aliases=_aliases)
for _name, _alias, _samples in [
    ("arcsin", "asin", unary_samples(-0.95, 0.95)), ("arccos", "acos", unary_samples(-0.95, 0.95)),
    ("arctanh", "atanh", unary_samples(-0.95, 0.95)), ("arccosh", "acosh", unary_samples(1.05, 5.0)),
]:  # fmt: skip
    _ufunc(_name, ALL, ref=_float64_ints(getattr(np, _name)), samples=_samples, out=to_float, aliases=(_alias,))
for _name, _aliases in [("cbrt", ()), ("fabs", ()), ("deg2rad", ("radians",)), ("rad2deg", ("degrees",))]:
    _ufunc(_name, NOT_COMPLEX, NO_COMPLEX, ref=_float64_ints(getattr(np, _name)), out=to_float, specials=True, aliases=_aliases)

_ufunc("arctan2", NOT_COMPLEX, NO_COMPLEX, ref=_float64_ints(np.arctan2), nin=2, out=to_float, specials=True, aliases=("atan2",))
_ufunc("hypot", NOT_COMPLEX, NO_COMPLEX, ref=_float64_ints(np.hypot), nin=2, out=to_float, specials=True,
       samples=_plus(binary_samples(), lambda rng, d: [Sample((_huge(d), _huge(d)[::-1])), Sample((_tiny(d), _tiny(d)))]))
for _name in ("logaddexp", "logaddexp2"):
    _ufunc(_name, NOT_COMPLEX, NO_COMPLEX, ref=_float64_ints(getattr(np, _name)), nin=2, out=to_float, specials=True,
           samples=_plus(binary_samples(), binary_samples(-60, 60, shapes=[((6,), (6,))])))  # fmt: skip
_ufunc("float_power", ALL, ref=_float64_ints(np.float_power), nin=2, out=_float_power_dtype,
       samples=binary_samples(0.1, 3.0, rhs_low=-3, rhs_high=3),
       tol={C64: (1e-5, 1e-5)})  # complex64 pow loses a few more ulps than the real one (as lax.pow)


# --- arithmetic -------------------------------------------------------------------------------------------

_ufunc("add", ALL, nin=2, specials=True)
_ufunc("multiply", ALL, nin=2, specials=True)
_ufunc("subtract", NUMERIC, NO_BOOL, nin=2, specials=True)
_ufunc("true_divide", ALL, ref=_float64_ints(np.true_divide), nin=2, out=to_float, samples=_nonzero(binary_samples()),
       specials=True, aliases=("divide",))
for _name, _aliases in [("floor_divide", ()), ("remainder", ("mod",)), ("divmod", ())]:
    _ufunc(_name, NOT_COMPLEX, NO_COMPLEX, nin=2, out=_int32_if_bool, samples=_nonzero(binary_samples()), specials=True,
           aliases=_aliases, tol={d: (1e-2, 1e-2) for d in (np.dtype(np.float16), BF16)})  # quotients computed in float16
_ufunc("fmod", NOT_COMPLEX, NO_COMPLEX, nin=2, out=_int32_if_bool, specials=True)
_ufunc("power", ALL, nin=2, out=_int32_if_bool, aliases=("pow",), tol={C64: (1e-5, 1e-5)},  # as lax.pow for complex64
       samples=_plus(binary_samples(-3, 3, rhs_low=0, rhs_high=4),
                     lambda rng, d: [Sample((make_array(rng, (2, 3), d), p)) for p in (0, 1, 2, 3)]
                     + ([Sample((make_array(rng, (4,), d, 0.5, 3), -2))] if d.kind in "fc" or d == BF16 else [])),
       # Real powers of negative numbers are NaN (no derivative): positive bases, except for integer exponents.
       ad_samples=_plus(binary_samples(0.2, 3, rhs_low=0, rhs_high=4),
                        lambda rng, d: [Sample((make_array(rng, (2, 3), d), p)) for p in (0, 1, 2, 3)]))  # fmt: skip
_ufunc("negative", NUMERIC, NO_POSITIVE_BOOL, ref_in_dtype=True)
_ufunc("positive", NUMERIC, NO_POSITIVE_BOOL, ref_in_dtype=True)
_ufunc("absolute", ALL, out=to_real, specials=True, aliases=("abs",))
_ufunc("sign", NUMERIC, NO_BOOL, specials=True)
_ufunc("square", ALL, out=_int32_if_bool, specials=True)
_ufunc("reciprocal", ALL, out=_int32_if_bool, samples=_nonzero(unary_samples(-3, 3)), specials=True)
_ufunc("heaviside", NOT_COMPLEX, NO_COMPLEX, ref=_float64_ints(np.heaviside), nin=2, out=to_float, specials=True)
_ufunc("copysign", NOT_COMPLEX, NO_COMPLEX, ref=_float64_ints(np.copysign), nin=2, out=to_float, specials=True)

# --- rounding -----------------------------------------------------------------------------------------------

for _name in ("floor", "ceil", "trunc", "fix"):
    _ufunc(_name, NOT_COMPLEX, NO_COMPLEX, specials=True)
_ufunc("rint", ALL, ref=_float64_ints(np.rint), out=to_float, specials=True,
       samples=lambda rng, d: unary_samples()(rng, d) + [Sample((_ties(d),))],
       ad_samples=unary_samples())  # rounding is not differentiable at the ties (where it jumps)
_ufunc("round", NUMERIC, ROUND_BOOL, aliases=("around",),
       samples=lambda rng, d: [Sample((make_array(rng, s, d, -100, 100),), {"decimals": n})
                               for s in ((), (0,), (2, 3)) for n in (0, 1, 2, -1)] + [Sample((_ties(d),))],
       ad_samples=lambda rng, d: [Sample((make_array(rng, (2, 3), d, -100, 100),), {"decimals": n})
                                  for n in (0, 1, -1)],  # no ties: rounding jumps there
       ad_unsupported=COARSE_GRID)  # fmt: skip
_ufunc("modf", NOT_COMPLEX, NO_COMPLEX, ref=_float64_ints(np.modf), out=to_float, specials=True, ad_unsupported=COARSE_GRID)


# --- floating-point manipulation ---------------------------------------------------------------------------------

_ufunc("nextafter", NOT_COMPLEX, NO_COMPLEX, ref=_in_result_float(np.nextafter), nin=2, out=to_float, specials=True,
       ref_in_dtype=True, tol={d: (0, 0) for d in FLOATING})  # fmt: skip
_ufunc("spacing", NOT_COMPLEX, NO_COMPLEX, ref=_in_result_float(np.spacing), out=to_float, ref_in_dtype=True,
       samples=with_specials(_plus(unary_samples(), lambda rng, d: [Sample((_extremes(d),))])), tol={d: (0, 0) for d in FLOATING})

def _frexp_part(i):
    def op(x):
        return enp.frexp(x)[i]

    def ref(x):
        return np.frexp(x)[i]

    return op, _in_result_float(ref)


_FREXP_SAMPLES = with_specials(_plus(unary_samples(-1000, 1000), lambda rng, d: [Sample((_extremes(d),))]))
register(
    OpInfo("enp.frexp", _frexp_part(0)[0], _frexp_part(0)[1], NOT_COMPLEX, _FREXP_SAMPLES, NO_COMPLEX, out_dtype=to_float,
           ref_in_dtype=True, tol={d: (0, 0) for d in FLOATING}, ad_unsupported=COARSE_GRID),
    # The runner checks one result dtype per entry: frexp's int32 exponent gets an entry of its own.
    OpInfo("enp.frexp.exponent", _frexp_part(1)[0], _frexp_part(1)[1], NOT_COMPLEX, _FREXP_SAMPLES, NO_COMPLEX,
           out_dtype=lambda d: np.dtype(np.int32), ref_in_dtype=True),
)  # fmt: skip


def _ldexp_ref(x, e):
    # Exact: every float16/bfloat16/float32 result is a float64, rounded once into the dtype.
    dtype = to_float(x.dtype) if x.dtype.kind in "biu" else x.dtype
    return np.ldexp(x.astype(np.float64), e).astype(dtype)


def _ldexp_samples(rng, dtype):
    out = [Sample((make_array(rng, s1, dtype), make_array(rng, s2, np.int32, -20, 20)))
           for s1, s2 in (((), ()), ((4,), (4,)), ((2, 3), (3,)), ((0,), (0,)), ((), (2, 3)))]  # fmt: skip
    x = _extremes(dtype)
    for e in (-1200, -1100, -160, -30, -1, 0, 1, 30, 160, 1100, 1200, 2**31 - 1, -(2**31)):
        out.append(Sample((x, np.full(x.shape, e, np.int32))))
    out.append(Sample((make_array(rng, (5,), dtype), np.array([3, 200, 0, 1, 2], np.uint8))))
    out.append(Sample((make_array(rng, (3,), dtype), np.array([True, False, True]))))
    if np.dtype(dtype).kind == "f" or dtype == BF16:
        info = ml_dtypes.finfo(dtype)  # results rounded into the subnormals: one rounding, not two
        into_subnormals = np.linspace(int(info.minexp) - int(info.nmant) - 3, int(info.minexp), 24).astype(np.int32)
        out.append(Sample((make_array(rng, (24,), dtype, 1.0, 2.0), into_subnormals)))
        out.append(Sample((np.array([0.0, -0.0, np.inf, -np.inf, np.nan]).astype(dtype), np.array([5, -5, 3, -3, 1], np.int32))))
    return out


register(OpInfo("enp.ldexp", enp.ldexp, _ldexp_ref, NOT_COMPLEX, _ldexp_samples, NO_COMPLEX, out_dtype=to_float,
                ref_in_dtype=True, tol={d: (0, 0) for d in FLOATING}))  # fmt: skip

# --- extrema, comparisons and logic ----------------------------------------------------------------------------

for _name in ("maximum", "minimum", "fmax", "fmin"):
    _ufunc(_name, ALL, nin=2, specials=True, ref_in_dtype=True)
for _name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    _ufunc(_name, ALL, nin=2, out=to_bool, samples=binary_samples(-2, 2), specials=True, ref_in_dtype=True)
for _name in ("logical_and", "logical_or", "logical_xor"):
    _ufunc(_name, ALL, nin=2, out=to_bool, samples=binary_samples(-1, 2), specials=True, ref_in_dtype=True)
_ufunc("logical_not", ALL, out=to_bool, samples=unary_samples(-1, 2), specials=True, ref_in_dtype=True)
for _name in ("isnan", "isinf", "isfinite"):
    _ufunc(_name, ALL, out=to_bool, specials=True, ref_in_dtype=True)
for _name in ("isposinf", "isneginf", "signbit"):
    _ufunc(_name, NOT_COMPLEX, NO_COMPLEX, out=to_bool, specials=True, ref_in_dtype=True)
for _name in ("iscomplex", "isreal"):
    _ufunc(_name, ALL, out=to_bool, specials=True, ref_in_dtype=True)


def _where_samples(rng, dtype):
    shapes = [((), (), ()), ((4,), (4,), (4,)), ((2, 3), (3,), ()), ((2, 1), (1, 3), (2, 3)), ((0,), (0,), ())]
    out = [Sample((make_array(rng, c, np.bool_), make_array(rng, a, dtype), make_array(rng, b, dtype))) for c, a, b in shapes]
    out.append(Sample((make_array(rng, (5,), np.int32, -1, 2), make_array(rng, (5,), dtype), make_array(rng, (5,), dtype))))
    return out


def _clip_samples(rng, dtype):
    out = [Sample((make_array(rng, s, dtype), make_array(rng, (), dtype, -2, 0), make_array(rng, (), dtype, 0, 3)))
           for s in ((), (5,), (2, 3), (0,))]  # fmt: skip
    out.append(Sample((make_array(rng, (2, 3), dtype), make_array(rng, (3,), dtype, -2, 0), make_array(rng, (2, 1), dtype, 0, 3))))
    out.append(Sample((make_array(rng, (4,), dtype), None, make_array(rng, (), dtype))))
    out.append(Sample((make_array(rng, (4,), dtype), make_array(rng, (), dtype), None)))
    return out


register(
    OpInfo("enp.where", enp.where, np.where, ALL, _where_samples, ref_in_dtype=True),
    OpInfo("enp.clip", enp.clip, np.clip, NOT_COMPLEX, _clip_samples,
           "jax.numpy.clip rejects complex input (complex numbers have no order)", ref_in_dtype=True),
)  # fmt: skip


def _isclose_samples(rng, dtype):
    out = []
    for shape in ((), (6,), (2, 3), (0,)):
        a = make_array(rng, shape, dtype, -5, 5)
        for delta in (0.0, 1e-7, 0.25):
            b = (a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) * (1 + delta) + delta).astype(dtype)
            out.append(Sample((a, b)))
    a = make_array(rng, (6,), dtype, -5, 5)
    b = (a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) * 1.05).astype(dtype)
    out.append(Sample((a, b), {"rtol": 0.1, "atol": 0.5}))
    out.append(Sample((a, b), {"rtol": 0.0, "atol": 0.0}))
    if dtype.kind in "fc" or dtype == BF16:
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
        grid_a, grid_b = (g.ravel().astype(dtype) for g in np.meshgrid(specials, specials))
        out += [Sample((grid_a, grid_b)), Sample((grid_a, grid_b), {"equal_nan": True})]
    return out


_ufunc("isclose", ALL, ref=_float64_ints(np.isclose), samples=_isclose_samples, out=to_bool)

# --- bits and integers ---------------------------------------------------------------------------------------------

for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _ufunc(_name, BOOL + INTEGER, BOOL_INT_ONLY, nin=2, samples=binary_samples(-100, 100), ref_in_dtype=True)
_ufunc("invert", BOOL + INTEGER, BOOL_INT_ONLY, samples=unary_samples(-100, 100), aliases=("bitwise_invert", "bitwise_not"),
       ref_in_dtype=True)  # fmt: skip
_ufunc("bitwise_count", BOOL + INTEGER, BOOL_INT_ONLY, samples=unary_samples(-128, 128), ref_in_dtype=True,
       out=lambda d: np.dtype(np.uint8))  # fmt: skip


def _shift_samples(rng, dtype):
    bits = 8 * np.dtype(dtype).itemsize
    out = [Sample((make_array(rng, s1, dtype, -100, 100), make_array(rng, s2, dtype, 0, bits + 3)))
           for s1, s2 in (((), ()), ((6,), (6,)), ((2, 3), (3,)), ((0,), (0,)))]  # fmt: skip
    if np.dtype(dtype).kind == "i":  # negative shift amounts: 0 (left) or the sign fill (right), as NumPy
        out.append(Sample((make_array(rng, (4,), dtype, -100, 100), np.array([-1, -3, 0, 2], dtype=dtype))))
    return out


for _name, _alias in (("left_shift", "bitwise_left_shift"), ("right_shift", "bitwise_right_shift")):
    _ufunc(_name, BOOL + INTEGER, BOOL_INT_ONLY, nin=2, samples=_shift_samples, out=_int32_if_bool, aliases=(_alias,),
           ref_in_dtype=True)  # fmt: skip


def _number_theory_samples(rng, dtype):
    out = binary_samples(-30, 30)(rng, dtype)
    zeros = np.array([0, 0, 7, 12, 1, 9], dtype=dtype) if np.dtype(dtype).kind != "b" else np.array([False, True])
    out.append(Sample((zeros, zeros[::-1].copy())))
    if np.dtype(dtype).kind == "i":
        out.append(Sample((np.array([-12, 18, -7, 0], dtype=dtype), np.array([8, -27, -7, -5], dtype=dtype))))
    if np.dtype(dtype).kind in "iu":  # Fibonacci neighbours: Euclid's longest runs
        fib = [1, 2]
        while fib[-1] + fib[-2] <= np.iinfo(dtype).max:
            fib.append(fib[-1] + fib[-2])
        out.append(Sample((np.array(fib[-3:], dtype=dtype), np.array(fib[-4:-1], dtype=dtype))))
    return out


for _name in ("gcd", "lcm"):
    _ufunc(_name, INTEGER, INT_ARITHMETIC, nin=2, samples=_number_theory_samples, ref_in_dtype=True)

# --- complex numbers and cleaning ------------------------------------------------------------------------------------

_ufunc("real", ALL, out=to_real, specials=True)
_ufunc("imag", ALL, out=to_real, specials=True)
_ufunc("conjugate", ALL, specials=True, aliases=("conj",))
_ufunc("angle", ALL, ref=_float64_ints(np.angle), out=lambda d: to_real(to_float(d)), specials=True,
       samples=lambda rng, d: unary_samples()(rng, d) + unary_samples(shapes=[(5,)], deg=True)(rng, d))  # fmt: skip
_ufunc("nan_to_num", ALL, ref=lambda x, **kw: _nan_to_num_ref(x, **kw), specials=True, ref_in_dtype=True,
       samples=lambda rng, d: unary_samples()(rng, d) + [Sample((_specials(d),), {"nan": 1.5, "posinf": 100.0, "neginf": -100.0})])


def _specials(dtype):
    values = np.array([0.0, np.nan, np.inf, -np.inf, 2.5])
    if np.dtype(dtype).kind == "c":
        return (values + 1j * values[::-1]).astype(dtype)
    if np.dtype(dtype).kind != "f" and np.dtype(dtype) != BF16:
        return make_array(np.random.default_rng(3), (5,), dtype)
    return values.astype(dtype)


def _nan_to_num_ref(x, nan=0.0, posinf=None, neginf=None):
    # The defaults are the limits of ember's dtype, not of the float64 the reference computes in.
    if x.dtype.kind not in "fc" and x.dtype != BF16:
        return x
    info = ml_dtypes.finfo(to_real(x.dtype))
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    return np.nan_to_num(upcast(x), nan=nan, posinf=posinf, neginf=neginf)
