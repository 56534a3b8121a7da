"""op_db entries for `ember.lax`: one per lax function, covering every primitive."""

from __future__ import annotations

import numpy as np
import scipy.special as sc
from op_db import (
    ALL,
    BF16,
    COARSE_GRID,
    BOOL,
    BOOL_INT_ONLY,
    COMPLEX,
    COMPLEX_ONLY,
    FLOAT_ONLY,
    FLOATING,
    INEXACT,
    INEXACT_ONLY,
    INT_ONLY,
    INTEGER,
    NO_BOOL,
    NO_COMPLEX,
    NUMERIC,
    REAL,
    SIGNED,
    OpInfo,
    Sample,
    binary_samples,
    make_array,
    register,
    to_bool,
    to_real,
    unary_samples,
    with_specials,
)

from ember import lax

SIGNED_OR_INEXACT = SIGNED + INEXACT
REAL_NUMERIC = INTEGER + FLOATING
LOW = (np.dtype(np.float16), BF16)


def _bits(x):
    return 8 * x.dtype.itemsize


def _unsigned_view(x):
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _trunc_div(x, y):
    if x.dtype.kind in "iu":
        q = np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64))
        return (np.sign(x.astype(np.int64)) * np.sign(y.astype(np.int64)) * q).astype(x.dtype)
    return x / y


def _shift_left(x, y):
    big = (y < 0) | (y >= _bits(x))
    return np.where(big, 0, np.left_shift(x, np.where(big, 0, y))).astype(x.dtype)


def _shift_right_logical(x, y):
    big = (y < 0) | (y >= _bits(x))
    u = _unsigned_view(x)
    return np.where(big, 0, u >> np.where(big, 0, y).astype(u.dtype)).astype(u.dtype).view(x.dtype)


def _shift_right_arithmetic(x, y):
    s = x.view({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize])
    amount = np.clip(np.where(y < 0, _bits(x) - 1, y), 0, _bits(x) - 1)
    return (s >> amount.astype(s.dtype)).view(x.dtype)


def _clz(x):
    u = _unsigned_view(x)
    width = _bits(x)
    out = np.array([width - int(v).bit_length() for v in u.ravel()], dtype=x.dtype)
    return out.reshape(x.shape)


def _round_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _logistic(x):
    return 1 / (1 + np.exp(-x))


def _shift_samples(rng, dtype):
    out = []
    for s1, s2 in [((), ()), ((5,), (5,)), ((2, 3), (3,)), ((0,), (0,))]:
        x = make_array(rng, s1, dtype, -100, 100)
        y = make_array(rng, s2, dtype, 0, 8 * np.dtype(dtype).itemsize + 3 if dtype.kind == "u" else 8 * dtype.itemsize + 3)
        out.append(Sample((x, y)))
    if dtype.kind == "i":  # negative shift amounts
        out.append(Sample((make_array(rng, (4,), dtype), np.array([-1, -3, 0, 2], dtype=dtype))))
    return out


def _elementwise(name, ref, dtypes, unsupported="", samples=None, out=None, tol=None, prims=None, nin=1, **kw):
    samples = samples or (unary_samples() if nin == 1 else binary_samples())
    register(OpInfo(f"lax.{name}", getattr(lax, name), ref, dtypes, samples, unsupported,
                    primitives=prims or (name,), out_dtype=out, tol=tol or {}, **kw))  # fmt: skip


# --- unary elementwise -------------------------------------------------------------------------------

_elementwise("neg", np.negative, NUMERIC, NO_BOOL, ref_in_dtype=True)
_elementwise("sign", np.sign, NUMERIC, NO_BOOL, samples=with_specials(unary_samples()), ref_in_dtype=True)
_elementwise("floor", np.floor, FLOATING, FLOAT_ONLY, samples=with_specials(unary_samples()))
_elementwise("ceil", np.ceil, FLOATING, FLOAT_ONLY, samples=with_specials(unary_samples()))
_elementwise("is_finite", np.isfinite, FLOATING, FLOAT_ONLY, samples=with_specials(unary_samples()), out=to_bool)
for _name, _ref in [("exp", np.exp), ("exp2", np.exp2), ("expm1", np.expm1), ("tanh", np.tanh), ("sin", np.sin),
                    ("cos", np.cos), ("tan", np.tan), ("atan", np.arctan), ("sinh", np.sinh), ("cosh", np.cosh),
                    ("asinh", np.arcsinh), ("logistic", _logistic)]:  # fmt: skip
    _elementwise(_name, _ref, INEXACT, INEXACT_ONLY, samples=with_specials(unary_samples()))
_elementwise("log", np.log, INEXACT, INEXACT_ONLY, samples=with_specials(unary_samples(0.05, 5.0)))
_elementwise("log1p", np.log1p, INEXACT, INEXACT_ONLY, samples=with_specials(unary_samples(-0.9, 5.0)))
_elementwise("sqrt", np.sqrt, INEXACT, INEXACT_ONLY, samples=with_specials(unary_samples(0.0, 5.0)))
_elementwise("rsqrt", lambda x: 1 / np.sqrt(x), INEXACT, INEXACT_ONLY, samples=unary_samples(0.1, 5.0))
_elementwise("asin", np.arcsin, INEXACT, INEXACT_ONLY, samples=unary_samples(-0.95, 0.95))
_elementwise("acos", np.arccos, INEXACT, INEXACT_ONLY, samples=unary_samples(-0.95, 0.95))
_elementwise("acosh", np.arccosh, INEXACT, INEXACT_ONLY, samples=unary_samples(1.05, 5.0))
_elementwise("atanh", np.arctanh, INEXACT, INEXACT_ONLY, samples=unary_samples(-0.95, 0.95))
_elementwise("cbrt", np.cbrt, FLOATING, FLOAT_ONLY, samples=with_specials(unary_samples()))
_elementwise("square", np.square, NUMERIC, NO_BOOL, ref_in_dtype=True)
_elementwise("abs", np.abs, SIGNED_OR_INEXACT, "defined for signed, floating and complex inputs; unsigned and bool"
             " are their own magnitude (use ember.numpy.abs)", samples=with_specials(unary_samples()), out=to_real)  # fmt: skip
_elementwise("real", np.real, COMPLEX, COMPLEX_ONLY, out=to_real)
_elementwise("imag", np.imag, COMPLEX, COMPLEX_ONLY, out=to_real)
_elementwise("conj", np.conj, INEXACT, INEXACT_ONLY, prims=("conj", "convert_element_type"),
             out=lambda d: d if d.kind == "c" else np.dtype(np.complex128 if d == np.float64 else np.complex64))
_elementwise("erf", sc.erf, FLOATING, FLOAT_ONLY, samples=with_specials(unary_samples()))
_elementwise("erfc", sc.erfc, FLOATING, FLOAT_ONLY, samples=with_specials(unary_samples(-3, 8)))
_elementwise("erf_inv", sc.erfinv, FLOATING, FLOAT_ONLY, samples=unary_samples(-0.99, 0.99),
             tol={np.dtype(np.float32): (1e-5, 1e-6)})  # fmt: skip
_elementwise("lgamma", sc.gammaln, FLOATING, FLOAT_ONLY, samples=unary_samples(0.1, 8.0),
             tol={np.dtype(np.float32): (1e-5, 1e-6)})  # fmt: skip
_elementwise("digamma", sc.digamma, FLOATING, FLOAT_ONLY, samples=unary_samples(0.1, 8.0),
             tol={np.dtype(np.float32): (1e-5, 1e-5)})  # fmt: skip
_elementwise("bitwise_not", lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x), BOOL + INTEGER,
             BOOL_INT_ONLY, prims=("not",), ref_in_dtype=True)  # fmt: skip
_elementwise("population_count", lambda x: np.bitwise_count(_unsigned_view(x)).astype(x.dtype), INTEGER, INT_ONLY,
             samples=unary_samples(-100, 100), ref_in_dtype=True)  # fmt: skip
_elementwise("clz", _clz, INTEGER, INT_ONLY, samples=unary_samples(-100, 100), ref_in_dtype=True)

# --- binary elementwise --------------------------------------------------------------------------------

_elementwise("add", lambda x, y: np.add(x, y), ALL, "", nin=2, ref_in_dtype=True)
_elementwise("sub", np.subtract, NUMERIC, NO_BOOL, nin=2, ref_in_dtype=True)
_elementwise("mul", lambda x, y: np.multiply(x, y), ALL, "", nin=2, ref_in_dtype=True)
_elementwise("div", _trunc_div, NUMERIC, NO_BOOL, nin=2, samples=binary_samples(rhs_nonzero=True), ref_in_dtype=True,
             tol={d: (1e-2, 1e-2) for d in LOW})  # fmt: skip
_elementwise("rem", np.fmod, REAL_NUMERIC, "C's fmod: defined for real numbers (no bool)", nin=2,
             samples=binary_samples(rhs_nonzero=True), ad_unsupported=COARSE_GRID)  # fmt: skip
_elementwise("pow", np.power, INEXACT, INEXACT_ONLY, nin=2, samples=binary_samples(0.1, 3.0),
             tol={np.dtype(np.complex64): (1e-5, 1e-5)})  # fmt: skip
_elementwise("max", np.maximum, ALL, "", nin=2, samples=with_specials(binary_samples()), prims=("max",), ref_in_dtype=True)
_elementwise("min", np.minimum, ALL, "", nin=2, samples=with_specials(binary_samples()), prims=("min",), ref_in_dtype=True)
_elementwise("atan2", np.arctan2, FLOATING, FLOAT_ONLY, nin=2, samples=with_specials(binary_samples()))
_elementwise("nextafter", np.nextafter, FLOATING, FLOAT_ONLY, nin=2, ref_in_dtype=True, tol={d: (0, 0) for d in FLOATING})
_elementwise("complex", lambda x, y: x + 1j * y, (np.float32, np.float64), "builds complex64/128 from float32/64 parts",
             nin=2, out=lambda d: np.dtype(np.complex64 if d == np.float32 else np.complex128))  # fmt: skip
for _name, _ref in [("eq", np.equal), ("ne", np.not_equal)]:
    _elementwise(_name, _ref, ALL, "", nin=2, out=to_bool, samples=with_specials(binary_samples(-2, 2)), ref_in_dtype=True)
for _name, _ref in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    _elementwise(_name, _ref, REAL, NO_COMPLEX, nin=2, out=to_bool, samples=with_specials(binary_samples(-2, 2)),
                 ref_in_dtype=True)  # fmt: skip
for _name, _ref, _prim in [("bitwise_and", np.bitwise_and, "and"), ("bitwise_or", np.bitwise_or, "or"),
                           ("bitwise_xor", np.bitwise_xor, "xor")]:  # fmt: skip
    _elementwise(_name, _ref, BOOL + INTEGER, BOOL_INT_ONLY, nin=2, prims=(_prim,), ref_in_dtype=True)
for _name, _ref in [("shift_left", _shift_left), ("shift_right_logical", _shift_right_logical),
                    ("shift_right_arithmetic", _shift_right_arithmetic)]:  # fmt: skip
    _elementwise(_name, _ref, INTEGER, INT_ONLY, nin=2, samples=_shift_samples, ref_in_dtype=True)


def _fixed_first(values, low, high, shapes=((4,), (2, 3), (), (0,), (1, 3, 1))):
    """AD samples for a binary function differentiable in its second operand only: the first is a
    Python scalar (which the autodiff columns hold fixed, as they do every non-array argument),
    each value paired with a second operand of one of `shapes` in [low, high)."""

    def make(rng, d):
        return [Sample((v, make_array(rng, shapes[i % len(shapes)], d, low, high))) for i, v in enumerate(values)]

    return make


# Not differentiable in their first operand: polygamma in its integer order m, zeta in s (no
# primitive for the series of log(q + k) (q + k)^-s), igamma/igammac in a (no igamma_grad_a
# primitive). Their jvp rules raise an EmberError naming the operand, so the AD samples hold that
# operand fixed and check the derivative in the second one.
_elementwise("polygamma", lambda m, x: sc.polygamma(np.round(m).astype(int), x), FLOATING, FLOAT_ONLY, nin=2,
             samples=lambda rng, d: [Sample((np.array(m, d), make_array(rng, (4,), d, 0.5, 5.0))) for m in (0, 1, 2, 3)],
             tol={np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.float64): (1e-10, 1e-12)},
             ad_samples=_fixed_first((0, 1, 2, 3, 1), 0.5, 5.0))  # fmt: skip
_elementwise("zeta", sc.zeta, FLOATING, FLOAT_ONLY, nin=2, samples=binary_samples(1.5, 6.0, shapes=[((4,), (4,)), ((), (2, 3))]),
             tol={np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-13)},
             ad_samples=_fixed_first((1.5, 2.0, 3.25, 6.0, 4.5), 1.5, 6.0))  # fmt: skip
_elementwise("igamma", sc.gammainc, FLOATING, FLOAT_ONLY, nin=2, samples=binary_samples(0.1, 6.0),
             tol={np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-13)},
             ad_samples=_fixed_first((0.5, 1.0, 2.5, 6.0, 0.1), 0.1, 6.0))  # fmt: skip
_elementwise("igammac", sc.gammaincc, FLOATING, FLOAT_ONLY, nin=2, samples=binary_samples(0.1, 6.0),
             tol={np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-13)},
             ad_samples=_fixed_first((0.5, 1.0, 2.5, 6.0, 0.1), 0.1, 6.0))  # fmt: skip

# --- with parameters ------------------------------------------------------------------------------------

register(
    OpInfo("lax.integer_pow", lambda x, y: lax.integer_pow(x, y), lambda x, y: np.power(x, y) if y >= 0 else 1 / np.power(x, -y),
           NUMERIC, lambda rng, d: [Sample((make_array(rng, s, d, -3, 4), y)) for s in ((), (4,), (0,)) for y in (0, 1, 2, 3, 5)]
           + ([Sample((make_array(rng, (4,), d, 0.5, 3), -2))] if d.kind in "fcV" or d == BF16 else []),
           NO_BOOL, primitives=("integer_pow",), tol={d: (1e-2, 1e-2) for d in LOW}),
    OpInfo("lax.round", lambda x, m=0: lax.round(x, m), lambda x, m=0: _round_away(x) if m == 0 else np.rint(x), FLOATING,
           lambda rng, d: [Sample((_as(np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 3.7, -3.7]), d), m)) for m in (0, 1)]
           + [Sample((make_array(rng, (2, 3), d), 0))], FLOAT_ONLY, primitives=("round",),
           ad_samples=lambda rng, d: [Sample((make_array(rng, (2, 3), d), m)) for m in (0, 1)]),  # no ties: jumps there
    OpInfo("lax.select_n", lambda w, *cs: lax.select_n(w, *cs), lambda w, *cs: np.choose(w.astype(int), cs), ALL,
           lambda rng, d: [Sample((make_array(rng, (4,), np.bool_), make_array(rng, (4,), d), make_array(rng, (4,), d))),
                           Sample((np.array(True), make_array(rng, (2, 3), d), make_array(rng, (2, 3), d))),
                           Sample((rng.integers(0, 3, (5,)).astype(np.int32), *[make_array(rng, (5,), d) for _ in range(3)])),
                           Sample((make_array(rng, (0,), np.bool_), make_array(rng, (0,), d), make_array(rng, (0,), d)))],
           "", primitives=("select_n",), ref_in_dtype=True),
    OpInfo("lax.select", lambda p, t, f: lax.select(p, t, f), lambda p, t, f: np.where(p, t, f), ALL,
           lambda rng, d: [Sample((make_array(rng, s, np.bool_), make_array(rng, s, d), make_array(rng, s, d)))
                           for s in ((), (4,), (2, 3), (0,))], "", primitives=("select_n",), ref_in_dtype=True),
    OpInfo("lax.clamp", lambda lo, x, hi: lax.clamp(lo, x, hi), lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
           REAL, lambda rng, d: [Sample((make_array(rng, (), d, -2, 0), make_array(rng, s, d), make_array(rng, (), d, 0, 3)))
                                 for s in ((), (5,), (2, 3), (0,))], NO_COMPLEX, primitives=("clamp",), ref_in_dtype=True),
    OpInfo("lax.convert_element_type", lambda x, t: lax.convert_element_type(x, t), lambda x, t: x.astype(t), ALL,
           lambda rng, d: [Sample((make_array(rng, s, d, 0, 100), t)) for s in ((), (4,), (0,))
                           for t in (np.float32, np.int32, np.bool_, np.int8, np.uint8, np.complex64, np.float16)],
           "", primitives=("convert_element_type",), out_dtype_of=lambda d, s: np.dtype(s.args[1]), ref_in_dtype=True,
           # Small values, so that finite differences of a float16 result resolve its rounding steps.
           ad_samples=lambda rng, d: [Sample((make_array(rng, s, d, -1, 1), t)) for s in ((), (4,), (0,))
                                      for t in (np.float32, np.int32, np.complex64, np.float16)]),
    OpInfo("lax.bitcast_convert_type", lambda x, t: lax.bitcast_convert_type(x, t),
           lambda x, t: _bitcast_ref(x, t), INTEGER + FLOATING,
           lambda rng, d: [Sample((make_array(rng, (3,), d), t)) for t in _bitcast_targets(d)],
           "bool and complex have no bit-level representation here", primitives=("bitcast_convert_type",),
           out_dtype_of=lambda d, s: np.dtype(s.args[1]), ref_in_dtype=True),
    OpInfo("lax.reduce_precision", lambda x, e, m: lax.reduce_precision(x, e, m), lambda x, e, m: _reduce_precision_ref(x, e, m),
           FLOATING, lambda rng, d: [Sample((make_array(rng, s, d, -100, 100), e, m)) for s in ((), (6,), (0,))
                                     for e, m in ((5, 10), (8, 7)) if _fits(d, e, m)],
           FLOAT_ONLY, primitives=("reduce_precision",), ref_in_dtype=True,
           # Derivatives treat the rounding as the identity (as JAX does); finite differences (in float64)
           # would see its steps, so the autodiff columns keep float64's precision (no rounding at all).
           ad_samples=lambda rng, d: [Sample((make_array(rng, (6,), d), 11, 52))]),
)  # fmt: skip


def _as(values, dtype):
    with np.errstate(invalid="ignore", over="ignore"):
        return values.astype(dtype)


def _fits(dtype, exponent_bits, mantissa_bits):
    if dtype not in FLOATING:
        return (exponent_bits, mantissa_bits) == (8, 7)  # one sample, which must be rejected
    info = np.finfo(dtype) if dtype != BF16 else None
    if dtype == BF16:
        return (exponent_bits, mantissa_bits) == (8, 7)
    return info.nexp >= exponent_bits and info.nmant >= mantissa_bits


def _reduce_precision_ref(x, exponent_bits, mantissa_bits):
    target = {(5, 10): np.float16, (8, 7): BF16}[(exponent_bits, mantissa_bits)]
    with np.errstate(over="ignore"):
        return x.astype(np.float32).astype(target).astype(x.dtype)


def _bitcast_targets(dtype):
    same = {1: (np.int8, np.uint8), 2: (np.int16, np.uint16, np.float16), 4: (np.int32, np.float32, np.uint32),
            8: (np.int64, np.float64)}.get(dtype.itemsize, (np.int32,))  # fmt: skip
    return [t for t in same if np.dtype(t) != dtype][:2] + ([np.uint8] if dtype.itemsize > 1 else [])


def _bitcast_ref(x, target):
    target = np.dtype(target)
    if target.itemsize == x.dtype.itemsize:
        return x.view(target)
    return x.view(target).reshape(*x.shape, x.dtype.itemsize // target.itemsize)


# --- structural ----------------------------------------------------------------------------------------


def _struct(name, op, ref, samples, prims=None, dtypes=ALL, unsupported=""):
    register(OpInfo(f"lax.{name}", op, ref, dtypes, samples, unsupported, primitives=prims or (name,), ref_in_dtype=True))


NOT_COUNTABLE = "bool cannot count: iota needs a numeric dtype"


def _arrays(shapes, low=None, high=None):
    def make(rng, d):
        return [make_array(rng, s, d, low, high) for s in shapes]

    return make


_struct("iota", lambda d, n: lax.iota(d, n), lambda d, n: np.arange(n, dtype=d),
        lambda rng, d: [Sample((d, n)) for n in (0, 1, 5)], dtypes=NUMERIC, unsupported=NOT_COUNTABLE)
_struct("broadcasted_iota", lambda d, s, k: lax.broadcasted_iota(d, s, k),
        lambda d, s, k: np.broadcast_to(np.arange(s[k], dtype=d).reshape([-1 if i == k % len(s) else 1 for i in range(len(s))]), s),
        lambda rng, d: [Sample((d, (2, 3), 1)), Sample((d, (4, 0), 0)), Sample((d, (3,), -1))], prims=("iota",), dtypes=NUMERIC,
        unsupported=NOT_COUNTABLE)
_struct("full", lambda s, v, d=None: lax.full(s, v, d), lambda s, v, d=None: np.full(s, v, dtype=d),
        lambda rng, d: [Sample(((2, 3), make_array(rng, (), d), d)), Sample(((0,), make_array(rng, (), d), d))],
        prims=("broadcast_in_dim",))
_struct("broadcast_in_dim", lambda x, s, b: lax.broadcast_in_dim(x, s, b), lambda x, s, b: _bid_ref(x, s, b),
        lambda rng, d: [Sample((make_array(rng, (3,), d), (2, 3), (1,))), Sample((make_array(rng, (), d), (2, 2), ())),
                        Sample((make_array(rng, (1, 3), d), (4, 2, 3), (1, 2))), Sample((make_array(rng, (0,), d), (2, 0), (1,)))])
_struct("broadcast", lambda x, s: lax.broadcast(x, s), lambda x, s: np.broadcast_to(x, tuple(s) + x.shape),
        lambda rng, d: [Sample((make_array(rng, (3,), d), (2,))), Sample((make_array(rng, (), d), (2, 0)))],
        prims=("broadcast_in_dim",))
_struct("reshape", lambda x, s, dims=None: lax.reshape(x, s, dims),
        lambda x, s, dims=None: (x if dims is None else np.transpose(x, dims)).reshape(s),
        lambda rng, d: [Sample((make_array(rng, (2, 3), d), (3, 2))), Sample((make_array(rng, (2, 3), d), (6,), (1, 0))),
                        Sample((make_array(rng, (), d), (1, 1))), Sample((make_array(rng, (0, 3), d), (3, 0)))])
_struct("transpose", lambda x, p: lax.transpose(x, p), lambda x, p: np.transpose(x, p),
        lambda rng, d: [Sample((make_array(rng, (2, 3, 4), d), (2, 0, 1))), Sample((make_array(rng, (), d), ())),
                        Sample((make_array(rng, (0, 2), d), (1, 0)))])
_struct("squeeze", lambda x, dims: lax.squeeze(x, dims), lambda x, dims: np.squeeze(x, tuple(dims)),
        lambda rng, d: [Sample((make_array(rng, (1, 3, 1), d), (0, 2))), Sample((make_array(rng, (1,), d), (-1,))),
                        Sample((make_array(rng, (0, 1), d), (1,)))])
_struct("expand_dims", lambda x, dims: lax.expand_dims(x, dims), lambda x, dims: np.expand_dims(x, tuple(dims)),
        lambda rng, d: [Sample((make_array(rng, (3,), d), (0, 2))), Sample((make_array(rng, (), d), (0,))),
                        Sample((make_array(rng, (0,), d), (-1,)))])
_struct("rev", lambda x, dims: lax.rev(x, dims), lambda x, dims: np.flip(x, tuple(dims)),
        lambda rng, d: [Sample((make_array(rng, (2, 3), d), (1,))), Sample((make_array(rng, (2, 3), d), (0, 1))),
                        Sample((make_array(rng, (0,), d), (0,)))])
_struct("concatenate", lambda xs, dim: lax.concatenate(xs, dim), lambda xs, dim: np.concatenate(xs, dim),
        lambda rng, d: [Sample((_arrays([(2, 3), (1, 3), (0, 3)])(rng, d), 0)), Sample((_arrays([(2, 1), (2, 2)])(rng, d), 1)),
                        Sample((_arrays([(3,)])(rng, d), 0))])
_struct("pad", lambda x, v, c: lax.pad(x, v, c), lambda x, v, c: _pad_ref(x, v, c),
        lambda rng, d: [Sample((make_array(rng, (3,), d), make_array(rng, (), d), [(1, 2, 0)])),
                        Sample((make_array(rng, (3,), d), make_array(rng, (), d), [(1, 1, 2)])),
                        Sample((make_array(rng, (2, 4), d), make_array(rng, (), d), [(-1, 1, 1), (2, -3, 0)])),
                        Sample((make_array(rng, (0,), d), make_array(rng, (), d), [(1, 1, 3)])),
                        Sample((make_array(rng, (0,), d), make_array(rng, (), d), [(1, -1, 0)])),  # crops the padding
                        Sample((make_array(rng, (2,), d), make_array(rng, (), d), [(-3, 2, 0)])),
                        Sample((make_array(rng, (), d), make_array(rng, (), d), []))])
_struct("slice", lambda x, a, b, s=None: lax.slice(x, a, b, s),
        lambda x, a, b, s=None: x[tuple(slice(i, j, k) for i, j, k in zip(a, b, s or (1,) * len(a)))],
        lambda rng, d: [Sample((make_array(rng, (5, 4), d), (1, 0), (4, 3))), Sample((make_array(rng, (7,), d), (1,), (7,), (3,))),
                        Sample((make_array(rng, (3,), d), (2,), (2,))), Sample((make_array(rng, (), d), (), ()))])
_struct("slice_in_dim", lambda x, a, b, s=1, ax=0: lax.slice_in_dim(x, a, b, s, ax),
        lambda x, a, b, s=1, ax=0: x[(slice(None),) * (ax % x.ndim) + (slice(a, b, s),)],
        lambda rng, d: [Sample((make_array(rng, (6, 2), d), 1, -1)), Sample((make_array(rng, (2, 6), d), None, None, 2, 1)),
                        Sample((make_array(rng, (4,), d), -3, None))], prims=("slice",))


def _bid_ref(x, shape, dims):
    view = [1] * len(shape)
    for size, d in zip(x.shape, dims):
        view[d] = size
    return np.broadcast_to(x.reshape(view), shape)


def _pad_ref(x, value, config):
    # Written independently of the kernel: build index maps for each dimension.
    out = x
    for axis, (lo, hi, interior) in enumerate(config):
        n = out.shape[axis]
        size = lo + hi + n + max(n - 1, 0) * interior
        result = np.full(out.shape[:axis] + (max(size, 0),) + out.shape[axis + 1:], value, dtype=x.dtype)
        for i in range(n):
            j = lo + i * (interior + 1)
            if 0 <= j < size:
                index = (slice(None),) * axis + (j,)
                result[index] = out[(slice(None),) * axis + (i,)]
        out = result
    return out


# --- reductions ---------------------------------------------------------------------------------------

_REDUCE_SHAPES = [((2, 3), (1,)), ((2, 3), (0, 1)), ((4,), (0,)), ((), ()), ((0, 3), (0,)), ((2, 0), (1,))]


def _reduce_samples(low=None, high=None, nonempty=False):
    def make(rng, d):
        return [Sample((make_array(rng, s, d, low, high), axes)) for s, axes in _REDUCE_SHAPES
                if not (nonempty and 0 in [s[a] for a in axes])]  # fmt: skip

    return make


def _np_reduce(fn, identity_fn):
    def ref(x, axes):
        axes = tuple(axes)
        if any(x.shape[a] == 0 for a in axes) and identity_fn is not None:
            return np.full(tuple(s for i, s in enumerate(x.shape) if i not in axes), identity_fn(x.dtype), x.dtype)
        return fn(x, axis=axes)

    return ref


def _int_extreme(kind):
    def value(dtype):
        if dtype == np.bool_:
            return kind == "min"
        if dtype.kind in "iu":
            return np.iinfo(dtype).min if kind == "max" else np.iinfo(dtype).max
        return -np.inf if kind == "max" else np.inf

    return value


register(
    OpInfo("lax.reduce_sum", lax.reduce_sum, lambda x, a: np.sum(x, axis=tuple(a)), NUMERIC, _reduce_samples(), NO_BOOL,
           primitives=("reduce_sum",), tol={d: (1e-2, 2e-2) for d in (np.dtype(np.float16), BF16)}),
    OpInfo("lax.reduce_prod", lax.reduce_prod, lambda x, a: np.prod(x, axis=tuple(a)), NUMERIC, _reduce_samples(-2, 3), NO_BOOL,
           primitives=("reduce_prod",), tol={d: (1e-2, 2e-2) for d in (np.dtype(np.float16), BF16)}),
    OpInfo("lax.reduce_max", lax.reduce_max, _np_reduce(np.max, _int_extreme("max")), REAL, _reduce_samples(), NO_COMPLEX,
           primitives=("reduce_max",), ref_in_dtype=True),
    OpInfo("lax.reduce_min", lax.reduce_min, _np_reduce(np.min, _int_extreme("min")), REAL, _reduce_samples(), NO_COMPLEX,
           primitives=("reduce_min",), ref_in_dtype=True),
    OpInfo("lax.reduce_and", lax.reduce_and, _np_reduce(lambda x, axis: np.bitwise_and.reduce(x, axis=axis), None),
           BOOL + INTEGER, _reduce_samples(), BOOL_INT_ONLY, primitives=("reduce_and",), ref_in_dtype=True),
    OpInfo("lax.reduce_or", lax.reduce_or, _np_reduce(lambda x, axis: np.bitwise_or.reduce(x, axis=axis), None),
           BOOL + INTEGER, _reduce_samples(), BOOL_INT_ONLY, primitives=("reduce_or",), ref_in_dtype=True),
    OpInfo("lax.argmax", lambda x, a, t: lax.argmax(x, a, t), lambda x, a, t: np.argmax(x, axis=a).astype(t), REAL,
           lambda rng, d: [Sample((make_array(rng, (2, 3), d), ax, np.int32)) for ax in (0, 1, -1)]
           + [Sample((make_array(rng, (5,), d), 0, np.int32))], NO_COMPLEX, primitives=("argmax",),
           out_dtype=lambda d: np.dtype(np.int32), ref_in_dtype=True),
    OpInfo("lax.argmin", lambda x, a, t: lax.argmin(x, a, t), lambda x, a, t: np.argmin(x, axis=a).astype(t), REAL,
           lambda rng, d: [Sample((make_array(rng, (2, 3), d), ax, np.int32)) for ax in (0, 1, -1)]
           + [Sample((make_array(rng, (5,), d), 0, np.int32))], NO_COMPLEX, primitives=("argmin",),
           out_dtype=lambda d: np.dtype(np.int32), ref_in_dtype=True),
)  # fmt: skip

# --- contraction -----------------------------------------------------------------------------------------

_DOT_TOL = {np.dtype(np.float16): (1e-2, 1e-2), BF16: (2e-2, 5e-2), np.dtype(np.float32): (1e-5, 1e-5),
            np.dtype(np.complex64): (1e-5, 1e-5)}  # fmt: skip


def _dot_general_samples(rng, d):
    cases = [
        ((2, 3), (3, 4), (((1,), (0,)), ((), ()))),
        ((3,), (3,), (((0,), (0,)), ((), ()))),
        ((5, 2, 3), (5, 3, 4), (((2,), (1,)), ((0,), (0,)))),
        ((2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ()))),
        ((4, 2, 3), (3, 4), (((2,), (0,)), ((0,), (1,)))),
        ((0, 3), (3, 2), (((1,), (0,)), ((), ()))),
        ((2, 0), (0, 2), (((1,), (0,)), ((), ()))),
        ((2,), (3,), (((), ()), ((), ()))),
    ]
    return [Sample((make_array(rng, a, d, -2, 3), make_array(rng, b, d, -2, 3), dims)) for a, b, dims in cases]


def _dot_general_ref(lhs, rhs, dims):
    (lc, rc), (lb, rb) = dims
    letters = iter("abcdefghijklmnop")
    lhs_names = [next(letters) for _ in range(lhs.ndim)]
    rhs_names = [next(letters) for _ in range(rhs.ndim)]
    for a, b in zip(lc, rc):
        rhs_names[b] = lhs_names[a]
    for a, b in zip(lb, rb):
        rhs_names[b] = lhs_names[a]
    out = [lhs_names[i] for i in lb] + [c for i, c in enumerate(lhs_names) if i not in lc and i not in lb]
    out += [c for i, c in enumerate(rhs_names) if i not in rc and i not in rb]
    acc = np.result_type(lhs.dtype, np.int64) if lhs.dtype.kind in "biu" else lhs.dtype
    result = np.einsum(f"{''.join(lhs_names)},{''.join(rhs_names)}->{''.join(out)}", lhs.astype(acc), rhs.astype(acc))
    return result.astype(bool) if lhs.dtype == np.bool_ else result


register(
    OpInfo("lax.dot_general", lambda a, b, dims: lax.dot_general(a, b, dims), _dot_general_ref, ALL, _dot_general_samples, "",
           primitives=("dot_general",), tol=_DOT_TOL),
    OpInfo("lax.dot", lambda a, b: lax.dot(a, b), lambda a, b: np.dot(a.astype(np.int64) if a.dtype == np.bool_ else a,
                                                                      b.astype(np.int64) if b.dtype == np.bool_ else b),
           ALL, lambda rng, d: [Sample((make_array(rng, a, d, -2, 3), make_array(rng, b, d, -2, 3)))
                                for a, b in (((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)), ((0,), (0,)))],
           "", primitives=("dot_general",), tol=_DOT_TOL),
)  # fmt: skip

# --- autodiff helpers --------------------------------------------------------------------------------------

register(
    OpInfo("lax.stop_gradient", lax.stop_gradient, lambda x: x, ALL, unary_samples(), primitives=("stop_gradient",),
           ref_in_dtype=True, transforms=frozenset({"vmap", "jit"}),
           nondiff="stop_gradient blocks derivatives by definition (tests/test_custom_rules.py checks they are zero)"),
)  # fmt: skip
