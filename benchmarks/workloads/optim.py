"""ember.optim: one Adam / AdamW update of a 1M-parameter pytree of 20 leaves.

* ``adam_update_1m`` / ``adamw_update_1m``: ``opt.update(grads, state, params)`` then ``apply_updates``,
  the state carried from call to call. ember runs ``optim.adam`` / ``optim.adamw`` eagerly and under ``jit``
  (one program for the whole tree); torch runs ``torch.optim.Adam(foreach=True)`` / ``AdamW`` with the
  gradients set once; JAX runs ``jax.jit`` of ``optax.adam`` / ``optax.adamw`` where optax is installed.

The NumPy baseline is the update written by hand with in-place ufuncs (``out=``), leaf by leaf.
Every implementation returns the new parameters after one step from the same start.
"""

from __future__ import annotations

import numpy as np

from benchmarks.registry import workload

LEAVES, SIZE = 20, 50_000  # 20 leaves of 50k float32: 1M parameters
LR, B1, B2, EPS, WD = 1e-3, 0.9, 0.999, 1e-8, 1e-2


def _tree(rng):
    shapes = [(SIZE // 100, 100) if i % 2 else (SIZE,) for i in range(LEAVES)]
    params = {f"p{i:02d}": rng.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    grads = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}
    return params, grads


def numpy_adam(params, grads, moments, decoupled, step=1):
    """One Adam(W) step from the moments ``(m, v)`` given, on copies, with in-place ufuncs."""
    out = {}
    scale_m, scale_v = LR / (1 - B1**step), 1 / (1 - B2**step)
    for k, p in params.items():
        g, (m, v) = grads[k], moments[k]
        p = p * (1 - LR * WD) if decoupled else p.copy()
        m = m * B1
        m += (1 - B1) * g
        v = v * B2
        v += (1 - B2) * g * g
        v *= scale_v
        np.sqrt(v, out=v)
        v += EPS
        np.divide(m, v, out=m)
        m *= scale_m
        p -= m
        out[k] = p
    return out


def _workload(name, decoupled):
    @workload(name, family="optim", target=1.0, rtol=1e-5, atol=1e-6,
              description=f"{'AdamW' if decoupled else 'Adam'} update 1M params/20")  # fmt: skip
    def _(env):
        import ember
        from ember import optim

        rng = np.random.default_rng(0)
        params, grads = _tree(rng)
        opt = optim.adamw(learning_rate=LR, weight_decay=WD) if decoupled else optim.adam(learning_rate=LR)
        eparams, egrads = env.put("ember", (params, grads))
        state0 = opt.init(eparams)

        def step(params, grads, state):
            updates, state = opt.update(grads, state, params)
            return optim.apply_updates(params, updates), state

        jitted = ember.jit(step)
        moments = {k: (np.zeros_like(v), np.zeros_like(v)) for k, v in params.items()}
        values = lambda tree: [tree[k] for k in sorted(tree)]  # noqa: E731  (every result as a list, in key order)
        impls = {"numpy": lambda: values(numpy_adam(params, grads, moments, decoupled)),
                 "ember": lambda: values(step(eparams, egrads, state0)[0]),
                 "ember_jit": lambda: values(jitted(eparams, egrads, state0)[0])}  # fmt: skip
        if env.torch is not None:
            torch = env.torch
            tparams = [p.requires_grad_() for p in env.put("torch", list(params.values()))]
            for p, g in zip(tparams, env.put("torch", list(grads.values()))):
                p.grad = g
            cls = torch.optim.AdamW if decoupled else torch.optim.Adam
            kwargs = {"weight_decay": WD} if decoupled else {}

            topt = cls(tparams, lr=LR, foreach=True, **kwargs)
            first = []

            def torch_step():  # steps on, state carried (the same work every step); the first result is checked
                topt.step()
                if not first:
                    first.append([p.detach().clone() for p in tparams])
                    return first[0]
                return tparams

            impls["torch"] = torch_step
        if env.jnp is not None:
            try:
                import optax
            except ImportError:
                optax = None
            if optax is not None:
                jax = env.jax
                jopt = optax.adamw(LR, weight_decay=WD) if decoupled else optax.adam(LR)
                jparams, jgrads = env.put("jax", (params, grads))
                jstate = jopt.init(jparams)

                @jax.jit
                def jstep(params, grads, state):
                    updates, state = jopt.update(grads, state, params)
                    return optax.apply_updates(params, updates)

                impls["jax"] = lambda: values(jax.block_until_ready(jstep(jparams, jgrads, jstate)))
        return impls


_workload("adam_update_1m", decoupled=False)
_workload("adamw_update_1m", decoupled=True)


@workload("mlp_adam_step_nn", family="optim", target=0.73, rtol=1e-4, atol=1e-5,
          description="mlp_adam_step on nn+optim")  # fmt: skip
def _(env):
    """``mlp_adam_step`` (jit.py) written as a user would with ember.nn and ember.optim: it should cost what
    the hand-written ember version costs."""
    import ember
    from benchmarks.workloads import jit as hand
    from ember import nn, optim
    from ember.nn._tree import replace_named

    params, x, y = hand._mlp_inputs(env.smoke)
    zeros = [np.zeros_like(p) for p in params]
    keys = ember.random.split(ember.random.key(0), 3)
    sizes = [p.shape for p in params[0::2]]
    layers = []
    for k, (n_in, n_out) in zip(keys, sizes):
        layers += [nn.Linear(n_in, n_out, key=k), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    names = [name for name, _ in model.named_parameters()]
    model = replace_named(model, dict(zip(names, env.put("ember", [np.ascontiguousarray(p.T) for p in params]))),
                          "benchmark")  # fmt: skip
    opt = optim.adam(learning_rate=hand.LR, betas=(hand.B1, hand.B2), eps=hand.EPS)
    state = opt.init(model)
    ex, ey = env.put("ember", (x, y))

    def step(model, state, x, y):
        grads = ember.grad(lambda m: nn.functional.cross_entropy(m(x), y))(model)
        updates, state = opt.update(grads, state, model)
        return optim.apply_updates(model, updates), state

    jitted = ember.jit(step)
    as_numpy_layout = lambda m: [p.T if p.ndim == 2 else p for p in ember.tree.leaves(m)]  # noqa: E731
    return {"numpy": lambda: hand.numpy_adam_step(params, zeros, zeros, 0.0, x, y)[0],
            "ember": lambda: as_numpy_layout(step(model, state, ex, ey)[0]),
            "ember_jit": lambda: as_numpy_layout(jitted(model, state, ex, ey)[0])}
