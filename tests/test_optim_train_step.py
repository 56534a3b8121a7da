"""A whole train step on ember.nn + ember.optim under jit: one trace for every step, donation of the
parameters and optimizer state, and a vmapped ensemble trained at once. References: the same steps
without jit / without donation / one member at a time."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, optim
from ember.nn import functional as F


def _model(key):
    k1, k2 = ember.random.split(key)
    return nn.Sequential(nn.Linear(4, 8, key=k1), nn.Tanh(), nn.Linear(8, 3, key=k2))


OPT = optim.chain(optim.clip_by_global_norm(1.0), optim.adamw(learning_rate=1e-2, weight_decay=1e-2))


def step(model, state, x, y):
    loss, grads = ember.value_and_grad(lambda m: F.cross_entropy(m(x), y))(model)
    updates, state = OPT.update(grads, state, model)
    return optim.apply_updates(model, updates), state, loss


def _batches(n=6):
    rng = np.random.default_rng(0)
    return [(enp.asarray(rng.standard_normal((5, 4)).astype(np.float32)), enp.asarray(rng.integers(0, 3, 5)))
            for _ in range(n)]


def _leaves(tree):
    return [np.asarray(leaf) for leaf in ember.tree.leaves(tree)]


@pytest.mark.parametrize("donate", [(), (0, 1)])
def test_jitted_step_traces_once_and_equals_eager(donate):
    model = _model(ember.random.key(0))
    state = OPT.init(model)
    eager_model = _model(ember.random.key(0))  # the same values in buffers of its own: donation deletes model's
    eager_state = OPT.init(eager_model)
    jitted = ember.jit(step, donate_argnums=donate)
    for x, y in _batches():
        before = ember.tree.leaves(model)
        model, state, loss = jitted(model, state, x, y)
        eager_model, eager_state, eager_loss = step(eager_model, eager_state, x, y)
        if donate:
            assert all(leaf.is_deleted() for leaf in before)  # the old parameters gave their buffers
        np.testing.assert_allclose(float(loss), float(eager_loss), rtol=1e-6)
    assert jitted.trace_count == 1
    for a, b in zip(_leaves((model, state)), _leaves((eager_model, eager_state)), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_vmapped_ensemble_trains_every_member_at_once():
    members = [_model(k) for k in ember.random.split(ember.random.key(1), 3)]
    states = [OPT.init(m) for m in members]
    ensemble, ensemble_state = nn.stack_modules(members), nn.stack_modules(states)
    batched = ember.jit(ember.vmap(step, in_axes=(0, 0, None, None)))
    for x, y in _batches(4):
        ensemble, ensemble_state, losses = batched(ensemble, ensemble_state, x, y)
        stepped = [step(m, s, x, y) for m, s in zip(members, states)]
        members, states = [m for m, _, _ in stepped], [s for _, s, _ in stepped]
        np.testing.assert_allclose(np.asarray(losses), [float(l) for _, _, l in stepped], rtol=1e-5)
    for i, member in enumerate(members):
        for a, b in zip(_leaves(ember.tree.map(lambda leaf: leaf[i], ensemble)), _leaves(member), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
