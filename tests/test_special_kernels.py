"""Tests for ember.backends.special against scipy.special (reference only).

Tolerances are given in units of EPS = 2**-52 (float64) and justified next to
each check.  Where scipy itself is measurably less accurate than the kernels
(erfc for large x, lgamma next to its zeros at 1 and 2, digamma next to its
poles, incomplete gamma tails) the tolerance covers scipy's error, and
tables of high-precision values (computed once with mpmath at 60 digits)
pin the kernels down tightly.
"""
import math

import ml_dtypes
import numpy as np
import pytest
import scipy.special as sc

from ember.backends import special as S

EPS = 2.0 ** -52
F32_ULP = 2.0 ** -23      # relative spacing bound of float32
TINY_SUB = 2.0 ** -1074   # smallest float64 subnormal
X0 = 1.4616321449683622   # positive root of digamma (nearest double)


def check(ours, ref, rtol, atol=0.0, what=""):
    """|ours - ref| <= atol + rtol |ref| where ref is finite; nan / inf
    patterns must match exactly.  rtol may be an array."""
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert ours.shape == ref.shape
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref), err_msg=f"{what}: nan pattern")
    inf = np.isinf(ref)
    np.testing.assert_array_equal(ours[inf], ref[inf], err_msg=f"{what}: inf pattern")
    fin = np.isfinite(ref)
    rtol = np.broadcast_to(rtol, ref.shape)[fin]
    err = np.abs(ours[fin] - ref[fin])
    bound = atol + rtol * np.abs(ref[fin])
    assert np.all(np.isfinite(ours[fin])), f"{what}: non-finite result where ref is finite"
    if err.size:
        worst = np.argmax(err / np.maximum(bound, 1e-320))
        assert np.all(err <= bound), (
            f"{what}: err {err[worst]:.3e} > bound {bound[worst]:.3e} "
            f"(ours {ours[fin][worst]!r}, ref {ref[fin][worst]!r}, index {worst})")


def f32_case(fn, ref_fn, *args, atol=2.0 ** -149):
    """float32 inputs: the kernel computes in float64 and rounds once, so it
    must agree with scipy's float64 value rounded to float32 within one
    float32 ulp (the two float64 values may straddle a rounding boundary);
    atol is one float32 subnormal step."""
    args32 = [np.asarray(a, dtype=np.float32) for a in args]
    out = fn(np, *args32)
    assert out.dtype == np.float32
    with np.errstate(all="ignore"):
        ref = ref_fn(*[a.astype(np.float64) for a in args32]).astype(np.float32)
    check(out, ref, F32_ULP, atol=atol, what=f"{fn.__name__} float32")


def signed_logspace(lo, hi, n):
    v = np.logspace(lo, hi, n)
    return np.concatenate([v, -v])


# ---------------------------------------------------------------- erf / erfc

ERF_GRID = np.concatenate([np.linspace(-30, 30, 60001), signed_logspace(-320, 1.5, 4000),
                           [0.0, -0.0, np.inf, -np.inf, np.nan]])


def test_erf_float64():
    # kernels and scipy are each within ~2 ulp of the truth (mpmath): 4 EPS;
    # subnormal results have an absolute spacing of 2**-1074: allow 4 steps.
    check(S.erf(np, ERF_GRID), sc.erf(ERF_GRID), 4 * EPS, atol=4 * TINY_SUB, what="erf")


def test_erfc_float64():
    x = ERF_GRID
    # scipy rounds x*x inside exp(-x*x): its relative error grows like x^2 EPS
    # (measured 5.7e-14 at x = 26.5, while the kernel stays below 5e-16),
    # so the bound is 4 EPS + x^2 EPS.  scipy flushes subnormal results
    # (x > 26.55) to 0, so there the comparison is absolute, at the smallest
    # normal number; the kernel's subnormal values are checked below.
    # For x < 1 both compute erfc as 1 - erf (so does cephes): ~2 ulp of erf
    # become up to 1/erfc(1) ~ 6.4 times that relative to erfc; each side
    # measured <= 1.2e-15 (5.4 EPS) there vs mpmath: 12 EPS for |x| < 1.
    with np.errstate(invalid="ignore"):
        rtol = (np.where(np.abs(x) < 1, 12 * EPS, 4 * EPS)
                + np.where(np.isfinite(x), x * x, 0.0) * EPS)
    check(S.erfc(np, x), sc.erfc(x), rtol, atol=np.finfo(np.float64).tiny, what="erfc")


# erfc / erf at 60 digits (mpmath): the kernel must be within 2 EPS.
ERFC_EXACT = [(0.5, 0.4795001221869535), (1.0, 0.15729920705028513),
              (2.0, 0.004677734981047266), (5.0, 1.537459794428035e-12),
              (10.0, 2.088487583762545e-45), (15.0, 7.212994172451207e-100),
              (20.0, 5.395865611607901e-176), (25.0, 8.300172571196523e-274),
              (26.5, 2.2109076642637343e-307), (-3.0, 1.9999779095030015)]
ERF_EXACT = [(1e-300, 1.1283791670955126e-300), (1e-10, 1.1283791670955126e-10),
             (0.3, 0.3286267594591274), (1.5, 0.9661051464753108),
             (3.0, 0.9999779095030014), (-2.2, -0.9981371537020182)]


def test_erf_erfc_high_precision():
    x, v = map(np.array, zip(*ERFC_EXACT))
    check(S.erfc(np, x), v, 2 * EPS, what="erfc exact")
    x, v = map(np.array, zip(*ERF_EXACT))
    check(S.erf(np, x), v, 2 * EPS, what="erf exact")
    # subnormal results: a few subnormal steps (mpmath: 1.1522406e-316)
    check(S.erfc(np, np.array([26.9])), [1.1522406e-316], 0.0, atol=4 * TINY_SUB)


def test_erfc_symmetry_and_limits():
    x = np.linspace(0, 10, 1001)
    np.testing.assert_allclose(S.erfc(np, -x), 2.0 - S.erfc(np, x), rtol=0, atol=2 * EPS)
    np.testing.assert_array_equal(S.erf(np, -x), -S.erf(np, x))
    assert S.erfc(np, np.array(30.0)) == 0.0
    assert S.erf(np, np.array(-np.inf)) == -1.0 and S.erfc(np, np.array(-np.inf)) == 2.0


def test_erf_erfc_float32():
    x = np.concatenate([np.linspace(-12, 12, 24001), signed_logspace(-44, 1, 500)])
    f32_case(S.erf, sc.erf, x)
    f32_case(S.erfc, sc.erfc, x)


# ------------------------------------------------------------------ erf_inv

def test_erf_inv_float64():
    tail = 1.0 - np.logspace(-16, -1, 600)
    y = np.concatenate([np.linspace(-1, 1, 40001), tail, -tail,
                        signed_logspace(-310, -1, 600), [0.0, 1.5, -2.0, np.inf, np.nan]])
    # vs mpmath the kernel is within 3.2 EPS (7.1e-16; Halley converges to
    # the root of the computed erf, itself within ~2 EPS) and scipy within
    # 1.6 EPS: 6 EPS.  Subnormal inputs/outputs: 4 subnormal steps.
    check(S.erf_inv(np, y), sc.erfinv(y), 6 * EPS, atol=4 * TINY_SUB, what="erf_inv")
    assert S.erf_inv(np, np.array(1.0)) == np.inf
    assert S.erf_inv(np, np.array(-1.0)) == -np.inf


ERFINV_EXACT = [(1 - 1e-15, 5.675915739744713), (1 - 1e-10, 4.572824958544925),
                (-0.999, -2.3267537655135246), (0.9, 1.1630871536766743),
                (0.5, 0.4769362762044699), (0.1, 0.08885599049425769),
                (1e-20, 8.86226925452758e-21), (1e-300, 8.86226925452758e-301)]


def test_erf_inv_high_precision_and_roundtrip():
    y, v = map(np.array, zip(*ERFINV_EXACT))
    check(S.erf_inv(np, y), v, 4 * EPS, what="erf_inv exact")
    # erf(erf_inv(y)) = y up to the rounding of erf near y: |y| ulp-level
    y = np.linspace(-0.999, 0.999, 2001)
    np.testing.assert_allclose(S.erf(np, S.erf_inv(np, y)), y, rtol=4 * EPS, atol=0)


def test_erf_inv_float32():
    y = np.concatenate([np.linspace(-1, 1, 20001), 1 - np.logspace(-7.2, -1, 200)])
    f32_case(S.erf_inv, sc.erfinv, y)


# ------------------------------------------------------------------- lgamma

def test_lgamma_positive_float64():
    near = np.logspace(-15, -0.5, 300)
    # (scipy returns inf below x ~ 1e-308, where the kernel gives -log x)
    x = np.concatenate([np.linspace(1e-3, 50, 50000), np.logspace(-307, 305.5, 3000),
                        1 + near, 1 - near, 2 + near, 2 - near, [np.inf, np.nan, 0.0, -0.0]])
    ref = sc.gammaln(x)
    # Away from the zeros both are within a few ulp: 4 EPS relative.  Next to
    # the zeros at 1 and 2 only absolute accuracy is meaningful (scipy's own
    # relative error reaches 5e-13 there; its absolute error stays below
    # 2e-16): atol 1e-15 as required of the kernel; subnormal inputs near 0
    # are exact enough for the relative bound.
    check(S.lgamma(np, x), ref, 4 * EPS, atol=1e-15, what="lgamma x>0")


LGAMMA_EXACT = [(0.9999, 5.7729791561193866e-05), (1.0001, -5.771334222047127e-05),
                (1.0000000001, -5.772157125783244e-11), (1.9999, -4.227520877215346e-05),
                (2.0001, 4.2281658112919945e-05), (1.999999999999, -4.2282192087173953e-13),
                (0.5, 0.5723649429247001), (2.5, 0.2846828704729192),
                (3.5, 1.2009736023470743), (10.0, 12.801827480081469),
                (1e10, 220258509288.81058), (1e-300, 690.7755278982137),
                (1e300, 6.897755278982137e+302), (5e-324, 744.4400719213812),
                (1e-310, 713.8013788281542)]
# x < 0: log(pi/|sin(pi x)|) - lgamma(1 - x); the two terms cancel, so the
# error is a few EPS of their size (listed as the third entry).
LGAMMA_EXACT_NEG = [(-0.5, 1.2655121234846454, 1.14 + 0.29),
                    (-2.5, -0.056243716497674054, 1.14 + 1.20),
                    (-10.3, -14.457515440024208, 0.19 + 17.0)]


def test_lgamma_high_precision():
    # relative accuracy holds even next to the zeros at 1 and 2 (series there)
    x, v = map(np.array, zip(*LGAMMA_EXACT))
    check(S.lgamma(np, x), v, 3 * EPS, what="lgamma exact")
    x, v, size = map(np.array, zip(*LGAMMA_EXACT_NEG))
    check(S.lgamma(np, x), v, 2 * EPS * (1 + size / np.abs(v)), what="lgamma exact x<0")


def test_lgamma_negative_float64():
    x = np.concatenate([np.linspace(-60, 0, 60001), -np.logspace(-307, 15, 2000),
                        -np.arange(1, 50) + 1e-9, -np.arange(1, 50) - 1e-9, [-np.inf]])
    ref = sc.gammaln(x)
    # Reflection lgamma(x) = log(pi/|sin(pi x)|) - lgamma(1 - x) cancels near
    # the zeros of lgamma for x < 0; any double evaluation has an absolute
    # error of a few EPS times the size of the cancelled terms.
    with np.errstate(all="ignore"):
        scale = np.abs(sc.gammaln(1 - x)) + np.abs(np.log(np.abs(np.sin(np.pi * x))))
    rtol = 4 * EPS
    atol_arr = 8 * EPS * np.where(np.isfinite(scale), scale, 0.0)
    ours = S.lgamma(np, x)
    fin = np.isfinite(ref)
    assert np.all(np.abs(ours[fin] - ref[fin]) <= atol_arr[fin] + rtol * np.abs(ref[fin]))
    check(ours[~fin], ref[~fin], 0.0, what="lgamma poles")  # poles +inf, -inf -> -inf


def test_lgamma_float32():
    x = np.concatenate([np.linspace(-30.5, 40, 20001), np.logspace(-44, 36, 400)])
    f32_case(S.lgamma, sc.gammaln, x)


# ------------------------------------------------------------------ digamma

DIGAMMA_EXACT = [(X0, -9.241265521729427e-17), (X0 + 1e-8, 9.676722258977242e-09),
                 (X0 - 0.1, -0.10147090594245962), (X0 + 0.2, 0.1776600449961982),
                 (1.0, -0.5772156649015329), (0.5, -1.9635100260214235),
                 (1e-08, -100000000.57721564), (30.0, 3.384438132685525),
                 (1e15, 34.538776394910684), (-0.5, 0.03648997397857652),
                 (-1e-08, 99999999.42278431), (-3.7, -0.8450768588704194),
                 (-0.999, -999.5745709308084), (-2.999, -998.7408763243631)]


def test_digamma_float64():
    x = np.concatenate([np.linspace(1e-3, 60, 60001), np.logspace(-320, 307, 3000),
                        X0 + signed_logspace(-16, -0.5, 300), [np.inf, np.nan]])
    # x > 0: both within a few ulp (kernel 4e-16 vs mpmath, scipy 4e-16,
    # including next to the root thanks to the series there): 8 EPS.
    check(S.digamma(np, x), sc.digamma(x), 8 * EPS, what="digamma x>0")
    xs, v = map(np.array, zip(*DIGAMMA_EXACT))
    check(S.digamma(np, xs), v, 2 * EPS, what="digamma exact")


def test_digamma_negative_and_poles():
    x = np.concatenate([np.linspace(-60, 0, 60001), -np.logspace(-320, 15, 1000),
                        [0.0, -0.0, -np.inf]])
    ref = sc.digamma(x)
    # psi(x) = psi(1 - x) - pi cot(pi x): near the zeros for x < 0 the two
    # terms cancel, so the absolute error is a few EPS times their size.
    # scipy also forms pi*x before the tangent; that rounding (EPS |x|) is
    # amplified by 1/dist(x, pole) (e.g. 8.7e-14 relative at x = -2.999,
    # where the kernel is exact, see DIGAMMA_EXACT).
    with np.errstate(all="ignore"):
        scale = np.abs(sc.digamma(1 - x)) + np.abs(np.pi / np.tan(np.pi * x))
        amplification = np.abs(x) / np.abs(x - np.round(x))
    ours = S.digamma(np, x)
    fin = np.isfinite(ref)
    bound = 4 * EPS * np.abs(ref[fin]) * (1 + amplification[fin]) + 8 * EPS * scale[fin]
    assert np.all(np.abs(ours[fin] - ref[fin]) <= bound)
    np.testing.assert_array_equal(ours[~fin], ref[~fin])   # nan at poles, +-inf at +-0


def test_digamma_float32():
    x = np.concatenate([np.linspace(-30.25, 40, 20001), np.logspace(-38, 38, 400)])
    f32_case(S.digamma, sc.digamma, x, atol=0)


# --------------------------------------------------------------------- zeta

ZETA_EXACT = [(2.0, 1.0, 1.6449340668482264), (1.5, 0.5, 4.776537947554833),
              (1.000001, 2.0, 999999.5772980044), (3.0, 1e-05, 1000000000000001.0),
              (10.0, 3.0, 1.8012627818085337e-05), (60.0, 1.1, 0.0032842702814728075),
              (2.0, 1e6, 1.0000005000001667e-06), (4.0, -2.5, 32.4579793698646),
              (3.0, -0.25, -61.34868339183118), (2.0, 1e300, 1e-300)]


def test_zeta_float64():
    s = np.array([1.0 + 1e-9, 1.0001, 1.01, 1.5, 2.0, 2.5, 3.0, 4.0, 7.5, 10.0, 20.0,
                  33.3, 60.0, 100.0, 300.0])[:, None]
    q = np.concatenate([np.logspace(-5, 6, 400), np.linspace(0.05, 10, 400)])[None, :]
    # both sides sum (q+k)^-s with correctly rounded powers: a few ulp; 8 EPS.
    # Within ~2^53 of the underflow threshold the terms are subnormal and
    # both lose relative accuracy (mpmath: 3e-11 at s=100, q=1196 for
    # either), so only values above 1e-290 are compared.
    ours, ref = S.zeta(np, s, q), sc.zeta(s, q)
    keep = ~(np.abs(ref) < 1e-290)
    check(ours[keep], ref[keep], 8 * EPS, what="zeta q>0")
    s, q, v = map(np.array, zip(*ZETA_EXACT))
    check(S.zeta(np, s, q), v, 4 * EPS, what="zeta exact")


def test_zeta_negative_q_and_edges():
    s = np.arange(2, 12, dtype=np.float64)[:, None]
    q = np.linspace(-20.03, -0.03, 401)[None, :]  # no poles on the grid
    ref = sc.zeta(s, q)
    # the value is a signed sum of terms of size |q + k|^-s: absolute error
    # a few EPS times the largest term
    scale = np.abs(q - np.round(q)) ** -s + sc.zeta(s, 1 - q)
    ours = S.zeta(np, s, q)
    assert np.all(np.abs(ours - ref) <= 4 * EPS * np.abs(ref) + 8 * EPS * scale)
    s = np.array([0.5, 1.0, 1.0, 2.0, 2.5, 2.5, 2.0, 2.0, np.nan, 2.0, 2.0, np.inf])
    q = np.array([1.0, 1.0, -1.5, 0.0, -1.0, -1.5, -np.inf, np.inf, 1.0, np.nan, 1e-200, 1.0])
    np.testing.assert_array_equal(S.zeta(np, s, q), sc.zeta(s, q))
    # s = inf: the whole sum is q^-s (scipy returns nan for q > 1)
    np.testing.assert_array_equal(S.zeta(np, np.inf, np.array([0.5, 1.0, 2.0])), [np.inf, 1.0, 0.0])


def test_zeta_float32():
    s = np.array([1.5, 2.0, 3.0, 8.0, 20.0], np.float32)[:, None]
    q = np.logspace(-3, 3, 200).astype(np.float32)[None, :]
    f32_case(S.zeta, sc.zeta, s, q)


# ---------------------------------------------------------------- polygamma

POLYGAMMA_EXACT = [(1, 0.5, 4.934802200544679), (2, 0.001, -2000000002.3976321),
                   (3, 7.5, 0.005772436656578694), (5, 100.0, 2.460599944011996e-09),
                   (1, -1.5, 9.379246644989124), (4, -0.3, 9731.83495623352),
                   (0, 3.0, 0.9227843350984671)]


def test_polygamma_float64():
    n = np.arange(0, 9)[:, None]
    x = np.concatenate([np.logspace(-4, 4, 500), np.linspace(0.01, 20, 500)])[None, :]
    # n! zeta(n+1, x) with exact n!: 8 EPS as for zeta / digamma
    check(S.polygamma(np, n, x), sc.polygamma(n, x), 8 * EPS, what="polygamma x>0")
    n, x, v = map(np.array, zip(*POLYGAMMA_EXACT))
    check(S.polygamma(np, n, x), v, 4 * EPS, what="polygamma exact")


def test_polygamma_negative_x_and_edges():
    n = np.arange(1, 7)[:, None]
    x = np.linspace(-10.03, -0.03, 201)[None, :]  # no poles on the grid
    ref = sc.polygamma(n, x)
    scale = sc.factorial(n) * (np.abs(x - np.round(x)) ** -(n + 1.0) + sc.zeta(n + 1.0, 1 - x))
    ours = S.polygamma(np, n, x)
    assert np.all(np.abs(ours - ref) <= 4 * EPS * np.abs(ref) + 8 * EPS * scale)
    n = np.array([1, 2, 3, 2, 1, 0, 1, 200, 200])
    x = np.array([0.0, 0.0, 0.0, -0.0, -1.0, np.inf, np.inf, 2.0, 0.5])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(S.polygamma(np, n, x), sc.polygamma(n, x))
    # non-integer or negative n -> nan
    assert np.isnan(S.polygamma(np, np.array([1.5, -1.0]), 2.0)).all()


def test_polygamma_float32_keeps_x_dtype():
    n = np.array([0, 1, 2, 3])[:, None]
    x = np.linspace(0.1, 30, 300).astype(np.float32)[None, :]
    out = S.polygamma(np, n, x)
    assert out.dtype == np.float32
    check(out, sc.polygamma(n, x.astype(np.float64)).astype(np.float32), F32_ULP,
          what="polygamma float32")


# --------------------------------------------------- incomplete gamma P, Q

IGAMMA_EXACT = [(0.5, 0.5, 0.6826894921370859, 0.3173105078629141),
                (1e-3, 0.5, 0.9994399333435292, 0.0005600666564707498),
                (1e-8, 1.0, 0.9999999978061607, 2.1938393664027067e-09),
                (0.3, 0.7, 0.8668625855062952, 0.13313741449370475),
                (0.9, 1.5, 0.8081778415035624, 0.19182215849643755),
                (5.0, 2.0, 0.05265301734371116, 0.9473469826562888),
                (30.0, 45.0, 0.9926628007022035, 0.007337199297796504),
                (100.0, 100.0, 0.5132987982791487, 0.48670120172085135),
                (2.0, 1e-10, 4.999999999666667e-21, 1.0),
                (1000.0, 1100.0, 0.99894067674607, 0.0010593232539299773),
                (0.1, 30.0, 0.9999999999999996, 4.476766580012692e-16),
                (794.3282347242822, 398.1071705534977, 1.6981912852834012e-68, 1.0),
                (20.0, 3.0, 8.3144235881917e-11, 0.9999999999168557),
                (3.0, 40.0, 0.9999999999999964, 3.572865928700226e-15),
                (1e4, 1.001e4, 0.54113746289251, 0.45886253710749003),
                (1e5, 0.999e5, 0.37627489275434334, 0.6237251072456567),
                (0.5, 1e-6, 0.0011283787909692363, 0.9988716212090307)]


def igamma_condition(a, x, value):
    """Size of the relative error that rounding the inputs alone causes:
    x d(log value)/dx = x^a e^-x / (Gamma(a) value) for x, and
    ~ a |log(x/a)| for a (the log-derivative of the prefactor)."""
    with np.errstate(all="ignore"):
        kx = np.exp(a * np.log(x) - x - sc.gammaln(a)) / np.abs(value)
        ka = a * np.abs(np.log(x / a))
    return 1 + np.where(np.isfinite(kx), kx, 0) + np.where(np.isfinite(ka), ka, 0)


def test_igamma_high_precision():
    # kernel vs mpmath: within 8 EPS times the condition number (measured
    # at most 0.2 of that bound; e.g. 87 ulp for P(794, 398) ~ 1.7e-68,
    # whose condition number in a is ~550)
    a, x, p, q = map(np.array, zip(*IGAMMA_EXACT))
    check(S.igamma(np, a, x), p, 8 * EPS * igamma_condition(a, x, p), what="igamma exact")
    check(S.igammac(np, a, x), q, 8 * EPS * igamma_condition(a, x, q), what="igammac exact")


def test_igamma_igammac_float64():
    a = np.logspace(-3, 3, 61)[:, None]
    x = np.concatenate([np.logspace(-4, 3.5, 76), [0.0, np.inf]])[None, :]
    a, x = np.broadcast_arrays(a, x)
    a = np.concatenate([a.ravel(), np.logspace(0, 3, 500)])
    x = np.concatenate([x.ravel(), np.logspace(0, 3, 500) * 1.01])  # x close to a
    for ours_fn, ref_fn in [(S.igamma, sc.gammainc), (S.igammac, sc.gammaincc)]:
        ref = ref_fn(a, x)
        keep = ~(ref < 1e-280)  # below: exp(...) underflows differently
        # kernel: 8 EPS times the condition number (see above).  scipy:
        # measured up to 6.6e-14 relative in the bulk (Q(0.5, 1) vs mpmath)
        # plus, in the tails, the rounding of its log-prefactor
        # a log x - x - lgamma(a): EPS (|a log x| + x + |lgamma(a)|).
        with np.errstate(all="ignore"):
            prefactor_log = np.abs(a * np.log(x)) + x + np.abs(sc.gammaln(a))
        rtol = (8 * EPS * igamma_condition(a, x, ref) + 1e-13
                + 2 * EPS * np.where(np.isfinite(prefactor_log), prefactor_log, 0))
        check(ours_fn(np, a, x)[keep], ref[keep], rtol[keep], what=ours_fn.__name__)


def test_igamma_small_a_upper_has_no_cancellation():
    # Q(a, x) for tiny a and x < a + 1 is O(a); computing 1 - P would lose
    # all digits.  scipy is accurate to ~7e-14 here (vs mpmath).
    a = np.logspace(-10, -1, 50)[:, None]
    x = np.linspace(0.05, 1.0, 40)[None, :]
    check(S.igammac(np, a, x), sc.gammaincc(a, x), 1e-13, what="igammac small a")


def test_igamma_edges():
    a = np.array([0.0, 0.0, 1.0, -1.0, 1.0, np.inf, np.inf, 0.0, np.nan, 1.0, 1.0, 2.0])
    x = np.array([1.0, 0.0, 0.0, 1.0, np.inf, 1.0, np.inf, np.inf, 1.0, np.nan, -1.0, 0.0])
    np.testing.assert_array_equal(S.igamma(np, a, x), sc.gammainc(a, x))
    np.testing.assert_array_equal(S.igammac(np, a, x), sc.gammaincc(a, x))
    # a ~ 1e6 near x = a still converges within the iteration cap; much larger
    # a near x = a does not and gives nan (documented) instead of a wrong value
    ref = sc.gammainc(1e6, 1e6)
    check(S.igamma(np, 1e6, 1e6), ref, 16 * EPS * igamma_condition(1e6, 1e6, ref))
    assert np.isnan(S.igamma(np, 1e8, 1e8)) and np.isnan(S.igammac(np, 1e8, 1e8))
    # the continued fraction side still works for large a when x is well above a
    ref = sc.gammaincc(1e8, 1.0003e8)
    check(S.igammac(np, 1e8, 1.0003e8), ref, 16 * EPS * igamma_condition(1e8, 1.0003e8, ref))


def test_igamma_float32():
    a = np.logspace(-2, 2.5, 40)[:, None]
    x = np.logspace(-3, 3, 60)[None, :]
    f32_case(S.igamma, sc.gammainc, a, x)
    f32_case(S.igammac, sc.gammaincc, a, x)


# -------------------------------------------------------- shapes and dtypes

UNARY = [(S.erf, sc.erf), (S.erfc, sc.erfc), (S.erf_inv, sc.erfinv),
         (S.lgamma, sc.gammaln), (S.digamma, sc.digamma)]
BINARY = [(S.zeta, sc.zeta), (S.igamma, sc.gammainc), (S.igammac, sc.gammaincc)]


@pytest.mark.parametrize("fn,ref", UNARY, ids=lambda f: getattr(f, "__name__", ""))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_zero_d_and_empty(fn, ref, dtype):
    out = fn(np, np.asarray(0.25, dtype))
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == dtype
    np.testing.assert_allclose(out, ref(0.25), rtol=F32_ULP if dtype == np.float32 else 4 * EPS)
    empty = fn(np, np.zeros((0, 3), dtype))
    assert empty.shape == (0, 3) and empty.dtype == dtype
    assert fn(np, 2).dtype == np.float64  # integer input -> float64


@pytest.mark.parametrize("fn,ref", BINARY, ids=lambda f: getattr(f, "__name__", ""))
def test_binary_broadcast_zero_d_empty(fn, ref):
    a = np.array([[1.5], [2.5], [4.0]])
    x = np.array([0.5, 1.0, 2.0, 3.0])
    out = fn(np, a, x)
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out, ref(a, x), rtol=16 * EPS)  # ours + scipy, 8 EPS each
    assert fn(np, np.float64(2.0), np.float64(1.5)).shape == ()
    assert fn(np, np.zeros(0), 1.5).shape == (0,)
    assert fn(np, np.float32(2.0), np.float64(1.5)).dtype == np.float64
    assert fn(np, np.float32(2.0), 1.5).dtype == np.float32


def test_polygamma_shapes():
    assert S.polygamma(np, 1, np.float64(2.0)).shape == ()
    assert S.polygamma(np, np.zeros(0, int), np.zeros(0)).shape == (0,)
    assert S.polygamma(np, np.array([0, 1]), np.zeros((3, 1)) + 2).shape == (3, 2)


@pytest.mark.parametrize("dtype,ulp", [(ml_dtypes.bfloat16, 2.0 ** -8), (np.float16, 2.0 ** -11)])
@pytest.mark.parametrize("fn,ref", UNARY, ids=lambda f: getattr(f, "__name__", ""))
def test_low_precision_smoke(fn, ref, dtype, ulp):
    x = np.array([0.1, 0.3, 0.7, 1.7, 2.5], dtype=dtype)  # results stay normal
    out = fn(np, x)
    assert out.dtype == np.dtype(dtype) and out.shape == x.shape
    # computed in float64 and rounded once
    np.testing.assert_array_equal(out.astype(np.float64),
                                  fn(np, x.astype(np.float64)).astype(dtype).astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), ref(x.astype(np.float64)), rtol=ulp)


def test_low_precision_binary_smoke():
    a = np.array([0.5, 2.0, 8.0], dtype=ml_dtypes.bfloat16)
    x = np.array([1.0, 3.0, 4.0], dtype=ml_dtypes.bfloat16)
    for fn, ref in BINARY:
        out = fn(np, a, x)
        assert out.dtype == np.dtype(ml_dtypes.bfloat16)
        np.testing.assert_allclose(out.astype(np.float64),
                                   ref(a.astype(np.float64), x.astype(np.float64)), rtol=2.0 ** -8)
    # float16 with bfloat16 has no common narrow type: float32
    assert S.igamma(np, a, x.astype(np.float16)).dtype == np.float32
    out = S.polygamma(np, np.array([1, 2]), np.array([1.5, 2.5], np.float16))
    assert out.dtype == np.float16


def test_bernoulli_constants():
    # exact check with sum_{k<=m} C(m+1, k) B_k = 0 (scipy.special.bernoulli
    # is only accurate to ~1e-12)
    from fractions import Fraction
    b = [Fraction(1), Fraction(-1, 2)]
    for m in range(2, 31):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    assert S._BERNOULLI == b[2::2]
    assert S._B2K == [float(v) for v in b[2::2]]


# --------------------------------------------------------- reduce_precision

def random_floats(dtype, bits, n, seed=0):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 2 ** bits, n, dtype=np.uint64)
    return raw.astype({16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]).view(dtype)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return np.array_equal(a.view(u), b.view(u))


def test_reduce_precision_bfloat16_from_float32():
    x = random_floats(np.float32, 32, 200000)
    out = S.reduce_precision(np, x, 8, 7)
    assert out.dtype == np.float32
    normal = np.isfinite(x) & (np.abs(x) >= np.finfo(np.float32).tiny)
    with np.errstate(all="ignore"):
        cast = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    assert same_bits(out[normal], cast[normal])
    assert np.isnan(out[np.isnan(x)]).all()
    np.testing.assert_array_equal(out[np.isinf(x)], x[np.isinf(x)])
    # round to nearest even: 1 + 2^-8 is a tie between 1 and 1 + 2^-7
    ties = np.array([1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -(1 + 2.0 ** -8)], np.float32)
    np.testing.assert_array_equal(S.reduce_precision(np, ties, 8, 7),
                                  [1.0, 1 + 2 * 2.0 ** -7, -1.0])


def test_reduce_precision_float16_from_float32():
    x = random_floats(np.float32, 32, 200000, seed=1)
    out = S.reduce_precision(np, x, 5, 10)
    ax = np.abs(x)
    normal = np.isfinite(x) & (ax >= 2.0 ** -14) & (ax < 65520.0)
    with np.errstate(all="ignore"):
        cast = x.astype(np.float16).astype(np.float32)
    assert same_bits(out[normal], cast[normal])
    # overflow (incl. rounding up past the largest float16) -> signed inf
    big = np.isfinite(x) & (ax >= 65520.0)
    np.testing.assert_array_equal(out[big], np.copysign(np.inf, x[big]))
    # XLA flushes the reduced format's denormals (exponent field 0) to a
    # signed zero instead of rounding them as float16 casting does, unless the
    # mantissa rounding already carried them up to the smallest normal.
    below = np.isfinite(x) & (ax < 2.0 ** -14 * (1 - 2.0 ** -11))
    assert np.all(out[below] == 0)
    np.testing.assert_array_equal(np.signbit(out[below]), np.signbit(x[below]))
    edge = np.array([2.0 ** -14 * (1 - 2.0 ** -12), 2.0 ** -15, -2.0 ** -20, 2.0 ** -14],
                    np.float32)
    assert same_bits(S.reduce_precision(np, edge, 5, 10),
                     np.array([2.0 ** -14, 0.0, -0.0, 2.0 ** -14], np.float32))


def test_reduce_precision_float32_from_float64():
    x = random_floats(np.float64, 64, 200000, seed=2)
    out = S.reduce_precision(np, x, 8, 23)
    ax = np.abs(x)
    normal = np.isfinite(x) & (ax >= np.finfo(np.float32).tiny) & (ax < np.finfo(np.float32).max)
    with np.errstate(all="ignore"):
        cast = x.astype(np.float32).astype(np.float64)
    assert normal.sum() > 1000 and same_bits(out[normal], cast[normal])
    v = np.array([1e300, -1e300, 1e-300, -1e-300, np.nan, 1.0 + 2.0 ** -40])
    out = S.reduce_precision(np, v, 8, 23)
    np.testing.assert_array_equal(out[:4], [np.inf, -np.inf, 0.0, -0.0])
    assert np.signbit(out[3]) and np.isnan(out[4]) and out[5] == 1.0


def test_reduce_precision_low_precision_inputs_and_shapes():
    h = random_floats(np.float16, 16, 5000, seed=3)
    assert same_bits(S.reduce_precision(np, h, 5, 10), h)  # identity
    b = np.array([1.0, 3.140625, np.nan, -np.inf, 1e30], dtype=ml_dtypes.bfloat16)
    out = S.reduce_precision(np, b, 5, 2)
    assert out.dtype == b.dtype
    np.testing.assert_array_equal(out.astype(np.float64)[[0, 1, 3, 4]], [1.0, 3.0, -np.inf, np.inf])
    assert np.isnan(out.astype(np.float64)[2])
    # reduce bfloat16 to e5m2 equals float8_e5m2 rounding in its normal range
    vals = random_floats(ml_dtypes.bfloat16, 16, 5000, seed=4)
    with np.errstate(invalid="ignore"):
        f = vals.astype(np.float64)
    normal = np.isfinite(f) & (np.abs(f) >= 2.0 ** -14) & (np.abs(f) < 57344.0)
    cast = vals[normal].astype(ml_dtypes.float8_e5m2).astype(np.float64)
    out = S.reduce_precision(np, vals, 5, 2)[normal]
    np.testing.assert_array_equal(out.astype(np.float64), cast)
    z = S.reduce_precision(np, np.float32(1.0 + 2.0 ** -10), 8, 7)
    assert z.shape == () and z == 1.0
    assert S.reduce_precision(np, np.zeros((2, 0), np.float64), 5, 10).shape == (2, 0)
    with pytest.raises(TypeError):
        S.reduce_precision(np, np.arange(3), 5, 10)
    with pytest.raises(ValueError):
        S.reduce_precision(np, np.ones(3), 0, 10)


def test_reduce_precision_zero_mantissa_bits_keeps_nan():
    x = np.array([1.0, 1.4, 1.5, 3.0, np.nan], np.float32)
    out = S.reduce_precision(np, x, 8, 0)
    np.testing.assert_array_equal(out[:4], [1.0, 1.0, 2.0, 2.0])  # ties go to the even exponent
    assert np.isnan(out[4])
