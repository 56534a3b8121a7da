"""jacrev, jacfwd, hessian and jacobian against Jacobians and Hessians derived by hand (in NumPy),
the pytree structure of their results (JAX's: output tree outside, input tree inside), and
jacobian's choice of mode and its explanation."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import DTypeError, InvalidArgumentError
from ember.transforms import jacobians

RNG = np.random.default_rng(0)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _close(got, want, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def _shapes(tree):
    return ember.tree.map(lambda leaf: tuple(leaf.shape), tree)


JACOBIANS = {
    "jacrev": ember.jacrev,
    "jacfwd": ember.jacfwd,
    "jacobian": ember.jacobian,
    "jacrev_chunked": lambda f, **kw: ember.jacrev(f, chunk_size=3, **kw),
    "jacfwd_chunked": lambda f, **kw: ember.jacfwd(f, chunk_size=3, **kw),
}


# --- values -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", JACOBIANS)
def test_tanh_of_a_linear_map(name):
    w, x = _rand(7, 5), _rand(5)
    jac = JACOBIANS[name](lambda v: enp.tanh(enp.asarray(w) @ v))(x)
    t = np.tanh(w.astype(np.float64) @ x)
    _close(jac, (1 - t**2)[:, None] * w)  # diag(1 - tanh^2) W
    # With respect to W: d y_i / d W_jk = (1 - t_i^2) [i == j] x_k
    jac_w = JACOBIANS[name](lambda m: enp.tanh(m @ enp.asarray(x)))(w)
    want = np.einsum("i,ij,k->ijk", 1 - t**2, np.eye(7), x)
    assert jac_w.shape == (7, 7, 5)
    _close(jac_w, want)


def test_float64_and_a_256_by_256_jacobian():
    with ember.config.x64(True):
        w, x = RNG.standard_normal((256, 256)) / 16, RNG.standard_normal(256)
        t = np.tanh(w @ x)
        want = (1 - t**2)[:, None] * w
        for jac in (ember.jacrev, ember.jacfwd):
            got = jac(lambda v: enp.tanh(enp.asarray(w) @ v))(enp.asarray(x))
            assert got.dtype == np.float64
            _close(got, want, rtol=1e-12, atol=1e-14)


def _logistic(w, x, y, lam):
    z = x @ w
    return enp.mean(enp.logaddexp(0.0, z) - y * z) + 0.5 * lam * enp.sum(w * w)


def test_logistic_loss_hessian_and_hvp():
    n, d, lam = 40, 6, 0.1
    x, y, w = _rand(n, d), (RNG.random(n) < 0.5).astype(np.float32), _rand(d) * 0.3
    p = 1 / (1 + np.exp(-(x.astype(np.float64) @ w)))
    grad_want = x.T @ (p - y) / n + lam * w
    hess_want = (x.T * (p * (1 - p))) @ x / n + lam * np.eye(d)
    args = (enp.asarray(x), enp.asarray(y), lam)
    _close(ember.grad(_logistic)(enp.asarray(w), *args), grad_want, rtol=1e-5, atol=1e-6)
    hess = ember.hessian(_logistic)(enp.asarray(w), *args)
    assert hess.shape == (d, d)
    _close(hess, hess_want, rtol=1e-5, atol=1e-6)
    _close(ember.jacfwd(ember.jacrev(_logistic))(enp.asarray(w), *args), hess_want, rtol=1e-5, atol=1e-6)
    _close(ember.jacrev(ember.jacrev(_logistic))(enp.asarray(w), *args), hess_want, rtol=1e-5, atol=1e-6)
    v = _rand(d)

    def hvp(f, primal, tangent):  # forward over reverse, as in hessian's docstring
        return ember.jvp(lambda u: ember.grad(f)(u, *args), (primal,), (tangent,))[1]

    _close(hvp(_logistic, enp.asarray(w), enp.asarray(v)), hess_want @ v, rtol=1e-5, atol=1e-6)


def test_hessian_of_a_pytree_function():
    w, b = _rand(3), np.float32(1.5)

    def f(p):  # sum(w^2) * b + b^3
        return enp.sum(p["w"] ** 2) * p["b"] + p["b"] ** 3

    h = ember.hessian(f)({"w": enp.asarray(w), "b": enp.asarray(b)})
    assert _shapes(h) == {"b": {"b": (), "w": (3,)}, "w": {"b": (3,), "w": (3, 3)}}
    _close(h["w"]["w"], 2 * b * np.eye(3))
    _close(h["w"]["b"], 2 * w)
    _close(h["b"]["w"], 2 * w)
    _close(h["b"]["b"], 6 * b)
    h2 = ember.hessian(lambda a, c: enp.sum(a**2 * c), argnums=(0, 1))(enp.asarray(w), enp.asarray(2.0))
    assert _shapes(h2) == (((3, 3), (3,)), ((3,), ()))
    _close(h2[0][0], 4 * np.eye(3))
    _close(h2[0][1], 2 * w)
    _close(h2[1][1], 0.0)


# --- structure ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["jacrev", "jacfwd", "jacobian"])
def test_pytree_structure_is_jaxs(name):
    a, b = _rand(2), _rand(3)

    def f(u, v):
        return (u * v.sum(), {"s": enp.sum(u**2), "m": enp.outer(u, v)})

    jac = JACOBIANS[name]
    # argnums int: the inner level is that argument's structure (here a leaf)
    j0 = jac(f)(enp.asarray(a), enp.asarray(b))
    assert _shapes(j0) == ((2, 2), {"m": (2, 3, 2), "s": (2,)})
    # argnums tuple: a tuple inside every output leaf
    j01 = jac(f, argnums=(0, 1))(enp.asarray(a), enp.asarray(b))
    assert _shapes(j01) == (((2, 2), (2, 3)), {"m": ((2, 3, 2), (2, 3, 3)), "s": ((2,), (3,))})
    _close(j01[0][0], np.eye(2) * b.sum())
    _close(j01[0][1], np.outer(a, np.ones(3)))
    _close(j01[1]["s"][0], 2 * a)
    _close(j01[1]["s"][1], np.zeros(3))
    _close(j01[1]["m"][0], np.einsum("ik,j->ijk", np.eye(2), b))
    _close(j01[1]["m"][1], np.einsum("i,jk->ijk", a, np.eye(3)))
    # a pytree argument: its structure inside
    jp = jac(lambda p: p["x"] * p["y"][0])({"x": enp.asarray(a), "y": (enp.asarray(2.0),)})
    assert _shapes(jp) == {"x": (2, 2), "y": ((2,),)}
    _close(jp["x"], 2 * np.eye(2))
    _close(jp["y"][0], a)


def test_aux_holomorphic_integers_and_empty_arrays():
    x = enp.asarray(_rand(3))
    for jac in (ember.jacrev, ember.jacfwd):
        j, aux = jac(lambda v: (v * 2.0, {"n": enp.sum(v), "tag": "kept"}), has_aux=True)(x)
        _close(j, 2 * np.eye(3))
        _close(aux["n"], np.sum(np.asarray(x)))
        assert aux["tag"] == "kept"
        z = np.asarray([1 + 1j, 2 - 1j], dtype=np.complex64)
        _close(jac(lambda u: u**2, holomorphic=True)(enp.asarray(z)), np.diag(2 * z))
        empty = jac(lambda v: v * 2.0)(enp.ones((0,)))
        assert empty.shape == (0, 0)
    h, aux = ember.hessian(lambda v: (enp.sum(v**3), v), has_aux=True)(x)
    _close(h, np.diag(6 * np.asarray(x)))
    _close(aux, x)
    # integer inputs: float0 zeros with allow_int (jacrev); integer outputs: float0 zeros (jacfwd)
    ji = ember.jacrev(lambda v, n: v * n, argnums=(0, 1), allow_int=True)(x, 3)
    _close(ji[0], 3 * np.eye(3))
    assert ji[1].dtype == ember.core.dtypes.float0 and ji[1].shape == (3,)
    jo = ember.jacfwd(lambda v: (v * 2.0, enp.round(v).astype("int32")))(x)
    assert jo[1].dtype == ember.core.dtypes.float0 and jo[1].shape == (3, 3)


def test_dtype_errors_follow_jax():
    with pytest.raises(DTypeError, match="jacrev: cannot differentiate"):
        ember.jacrev(lambda v: v * 2)(enp.asarray([1, 2]))
    with pytest.raises(DTypeError, match="jacfwd: forward mode needs real floating-point inputs"):
        ember.jacfwd(lambda v: v * 2)(enp.asarray([1 + 1j]))
    with pytest.raises(DTypeError, match="jacrev: reverse mode needs real floating-point outputs.*holomorphic=True"):
        ember.jacrev(lambda v: v * (1 + 1j))(enp.asarray([1.0]))
    with pytest.raises(DTypeError, match="holomorphic=True"):
        ember.jacfwd(lambda v: v.real, holomorphic=True)(enp.asarray([1 + 1j]))
    with pytest.raises(TypeError, match="argnums"):
        ember.jacrev(lambda v: v, argnums=2)(enp.ones(2))
    with pytest.raises(InvalidArgumentError, match="mode must be one of"):
        ember.jacobian(lambda v: v, mode="forward")


def test_composition_with_vmap():
    w, xs = _rand(4, 3), _rand(6, 3)
    per = ember.vmap(ember.jacrev(lambda v: enp.tanh(enp.asarray(w) @ v)))(xs)
    t = np.tanh(xs.astype(np.float64) @ w.T)
    _close(per, (1 - t**2)[:, :, None] * w[None])
    _close(ember.vmap(ember.jacfwd(lambda v: enp.tanh(enp.asarray(w) @ v)))(xs), per)
    # jacobian of a vmapped function is block diagonal
    big = ember.jacrev(ember.vmap(lambda v: enp.sin(v)))(enp.asarray(xs[:2]))
    assert big.shape == (2, 3, 2, 3)
    _close(big, np.einsum("ab,ij,ai->aibj", np.eye(2), np.eye(3), np.cos(xs[:2])))


# --- jacobian's mode ----------------------------------------------------------------------------------------


def _spy(monkeypatch):
    used = []
    for mode, real in (("fwd", jacobians.jacfwd), ("rev", jacobians.jacrev)):
        def wrapper(*args, _real=real, _mode=mode, **kwargs):
            inner = _real(*args, **kwargs)

            def call(*a, **k):
                used.append(_mode)
                return inner(*a, **k)

            return call

        monkeypatch.setattr(jacobians, "jacfwd" if mode == "fwd" else "jacrev", wrapper)
    return used


def test_jacobian_picks_the_cheaper_mode(monkeypatch):
    used = _spy(monkeypatch)
    tall = ember.jacobian(lambda v: enp.outer(v, v).ravel())  # 2 -> 4: forward
    _close(tall(enp.asarray([1.0, 2.0])), [[2, 0], [2, 1], [2, 1], [0, 4]])
    wide = ember.jacobian(lambda v: enp.sum(v**2))  # 3 -> 1: reverse
    _close(wide(enp.asarray([1.0, 2.0, 3.0])), [2, 4, 6])
    square = ember.jacobian(enp.sin)  # 3 -> 3: the tie goes to reverse
    _close(square(enp.zeros(3)), np.eye(3))
    forced = ember.jacobian(lambda v: enp.sum(v**2), mode="fwd")
    _close(forced(enp.asarray([1.0, 2.0, 3.0])), [2, 4, 6])
    forced_rev = ember.jacobian(lambda v: enp.outer(v, v).ravel(), mode="rev")
    _close(forced_rev(enp.asarray([1.0, 2.0])), [[2, 0], [2, 1], [2, 1], [0, 4]])
    assert used == ["fwd", "rev", "rev", "fwd", "rev"]
    # sizes count every leaf of every differentiated argument, and every output leaf
    tree = ember.jacobian(lambda p, q: {"a": p["u"] * q, "b": p["v"]}, argnums=(0, 1))
    tree({"u": enp.ones(2), "v": enp.ones(2)}, enp.asarray(3.0))  # 5 inputs -> 4 outputs: reverse
    assert used[-1] == "rev"
    # complex outputs without holomorphic: only forward mode can
    ember.jacobian(lambda v: v * (1 + 1j) * enp.ones(1))(enp.ones(3))
    assert used[-1] == "fwd"


def test_jacobian_explain():
    tall = ember.jacobian(lambda v: enp.outer(v, v).ravel())
    text = tall.explain(enp.asarray([1.0, 2.0]))
    assert text.startswith("jacobian uses forward mode (jacfwd): the inputs have 2 elements and the outputs 4 elements")
    assert "2 Jacobian-vector products" in text and "4 vector-Jacobian products" in text
    wide = ember.jacobian(lambda v: enp.sum(v**2)).explain(enp.ones(5))
    assert wide.startswith("jacobian uses reverse mode (jacrev): the inputs have 5 elements and the outputs 1 element,")
    assert "1 vector-Jacobian product (one per output element) is fewer than the 5 Jacobian-vector products" in wide
    tie = ember.jacobian(enp.sin).explain(enp.ones(3))
    assert "reverse mode (jacrev)" in tie and "tie" in tie and "3 elements" in tie
    forced = ember.jacobian(lambda v: enp.sum(v**2), mode="fwd").explain(enp.ones(5))
    assert forced == "jacobian uses forward mode (jacfwd) because mode='fwd' was given (the inputs have 5 elements and the outputs 1 element)"
    kinds = ember.jacobian(lambda v: enp.sum(v) * (1 + 1j)).explain(enp.ones(3))  # fewer outputs, but complex
    assert "forward mode (jacfwd) because reverse mode needs real floating-point outputs" in kinds
    # pytrees, argnums and has_aux
    text = ember.jacobian(lambda p, q: ({"a": p["u"] * q}, "aux"), argnums=(0, 1), has_aux=True).explain(
        {"u": enp.ones((2, 3))}, enp.asarray(3.0))
    assert "the inputs have 7 elements and the outputs 6 elements" in text and "reverse" in text


def test_explain_does_not_compute_the_jacobian():
    seen = []

    def f(v):
        seen.append(type(v).__name__)
        return enp.tanh(v) * 2.0

    ember.jacobian(f).explain(enp.ones(4))
    assert seen == ["StagingTracer"]  # one abstract evaluation, no arithmetic
    # A function with Python control flow on values runs once instead.
    seen.clear()

    def g(v):
        seen.append(type(v).__name__)
        return v * 2.0 if float(v.sum()) > 0 else v

    assert "4 elements" in ember.jacobian(g).explain(enp.ones(4))
    assert seen == ["StagingTracer", "Array"]
