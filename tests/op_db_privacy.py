"""op_db entries for ember.privacy: ``per_example_norms`` and ``clipped_grad`` of a fixed two-layer
model, ``loss = ½||W2 tanh(W1 x + b1) - y||²`` per example (W1 and W2 by ghost norms, b1 materialised),
called as ``op(w1, b1, w2, x, y)`` against a NumPy loop over the examples with the gradient written by
hand."""

from __future__ import annotations

import numpy as np
from op_db import BF16, FLOATING, OpInfo, Sample, make_array, register

import ember.numpy as enp
from ember.privacy._ghost import clipped_grad, per_example_norms

F16 = np.dtype(np.float16)
_TOL = {F16: (1e-2, 1e-2), BF16: (3e-2, 5e-2), np.dtype(np.float32): (1e-5, 1e-5)}
_AD_HALF = {F16: "float16 norms of sums of products are too coarse for finite differences; float32/64 check the rule",
            BF16: "bfloat16 norms of sums of products are too coarse for finite differences; float32/64 check the rule"}
FLOAT_PARAMS = ("gradients are taken with respect to real floating-point parameters only: integer, bool and complex "
                "parameters raise DTypeError (as ember.grad does)")  # fmt: skip


def _loss(p, x, y):
    return 0.5 * enp.sum((p["w2"] @ enp.tanh(p["w1"] @ x + p["b1"]) - y) ** 2)


def _params(w1, b1, w2):
    return {"w1": w1, "b1": b1, "w2": w2}


def norms_op(w1, b1, w2, x, y):
    return per_example_norms(_loss)(_params(w1, b1, w2), (x, y))


def clipped_op(w1, b1, w2, x, y, max_norm=1.0):
    g = clipped_grad(_loss, max_norm)(_params(w1, b1, w2), (x, y))
    return g["w1"], g["b1"], g["w2"]


def _per_example_grads(w1, b1, w2, x, y):
    """Each example's (dW1, db1, dW2), by the chain rule written out."""
    out = []
    for xi, yi in zip(x, y):
        h = np.tanh(w1 @ xi + b1)
        r = w2 @ h - yi
        da = (w2.T @ r) * (1 - h**2)
        out.append((np.outer(da, xi), da, np.outer(r, h)))
    return out


def _norm(g):
    return np.sqrt(sum(np.sum(part**2) for part in g))


def norms_ref(w1, b1, w2, x, y):
    return np.array([_norm(g) for g in _per_example_grads(w1, b1, w2, x, y)])


def clipped_ref(w1, b1, w2, x, y, max_norm=1.0):
    total = [np.zeros_like(w1), np.zeros_like(b1), np.zeros_like(w2)]
    for g in _per_example_grads(w1, b1, w2, x, y):
        scale = min(1.0, max_norm / _norm(g)) if _norm(g) > 0 else 1.0
        total = [t + scale * part for t, part in zip(total, g)]
    return tuple(total)


def _samples(clip: bool):
    def make(rng, d):
        out = []
        for batch, n_in, hidden, n_out in ((5, 3, 4, 2), (1, 3, 4, 2), (4, 1, 2, 1)):
            args = (make_array(rng, (hidden, n_in), d, -1, 1), make_array(rng, (hidden,), d, -1, 1),
                    make_array(rng, (n_out, hidden), d, -1, 1), make_array(rng, (batch, n_in), d, -2, 2),
                    make_array(rng, (batch, n_out), d, -2, 2))  # fmt: skip
            out.append(Sample(args, {"max_norm": 0.5} if clip else {}))
        return out

    return make


register(
    OpInfo("privacy.per_example_norms", norms_op, norms_ref, FLOATING, _samples(False), FLOAT_PARAMS, tol=_TOL,
           ad_unsupported=_AD_HALF),
    OpInfo("privacy.clipped_grad", clipped_op, clipped_ref, FLOATING, _samples(True), FLOAT_PARAMS, tol=_TOL,
           transforms=frozenset({"vmap", "jit"}),
           nondiff="the clipping weights min(1, max_norm / norm_i) are held constant (stop_gradient), as DP-SGD "
                   "needs: the result is not differentiated as a function of the parameters"),
)
