"""ember.nn: a small CNN's training gradient and its per-example gradients, against hand-written NumPy.

The CNN (PyTorch's MNIST example, shrunk): Conv2d(1, 16, 3) - ReLU - MaxPool2d(2) - Conv2d(16, 32, 3) - ReLU -
MaxPool2d(2) - Flatten - Linear(800, 64) - ReLU - Linear(64, 10), on a batch of 64 images of 28x28.

* ``cnn_grad_b64``: the gradient of the batch's mean cross-entropy with respect to every parameter
  (forward and backward). ember eager and ``jit`` run ``ember.grad`` of the ``ember.nn`` model; torch runs
  ``loss.backward()`` of the same ``torch.nn`` model, eagerly; JAX runs ``jax.jit(jax.grad)`` written with
  ``jax.lax``.
* ``per_sample_grads_cnn28``: each example's gradient, ``vmap(grad(loss), in_axes=(None, 0, 0))``: one
  gradient per example and parameter (torch: ``torch.func.vmap(grad(functional_call))``).

The NumPy baseline is written by hand: im2col convolutions (``sliding_window_view`` and matmuls), 2x2
pooling by reshaping, and the backward pass derived by hand; for the per-example gradients the weight
gradients are batched matmuls that keep the example axis.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from benchmarks.registry import workload

BATCH, HW, C1, C2, K, HIDDEN, N_CLASSES = 64, 28, 16, 32, 3, 64, 10
FLAT = C2 * 5 * 5  # 28 -conv-> 26 -pool-> 13 -conv-> 11 -pool-> 5


def _params(rng):
    """[conv1.w, conv1.b, conv2.w, conv2.b, fc1.w, fc1.b, fc2.w, fc2.b] in torch's layouts (OIHW, (out, in))."""
    def uniform(shape, fan_in):
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return [uniform((C1, 1, K, K), K * K), uniform((C1,), K * K), uniform((C2, C1, K, K), C1 * K * K),
            uniform((C2,), C1 * K * K), uniform((HIDDEN, FLAT), FLAT), uniform((HIDDEN,), FLAT),
            uniform((N_CLASSES, HIDDEN), HIDDEN), uniform((N_CLASSES,), HIDDEN)]  # fmt: skip


def _data(rng):
    return rng.standard_normal((BATCH, 1, HW, HW)).astype(np.float32), rng.integers(0, N_CLASSES, BATCH)


# --------------------------------------------------------------------------- the NumPy baseline


def _im2col(a):
    """(B, C, H, W) -> (B, Ho*Wo, C*K*K): every 'VALID' window as a row (a copy)."""
    win = sliding_window_view(a, (K, K), axis=(2, 3))  # (B, C, Ho, Wo, K, K)
    b, c, ho, wo = win.shape[:4]
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(b, ho * wo, c * K * K), ho, wo


def _col2im(dcols, c, ho, wo):
    """The adjoint of _im2col: (B, Ho*Wo, C*K*K) -> (B, C, Ho+K-1, Wo+K-1), adding overlapping windows."""
    b = dcols.shape[0]
    d = dcols.reshape(b, ho, wo, c, K, K)
    out = np.zeros((b, c, ho + K - 1, wo + K - 1), np.float32)
    for i in range(K):
        for j in range(K):
            out[:, :, i:i + ho, j:j + wo] += d[..., i, j].transpose(0, 3, 1, 2)  # fmt: skip
    return out


def _pool(a):
    """2x2 max pool (floor): the output and the one-hot position of each window's maximum."""
    b, c, h, w = a.shape
    win = a[:, :, : h // 2 * 2, : w // 2 * 2].reshape(b, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5)
    win = win.reshape(b, c, h // 2, w // 2, 4)
    arg = win.argmax(axis=-1)
    return np.take_along_axis(win, arg[..., None], -1)[..., 0], arg


def _unpool(d, arg, shape):
    b, c, h, w = shape
    onehot = (np.arange(4) == arg[..., None]) * d[..., None]  # (B, C, h/2, w/2, 4)
    out = np.zeros(shape, np.float32)
    blocks = onehot.reshape(b, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(b, c, h // 2 * 2, w // 2 * 2)
    out[:, :, : h // 2 * 2, : w // 2 * 2] = blocks
    return out


def numpy_cnn_grads(params, x, labels, per_example=False):
    """Gradients of the mean (or, per example, each example's) cross-entropy, by hand."""
    k1, c1, k2, c2, w1, b1, w2, b2 = params
    n = x.shape[0]
    p1, ho1, wo1 = _im2col(x)
    a1 = (p1 @ k1.reshape(C1, -1).T + c1).transpose(0, 2, 1).reshape(n, C1, ho1, wo1)
    h1, arg1 = _pool(np.maximum(a1, 0))
    p2, ho2, wo2 = _im2col(h1)
    a2 = (p2 @ k2.reshape(C2, -1).T + c2).transpose(0, 2, 1).reshape(n, C2, ho2, wo2)
    h2, arg2 = _pool(np.maximum(a2, 0))
    f = h2.reshape(n, -1)
    z = f @ w1.T + b1
    r = np.maximum(z, 0)
    logits = r @ w2.T + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    delta = e / e.sum(axis=1, keepdims=True)
    delta[np.arange(n), labels] -= 1
    if not per_example:
        delta /= n
    outer = (lambda a, b: a[:, :, None] * b[:, None, :]) if per_example else (lambda a, b: a.T @ b)
    bsum = (lambda d, axes: d.sum(axis=axes)) if per_example else (lambda d, axes: d.sum(axis=(0, *axes)))
    gw2, gb2 = outer(delta, r), bsum(delta, ())
    dz = (delta @ w2) * (z > 0)
    gw1, gb1 = outer(dz, f), bsum(dz, ())
    da2 = _unpool((dz @ w1).reshape(h2.shape), arg2, a2.shape) * (a2 > 0)
    d2 = da2.reshape(n, C2, -1)  # (B, C2, P2)
    gk2 = (d2 @ p2 if per_example else np.einsum("bcp,bpk->ck", d2, p2)).reshape(-1, *k2.shape)
    gc2 = bsum(d2, (-1,))
    dh1 = _col2im(d2.transpose(0, 2, 1) @ k2.reshape(C2, -1), C1, ho2, wo2)
    da1 = _unpool(dh1, arg1, a1.shape) * (a1 > 0)
    d1 = da1.reshape(n, C1, -1)
    gk1 = (d1 @ p1 if per_example else np.einsum("bcp,bpk->ck", d1, p1)).reshape(-1, *k1.shape)
    gc1 = bsum(d1, (-1,))
    grads = [gk1, gc1, gk2, gc2, gw1, gb1, gw2, gb2]
    return [g if per_example else g.reshape(p.shape) for g, p in zip(grads, params)]


# --------------------------------------------------------------------------- the peers


def _ember_model(env, params):
    import ember
    from ember import nn
    from ember.nn._tree import replace_named

    keys = ember.random.split(ember.random.key(0), 4)
    model = nn.Sequential(nn.Conv2d(1, C1, K, key=keys[0]), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(C1, C2, K, key=keys[1]), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(FLAT, HIDDEN, key=keys[2]), nn.ReLU(), nn.Linear(HIDDEN, N_CLASSES, key=keys[3]))  # fmt: skip
    names = [name for name, _ in model.named_parameters()]
    return replace_named(model, dict(zip(names, env.put("ember", params))), "benchmark")


def _torch_model(env, params):
    torch = env.torch
    tnn = torch.nn
    model = tnn.Sequential(tnn.Conv2d(1, C1, K), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Conv2d(C1, C2, K), tnn.ReLU(),
                           tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(FLAT, HIDDEN), tnn.ReLU(),
                           tnn.Linear(HIDDEN, N_CLASSES))  # fmt: skip
    with torch.no_grad():
        for p, value in zip(model.parameters(), params):
            p.copy_(torch.tensor(value))
    return model if env.torch_device is None else model.to(env.torch_device)


def _jax_loss(jax, jnp):
    def forward(params, x):
        k1, c1, k2, c2, w1, b1, w2, b2 = params
        dn = ("NCHW", "OIHW", "NCHW")
        pool = lambda h: jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")  # noqa: E731
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(x, k1, (1, 1), "VALID", dimension_numbers=dn) + c1[:, None, None]))
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(h, k2, (1, 1), "VALID", dimension_numbers=dn) + c2[:, None, None]))
        h = jax.nn.relu(h.reshape(h.shape[0], -1) @ w1.T + b1)
        return h @ w2.T + b2

    def loss(params, x, labels):
        logits = forward(params, x)
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - jnp.take_along_axis(logits, labels[:, None], 1)[:, 0])

    return loss


@workload("cnn_grad_b64", family="nn", target=1.0, rtol=1e-4, atol=1e-5,
          description="grad CNN 2conv+pool+2fc b64")  # fmt: skip
def _(env):
    import ember
    from ember import nn

    rng = np.random.default_rng(0)
    params, (x, labels) = _params(rng), _data(rng)
    model = _ember_model(env, params)

    def loss(model, x, labels):
        return nn.functional.cross_entropy(model(x), labels)

    grad = ember.grad(loss)
    jitted = ember.jit(grad)
    ex, ey = env.put("ember", (x, labels.astype(np.int32)))
    impls = {"numpy": lambda: numpy_cnn_grads(params, x, labels),
             "ember": lambda: ember.tree.leaves(grad(model, ex, ey)),
             "ember_jit": lambda: ember.tree.leaves(jitted(model, ex, ey))}  # fmt: skip
    if env.torch is not None:
        torch = env.torch
        tmodel, (tx, ty) = _torch_model(env, params), env.put("torch", (x, labels))

        def torch_grads():
            for p in tmodel.parameters():
                p.grad = None
            torch.nn.functional.cross_entropy(tmodel(tx), ty).backward()
            return [p.grad for p in tmodel.parameters()]

        impls["torch"] = torch_grads
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jgrad = jax.jit(jax.grad(_jax_loss(jax, jnp)))
        jparams, jx, jy = env.put("jax", (params, x, labels))
        impls["jax"] = lambda: jax.block_until_ready(jgrad(jparams, jx, jy))
    return impls


@workload("per_sample_grads_cnn28", family="per_sample", target=1.0, rtol=1e-4, atol=1e-5,
          description="vmap(grad) CNN 28x28 b64")  # fmt: skip
def _(env):
    import ember
    from ember import nn

    rng = np.random.default_rng(1)
    params, (x, labels) = _params(rng), _data(rng)
    model = _ember_model(env, params)

    def loss(model, x, label):  # one example: x (1, 28, 28), label ()
        return nn.functional.cross_entropy(model(x[None]), label[None])

    per_sample = ember.vmap(ember.grad(loss), in_axes=(None, 0, 0))
    jitted = ember.jit(per_sample)
    ex, ey = env.put("ember", (x, labels.astype(np.int32)))
    impls = {"numpy": lambda: numpy_cnn_grads(params, x, labels, per_example=True),
             "ember": lambda: ember.tree.leaves(per_sample(model, ex, ey)),
             "ember_jit": lambda: ember.tree.leaves(jitted(model, ex, ey))}  # fmt: skip
    if env.torch is not None:
        torch = env.torch
        tmodel = _torch_model(env, params)
        tparams = {k: v.detach() for k, v in tmodel.named_parameters()}

        def tloss(p, x, label):
            return torch.nn.functional.cross_entropy(torch.func.functional_call(tmodel, p, (x[None],)), label[None])

        tper_sample = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
        tx, ty = env.put("torch", (x, labels))
        impls["torch"] = lambda: list(tper_sample(tparams, tx, ty).values())
    if env.jnp is not None:
        jax, jnp = env.jax, env.jnp
        jloss = _jax_loss(jax, jnp)
        jper = jax.jit(jax.vmap(jax.grad(lambda p, x, y: jloss(p, x[None], y[None])), in_axes=(None, 0, 0)))
        jparams, jx, jy = env.put("jax", (params, x, labels))
        impls["jax"] = lambda: jax.block_until_ready(jper(jparams, jx, jy))
    return impls


# --------------------------------------------------------------------------- converting a torch model


def _resnet18_sized(torch):
    """ResNet-18's layers and sizes (11.7M parameters) as one torch.nn.Sequential: its convolutions,
    batch norms, ReLUs, pools and classifier in order (the residual additions left out: they hold no weights)."""
    tnn = torch.nn
    layers = [tnn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), tnn.BatchNorm2d(64), tnn.ReLU(),
              tnn.MaxPool2d(3, stride=2, padding=1)]  # fmt: skip
    channels = 64
    for width, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            layers += [tnn.Conv2d(channels, width, 3, stride=s, padding=1, bias=False), tnn.BatchNorm2d(width),
                       tnn.ReLU(), tnn.Conv2d(width, width, 3, padding=1, bias=False), tnn.BatchNorm2d(width)]
            if s != 1 or channels != width:  # the downsampling shortcut's 1x1 convolution
                layers += [tnn.Conv2d(channels, width, 1, stride=s, bias=False), tnn.BatchNorm2d(width)]
            layers.append(tnn.ReLU())
            channels = width
    layers += [tnn.AdaptiveAvgPool2d((1, 1)), tnn.Flatten(), tnn.Linear(512, 1000)]
    return tnn.Sequential(*layers)


@workload("from_torch_resnet18", family="nn", target=None, tags=("needs_torch", "host"),
          description="nn.from_torch ResNet-18 size")  # fmt: skip
def _(env):
    """NumPy's side is the floor of any conversion: copying every tensor of the state dict out of torch."""
    import torch

    from ember import nn

    module = _resnet18_sized(torch).eval()
    names = list(module.state_dict())

    def convert():
        model, state = nn.from_torch(module)
        arrays = dict(model.named_parameters()) | dict(state.named_buffers())
        return [arrays[name] for name in names]

    def copy_out():  # int64 counters become ember's default int, as from_torch makes them (x64 off)
        return [t.detach().numpy().astype(np.int32 if t.dtype == torch.int64 else t.numpy().dtype)
                for t in module.state_dict().values()]

    return {"numpy": copy_out, "ember": convert}
