"""Vectorized special-function kernels written against an array module ``xp``.

Every public kernel is ``name(xp, *args)`` with ``xp`` NumPy or a NumPy-like
module (CuPy).  Inputs are broadcast, computed in float64 on flat arrays and
cast back to their floating dtype (float64 for integers).  Only whole-array
operations are used; Python loops run a fixed number of times or until every
element has converged (incomplete gamma).

Algorithms:
* erf/erfc: all-positive Maclaurin series ``erf(x) = 2/sqrt(pi) e^{-x^2}
  sum 2^n x^{2n+1}/(2n+1)!!`` for |x| < 2 (erfc = 1 - erf below 1); the even
  part of Laplace's continued fraction for erfc, evaluated backwards with a
  fixed number of terms, above.  ``e^{-x^2}`` is computed with x split into a short
  head and a tail so that rounding x*x does not cost relative accuracy.
* erf_inv: closed-form initial guess, then Halley steps on erf (on erfc
  against the exact 1 - |x| once the root is >= 1, so nothing is lost near
  +-1).
* lgamma / digamma: for 0 < x < 10.5 the Taylor series of lgamma(2 + z)
  (coefficients zeta(k) - 1, so the zeros at 1 and 2 are exact) or its
  derivative, with the recurrence Gamma(x+1) = x Gamma(x) to reach |z| <= 1/2;
  Stirling's / the asymptotic series above; a Taylor series around the
  positive root of digamma; reflection for x < 0.
* zeta (Hurwitz): Euler-Maclaurin summation with Bernoulli numbers.
* polygamma: (-1)^(n+1) n! zeta(n + 1, x), digamma for n = 0.
* igamma/igammac: power series for P when x < a + 1, else the continued
  fraction for Q (length found by Lentz's iteration run until every element
  has converged, then evaluated backwards); a separate series gives Q for
  a < 1, x < 1/2.  x^a e^-x / Gamma(a) uses a Stirling form for a >= 10.
* reduce_precision: XLA's ReducePrecision on the integer bits.
"""
import contextlib
import functools
import math
from decimal import Decimal
from fractions import Fraction

# Bernoulli numbers B_2, B_4, ..., B_30.
_BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
              Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6),
              Fraction(-3617, 510), Fraction(43867, 798), Fraction(-174611, 330),
              Fraction(854513, 138), Fraction(-236364091, 2730),
              Fraction(8553103, 6), Fraction(-23749461029, 870),
              Fraction(8615841276005, 14322)]
_B2K = [float(b) for b in _BERNOULLI]
# B_2j / (2j)!, the Euler-Maclaurin coefficients.
_EM = [float(b / math.factorial(2 * j)) for j, b in enumerate(_BERNOULLI, 1)]

_EPS = 2.0 ** -53
_EULER = 0.57721566490153286061
_LOG_PI = 1.1447298858494001741
_HALF_LOG_2PI = 0.91893853320467274178
_TWO_OVER_SQRT_PI = 1.1283791670955125739
_SQRT_PI = 1.7724538509055160273


def _zeta_scalar(s, q, n=12):
    """Hurwitz zeta for Python floats (import-time constants only)."""
    a = q + n
    tail = a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    rising = s  # s (s+1) ... (s+2j-2)
    for j, c in enumerate(_EM, 1):
        tail += c * rising * a ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return math.fsum([tail] + [(q + k) ** -s for k in range(n)])


# lgamma(2 + z) = (1 - gamma) z + sum_{k>=2} (-1)^k (zeta(k) - 1) z^k / k.
_LGAMMA2 = [1.0 - _EULER] + [(-1) ** k * _zeta_scalar(k, 2.0) / k for k in range(2, 30)]

# Positive root of digamma and psi(x0 + h) = sum_k (-1)^(k+1) zeta(k+1, x0) h^k.
_X0 = Decimal("1.4616321449683623412626595423257213284681962040064463512959884")
_X0_HI = float(_X0)
_X0_LO = float(_X0 - Decimal(_X0_HI))
_PSI_ROOT = [(-1) ** (k + 1) * _zeta_scalar(k + 1, _X0_HI) for k in range(1, 25)]

_FACTORIALS = [float(math.factorial(k)) for k in range(171)]


# --------------------------------------------------------------------------
# dtype plumbing

def _is_float(dt):
    return dt.kind == "f" or (dt.kind == "V" and "float" in dt.name)


def _result_dtype(xp, arrays):
    """Widest floating dtype (float16 with bfloat16 -> float32); else float64."""
    floats = {a.dtype for a in arrays if _is_float(a.dtype)}
    if not floats:
        return xp.dtype(xp.float64)
    widest = [d for d in floats if d.itemsize == max(f.itemsize for f in floats)]
    return widest[0] if len(widest) == 1 else xp.dtype(xp.float32)


def _kernel(dtype_from=None):
    """Wrap ``fn(xp, *flat_float64_arrays)`` into a broadcasting public kernel;
    ``dtype_from``: the argument positions that decide the result dtype."""
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(xp, *args):
            arrays = [xp.asarray(a) for a in args]
            picked = range(len(args)) if dtype_from is None else dtype_from
            # Python scalars are weakly typed: they do not widen array dtypes
            strong = [arrays[i] for i in picked if type(args[i]) not in (int, float)]
            dtype = _result_dtype(xp, strong or [arrays[i] for i in picked])
            arrays = xp.broadcast_arrays(*arrays)
            shape = arrays[0].shape
            flat = [a.astype(xp.float64).reshape(-1) for a in arrays]
            errstate = getattr(xp, "errstate", None)
            with (errstate(all="ignore") if errstate else contextlib.nullcontext()):
                return fn(xp, *flat).reshape(shape).astype(dtype)
        return wrapper
    return decorate


def _masked(xp, out, mask, fn, *args):
    """out[mask] = fn(xp, *(a[mask] for a in args)), evaluating only there."""
    selected = [a[mask] for a in args]
    if selected[0].size:
        out[mask] = fn(xp, *selected)


def _horner(coeffs, z):
    """sum_k coeffs[k] z^k."""
    acc = coeffs[-1]
    for c in reversed(coeffs[:-1]):
        acc = acc * z + c
    return acc


def _is_int(xp, x):
    return x == xp.floor(x)


# --------------------------------------------------------------------------
# erf family

_ERF_SERIES_TERMS = 40   # the series is used for |x| < 2 (converged by n = 35)
_ERFC_CF_TERMS_NEAR = 110  # continued fraction on [1, 2)
_ERFC_CF_TERMS_FAR = 45    # continued fraction on [2, inf)


def _exp_neg_sq(xp, x):
    """exp(-x*x) for |x| <= 40 without the rounding error of x*x."""
    x = xp.abs(x)
    hi = xp.floor(x * 4096.0) / 4096.0  # hi*hi is exact
    lo = x - hi
    # x^2 = hi^2 + lo (x + hi)
    return xp.exp(-hi * hi) * xp.exp(-lo * (x + hi))


def _erf_series(xp, x):
    """erf(x) for |x| < 2.5 (all terms positive, Horner from the tail)."""
    x2 = 2.0 * x * x
    acc = xp.ones_like(x)
    for n in range(_ERF_SERIES_TERMS - 1, 0, -1):
        acc = 1.0 + acc * x2 / (2 * n + 1)
    return _TWO_OVER_SQRT_PI * _exp_neg_sq(xp, x) * x * acc


def _erfc_cf(xp, x, n_terms):
    """erfc(x) for x >= 1 from the even continued fraction
    erfc(x) = e^{-x^2}/sqrt(pi) * 2x / (2x^2+1 - 1*2/(2x^2+5 - 3*4/(2x^2+9 - ...)))."""
    x = xp.where(x > 40.0, 40.0, x)  # erfc(40) underflows anyway; nan stays
    y = 2.0 * x * x
    t = xp.zeros_like(x)
    for k in range(n_terms, 0, -1):
        t = ((2 * k - 1) * (2 * k)) / (y + (4 * k + 1) - t)
    return _exp_neg_sq(xp, x) / _SQRT_PI * (2.0 * x) / (y + 1.0 - t)


def _erfc_nonneg(xp, x):
    """erfc(x) for x >= 0 (or nan)."""
    out = xp.empty_like(x)
    small, far = x < 1.0, x >= 2.0
    near = ~small & ~far
    _masked(xp, out, small, lambda xp, v: 1.0 - _erf_series(xp, v), x)
    _masked(xp, out, near, lambda xp, v: _erfc_cf(xp, v, _ERFC_CF_TERMS_NEAR), x)
    _masked(xp, out, far, lambda xp, v: _erfc_cf(xp, v, _ERFC_CF_TERMS_FAR), x)
    return out


def _erf_large(xp, x):
    """erf(x) = +-(1 - erfc(|x|)) for |x| >= 2."""
    e = 1.0 - _erfc_cf(xp, xp.abs(x), _ERFC_CF_TERMS_FAR)
    return xp.where(x < 0, -e, e)


@_kernel()
def erf(xp, x):
    """Error function erf(x) = 2/sqrt(pi) int_0^x exp(-t^2) dt."""
    out = xp.empty_like(x)
    small = xp.abs(x) < 2.0
    _masked(xp, out, small, _erf_series, x)
    _masked(xp, out, ~small, _erf_large, x)
    return out


@_kernel()
def erfc(xp, x):
    """Complementary error function 1 - erf(x), accurate for large positive x."""
    e = _erfc_nonneg(xp, xp.abs(x))
    return xp.where(x < 0, 2.0 - e, e)


def _erf_inv_guess(xp, ax):
    """Rough erf^-1(ax) for 0 <= ax < 1 (relative error below ~2e-3)."""
    # Maclaurin start: sqrt(pi)/2 (x + pi/12 x^3 + 7 pi^2/480 x^5)
    c = math.pi * ax * ax
    taylor = 0.5 * _SQRT_PI * ax * (1.0 + c / 12.0 + 7.0 * c * c / 480.0)
    # Winitzki's closed form: with w = log(1 - x^2) and k = 0.147,
    # y = sqrt(sqrt((2/(pi k) + w/2)^2 - w/k) - (2/(pi k) + w/2))
    k = 0.147
    w = xp.log((1.0 - ax) * (1.0 + ax))
    h = 2.0 / (math.pi * k) + 0.5 * w
    closed = xp.sqrt(xp.sqrt(h * h - w / k) - h)
    return xp.where(ax <= 0.5, taylor, closed)


def _erf_residual(xp, y, ax):
    """erf(y) - ax, using erfc(y) against 1 - ax (exact) once erfc is not
    itself computed as 1 - erf (y >= 1)."""
    out = xp.empty_like(y)
    lower = (ax <= 0.5) | (y < 1.0)
    _masked(xp, out, lower, lambda xp, v, a: _erf_series(xp, v) - a, y, ax)
    _masked(xp, out, ~lower, lambda xp, v, a: (1.0 - a) - _erfc_nonneg(xp, v), y, ax)
    return out


# M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): two polynomials in
# w = -log(1 - x^2), below and above w = 5, with relative error about 3e-7 where w < 16 (all float32
# inputs). From that start one Halley step lands within float64 rounding, where the coarse guess
# below needs three (each an erf evaluation, the costly part).
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)  # fmt: skip
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)  # fmt: skip
_GILES_RANGE = 16.0


def _erf_inv_giles(xp, ax, w):
    """erf^-1(ax) for 0 <= ax < 1 with w = -log(1 - ax^2) < 16."""
    central = w < 5.0
    t = xp.where(central, w - 2.5, xp.sqrt(w) - 3.0)
    p = xp.zeros_like(ax)
    for a, b in zip(_GILES_CENTRAL, _GILES_TAIL):
        p = p * t + xp.where(central, a, b)
    return p * ax


@_kernel()
def erf_inv(xp, x):
    """Inverse error function on [-1, 1]; +-1 -> +-inf, |x| > 1 -> nan. Giles's approximation where it
    holds (else a coarse guess), then Halley steps in float64."""
    ax = xp.abs(x)
    inside = ax < 1.0
    a = xp.where(inside, ax, 0.5)
    w = -xp.log((1.0 - a) * (1.0 + a))
    near = w < _GILES_RANGE
    y = xp.where(near, _erf_inv_giles(xp, a, xp.where(near, w, 1.0)), _erf_inv_guess(xp, a))
    for _ in range(1 if bool(near.all()) else 3):
        # Halley on f(y) = erf(y) - a, with f'' = -2 y f'
        d = _erf_residual(xp, y, a) / (_TWO_OVER_SQRT_PI * _exp_neg_sq(xp, y))
        y = y - d / (1.0 + y * d)
    y = xp.where(inside, y, xp.where(ax == 1.0, xp.inf, xp.nan))
    return xp.where(x < 0, -y, y)


# --------------------------------------------------------------------------
# log-gamma and digamma

def _stirling_correction(xp, z):
    """lgamma(z) - [(z - 1/2) log z - z + log(2 pi)/2] for z >= 10."""
    r = 1.0 / z
    coeffs = [b / ((2 * k) * (2 * k - 1)) for k, b in enumerate(_B2K[:10], 1)]
    return r * _horner(coeffs, r * r)


_RECURRENCE_LIMIT = 10.5  # below: Taylor series at 2 plus recurrence


def _lgamma_recurrence(xp, x):
    """lgamma(x) for 0 < x < 10.5 from the series of lgamma(2 + z) and
    Gamma(x) = (x-1)(x-2)...(2+z) Gamma(2+z), or Gamma(2+z)/(x(x+1)), Gamma(2+z)/x."""
    n = xp.floor(x + 0.5)
    z = x - n  # exact, |z| <= 1/2
    prod = xp.ones_like(x)
    for j in range(2, 10):
        prod = xp.where(j < n, prod * (z + j), prod)  # exact factors
    corr = xp.where(n == 0, -xp.log(x * (x + 1.0)),
                    xp.where(n == 1, -xp.log(x), xp.log(prod)))
    return z * _horner(_LGAMMA2, z) + corr


def _lgamma_stirling(xp, x):
    """lgamma(x) for x >= 10.5 by Stirling's series."""
    return (x - 0.5) * xp.log(x) - x + _HALF_LOG_2PI + _stirling_correction(xp, x)


def _lgamma_pos(xp, x):
    """lgamma(x) for x > 0 (finite)."""
    out = xp.empty_like(x)
    small = x < _RECURRENCE_LIMIT
    _masked(xp, out, small, _lgamma_recurrence, x)
    _masked(xp, out, ~small, _lgamma_stirling, x)
    return out


def _reduce_half(xp, x):
    """r = x - round(x), exact, in [-1/2, 1/2]; sin(pi x) = +-sin(pi r)."""
    return x - xp.floor(x + 0.5)


def _pi_cot_pi(xp, x):
    """pi cot(pi x), exactly 0 at half-integers: cot(pi u) = tan(pi (1/2 - u))."""
    r = _reduce_half(xp, x)
    u = xp.abs(r)
    c = xp.where(u <= 0.25, 1.0 / xp.tan(math.pi * u), xp.tan(math.pi * (0.5 - u)))
    return math.pi * xp.where(r < 0, -c, c)


@_kernel()
def lgamma(xp, x):
    """log|Gamma(x)|; +inf at the poles 0, -1, -2, ...; lgamma(-inf) = -inf
    (as scipy.special.gammaln)."""
    pos = x > 0
    finite = xp.abs(x) < xp.inf
    t = xp.where(finite, xp.where(pos, x, 1.0 - x), 1.0)
    lg = _lgamma_pos(xp, t)
    # reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x)
    refl = _LOG_PI - xp.log(xp.abs(xp.sin(math.pi * _reduce_half(xp, x)))) - lg
    out = xp.where(pos, lg, refl)
    out = xp.where(~pos & _is_int(xp, x), xp.inf, out)
    return xp.where(finite, out, x)  # +-inf -> +-inf, nan -> nan


# psi(2 + z) = d/dz lgamma(2 + z)
_PSI2 = [k * c for k, c in enumerate(_LGAMMA2, 1)]


def _digamma_recurrence(xp, x):
    """psi(x) for 0 < x < 10.5: series of psi(2 + z) plus psi(x + 1) = psi(x) + 1/x."""
    n = xp.floor(x + 0.5)
    z = x - n  # exact, |z| <= 1/2
    acc = xp.where(n == 0, -1.0 / x - 1.0 / (x + 1.0), xp.where(n == 1, -1.0 / x, 0.0))
    for j in range(2, 10):
        acc = acc + xp.where(j < n, 1.0 / (z + j), 0.0)
    return _horner(_PSI2, z) + acc


def _digamma_asymptotic(xp, x):
    """psi(x) = log x - 1/(2x) - sum_k B_2k / (2k x^2k) for x >= 10.5."""
    r2 = 1.0 / (x * x)
    series = r2 * _horner([b / (2 * k) for k, b in enumerate(_B2K[:10], 1)], r2)
    return xp.log(x) - 0.5 / x - series


def _digamma_root(xp, x):
    """psi(x) for |x - x0| < 1/4 by its Taylor series at the root x0."""
    h = (x - _X0_HI) - _X0_LO
    return h * _horner(_PSI_ROOT, h)


def _digamma_pos(xp, x):
    out = xp.empty_like(x)
    root = xp.abs(x - _X0_HI) < 0.25
    small = ~root & (x < _RECURRENCE_LIMIT)
    _masked(xp, out, root, _digamma_root, x)
    _masked(xp, out, small, _digamma_recurrence, x)
    _masked(xp, out, ~root & ~small, _digamma_asymptotic, x)
    return out


def _digamma(xp, x):
    pos = x > 0
    ps = _digamma_pos(xp, xp.where(pos, x, 1.0 - x))
    # reflection: psi(x) = psi(1 - x) - pi cot(pi x)
    refl = ps - _pi_cot_pi(xp, x)
    out = xp.where(pos, ps, refl)
    out = xp.where(~pos & _is_int(xp, x), xp.nan, out)
    return xp.where(x == 0, -1.0 / x, out)


@_kernel()
def digamma(xp, x):
    """psi(x) = d/dx log Gamma(x); nan at negative integers and -inf,
    -inf at +0 and +inf at -0 (as scipy.special.digamma)."""
    return _digamma(xp, x)


# --------------------------------------------------------------------------
# Hurwitz zeta and polygamma

_ZETA_HEAD = 12


def _zeta_pos(xp, s, q):
    """Hurwitz zeta for s > 1 (finite), q > 0 by Euler-Maclaurin:
    sum_{k<N} (q+k)^-s + a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! (s)_{2j-1} a^(-s-2j+1),
    a = q + N."""
    a = q + _ZETA_HEAD
    a_s = a ** -s
    inv_a2 = 1.0 / (a * a)
    fac = s * a_s / a  # (s)_{2j-1} a^(-s-2j+1) for j = 1
    tail = xp.zeros_like(s)
    terms = []
    for j, c in enumerate(_EM, 1):
        terms.append(c * fac)
        fac = fac * (s + 2 * j - 1) * (s + 2 * j) * inv_a2
    for t in reversed(terms):  # smallest first
        tail = tail + t
    total = tail + 0.5 * a_s + a ** (1.0 - s) / (s - 1.0)
    for k in range(_ZETA_HEAD - 1, -1, -1):
        total = total + (q + k) ** -s
    return total


def _zeta_neg_q(xp, s, q):
    """Hurwitz zeta for integer s > 1 and negative non-integer q.

    With f = q - floor(q) and g = 1 - f, the finite sum over the negative
    terms is (-1)^s (zeta(s, g) - zeta(s, 1 - q)), so
    zeta(s, q) = zeta(s, f) + (-1)^s (zeta(s, g) - zeta(s, 1 - q)).
    """
    fl = xp.floor(q)
    f = q - fl
    g = (fl + 1.0) - q
    sign = 1.0 - 2.0 * (s - 2.0 * xp.floor(0.5 * s))
    return _zeta_pos(xp, s, f) + sign * (_zeta_pos(xp, s, g) - _zeta_pos(xp, s, 1.0 - q))


def _zeta(xp, s, q):
    out = xp.full_like(s, xp.nan)
    finite = (s > 1) & (s < xp.inf)
    good = finite & (q > 0)
    _masked(xp, out, good, _zeta_pos, s, q)
    neg = finite & (q < 0) & ~_is_int(xp, q) & _is_int(xp, s)
    _masked(xp, out, neg, _zeta_neg_q, s, q)
    out = xp.where(~(s < 1) & (q <= 0) & _is_int(xp, q), xp.inf, out)  # as scipy, nan s too
    out = xp.where(s == 1, xp.inf, out)
    out = xp.where((s > 1) & (q == xp.inf), 0.0, out)
    # s = +inf: q^-s is the whole sum (0, 1 or inf for q >1, ==1, <1)
    return xp.where((s == xp.inf) & (q > 0), q ** -s, out)


@_kernel()
def zeta(xp, s, q):
    """Hurwitz zeta sum_{k>=0} (k + q)^-s.

    Defined for s > 1: q > 0 any s; q < 0 non-integer only for integer s
    (else nan, as scipy).  s == 1 -> inf, s < 1 -> nan, q a non-positive
    integer (including -inf) -> inf.  s = +inf gives q^-s (scipy returns nan
    for q > 1 where the limit is 0).  Values within ~2^53 of the underflow
    threshold lose relative accuracy (their terms are subnormal).
    """
    return _zeta(xp, s, q)


@_kernel(dtype_from=(1,))
def polygamma(xp, n, x):
    """psi^(n)(x), n a non-negative integer: digamma for n = 0, else
    (-1)^(n+1) n! zeta(n + 1, x).  Negative non-integer x is supported; the
    poles x = 0, -1, ... give +-inf as scipy; non-integer or negative n -> nan.
    n! is inf beyond n = 170, as in scipy."""
    n_ok = (n >= 0) & _is_int(xp, n) & (n < xp.inf)
    out = xp.full_like(x, xp.nan)
    _masked(xp, out, n_ok & (n == 0), _digamma, x)
    higher = n_ok & (n > 0)
    table = xp.asarray(_FACTORIALS)
    idx = xp.where(higher & (n <= 170), n, 0).astype(xp.int64)
    fact = xp.where(n <= 170, table[idx], xp.inf)
    sign = 1.0 - 2.0 * (n - 2.0 * xp.floor(0.5 * n))  # (-1)^n
    _masked(xp, out, higher,
            lambda xp, nn, v, fa, sg: -sg * fa * _zeta(xp, nn + 1.0, v),
            n, x, fact, sign)
    return out


# --------------------------------------------------------------------------
# regularized incomplete gamma

_IGAMMA_MAX_ITER = 10000  # enough for a up to ~1e6 when x is near a
_IGAMMA_CHECK_EVERY = 8


def _log_ratio_defect(xp, x, a):
    """phi = t - log(1 + t) with t = (x - a)/a; the series
    sum_{k>=2} (-1)^k t^k / k for |t| < 1/4, else t - log(x/a)."""
    t = (x - a) / a
    series = t * t * _horner([(-1) ** k / k for k in range(2, 32)], t)
    return xp.where(xp.abs(t) < 0.25, series, t - xp.log(x / a))


def _lgamma1p(xp, a):
    """lgamma(1 + a) for 0 <= a <= 1 with no rounding of 1 + a."""
    lo = a * _horner(_LGAMMA2, a) - xp.log1p(a)  # lgamma(2 + a) - log(1 + a)
    hi = (a - 1.0) * _horner(_LGAMMA2, a - 1.0)  # lgamma(2 + (a - 1))
    return xp.where(a <= 0.5, lo, hi)


def _gamma_kernel(xp, a, x):
    """x^a e^-x / Gamma(a + 1) for a > 0, x > 0, both finite."""
    out = xp.empty_like(a)
    big = a >= 10.0
    _masked(xp, out, ~big,
            lambda xp, a, x: xp.exp(a * xp.log(x) - x - _lgamma_pos(xp, a + 1.0)), a, x)

    def stirling_form(xp, a, x):
        # log(x^a e^-x / Gamma(a)) = -a phi((x - a)/a) + log(a / 2pi)/2 - correction(a)
        phi = _log_ratio_defect(xp, x, a)
        return xp.exp(-a * phi - _stirling_correction(xp, a)) / xp.sqrt(2.0 * math.pi * a)
    _masked(xp, out, big, stirling_form, a, x)
    return out


def _run_to_convergence(xp, step, state):
    """Apply ``state, done = step(i, state)`` for i = 1, 2, ... (up to the
    cap).  Every few steps the elements flagged done leave the working set, so
    slow elements do not make the others iterate.  Returns per element the
    step count at which it left (0: never converged) and its final state."""
    size = state[0].shape[0]
    steps, idx = xp.zeros(size, dtype=xp.int64), xp.arange(size)
    final = [xp.empty_like(v) for v in state]
    done = xp.zeros(size, dtype=bool)
    for i in range(1, _IGAMMA_MAX_ITER + 1):
        state, now = step(i, state)
        done = done | now
        if i % _IGAMMA_CHECK_EVERY == 0 or i == _IGAMMA_MAX_ITER:
            for f, v in zip(final, state):
                f[idx[done]] = v[done]
            steps[idx[done]] = i
            idx, done, state = idx[~done], done[~done], [v[~done] for v in state]
            if idx.size == 0:
                break
    for f, v in zip(final, state):  # never converged
        f[idx] = v
    return steps, final


def _igamma_series(xp, a, x):
    """P(a, x) = x^a e^-x / Gamma(a+1) sum_n x^n / ((a+1)...(a+n)), for x < a + 1."""
    def step(i, state):
        ap, term, total, x = state
        ap = ap + 1.0
        term = term * x / ap
        return (ap, term, total + term, x), term <= _EPS * (total + term)

    ones = xp.ones_like(a)
    steps, (_, _, total, _) = _run_to_convergence(xp, step, (a, ones, ones, x))
    return xp.where(steps > 0, _gamma_kernel(xp, a, x) * total, xp.nan)


def _cf_lengths(xp, a, x):
    """Per element, the number of terms after which the modified Lentz
    iteration of the continued fraction below has converged (0: never)."""
    tiny = 1e-300

    def step(i, state):
        a, b, c, d = state
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = 1.0 / xp.where(xp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < tiny, tiny, c)
        return (a, b, c, d), xp.abs(c * d - 1.0) <= 4 * _EPS

    b = x + 1.0 - a
    return _run_to_convergence(xp, step, (a, b, xp.full_like(a, 1.0 / tiny), 1.0 / b))[0]


def _igammac_cf(xp, a, x):
    """Q(a, x) = a x^a e^-x / Gamma(a+1) / (x+1-a - 1(1-a)/(x+3-a - 2(2-a)/(x+5-a - ...))),
    for x >= a + 1.  Lentz's forward iteration finds how many terms each
    element needs; the fraction is then evaluated backwards (rounding far less
    than multiplying the forward ratios), longest fractions first so that
    step k only touches the prefix of elements that need term k."""
    steps = _cf_lengths(xp, a, x)
    order = xp.argsort(-steps)
    a, x, steps = a[order], x[order], steps[order]
    # Lentz stops once one term changes the value by < 4 EPS; slowly converging
    # fractions (small x) still drift after that, hence the 50% margin
    n = xp.where(steps > 0, steps + steps // 2 + 16, 0)
    n_max = int(n[0]) if n.size else 0
    counts = xp.searchsorted(-n, -xp.arange(n_max, 0, -1), side="right").tolist()
    t = xp.zeros_like(a)
    for k, m in zip(range(n_max, 0, -1), counts):
        t[:m] = (-k * (k - a[:m])) / (x[:m] + (2 * k + 1) - a[:m] + t[:m])
    q = xp.where(steps > 0, a * _gamma_kernel(xp, a, x) / (x + 1.0 - a + t), xp.nan)
    out = xp.empty_like(q)
    out[order] = q
    return out


def _igammac_small_a(xp, a, x):
    """Q(a, x) for a < 1, x < 1/2 without cancellation in 1 - P:
    Q = -expm1(a log x - lgamma(1+a)) - a x^a/Gamma(1+a) sum_{n>=1} (-x)^n / (n! (a+n))."""
    u = a * xp.log(x) - _lgamma1p(xp, a)
    power, total = xp.ones_like(x), xp.zeros_like(x)
    for n in range(1, 21):  # x < 1/2: 2^-21 / 21! < 1e-25
        power = power * (-x) / n
        total = total + power / (a + n)
    return -xp.expm1(u) - a * xp.exp(u) * total


def _igamma_pq(xp, a, x):
    """(P(a, x), Q(a, x)) with scipy's edge cases."""
    p, q = xp.full_like(a, xp.nan), xp.full_like(a, xp.nan)
    ok = (a > 0) & (x > 0) & (a < xp.inf) & (x < xp.inf)
    # backward continued fraction for Q where it converges quickly enough;
    # power series for P elsewhere, plus a series for Q when a < 1
    cf = ok & ((x >= a + 1.0) | ((a < 1.0) & (x >= 0.5)))
    ser = ok & ~cf
    _masked(xp, p, ser, _igamma_series, a, x)
    q = xp.where(ser, 1.0 - p, q)
    _masked(xp, q, ser & (a < 1.0), _igammac_small_a, a, x)
    _masked(xp, q, cf, _igammac_cf, a, x)
    p = xp.where(cf, 1.0 - q, p)
    # P = 0 when x == 0 or a == inf; P = 1 when x == inf or a == 0 (x > 0)
    zero = ((x == 0) & (a > 0)) | ((a == xp.inf) & (x >= 0) & (x < xp.inf))
    one = ((x == xp.inf) & (a >= 0) & (a < xp.inf)) | ((a == 0) & (x > 0))
    p = xp.where(zero, 0.0, xp.where(one, 1.0, p))
    q = xp.where(zero, 1.0, xp.where(one, 0.0, q))
    return p, q


@_kernel()
def igamma(xp, a, x):
    """Regularized lower incomplete gamma P(a, x) (scipy.special.gammainc).

    nan for a < 0, x < 0, a == x == 0 or a == x == inf, and where the series
    or continued fraction does not converge within 10000 terms: that needs
    a > ~1e6 with |x - a| < ~10 sqrt(a) (a uniform asymptotic expansion would
    be needed there)."""
    return _igamma_pq(xp, a, x)[0]


@_kernel()
def igammac(xp, a, x):
    """Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x)
    (scipy.special.gammaincc); same domain as igamma."""
    return _igamma_pq(xp, a, x)[1]


# --------------------------------------------------------------------------
# random_gamma_grad: the implicit reparameterisation gradient of a gamma sample

def _gamma_grad_series(xp, a, x):
    """For x < a + 1: P = e^l S with l = a log x - x - lgamma(a + 1) and
    S = sum_n x^n / ((a+1)...(a+n)); the density is e^l a / x, so
    dx/da = -dP/da / pdf = -(x / a) ((log x - digamma(a + 1)) S + dS/da)
    (no exponential: the prefactor cancels)."""
    def step(i, state):
        ap, term, total, dterm, dtotal, x = state
        ap = ap + 1.0
        term = term * x / ap
        dterm = dterm * x / ap - term / ap
        total, dtotal = total + term, dtotal + dterm
        done = (term <= _EPS * total) & (xp.abs(dterm) <= _EPS * xp.abs(dtotal))
        return (ap, term, total, dterm, dtotal, x), done

    ones, zeros = xp.ones_like(a), xp.zeros_like(a)
    steps, (_, _, total, _, dtotal, _) = _run_to_convergence(xp, step, (a, ones, ones, zeros, zeros, x))
    grad = -(x / a) * ((xp.log(x) - _digamma(xp, a + 1.0)) * total + dtotal)
    return xp.where(steps > 0, grad, xp.nan)


def _gamma_grad_cf(xp, a, x):
    """For x >= a + 1: Q = e^l C with l = a log x - x - lgamma(a) and C the
    continued fraction of `_igammac_cf`; the density is e^l / x, so
    dx/da = dQ/da / pdf = x ((log x - digamma(a)) C + dC/da), the fraction
    and its derivative evaluated backwards together (dual numbers)."""
    steps = _cf_lengths(xp, a, x)
    n = xp.where(steps > 0, steps + steps // 2 + 16, 0)
    order = xp.argsort(-n)
    a, x, n = a[order], x[order], n[order]
    n_max = int(n[0]) if n.size else 0
    counts = xp.searchsorted(-n, -xp.arange(n_max, 0, -1), side="right").tolist()
    t, dt = xp.zeros_like(a), xp.zeros_like(a)
    for k, m in zip(range(n_max, 0, -1), counts):
        # t_k = -k (k - a) / (x + 2k + 1 - a + t_{k+1})
        den = x[:m] + (2 * k + 1) - a[:m] + t[:m]
        tk = (-k * (k - a[:m])) / den
        dt[:m] = (k - tk * (dt[:m] - 1.0)) / den
        t[:m] = tk
    c = 1.0 / (x + 1.0 - a + t)
    dc = -c * c * (dt - 1.0)
    grad = xp.where(n > 0, x * ((xp.log(x) - _digamma(xp, a)) * c + dc), xp.nan)
    out = xp.empty_like(grad)
    out[order] = grad
    return out


@_kernel()
def random_gamma_grad(xp, a, x):
    """d x / d a for a Gamma(a, 1) sample x held at its quantile u = P(a, x):
    -(dP/da) / (dP/dx) (implicit reparameterisation, Figurnov et al. 2018;
    JAX's lax.random_gamma_grad).  0 at x == 0 (an underflowed sample), nan
    for a <= 0, x < 0 and non-finite operands."""
    out = xp.full_like(a, xp.nan)
    ok = (a > 0) & (x > 0) & (a < xp.inf) & (x < xp.inf)
    cf = ok & (x >= a + 1.0)
    _masked(xp, out, ok & ~cf, _gamma_grad_series, a, x)
    _masked(xp, out, cf, _gamma_grad_cf, a, x)
    return xp.where((x == 0) & (a > 0) & (a < xp.inf), 0.0, out)


# --------------------------------------------------------------------------
# reduce_precision

_LAYOUTS = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23), "float64": (11, 52)}


def reduce_precision(xp, x, exponent_bits, mantissa_bits):
    """Round x to the nearest value with the given exponent / mantissa widths.

    Same semantics as XLA's ReducePrecision: round-to-nearest-even on the
    mantissa (a carry may bump the exponent), then values whose exponent is
    above the reduced range become +-inf and values whose exponent is at or
    below the reduced format's denormal exponent (its denormals included)
    become +-0.  Source denormals are kept when exponent_bits is not reduced.
    NaN stays NaN (XLA returns +inf for NaN when mantissa_bits == 0).
    """
    x = xp.asarray(x)
    if x.dtype.name not in _LAYOUTS:
        raise TypeError(f"reduce_precision: unsupported dtype {x.dtype}")
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError("reduce_precision needs exponent_bits >= 1, mantissa_bits >= 0")
    src_exp, src_mant = _LAYOUTS[x.dtype.name]
    nbits = 1 + src_exp + src_mant
    utype = {16: xp.uint16, 32: xp.uint32, 64: xp.uint64}[nbits]

    def const(v):
        return xp.asarray(v, dtype=utype)

    original = x.reshape(-1).view(utype)
    exp_mask = ((1 << src_exp) - 1) << src_mant
    is_nan = (original & const((1 << (nbits - 1)) - 1)) > const(exp_mask)
    bits = original
    if mantissa_bits < src_mant:
        shift = src_mant - mantissa_bits
        last = 1 << shift
        # bias 0111..1 plus the last kept bit: ties go to the even neighbour
        lsb = (bits >> const(shift)) & const(1)
        bits = (bits + (lsb + const((last >> 1) - 1))) & const(((1 << nbits) - 1) ^ (last - 1))
    if exponent_bits < src_exp:
        src_bias = (1 << (src_exp - 1)) - 1
        dst_bias = (1 << (exponent_bits - 1)) - 1
        exponent = bits & const(exp_mask)
        signed_zero = bits & const(1 << (nbits - 1))
        overflow = exponent > const((src_bias + dst_bias) << src_mant)
        underflow = exponent <= const((src_bias - dst_bias) << src_mant)
        bits = xp.where(overflow, signed_zero | const(exp_mask), bits)
        bits = xp.where(underflow, signed_zero, bits)
    return xp.where(is_nan, original, bits).view(x.dtype).reshape(x.shape)
