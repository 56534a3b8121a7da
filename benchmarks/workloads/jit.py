"""jit's own targets (DESIGN.md): a 20-op elementwise function on f32[1000], and a training step of
an MLP 784-512-512-10 with Adam written inline (batch 128), timed per call and on its first call
(trace + optimize + compile + run, with a fresh jit each time).

For the GPU (``--suite gpu``), the same chain on f32[1M] (``jit_elementwise_20_1m``): a fused kernel reads
the input once and writes the output once, 8 MB, so the runner reports 8 MB / time as GB/s next to the copy
bandwidth measured in the same run by ``copy_1m`` (a copy of the same 4 MB within the device by each
library: ember ``enp.copy``, torch ``clone``, JAX ``jnp.copy``; NumPy's ``copy`` on the host). At 4 MB a
GPU copy is short enough that launching it counts: the ratio to the copy is the figure to read (a chain
fused into one kernel costs about one copy)."""

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


def _elementwise_setup(env, n):
    import ember

    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    ex = env.put("ember", x)
    jitted = ember.jit(lambda x: elementwise_20(x, env.enp))
    impls = {"numpy": lambda: elementwise_20(x, np), "ember": lambda: elementwise_20(ex, env.enp),
             "ember_jit": lambda: jitted(ex)}  # fmt: skip
    if env.torch is not None:
        tx = env.put("torch", x)
        impls["torch"] = lambda: elementwise_20(tx, env.torch)
    if env.jnp is not None:
        jfn = env.jax.jit(lambda x: elementwise_20(x, env.jnp))
        jx = env.put("jax", x)
        impls["jax"] = lambda: jfn(jx).block_until_ready()
    return impls


@workload("jit_elementwise_20", family="jit", target=1.2, description="20 elementwise ops, f32[1000]")
def _(env):
    return _elementwise_setup(env, 1000)


# --- the cost of calling a jitted function --------------------------------------------------------------


def _dispatch_setup(env, numpy_args: bool):
    """``jit(lambda a: a + 1.0)`` on f32[3], where calling is all the cost: ember's argument an ember array
    or a NumPy array (data batches usually are), JAX's its own array or a NumPy one alike."""
    import ember

    x = np.asarray([1.0, 2.0, 3.0], np.float32)
    ex = x if numpy_args else env.put("ember", x)
    jitted = ember.jit(lambda a: a + 1.0)
    impls = {"numpy": lambda: x + np.float32(1.0), "ember_jit": lambda: jitted(ex)}
    if env.jnp is not None:
        jfn = env.jax.jit(lambda a: a + 1.0)
        jx = x if numpy_args else env.put("jax", x)
        impls["jax"] = lambda: jfn(jx).block_until_ready()
    return impls


@workload("jit_dispatch", family="jit", description="jit(a + 1.0) f32[3], ember array")
def _(env):
    return _dispatch_setup(env, numpy_args=False)


@workload("jit_dispatch_numpy_arg", family="jit", description="jit(a + 1.0) f32[3], NumPy array")
def _(env):
    return _dispatch_setup(env, numpy_args=True)


def _million(env) -> int:
    return 1000 if env.smoke else 1 << 20


def _read_write_bytes(env) -> int:
    return 2 * 4 * _million(env)  # float32 in, float32 out


# tolerance: 2**20 values through 10 tanh/sin each, where a GPU's tanhf/sinf may be 1-2 ulp from NumPy's
@workload("jit_elementwise_20_1m", family="jit", rtol=1e-5, atol=1e-5, tags=("gpu",),
          bytes_moved=_read_write_bytes, description="20 elementwise ops, f32[1M]")  # fmt: skip
def _(env):
    return _elementwise_setup(env, _million(env))


@workload("copy_1m", family="bandwidth", tags=("gpu",), bytes_moved=_read_write_bytes,
          description="copy f32[1M] (copy bandwidth)")  # fmt: skip
def _(env):
    x = np.random.default_rng(0).standard_normal(_million(env)).astype(np.float32)
    ex = env.put("ember", x)
    impls = {"numpy": lambda: x.copy(), "ember": lambda: env.enp.copy(ex)}
    if env.torch is not None:
        tx = env.put("torch", x)
        impls["torch"] = lambda: tx.clone()
    if env.jnp is not None:
        jx = env.put("jax", x)
        impls["jax"] = lambda: env.jnp.copy(jx).block_until_ready()
    return impls


# --- an MLP training step with Adam ---------------------------------------------------------------------

# eps = 1e-5 rather than Adam's usual 1e-8: a first step moves each weight by lr * g / (|g| + eps), which
# for gradients near zero (dead relu units) turns float32 rounding of g into O(lr) differences between
# implementations; a larger eps keeps the output check meaningful without changing the work.
SIZES, BATCH, LR, B1, B2, EPS = (784, 512, 512, 10), 128, 1e-3, 0.9, 0.999, 1e-5
SMOKE_SIZES, SMOKE_BATCH = (78, 51, 51, 10), 16  # env.smoke


def _mlp_inputs(smoke=False):
    sizes, batch = (SMOKE_SIZES, SMOKE_BATCH) if smoke else (SIZES, BATCH)
    rng = np.random.default_rng(0)
    params = []
    for a, b in itertools.pairwise(sizes):
        params += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32)]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
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
    delta = (e / e.sum(axis=1, keepdims=True) - y) / x.shape[0]
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

    params, x, y = _mlp_inputs(env.smoke)
    zeros = [np.zeros_like(p) for p in params]
    enp = env.enp
    ep, ez, ex, ey = env.put("ember", (params, zeros, x, y))
    et = enp.asarray(0.0)  # uncommitted: it follows the others to their device
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
        tp = [p.requires_grad_() for p in env.put("torch", params)]
        tx, ty = env.put("torch", (x, y))

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
        jp, jz, jx, jy = env.put("jax", (params, zeros, x, y))
        if first_call:  # a new function object each time: jax.jit traces and compiles again
            impls["jax"] = lambda: jax.block_until_ready(jax.jit(lambda *a: jstep(*a))(jp, jz, jz, 0.0, jx, jy)[0])
        else:
            compiled = jax.jit(jstep)
            impls["jax"] = lambda: jax.block_until_ready(compiled(jp, jz, jz, 0.0, jx, jy)[0])
    return impls


@workload("mlp_adam_step", family="jit", target=0.73, rtol=1e-4, atol=1e-5, tags=("gpu",), jax_target=1.5,
          description="MLP 784-512-512-10 Adam b128")  # fmt: skip
def _(env):
    return _adam_setup(env, first_call=False)


@workload("mlp_adam_first_call", family="jit", rtol=1e-4, atol=1e-5, tags=("gpu",),
          description="same, first call (trace+compile)")  # fmt: skip
def _(env):
    return _adam_setup(env, first_call=True)
