"""DP-SGD's per-example clipped gradients (issue 19): ember.privacy's ghost norms against materialised
per-example gradients, and against PyTorch (Opacus when it imports).

Each row computes the same thing, ``Σ_i g_i · min(1, C / ||g_i||)`` over a batch, for every parameter
(``g_i`` the gradient of example i's cross-entropy; ``C`` near the median norm, so about half the
examples are clipped), on two models:

* the demo's MLP 64-128-128-10 (tanh) at batch 1024, ``x @ w + b``;
* the small CNN of ``per_sample.py`` (conv 3x3 1->8, relu, conv 3x3 8->16, relu, flatten, dense
  256->10; 8x8x1 images, NCHW / OIHW, 'VALID') at batch 256.

Two rows per model, because the table has one ember column per mode:

* ``privacy_ghost_*``: ember = ``ember.privacy.clipped_grad(loss, C)`` eager, ember_jit = the same under
  ``ember.jit`` (the weights' norms by the ghost-norm identity, nothing per example but the biases'
  gradients); torch = Opacus' ghost clipping (``GradSampleModuleFastGradientClipping``: its two
  backward passes, as its ``DPLossFastGradientClipping.backward`` runs them) when Opacus imports,
  else ``torch.func.vmap(grad)`` + clipping.
* ``privacy_materialised_*``: ember = ``vmap(grad)`` + clipping eager, ember_jit = the same jitted;
  torch = ``torch.func.vmap(grad)`` + clipping.

NumPy, the reference: the per-example gradients by hand (``per_sample.py``'s backward passes), clipped
and summed. Peak memory is measured by ``benchmarks/privacy_memory.py`` (each implementation in a
child process), which builds the same callables from `IMPLS`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.registry import workload
from benchmarks.workloads.per_sample import (CNN_C1, CNN_C2, CNN_HW, CNN_K, N_CLASSES, _mlp_params,
                                             numpy_cnn_per_sample_grads, numpy_mlp_per_sample_grads)

MLP_SIZES, MLP_BATCH, CNN_BATCH = (64, 128, 128, 10), 1024, 256
SMOKE_BATCH = 16
#: the clipping norms: about the median per-example gradient norm of each problem (seed 0)
CLIP = {"mlp": 8.7, "cnn": 7.2}
DESCRIPTION = {"mlp": "MLP b1024", "cnn": "CNN b256"}


def problem(model: str, smoke: bool = False) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """(params, x, y one-hot) in NumPy: the model's parameters as ``per_sample.py`` lays them out, a batch."""
    rng = np.random.default_rng(0)
    if model == "mlp":
        params = _mlp_params(rng, MLP_SIZES)
        batch = SMOKE_BATCH if smoke else MLP_BATCH
        x = rng.standard_normal((batch, MLP_SIZES[0])).astype(np.float32)
    else:
        k1 = (rng.standard_normal((CNN_C1, 1, CNN_K, CNN_K)) / 3).astype(np.float32)
        k2 = (rng.standard_normal((CNN_C2, CNN_C1, CNN_K, CNN_K)) / np.sqrt(CNN_C1 * 9)).astype(np.float32)
        n_flat = CNN_C2 * (CNN_HW - 2 * (CNN_K - 1)) ** 2
        w = (rng.standard_normal((n_flat, N_CLASSES)) / np.sqrt(n_flat)).astype(np.float32)
        params = [k1, np.zeros(CNN_C1, np.float32), k2, np.zeros(CNN_C2, np.float32), w,
                  np.zeros(N_CLASSES, np.float32)]  # fmt: skip
        batch = SMOKE_BATCH if smoke else CNN_BATCH
        x = rng.standard_normal((batch, 1, CNN_HW, CNN_HW)).astype(np.float32)
    y = np.eye(N_CLASSES, dtype=np.float32)[rng.integers(0, N_CLASSES, batch)]
    return params, x, y


def _clip_sum_numpy(grads: list[np.ndarray], clip: float) -> list[np.ndarray]:
    batch = grads[0].shape[0]
    norms = np.sqrt(sum(np.sum(g.reshape(batch, -1).astype(np.float64) ** 2, axis=1) for g in grads))
    scale = np.minimum(1.0, clip / norms).astype(np.float32)
    return [np.tensordot(scale, g, axes=1) for g in grads]


def numpy_clipped_sum(model: str, params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    per_example = numpy_mlp_per_sample_grads if model == "mlp" else numpy_cnn_per_sample_grads
    return _clip_sum_numpy(per_example(params, x, y), CLIP[model])


# --------------------------------------------------------------------------- ember


def ember_loss(model: str) -> Callable[..., Any]:
    """One example's cross-entropy, ``loss(params, x, y)`` with y one-hot."""
    import ember.numpy as enp
    from ember import lax
    from ember.scipy.special import logsumexp

    if model == "mlp":
        def loss(params, x, y):
            h = x
            for i in range(0, len(params) - 2, 2):
                h = enp.tanh(h @ params[i] + params[i + 1])
            logits = h @ params[-2] + params[-1]
            return logsumexp(logits) - enp.sum(y * logits)
    else:
        def loss(params, x, y):  # x: (1, H, W), one image
            k1, c1, k2, c2, w, b = params
            h = enp.maximum(lax.conv_general_dilated(x[None], k1, (1, 1), "VALID")[0] + c1[:, None, None], 0.0)
            h = enp.maximum(lax.conv_general_dilated(h[None], k2, (1, 1), "VALID")[0] + c2[:, None, None], 0.0)
            logits = h.reshape(-1) @ w + b
            return logsumexp(logits) - enp.sum(y * logits)
    return loss


def ember_ghost(model: str, params: Any, x: Any, y: Any, jit: bool) -> Callable[[], Any]:
    import ember
    from ember import privacy

    clipped = privacy.clipped_grad(ember_loss(model), CLIP[model])
    fn = ember.jit(clipped) if jit else clipped
    return lambda: fn(params, (x, y))


def ember_materialised(model: str, params: Any, x: Any, y: Any, jit: bool) -> Callable[[], Any]:
    import ember
    import ember.numpy as enp

    per_example = ember.vmap(ember.grad(ember_loss(model)), in_axes=(None, 0, 0))
    clip = CLIP[model]

    def clipped_sum(params, x, y):
        grads = per_example(params, x, y)
        batch = x.shape[0]
        norms = enp.sqrt(sum(enp.sum(g.reshape(batch, -1) ** 2, axis=1) for g in grads))
        scale = enp.minimum(1.0, clip / norms)
        return [enp.tensordot(scale, g, axes=1) for g in grads]

    fn = ember.jit(clipped_sum) if jit else clipped_sum
    return lambda: fn(params, x, y)


# --------------------------------------------------------------------------- torch


def torch_module(torch: Any, model: str, params: list[np.ndarray]) -> Any:
    """The model as torch.nn layers holding `params` (Linear weights transposed: torch computes x @ W.T)."""
    nn = torch.nn
    if model == "mlp":
        layers = []
        for n_in, n_out in itertools.pairwise(MLP_SIZES):
            layers += [nn.Linear(n_in, n_out), nn.Tanh()]
        module = nn.Sequential(*layers[:-1])
        tensors = [torch.tensor(p.T.copy() if p.ndim == 2 else p) for p in params]
    else:
        n_flat = params[4].shape[0]
        module = nn.Sequential(nn.Conv2d(1, CNN_C1, CNN_K), nn.ReLU(), nn.Conv2d(CNN_C1, CNN_C2, CNN_K), nn.ReLU(),
                               nn.Flatten(), nn.Linear(n_flat, N_CLASSES))  # fmt: skip
        tensors = [torch.tensor(p.T.copy() if i == 4 else p) for i, p in enumerate(params)]
    with torch.no_grad():
        for p, t in zip(module.parameters(), tensors, strict=True):
            p.copy_(t)
    return module


def _as_numpy_layout(model: str, grads: list[Any]) -> list[Any]:
    """torch's gradients in the NumPy reference's layout (Linear weights back to (in, out))."""
    if model == "mlp":
        return [g.T if i % 2 == 0 else g for i, g in enumerate(grads)]
    return [g.T if i == 4 else g for i, g in enumerate(grads)]


def torch_materialised(torch: Any, model: str, params: list[np.ndarray], x: Any, y: Any) -> Callable[[], Any]:
    """torch.func.vmap(grad) of the module (through torch.func.functional_call), clipped and summed."""
    module = torch_module(torch, model, params)
    names = [name for name, _ in module.named_parameters()]
    weights = {name: p.detach() for name, p in module.named_parameters()}
    labels = y.argmax(-1)
    clip = CLIP[model]

    def loss(w, xi, li):
        out = torch.func.functional_call(module, w, (xi[None],))
        return torch.nn.functional.cross_entropy(out, li[None])

    per_example = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))

    def clipped_sum():
        grads = per_example(weights, x, labels)
        flat = [grads[n].reshape(x.shape[0], -1) for n in names]
        norms = torch.sqrt(sum((f * f).sum(1) for f in flat))
        scale = torch.clamp(clip / norms, max=1.0)
        return _as_numpy_layout(model, [torch.tensordot(scale, grads[n], dims=1) for n in names])

    return clipped_sum


def opacus_ghost(torch: Any, model: str, params: list[np.ndarray], x: Any, y: Any) -> Callable[[], Any]:
    """Opacus' ghost clipping: a first backward pass whose hooks compute the per-example norms, then a second of
    the loss weighted by ``min(1, C / (norm + 1e-6))``, hooks off (``DPTensorFastGradientClipping.backward``)."""
    import warnings

    from opacus.grad_sample import GradSampleModuleFastGradientClipping

    # its hooks on the first layer, whose input needs no gradient: torch warns on every call, harmlessly
    warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
    module = torch_module(torch, model, params)
    wrapped = GradSampleModuleFastGradientClipping(module, batch_first=True, loss_reduction="sum",
                                                   max_grad_norm=CLIP[model], use_ghost_clipping=True)  # fmt: skip
    labels = y.argmax(-1)
    trainable = list(module.parameters())

    def clipped_sum():
        for p in trainable:
            p.grad = None
        per_example = torch.nn.functional.cross_entropy(wrapped(x), labels, reduction="none")
        per_example.sum().backward(retain_graph=True)
        coeff = wrapped.get_clipping_coef()
        for p in trainable:
            p.grad = None
        wrapped.disable_hooks()
        (coeff * per_example).sum().backward()
        wrapped.enable_hooks()
        return _as_numpy_layout(model, [p.grad for p in trainable])

    return clipped_sum


def opacus_available() -> bool:
    """Whether Opacus is installed (found without importing it, and so torch)."""
    import importlib.util

    return importlib.util.find_spec("opacus") is not None


# --------------------------------------------------------------------------- the rows


def _setup(env: Any, model: str, ghost: bool) -> dict[str, Callable[[], Any]]:
    params, x, y = problem(model, env.smoke)
    eparams, ex, ey = env.put("ember", (params, x, y))
    build = ember_ghost if ghost else ember_materialised
    impls = {"numpy": lambda: numpy_clipped_sum(model, params, x, y),
             "ember": build(model, eparams, ex, ey, jit=False),
             "ember_jit": build(model, eparams, ex, ey, jit=True)}  # fmt: skip
    if env.torch is not None:
        tx, ty = env.put("torch", (x, y))
        torch_impl = opacus_ghost if ghost and opacus_available() else torch_materialised
        impls["torch"] = torch_impl(env.torch, model, params, tx, ty)
    return impls


for _model in ("mlp", "cnn"):
    for _ghost in (True, False):
        workload(f"privacy_{'ghost' if _ghost else 'materialised'}_{_model}", family="privacy", rtol=1e-4, atol=1e-5,
                 description=f"DP clip, {DESCRIPTION[_model]}, {'ghost' if _ghost else 'vmap(grad)'}",
                 )(lambda env, m=_model, g=_ghost: _setup(env, m, g))  # fmt: skip


#: name -> (model, builder(torch_or_None, model) -> zero-argument callable), for benchmarks/privacy_memory.py:
#: every implementation of both rows of a model, each to be built and run alone in its own process.
def _ember(kind: str, jit: bool) -> Callable[[Any, str, bool], Callable[[], Any]]:
    def build(torch: Any, model: str, smoke: bool) -> Callable[[], Any]:
        import ember.numpy as enp

        params, x, y = problem(model, smoke)
        args = [enp.asarray(p) for p in params], enp.asarray(x), enp.asarray(y)
        return (ember_ghost if kind == "ghost" else ember_materialised)(model, *args, jit=jit)

    return build


def _torch(kind: str) -> Callable[[Any, str, bool], Callable[[], Any]]:
    def build(torch: Any, model: str, smoke: bool) -> Callable[[], Any]:
        params, x, y = problem(model, smoke)
        impl = opacus_ghost if kind == "opacus" else torch_materialised
        return impl(torch, model, params, torch.tensor(x), torch.tensor(y))

    return build


def _numpy(torch: Any, model: str, smoke: bool) -> Callable[[], Any]:
    params, x, y = problem(model, smoke)
    return lambda: numpy_clipped_sum(model, params, x, y)


IMPLS: dict[str, tuple[str, Callable[[Any, str, bool], Callable[[], Any]]]] = {
    "ember clipped_grad (ghost), jit": ("ember", _ember("ghost", True)),
    "ember clipped_grad (ghost), eager": ("ember", _ember("ghost", False)),
    "ember jit(vmap(grad)) + clipping": ("ember", _ember("materialised", True)),
    "NumPy by hand (materialised)": ("numpy", _numpy),
    "torch.func vmap(grad) + clipping": ("torch", _torch("torch.func")),
    "Opacus ghost clipping": ("opacus", _torch("opacus")),
}
