"""ember.nn and ember.optim on a committed device (``num_cpu_devices``): a model put on cpu:1 trains there
(eager and under jit), and its values equal the same training on the default device."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, optim
from ember.errors import DeviceError
from ember.nn import functional as F


pytestmark = pytest.mark.usefixtures("four_cpus")  # conftest.py


def _on(tree, i):
    leaves = [leaf for leaf in ember.tree.leaves(tree) if isinstance(leaf, ember.Array)]
    assert leaves
    return all(leaf.device == ember.devices()[i] and leaf.committed for leaf in leaves)


def _model():
    k1, k2 = ember.random.split(ember.random.key(0))
    return nn.Sequential(nn.Linear(4, 8, key=k1), nn.Tanh(), nn.Linear(8, 3, key=k2))


OPT = optim.adam(learning_rate=1e-2)


def step(model, state, x, y):
    loss, grads = ember.value_and_grad(lambda m: F.cross_entropy(m(x), y))(model)
    updates, state = OPT.update(grads, state, model)
    return optim.apply_updates(model, updates), state, loss


def _batch(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((5, 4)).astype(np.float32), rng.integers(0, 3, 5).astype(np.int32)


@pytest.mark.parametrize("jitted", [False, True])
def test_a_model_on_cpu1_trains_there(jitted):
    run = ember.jit(step) if jitted else step
    model = ember.device_put(_model(), "cpu:1")
    state = OPT.init(model)
    assert _on(model, 1) and _on(state.exp_avg, 1) and _on(state.exp_avg_sq, 1)
    assert not state.count.committed  # as optax's: the step count is made uncommitted; it joins the params' device
    ref_model, ref_state = _model(), OPT.init(_model())
    for seed in range(3):
        x, y = _batch(seed)
        model, state, loss = run(model, state, enp.asarray(x), enp.asarray(y))  # the batch: uncommitted
        ref_model, ref_state, ref_loss = run(ref_model, ref_state, enp.asarray(x), enp.asarray(y))
        assert _on((model, state.exp_avg, state.exp_avg_sq, loss), 1)
        assert _on(state.count, 1) == jitted  # eager: count + 1 involves no committed array
        assert float(loss) == float(ref_loss)
    for a, b in zip(ember.tree.leaves((model, state)), ember.tree.leaves((ref_model, ref_state)), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    if jitted:
        assert run.trace_count == 2  # one per device


def test_model_forward_and_batch_on_another_device_raise():
    model = ember.device_put(_model(), "cpu:1")
    x = ember.device_put(enp.ones((2, 4)), "cpu:2")
    with pytest.raises(DeviceError, match="committed to different devices.*cpu:(1|2).*cpu:(1|2)"):
        model(x)


def test_module_init_with_a_committed_key_lands_on_its_device():
    key = ember.device_put(ember.random.key(3), "cpu:2")
    layer = nn.Linear(3, 2, key=key)
    assert _on(layer, 2)
