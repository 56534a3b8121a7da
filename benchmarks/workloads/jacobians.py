"""Jacobians and Hessians, eager: jacrev, jacfwd, hessian, forward-over-reverse HVPs, and an empirical NTK.

* ``hessian_logistic_1000``: the dense (1000, 1000) Hessian of the mean
  logistic loss over 500 examples, ``ember.hessian(loss)(w)``; by hand it is
  ``X.T @ (X * p(1-p)[:, None]) / n``.
* ``hessian_tanh_512_32``: the (32, 512, 512) Hessian of the vector function
  ``x -> tanh(W @ x + b)`` (512 -> 32) in x, ``ember.hessian(f)(x)``; by hand
  ``tanh''(z_i) W_i W_i^T`` for each output i. Issue 20's "jit is never slower
  than eager" row.
* ``jacrev_tanh_256`` / ``jacfwd_tanh_256``: the (256, 256) Jacobian of
  ``x -> tanh(W @ x)``; by hand ``(1 - y**2)[:, None] * W``.
* ``hvp_mlp``: a Hessian-vector product of the mean squared error of a
  2-layer tanh net (128 -> 256 -> 1, 256 examples) in all its parameters, by
  forward-over-reverse ``jvp(grad(loss), (params,), (v,))``; by hand with
  Pearlmutter's R-operator (the directional derivative of the hand-written
  backward pass).
* ``empirical_ntk``: the empirical neural tangent kernel ``J1 @ J2.T`` of a
  tanh MLP 16-64-64-1 between two batches of 32 inputs, where J holds each
  example's gradient of the scalar output in all parameters:
  ``vmap(jacrev(f), in_axes=(None, 0))`` then a contraction over the parameter
  leaves; by hand the per-example Jacobians are batched outer products.

The NumPy baselines compute the same quantities by hand (no autodiff, no
Python loop over examples, basis vectors or parameters). torch runs
``torch.func`` eagerly; JAX runs ``jax.jit`` of the same transforms on the CPU
(the "JAX jit" column of DESIGN.md's table).
"""

from __future__ import annotations

import itertools

import numpy as np

from benchmarks.registry import register, workload

LOGISTIC_N, LOGISTIC_D = 500, 1000
SMOKE_LOGISTIC_N, SMOKE_LOGISTIC_D = 50, 100  # env.smoke
TANH_N = 256
HESS_IN, HESS_OUT = 512, 32
SMOKE_HESS_IN, SMOKE_HESS_OUT = 64, 8  # env.smoke
HVP_N, HVP_D, HVP_H = 256, 128, 256
NTK_SIZES, NTK_BATCH = (16, 64, 64, 1), 32


# --------------------------------------------------------------------------- Hessian of the logistic loss


def _logistic_inputs(smoke=False):
    n, d = (SMOKE_LOGISTIC_N, SMOKE_LOGISTIC_D) if smoke else (LOGISTIC_N, LOGISTIC_D)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = (rng.random(n) < 0.5).astype(np.float32)
    w = (rng.standard_normal(d) / np.sqrt(d)).astype(np.float32)
    return x, y, w


def numpy_logistic_hessian(x, w):
    p = 1 / (1 + np.exp(-(x @ w)))
    return x.T @ (x * (p * (1 - p))[:, None]) / np.float32(x.shape[0])


@workload("hessian_logistic_1000", family="hessian", target=1.5, rtol=1e-4, atol=1e-5, tags=("gpu",),
          description="hessian logistic 1000 params")  # fmt: skip
def _(env):
    import ember

    enp = env.enp
    x, y, w = _logistic_inputs(env.smoke)

    def make_loss(xp, softplus, x, y):
        def loss(w):
            z = x @ w
            return xp.mean(softplus(z) - y * z)

        return loss

    ex, ey, ew = env.put("ember", (x, y, w))
    hess = ember.hessian(make_loss(enp, lambda z: enp.logaddexp(0.0, z), ex, ey))
    impls = {"numpy": lambda: numpy_logistic_hessian(x, w), "ember": lambda: hess(ew)}
    jit_hess = ember.jit(hess)
    impls["ember_jit"] = lambda: jit_hess(ew)
    if env.torch is not None:
        torch = env.torch
        tx, ty, tw = env.put("torch", (x, y, w))
        thess = torch.func.hessian(make_loss(torch, torch.nn.functional.softplus, tx, ty))
        impls["torch"] = lambda: thess(tw)
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jx, jy, jw = env.put("jax", (x, y, w))
        jhess = jax.jit(jax.hessian(make_loss(jnp, jax.nn.softplus, jx, jy)))
        impls["jax"] = lambda: jhess(jw).block_until_ready()
    return impls


# --------------------------------------------------------------------------- Hessian of tanh(W x + b)


def numpy_tanh_hessian(w, b, x):
    """H[i] = tanh''(z_i) * outer(W_i, W_i) with z = W @ x + b and tanh'' = -2 tanh (1 - tanh**2)."""
    y = np.tanh(w @ x + b)
    return (-2 * y * (1 - y * y))[:, None, None] * w[:, :, None] * w[:, None, :]


@workload(f"hessian_tanh_{HESS_IN}_{HESS_OUT}", family="hessian", target=None, rtol=1e-4, atol=1e-6,
          description=f"hessian tanh(Wx+b) {HESS_IN}->{HESS_OUT}")  # fmt: skip
def _(env):
    import ember

    enp = env.enp
    d_in, d_out = (SMOKE_HESS_IN, SMOKE_HESS_OUT) if env.smoke else (HESS_IN, HESS_OUT)
    rng = np.random.default_rng(20)
    # scaled so that tanh is not saturated: the Hessian is not mostly zeros
    w = (rng.standard_normal((d_out, d_in)) / np.sqrt(d_in)).astype(np.float32)
    b = (0.1 * rng.standard_normal(d_out)).astype(np.float32)
    x = rng.standard_normal(d_in).astype(np.float32)
    ew, eb, ex = env.put("ember", (w, b, x))
    hess = ember.hessian(lambda x: enp.tanh(ew @ x + eb))
    jit_hess = ember.jit(hess)
    impls = {"numpy": lambda: numpy_tanh_hessian(w, b, x), "ember": lambda: hess(ex),
             "ember_jit": lambda: jit_hess(ex)}  # fmt: skip
    if env.torch is not None:
        torch = env.torch
        tw, tb, tx = env.put("torch", (w, b, x))
        thess = torch.func.hessian(lambda x: torch.tanh(tw @ x + tb))
        impls["torch"] = lambda: thess(tx)
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jw, jb, jx = env.put("jax", (w, b, x))
        jhess = jax.jit(jax.hessian(lambda x: jnp.tanh(jw @ x + jb)))
        impls["jax"] = lambda: jhess(jx).block_until_ready()
    return impls


# --------------------------------------------------------------------------- Jacobian of tanh(W x)


def _tanh_inputs():
    rng = np.random.default_rng(4)
    w = (rng.standard_normal((TANH_N, TANH_N)) / np.sqrt(TANH_N)).astype(np.float32)
    x = rng.standard_normal(TANH_N).astype(np.float32)
    return w, x


def numpy_tanh_jacobian(w, x):
    y = np.tanh(w @ x)
    return (1 - y * y)[:, None] * w


def _tanh_jacobian_setup(env, mode):
    import ember

    enp = env.enp
    w, x = _tanh_inputs()
    ew, ex = env.put("ember", (w, x))
    jac = getattr(ember, mode)(lambda x: enp.tanh(ew @ x))
    impls = {"numpy": lambda: numpy_tanh_jacobian(w, x), "ember": lambda: jac(ex)}
    jit_jac = ember.jit(jac)
    impls["ember_jit"] = lambda: jit_jac(ex)
    if env.torch is not None:
        torch = env.torch
        tw, tx = env.put("torch", (w, x))
        tjac = getattr(torch.func, mode)(lambda x: torch.tanh(tw @ x))
        impls["torch"] = lambda: tjac(tx)
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jw, jx = env.put("jax", (w, x))
        jjac = jax.jit(getattr(jax, mode)(lambda x: jnp.tanh(jw @ x)))
        impls["jax"] = lambda: jjac(jx).block_until_ready()
    return impls


for _mode in ("jacrev", "jacfwd"):
    register(f"{_mode}_tanh_{TANH_N}", lambda env, mode=_mode: _tanh_jacobian_setup(env, mode), family="jacobian",
             target=2.0, rtol=1e-5, atol=1e-6, description=f"{_mode} tanh(W @ x) {TANH_N}->{TANH_N}")  # fmt: skip


# --------------------------------------------------------------------------- Hessian-vector product


def _hvp_inputs():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((HVP_N, HVP_D)).astype(np.float32)
    t = rng.standard_normal(HVP_N).astype(np.float32)
    params = [(rng.standard_normal((HVP_H, HVP_D)) / np.sqrt(HVP_D)).astype(np.float32),
              (rng.standard_normal(HVP_H) / np.sqrt(HVP_H)).astype(np.float32)]  # fmt: skip
    vs = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
    return params, vs, x, t


def numpy_mlp_hvp(params, vs, x, t):
    """H @ v for loss = mean((tanh(x @ w1.T) @ w2 - t)**2) / 2 by the R-operator: R{.} is the derivative
    along (v1, v2) of each quantity of the forward and the backward pass."""
    (w1, w2), (v1, v2) = params, vs
    n = np.float32(x.shape[0])
    h = np.tanh(x @ w1.T)  # (n, H)
    s = 1 - h * h  # tanh'
    g = (h @ w2 - t) / n  # d loss / d f, (n,)
    dh = g[:, None] * w2  # d loss / d h
    # the directional derivatives
    rh = s * (x @ v1.T)
    rg = (rh @ w2 + h @ v2) / n
    r_w2 = rh.T @ g + h.T @ rg
    r_da = (rg[:, None] * w2 + g[:, None] * v2) * s - 2 * dh * h * rh  # R{dh * s}
    r_w1 = r_da.T @ x
    return [r_w1, r_w2]


@workload("hvp_mlp", family="hessian", target=None, rtol=1e-4, atol=1e-5,
          description="jvp(grad) tanh net 128-256-1")  # fmt: skip
def _(env):
    import ember

    enp = env.enp
    params, vs, x, t = _hvp_inputs()

    def make_loss(xp, x, t):
        def loss(params):
            w1, w2 = params
            r = xp.tanh(x @ w1.T) @ w2 - t
            return xp.mean(r * r) / 2

        return loss

    ex, et, eparams, evs = env.put("ember", (x, t, params, vs))
    egrad = ember.grad(make_loss(enp, ex, et))
    impls = {"numpy": lambda: numpy_mlp_hvp(params, vs, x, t),
             "ember": lambda: ember.jvp(egrad, (eparams,), (evs,))[1]}  # fmt: skip
    jit_hvp = ember.jit(lambda p, v: ember.jvp(egrad, (p,), (v,))[1])
    impls["ember_jit"] = lambda: jit_hvp(eparams, evs)
    if env.torch is not None:
        torch = env.torch
        tx, tt, tparams, tvs = env.put("torch", (x, t, params, vs))
        tgrad = torch.func.grad(make_loss(torch, tx, tt))
        impls["torch"] = lambda: torch.func.jvp(tgrad, (tparams,), (tvs,))[1]
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jx, jt, jparams, jvs = env.put("jax", (x, t, params, vs))
        jgrad = jax.grad(make_loss(jnp, jx, jt))
        jhvp = jax.jit(lambda p, v: jax.jvp(jgrad, (p,), (v,))[1])
        impls["jax"] = lambda: jax.block_until_ready(jhvp(jparams, jvs))
    return impls


# --------------------------------------------------------------------------- empirical NTK


def _ntk_inputs():
    rng = np.random.default_rng(6)
    params = []
    for n_in, n_out in itertools.pairwise(NTK_SIZES):
        params.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32))
        params.append((0.1 * rng.standard_normal(n_out)).astype(np.float32))
    x1 = rng.standard_normal((NTK_BATCH, NTK_SIZES[0])).astype(np.float32)
    x2 = rng.standard_normal((NTK_BATCH, NTK_SIZES[0])).astype(np.float32)
    return params, x1, x2


def numpy_mlp_jacobian(params, x):
    """(B, n_params): each row the gradient of the scalar output for one example, all leaves flattened."""
    ws, bs = params[0::2], params[1::2]
    hs = [x]
    for w, b in zip(ws[:-1], bs[:-1]):
        hs.append(np.tanh(hs[-1] @ w + b))
    n = x.shape[0]
    delta = np.ones((n, 1), np.float32)  # d f / d f
    blocks = []
    for k in range(len(ws) - 1, -1, -1):
        h = hs[k]
        blocks += [delta, (h[:, :, None] * delta[:, None, :]).reshape(n, -1)]  # b, then w
        if k:
            delta = (delta @ ws[k].T) * (1 - h * h)
    return np.concatenate(blocks[::-1], axis=1)


def numpy_ntk(params, x1, x2):
    return numpy_mlp_jacobian(params, x1) @ numpy_mlp_jacobian(params, x2).T


@workload("empirical_ntk", family="jacobian", target=None, rtol=1e-4, atol=1e-5,
          description="NTK vmap(jacrev) 16-64-64-1 32x32")  # fmt: skip
def _(env):
    import ember

    enp = env.enp
    params, x1, x2 = _ntk_inputs()

    def make_f(xp):
        def f(params, x):  # one example: x (16,) -> a scalar
            h = x
            for i in range(0, len(params) - 2, 2):
                h = xp.tanh(h @ params[i] + params[i + 1])
            return (h @ params[-2] + params[-1])[0]

        return f

    def contract(j1, j2):
        """sum over the parameter leaves of J1_leaf @ J2_leaf.T (leaves flattened per example)."""
        out = None
        for a, b in zip(j1, j2):
            k = a.reshape(a.shape[0], -1) @ b.reshape(b.shape[0], -1).T
            out = k if out is None else out + k
        return out

    ejac = ember.vmap(ember.jacrev(make_f(enp)), in_axes=(None, 0))
    eparams, ex1, ex2 = env.put("ember", (params, x1, x2))
    impls = {"numpy": lambda: numpy_ntk(params, x1, x2),
             "ember": lambda: contract(ejac(eparams, ex1), ejac(eparams, ex2))}  # fmt: skip
    jit_ntk = ember.jit(lambda p, a, b: contract(ejac(p, a), ejac(p, b)))
    impls["ember_jit"] = lambda: jit_ntk(eparams, ex1, ex2)
    if env.torch is not None:
        torch = env.torch
        tparams, tx1, tx2 = env.put("torch", (tuple(params), x1, x2))
        tjac = torch.func.vmap(torch.func.jacrev(make_f(torch)), in_dims=(None, 0))
        impls["torch"] = lambda: contract(tjac(tparams, tx1), tjac(tparams, tx2))
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jparams, jx1, jx2 = env.put("jax", (params, x1, x2))
        jjac = jax.vmap(jax.jacrev(make_f(jnp)), in_axes=(None, 0))
        jntk = jax.jit(lambda p, a, b: contract(jjac(p, a), jjac(p, b)))
        impls["jax"] = lambda: jntk(jparams, jx1, jx2).block_until_ready()
    return impls
