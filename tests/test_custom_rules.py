"""custom_jvp, custom_vjp and lax.stop_gradient, against hand-derived derivatives computed with NumPy."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.errors import ArgumentTypeError, EmberError, TransformError

X = np.array([-1.5, 0.25, 2.0])


def close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(
        np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol
    )


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# --- custom_jvp --------------------------------------------------------------------------------


@ember.custom_jvp
def softplus(x):
    return enp.log1p(enp.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1 + enp.exp(-x))  # the stable derivative, sigmoid(x)


def test_custom_jvp_evaluates_the_function():
    close(softplus(enp.asarray(X)), np.log1p(np.exp(X)))


def test_custom_jvp_under_grad_uses_the_rule():
    # Differentiating log1p(exp(x)) itself gives inf/inf = nan at x = 100; the rule gives 1.
    assert float(ember.grad(softplus)(100.0)) == 1.0
    for x in X:
        close(ember.grad(softplus)(float(x)), sigmoid(x))


def test_custom_jvp_under_jvp():
    t = np.array([1.0, -2.0, 0.5])
    y, y_dot = ember.jvp(softplus, (enp.asarray(X),), (enp.asarray(t),))
    close(y, np.log1p(np.exp(X)))
    close(y_dot, sigmoid(X) * t)


def test_custom_jvp_grad_of_grad_differentiates_the_rule():
    d2 = ember.grad(ember.grad(softplus))
    for x in X:
        close(d2(float(x)), sigmoid(x) * (1 - sigmoid(x)), rtol=1e-4)
    # forward over reverse agrees
    _, hvp = ember.jvp(ember.grad(softplus), (0.7,), (1.0,))
    close(hvp, sigmoid(0.7) * (1 - sigmoid(0.7)), rtol=1e-4)


def test_custom_jvp_rule_replaces_the_body():
    calls = {"fun": 0, "rule": 0}

    @ember.custom_jvp
    def f(x):
        calls["fun"] += 1
        return enp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls["rule"] += 1
        (x,), (t,) = primals, tangents
        return enp.sin(x), 3.0 * t  # not the true derivative: proves the rule is what is used

    assert float(f(0.5)) == pytest.approx(np.sin(0.5), rel=1e-6)
    assert calls == {"fun": 1, "rule": 0}  # no differentiation: the rule is not called
    assert float(ember.grad(f)(0.5)) == 3.0
    assert calls["rule"] == 1
    assert float(ember.jvp(f, (0.5,), (2.0,))[1]) == 6.0


def test_defjvps():
    f = ember.custom_jvp(lambda x, y: enp.sin(x) * y)
    f.defjvps(lambda tx, ans, x, y: enp.cos(x) * tx * y, lambda ty, ans, x, y: enp.sin(x) * ty)
    gx, gy = ember.grad(f, (0, 1))(1.0, 2.0)
    close(gx, np.cos(1.0) * 2.0)
    close(gy, np.sin(1.0))
    close(ember.grad(ember.grad(f))(1.0, 2.0), -np.sin(1.0) * 2.0, rtol=1e-5)
    _, t = ember.jvp(f, (1.0, 2.0), (0.5, -1.0))
    close(t, np.cos(1.0) * 2.0 * 0.5 - np.sin(1.0))


def test_defjvps_none_means_no_dependence():
    f = ember.custom_jvp(lambda x, y: x * y)
    f.defjvps(lambda tx, ans, x, y: tx * y, None)
    gx, gy = ember.grad(f, (0, 1))(3.0, 4.0)
    assert (float(gx), float(gy)) == (4.0, 0.0)


def test_defjvps_refuses_nondiff_argnums():
    f = ember.custom_jvp(lambda n, x: x * n, nondiff_argnums=(0,))
    with pytest.raises(ArgumentTypeError, match="nondiff_argnums"):
        f.defjvps(None, lambda t, ans, n, x: t * n)


def test_custom_jvp_nondiff_argnums():
    @functools.partial(ember.custom_jvp, nondiff_argnums=(0, 2))
    def apply(fn, x, power):
        return fn(x) ** power

    @apply.defjvp
    def apply_jvp(fn, power, primals, tangents):
        assert fn is enp.sin and power == 2  # static arguments come first, untouched
        (x,), (t,) = primals, tangents
        return apply(fn, x, power), 2 * enp.sin(x) * enp.cos(x) * t

    close(apply(enp.sin, 0.3, 2), np.sin(0.3) ** 2)
    close(ember.grad(apply, 1)(enp.sin, 0.3, 2), np.sin(0.6))
    close(ember.grad(lambda x: apply(enp.sin, x, 2))(0.3), np.sin(0.6))


def test_custom_jvp_pytrees_and_keyword_arguments():
    @ember.custom_jvp
    def f(p, scale=2.0):
        return {"prod": p["a"] * p["b"] * scale, "sum": p["a"] + p["b"]}

    @f.defjvp
    def f_jvp(primals, tangents):
        (p, scale), (t, t_scale) = primals, tangents
        out = f(p, scale)
        return out, {"prod": (t["a"] * p["b"] + p["a"] * t["b"]) * scale + p["a"] * p["b"] * t_scale,
                     "sum": t["a"] + t["b"]}  # fmt: skip

    p = {"a": enp.asarray([1.0, 2.0]), "b": enp.asarray([3.0, -1.0])}
    g = ember.grad(lambda p: f(p)["prod"].sum() + f(p, scale=1.0)["sum"].sum())(p)
    close(g["a"], np.array([3.0, -1.0]) * 2 + 1)
    close(g["b"], np.array([1.0, 2.0]) * 2 + 1)


def test_custom_jvp_integer_argument_gets_float0_tangent():
    seen = []

    @ember.custom_jvp
    def power(x, n):
        return x**n

    @power.defjvp
    def power_jvp(primals, tangents):
        (x, n), (tx, tn) = primals, tangents
        seen.append(np.asarray(tn).dtype)
        return power(x, n), n * x ** (n - 1) * tx

    close(ember.grad(power)(2.0, 3), 12.0)
    assert seen == [ember.core.dtypes.float0]


def test_custom_jvp_without_a_rule_or_with_a_bad_rule():
    f = ember.custom_jvp(lambda x: x)
    with pytest.raises(TransformError, match="defjvp"):
        f(1.0)
    f.defjvp(lambda p, t: (p[0], enp.ones(3)))
    with pytest.raises(TransformError, match=r"shape \(3,\)"):
        ember.grad(f)(1.0)
    g = ember.custom_jvp(lambda x: x)
    g.defjvp(lambda p, t: p[0])
    with pytest.raises(TransformError, match="pair"):
        ember.jvp(g, (1.0,), (1.0,))


def test_linear_custom_jvp_function_under_linear_transpose_is_inlined():
    double = ember.custom_jvp(lambda x: 2.0 * x)
    double.defjvp(lambda p, t: (double(p[0]), 2.0 * t[0]))
    (ct,) = ember.linear_transpose(double, enp.ones(3))(enp.asarray([1.0, 2.0, 3.0]))
    close(ct, [2.0, 4.0, 6.0])


# --- custom_vjp --------------------------------------------------------------------------------


@ember.custom_vjp
def clip_gradient(lo, hi, x):
    return x


clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                     lambda res, g: (None, None, enp.clip(g, res[0], res[1])))  # fmt: skip


def test_custom_vjp_under_grad_uses_bwd():
    f = lambda x: (5.0 * clip_gradient(-1.0, 1.0, x)).sum()
    close(ember.grad(f)(enp.asarray(X)), np.ones(3))  # 5 clipped to 1
    close(clip_gradient(-1.0, 1.0, enp.asarray(X)), X)


def test_custom_vjp_vjp_and_multiple_arguments():
    @ember.custom_vjp
    def f(x, y):
        return enp.sin(x) * y

    f.defvjp(lambda x, y: (f(x, y), (enp.cos(x), enp.sin(x), y)),
             lambda res, g: (res[0] * g * res[2], res[1] * g))  # fmt: skip
    x, y = enp.asarray(X), enp.asarray([0.5, 1.0, -2.0])
    out, f_vjp = ember.vjp(f, x, y)
    close(out, np.sin(X) * np.asarray(y))
    ct = np.array([1.0, -1.0, 2.0])
    gx, gy = f_vjp(enp.asarray(ct))
    close(gx, np.cos(X) * np.asarray(y) * ct)
    close(gy, np.sin(X) * ct)


def test_custom_vjp_nondiff_argnums():
    @functools.partial(ember.custom_vjp, nondiff_argnums=(0,))
    def scaled(fn, x):
        return fn(x)

    def fwd(fn, x):
        assert fn is enp.tanh
        return fn(x), x

    def bwd(fn, x, g):
        assert fn is enp.tanh
        return (g * (1 - enp.tanh(x) ** 2),)

    scaled.defvjp(fwd, bwd)
    close(ember.grad(lambda x: scaled(enp.tanh, x).sum())(enp.asarray(X)), 1 - np.tanh(X) ** 2)


def test_custom_vjp_pytree_arguments_outputs_and_residuals():
    @ember.custom_vjp
    def f(p):
        return {"y": enp.sin(p["a"]) * p["b"][0], "z": p["b"][1] * 2.0}

    def fwd(p):
        res = {"cos": enp.cos(p["a"]), "pair": (enp.sin(p["a"]), p["b"][0]), "tag": "static", "n": 2}
        return f(p), res

    def bwd(res, ct):
        assert res["tag"] == "static" and res["n"] == 2  # non-array residual leaves come back as they were
        cos_a, (sin_a, b0) = res["cos"], res["pair"]
        return ({"a": cos_a * b0 * ct["y"], "b": (sin_a * ct["y"], 2.0 * ct["z"])},)

    f.defvjp(fwd, bwd)
    a, b0, b1 = np.array([0.1, 0.7]), np.array([2.0, -1.0]), np.array([0.3, 0.4])
    p = {"a": enp.asarray(a), "b": (enp.asarray(b0), enp.asarray(b1))}
    g = ember.grad(lambda p: (f(p)["y"] * enp.asarray([1.0, 3.0])).sum() + f(p)["z"].sum())(p)
    close(g["a"], np.cos(a) * b0 * [1.0, 3.0])
    close(g["b"][0], np.sin(a) * [1.0, 3.0])
    close(g["b"][1], [2.0, 2.0])


def test_custom_vjp_bwd_none_is_a_zero_cotangent():
    f = ember.custom_vjp(lambda x, y: x * y)
    f.defvjp(lambda x, y: (x * y, x), lambda x, g: (None, x * g))
    gx, gy = ember.grad(f, (0, 1))(3.0, 4.0)
    assert (float(gx), float(gy)) == (0.0, 3.0)


def test_custom_vjp_grad_of_grad_differentiates_bwd():
    @ember.custom_vjp
    def f(x):
        return enp.sin(x)

    f.defvjp(lambda x: (enp.sin(x), enp.cos(x)), lambda cos_x, g: (cos_x * g,))
    for x in X:
        close(ember.grad(ember.grad(f))(float(x)), -np.sin(x))
        close(ember.jvp(ember.grad(f), (float(x),), (1.0,))[1], -np.sin(x))  # forward over reverse


def test_custom_vjp_forward_mode_raises_a_clear_error():
    f = ember.custom_vjp(lambda x: enp.sin(x))
    f.defvjp(lambda x: (enp.sin(x), enp.cos(x)), lambda c, g: (c * g,))
    with pytest.raises(TransformError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function"):
        ember.jvp(f, (1.0,), (1.0,))
    with pytest.raises(TypeError):  # as in JAX, a TypeError (and an EmberError)
        ember.jvp(f, (1.0,), (1.0,))
    _, f_jvp = ember.linearize(f, 1.0)  # linearizing is fine; evaluating the linear map is forward mode
    with pytest.raises(TransformError, match="forward-mode"):
        f_jvp(1.0)
    # Only the custom_vjp function's own inputs matter: a tangent elsewhere is fine.
    close(ember.jvp(lambda y: y * f(0.5), (2.0,), (1.0,))[1], np.sin(0.5))


def test_custom_vjp_rule_errors():
    f = ember.custom_vjp(lambda x: x)
    with pytest.raises(TransformError, match="defvjp"):
        f(1.0)
    f.defvjp(lambda x: (x, None), lambda r, g: g)
    with pytest.raises(TransformError, match="tuple with one cotangent per differentiable argument"):
        ember.grad(f)(1.0)
    h = ember.custom_vjp(lambda x: x)
    h.defvjp(lambda x: (x, None), lambda r, g: (enp.ones(2),))
    with pytest.raises(TransformError, match=r"shape \(2,\)"):
        ember.grad(h)(1.0)
    assert issubclass(TransformError, EmberError)


def test_custom_functions_run_plainly_without_differentiation():
    calls = []
    f = ember.custom_vjp(lambda x: calls.append("fun") or x * 2.0)
    f.defvjp(lambda x: calls.append("fwd") or (x * 2.0, None), lambda r, g: (2.0 * g,))
    close(f(enp.asarray([1.0, 2.0])), [2.0, 4.0])
    assert calls == ["fun"]
    close(ember.grad(lambda x: f(x).sum())(enp.asarray([1.0, 2.0])), [2.0, 2.0])
    assert calls == ["fun", "fwd"]


# --- stop_gradient -----------------------------------------------------------------------------


def test_stop_gradient_value_and_zero_derivative():
    x = enp.asarray(X)
    close(lax.stop_gradient(x), X)
    close(ember.grad(lambda x: (x * lax.stop_gradient(x)).sum())(x), X)  # d/dx [x * c] = c
    close(ember.grad(lambda x: (lax.stop_gradient(x) ** 2).sum())(x), np.zeros(3))
    _, t = ember.jvp(lax.stop_gradient, (x,), (enp.ones(3),))
    close(t, np.zeros(3))
    close(ember.grad(ember.grad(lambda x: x**3 * lax.stop_gradient(x)))(2.0), 6 * 2.0 * 2.0)


def test_stop_gradient_pytrees_and_integers():
    tree = {"a": enp.asarray([1.0, 2.0]), "b": (enp.asarray([3], dtype="int32"),)}
    out = lax.stop_gradient(tree)
    assert ember.tree.structure(out) == ember.tree.structure(tree)
    assert out["b"][0].dtype == np.int32 and out["b"][0].tolist() == [3]
    g = ember.grad(lambda p: (lax.stop_gradient(p)["a"] * p["a"]).sum())({"a": tree["a"]})
    close(g["a"], [1.0, 2.0])
