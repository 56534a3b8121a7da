"""ember.privacy's accountant (RDP of the sampled Gaussian mechanism, epsilon, calibration) and Gaussian noise.

References: published epsilons (each cited where it is used), and the RDP computed from its definition by
numerical integration with SciPy, independently of the series the accountant sums.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import ember
import ember.numpy as enp
from ember import privacy, random
from ember.errors import DTypeError, InvalidArgumentError

# The order grid of Opacus' RDPAccountant.DEFAULT_ALPHAS and of TF-Privacy's MNIST tutorial.
OPACUS_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))


def classic_epsilon(steps, q, sigma, delta, orders):
    """The conversion of Mironov (2017, Proposition 3), which the older published figures used."""
    orders = np.asarray(orders, dtype=float)
    return float(np.min(steps * privacy.rdp(q, sigma, orders) - math.log(delta) / (orders - 1)))


def rdp_by_integration(q, sigma, a):
    """D_a(mu || mu0) with mu = (1-q) N(0, s²) + q N(1, s²), mu0 = N(0, s²), from E_{z~mu0}[(mu/mu0)^a].

    The integrand is mu0 * ((mu/mu0)^a - 1) (it integrates to A_a - 1, which keeps the digits when A_a
    is close to 1), with mu/mu0 = 1 + q * expm1(L), L = (2z - 1) / (2 s²), in log space where it is large.
    """
    def integrand(z):
        big_l = (2 * z - 1) / (2 * sigma**2)
        if big_l < 30:
            log_ratio = math.log1p(q * math.expm1(big_l))
        else:
            log_ratio = np.logaddexp(math.log1p(-q), math.log(q) + big_l)
        g = a * log_ratio
        log_pdf = stats.norm.logpdf(z, scale=sigma)
        return math.exp(log_pdf) * math.expm1(g) if g < 1 else math.exp(log_pdf + g) - math.exp(log_pdf)

    lo, hi = -40 * sigma, a + 40 * sigma + 1
    z0 = sigma**2 * math.log(1 / q - 1) + 0.5
    edges = [lo, *sorted(p for p in {0.0, 0.5, 1.0, float(a), z0} if lo < p < hi), hi]
    total = sum(integrate.quad(integrand, x0, x1, epsabs=0, epsrel=1e-13, limit=500)[0]
                for x0, x1 in zip(edges[:-1], edges[1:]))
    return math.log1p(total) / (a - 1)


# --- published values ------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma, epochs, published", [
    (1.12, 60, 2.92),  # the table's first row (the tutorial's default)
    (1.2, 10, 1.20),  # the table's third row
    (1.12, 1, 1.00),  # "Expected Output" after 1 epoch
    (1.12, 2, 1.04),  # "Expected Output" after 2 epochs
])
def test_tf_privacy_mnist_tutorial(sigma, epochs, published):
    # https://github.com/tensorflow/privacy/blob/master/tutorials/README.md ("Select Parameters" table and
    # "Expected Output"), computed by tutorials/mnist_dpsgd_tutorial.py's compute_epsilon: q = 256 / 60000,
    # steps = epochs * (60000 // 256), delta = 1e-5, Opacus' order grid, the classic RDP conversion of then.
    steps, q = epochs * (60000 // 256), 256 / 60000
    assert round(classic_epsilon(steps, q, sigma, 1e-5, OPACUS_ORDERS), 2) == published
    # The conversion of today (Balle et al. 2020) is never looser.
    assert privacy.epsilon(steps, q, sigma, 1e-5, orders=OPACUS_ORDERS) < published


def test_tf_privacy_mnist_tutorial_second_row():
    # Same README table, second row (noise 0.6, 30 epochs): published 9.74. The RDP of today's TF-Privacy,
    # Opacus and ours (checked against integration below) gives 9.7469, which rounds to 9.75; the table is
    # older than the code. Held to within 0.01, not to the rounding of the last digit.
    steps, q = 30 * (60000 // 256), 256 / 60000
    assert abs(classic_epsilon(steps, q, 0.6, 1e-5, OPACUS_ORDERS) - 9.74) < 0.01


def test_abadi_et_al_moments_accountant():
    # Abadi et al. 2016, "Deep Learning with Differential Privacy" (arXiv:1607.00133), Section 3.1: q = 0.01,
    # sigma = 4, delta = 1e-5, T = 10000 gives epsilon ≈ 1.26 by the moments accountant (lambda ≤ 32, i.e.
    # Rényi orders 2..33, with the conversion of then).
    assert round(classic_epsilon(10000, 0.01, 4.0, 1e-5, range(2, 34)), 2) == 1.26


def test_opacus_rdp_accountant():
    # Opacus, opacus/tests/accountants_test.py::test_rdp_accountant: noise 1.5, sample rate 0.04,
    # int(90 / 0.04) steps one at a time, delta 1e-5 -> 7.32911117143 (assertAlmostEqual: 7 places).
    accountant = privacy.RDPAccountant(orders=OPACUS_ORDERS)
    for _ in range(int(90 / 0.04)):
        accountant.step(noise_multiplier=1.5, sampling_rate=0.04)
    assert accountant.history == [(1.5, 0.04, 2250)]
    assert round(accountant.epsilon(1e-5), 7) == round(7.32911117143, 7)
    assert round(privacy.epsilon(2250, 0.04, 1.5, 1e-5, orders=OPACUS_ORDERS), 7) == round(7.32911117143, 7)


def test_opacus_docstring_two_settings():
    # Opacus, opacus/accountants/analysis/rdp.py module docstring: settings (q, sigma, steps) = (1e-5, 1.0, 10)
    # then (1e-4, 3.0, 4), orders 2..32, delta 1e-5 -> epsilon 0.336.
    accountant = privacy.RDPAccountant(orders=range(2, 33))
    accountant.step(noise_multiplier=1.0, sampling_rate=1e-5, steps=10)
    accountant.step(noise_multiplier=3.0, sampling_rate=1e-4, steps=4)
    assert round(accountant.epsilon(1e-5), 3) == 0.336


def test_opacus_get_noise_multiplier():
    # Opacus, opacus/tests/accountants_test.py::test_get_noise_multiplier_rdp_steps: epsilon 8, delta 1e-5,
    # sample rate 0.04, 2000 steps -> 1.3562 (4 places).
    sigma = privacy.noise_multiplier_for(8.0, 1e-5, 2000, 0.04, orders=OPACUS_ORDERS)
    assert abs(sigma - 1.3562) < 5e-5
    # ::test_get_noise_multiplier_rdp_epochs: 90 epochs (2250 steps) -> 1.416 (4 places). Opacus stops its
    # bisection once epsilon is within 0.01 below the target, so its answer is that tolerance above the
    # least noise: check its stopping rule holds at 1.416, and that ours lies just below.
    assert 7.99 <= privacy.epsilon(2250, 0.04, 1.416, 1e-5, orders=OPACUS_ORDERS) <= 8.0
    sigma = privacy.noise_multiplier_for(8.0, 1e-5, 2250, 0.04, orders=OPACUS_ORDERS)
    assert 0 <= 1.416 - sigma < 1e-3


# --- against the definition -------------------------------------------------------------------------


@pytest.mark.parametrize("q, sigma, order", [
    (0.01, 1.0, 2), (0.01, 1.0, 2.5), (0.01, 1.0, 1.1), (0.05, 0.8, 3.7), (0.001, 2.0, 1.5),
    (0.2, 0.7, 10.5), (0.04, 1.5, 7), (0.3, 1.0, 1.25), (0.5, 0.5, 1.1), (0.9, 1.0, 2.5),
    (0.01, 1.0, 32), (256 / 60000, 1.1, 1.5), (0.001, 0.6, 20.3), (0.1, 3.0, 64),
])
def test_rdp_matches_numerical_integration(q, sigma, order):
    expected = rdp_by_integration(q, sigma, order)
    np.testing.assert_allclose(privacy.rdp(q, sigma, [order]), [expected], rtol=1e-8)


def test_rdp_doctest_values_match_integration():
    # The values shown in rdp's docstring.
    np.testing.assert_allclose([rdp_by_integration(0.01, 1.0, 2), rdp_by_integration(0.01, 1.0, 2.5)],
                               [0.00017181, 0.00021758], atol=5e-9)


# --- properties ---------------------------------------------------------------------------------------


def test_full_batches_are_the_gaussian_mechanism():
    orders = np.array(privacy.DEFAULT_ORDERS)
    np.testing.assert_allclose(privacy.rdp(1.0, 1.3, orders), orders / (2 * 1.3**2), rtol=1e-15)
    # ... and the sampled mechanism tends to it as q -> 1 (the series near its other end).
    np.testing.assert_allclose(privacy.rdp(1 - 1e-9, 1.3, [2, 2.5, 7]), np.array([2, 2.5, 7]) / (2 * 1.3**2),
                               rtol=1e-6)
    closed_form = min(10 * a / (2 * 1.3**2) + math.log1p(-1 / a) - (math.log(1e-5) + math.log(a)) / (a - 1)
                      for a in orders)
    assert privacy.epsilon(10, 1.0, 1.3, 1e-5) == pytest.approx(closed_form, rel=1e-12)


def test_subsampling_only_helps():
    orders = np.array([1.5, 2, 3.3, 8, 64])
    sampled = privacy.rdp(0.1, 0.9, orders)
    assert np.all(sampled > 0) and np.all(sampled < orders / (2 * 0.9**2))


def test_epsilon_is_monotone():
    steps = [privacy.epsilon(n, 0.01, 1.0, 1e-5) for n in (1, 10, 100, 1000, 10000)]
    rates = [privacy.epsilon(1000, q, 1.0, 1e-5) for q in (1e-4, 1e-3, 1e-2, 0.1, 1.0)]
    noises = [privacy.epsilon(1000, 0.01, s, 1e-5) for s in (0.5, 0.8, 1.0, 2.0, 5.0)]
    deltas = [privacy.epsilon(1000, 0.01, 1.0, d) for d in (1e-9, 1e-7, 1e-5, 1e-3)]
    assert all(a < b for a, b in zip(steps, steps[1:]))
    assert all(a < b for a, b in zip(rates, rates[1:]))
    assert all(a > b for a, b in zip(noises, noises[1:]))
    assert all(a > b for a, b in zip(deltas, deltas[1:]))


def test_edge_cases():
    assert privacy.epsilon(0, 0.01, 1.0, 1e-5) == 0.0
    assert privacy.epsilon(100, 0.0, 1.0, 1e-5) == 0.0
    assert privacy.epsilon(100, 0.01, 0.0, 1e-5) == math.inf
    assert privacy.epsilon(np.int64(100), np.float32(0.5), 1, 1e-5) > 0  # NumPy scalars and ints are numbers
    np.testing.assert_array_equal(privacy.rdp(0.0, 1.0, [2, 3.5]), [0.0, 0.0])
    np.testing.assert_array_equal(privacy.rdp(0.3, 0.0, [2, 3.5]), [math.inf, math.inf])
    assert privacy.rdp(0.01, 1.0, 2.5).shape == (1,)
    assert privacy.rdp(0.01, 1.0).shape == (len(privacy.DEFAULT_ORDERS),)
    # So much noise that the total variation is below delta: (0, delta)-DP.
    assert privacy.epsilon(1, 0.01, 1e4, 1e-5) == 0.0
    # Extreme settings stay finite and ordered: tiny sampling rates, large orders with little noise.
    tiny = privacy.rdp(1e-9, 1.0, [2, 3, 512])
    assert np.all(np.isfinite(tiny)) and np.all(tiny > 0) and np.all(np.diff(tiny) > 0)
    # A_2 = 1 + q² (e^(1/σ²) - 1)
    np.testing.assert_allclose(tiny[0], math.log1p(1e-18 * math.expm1(1.0)), rtol=1e-12)
    # Fractional orders sum terms of size 1 to A_a: their RDP is exact to about 1e-16 absolute, not relative.
    assert 0 <= privacy.rdp(1e-9, 1.0, [1.5])[0] < 1e-15
    assert np.all(np.isfinite(privacy.rdp(0.5, 0.3, [1.1, 1.5, 128, 256, 512])))
    assert privacy.noise_multiplier_for(1.0, 1e-5, 0, 0.01) == 0.0


def test_rdp_is_nondecreasing_in_the_order():
    values = privacy.rdp(0.02, 0.9)
    assert np.all(np.diff(values) >= -1e-15 * values[1:])


@pytest.mark.parametrize("target, steps, q", [(1.0, 1000, 0.01), (8.0, 2000, 0.04), (0.5, 100, 0.1)])
def test_calibration_round_trip(target, steps, q):
    sigma = privacy.noise_multiplier_for(target, 1e-5, steps, q)
    assert privacy.epsilon(steps, q, sigma, 1e-5) <= target
    # 1e-4 less noise (the default rtol) would exceed the target: the answer is the least noise, not any.
    assert privacy.epsilon(steps, q, sigma * (1 - 1e-4), 1e-5) > target
    assert privacy.epsilon(steps, q, sigma, 1e-5) == pytest.approx(target, rel=1e-3)


def test_accountant_composes_settings():
    accountant = privacy.RDPAccountant()
    assert accountant.epsilon(1e-5) == 0.0
    accountant.step(noise_multiplier=1.0, sampling_rate=0.01, steps=300)
    accountant.step(noise_multiplier=1.0, sampling_rate=0.01, steps=0)
    assert accountant.epsilon(1e-5) == pytest.approx(privacy.epsilon(300, 0.01, 1.0, 1e-5), rel=1e-12)
    accountant.step(noise_multiplier=2.0, sampling_rate=0.05, steps=200)
    assert accountant.history == [(1.0, 0.01, 300), (2.0, 0.05, 200)]
    orders = np.array(privacy.DEFAULT_ORDERS)
    total = 300 * privacy.rdp(0.01, 1.0) + 200 * privacy.rdp(0.05, 2.0)
    expected = min(r + math.log1p(-1 / a) - (math.log(1e-5) + math.log(a)) / (a - 1) for a, r in zip(orders, total))
    assert accountant.epsilon(1e-5) == pytest.approx(expected, rel=1e-12)
    assert "RDPAccountant(history=" in repr(accountant)


# --- the Gaussian mechanism -----------------------------------------------------------------------------


def _noise_of(noisy, grads):
    return np.asarray(noisy, dtype=np.float64) - np.asarray(grads, dtype=np.float64)


def test_add_noise_has_the_right_distribution():
    grads = {"w": enp.reshape(enp.arange(200 * 500, dtype="float32") / 1e4, (200, 500)), "b": enp.ones(500)}
    noisy = privacy.add_noise(grads, random.key(3), noise_multiplier=1.1, max_norm=0.5)
    noise = _noise_of(noisy["w"], grads["w"]).ravel()
    n, std = noise.size, 1.1 * 0.5
    # Bounds of 6 standard errors (mean: std / sqrt(n); sample std: about std / sqrt(2n)); a fresh key
    # would pass with probability above 1 - 1e-8 each.
    assert abs(noise.mean()) < 6 * std / math.sqrt(n)
    assert abs(noise.std() / std - 1) < 6 / math.sqrt(2 * n)
    p = 0.6826894921370859  # P(|Z| < 1)
    assert abs(np.mean(np.abs(noise) < std) - p) < 6 * math.sqrt(p * (1 - p) / n)


def test_add_noise_leaves_get_independent_noise():
    grads = [enp.zeros(100_000), enp.zeros(100_000), (enp.zeros(100_000),)]
    noisy = privacy.add_noise(grads, random.key(0), noise_multiplier=1.0, max_norm=1.0)
    a, b, c = np.asarray(noisy[0]), np.asarray(noisy[1]), np.asarray(noisy[2][0])
    # The correlation of independent samples has standard error 1 / sqrt(n).
    for x, y in ((a, b), (a, c), (b, c)):
        assert abs(np.corrcoef(x, y)[0, 1]) < 6 / math.sqrt(x.size)
    # Another key, other noise; the same key, the same noise.
    other = privacy.add_noise(grads, random.key(1), noise_multiplier=1.0, max_norm=1.0)
    assert abs(np.corrcoef(a, np.asarray(other[0]))[0, 1]) < 6 / math.sqrt(a.size)
    again = privacy.add_noise(grads, random.key(0), noise_multiplier=1.0, max_norm=1.0)
    np.testing.assert_array_equal(np.asarray(again[1]), b)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_add_noise_keeps_dtypes(dtype):
    grads = {"a": enp.zeros((4, 3), dtype=dtype), "skip": None, "b": [enp.zeros((), dtype=dtype)]}
    noisy = privacy.add_noise(grads, random.key(0), noise_multiplier=2.0, max_norm=1.0)
    assert noisy["skip"] is None
    assert noisy["a"].dtype == grads["a"].dtype and noisy["a"].shape == (4, 3)
    assert noisy["b"][0].dtype == grads["b"][0].dtype and noisy["b"][0].shape == ()
    assert np.all(np.asarray(noisy["a"], dtype=np.float64) != 0)


def test_add_noise_float64():
    ember.config.update("enable_x64", True)
    try:
        grads = enp.zeros(20_000, dtype="float64")
        noisy = privacy.add_noise(grads, random.key(0), noise_multiplier=3.0, max_norm=1.0)
        assert noisy.dtype == np.float64
        assert abs(np.asarray(noisy).std() / 3.0 - 1) < 6 / math.sqrt(2 * 20_000)
    finally:
        ember.config.update("enable_x64", False)


def test_add_noise_under_jit_vmap_grad():
    grads = {"w": enp.ones((3, 4)), "b": enp.zeros(4, dtype="float16")}
    key = random.key(7)
    eager = privacy.add_noise(grads, key, noise_multiplier=1.1, max_norm=0.7)
    jitted = ember.jit(lambda g, k, s, c: privacy.add_noise(g, k, noise_multiplier=s, max_norm=c))(grads, key, 1.1, 0.7)
    for name in grads:
        assert jitted[name].dtype == eager[name].dtype
        np.testing.assert_allclose(np.asarray(jitted[name], np.float64), np.asarray(eager[name], np.float64),
                                   rtol=1e-6)
    keys = random.split(key, 3)
    batched = ember.vmap(lambda k: privacy.add_noise(enp.zeros(5), k, noise_multiplier=1.0, max_norm=1.0))(keys)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(batched[i]),
                                   np.asarray(privacy.add_noise(enp.zeros(5), keys[i], noise_multiplier=1.0,
                                                                max_norm=1.0)), rtol=1e-6)
    # The noise does not depend on the gradients: d(noisy)/d(grads) is the identity.
    slope = ember.grad(lambda g: privacy.add_noise(g, key, noise_multiplier=1.0, max_norm=1.0).sum())(enp.ones(3))
    np.testing.assert_array_equal(np.asarray(slope), np.ones(3))
    assert privacy.add_noise({}, key, noise_multiplier=1.0, max_norm=1.0) == {}


# --- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, match", [
    (lambda: privacy.epsilon(10, 1.5, 1.0, 1e-5), r"epsilon: sampling_rate must be in \[0, 1\].*got 1.5"),
    (lambda: privacy.epsilon(10, -0.1, 1.0, 1e-5), r"sampling_rate must be in \[0, 1\]"),
    (lambda: privacy.epsilon(10, 0.01, -1.0, 1e-5), r"noise_multiplier must be finite and >= 0, got -1.0"),
    (lambda: privacy.epsilon(10, 0.01, math.nan, 1e-5), r"noise_multiplier must be finite and >= 0"),
    (lambda: privacy.epsilon(10, 0.01, 1.0, 0.0), r"delta must be in the open interval \(0, 1\)"),
    (lambda: privacy.epsilon(10, 0.01, 1.0, 1.0), r"delta must be in the open interval \(0, 1\)"),
    (lambda: privacy.epsilon(-1, 0.01, 1.0, 1e-5), r"steps must be a whole number >= 0, got -1.0"),
    (lambda: privacy.epsilon(2.5, 0.01, 1.0, 1e-5), r"steps must be a whole number >= 0, got 2.5"),
    (lambda: privacy.epsilon(True, 0.01, 1.0, 1e-5), r"steps must be a Python or NumPy real number.*bool"),
    (lambda: privacy.epsilon(10, enp.array(0.01), 1.0, 1e-5),
     r"sampling_rate must be a Python or NumPy real number.*pass a float"),
    (lambda: privacy.epsilon(10, 0.01, 1.0, 1e-5, orders=[1.0, 2.0]), r"every order must be finite and > 1, got 1.0"),
    (lambda: privacy.epsilon(10, 0.01, 1.0, 1e-5, orders=[]),
     r"orders must be a number or a non-empty 1-d sequence.*DEFAULT_ORDERS"),
    (lambda: privacy.rdp(0.01, 1.0, [[2, 3]]), r"rdp: orders must be a number or a non-empty 1-d sequence"),
    (lambda: privacy.rdp(0.01, 1.0, [math.inf]), r"rdp: every order must be finite and > 1"),
    (lambda: privacy.noise_multiplier_for(0.0, 1e-5, 100, 0.01),
     r"noise_multiplier_for: target_epsilon must be finite and > 0"),
    (lambda: privacy.noise_multiplier_for(1.0, 1e-5, 100, 0.01, rtol=0), r"rtol must be in \(0, 1\)"),
    (lambda: privacy.RDPAccountant(orders=[0.5]), r"RDPAccountant: every order must be finite and > 1"),
    (lambda: privacy.RDPAccountant().step(noise_multiplier=1.0, sampling_rate=2.0),
     r"RDPAccountant.step: sampling_rate"),
    (lambda: privacy.RDPAccountant().epsilon(2.0), r"RDPAccountant.epsilon: delta must be"),
    (lambda: privacy.add_noise(enp.zeros(2), random.key(0), noise_multiplier=-1.0, max_norm=1.0),
     r"add_noise: noise_multiplier must be finite and >= 0"),
    (lambda: privacy.add_noise(enp.zeros(2), random.key(0), noise_multiplier=1.0, max_norm=math.inf),
     r"add_noise: max_norm must be finite and >= 0"),
])
def test_bad_arguments(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


def test_no_noise_reaches_the_target():
    # With the order 2 alone and delta 1e-300, the conversion's term -(log(delta) + log(a)) / (a - 1)
    # exceeds a target of 1 whatever the noise: a clear error, not an endless search.
    with pytest.raises(InvalidArgumentError, match="no noise multiplier up to 1e12 reaches epsilon 1.0"):
        privacy.noise_multiplier_for(1.0, 1e-300, 100, 0.01, orders=[2])


def test_add_noise_rejects_integer_leaves():
    match = r"add_noise: gradient leaf \['steps'\] has dtype int32, shape \(2,\).*floating"
    with pytest.raises(DTypeError, match=match):
        privacy.add_noise({"w": enp.zeros(2), "steps": enp.zeros(2, dtype="int32")}, random.key(0),
                          noise_multiplier=1.0, max_norm=1.0)
