"""Derivatives of the special functions that the op database's autodiff columns do not reach.

The columns check every supported derivative against finite differences; here: the derivatives
that are declared unsupported raise a clear EmberError (rather than returning a wrong zero) while
the other operand still differentiates, and igamma's x-derivative at x = 0.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
import ember.scipy.special as esp
from ember import lax
from ember.errors import EmberError

X = enp.asarray([0.5, 1.5, 3.0])

UNSUPPORTED = [
    # (name, function of (first, second), the operand's name in the message)
    ("polygamma", lax.polygamma, "m"),
    ("zeta", lax.zeta, "s"),
    ("igamma", lax.igamma, "a"),
    ("igammac", lax.igammac, "a"),
]


@pytest.mark.parametrize("name, fn, operand", UNSUPPORTED, ids=[u[0] for u in UNSUPPORTED])
def test_unsupported_first_operand_derivative_raises(name, fn, operand):
    first = enp.asarray([1.0, 2.0, 3.0])
    for differentiate in (
        lambda: ember.jvp(lambda a: fn(a, X + 1), (first,), (enp.ones(3),)),
        lambda: ember.grad(lambda a: enp.sum(fn(a, X + 1)))(first),
        lambda: ember.grad(lambda a, x: enp.sum(fn(a, x)), argnums=(0, 1))(first, X + 1),
    ):
        with pytest.raises(EmberError) as info:
            differentiate()
        message = str(info.value)
        assert name in message and f"first operand {operand}" in message and "not supported" in message, message


@pytest.mark.parametrize("name, fn, operand", UNSUPPORTED, ids=[u[0] for u in UNSUPPORTED])
def test_second_operand_differentiates_with_an_array_first_operand_held_fixed(name, fn, operand):
    with ember.config.x64(True):
        first = enp.asarray([[2.0], [3.0]])  # broadcasts against x: the tangent is broadcast, the cotangent summed
        x = enp.asarray([1.5, 2.5, 4.0], dtype="float64")
        grad = ember.grad(lambda x: enp.sum(fn(first, x)))(x)
        step = 1e-5
        want = (np.sum(np.asarray(fn(first, x + step)), 0) - np.sum(np.asarray(fn(first, x - step)), 0)) / (2 * step)
    np.testing.assert_allclose(np.asarray(grad), want, rtol=1e-7)


def test_riemann_zeta_has_no_derivative_in_its_exponent():
    with pytest.raises(EmberError, match="zeta"):
        ember.grad(lambda s: esp.zeta(s))(3.0)


def test_igamma_x_derivative_at_zero():
    # x^(a-1) e^-x / Gamma(a) at x = 0: 1 for a = 1 (not 0 * log 0 = NaN), 0 for a > 1, inf for a < 1.
    x = enp.zeros(3)
    a = enp.asarray([1.0, 2.0, 0.5])
    _, lower = ember.jvp(lambda x: lax.igamma(a, x), (x,), (enp.ones(3),))
    _, upper = ember.jvp(lambda x: lax.igammac(a, x), (x,), (enp.ones(3),))
    np.testing.assert_array_equal(np.asarray(lower), [1.0, 0.0, np.inf])
    np.testing.assert_array_equal(np.asarray(upper), [-1.0, 0.0, -np.inf])


def test_logsumexp_gradient_is_the_softmax():
    # the shift by the maximum is a constant to autodiff (as JAX's): the gradient is the weighted
    # softmax itself, with no 1 - sum(softmax) rounding from a maximum's derivative, at ties too
    a = np.array([[1.0, 3.0, 3.0, -np.inf], [0.5, -2.0, 40.0, 7.0]])
    b = np.array([[1.0, 2.0, 0.5, 1.0], [1.0, 1.0, 0.0, 3.0]])
    for weights in (None, b):
        terms = np.exp(a - a.max(axis=1, keepdims=True)) * (1.0 if weights is None else weights)
        want = terms / terms.sum(axis=1, keepdims=True)
        for transform in (lambda f: f, ember.jit):
            got = transform(ember.grad(lambda x: enp.sum(esp.logsumexp(x, axis=1, b=weights))))(enp.asarray(a))
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=0)
