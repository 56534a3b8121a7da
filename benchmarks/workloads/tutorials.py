"""The central computation of each torch.func tutorial notebook in ``notebooks/`` (issue 18): ember eager and
``jit`` against ``torch.func`` on the same weights, same CPU, same run. Suite ``tutorials``
(``python -m benchmarks.run --suite tutorials --impls ember,ember_jit,torch``).

Sizes and models are the notebooks' own; each ember model is built as the notebook builds it and copied into
its torch twin with ``nn.to_torch_state_dict``.

* ``tut_tour_pe_grads``         whirlwind_tour: per-example gradients of an MLP 16-32-4 (tanh), batch 64.
* ``tut_per_sample_cnn``        per_sample_grads: ``vmap(grad)`` of ``functional_call`` of the SimpleCNN
                                (conv 8, conv 16, pool, fc 64, fc 10, log_softmax + nll), batch 64 of 28x28.
* ``tut_jac{rev,fwd}_{tall,wide}``  jacobians_hessians: the Jacobian of ``tanh(linear(x, W, b))`` in x, tall
                                (32 -> 2048) and wide (2048 -> 32).
* ``tut_hvp_fwd_over_rev``      jacobians_hessians: ``jvp(grad(f))`` of ``sum(tanh(linear(x))**2)``, D = 16.
* ``tut_batch_jacobian``        jacobians_hessians: ``vmap(jacrev)``, batch 64, 31 -> 33.
* ``tut_ntk_jac_contraction`` / ``tut_ntk_vps``  neural_tangent_kernels: the full empirical NTK of the
                                3-conv CNN between 20 and 5 inputs of 3x10x10, by Jacobian contraction and by
                                NTK-vector products.
* ``tut_ensemble_diff_mb``      model_ensembling: 10 stacked MLPs 784-128-128-10, ``vmap`` over the models and
                                over 10 different minibatches of 64.
* ``tut_maml_meta_grad``        maml_sine: value and gradient of the MAML meta-loss, 8 sine tasks of 10 + 10
                                points, 3 inner SGD steps, MLP 1-40-40-1.
* ``tut_bn_pe_grads``           batch_norm_vmap: per-example gradients of the conv + BatchNorm CNN without
                                running statistics (torch: ``replace_all_batch_norm_modules_``), batch 32.

torch runs single-threaded (``torch.set_num_threads(1)``), as the notebooks time it and as ember runs under
``OPENBLAS_NUM_THREADS=1``: on a small shared machine, torch's thread pool waiting for a busy core turns its
times into noise (hundreds of ms for a call of 1 ms). The setting stays for the rest of the process; this
module registers last.

Where a NumPy version is short and natural (the Jacobians, the HVP, the MLPs) it is the reference of the output
check; elsewhere (the CNNs, NTKs, MAML) torch.func's result is (``reference="torch"``), and the row needs torch.
"""

from __future__ import annotations

import numpy as np

from benchmarks.registry import workload
from benchmarks.workloads.per_sample import in_order, mnist_cnn_classes

TUTORIALS = ("tutorials",)


def _torch(env):
    """torch, single-threaded on the CPU (see the module docstring), or None when it is not in the run."""
    torch = env.torch
    if torch is not None and env.platform == "cpu" and torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    return torch


def _ember_on_device(env, tree):
    """An ember model (or any pytree) built on the default device, moved to the run's device."""
    import ember

    return tree if env.ember_device is None else ember.device_put(tree, env.ember_device)


def _torch_twin(env, torch_module, ember_model):
    """`torch_module` with `ember_model`'s weights (``nn.to_torch_state_dict``), on the run's device."""
    from ember import nn

    torch_module.load_state_dict(nn.to_torch_state_dict(ember_model))
    return torch_module if env.torch_device is None else torch_module.to(env.torch_device)


def _numpy_params(model):
    return {name: np.asarray(p) for name, p in model.named_parameters()}


def _detached(torch_module):
    return {name: p.detach() for name, p in torch_module.named_parameters()}


def _per_example_grads(env, model, loss, x, labels):
    """ember's per-example gradients of ``loss(model(x[None]), label[None])`` with respect to the
    parameters, as a parameter-name dict: ``(eager, jit)``, each a function of nothing."""
    import ember
    from ember import nn

    def example_loss(params, x, y):
        return loss(nn.functional_call(model, params, x[None]), y[None])

    pe_grads = ember.vmap(ember.grad(example_loss), in_axes=(None, 0, 0))
    pe_grads_jit = ember.jit(pe_grads)
    params = dict(model.named_parameters())
    ex, ey = env.put("ember", (x, labels.astype(np.int32)))
    return (lambda: pe_grads(params, ex, ey)), (lambda: pe_grads_jit(params, ex, ey))


def _torch_per_example_grads(env, tmodel, loss, x, labels):
    """The same with torch.func on the torch twin `tmodel`: a function of nothing."""
    tf = env.torch.func
    tparams, (tx, ty) = _detached(tmodel), env.put("torch", (x, labels))

    def example_loss(params, x, y):
        return loss(tf.functional_call(tmodel, params, (x[None],)), y[None])

    pe_grads = tf.vmap(tf.grad(example_loss), in_dims=(None, 0, 0))
    return lambda: pe_grads(tparams, tx, ty)


# --------------------------------------------------------------------------- whirlwind tour


@workload("tut_tour_pe_grads", family="tutorials", tags=TUTORIALS, rtol=1e-4, atol=1e-6,
          description="vmap(grad) MLP 16-32-4 b64")  # fmt: skip
def _(env):
    import ember
    from ember import nn
    from ember.nn import functional as F

    batch = 8 if env.smoke else 64
    k1, k2 = ember.random.split(ember.random.key(0))
    model = nn.Sequential(nn.Linear(16, 32, key=k1), nn.Tanh(), nn.Linear(32, 4, key=k2))
    params = _numpy_params(model)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 16)).astype(np.float32)
    labels = rng.integers(0, 4, batch)

    def numpy_pe_grads():
        h = np.tanh(x @ params["0.weight"].T + params["0.bias"])
        logits = h @ params["2.weight"].T + params["2.bias"]
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        delta = e / e.sum(axis=1, keepdims=True)
        delta[np.arange(batch), labels] -= 1
        dz = (delta @ params["2.weight"]) * (1 - h**2)
        return [dz[:, :, None] * x[:, None, :], dz, delta[:, :, None] * h[:, None, :], delta]

    model = _ember_on_device(env, model)
    pe_grads, pe_grads_jit = _per_example_grads(env, model, F.cross_entropy, x, labels)
    names = list(params)  # 0.weight, 0.bias, 2.weight, 2.bias: each result as a list in this order
    impls = {"numpy": numpy_pe_grads, "ember": lambda: in_order(pe_grads(), names),
             "ember_jit": lambda: in_order(pe_grads_jit(), names)}  # fmt: skip
    if _torch(env) is not None:
        torch = env.torch
        tmodel = _torch_twin(env, torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)),
                             model)  # fmt: skip
        pe_grads_t = _torch_per_example_grads(env, tmodel, torch.nn.functional.cross_entropy, x, labels)
        impls["torch"] = lambda: in_order(pe_grads_t(), names)
    return impls


# --------------------------------------------------------------------------- per-sample gradients


@workload("tut_per_sample_cnn", family="tutorials", tags=TUTORIALS, reference="torch", rtol=1e-4, atol=1e-6,
          description="vmap(grad) CNN 28x28 b64")  # fmt: skip
def _(env):
    import ember
    from ember.nn import functional as F

    batch = 4 if env.smoke else 64
    SimpleCNN, TorchSimpleCNN = mnist_cnn_classes(env, 8, 16, 64)  # the notebook's SimpleCNN
    model = _ember_on_device(env, SimpleCNN(key=ember.random.key(0)))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    per_sample, per_sample_jit = _per_example_grads(env, model, F.nll_loss, x, labels)
    impls = {"ember": per_sample, "ember_jit": per_sample_jit}
    if _torch(env) is not None:
        tmodel = _torch_twin(env, TorchSimpleCNN(), model)
        impls["torch"] = _torch_per_example_grads(env, tmodel, env.torch.nn.functional.nll_loss, x, labels)
    return impls


# --------------------------------------------------------------------------- Jacobians, HVP, batch Jacobian


def _predict(weight, bias, x):
    import ember.numpy as enp
    from ember.nn import functional as F

    return enp.tanh(F.linear(x, weight, bias))


def _predict_torch(torch):
    def predict(weight, bias, x):
        return torch.nn.functional.linear(x, weight, bias).tanh()

    return predict


def _linear_tanh_problem(d_in, d_out, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((d_out, d_in), dtype=np.float32), rng.standard_normal(d_out, dtype=np.float32),
            rng.standard_normal(d_in, dtype=np.float32))  # fmt: skip


def _register_jacobian(mode, shape, d_in, d_out):
    @workload(f"tut_{mode}_{shape}", family="tutorials", tags=TUTORIALS, rtol=1e-5, atol=1e-5,
              description=f"{mode} {shape} {d_in}->{d_out}")  # fmt: skip
    def _(env):
        import ember

        small_in, small_out = (d_in, d_out) if not env.smoke else (max(d_in // 16, 2), max(d_out // 16, 2))
        w, b, x = _linear_tanh_problem(small_in, small_out, seed=0)

        def numpy_jacobian():  # d tanh(Wx + b) / dx = diag(1 - y**2) W
            y = np.tanh(w @ x + b)
            return (1 - y**2)[:, None] * w

        eager = getattr(ember, mode)(_predict, argnums=2)
        jitted = ember.jit(eager)
        e_args = env.put("ember", (w, b, x))
        impls = {"numpy": numpy_jacobian, "ember": lambda: eager(*e_args), "ember_jit": lambda: jitted(*e_args)}
        if _torch(env) is not None:
            torch_jac = getattr(env.torch.func, mode)(_predict_torch(env.torch), argnums=2)
            t_args = env.put("torch", (w, b, x))
            impls["torch"] = lambda: torch_jac(*t_args)
        return impls


for _mode in ("jacrev", "jacfwd"):
    _register_jacobian(_mode, "tall", 32, 2048)
    _register_jacobian(_mode, "wide", 2048, 32)


@workload("tut_hvp_fwd_over_rev", family="tutorials", tags=TUTORIALS, rtol=1e-4, atol=1e-5,
          description="HVP jvp(grad) D=16")  # fmt: skip
def _(env):
    import ember
    import ember.numpy as enp

    w, b, x = _linear_tanh_problem(16, 16, seed=1)
    v = np.random.default_rng(2).standard_normal(16, dtype=np.float32)

    def numpy_hvp():
        # f = sum(y**2), y = tanh(z): df/dz = 2y(1 - y**2), d2f/dz2 = (2 - 6y**2)(1 - y**2); H = W^T diag(d2f/dz2) W
        y = np.tanh(w @ x + b)
        return w.T @ ((2 - 6 * y**2) * (1 - y**2) * (w @ v))

    def hvp(weight, bias, x, v):
        def loss(x):
            return enp.sum(_predict(weight, bias, x) ** 2)

        return ember.jvp(ember.grad(loss), (x,), (v,))[1]

    hvp_jit = ember.jit(hvp)
    e_args = env.put("ember", (w, b, x, v))
    impls = {"numpy": numpy_hvp, "ember": lambda: hvp(*e_args), "ember_jit": lambda: hvp_jit(*e_args)}
    if _torch(env) is not None:
        torch, tf = env.torch, env.torch.func
        predict_t = _predict_torch(torch)

        def hvp_t(weight, bias, x, v):
            def loss(x):
                return (predict_t(weight, bias, x) ** 2).sum()

            return tf.jvp(tf.grad(loss), (x,), (v,))[1]

        t_args = env.put("torch", (w, b, x, v))
        impls["torch"] = lambda: hvp_t(*t_args)
    return impls


@workload("tut_batch_jacobian", family="tutorials", tags=TUTORIALS, rtol=1e-5, atol=1e-6,
          description="vmap(jacrev) b64 31->33")  # fmt: skip
def _(env):
    import ember

    batch = 4 if env.smoke else 64
    rng = np.random.default_rng(3)
    w = rng.standard_normal((33, 31), dtype=np.float32)
    b = rng.standard_normal(33, dtype=np.float32)
    xs = rng.standard_normal((batch, 31), dtype=np.float32)

    def numpy_batch_jacobian():
        y = np.tanh(xs @ w.T + b)
        return (1 - y**2)[:, :, None] * w[None]

    batch_jac = ember.vmap(ember.jacrev(_predict, argnums=2), in_axes=(None, None, 0))
    batch_jac_jit = ember.jit(batch_jac)
    e_args = env.put("ember", (w, b, xs))
    impls = {"numpy": numpy_batch_jacobian, "ember": lambda: batch_jac(*e_args),
             "ember_jit": lambda: batch_jac_jit(*e_args)}  # fmt: skip
    if _torch(env) is not None:
        tf = env.torch.func
        batch_jac_t = tf.vmap(tf.jacrev(_predict_torch(env.torch), argnums=2), in_dims=(None, None, 0))
        t_args = env.put("torch", (w, b, xs))
        impls["torch"] = lambda: batch_jac_t(*t_args)
    return impls


# --------------------------------------------------------------------------- neural tangent kernels


def _ntk_setup(env):
    """The NTK notebook's CNN (3 convs of 8 channels, fc 128 -> 10), its torch twin and the two batches."""
    import ember
    from ember import nn
    from ember.nn import functional as F

    class CNN(nn.Module):
        conv1: nn.Conv2d
        conv2: nn.Conv2d
        conv3: nn.Conv2d
        fc: nn.Linear

        def __init__(self, *, key):
            k1, k2, k3, k4 = ember.random.split(key, 4)
            self.conv1 = nn.Conv2d(3, 8, (3, 3), key=k1)
            self.conv2 = nn.Conv2d(8, 8, (3, 3), key=k2)
            self.conv3 = nn.Conv2d(8, 8, (3, 3), key=k3)
            self.fc = nn.Linear(8 * 4 * 4, 10, key=k4)

        def __call__(self, x, *, key=None):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = self.conv3(x)
            return self.fc(x.reshape(x.shape[0], -1))

    n1, n2 = (3, 2) if env.smoke else (20, 5)
    rng = np.random.default_rng(4)
    x1 = rng.standard_normal((n1, 3, 10, 10)).astype(np.float32)
    x2 = rng.standard_normal((n2, 3, 10, 10)).astype(np.float32)
    net = _ember_on_device(env, CNN(key=ember.random.key(0)))
    out = {"net": net, "ember_x": env.put("ember", (x1, x2)), "torch": None}
    if _torch(env) is not None:
        torch = env.torch

        class TorchCNN(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = torch.nn.Conv2d(3, 8, (3, 3))
                self.conv2 = torch.nn.Conv2d(8, 8, (3, 3))
                self.conv3 = torch.nn.Conv2d(8, 8, (3, 3))
                self.fc = torch.nn.Linear(8 * 4 * 4, 10)

            def forward(self, x):
                x = self.conv1(x).relu()
                x = self.conv2(x).relu()
                return self.fc(self.conv3(x).flatten(1))

        tnet = _torch_twin(env, TorchCNN(), net)

        def torch_fnet_single(params, x):
            return torch.func.functional_call(tnet, params, (x.unsqueeze(0),)).squeeze(0)

        out["torch"] = (torch_fnet_single, _detached(tnet), env.put("torch", (x1, x2)))
    return out


def _fnet_single(model, x):
    return model(x[None])[0]


def _ntk_impls(env, ntk, ntk_t):
    """An NTK workload's implementations from ``ntk(model, x1, x2)`` (ember, eager and jit) and
    ``ntk_t(fnet, params, x1, x2)`` (torch.func), on `_ntk_setup`'s network and inputs."""
    import ember

    s = _ntk_setup(env)
    ntk_jit = ember.jit(ntk)
    net, (x1, x2) = s["net"], s["ember_x"]
    impls = {"ember": lambda: ntk(net, x1, x2), "ember_jit": lambda: ntk_jit(net, x1, x2)}
    if s["torch"] is not None:
        fnet, tparams, (tx1, tx2) = s["torch"]
        impls["torch"] = lambda: ntk_t(fnet, tparams, tx1, tx2)
    return impls


@workload("tut_ntk_jac_contraction", family="tutorials", tags=TUTORIALS, reference="torch", rtol=1e-4, atol=1e-4,
          description="NTK jac. contraction 20x5")  # fmt: skip
def _(env):
    import ember
    import ember.numpy as enp

    def ntk(model, x1, x2):
        def flat_jacobians(xs):
            jac = ember.vmap(ember.jacrev(_fnet_single), in_axes=(None, 0))(model, xs)
            return [j.reshape(j.shape[0], j.shape[1], -1) for j in ember.tree.leaves(jac)]

        jac1, jac2 = flat_jacobians(x1), flat_jacobians(x2)
        return sum(enp.einsum("Naf,Mbf->NMab", j1, j2) for j1, j2 in zip(jac1, jac2))

    def ntk_t(fnet, params, x1, x2):
        torch, tf = env.torch, env.torch.func
        jac1 = [j.flatten(2) for j in tf.vmap(tf.jacrev(fnet), (None, 0))(params, x1).values()]
        jac2 = [j.flatten(2) for j in tf.vmap(tf.jacrev(fnet), (None, 0))(params, x2).values()]
        return torch.stack([torch.einsum("Naf,Mbf->NMab", j1, j2) for j1, j2 in zip(jac1, jac2)]).sum(0)

    return _ntk_impls(env, ntk, ntk_t)


@workload("tut_ntk_vps", family="tutorials", tags=TUTORIALS, reference="torch", rtol=1e-4, atol=1e-4,
          description="NTK-vector products 20x5")  # fmt: skip
def _(env):
    import ember
    import ember.numpy as enp

    def ntk(model, x1, x2):
        def ntk_block(x1, x2):
            out, vjp_fn = ember.vjp(lambda m: _fnet_single(m, x1), model)

            def ntk_times(vec):
                (params_ct,) = vjp_fn(vec)
                return ember.jvp(lambda m: _fnet_single(m, x2), (model,), (params_ct,))[1]

            return ember.vmap(ntk_times)(enp.eye(out.size, dtype=out.dtype))

        return ember.vmap(ember.vmap(ntk_block, in_axes=(None, 0)), in_axes=(0, None))(x1, x2)

    def ntk_t(fnet, params, x1, x2):
        torch, tf = env.torch, env.torch.func

        def ntk_block(x1, x2):
            out, vjp_fn = tf.vjp(lambda p: fnet(p, x1), params)

            def ntk_times(vec):
                return tf.jvp(lambda p: fnet(p, x2), (params,), vjp_fn(vec))[1]

            return tf.vmap(ntk_times)(torch.eye(out.numel(), dtype=out.dtype, device=out.device))

        return tf.vmap(tf.vmap(ntk_block, (None, 0)), (0, None))(x1, x2)

    return _ntk_impls(env, ntk, ntk_t)


# --------------------------------------------------------------------------- model ensembling


@workload("tut_ensemble_diff_mb", family="tutorials", tags=TUTORIALS, rtol=1e-4, atol=1e-5,
          description="vmap 10 MLPs, 10 batches")  # fmt: skip
def _(env):
    import copy

    import ember
    from ember import nn
    from ember.nn import functional as F

    class SimpleMLP(nn.Module):
        fc1: nn.Linear
        fc2: nn.Linear
        fc3: nn.Linear

        def __init__(self, *, key):
            k1, k2, k3 = ember.random.split(key, 3)
            self.fc1 = nn.Linear(784, 128, key=k1)
            self.fc2 = nn.Linear(128, 128, key=k2)
            self.fc3 = nn.Linear(128, 10, key=k3)

        def __call__(self, x, *, key=None):
            x = x.reshape(x.shape[0], -1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    num_models, batch = (3, 4) if env.smoke else (10, 64)
    models = [SimpleMLP(key=k) for k in ember.random.split(ember.random.key(0), num_models)]
    ensemble = _ember_on_device(env, nn.stack_modules(models))
    p = _numpy_params(ensemble)
    minibatches = np.random.default_rng(5).standard_normal((num_models, batch, 1, 28, 28)).astype(np.float32)

    def numpy_ensemble():
        h = minibatches.reshape(num_models, batch, -1)
        for layer in ("fc1", "fc2"):
            h = np.maximum(h @ p[f"{layer}.weight"].transpose(0, 2, 1) + p[f"{layer}.bias"][:, None], 0)
        return h @ p["fc3.weight"].transpose(0, 2, 1) + p["fc3.bias"][:, None]

    def run_model(model, x):
        return model(x)

    ensemble_diff = ember.vmap(run_model, in_axes=(0, 0))
    ensemble_diff_jit = ember.jit(ensemble_diff)
    emb = env.put("ember", minibatches)
    impls = {"numpy": numpy_ensemble, "ember": lambda: ensemble_diff(ensemble, emb),
             "ember_jit": lambda: ensemble_diff_jit(ensemble, emb)}  # fmt: skip
    if _torch(env) is not None:
        torch, tf = env.torch, env.torch.func

        class TorchSimpleMLP(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = torch.nn.Linear(784, 128)
                self.fc2 = torch.nn.Linear(128, 128)
                self.fc3 = torch.nn.Linear(128, 10)

            def forward(self, x):
                x = x.flatten(1)
                x = torch.relu(self.fc1(x))
                x = torch.relu(self.fc2(x))
                return self.fc3(x)

        torch_models = [_torch_twin(env, TorchSimpleMLP(), m) for m in models]
        params, buffers = tf.stack_module_state(torch_models)
        params = {k: v.detach() for k, v in params.items()}  # as the notebook's torch.no_grad(): no graph recorded
        base_model = copy.deepcopy(torch_models[0]).to("meta")

        def fmodel(params, buffers, x):
            return tf.functional_call(base_model, (params, buffers), (x,))

        torch_diff = tf.vmap(fmodel, in_dims=(0, 0, 0))
        tmb = env.put("torch", minibatches)
        impls["torch"] = lambda: torch_diff(params, buffers, tmb)
    return impls


# --------------------------------------------------------------------------- MAML


@workload("tut_maml_meta_grad", family="tutorials", tags=TUTORIALS, reference="torch", rtol=1e-4, atol=1e-6,
          description="MAML grad 8 tasks 3 steps")  # fmt: skip
def _(env):
    import ember
    from ember import nn
    from ember.nn import functional as F

    inner_lr, inner_steps, k = 0.03, 3, 10
    num_tasks = 2 if env.smoke else 8
    k1, k2, k3 = ember.random.split(ember.random.key(1), 3)
    net = _ember_on_device(env, nn.Sequential(nn.Linear(1, 40, key=k1), nn.ReLU(), nn.Linear(40, 40, key=k2),
                                              nn.ReLU(), nn.Linear(40, 1, key=k3)))  # fmt: skip
    rng = np.random.default_rng(6)  # sine waves: amplitude in [0.1, 5], phase in [0, pi], x in [-5, 5]
    amplitude = rng.uniform(0.1, 5.0, (num_tasks, 1, 1)).astype(np.float32)
    phase = rng.uniform(0.0, np.pi, (num_tasks, 1, 1)).astype(np.float32)
    x = rng.uniform(-5.0, 5.0, (num_tasks, 2 * k, 1)).astype(np.float32)
    y = amplitude * np.sin(x + phase)
    tasks = (x[:, :k], y[:, :k], x[:, k:], y[:, k:])  # x_support, y_support, x_query, y_query

    def mse(model, x, y):
        return F.mse_loss(model(x), y)

    def task_loss(model, task):
        x_support, y_support, x_query, y_query = task
        for _ in range(inner_steps):
            grads = ember.grad(mse)(model, x_support, y_support)
            model = ember.tree.map(lambda p, g: p - inner_lr * g, model, grads)
        return mse(model, x_query, y_query)

    def meta_loss(model, tasks):
        return ember.vmap(task_loss, in_axes=(None, 0))(model, tasks).mean()

    meta_value_and_grad = ember.value_and_grad(meta_loss)
    meta_value_and_grad_jit = ember.jit(meta_value_and_grad)
    etasks = env.put("ember", tasks)

    def as_dict(value_and_grads):
        loss, grads = value_and_grads
        return {"loss": loss, **dict(grads.named_parameters())}

    impls = {"ember": lambda: as_dict(meta_value_and_grad(net, etasks)),
             "ember_jit": lambda: as_dict(meta_value_and_grad_jit(net, etasks))}  # fmt: skip
    if _torch(env) is not None:
        torch, tf = env.torch, env.torch.func
        tnn = torch.nn
        tnet = _torch_twin(env, tnn.Sequential(tnn.Linear(1, 40), tnn.ReLU(), tnn.Linear(40, 40), tnn.ReLU(),
                                               tnn.Linear(40, 1)), net)  # fmt: skip
        tparams, ttasks = _detached(tnet), env.put("torch", tasks)

        def torch_mse(params, x, y):
            return torch.nn.functional.mse_loss(tf.functional_call(tnet, params, (x,)), y)

        def torch_task_loss(params, x_support, y_support, x_query, y_query):
            for _ in range(inner_steps):
                grads = tf.grad(torch_mse)(params, x_support, y_support)
                params = {name: p - inner_lr * grads[name] for name, p in params.items()}
            return torch_mse(params, x_query, y_query)

        def torch_meta_loss(params, *tasks):
            return tf.vmap(torch_task_loss, in_dims=(None, 0, 0, 0, 0))(params, *tasks).mean()

        torch_grad_and_value = tf.grad_and_value(torch_meta_loss)

        def torch_meta_grad():
            grads, loss = torch_grad_and_value(tparams, *ttasks)
            return {"loss": loss, **grads}

        impls["torch"] = torch_meta_grad
    return impls


# --------------------------------------------------------------------------- batch norm under vmap


@workload("tut_bn_pe_grads", family="tutorials", tags=TUTORIALS, reference="torch", rtol=1e-4, atol=1e-6,
          description="vmap(grad) BN CNN b32")  # fmt: skip
def _(env):
    import ember
    from ember import nn
    from ember.nn import functional as F

    batch = 4 if env.smoke else 32
    k1, k2, k3 = ember.random.split(ember.random.key(0), 3)
    model, _ = nn.make_with_state(nn.Sequential)(
        nn.Conv2d(1, 8, 5, stride=2, key=k1), nn.BatchNorm2d(8, track_running_stats=False), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, key=k2), nn.BatchNorm2d(16, track_running_stats=False), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10, key=k3))  # fmt: skip
    model = _ember_on_device(env, model)
    rng = np.random.default_rng(7)  # images that differ in brightness and contrast, as the notebook's do
    x = (rng.uniform(0.5, 2.0, (batch, 1, 1, 1)) * rng.standard_normal((batch, 1, 28, 28))
         + rng.standard_normal((batch, 1, 1, 1)) + 1.0).astype(np.float32)  # fmt: skip
    labels = rng.integers(0, 10, batch)

    def loss_one(model, example, label):
        return F.cross_entropy(model(example[None]), label[None])

    pe_grads = ember.vmap(ember.grad(loss_one), in_axes=(None, 0, 0))
    pe_grads_jit = ember.jit(pe_grads)
    ex, ey = env.put("ember", (x, labels.astype(np.int32)))
    impls = {"ember": lambda: dict(pe_grads(model, ex, ey).named_parameters()),
             "ember_jit": lambda: dict(pe_grads_jit(model, ex, ey).named_parameters())}  # fmt: skip
    if _torch(env) is not None:
        torch, tf = env.torch, env.torch.func
        tnn = torch.nn
        twin = tnn.Sequential(tnn.Conv2d(1, 8, 5, stride=2), tnn.BatchNorm2d(8), tnn.ReLU(),
                              tnn.Conv2d(8, 16, 3, stride=2), tnn.BatchNorm2d(16), tnn.ReLU(),
                              tnn.AdaptiveAvgPool2d(1), tnn.Flatten(), tnn.Linear(16, 10))  # fmt: skip
        twin.load_state_dict(nn.to_torch_state_dict(model), strict=False)  # no running statistics: patched away
        patched = tf.replace_all_batch_norm_modules_(twin)
        patched = patched if env.torch_device is None else patched.to(env.torch_device)
        impls["torch"] = _torch_per_example_grads(env, patched, torch.nn.functional.cross_entropy, x, labels)
    return impls

