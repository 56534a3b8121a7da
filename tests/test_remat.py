"""checkpoint / remat: same values and derivatives (against hand-written NumPy backprop), fewer residuals."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember.errors import InvalidArgumentError
from ember.test_util import check_grads
from ember.transforms.linearize import linearize_flat

N, BATCH, LAYERS, PER_BLOCK = 32, 128, 50, 10


def close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(
        np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol
    )


def _data(dtype=np.float32):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((N, N)) / np.sqrt(N)).astype(dtype), rng.standard_normal((N, BATCH)).astype(dtype)


def block(w, x):
    for _ in range(PER_BLOCK):
        x = enp.tanh(w @ x)
    return x


def deep_loss(blk):
    def loss(w, x):
        for _ in range(LAYERS // PER_BLOCK):
            x = blk(w, x)
        return (x**2).sum()

    return loss


def numpy_grads(w, x):
    """Backprop of sum(h_L^2), h_{k+1} = tanh(w h_k), written out by hand."""
    hs = [x]
    for _ in range(LAYERS):
        hs.append(np.tanh(w @ hs[-1]))
    g, gw = 2 * hs[-1], np.zeros_like(w)
    for k in range(LAYERS - 1, -1, -1):
        gz = g * (1 - hs[k + 1] ** 2)
        gw += gz @ hs[k].T
        g = w.T @ gz
    return gw, g


def test_checkpoint_gradients_equal_plain_and_numpy():
    with ember.config.x64(True):
        w, x = _data(np.float64)
        want_w, want_x = numpy_grads(w, x)
        for blk in (block, ember.checkpoint(block), ember.remat(block)):
            gw, gx = ember.grad(deep_loss(blk), (0, 1))(enp.asarray(w), enp.asarray(x))
            close(gw, want_w, rtol=1e-10, atol=1e-12)
            close(gx, want_x, rtol=1e-10, atol=1e-12)


def _residual_bytes(loss, w, x) -> int:
    _, _, lin = linearize_flat(lambda w, x: [loss(w, x)], [enp.asarray(w), enp.asarray(x)])
    return sum(c.size * c.dtype.itemsize for c in lin.consts)


def test_checkpoint_saves_only_block_inputs():
    w, x = _data()
    plain = _residual_bytes(deep_loss(block), w, x)
    remat = _residual_bytes(deep_loss(ember.checkpoint(block)), w, x)
    act = x.nbytes  # one activation
    # Without checkpoint, every layer keeps its input and 1 - tanh^2 (2 activations per layer);
    # with it, each of the 5 blocks keeps its input (plus w and the loss's 2 * x_L).
    assert plain >= 2 * LAYERS * act
    assert remat <= (LAYERS // PER_BLOCK + 1) * act + w.nbytes
    assert remat * 10 < plain


def _peak_bytes(fn, *args) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_checkpoint_lowers_peak_memory_of_grad():
    w, x = enp.asarray(_data()[0]), enp.asarray(_data()[1])
    grad_plain = ember.grad(deep_loss(block), (0, 1))
    grad_remat = ember.grad(deep_loss(ember.checkpoint(block)), (0, 1))
    plain, remat = _peak_bytes(grad_plain, w, x), _peak_bytes(grad_remat, w, x)
    # The plain backward pass holds ~100 activations at its start; the remat one 5 block inputs
    # plus one block's 20 residuals while that block is transposed.
    assert remat < 0.5 * plain, (remat, plain)


def test_checkpoint_recomputes_in_the_backward_pass():
    calls = []

    def f(x):
        calls.append(1)
        return enp.sin(x) * x

    g = ember.grad(lambda x: ember.checkpoint(f)(x).sum())(enp.asarray([0.5, 1.0]))
    close(g, np.cos([0.5, 1.0]) * [0.5, 1.0] + np.sin([0.5, 1.0]))
    assert len(calls) == 2  # forward, then again in the backward pass
    calls.clear()
    ember.grad(lambda x: f(x).sum())(enp.asarray([0.5, 1.0]))
    assert len(calls) == 1


def test_checkpoint_forward_mode_linearize_and_higher_order():
    w = enp.asarray([[0.5, -0.3], [0.2, 0.8]])
    x = enp.asarray([0.4, -0.7])
    f = ember.checkpoint(lambda w, x: enp.tanh(w @ enp.tanh(w @ x)))
    tw, tx = np.array([[1.0, 0.0], [0.5, -1.0]]), np.array([0.3, 0.2])
    # d tanh(w tanh(w x)) by the chain rule, by hand
    wn, xn = np.asarray(w), np.asarray(x)
    h = np.tanh(wn @ xn)
    dh = (1 - h**2) * (tw @ xn + wn @ tx)
    out = np.tanh(wn @ h)
    want = (1 - out**2) * (tw @ h + wn @ dh)
    y, t = ember.jvp(f, (w, x), (enp.asarray(tw), enp.asarray(tx)))
    close(y, out)
    close(t, want, rtol=1e-5)
    _, f_jvp = ember.linearize(f, w, x)
    close(f_jvp(enp.asarray(tw), enp.asarray(tx)), want, rtol=1e-5)
    with ember.config.x64(True):
        w64, x64 = enp.asarray(np.asarray(w, np.float64)), enp.asarray(np.asarray(x, np.float64))
        check_grads(f, (w64, x64), order=2)


def test_nested_checkpoints():
    inner = ember.checkpoint(lambda x: enp.sin(x) * 2.0)
    outer = ember.checkpoint(lambda x: inner(inner(x)))
    x = np.array([0.3, -0.8])
    g = ember.grad(lambda x: outer(x).sum())(enp.asarray(x))
    y1 = 2 * np.sin(x)
    close(g, 2 * np.cos(y1) * 2 * np.cos(x), rtol=1e-5)


def test_policies_static_argnums_and_keywords():
    x = enp.asarray([0.5, 1.5])
    w, xb = _data()
    plain = _residual_bytes(deep_loss(block), w, xb)
    saved = ember.checkpoint(block, policy=ember.checkpoint_policies.everything_saveable)
    assert _residual_bytes(deep_loss(saved), w, xb) == plain
    nothing = ember.checkpoint(block, policy=ember.checkpoint_policies.nothing_saveable)
    assert _residual_bytes(deep_loss(nothing), w, xb) * 10 < plain
    with pytest.raises(InvalidArgumentError, match="policy"):
        ember.checkpoint(block, policy=lambda *a, **k: True)

    def power(x, n, *, scale):
        return scale * x**n

    f = ember.checkpoint(power, static_argnums=(1,))
    close(f(x, 3, scale=2.0), 2 * np.asarray(x) ** 3)
    close(ember.grad(lambda x: f(x, 3, scale=2.0).sum())(x), 6 * np.asarray(x) ** 2)
    close(ember.grad(lambda s: f(x, 3, scale=s).sum())(2.0), (np.asarray(x) ** 3).sum())


def test_checkpoint_without_differentiation_is_the_function():
    w, x = _data()
    close(ember.checkpoint(block)(enp.asarray(w), enp.asarray(x)), block(enp.asarray(w), enp.asarray(x)))
    pair = ember.checkpoint(lambda x: (x * 2.0, {"n": enp.sum(x)}))(enp.asarray([1.0, 2.0]))
    close(pair[0], [2.0, 4.0])
    close(pair[1]["n"], 3.0)
