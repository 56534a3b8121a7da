"""Bad input and transform behaviour of the NumPy functions in tests/op_db_enp_extra.py that a row of the
op database does not express: errors that name the op, shapes and dtypes; static sizes under jit and
vmap; NumPy's checks that run only where values are concrete."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import ConcretizationError, DTypeError, InvalidArgumentError, ShapeError

X = np.array([[1.0, 4.0, 2.0], [3.0, 0.0, 8.0]], np.float32)


# --- quantiles -------------------------------------------------------------------------------------------


def test_quantile_rejects_bad_q_method_and_complex():
    with pytest.raises(InvalidArgumentError, match=r"quantile: q must be in the range \[0, 1\]"):
        enp.quantile(X, 1.5)
    with pytest.raises(InvalidArgumentError, match=r"percentile: q must be in the range \[0, 100\]"):
        enp.percentile(X, [10, 101])
    with pytest.raises(InvalidArgumentError, match="method='cubic' is not one of"):
        enp.quantile(X, 0.5, method="cubic")
    with pytest.raises(DTypeError, match=r"median: complex input \(complex64\(2,\)\)"):
        enp.median(np.array([1j, 2], np.complex64))
    with pytest.raises(InvalidArgumentError, match="out= is not supported"):
        enp.median(X, out=np.zeros(3))


def test_quantile_of_traced_q_and_its_gradient():
    x = np.array([3.0, 1.0, 4.0, 1.5, 9.0], np.float32)
    f = ember.jit(lambda q: enp.quantile(x, q))
    np.testing.assert_allclose(f(np.float32(0.3)), np.quantile(x, 0.3), rtol=1e-6)
    # Linear interpolation between the order statistics 1.5 and 3.0 around q = 0.3: slope (3 - 1.5) * (n - 1).
    np.testing.assert_allclose(ember.grad(lambda q: enp.quantile(x, q))(np.float32(0.3)), 1.5 * 4, rtol=1e-5)
    # In the data: the weights of the two neighbours.
    g = ember.grad(lambda v: enp.quantile(v, 0.3))(x)
    np.testing.assert_allclose(g, [0.2, 0.0, 0.0, 0.8, 0.0], rtol=1e-5, atol=1e-6)  # 3.0 and 1.5


def test_median_nan_and_nanmedian():
    x = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 4.0]], np.float32)
    assert np.isnan(enp.median(x, axis=1)[0]) and enp.median(x, axis=1)[1] == 4.0
    np.testing.assert_allclose(enp.nanmedian(x, axis=1), [2.0, 4.0])
    assert enp.median(x, axis=0, keepdims=True).shape == (1, 3)
    assert np.isnan(enp.nanmedian(np.full(3, np.nan, np.float32)))


def test_median_of_infinite_values():
    # np.median is the middle value or the mean of the middle two, so an infinite neighbour is no NaN
    # (interpolating 2 + (inf - 2) * 0 or inf - (inf - 1) * 0.5 is)
    inf = np.inf
    for data in ([1.0, 2.0, inf], [1.0, inf], [inf, inf], [-inf, 1.0, 2.0], [-inf, inf], [1.0, 2.0, 3.0, inf]):
        x = np.array(data, np.float32)
        np.testing.assert_array_equal(enp.median(x), np.median(x))
        np.testing.assert_array_equal(enp.nanmedian(np.append(x, np.nan)), np.nanmedian(np.append(x, np.nan)))
    x = np.array([[1.0, inf, np.nan], [-inf, 3.0, 2.0]], np.float32)
    np.testing.assert_array_equal(enp.nanmedian(x, axis=1), np.nanmedian(x, axis=1))


def test_median_of_large_half_precision_values_does_not_overflow():
    # np.median's mean sums float16 in float32; 60000 + 60000 overflows float16 (max 65504)
    x = np.array([[60000.0, 60000.0], [-65504.0, -65000.0]], np.float16)
    np.testing.assert_array_equal(enp.median(x, axis=1), np.median(x, axis=1))


def test_quantile_batches_over_data_and_q():
    data = np.random.default_rng(0).standard_normal((4, 9)).astype(np.float32)
    qs = np.array([0.1, 0.5, 0.7, 0.95], np.float32)
    got = ember.vmap(lambda a, q: enp.nanquantile(a, q, method="hazen"))(data, qs)
    np.testing.assert_allclose(got, [np.nanquantile(a, q, method="hazen") for a, q in zip(data, qs)], rtol=1e-5)


# --- average, cov, corrcoef ---------------------------------------------------------------------------------


def test_average_checks_its_weights():
    with pytest.raises(InvalidArgumentError, match="average: weights sum to zero"):
        enp.average(X, axis=1, weights=np.zeros(3, np.float32))
    with pytest.raises(ShapeError, match=r"weights of shape \(2,\) match neither a's shape \(2, 3\)"):
        enp.average(X, axis=1, weights=np.ones(2, np.float32))
    with pytest.raises(ShapeError, match="pass axis="):
        enp.average(X, weights=np.ones(3, np.float32))
    # Under jit the sum is not known: no check, NaN as JAX gives.
    assert np.isnan(ember.jit(lambda w: enp.average(X[0], weights=w))(np.zeros(3, np.float32)))


def test_cov_rejects_bad_shapes_and_weights():
    with pytest.raises(ShapeError, match=r"cov: m has more than 2 dimensions \(shape \(2, 2, 2\)\)"):
        enp.cov(np.zeros((2, 2, 2)))
    with pytest.raises(ShapeError, match="different numbers of observations: 3 and 4"):
        enp.cov(X, np.zeros((1, 4)))
    with pytest.raises(ShapeError, match=r"fweights must be 1-d with one weight per observation \(3\)"):
        enp.cov(X, fweights=np.ones(2, np.int32))
    with pytest.raises(InvalidArgumentError, match="aweights must be non-negative"):
        enp.cov(X, aweights=np.array([1.0, -1.0, 1.0]))
    with pytest.raises(DTypeError, match="fweights must be integers"):
        enp.cov(X, fweights=np.array([1.0, 1.5, 1.0]))


def test_corrcoef_gradient_matches_finite_differences():
    x = np.random.default_rng(1).standard_normal((2, 5))
    with ember.config.x64(True):
        ember.test_util.check_grads(lambda m: enp.corrcoef(m)[0, 1], (x,), order=2)


# --- histograms, bincount, digitize ---------------------------------------------------------------------------


def test_histogram_rejects_bad_bins_and_ranges():
    x = np.array([0.0, 1.0, 2.0], np.float32)
    with pytest.raises(InvalidArgumentError, match="bins='auto': estimators by name are not supported"):
        enp.histogram(x, bins="auto")
    with pytest.raises(InvalidArgumentError, match="bins must be a positive integer, got 0"):
        enp.histogram(x, bins=0)
    with pytest.raises(InvalidArgumentError, match="bins must increase monotonically"):
        enp.histogram(x, bins=[0.0, 2.0, 1.0])
    with pytest.raises(InvalidArgumentError, match="max must be larger than min"):
        enp.histogram(x, range=(2, 1))
    with pytest.raises(InvalidArgumentError, match="found in the data is not finite"):
        enp.histogram(np.array([0.0, np.nan], np.float32))
    with pytest.raises(ShapeError, match=r"weights of shape \(2,\) must match a's shape \(3,\)"):
        enp.histogram(x, weights=np.ones(2))
    with pytest.raises(DTypeError, match="histogram: complex input"):
        enp.histogram(x + 1j)


def test_histogram_with_a_range_puts_values_on_edges_in_numpys_bins():
    # NumPy spaces the edges of range=(-1.3, 0.7) in float64 and rounds them to float32; the data
    # -0.3, 0.1 and 0.5 lie on edges 5, 7 and 9 there (an ulp below edges spaced in float32)
    x = np.array([-0.6, 0.4, 1.0, -0.3, -1.9, 0.1, -0.2, -0.6, -0.2, 0.5], np.float32)
    hist, edges = enp.histogram(x, bins=10, range=(-1.3, 0.7))
    want_hist, want_edges = np.histogram(x, bins=10, range=(-1.3, 0.7))
    np.testing.assert_array_equal(edges, want_edges)
    np.testing.assert_array_equal(hist, want_hist)
    np.testing.assert_array_equal(enp.histogram_bin_edges(x, bins=3, range=(0.2, 0.2)),
                                  np.histogram_bin_edges(x, bins=3, range=(0.2, 0.2)))  # fmt: skip
    # a float32 range is spaced in float32, as NumPy does (its edges are not the float64 ones rounded)
    r32 = (np.float32(-1.3), np.float32(0.7))
    np.testing.assert_array_equal(enp.histogram_bin_edges(x, bins=5, range=r32), np.histogram_bin_edges(x, 5, r32))


def test_histogram_with_a_data_dependent_range_traces():
    x = np.random.default_rng(2).standard_normal(50).astype(np.float32)
    hist, edges = ember.jit(lambda a: enp.histogram(a, bins=7))(x)
    want_hist, want_edges = np.histogram(x, bins=7)
    np.testing.assert_array_equal(hist, want_hist)
    np.testing.assert_allclose(edges, want_edges, rtol=1e-6, atol=1e-6)
    batched = ember.vmap(lambda a: enp.histogram(a, bins=4)[0])(x[:48].reshape(4, 12))
    np.testing.assert_array_equal(batched, [np.histogram(r, bins=4)[0] for r in x[:48].reshape(4, 12)])


def test_histogram_density_is_differentiable_in_the_weights():
    x = np.array([0.1, 0.4, 0.45, 0.9])
    with ember.config.x64(True):
        ember.test_util.check_grads(lambda w: enp.histogram(x, bins=2, range=(0, 1), weights=w, density=True)[0],
                                    (np.array([1.0, 2.0, 0.5, 1.5]),), order=2)  # fmt: skip


def test_bincount_needs_a_static_length_when_traced():
    x = np.array([0, 3, 1, 3], np.int32)
    with pytest.raises(ConcretizationError, match="bincount: .* pass length="):
        ember.jit(enp.bincount)(x)
    np.testing.assert_array_equal(ember.jit(lambda v: enp.bincount(v, length=5))(x), np.bincount(x, minlength=5))
    np.testing.assert_array_equal(ember.vmap(lambda v: enp.bincount(v, length=3))(np.array([[0, 2], [1, 1]])),
                                  [[1, 0, 1], [0, 2, 0]])  # fmt: skip
    # Traced negative values count in bin 0 and values past the length are dropped, as in JAX.
    np.testing.assert_array_equal(
        ember.jit(lambda v: enp.bincount(v, length=2))(np.array([-1, 0, 5], np.int32)), [2, 0]
    )


def test_bincount_rejects_bad_input():
    with pytest.raises(DTypeError, match=r"bincount: x must hold integers, got float32\(2,\)"):
        enp.bincount(np.array([0.0, 1.0], np.float32))
    with pytest.raises(ShapeError, match=r"bincount: x must be 1-d, got shape \(1, 2\)"):
        enp.bincount(np.array([[0, 1]]))
    with pytest.raises(InvalidArgumentError, match="x must be non-negative, got the value -2"):
        enp.bincount(np.array([0, -2]))
    with pytest.raises(ShapeError, match=r"weights of shape \(3,\) must match x's shape \(2,\)"):
        enp.bincount(np.array([0, 1]), weights=np.ones(3))


def test_digitize_rejects_bad_bins():
    with pytest.raises(InvalidArgumentError, match="bins must be monotonically increasing or decreasing"):
        enp.digitize(np.array([1.0]), np.array([0.0, 2.0, 1.0]))
    with pytest.raises(ShapeError, match=r"digitize: bins must be 1-d, got shape \(2, 2\)"):
        enp.digitize(np.array([1.0]), np.zeros((2, 2)))
    with pytest.raises(DTypeError, match="digitize: complex input"):
        enp.digitize(np.array([1j]), np.array([0.0, 1.0]))


# --- signals and polynomials -------------------------------------------------------------------------------------


def test_convolve_and_correlate_reject_bad_input():
    with pytest.raises(ShapeError, match=r"convolve: v cannot be empty \(shape \(0,\)\)"):
        enp.convolve(np.ones(3), np.ones(0))
    with pytest.raises(ShapeError, match=r"correlate: a must be 1-d, got shape \(2, 2\)"):
        enp.correlate(np.ones((2, 2)), np.ones(2))
    with pytest.raises(InvalidArgumentError, match="mode must be one of"):
        enp.convolve(np.ones(3), np.ones(2), mode="circular")


def test_convolve_batches():
    a = np.random.default_rng(3).standard_normal((3, 6)).astype(np.float32)
    v = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    got = ember.vmap(lambda x, y: enp.convolve(x, y, mode="same"))(a, v)
    np.testing.assert_allclose(got, [np.convolve(x, y, mode="same") for x, y in zip(a, v)], rtol=1e-5, atol=1e-6)


def test_interp_next_to_infinite_and_nan_samples_as_numpy():
    # NumPy: exactly fp at a sample point, and where an infinite or NaN neighbour makes the line NaN,
    # the line from the other end (or the neighbours' common value); real and imaginary parts apart
    xp = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    x = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, np.nan])
    for fp in ([0.0, np.inf, 1.0, np.nan, 2.0], [-np.inf, 1.0, 1.0, np.inf, np.inf], [np.nan, 2.0, -np.inf, 5.0, 5.0],
               [1 + 1j, np.inf + 2j, 1 + np.nan * 1j, 2.0, 3j]):  # fmt: skip
        with ember.config.x64(True):
            np.testing.assert_array_equal(enp.interp(x, xp, np.array(fp)), np.interp(x, xp, np.array(fp)))
    # the derivative in x at a sample point is still the slope beyond it
    np.testing.assert_allclose([ember.grad(lambda v: enp.interp(v, xp[:3], xp[:3] ** 2))(v) for v in (0.0, 1.0)], [1.0, 3.0])


def test_interp_rejects_bad_input():
    with pytest.raises(ShapeError, match="fp and xp are not of the same length: 2 and 3"):
        enp.interp(0.5, np.arange(3.0), np.arange(2.0))
    with pytest.raises(ShapeError, match="xp is empty"):
        enp.interp(0.5, np.zeros(0), np.zeros(0))
    with pytest.raises(InvalidArgumentError, match="period must be a non-zero value"):
        enp.interp(0.5, np.arange(3.0), np.arange(3.0), period=0)
    with pytest.raises(DTypeError, match="interp: x and xp must be real, got complex64"):
        enp.interp(0.5j, np.arange(3.0), np.arange(3.0))


def test_gradient_rejects_bad_input():
    with pytest.raises(ShapeError, match=r"axis 0 of shape \(2,\) has 2 samples; edge_order=2 needs at least 3"):
        enp.gradient(np.ones(2), edge_order=2)
    with pytest.raises(InvalidArgumentError, match="edge_order must be 1 or 2, got 3"):
        enp.gradient(np.ones(4), edge_order=3)
    with pytest.raises(InvalidArgumentError, match="3 spacings for 2 axes"):
        enp.gradient(np.ones((3, 3)), 1.0, 2.0, 3.0)
    with pytest.raises(ShapeError, match=r"coordinates of length 2 must match axis 0 of shape \(3,\)"):
        enp.gradient(np.ones(3), np.arange(2.0))


def test_ediff1d_rejects_bool_and_unsafe_casts():
    with pytest.raises(DTypeError, match="ediff1d: bool arrays have no subtraction"):
        enp.ediff1d(np.array([True, False]))
    with pytest.raises(DTypeError, match="to_begin of dtype float32 cannot be cast safely to ary's dtype int32"):
        enp.ediff1d(np.array([1, 2], np.int32), to_begin=np.array([0.5], np.float32))


def test_polyval_rejects_a_matrix_of_coefficients():
    with pytest.raises(ShapeError, match=r"polyval: p must be a 1-d array of coefficients, got shape \(2, 2\)"):
        enp.polyval(np.ones((2, 2)), 1.0)


# --- index helpers, selection, comparisons ---------------------------------------------------------------------------


def test_index_helpers_reject_bad_input():
    with pytest.raises(ShapeError, match=r"diag: input must be 1-d or 2-d, got shape \(2, 2, 2\)"):
        enp.diag(np.zeros((2, 2, 2)))
    with pytest.raises(ShapeError, match=r"all dimensions of input must be of equal length, got shape \(2, 3\)"):
        enp.diag_indices_from(np.zeros((2, 3)))
    with pytest.raises(ShapeError, match=r"tril_indices_from: input array must be 2-d, got shape \(3,\)"):
        enp.tril_indices_from(np.zeros(3))
    with pytest.raises(InvalidArgumentError, match=r"index 6 is out of bounds for an array of shape \(2, 3\)"):
        enp.unravel_index(np.array([1, 6]), (2, 3))
    with pytest.raises(DTypeError, match=r"unravel_index: indices must be integers, got float32\(1,\)"):
        enp.unravel_index(np.array([1.0], np.float32), (2, 3))
    with pytest.raises(InvalidArgumentError, match="invalid entry in coordinates array: 3 is out of range"):
        enp.ravel_multi_index((np.array([3]), np.array([0])), (3, 4))
    with pytest.raises(InvalidArgumentError, match="1 coordinate arrays for 2 dimensions"):
        enp.ravel_multi_index((np.array([1]),), (3, 4))
    with pytest.raises(InvalidArgumentError, match="lexsort: needs a sequence of at least one key"):
        enp.lexsort(())
    with pytest.raises(ShapeError, match=r"all keys need the same shape, got \[\(2,\), \(3,\)\]"):
        enp.lexsort((np.ones(2), np.ones(3)))


def test_ravel_multi_index_raise_mode_needs_concrete_coordinates():
    f = ember.jit(lambda i, j: enp.ravel_multi_index((i, j), (3, 4)))
    with pytest.raises(ConcretizationError, match="pass mode='wrap' or mode='clip'"):
        f(np.array([1]), np.array([2]))
    g = ember.jit(lambda i, j: enp.ravel_multi_index((i, j), (3, 4), mode="clip"))
    np.testing.assert_array_equal(g(np.array([1, 5]), np.array([2, -1])), [6, 8])
    # unravel_index of traced indices as JAX's: negative ones count from the end, after clipping into
    # [-size, size - 1]; concrete ones out of range raise, as NumPy's (above).
    i = np.array([7, 5, -1, -6, -7, 2])
    for order in ("C", "F"):
        got = ember.jit(lambda i: enp.unravel_index(i, (2, 3), order))(i)
        np.testing.assert_array_equal(got, np.unravel_index(np.clip(i, -6, 5) % 6, (2, 3), order))


def test_select_and_isin_reject_bad_input():
    x = np.arange(4)
    with pytest.raises(InvalidArgumentError, match=r"same length as list of conditions \(1 and 2\)"):
        enp.select([x > 1, x > 2], [x])
    with pytest.raises(DTypeError, match=r"invalid entry 0 in condlist: should be a bool array, got int32\(4,\)"):
        enp.select([x.astype(np.int32)], [x])
    with pytest.raises(InvalidArgumentError, match="empty condition list"):
        enp.select([], [])
    with pytest.raises(InvalidArgumentError, match="isin: kind must be"):
        enp.isin(x, x, kind="hash")


def test_select_is_differentiable_in_the_choices():
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    g = ember.grad(lambda v: enp.sum(enp.select([v < 0, v > 1], [v**2, 3 * v], v)))(x)
    np.testing.assert_allclose(g, [-2.0, 1.0, 3.0])


def test_whole_array_comparisons_are_traceable_arrays():
    a = np.array([1.0, 2.0], np.float32)
    out = enp.allclose(a, a + 1e-7)
    assert isinstance(out, ember.Array) and out.shape == () and bool(out)
    assert bool(ember.jit(lambda x, y: enp.array_equal(x, y))(a, a))
    assert not bool(enp.array_equal(a, a[:1]))
    assert bool(enp.array_equiv(a, np.stack([a, a])))
    assert not bool(enp.array_equiv(a, np.ones(3)))
    np.testing.assert_array_equal(
        ember.vmap(lambda x: enp.allclose(x, 1.0))(np.array([[1.0, 1.0], [1.0, 2.0]])), [True, False]
    )


def test_scatter_of_no_updates_has_the_operands_tangent():
    # .at[empty].set(...) into a zero-size operand used to fail in scatter's jvp (gathering back from nothing).
    def f(x, u):
        return x.at[enp.zeros(0, "int32"), enp.zeros(0, "int32")].set(u)

    x, u = np.zeros((0, 0), np.float32), np.zeros(0, np.float32)
    out, t = ember.jvp(f, (x, u), (x, u))
    assert out.shape == t.shape == (0, 0)
    y = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(ember.jvp(lambda a: f(a, u), (y,), (2 * y,))[1], 2 * y)
    np.testing.assert_array_equal(ember.grad(lambda a: enp.sum(f(a, u) * 3))(y), 3 * y)


def test_weighted_quantile_checks_method_and_weights():
    with pytest.raises(InvalidArgumentError, match="only method='inverted_cdf' supports weights"):
        enp.quantile(X, 0.5, weights=np.ones_like(X))
    with pytest.raises(ShapeError, match=r"weights of shape \(2,\) must have a's shape \(2, 3\)"):
        enp.quantile(X, 0.5, axis=1, method="inverted_cdf", weights=np.ones(2))
    with pytest.raises(InvalidArgumentError, match="weights must be non-negative, with at least one non-zero"):
        enp.quantile(X[0], 0.5, method="inverted_cdf", weights=np.array([1.0, -1.0, 1.0]))
    with pytest.raises(InvalidArgumentError, match="at least one non-zero"):
        enp.quantile(X[0], 0.5, method="inverted_cdf", weights=np.zeros(3))
    # 1-d weights along the one reduced axis, traced under jit.
    f = ember.jit(lambda w: enp.quantile(X, 0.5, axis=1, method="inverted_cdf", weights=w))
    np.testing.assert_array_equal(f(np.array([0.0, 1.0, 1.0])), np.quantile(X, 0.5, axis=1, method="inverted_cdf",
                                                                            weights=np.array([0.0, 1.0, 1.0])))  # fmt: skip
