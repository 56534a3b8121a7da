"""jit's own targets (DESIGN.md): a 20-op elementwise function on f32[1000], and a training step of
an MLP 784-512-512-10 with Adam written inline (batch 128), timed per call and on its first call
(trace + optimize + compile + run, with a fresh jit each time)."""

from __future__ import annotations

import itertools

import numpy as np

from benchmarks.registry import workload

# --- 20 elementwise operations ------------------------------------------------------------------------


def elementwise_20(x, xp):
    for _ in range(5):  # 4 operations a round
        x = xp.tanh(x) * 1.5 + 0.5
        x = xp.sin(x) - x * 0.25
    return x


@workload("jit_elementwise_20", family="jit", target=1.2, description="20 elementwise ops, f32[1000]")
def _(env):
    import ember

    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    ex = env.enp.asarray(x)
    jitted = ember.jit(lambda x: elementwise_20(x, env.enp))
    impls = {"numpy": lambda: elementwise_20(x, np), "ember": lambda: elementwise_20(ex, env.enp),
             "ember_jit": lambda: jitted(ex)}  # fmt: skip
    if env.torch is not None:
        tx = env.torch.tensor(x)
        impls["torch"] = lambda: elementwise_20(tx, env.torch)
    if env.jnp is not None:
        jfn = env.jax.jit(lambda x: elementwise_20(x, env.jnp))
        jx = env.jnp.asarray(x)
        impls["jax"] = lambda: jfn(jx).block_until_ready()
    return impls


# --- an MLP training step with Adam ---------------------------------------------------------------------

# eps = 1e-5 rather than Adam's usual 1e-8: a first step moves each weight by lr * g / (|g| + eps), which
# for gradients near zero (dead relu units) turns float32 rounding of g into O(lr) differences between
# implementations; a larger eps keeps the output check meaningful without changing the work.
SIZES, BATCH, LR, B1, B2, EPS = (784, 512, 512, 10), 128, 1e-3, 0.9, 0.999, 1e-5


def _mlp_inputs():
    rng = np.random.default_rng(0)
    params = []
    for a, b in itertools.pairwise(SIZES):
        params += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32)]
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    return params, x, y


def numpy_adam_step(params, m, v, t, x, y):
    """Forward, backward by hand (relu layers, softmax cross-entropy) and Adam, in NumPy."""
    ws, bs = params[0::2], params[1::2]
    hs, pre = [x], []
    for w, b in zip(ws[:-1], bs[:-1]):
        pre.append(hs[-1] @ w + b)
        hs.append(np.maximum(pre[-1], 0.0))
    logits = hs[-1] @ ws[-1] + bs[-1]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    delta = (e / e.sum(axis=1, keepdims=True) - y) / BATCH
    grads = [None] * len(params)
    for k in range(len(ws) - 1, -1, -1):
        grads[2 * k], grads[2 * k + 1] = hs[k].T @ delta, delta.sum(axis=0)
        if k:
            delta = (delta @ ws[k].T) * (pre[k - 1] > 0)
    t = t + 1
    m = [B1 * mi + (1 - B1) * g for mi, g in zip(m, grads)]
    v = [B2 * vi + (1 - B2) * g * g for vi, g in zip(v, grads)]
    scale_m, scale_v = 1 / (1 - B1**t), 1 / (1 - B2**t)
    params = [p - LR * (mi * scale_m) / (np.sqrt(vi * scale_v) + EPS) for p, mi, vi in zip(params, m, v)]
    return params, m, v, t


def make_step(xp, logsumexp, grad):
    def loss(params, x, y):
        h = x
        for i in range(0, len(params) - 2, 2):
            h = xp.maximum(h @ params[i] + params[i + 1], 0.0)
        logits = h @ params[-2] + params[-1]
        return xp.mean(logsumexp(logits, axis=1) - xp.sum(y * logits, axis=1))

    def step(params, m, v, t, x, y):
        grads = grad(loss)(params, x, y)
        t = t + 1
        m = [B1 * mi + (1 - B1) * g for mi, g in zip(m, grads)]
        v = [B2 * vi + (1 - B2) * g * g for vi, g in zip(v, grads)]
        scale_m, scale_v = 1 / (1 - B1**t), 1 / (1 - B2**t)
        params = [p - LR * (mi * scale_m) / (xp.sqrt(vi * scale_v) + EPS) for p, mi, vi in zip(params, m, v)]
        return params, m, v, t

    return step


def _adam_setup(env, first_call: bool):
    import ember
    from ember.scipy.special import logsumexp

    params, x, y = _mlp_inputs()
    zeros = [np.zeros_like(p) for p in params]
    enp = env.enp
    ep, ez, ex, ey = [enp.asarray(p) for p in params], [enp.asarray(z) for z in zeros], enp.asarray(x), enp.asarray(y)
    et = enp.asarray(0.0)
    step = make_step(enp, logsumexp, ember.grad)
    jitted = ember.jit(step)
    if first_call:
        impls = {"numpy": lambda: numpy_adam_step(params, zeros, zeros, 0.0, x, y)[0],
                 "ember_jit": lambda: ember.jit(step)(ep, ez, ez, et, ex, ey)[0]}  # fmt: skip
    else:
        impls = {"numpy": lambda: numpy_adam_step(params, zeros, zeros, 0.0, x, y)[0],
                 "ember": lambda: step(ep, ez, ez, et, ex, ey)[0],
                 "ember_jit": lambda: jitted(ep, ez, ez, et, ex, ey)[0]}  # fmt: skip
    if env.torch is not None and not first_call:
        torch = env.torch
        tp = [torch.tensor(p, requires_grad=True) for p in params]
        tx, ty = torch.tensor(x), torch.tensor(y)

        def torch_step():
            h = tx
            for i in range(0, len(tp) - 2, 2):
                h = torch.relu(h @ tp[i] + tp[i + 1])
            logits = h @ tp[-2] + tp[-1]
            loss = torch.mean(torch.logsumexp(logits, 1) - torch.sum(ty * logits, 1))
            grads = torch.autograd.grad(loss, tp)
            with torch.no_grad():
                m = [(1 - B1) * g for g in grads]
                v = [(1 - B2) * g * g for g in grads]
                return [p - LR * (mi / (1 - B1)) / (torch.sqrt(vi / (1 - B2)) + EPS) for p, mi, vi in zip(tp, m, v)]

        impls["torch"] = torch_step
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jstep = make_step(jnp, jax.nn.logsumexp, jax.grad)
        jp, jz, jx, jy = [jnp.asarray(p) for p in params], [jnp.asarray(z) for z in zeros], jnp.asarray(x), jnp.asarray(y)
        if first_call:  # a new function object each time: jax.jit traces and compiles again
            impls["jax"] = lambda: jax.block_until_ready(jax.jit(lambda *a: jstep(*a))(jp, jz, jz, 0.0, jx, jy)[0])
        else:
            compiled = jax.jit(jstep)
            impls["jax"] = lambda: jax.block_until_ready(compiled(jp, jz, jz, 0.0, jx, jy)[0])
    return impls


@workload("mlp_adam_step", family="jit", target=0.73, rtol=1e-4, atol=1e-5,
          description="MLP 784-512-512-10 Adam b128")  # fmt: skip
def _(env):
    return _adam_setup(env, first_call=False)


@workload("mlp_adam_first_call", family="jit", rtol=1e-4, atol=1e-5,
          description="same, first call (trace+compile)")  # fmt: skip
def _(env):
    return _adam_setup(env, first_call=True)
