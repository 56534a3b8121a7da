"""vmap, eager: per-example gradients of an MLP and of a small CNN, and an ensemble of MLPs.

* ``per_sample_grads_mlp``: the gradient of each example's cross-entropy loss
  (MLP 64-128-128-10, tanh, batch 128) with respect to every parameter:
  ``vmap(grad(loss), in_axes=(None, 0, 0))``. Output: one (128, *param.shape)
  array per parameter.
* ``per_sample_grads_cnn``: the same for a CNN on 8x8x1 images (conv 3x3 1->8,
  relu, conv 3x3 8->16, relu, flatten, dense 256->10; NCHW / OIHW, 'VALID'),
  batch 64, with ``ember.lax.conv_general_dilated``.
* ``per_sample_grads_mnist_cnn``: the same for PyTorch's MNIST example network
  (conv 3x3 1->32, relu, conv 3x3 32->64, relu, max-pool 2, flatten 9216,
  dense 128, relu, dense 10, log-softmax + NLL) on 28x28 images, batch 64,
  built with ``ember.nn`` and called through ``nn.functional_call``; torch's
  twin gets the same weights (``nn.to_torch_state_dict``). Issue 20's "jit is
  never slower than eager" row (1.2M parameters: 300 MB of gradients).
* ``per_sample_grads_mlp_large``: the same as the first for an MLP
  784-1024-1024-10 at batch 1024 (1.86M parameters: the output is 7.6 GB of
  float32), a GPU row (``--suite gpu``), tagged ``large`` so that a default CPU
  run leaves it out; ``env.smoke`` shrinks it.
* ``ensemble_8_mlps``: the forward pass of 8 MLPs 64-128-128-10 with stacked
  parameters on one batch of 128: ``vmap(predict, in_axes=(0, None))``.

The NumPy baselines are written by hand: one batched forward pass that keeps
the activations, then the backward pass for all examples at once (batched outer
products for the weight gradients; im2col with ``sliding_window_view`` and
matmuls for the convolutions), with no autodiff and no Python loop over
examples. torch runs ``torch.func`` eagerly; JAX runs ``jax.jit`` of the same
transforms on the CPU (the "JAX jit" column of DESIGN.md's table).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from benchmarks.registry import workload

MLP_SIZES = (64, 128, 128, 10)
MLP_BATCH = 128
LARGE_SIZES, LARGE_BATCH = (784, 1024, 1024, 10), 1024
SMOKE_LARGE_SIZES, SMOKE_LARGE_BATCH = (78, 102, 102, 10), 16  # env.smoke: the same shape of network, small
CNN_BATCH, CNN_HW, CNN_C1, CNN_C2, CNN_K, N_CLASSES = 64, 8, 8, 16, 3, 10
MNIST_BATCH, MNIST_HW, MNIST_C1, MNIST_C2, MNIST_HIDDEN = 64, 28, 32, 64, 128
SMOKE_MNIST_BATCH = 2  # env.smoke: the image size fixes the network (9216 = 64 * 12 * 12), so only the batch shrinks
ENSEMBLE = 8


def in_order(grads: dict, names: list[str]) -> list[Any]:
    """A dict of gradients (one call's) as a list in `names` order, to compare with the NumPy reference."""
    return [grads[k] for k in names]


def _one_hot(rng, n):
    return np.eye(N_CLASSES, dtype=np.float32)[rng.integers(0, N_CLASSES, n)]


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _mlp_params(rng, sizes=MLP_SIZES, lead=()):
    """[w1, b1, w2, b2, ...], w of shape (*lead, n_in, n_out) (x @ w + b), LeCun-normal, small biases."""
    out = []
    for n_in, n_out in itertools.pairwise(sizes):
        out.append((rng.standard_normal((*lead, n_in, n_out)) / np.sqrt(n_in)).astype(np.float32))
        out.append((0.1 * rng.standard_normal((*lead, n_out))).astype(np.float32))
    return out


# --------------------------------------------------------------------------- per-example grads, MLP


class _Lib(NamedTuple):
    """What a one-example loss needs from a library, spelled so that one definition serves all."""

    xp: Any  # the array namespace (tanh, sum)
    logsumexp: Callable
    relu: Callable
    conv: Callable  # (x, kernel, bias): 'VALID' NCHW/OIHW convolution plus a bias per channel


def _per_sample_impls(env, numpy_grads, make_loss, params, x, y):
    """The NumPy reference and ``vmap(grad(loss), in_axes=(None, 0, 0))`` in ember (eager and jitted),
    torch.func (eager) and JAX (jitted) where installed; `make_loss(lib)` builds the one-example loss."""
    import ember
    from ember.scipy.special import logsumexp

    enp, lax = env.enp, ember.lax
    loss = make_loss(_Lib(enp, logsumexp, lambda h: enp.maximum(h, 0.0),
                          lambda a, k, c: lax.conv_general_dilated(a, k, (1, 1), "VALID") + c[:, None, None]))  # fmt: skip
    per_sample = ember.vmap(ember.grad(loss), in_axes=(None, 0, 0))
    jitted = ember.jit(per_sample)
    eparams, ex, ey = env.put("ember", (params, x, y))
    impls = {"numpy": lambda: numpy_grads(params, x, y),
             "ember": lambda: per_sample(eparams, ex, ey),
             "ember_jit": lambda: jitted(eparams, ex, ey)}  # fmt: skip
    if env.torch is not None:
        torch = env.torch
        tloss = make_loss(_Lib(torch, lambda z: torch.logsumexp(z, -1), torch.relu, torch.nn.functional.conv2d))
        tper_sample = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
        tparams, tx, ty = env.put("torch", (tuple(params), x, y))
        impls["torch"] = lambda: tper_sample(tparams, tx, ty)
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jloss = make_loss(_Lib(jnp, jax.nn.logsumexp, jax.nn.relu,
                               lambda a, k, c: jax.lax.conv_general_dilated(a, k, (1, 1), "VALID") + c[:, None, None]))  # fmt: skip
        jper_sample = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
        jparams, jx, jy = env.put("jax", (params, x, y))
        impls["jax"] = lambda: jax.block_until_ready(jper_sample(jparams, jx, jy))
    return impls


def numpy_mlp_per_sample_grads(params, x, y):
    """Per-example gradients of -sum(y * log_softmax(mlp(x))) for every row of x, by hand."""
    ws, bs = params[0::2], params[1::2]
    hs = [x]
    for w, b in zip(ws[:-1], bs[:-1]):
        hs.append(np.tanh(hs[-1] @ w + b))
    delta = _softmax(hs[-1] @ ws[-1] + bs[-1]) - y  # d loss / d logits, (B, 10)
    grads = []
    for k in range(len(ws) - 1, -1, -1):
        h = hs[k]
        grads += [delta, h[:, :, None] * delta[:, None, :]]  # b, then w (reversed below)
        if k:
            delta = (delta @ ws[k].T) * (1 - h * h)
    return grads[::-1]


def _mlp_loss(lib):
    def loss(params, x, y):  # one example: x (n_in,), y one-hot (10,)
        h = x
        for i in range(0, len(params) - 2, 2):
            h = lib.xp.tanh(h @ params[i] + params[i + 1])
        logits = h @ params[-2] + params[-1]
        return lib.logsumexp(logits) - lib.xp.sum(y * logits)

    return loss


def _mlp_setup(env, sizes, batch):
    rng = np.random.default_rng(0)
    params = _mlp_params(rng, sizes)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = _one_hot(rng, batch)
    return _per_sample_impls(env, numpy_mlp_per_sample_grads, _mlp_loss, params, x, y)


@workload("per_sample_grads_mlp", family="per_sample", target=1.0, rtol=1e-4, atol=1e-5, tags=("gpu",),
          jax_target=1.5, description="vmap(grad) MLP 64-128-128-10 b128")  # fmt: skip
def _(env):
    return _mlp_setup(env, MLP_SIZES, MLP_BATCH)


@workload("per_sample_grads_mlp_large", family="per_sample", target=1.0, rtol=1e-4, atol=1e-5,
          tags=("gpu", "large"), jax_target=1.5, description="vmap(grad) MLP 784-1024-1024-10 b1024")  # fmt: skip
def _(env):
    if env.smoke:
        return _mlp_setup(env, SMOKE_LARGE_SIZES, SMOKE_LARGE_BATCH)
    return _mlp_setup(env, LARGE_SIZES, LARGE_BATCH)


# --------------------------------------------------------------------------- per-example grads, CNN


def _im2col(a, k=CNN_K):
    """(B, C, H, W) -> (B, Ho*Wo, C*k*k): every 'VALID' k x k window as a row (a copy)."""
    win = sliding_window_view(a, (k, k), axis=(2, 3))  # (B, C, Ho, Wo, k, k)
    b, c, ho, wo = win.shape[:4]
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(b, ho * wo, c * k * k), ho, wo


def numpy_cnn_per_sample_grads(params, x, y):
    """Per-example gradients of the CNN's cross-entropy, by hand: im2col forward, matmul backward, col2im."""
    k1, c1, k2, c2, w, b = params
    n, k = x.shape[0], CNN_K
    p1, ho1, wo1 = _im2col(x)  # (B, 36, 9)
    a1 = p1 @ k1.reshape(k1.shape[0], -1).T + c1  # (B, 36, 8)   pixels x channels
    h1 = np.maximum(a1, 0)
    h1_nchw = h1.transpose(0, 2, 1).reshape(n, -1, ho1, wo1)
    p2, ho2, wo2 = _im2col(h1_nchw)  # (B, 16, 72)
    k2m = k2.reshape(k2.shape[0], -1)  # (16, 72)
    a2 = p2 @ k2m.T + c2  # (B, 16, 16)
    h2 = np.maximum(a2, 0)
    f = h2.transpose(0, 2, 1).reshape(n, -1)  # flatten as NCHW: (B, 256)
    delta = _softmax(f @ w + b) - y  # (B, 10)
    gw, gb = f[:, :, None] * delta[:, None, :], delta
    da2 = (delta @ w.T).reshape(n, -1, ho2 * wo2).transpose(0, 2, 1) * (a2 > 0)  # (B, 16, 16)
    gk2 = (da2.transpose(0, 2, 1) @ p2).reshape(n, *k2.shape)
    gc2 = da2.sum(axis=1)
    dp2 = (da2 @ k2m).reshape(n, ho2, wo2, -1, k, k)  # d loss / d windows
    dh1 = np.zeros((n, ho1, wo1, dp2.shape[3]), np.float32)  # col2im, NHWC: a loop over the k*k offsets
    for i in range(k):
        for j in range(k):
            dh1[:, i:i + ho2, j:j + wo2, :] += dp2[..., i, j]  # fmt: skip
    da1 = dh1.reshape(n, ho1 * wo1, -1) * (a1 > 0)  # (B, 36, 8)
    gk1 = (da1.transpose(0, 2, 1) @ p1).reshape(n, *k1.shape)
    gc1 = da1.sum(axis=1)
    return [gk1, gc1, gk2, gc2, gw, gb]


@workload("per_sample_grads_cnn", family="per_sample", target=0.6, rtol=1e-4, atol=1e-5, tags=("gpu",),
          jax_target=1.5, description="vmap(grad) CNN 2conv+dense b64")  # fmt: skip
def _(env):
    rng = np.random.default_rng(1)
    k, hw = CNN_K, CNN_HW
    flat = CNN_C2 * (hw - 2 * (k - 1)) ** 2
    params = [(rng.standard_normal((CNN_C1, 1, k, k)) / k).astype(np.float32),
              (0.1 * rng.standard_normal(CNN_C1)).astype(np.float32),
              (rng.standard_normal((CNN_C2, CNN_C1, k, k)) / np.sqrt(CNN_C1 * k * k)).astype(np.float32),
              (0.1 * rng.standard_normal(CNN_C2)).astype(np.float32),
              (rng.standard_normal((flat, N_CLASSES)) / np.sqrt(flat)).astype(np.float32),
              (0.1 * rng.standard_normal(N_CLASSES)).astype(np.float32)]  # fmt: skip
    x = rng.standard_normal((CNN_BATCH, 1, hw, hw)).astype(np.float32)
    y = _one_hot(rng, CNN_BATCH)

    def make_loss(lib):
        def loss(params, x, y):  # one example: x (1, 8, 8), y one-hot (10,)
            k1, c1, k2, c2, w, b = params
            h = lib.relu(lib.conv(x[None], k1, c1))
            h = lib.relu(lib.conv(h, k2, c2))
            logits = h.reshape(-1) @ w + b
            return lib.logsumexp(logits) - lib.xp.sum(y * logits)

        return loss

    return _per_sample_impls(env, numpy_cnn_per_sample_grads, make_loss, params, x, y)


# --------------------------------------------------------------------------- per-example grads, MNIST CNN


def mnist_cnn_classes(env, c1: int = MNIST_C1, c2: int = MNIST_C2, hidden: int = MNIST_HIDDEN):
    """PyTorch's MNIST example network (without its dropout; conv c1, conv c2, pool, fc hidden, fc 10) in
    ember and, when torch is in the run, in torch. The tutorials' SimpleCNN is the same with smaller sizes."""
    import ember
    from ember import nn
    from ember.nn import functional as F

    flat = c2 * ((MNIST_HW - 4) // 2) ** 2  # two 'VALID' 3x3 convs, then a 2x2 pool: 9216 for c2 = 64

    class MnistCNN(nn.Module):
        conv1: nn.Conv2d
        conv2: nn.Conv2d
        fc1: nn.Linear
        fc2: nn.Linear

        def __init__(self, *, key):
            k1, k2, k3, k4 = ember.random.split(key, 4)
            self.conv1 = nn.Conv2d(1, c1, 3, 1, key=k1)
            self.conv2 = nn.Conv2d(c1, c2, 3, 1, key=k2)
            self.fc1 = nn.Linear(flat, hidden, key=k3)
            self.fc2 = nn.Linear(hidden, N_CLASSES, key=k4)

        def __call__(self, x, *, key=None):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = F.relu(self.fc1(x.reshape(x.shape[0], -1)))
            return F.log_softmax(self.fc2(x), dim=1)

    if env.torch is None:
        return MnistCNN, None
    torch = env.torch
    TF = torch.nn.functional

    class TorchMnistCNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(1, c1, 3, 1)
            self.conv2 = torch.nn.Conv2d(c1, c2, 3, 1)
            self.fc1 = torch.nn.Linear(flat, hidden)
            self.fc2 = torch.nn.Linear(hidden, N_CLASSES)

        def forward(self, x):
            x = TF.relu(self.conv1(x))
            x = TF.max_pool2d(TF.relu(self.conv2(x)), 2)
            x = TF.relu(self.fc1(torch.flatten(x, 1)))
            return TF.log_softmax(self.fc2(x), dim=1)

    return MnistCNN, TorchMnistCNN


def numpy_mnist_cnn_per_sample_grads(params, x, y):
    """Per-example gradients of the MNIST CNN's NLL of log-softmax, by hand, in ``named_parameters`` order:
    im2col forward, the pool's gradient to the maximum of each window, matmul backward, col2im."""
    k1, c1, k2, c2, w1, b1, w2, b2 = params
    n = x.shape[0]
    p1, ho1, wo1 = _im2col(x)  # (B, 676, 9)
    a1 = p1 @ k1.reshape(k1.shape[0], -1).T + c1  # (B, 676, 32)   pixels x channels
    h1 = np.maximum(a1, 0)
    p2, ho2, wo2 = _im2col(h1.transpose(0, 2, 1).reshape(n, -1, ho1, wo1))  # (B, 576, 288)
    k2m = k2.reshape(k2.shape[0], -1)  # (64, 288)
    a2 = p2 @ k2m.T + c2  # (B, 576, 64)
    h2 = np.maximum(a2, 0).reshape(n, ho2 // 2, 2, wo2 // 2, 2, -1)  # NHWC, each 2x2 window on axes 2 and 4
    pooled = h2.max(axis=(2, 4))  # (B, 12, 12, 64)
    f = pooled.transpose(0, 3, 1, 2).reshape(n, -1)  # flatten as NCHW: (B, 9216)
    z = f @ w1.T + b1
    h3 = np.maximum(z, 0)
    delta = _softmax(h3 @ w2.T + b2) - y  # d loss / d logits, (B, 10)
    gw2, gb2 = delta[:, :, None] * h3[:, None, :], delta
    dz = (delta @ w2) * (z > 0)
    gw1, gb1 = dz[:, :, None] * f[:, None, :], dz
    dpool = (dz @ w1).reshape(pooled.transpose(0, 3, 1, 2).shape).transpose(0, 2, 3, 1)  # NHWC
    # every element equal to its window's maximum gets the window's gradient: ties are at 0 only (a.s.), where
    # the relu's gradient below is 0 whichever element a library picks
    dh2 = (h2 == pooled[:, :, None, :, None, :]) * dpool[:, :, None, :, None, :]
    da2 = dh2.reshape(a2.shape) * (a2 > 0)  # (B, 576, 64)
    gk2, gc2 = (da2.transpose(0, 2, 1) @ p2).reshape(n, *k2.shape), da2.sum(axis=1)
    dp2 = (da2 @ k2m).reshape(n, ho2, wo2, -1, 3, 3)  # d loss / d windows
    dh1 = np.zeros((n, ho1, wo1, dp2.shape[3]), np.float32)  # col2im, NHWC: a loop over the 3x3 offsets
    for i in range(3):
        for j in range(3):
            dh1[:, i:i + ho2, j:j + wo2, :] += dp2[..., i, j]  # fmt: skip
    da1 = dh1.reshape(a1.shape) * (a1 > 0)
    gk1, gc1 = (da1.transpose(0, 2, 1) @ p1).reshape(n, *k1.shape), da1.sum(axis=1)
    return [gk1, gc1, gk2, gc2, gw1, gb1, gw2, gb2]


@workload("per_sample_grads_mnist_cnn", family="per_sample", target=None, rtol=1e-4, atol=1e-5,
          description="vmap(grad) MNIST CNN 32/64 b64")  # fmt: skip
def _(env):
    import ember
    from ember import nn
    from ember.nn import functional as F

    batch = SMOKE_MNIST_BATCH if env.smoke else MNIST_BATCH
    MnistCNN, TorchMnistCNN = mnist_cnn_classes(env)
    model = MnistCNN(key=ember.random.key(20))
    names = [name for name, _ in model.named_parameters()]
    params = [np.asarray(p) for _, p in model.named_parameters()]
    rng = np.random.default_rng(20)
    x = rng.standard_normal((batch, 1, MNIST_HW, MNIST_HW)).astype(np.float32)
    labels = rng.integers(0, N_CLASSES, batch)
    y = np.eye(N_CLASSES, dtype=np.float32)[labels]

    if env.ember_device is not None:
        model = ember.device_put(model, env.ember_device)

    def loss(params, x, label):  # one example: x (1, 28, 28), an integer label
        return F.nll_loss(nn.functional_call(model, params, x[None]), label[None])

    per_sample = ember.vmap(ember.grad(loss), in_axes=(None, 0, 0))
    jitted = ember.jit(per_sample)
    eparams, ex, elabels = env.put("ember", (dict(zip(names, params)), x, labels.astype(np.int32)))
    impls = {"numpy": lambda: numpy_mnist_cnn_per_sample_grads(params, x, y),
             "ember": lambda: in_order(per_sample(eparams, ex, elabels), names),
             "ember_jit": lambda: in_order(jitted(eparams, ex, elabels), names)}  # fmt: skip
    if env.torch is not None:
        torch = env.torch
        tmodel = TorchMnistCNN()
        tmodel.load_state_dict(nn.to_torch_state_dict(model))
        if env.torch_device is not None:
            tmodel = tmodel.to(env.torch_device)
        tf = torch.func

        def tloss(params, x, label):
            return torch.nn.functional.nll_loss(tf.functional_call(tmodel, params, (x[None],)), label[None])

        tper_sample = tf.vmap(tf.grad(tloss), in_dims=(None, 0, 0))
        tparams, tx, tlabels = env.put("torch", (dict(zip(names, params)), x, labels))
        impls["torch"] = lambda: in_order(tper_sample(tparams, tx, tlabels), names)
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp

        def conv(a, k, c):
            return jax.lax.conv_general_dilated(a, k, (1, 1), "VALID") + c[:, None, None]

        def jloss(params, x, y):  # the same network, written out: the parameter list in `names` order
            k1, c1, k2, c2, w1, b1, w2, b2 = params
            h = jax.nn.relu(conv(jax.nn.relu(conv(x[None], k1, c1)), k2, c2))
            h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
            logits = jax.nn.relu(h.reshape(-1) @ w1.T + b1) @ w2.T + b2
            return -jnp.sum(y * jax.nn.log_softmax(logits))

        jper_sample = jax.jit(jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0)))
        jparams, jx, jy = env.put("jax", (params, x, y))
        impls["jax"] = lambda: jax.block_until_ready(jper_sample(jparams, jx, jy))
    return impls


# --------------------------------------------------------------------------- ensemble forward


def numpy_ensemble(params, x):
    """Logits of every member: matmul broadcasts the (M, n_in, n_out) weights against the shared batch."""
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1][:, None, :]
        if i < len(params) - 2:
            h = np.tanh(h)
    return h  # (M, B, 10)


@workload("ensemble_8_mlps", family="vmap", target=None, rtol=1e-4, atol=1e-5,
          description="vmap fwd 8 MLPs 64-128-128-10 b128")  # fmt: skip
def _(env):
    import ember

    enp = env.enp
    rng = np.random.default_rng(2)
    params = _mlp_params(rng, lead=(ENSEMBLE,))
    x = rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32)

    def make_predict(xp):
        def predict(params, x):  # one member's parameters, the whole batch
            h = x
            for i in range(0, len(params) - 2, 2):
                h = xp.tanh(h @ params[i] + params[i + 1])
            return h @ params[-2] + params[-1]

        return predict

    ensemble = ember.vmap(make_predict(enp), in_axes=(0, None))
    eparams, ex = env.put("ember", (params, x))
    impls = {"numpy": lambda: numpy_ensemble(params, x), "ember": lambda: ensemble(eparams, ex)}
    jit_ensemble = ember.jit(ensemble)
    impls["ember_jit"] = lambda: jit_ensemble(eparams, ex)
    if env.torch is not None:
        torch = env.torch
        tparams, tx = env.put("torch", (tuple(params), x))
        tensemble = torch.func.vmap(make_predict(torch), in_dims=(0, None))
        impls["torch"] = lambda: tensemble(tparams, tx)
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jparams, jx = env.put("jax", (params, x))
        jensemble = jax.jit(jax.vmap(make_predict(jnp), in_axes=(0, None)))
        impls["jax"] = lambda: jensemble(jparams, jx).block_until_ready()
    return impls
