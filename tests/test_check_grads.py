"""ember.test_util.check_grads: passes on correct derivatives, fails loudly on wrong ones."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.test_util import check_grads, check_jvp, check_vjp, numerical_jvp


def test_numerical_jvp_matches_hand_derivative():
    x, t = np.array([0.3, -1.2]), np.array([1.0, 0.5])
    with ember.config.x64(True):
        (got,) = numerical_jvp(lambda x: enp.sin(x) * x, (enp.asarray(x),), (t,))
    np.testing.assert_allclose(got, (np.cos(x) * x + np.sin(x)) * t, rtol=1e-7)


@pytest.mark.parametrize("x64", [False, True])
def test_passes_on_correct_functions(x64):
    dtype = np.float64 if x64 else np.float32
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4)).astype(dtype)
    x = rng.standard_normal(4).astype(dtype)
    with ember.config.x64(x64):
        check_grads(lambda x: enp.sin(x) * x, (enp.asarray(x),), order=3)
        check_grads(lambda w, x: enp.tanh(w @ x), (enp.asarray(w), enp.asarray(x)), order=2)
        check_grads(lambda p: {"s": (p["a"] ** 2).sum(), "e": enp.exp(p["b"])},
                    ({"a": enp.asarray(x), "b": enp.asarray(w[0])},), order=2)  # fmt: skip
        check_grads(lambda x: enp.sqrt((x * x).sum()), (enp.asarray(x),), order=1, modes=("rev",))


def test_complex_functions():
    with ember.config.x64(True):
        z = enp.asarray(np.array([0.3 + 0.2j, -0.5 + 1.0j]))
        check_grads(lambda z: enp.exp(z) * z, (z,), order=2)
        check_grads(lambda z: enp.abs(z) ** 2, (z,), order=2)


def test_integer_arguments_are_held_fixed():
    check_grads(lambda x, n: x**n, (enp.asarray([1.5, 2.0]), 3), order=2)


def _wrong_jvp():
    f = ember.custom_jvp(lambda x: enp.sin(x))
    f.defjvp(lambda p, t: (f(p[0]), enp.sin(p[0]) * t[0]))  # should be cos
    return f


def test_catches_a_wrong_custom_jvp_in_both_modes():
    f, x = _wrong_jvp(), (enp.asarray([0.5, 1.0]),)
    with pytest.raises(AssertionError, match=r"JVP \(tangent vs finite differences"):
        check_grads(f, x, order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="VJP fails the dot-product test"):
        check_grads(f, x, order=1, modes=("rev",))
    with pytest.raises(AssertionError):
        check_jvp(f, x)
    with pytest.raises(AssertionError):
        check_vjp(f, x)


def test_catches_a_wrong_custom_vjp():
    f = ember.custom_vjp(lambda x: x**2)
    f.defvjp(lambda x: (x**2, x), lambda x, g: (3.0 * x * g,))  # should be 2 x g
    with pytest.raises(AssertionError, match="VJP"):
        check_grads(f, (enp.asarray([0.5, -1.0]),), order=1, modes=("rev",))


def test_catches_an_error_only_in_the_second_derivative():
    # Right first derivative, but its own derivative is wrong: cos(x) is treated as a constant.
    f = ember.custom_jvp(lambda x: enp.sin(x))
    f.defjvp(lambda p, t: (f(p[0]), enp.cos(lax.stop_gradient(p[0])) * t[0]))
    with ember.config.x64(True):
        x = (enp.asarray(np.array([0.5, 1.0])),)
        check_grads(f, x, order=1)
        with pytest.raises(AssertionError, match="JVP of JVP"):
            check_grads(f, x, order=2, modes=("fwd",))
        with pytest.raises(AssertionError, match="VJP of VJP"):
            check_grads(f, x, order=2, modes=("rev",))


def test_tolerances_and_arguments():
    f, x = _wrong_jvp(), (enp.asarray([0.5, 1.0]),)
    check_grads(f, x, order=1, atol=10.0, rtol=10.0)  # loose enough to let anything through
    check_grads(f, x, order=1, atol={np.float32: 10.0}, rtol={"float32": 10.0})
    with pytest.raises(ValueError, match="modes"):
        check_grads(enp.sin, x, order=1, modes=("backward",))
    assert ember.test_util.check_grads is check_grads
