"""Reverse mode, eager: the gradient of a chain of 1024x1024 matmuls with tanh.

loss(Ws) = sum(tanh(W3 @ tanh(W2 @ tanh(W1 @ X)))). The hand-written NumPy
baseline keeps the activations and runs the backward pass by hand; the work is
the BLAS calls, so ember's target is within 10% of it (DESIGN.md).
"""

from __future__ import annotations

import numpy as np

from benchmarks.registry import workload

N, LAYERS = 1024, 3


def _inputs():
    rng = np.random.default_rng(0)
    ws = [(rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32) for _ in range(LAYERS)]
    x = rng.standard_normal((N, N)).astype(np.float32)
    return ws, x


def numpy_grads(ws, x):
    hs = [x]
    for w in ws:
        hs.append(np.tanh(w @ hs[-1]))
    delta = np.ones_like(hs[-1])
    grads = []
    for w, h_in, h_out in zip(reversed(ws), reversed(hs[:-1]), reversed(hs[1:])):
        delta = delta * (1 - h_out * h_out)
        grads.append(delta @ h_in.T)
        delta = w.T @ delta
    return grads[::-1]


@workload("grad_matmul_tanh_chain", family="reverse_mode", target=1.1, rtol=1e-3, atol=1e-3,
          description=f"grad of {LAYERS} x tanh(W @ h), f32[{N},{N}]")  # fmt: skip
def _(env):
    import ember

    enp = env.enp
    ws, x = _inputs()
    ews, ex = env.put("ember", (ws, x))

    def loss(ws, h):
        for w in ws:
            h = enp.tanh(w @ h)
        return enp.sum(h)

    grad = ember.grad(loss)
    impls = {"numpy": lambda: numpy_grads(ws, x), "ember": lambda: grad(ews, ex)}
    jit_grad = ember.jit(grad)
    impls["ember_jit"] = lambda: jit_grad(ews, ex)
    if env.torch is not None:
        torch = env.torch
        tws = [w.requires_grad_() for w in env.put("torch", ws)]
        tx = env.put("torch", x)

        def torch_grads():
            h = tx
            for w in tws:
                h = torch.tanh(w @ h)
            return torch.autograd.grad(h.sum(), tws)

        impls["torch"] = torch_grads
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jws, jx = env.put("jax", (ws, x))

        def jloss(ws, h):
            for w in ws:
                h = jnp.tanh(w @ h)
            return jnp.sum(h)

        jgrad = jax.grad(jloss)
        impls["jax"] = lambda: [g.block_until_ready() for g in jgrad(jws, jx)]
    return impls
