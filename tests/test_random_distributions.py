"""ember.random's distributions: agreement with JAX, statistics against SciPy, gradients, transforms, errors.

Every statistical test uses a fixed key, so it is deterministic. The thresholds are chosen so that a
correct sampler passes with overwhelming probability over the choice of key:

- Kolmogorov-Smirnov and chi-square tests pass when p > P_MIN = 1e-4. Under a correct sampler the
  p-value is uniform, so each test fails for a random key with probability 1e-4 (chi-square: about
  that, the statistic being asymptotically chi-square with bins of expected count >= 5); with the
  ~60 such tests here the chance that any would fail for fresh keys is below 1%.
- Moments (means, variances, mean gradients) must lie within Z_MAX = 6 standard errors of the
  exact value; with N = 20,000 samples the estimates are close to normal, so each check fails with
  probability about 2e-9.

N = 20,000 keeps the whole file to seconds while still resolving CDF errors of about 0.015 (KS).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st
from op_db import OPS
from op_db_random import ref_random_gamma_grad

import ember
import ember.numpy as enp
import ember.random as er

N = 20_000
P_MIN = 1e-4
Z_MAX = 6.0


def _np(x) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def _ks(sample, cdf, *args):
    p = st.kstest(_np(sample).ravel(), cdf, args=args).pvalue
    assert p > P_MIN, f"KS p-value {p:.2e} against {getattr(cdf, '__name__', cdf)}{args}"


def _moment_close(estimates, exact, name=""):
    est = _np(estimates).ravel()
    se = est.std(ddof=1) / math.sqrt(est.size)
    assert abs(est.mean() - exact) <= Z_MAX * se + 1e-12, f"{name}: mean {est.mean()} vs {exact} (se {se})"


def _mean_and_var(sample, dist):
    x = _np(sample).ravel()
    mean, var = dist.stats(moments="mv")
    mu4 = dist.moment(4) - 4 * mean * dist.moment(3) + 6 * mean**2 * dist.moment(2) - 3 * mean**4
    se_mean, se_var = math.sqrt(var / x.size), math.sqrt(max(mu4 - var**2, 0.0) / x.size)
    assert abs(x.mean() - mean) <= Z_MAX * se_mean, f"mean {x.mean()} vs {mean} (se {se_mean})"
    assert abs(x.var() - var) <= Z_MAX * se_var, f"variance {x.var()} vs {var} (se {se_var})"


def _chisquare_counts(sample, pmf, support_max):
    """Chi-square goodness of fit of integer samples, bins merged so each expects >= 5 draws."""
    x = _np(sample).ravel().astype(np.int64)
    assert x.min() >= 0
    ks = np.arange(0, support_max + 1)
    probs = pmf(ks)
    observed = np.bincount(np.minimum(x, support_max + 1), minlength=support_max + 2).astype(np.float64)
    expected = np.append(probs, max(0.0, 1 - probs.sum())) * x.size
    bins_o, bins_e, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            bins_o.append(acc_o), bins_e.append(acc_e)
            acc_o = acc_e = 0.0
    bins_o[-1] += acc_o
    bins_e[-1] += acc_e
    bins_o, bins_e = np.array(bins_o), np.array(bins_e)
    stat = ((bins_o - bins_e) ** 2 / bins_e).sum()
    p = st.chi2.sf(stat, len(bins_o) - 1)
    assert p > P_MIN, f"chi-square p-value {p:.2e} ({len(bins_o)} bins)"


# --- agreement with JAX ---------------------------------------------------------------------------------

# jax 0.10.2 (CPU, x64 off) with jax.random.PRNGKey(0): the same algorithms and key layouts give the same
# numbers; normals go through erf_inv, whose last bits may differ from XLA's, hence rtol.
JAX = {
    "exponential": (lambda k: er.exponential(k, (4,)), [2.9501280784606934, 3.8434245586395264, 0.4039035439491272, 0.6323691010475159]),
    "laplace": (lambda k: er.laplace(k, (4,)), [-2.256981611251831, -3.1502788066864014, 0.4085954427719116, 0.06471242010593414]),
    "logistic": (lambda k: er.logistic(k, (4,)), [2.896375894546509, 3.8217716217041016, -0.6978392004966736, -0.12549054622650146]),
    "cauchy": (lambda k: er.cauchy(k, (4,)), [6.027494430541992, 14.837895393371582, -0.5817222595214844, -0.09874986857175827]),
    "gamma": (lambda k: er.gamma(k, enp.asarray([0.3, 5.0, 1.0, 0.01])), [0.6292697191238403, 4.821604251861572, 0.35100987553596497, 0.0]),
    "loggamma": (lambda k: er.loggamma(k, enp.asarray([0.3, 5.0, 1.0, 0.01])),
                 [-0.4631953835487366, 1.5731066465377808, -1.0469409227371216, -188.1798095703125]),
    "beta": (lambda k: er.beta(k, 2.0, 3.0, (3,)), [0.2362736165523529, 0.4904595613479614, 0.6837947964668274]),
    "dirichlet": (lambda k: er.dirichlet(k, enp.asarray([1.0, 2.0, 0.5]), (2,)),
                  [0.25499311089515686, 0.7255988717079163, 0.019408028572797775, 0.4475518763065338, 0.5524455904960632,
                   2.5084759727178607e-06]),
    "chisquare": (lambda k: er.chisquare(k, 3.0, (3,)), [2.2050840854644775, 2.489966869354248, 1.4557135105133057]),
    "t": (lambda k: er.t(k, 4.0, (3,)), [0.7160012722015381, -2.417440891265869, -1.414402961730957]),
    "f": (lambda k: er.f(k, 3.0, 5.0, (3,)), [2.579707384109497, 0.1921967715024948, 0.15977689623832703]),
    "poisson": (lambda k: er.poisson(k, enp.asarray([0.5, 3.0, 12.0, 100.0, 0.0])), [0, 0, 7, 110, 0]),
    "binomial": (lambda k: er.binomial(k, enp.asarray([5.0, 20.0, 100.0, 1000.0]), enp.asarray([0.3, 0.7, 0.4, 0.9])),
                 [2.0, 16.0, 34.0, 890.0]),
    "geometric": (lambda k: er.geometric(k, 0.3, (5,)), [1, 1, 4, 3, 2]),
    "multivariate_normal": (lambda k: er.multivariate_normal(k, enp.zeros(2), enp.asarray([[2.0, 0.5], [0.5, 1.0]]), (2,)),
                            [2.29476261138916, 2.4681522846221924, -0.6131951212882996, -0.22683857381343842]),
    "orthogonal": (lambda k: er.orthogonal(k, 3), [0.9554101228713989, 0.2941357493400574, 0.02599557861685753, -0.04628981649875641,
                                                  0.2361408770084381, -0.9706156253814697, -0.2916313707828522, 0.9261326193809509,
                                                  0.23922686278820038]),
    "ball": (lambda k: er.ball(k, 3, 2, (2,)), [0.9171597361564636, 0.3927421569824219, 0.01165350154042244, -0.8613650798797607,
                                               0.3168482482433319, -0.06285543739795685]),
    "grad gamma": (lambda k: ember.grad(lambda a: er.gamma(k, a).sum())(enp.asarray([0.3, 2.0, 9.0])),
                   [2.2258236408233643, 1.0179104804992676, 0.9190714359283447]),
    "grad beta": (lambda k: ember.grad(lambda a: er.beta(k, a, 2.0).sum())(enp.asarray([0.3, 2.0, 9.0])),
                  [0.425203412771225, 0.1799493283033371, 0.00505366176366806]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(JAX))
def test_matches_jax(name):
    fn, expected = JAX[name]
    got = np.asarray(fn(er.PRNGKey(0))).ravel()
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6)


# --- continuous distributions against SciPy ---------------------------------------------------------------

_CONTINUOUS = {
    "exponential": (lambda k: er.exponential(k, (N,)), st.expon()),
    "laplace": (lambda k: er.laplace(k, (N,)), st.laplace()),
    "logistic": (lambda k: er.logistic(k, (N,)), st.logistic()),
    "cauchy": (lambda k: er.cauchy(k, (N,)), st.cauchy()),
    "gamma 0.1": (lambda k: er.gamma(k, 0.1, (N,)), st.gamma(0.1)),
    "gamma 0.5": (lambda k: er.gamma(k, 0.5, (N,)), st.gamma(0.5)),
    "gamma 1": (lambda k: er.gamma(k, 1.0, (N,)), st.gamma(1.0)),
    "gamma 3.3": (lambda k: er.gamma(k, 3.3, (N,)), st.gamma(3.3)),
    "gamma 250": (lambda k: er.gamma(k, 250.0, (N,)), st.gamma(250.0)),
    "beta 0.5 0.5": (lambda k: er.beta(k, 0.5, 0.5, (N,)), st.beta(0.5, 0.5)),
    "beta 2 7": (lambda k: er.beta(k, 2.0, 7.0, (N,)), st.beta(2.0, 7.0)),
    "beta 0.05 3": (lambda k: er.beta(k, 0.05, 3.0, (N,)), st.beta(0.05, 3.0)),
    "chisquare 1": (lambda k: er.chisquare(k, 1.0, (N,)), st.chi2(1.0)),
    "chisquare 7.5": (lambda k: er.chisquare(k, 7.5, (N,)), st.chi2(7.5)),
    "t 1.5": (lambda k: er.t(k, 1.5, (N,)), st.t(1.5)),
    "t 9": (lambda k: er.t(k, 9.0, (N,)), st.t(9.0)),
    "f 4 11": (lambda k: er.f(k, 4.0, 11.0, (N,)), st.f(4.0, 11.0)),
    "pareto 2.5": (lambda k: er.pareto(k, 2.5, (N,)), st.pareto(2.5)),
    "lognormal 0.7": (lambda k: er.lognormal(k, 0.7, (N,)), st.lognorm(0.7)),
    "weibull_min": (lambda k: er.weibull_min(k, 2.0, 1.7, (N,)), st.weibull_min(1.7, scale=2.0)),
    "rayleigh": (lambda k: er.rayleigh(k, 1.5, (N,)), st.rayleigh(scale=1.5)),
    "wald": (lambda k: er.wald(k, 0.8, (N,)), st.invgauss(0.8)),
    "triangular": (lambda k: er.triangular(k, -1.0, 0.5, 2.0, (N,)), st.triang(0.5, loc=-1.0, scale=3.0)),
    "maxwell": (lambda k: er.maxwell(k, (N,)), st.maxwell()),
    "generalized_normal 0.8": (lambda k: er.generalized_normal(k, 0.8, (N,)), st.gennorm(0.8)),
    "generalized_normal 3": (lambda k: er.generalized_normal(k, 3.0, (N,)), st.gennorm(3.0)),
}  # fmt: skip

# Moments only where they are finite and the fourth moment (for the variance's error) is too.
_NO_MOMENTS = {"cauchy", "t 1.5", "pareto 2.5", "f 4 11", "gamma 0.1", "beta 0.05 3", "t 9"}


@pytest.mark.parametrize("name", sorted(_CONTINUOUS))
def test_continuous_ks_and_moments(name):
    fn, dist = _CONTINUOUS[name]
    x = fn(er.fold_in(er.key(2026), sorted(_CONTINUOUS).index(name)))
    assert x.shape == (N,) and x.dtype == np.float32
    _ks(x, dist.cdf)
    if name not in _NO_MOMENTS:
        _mean_and_var(x, dist)


def test_double_sided_maxwell_and_rademacher():
    k1, k2 = er.split(er.key(11))
    x = _np(er.double_sided_maxwell(k1, 1.0, 2.0, (N,)))
    # |x - loc| / scale is Maxwell, and the sign is a fair coin.
    _ks(np.abs(x - 1.0) / 2.0, st.maxwell.cdf)
    signs = _np(er.rademacher(k2, (N,)))
    assert set(np.unique(signs)) == {-1.0, 1.0}
    _chisquare_counts((signs + 1) / 2, lambda k: np.array([0.5, 0.5])[k], 1)


def test_loggamma_is_exact_where_gamma_underflows():
    a = 0.01
    y = er.loggamma(er.key(12), a, (N,))
    # P(log X <= y) = P(a, e^y); float32 gamma samples of a = 0.01 are mostly 0 (below 1e-38).
    _ks(y, lambda v: sc.gammainc(a, np.exp(v)))
    _moment_close(y, sc.digamma(a), "E[log X]")
    assert float(enp.mean(er.gamma(er.key(12), a, (N,)) == 0)) > 0.3


def test_gamma_parameter_arrays_broadcast_per_element():
    a = enp.asarray([0.4, 2.0, 40.0])
    x = _np(er.gamma(er.key(13), a, (N // 4, 3)))
    for j, alpha in enumerate([0.4, 2.0, 40.0]):
        _ks(x[:, j], st.gamma(alpha).cdf)


@pytest.mark.parametrize("capacity", [1, 3, 64])
def test_gamma_reruns_give_the_bits_of_the_plain_loop(capacity):
    # gamma runs each element's rejection loop once and reruns the few that need more rounds, `capacity`
    # at a time; that must be exactly JAX's vmapped loop, including when the reruns need several batches.
    from ember.random import _gamma

    a = enp.asarray(np.linspace(0.02, 3.0, 400, dtype=np.float32))
    keys = er.split(er.key(17), 400)
    _, d, c = _gamma._constants(a)
    plain = ember.vmap(_gamma._loop_v)(keys, d, c)
    rerun = _gamma._accepted_v(keys, d, c, capacity)
    assert _np(plain).tobytes() == _np(rerun).tobytes()


def test_counting_loops_give_the_reference_bits_with_many_elements():
    # Knuth's poisson and binomial inversion run their late rounds on the pending elements only (the
    # op database's samples are too small to reach that); the counts must be the reference loop's.
    from op_db_random import ref_binomial, ref_poisson

    rng = np.random.default_rng(0)
    lam = rng.uniform(0.0, 9.9, (40, 50)).astype(np.float32)
    np.testing.assert_array_equal(_np(er.poisson(er.key(18), lam)), ref_poisson(np.array([0, 18], np.uint32), lam))
    n = np.floor(rng.uniform(0.0, 30.0, (40, 50))).astype(np.float32)
    p = rng.uniform(0.0, 0.3, (40, 50)).astype(np.float32)
    np.testing.assert_array_equal(_np(er.binomial(er.key(19), n, p)), ref_binomial(np.array([0, 19], np.uint32), n, p))


def test_gamma_float64():
    with ember.config.x64(True):
        x = er.gamma(er.key(14), 2.7, (N,))
        assert x.dtype == np.float64
        _ks(x, st.gamma(2.7).cdf)
        _mean_and_var(x, st.gamma(2.7))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gamma_and_beta_low_precision(dtype):
    x = er.gamma(er.key(15), 3.0, (4000,), dtype)
    b = er.beta(er.key(16), 2.0, 5.0, (4000,), dtype)
    assert str(x.dtype) == dtype and str(b.dtype) == dtype
    # The grid of float16/bfloat16 values distorts the CDF by at most half a step: compare moments.
    assert abs(_np(x).mean() - 3.0) < 0.15 and abs(_np(b).mean() - 2 / 7) < 0.02


def test_dirichlet_marginals_are_beta():
    alpha = np.array([0.3, 1.0, 4.5])
    x = _np(er.dirichlet(er.key(17), enp.asarray(alpha), (N,)))
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    for i, a in enumerate(alpha):
        _ks(x[:, i], st.beta(a, alpha.sum() - a).cdf)


def test_dirichlet_batched_alpha():
    alpha = np.array([[1.0, 1.0], [2.0, 6.0]])
    x = _np(er.dirichlet(er.key(18), enp.asarray(alpha), (N // 2, 2)))
    assert x.shape == (N // 2, 2, 2)
    _ks(x[:, 0, 0], st.uniform().cdf)
    _ks(x[:, 1, 0], st.beta(2.0, 6.0).cdf)


# --- discrete distributions ------------------------------------------------------------------------------


@pytest.mark.parametrize("lam", [0.5, 4.0, 9.9, 10.0, 37.5, 300.0])
def test_poisson(lam):
    # Knuth's method below 10, rejection (PTRS) from 10: both sides of the switch.
    x = er.poisson(er.fold_in(er.key(20), int(lam * 10)), lam, (N,))
    assert x.dtype == np.int32
    _chisquare_counts(x, st.poisson(lam).pmf, int(lam + 8 * math.sqrt(lam) + 10))
    _mean_and_var(x, st.poisson(lam))


@pytest.mark.parametrize("n, p", [(10, 0.3), (7, 0.95), (60, 0.1), (40, 0.5), (500, 0.25), (3000, 0.8)])
def test_binomial(n, p):
    # Inversion where n min(p, 1-p) <= 10, BTRS above; p > 1/2 draws n - Binomial(n, 1 - p).
    x = er.binomial(er.fold_in(er.key(21), n), n, p, (N,))
    assert x.dtype == np.float32
    assert (_np(x) == np.round(_np(x))).all() and float(x.min()) >= 0 and float(x.max()) <= n
    _chisquare_counts(x, st.binom(n, p).pmf, n)
    _mean_and_var(x, st.binom(n, p))


def test_binomial_edge_parameters():
    x = _np(er.binomial(er.key(22), enp.asarray([0.0, -1.0, np.nan, np.inf, 5.0, 5.0, 5.7]),
                        enp.asarray([0.3, 0.3, 0.3, 0.3, 0.0, 1.0, 1.0])))  # fmt: skip
    np.testing.assert_array_equal(x, [0.0, np.nan, np.nan, np.inf, 0.0, 5.0, 5.0])


@pytest.mark.parametrize("p", [0.02, 0.3, 0.85])
def test_geometric(p):
    x = er.geometric(er.fold_in(er.key(23), int(p * 100)), p, (N,))
    assert int(x.min()) >= 1
    _chisquare_counts(_np(x) - 1, lambda k: st.geom(p).pmf(k + 1), int(12 / p))
    _mean_and_var(x, st.geom(p))


def test_poisson_edge_parameters():
    x = er.poisson(er.key(24), enp.asarray([0.0, 1e-30, 5.0]), (3,))
    assert x.tolist()[:2] == [0, 0]


# --- multivariate ----------------------------------------------------------------------------------------


def test_multivariate_normal_moments_and_mahalanobis():
    mean = np.array([1.0, -2.0, 0.5])
    a = np.array([[1.0, 0.4, -0.3], [0.0, 0.8, 0.2], [0.0, 0.0, 0.5]])
    cov = a @ a.T + 0.1 * np.eye(3)
    for method in ("cholesky", "eigh", "svd"):
        x = _np(er.multivariate_normal(er.key(30), enp.asarray(mean), enp.asarray(cov), (N,), method=method))
        assert x.shape == (N, 3)
        for i in range(3):
            _moment_close(x[:, i], mean[i], f"{method} mean {i}")
        # (x - m)^T cov^-1 (x - m) is chi-square with 3 degrees of freedom.
        d = x - mean
        _ks(np.einsum("ni,ij,nj->n", d, np.linalg.inv(cov), d), st.chi2(3).cdf)
        np.testing.assert_allclose(np.cov(x.T), cov, atol=Z_MAX * 2 * cov.max() / math.sqrt(N))


def test_multivariate_normal_broadcasts_batches():
    means = enp.asarray(np.array([[0.0, 0.0], [10.0, -10.0]]))
    covs = enp.asarray(np.stack([np.eye(2), 4 * np.eye(2)]))
    x = _np(er.multivariate_normal(er.key(31), means, covs, (N // 2, 2)))
    assert x.shape == (N // 2, 2, 2)
    _ks(x[:, 0, 0], st.norm().cdf)
    _ks(x[:, 1, 1], st.norm(-10.0, 2.0).cdf)


@pytest.mark.parametrize("n, m", [(3, None), (5, 2), (2, 4)])
def test_orthogonal_is_orthogonal_and_haar(n, m):
    q = _np(er.orthogonal(er.key(32), n, (N // 4,), m=m))
    cols = n if m is None else m
    assert q.shape == (N // 4, n, cols)
    small = q if n >= cols else np.swapaxes(q, -1, -2)
    gram = np.einsum("bij,bik->bjk", small, small)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small.shape[-1]), gram.shape), atol=1e-5)
    # Under the Haar measure an entry q_ij of an n x n orthogonal matrix has the law of one coordinate of
    # a uniform unit vector in R^max(n, m): (q_ij^2) ~ Beta(1/2, (d - 1)/2).
    d = max(n, cols)
    _ks(small[:, 0, 0] ** 2, st.beta(0.5, (d - 1) / 2).cdf)
    if n == 3 and m is None:
        # and det = +1 or -1 with equal probability
        _chisquare_counts((np.linalg.det(q) > 0).astype(int), lambda k: np.array([0.5, 0.5])[k], 1)


def test_orthogonal_complex_is_unitary():
    q = _np_c(er.orthogonal(er.key(33), 3, (5,), "complex64"))
    np.testing.assert_allclose(np.einsum("bji,bjk->bik", q.conj(), q), np.broadcast_to(np.eye(3), (5, 3, 3)), atol=1e-5)


def _np_c(x):
    return np.asarray(x).astype(np.complex128)


@pytest.mark.parametrize("d, p", [(1, 2.0), (3, 2.0), (4, 1.0), (2, 0.5)])
def test_ball_is_uniform(d, p):
    x = _np(er.ball(er.fold_in(er.key(34), d), d, p, (N,)))
    assert x.shape == (N, d)
    r = (np.abs(x) ** p).sum(-1) ** (1 / p)
    assert r.max() <= 1 + 1e-6
    # For the uniform law on the unit Lp ball in d dimensions, P(|x|_p <= r) = r^d.
    _ks(r**d, st.uniform().cdf)
    _moment_close(x[:, 0], 0.0, "E[x_0]")


# --- gradients -------------------------------------------------------------------------------------------


def test_gamma_gradient_is_the_implicit_gradient():
    a = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 60.0], np.float32)
    with ember.config.x64(True):
        a64 = enp.asarray(a.astype(np.float64))
        g = np.asarray(ember.grad(lambda a: er.gamma(er.key(40), a).sum())(a64))
        x = np.asarray(er.gamma(er.key(40), a64))
    # -(dF/da) / pdf at each sample, with dF/da from SciPy by finite differences.
    np.testing.assert_allclose(g, ref_random_gamma_grad(a.astype(np.float64), x), rtol=1e-6, atol=1e-12)


def test_random_gamma_grad_extremes_and_edges():
    import ember.lax as lax

    with ember.config.x64(True):
        a = np.array([1e-3, 1e-3, 0.02, 0.5, 1.0, 3.0, 3.0, 1e3])
        x = np.array([1e-30, 0.5, 1e-10, 1e-6, 20.0, 25.0, 1e-3, 1e3])
        got = np.asarray(lax.random_gamma_grad(enp.asarray(a), enp.asarray(x)))
        np.testing.assert_allclose(got, ref_random_gamma_grad(a, x), rtol=1e-7)
        # Large a, where finite differences of gammainc lose their digits: Gamma(a) ~ a + sqrt(a) z, so
        # dx/da = 1 + z / (2 sqrt(a)) to O(1/a), z = (x - a + 1/3) / sqrt(a) (the median is a - 1/3).
        a = np.array([1e5, 1e5, 1e5])
        x = np.array([1e5, 1.01e5, 0.99e5])
        z = (x - a + 1 / 3) / np.sqrt(a)
        got = np.asarray(lax.random_gamma_grad(enp.asarray(a), enp.asarray(x)))
        np.testing.assert_allclose(got, 1 + z / (2 * np.sqrt(a)), atol=5e-5)
        # an underflowed sample does not move; no gradient outside the domain
        edge = lax.random_gamma_grad(enp.asarray([2.0, 0.0, -1.0, 2.0]), enp.asarray([0.0, 1.0, 1.0, -1.0]))
        np.testing.assert_array_equal(np.asarray(edge), [0.0, np.nan, np.nan, np.nan])


@pytest.mark.parametrize(
    "name, fn, exact",
    [
        # d E[X] / da for X ~ Gamma(a): 1.
        ("gamma", lambda k, a: er.gamma(k, a, (N,)), lambda a: 1.0),
        ("gamma small", lambda k, a: er.gamma(k, a * 0.1, (N,)), lambda a: 0.1),
        # E[log X] = digamma(a)
        ("loggamma", lambda k, a: er.loggamma(k, a, (N,)), lambda a: sc.polygamma(1, a)),
        # E[X] = a / (a + 2) for Beta(a, 2)
        ("beta", lambda k, a: er.beta(k, a, 2.0, (N,)), lambda a: 2.0 / (a + 2.0) ** 2),
        # E[X] = df for chi-square
        ("chisquare", lambda k, a: er.chisquare(k, a, (N,)), lambda a: 1.0),
        # E[X_0] = a / (a + 3) for Dirichlet(a, 1, 2)
        ("dirichlet", lambda k, a: er.dirichlet(k, enp.stack([a, enp.asarray(1.0), enp.asarray(2.0)]), (N,))[:, 0],
         lambda a: 3.0 / (a + 3.0) ** 2),
        # E[|T|] for Student's t: 2 sqrt(df) Gamma((df+1)/2) / (sqrt(pi) (df - 1) Gamma(df/2))
        ("t", lambda k, a: enp.abs(er.t(k, a * 2.0, (N,))),
         lambda a: 2.0 * _d_abs_t_mean(2.0 * a)),
    ],
)
def test_mean_of_reparameterised_gradients(name, fn, exact):
    # The reparameterised gradient is unbiased: the mean over samples of d x / d a is d E[x] / d a.
    a = 2.5
    per_sample = ember.jacfwd(lambda a: fn(er.key(41), a))(enp.asarray(a))
    _moment_close(per_sample, exact(a), name)


def _abs_t_mean(df):
    return 2 * math.sqrt(df) * math.exp(sc.gammaln((df + 1) / 2) - sc.gammaln(df / 2)) / (math.sqrt(math.pi) * (df - 1))


def _d_abs_t_mean(df, h=1e-5):
    return (_abs_t_mean(df + h) - _abs_t_mean(df - h)) / (2 * h)


def test_gradients_under_jit_and_vmap():
    keys = er.split(er.key(42), 4)
    alphas = enp.asarray([0.3, 1.0, 4.0, 20.0])

    def loss(key, a):
        return er.beta(key, a, 3.0, (8,)).sum() + er.gamma(key, a, (8,)).mean()

    eager = np.stack([np.asarray(ember.grad(loss, argnums=1)(keys[i], alphas[i])) for i in range(4)])
    np.testing.assert_array_equal(np.asarray(ember.vmap(ember.grad(loss, argnums=1))(keys, alphas)), eager)
    np.testing.assert_array_equal(np.asarray(ember.jit(ember.vmap(ember.grad(loss, argnums=1)))(keys, alphas)), eager)
    # grad of a jitted function runs jit's split primal/linear programs, whose reductions may round in
    # another order than the eager backward pass (the samples themselves are bit-identical, tested below).
    np.testing.assert_allclose(np.asarray(ember.grad(ember.jit(loss), argnums=1)(keys[0], alphas[0])), eager[0], rtol=1e-6)


def test_multivariate_normal_gradient_matches_finite_differences():
    with ember.config.x64(True):
        mean = enp.asarray([0.5, -1.0])
        cov = enp.asarray([[2.0, 0.3], [0.3, 1.0]])

        def f(m, c):
            return (er.multivariate_normal(er.key(43), m, c, (3,)) ** 2).sum()

        gm, gc = ember.grad(f, argnums=(0, 1))(mean, cov)
        h = 1e-6
        e = np.eye(2)
        fd_m = [(float(f(mean + h * e[i], cov)) - float(f(mean - h * e[i], cov))) / (2 * h) for i in range(2)]
        np.testing.assert_allclose(np.asarray(gm), fd_m, rtol=1e-6)
        # Directional derivatives along symmetric perturbations (cov must stay a covariance).
        for d in (np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[0.0, 0.0], [0.0, 1.0]])):
            fd_c = (float(f(mean, cov + h * d)) - float(f(mean, cov - h * d))) / (2 * h)
            np.testing.assert_allclose((np.asarray(gc) * d).sum(), fd_c, rtol=1e-6)


def test_second_derivatives_are_refused_clearly():
    f = lambda a: er.gamma(er.key(44), a)  # noqa: E731
    with pytest.raises(ember.errors.EmberError, match="random_gamma_grad.*no derivative"):
        ember.grad(ember.grad(f))(2.0)


# --- transforms: the same bits under jit and vmap -----------------------------------------------------------

_CALLS = {
    "exponential": lambda k, x: er.exponential(k, (3,)),
    "gamma": lambda k, x: er.gamma(k, x, (2, 3)),
    "loggamma": lambda k, x: er.loggamma(k, x),
    "beta": lambda k, x: er.beta(k, x, 1.5),
    "dirichlet": lambda k, x: er.dirichlet(k, enp.stack([x, x + 1.0]), (2,)),
    "chisquare": lambda k, x: er.chisquare(k, x),
    "t": lambda k, x: er.t(k, x),
    "f": lambda k, x: er.f(k, x, 3.0),
    "poisson": lambda k, x: er.poisson(k, x * 6.0),
    "binomial": lambda k, x: er.binomial(k, x * 12.0, 0.35),
    "geometric": lambda k, x: er.geometric(k, x / 10.0),
    "multivariate_normal": lambda k, x: er.multivariate_normal(k, enp.stack([x, -x]), enp.eye(2) * x, (2,)),
    "orthogonal": lambda k, x: er.orthogonal(k, 3),
    "ball": lambda k, x: er.ball(k, 3, 1.5),
    "generalized_normal": lambda k, x: er.generalized_normal(k, 1.5, (3,)),
    "double_sided_maxwell": lambda k, x: er.double_sided_maxwell(k, x, 1.0, (2,)),
}


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_jit_and_per_example_vmap_give_the_eager_bits(name):
    fn = _CALLS[name]
    keys = er.split(er.key(50), 3)
    xs = enp.asarray([0.5, 2.0, 7.0])
    loop = [np.asarray(fn(keys[i], xs[i])) for i in range(3)]
    np.testing.assert_array_equal(np.asarray(ember.jit(fn)(keys[0], xs[0])), loop[0])
    np.testing.assert_array_equal(np.asarray(ember.vmap(fn)(keys, xs)), np.stack(loop))
    np.testing.assert_array_equal(np.asarray(ember.jit(ember.vmap(fn))(keys, xs)), np.stack(loop))
    # keys mapped, parameters shared
    shared = np.stack([np.asarray(fn(keys[i], xs[1])) for i in range(3)])
    np.testing.assert_array_equal(np.asarray(ember.vmap(fn, in_axes=(0, None))(keys, xs[1])), shared)


def test_examples_get_different_streams():
    x = np.asarray(ember.vmap(lambda k: er.gamma(k, 2.0, (4,)))(er.split(er.key(51), 2)))
    assert not np.array_equal(x[0], x[1])


# --- shapes and dtypes -------------------------------------------------------------------------------------


def test_shapes_dtypes_and_empty_draws():
    k = er.key(60)
    assert er.gamma(k, enp.ones((2, 1)), (3, 2, 4)).shape == (3, 2, 4)
    assert er.beta(k, enp.ones(3), enp.ones((2, 1))).shape == (2, 3)
    assert er.t(k, 3.0).shape == () and er.chisquare(k, enp.ones(4)).shape == (4,)
    assert er.dirichlet(k, enp.ones(4)).shape == (4,)
    for x in (er.gamma(k, 1.0, (0,)), er.beta(k, 1.0, 1.0, (2, 0)), er.poisson(k, 1.0, (0, 3)), er.binomial(k, 3, 0.5, (0,)),
              er.dirichlet(k, enp.ones(3), (0,)), er.orthogonal(k, 3, (0,)), er.ball(k, 2, shape=(0,))):  # fmt: skip
        assert x.size == 0
    assert er.poisson(k, 2.0, dtype="int8").dtype == np.int8
    assert er.geometric(k, 0.5, (2,), "int16").dtype == np.int16
    assert er.binomial(k, 5, 0.5, dtype="float16").dtype == np.float16
    assert er.rademacher(k, (3,), "float32").dtype == np.float32
    assert not er.gamma(k, 2.0).weak_type
    with ember.config.x64(True):
        assert er.gamma(k, 2.0).dtype == np.float64 and er.poisson(k, 2.0).dtype == np.int64
        assert er.multivariate_normal(k, np.zeros(2), np.eye(2)).dtype == np.float64
    assert er.multivariate_normal(k, np.zeros(2, np.int32), np.eye(2, dtype=np.int32)).dtype == np.float32


# --- errors --------------------------------------------------------------------------------------------------

_TAKES_KEY = {
    "exponential": lambda k: er.exponential(k),
    "laplace": lambda k: er.laplace(k),
    "logistic": lambda k: er.logistic(k),
    "cauchy": lambda k: er.cauchy(k),
    "gamma": lambda k: er.gamma(k, 1.0),
    "loggamma": lambda k: er.loggamma(k, 1.0),
    "beta": lambda k: er.beta(k, 1.0, 1.0),
    "dirichlet": lambda k: er.dirichlet(k, enp.ones(3)),
    "chisquare": lambda k: er.chisquare(k, 1.0),
    "t": lambda k: er.t(k, 1.0),
    "f": lambda k: er.f(k, 1.0, 2.0),
    "poisson": lambda k: er.poisson(k, 1.0),
    "binomial": lambda k: er.binomial(k, 3, 0.5),
    "geometric": lambda k: er.geometric(k, 0.5),
    "multivariate_normal": lambda k: er.multivariate_normal(k, enp.zeros(2), enp.eye(2)),
    "orthogonal": lambda k: er.orthogonal(k, 2),
    "ball": lambda k: er.ball(k, 2),
    "pareto": lambda k: er.pareto(k, 2.0),
    "lognormal": lambda k: er.lognormal(k),
    "weibull_min": lambda k: er.weibull_min(k, 1.0, 1.0),
    "rayleigh": lambda k: er.rayleigh(k, 1.0),
    "wald": lambda k: er.wald(k, 1.0),
    "triangular": lambda k: er.triangular(k, 0.0, 0.5, 1.0),
    "rademacher": lambda k: er.rademacher(k),
    "maxwell": lambda k: er.maxwell(k),
    "double_sided_maxwell": lambda k: er.double_sided_maxwell(k, 0.0, 1.0),
    "generalized_normal": lambda k: er.generalized_normal(k, 2.0),
}


@pytest.mark.parametrize("name", sorted(_TAKES_KEY))
@pytest.mark.parametrize(
    "bad, error, shown",
    [
        (np.zeros(2, np.int32), ember.errors.DTypeError, ["(2,)", "int32"]),
        (np.zeros(2, np.float32), ember.errors.DTypeError, ["(2,)", "float32"]),
        (np.zeros((3, 2), np.uint32), ember.errors.ShapeError, ["(3, 2)", "uint32", "vmap"]),
        (np.zeros((), np.uint32), ember.errors.ShapeError, ["()", "uint32"]),
    ],
)
def test_a_non_key_is_explained(name, bad, error, shown):
    with pytest.raises(error) as info:
        _TAKES_KEY[name](enp.asarray(bad))
    message = str(info.value)
    assert f"ember.random.{name}" in message and "ember.random.key(seed)" in message
    for text in shown:
        assert text in message
    with pytest.raises(ember.errors.DTypeError, match=f"ember.random.{name}.*key"):
        _TAKES_KEY[name](0)


def test_bad_parameters_are_explained():
    k = er.key(0)
    errors = ember.errors
    cases = [
        (lambda: er.gamma(k, 1.0, dtype="int32"), errors.DTypeError, r"ember\.random\.gamma: dtype must be a floating.*int32"),
        (lambda: er.exponential(k, (2,), "complex64"), errors.DTypeError, r"ember\.random\.exponential.*complex64"),
        (lambda: er.poisson(k, 1.0, dtype="float32"), errors.DTypeError, r"ember\.random\.poisson: dtype must be an integer.*float32"),
        (lambda: er.geometric(k, 0.5, dtype="float32"), errors.DTypeError, r"ember\.random\.geometric.*integer"),
        (lambda: er.binomial(k, 3, 0.5, dtype="int32"), errors.DTypeError, r"ember\.random\.binomial.*floating.*int32"),
        (lambda: er.rademacher(k, dtype="uint8"), errors.DTypeError, r"ember\.random\.rademacher.*signed.*uint8"),
        (lambda: er.poisson(k, enp.asarray([1 + 1j])), errors.DTypeError, r"ember\.random\.poisson: lam must be real.*complex64"),
        (lambda: er.gamma(k, enp.ones(3), (4,)), errors.ShapeError, r"ember\.random\.gamma.*\(3,\).*shape=\(4,\)"),
        (lambda: er.gamma(k, enp.ones((2, 3)), (3,)), errors.ShapeError, r"ember\.random\.gamma.*\(2, 3\).*requested shape"),
        (lambda: er.beta(k, enp.ones(3), enp.ones(4)), errors.ShapeError, r"ember\.random\.beta.*\(3,\), \(4,\).*broadcast"),
        (lambda: er.binomial(k, enp.ones(2), enp.ones(5)), errors.ShapeError, r"ember\.random\.binomial.*\(2,\), \(5,\)"),
        (lambda: er.poisson(k, enp.ones(2), (3,)), errors.ShapeError, r"ember\.random\.poisson.*\(2,\)"),
        (lambda: er.dirichlet(k, 1.0), errors.ShapeError, r"ember\.random\.dirichlet: alpha must have at least one axis.*\(\)"),
        (lambda: er.dirichlet(k, enp.ones((2, 3)), (4,)), errors.ShapeError, r"ember\.random\.dirichlet.*\(2,\)"),
        (lambda: er.multivariate_normal(k, 0.0, enp.eye(2)), errors.ShapeError, r"ember\.random\.multivariate_normal: mean"),
        (lambda: er.multivariate_normal(k, enp.zeros(3), enp.eye(2)), errors.ShapeError,
         r"ember\.random\.multivariate_normal: cov must have shape \(\.\.\., n, n\) with n = 3.*\(2, 2\)"),
        (lambda: er.multivariate_normal(k, enp.zeros(2), enp.eye(2), method="qr"), errors.InvalidArgumentError,
         r"ember\.random\.multivariate_normal: method must be one of"),
        (lambda: er.multivariate_normal(k, enp.zeros((2, 2)), enp.eye(2), (3,)), errors.ShapeError,
         r"ember\.random\.multivariate_normal.*\(2,\)"),
        (lambda: er.orthogonal(k, -1), errors.InvalidArgumentError, r"ember\.random\.orthogonal: n must be a non-negative int"),
        (lambda: er.orthogonal(k, 2.5), errors.InvalidArgumentError, r"ember\.random\.orthogonal: n must be a non-negative int"),
        (lambda: er.orthogonal(k, 2, dtype="int32"), errors.DTypeError, r"ember\.random\.orthogonal.*int32"),
        (lambda: ember.jit(lambda n: er.orthogonal(k, n))(3), errors.ConcretizationError, r"ember\.random\.orthogonal: n"),
        (lambda: er.ball(k, -2), errors.InvalidArgumentError, r"ember\.random\.ball: d must be a non-negative int"),
        (lambda: er.ball(k, 2, p=0.0), errors.InvalidArgumentError, r"ember\.random\.ball: p must be positive"),
        (lambda: er.ball(k, 2, p="two"), errors.InvalidArgumentError, r"ember\.random\.ball: p must be a positive number"),
        (lambda: er.generalized_normal(k, -1.0), errors.InvalidArgumentError, r"ember\.random\.generalized_normal: p must be positive"),
        (lambda: er.exponential(k, (-1,)), errors.ShapeError, r"ember\.random\.exponential.*negative"),
    ]  # fmt: skip
    for fn, error, text in cases:
        with pytest.raises(error, match=text):
            fn()


# --- coverage ----------------------------------------------------------------------------------------------

# Public names of ember.random tested elsewhere than the op database (tests/test_random.py, test_vmap_random.py).
_TESTED_IN_TEST_RANDOM = {"PRNGKey", "key", "split", "fold_in", "bernoulli", "categorical", "choice", "permutation",
                          "gumbel", "truncated_normal"}  # fmt: skip


def test_every_sampler_has_an_op_db_entry():
    covered = {op.name.removeprefix("random.") for op in OPS if op.name.startswith("random.")}
    missing = sorted(set(er.__all__) - covered - _TESTED_IN_TEST_RANDOM)
    assert not missing, f"ember.random functions without an op_db entry in tests/op_db_random.py: {missing}"
