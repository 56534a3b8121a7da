"""The autodiff API: jvp, linearize, vjp, grad, value_and_grad, linear_transpose.

References are hand-derived formulas evaluated with NumPy; the op database checks every
primitive's rules against finite differences separately (test_op_db_autodiff.py).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.core.ir import check_program
from ember.errors import DTypeError, EmberError, TracerLeakError


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


X = np.array([0.3, -1.2, 2.0], np.float32)


# --- forward mode ---------------------------------------------------------------------------------


def test_jvp_of_a_composite():
    y, t = ember.jvp(lambda x: enp.sum(enp.sin(x) * x), (X,), (np.ones(3, np.float32),))
    close(y, np.sum(np.sin(X) * X))
    close(t, np.sum(np.cos(X) * X + np.sin(X)))


def test_jvp_pytrees_and_aux():
    def f(p):
        return {"out": p["w"] * p["b"]}, "aux"

    params = {"w": X, "b": np.float32(2.0)}
    tangents = {"w": np.ones(3, np.float32), "b": np.float32(1.0)}
    out, t, aux = ember.jvp(f, (params,), (tangents,), has_aux=True)
    assert aux == "aux"
    close(out["out"], X * 2)
    close(t["out"], 2 + X)


def test_jvp_checks_tangents():
    with pytest.raises(ValueError, match=r"jvp: tangent 0 has shape \(2,\) and dtype float32.*shape \(3,\)"):
        ember.jvp(enp.sin, (X,), (np.ones(2, np.float32),))
    with pytest.raises(ValueError, match=r"jvp: tangent 0 .*dtype float64.*dtype float32"):
        with ember.config.x64(True):
            ember.jvp(enp.sin, (X,), (np.ones(3),))


def test_linearize_reuses_the_linear_map():
    y, f_jvp = ember.linearize(lambda x: enp.exp(x) * 2.0, X)
    close(y, np.exp(X) * 2)
    for v in (np.ones(3, np.float32), np.arange(3, dtype=np.float32)):
        close(f_jvp(v), np.exp(X) * 2 * v)


# --- reverse mode ---------------------------------------------------------------------------------


def test_grad_of_an_mlp_layer_against_the_hand_derivation():
    rng = np.random.default_rng(0)
    W, b, x = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(4).astype(np.float32), X

    def loss(W, b):
        return enp.sum(enp.tanh(W @ x + b) ** 2)

    gW, gb = ember.grad(loss, argnums=(0, 1))(W, b)
    h = np.tanh(W @ x + b)
    delta = 2 * h * (1 - h**2)
    close(gW, np.outer(delta, x))
    close(gb, delta)


def test_value_and_grad_with_aux_and_pytrees():
    def loss(params, scale):
        value = enp.sum(params["a"] ** 2) * scale + params["c"][0]
        return value, {"n": 3}

    params = {"a": X, "c": (np.float32(1.0),)}
    (value, aux), g = ember.value_and_grad(loss, has_aux=True)(params, 2.0)
    close(value, np.sum(X**2) * 2 + 1)
    assert aux == {"n": 3}
    close(g["a"], 4 * X)
    close(g["c"][0], 1.0)


def test_vjp_of_a_vector_function():
    _, f_vjp = ember.vjp(lambda x: x * x[::-1], X)
    (ct,) = f_vjp(np.ones(3, np.float32))
    # y_i = x_i x_{n-1-i}: dy_i/dx_i = x_{n-1-i}, dy_i/dx_{n-1-i} = x_i
    close(ct, 2 * X[::-1])


def test_unused_inputs_get_zeros_of_their_shape_and_dtype():
    g = ember.grad(lambda x, y: enp.sum(x), argnums=(0, 1))(X, np.ones((2, 2), np.float32))
    close(g[0], np.ones(3))
    assert g[1].shape == (2, 2) and g[1].dtype == np.float32
    close(g[1], np.zeros((2, 2)))


def test_integer_inputs_need_allow_int():
    with pytest.raises(TypeError, match=r"grad: cannot differentiate with respect to an input of shape \(3,\) and dtype int32"):
        ember.grad(lambda x: enp.sum(x * 1.0))(np.arange(3, dtype=np.int32))
    g = ember.grad(lambda x, n: enp.sum(x) * n, argnums=(0, 1), allow_int=True)(X, 3)
    close(g[0], np.full(3, 3.0))
    assert g[1].dtype == ember.core.dtypes.float0 and g[1].shape == ()


def test_grad_needs_a_real_scalar_output():
    with pytest.raises(TypeError, match=r"grad: the function must return a scalar.*shape \(3,\)"):
        ember.grad(enp.sin)(X)
    with pytest.raises(TypeError, match=r"grad: the function must return a real floating-point scalar.*complex64.*holomorphic=True"):
        ember.grad(lambda z: enp.sum(z * z))(np.ones(2, np.complex64))


def test_argnums_out_of_range():
    with pytest.raises(TypeError, match=r"grad: argnums=2 refers to a positional argument that does not exist.*2 positional"):
        ember.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)


def test_holomorphic_and_the_complex_convention():
    z = np.complex64(1.5 - 0.5j)
    close(ember.grad(lambda z: z * z, holomorphic=True)(z), 2 * z)
    with pytest.raises(TypeError, match="holomorphic=True.*inputs must be complex"):
        ember.grad(lambda x: x * x, holomorphic=True)(1.0)
    # A real function of a complex input: JAX's convention gives conj(df/dz) * 2 ... i.e. for
    # |z|^2 = x^2 + y^2 the result is 2x - 2iy (the conjugate of the usual 2z).
    close(ember.grad(lambda z: enp.real(z * enp.conj(z)))(z), 2 * np.conj(z))


def test_perturbations_are_not_confused():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1; confusing the two perturbations gives 2.
    def outer(x):
        return x * ember.grad(lambda y: x + y)(1.0)

    close(ember.grad(outer)(1.0), 1.0)
    # and the nested jvp version (Siskind & Pearlmutter's example)
    def f(x):
        def g(y):
            return x * y

        return ember.jvp(g, (1.0,), (1.0,))[1]

    close(ember.jvp(f, (2.0,), (1.0,))[1], 1.0)


def test_higher_order_to_any_depth():
    f = enp.sin
    derivatives = [np.sin, np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x), np.sin]
    g = f
    for k, d in enumerate(derivatives):
        close(g(0.7), d(0.7), 1e-4)
        g = ember.grad(g)
    # jvp of grad and grad of jvp
    close(ember.jvp(ember.grad(lambda x: x**3), (2.0,), (1.0,))[1], 12.0)
    close(ember.grad(lambda x: ember.jvp(lambda y: y**3, (x,), (1.0,))[1])(2.0), 12.0)


def test_python_control_flow_on_differentiated_values():
    def f(x):
        return x * x if x > 0 else -x

    close(ember.grad(f)(3.0), 6.0)
    close(ember.grad(f)(-3.0), -1.0)


def test_a_long_chain_needs_no_recursion():
    n = 100_000
    limit = sys.getrecursionlimit()

    def chain(x):
        for _ in range(n):
            x = x * 0.9999 + 0.0001
        return x

    close(ember.grad(chain)(1.0), 0.9999**n, 1e-3)
    assert sys.getrecursionlimit() == limit


def test_linear_transpose():
    A = np.arange(6, dtype=np.float32).reshape(2, 3)
    f_t = ember.linear_transpose(lambda x: enp.asarray(A) @ x, np.zeros(3, np.float32))
    (ct,) = f_t(np.ones(2, np.float32))
    close(ct, A.T @ np.ones(2))


def test_linearized_programs_are_well_formed_and_print():
    from ember.transforms.linearize import linearize_flat

    _, _, lin = linearize_flat(lambda x: [enp.sum(enp.sin(x) * 2.0)], [ember.numpy.asarray(X)])
    check_program(lin.program)
    text = str(lin.program)
    assert "reduce_sum" in text and "mul" in text and "lambda" in text


def test_leaked_tracers_are_reported():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2

    ember.grad(f)(1.0)
    with pytest.raises(TracerLeakError, match="already returned"):
        enp.sin(leaked[0])


def test_primitives_without_rules_say_so():
    from ember.core.primitive import PRIMITIVES, Primitive

    p = Primitive("test_only_no_rules")
    try:
        p.abstract_eval = lambda x: x
        with pytest.raises(EmberError, match="test_only_no_rules: no differentiation rule"):
            ember.grad(lambda x: p.bind(ember.numpy.asarray(x)))(1.0)
    finally:
        del PRIMITIVES["test_only_no_rules"]  # the registry is global: the coverage test must not see it


def test_api_examples():
    # The docstring examples of API.md's autodiff section, checked against hand values.
    close(ember.grad(lambda x: (x**2).sum())(enp.asarray([1.0, 2.0])), [2.0, 4.0])
    y, t = ember.jvp(enp.sin, (0.0,), (1.0,))
    close(y, 0.0)
    close(t, 1.0)
    assert isinstance(ember.grad(enp.sin)(0.0), ember.Array)


def test_dtype_errors_are_ember_errors():
    assert issubclass(DTypeError, EmberError)


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_split_ties_evenly_as_jax(name):
    # JAX's balanced rule: 1 where an operand alone attains the max/min, 1/2 to each at a tie, 0 elsewhere
    # and at NaN; eager, jitted and vmapped (a broadcast constant operand: a ReLU)
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    x = np.array([1.0, 2.0, 0.0, -0.0, nan, 3.0, inf, -inf, 0.0], np.float32)
    y = np.array([2.0, 1.0, 0.0, 0.0, 1.0, nan, inf, -inf, -0.0], np.float32)
    wins = x > y if name == "maximum" else x < y
    want_x = np.where(wins, 1.0, np.where(x == y, 0.5, 0.0)).astype(np.float32)
    want_y = np.where(~wins & (x == y), 0.5, np.where((y > x) if name == "maximum" else (y < x), 1.0, 0.0))
    op = getattr(enp, name)

    def loss(x, y):
        return enp.sum(op(x, y))

    for grad in (ember.grad(loss, argnums=(0, 1)), ember.jit(ember.grad(loss, argnums=(0, 1)))):
        gx, gy = grad(enp.asarray(x), enp.asarray(y))
        np.testing.assert_array_equal(np.asarray(gx), want_x)
        np.testing.assert_array_equal(np.asarray(gy), want_y.astype(np.float32))
    per_row = ember.jit(ember.vmap(ember.grad(lambda r: enp.sum(op(r, 0.0)))))(enp.asarray(np.stack([x, -x])))
    rows = np.stack([x, -x])
    relu_wins = rows > 0 if name == "maximum" else rows < 0
    np.testing.assert_array_equal(np.asarray(per_row), np.where(relu_wins, 1.0, np.where(rows == 0, 0.5, 0.0)))
