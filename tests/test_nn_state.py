"""nn.State: a pytree of running statistics keyed by layer names; make_with_state / init_state; the errors of
a missing or mismatched state; state through jit and vmap. A small stateful layer (a running mean) written
here tests the core on its own; BatchNorm checks the names against PyTorch's buffers."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, tree
from ember.errors import InvalidArgumentError, ShapeError


class RunningMean(nn.Module):
    """Subtracts the running mean of its inputs (before this batch) and updates it: a minimal stateful layer."""

    features: int
    momentum: float = 0.5
    state_key: str | None = nn.static_field(default=None)

    def has_state(self):
        return True

    def initial_state(self):
        return {"mean": enp.zeros(self.features), "count": enp.zeros((), dtype="int32")}

    def __call__(self, x, state, *, key=None):
        s = state.get(self)
        new = {"mean": (1 - self.momentum) * s["mean"] + self.momentum * x.mean(0), "count": s["count"] + 1}
        return x - s["mean"], state.set(self, new)


def _model(seed=0):
    k = ember.random.split(ember.random.key(seed))
    return nn.make_with_state(nn.Sequential)(nn.Linear(3, 2, key=k[0]), RunningMean(2), nn.Tanh(),
                                             nn.Sequential(nn.Linear(2, 2, key=k[1]), RunningMean(2)))  # fmt: skip


def _reference(model, x, mean1, mean2):
    """The model by hand, in NumPy, for given running means: (output, new means)."""
    w0, b0 = (np.asarray(p, np.float64) for p in (model.layers[0].weight, model.layers[0].bias))
    w1, b1 = (np.asarray(p, np.float64) for p in (model.layers[3].layers[0].weight, model.layers[3].layers[0].bias))
    h = x @ w0.T + b0
    new1 = 0.5 * mean1 + 0.5 * h.mean(0)
    h = np.tanh(h - mean1) @ w1.T + b1
    new2 = 0.5 * mean2 + 0.5 * h.mean(0)
    return h - mean2, new1, new2


# --- the State pytree ----------------------------------------------------------------------------------


def test_state_is_an_immutable_pytree():
    _, state = _model()
    assert state.keys() == ["1", "3.1"] and len(state) == 2
    assert [name for name, _ in state.named_buffers()] == ["1.mean", "1.count", "3.1.mean", "3.1.count"]
    # the leaves: layer by layer in model order, each layer's buffers in the order the layer gave them (as
    # named_buffers lists them), not sorted as a plain dict's pytree would
    assert [leaf for leaf in tree.leaves(state)] == [b for _, b in state.named_buffers()]
    paths = [tree.keystr(path) for path, _ in tree.leaves_with_path(state)]
    assert paths == ["['1']['mean']", "['1']['count']", "['3.1']['mean']", "['3.1']['count']"]
    doubled = tree.map(lambda b: b + 1, state)
    assert isinstance(doubled, nn.State) and doubled["3.1.count"].item() == 1 and state["3.1.count"].item() == 0
    assert tree.structure(doubled) == tree.structure(state)
    assert state == tree.unflatten(tree.structure(state), tree.leaves(state)) and state != doubled
    with pytest.raises(InvalidArgumentError, match="immutable"):
        state.x = 1
    with pytest.raises(KeyError, match=r"no entry '1.var'; its buffers are \['1.mean'"):
        state["1.var"]
    assert set(state["1"]) == {"mean", "count"}
    assert repr(state) == "State(1.mean: f32[2], 1.count: i32[], 3.1.mean: f32[2], 3.1.count: i32[])"


class RunningMeanCountFirst(RunningMean):
    """RunningMean writing its entry in another order than initial_state's."""

    def __call__(self, x, state, *, key=None):
        s = state.get(self)
        new = {"count": s["count"] + 1, "mean": (1 - self.momentum) * s["mean"] + self.momentum * x.mean(0)}
        return x - s["mean"], state.set(self, new)


def test_state_keeps_each_layers_buffer_order():
    order = lambda s: [name for name, _ in s.named_buffers()]  # noqa: E731
    model, state = nn.make_with_state(nn.Sequential)(RunningMeanCountFirst(2), nn.Tanh(), RunningMean(2))
    names = ["0.mean", "0.count", "2.mean", "2.count"]  # initial_state's order, not sorted
    assert order(state) == names
    x = enp.ones((3, 2))
    eager = model(x, state)[1]
    traced = ember.jit(lambda m, s: m(x, s))(model, state)[1]
    assert order(eager) == order(traced) == order(tree.map(lambda b: b, state)) == names
    assert tree.structure(eager) == tree.structure(traced) == tree.structure(state)
    # a lax.scan carry must keep its structure step after step
    final, _ = ember.lax.scan(lambda s, xi: (model(xi, s)[1], None), state, enp.ones((4, 3, 2)))
    assert order(final) == names and final["0.count"].item() == 4
    # a State given dicts keeps their order and copies them (the State stays immutable)
    entry = {"b": enp.zeros(1), "a": enp.ones(1)}
    built = nn.State({"x": entry})
    entry["c"] = enp.zeros(1)
    assert order(built) == ["x.b", "x.a"] and order(tree.map(lambda b: b, built)) == ["x.b", "x.a"]


def test_a_stateful_layer_used_twice_has_one_entry_under_its_first_name():
    shared = RunningMean(2)
    model, state = nn.make_with_state(nn.Sequential)(shared, nn.Tanh(), shared)
    assert state.keys() == ["0"] and model.layers[0].state_key == model.layers[2].state_key == "0"
    x = np.random.default_rng(4).normal(size=(3, 2)).astype(np.float32)
    out, new = model(enp.asarray(x), state)
    # both applications read and write the one entry, in turn (as a torch module used twice updates its buffers twice)
    h = x  # the first application subtracts the initial mean, 0
    mean = 0.5 * h.mean(0)
    np.testing.assert_allclose(out, np.tanh(h) - mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(new["0.mean"], 0.5 * mean + 0.5 * np.tanh(h).mean(0), rtol=1e-6, atol=1e-6)
    assert new["0.count"].item() == 2


def test_stack_modules_stacks_states():
    states = [tree.map(lambda b, i=i: b + i, _model()[1]) for i in range(3)]
    stacked = nn.stack_modules(states)
    assert isinstance(stacked, nn.State) and stacked["1.mean"].shape == (3, 2)
    np.testing.assert_array_equal(stacked["3.1.count"], [0, 1, 2])


# --- make_with_state / init_state ----------------------------------------------------------------------


def test_make_with_state_gives_each_layer_its_dotted_name():
    model, state = _model()
    assert model.layers[1].state_key == "1" and model.layers[3].layers[1].state_key == "3.1"
    assert model.layers[0].__dict__.get("state_key") is None
    assert nn.is_stateful(model) and nn.is_stateful(model.layers[3]) and not nn.is_stateful(model.layers[0])
    again, state2 = nn.init_state(model)
    assert again.layers[1].state_key == "1" and state2.keys() == state.keys()
    # Keys are names, not identities: two models built alike have one structure (they stack and share a trace).
    other, _ = _model(seed=1)
    assert tree.structure(other) == tree.structure(model)
    tree_of_dicts = nn.ModuleDict({"enc": nn.Sequential(OrderedDict(norm=RunningMean(2))), "dec": RunningMean(3)})
    named = nn.init_state(tree_of_dicts)
    assert named[1].keys() == ["enc.norm", "dec"]


def test_state_names_equal_torch_buffer_names():
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    t = tnn.Sequential(tnn.Linear(3, 4), tnn.BatchNorm1d(4), tnn.ReLU(),
                       tnn.Sequential(OrderedDict(conv=tnn.Conv1d(4, 4, 1), bn=tnn.BatchNorm1d(4))))  # fmt: skip
    k = ember.random.split(ember.random.key(0))
    model, state = nn.make_with_state(nn.Sequential)(
        nn.Linear(3, 4, key=k[0]), nn.BatchNorm1d(4), nn.ReLU(),
        nn.Sequential(OrderedDict(conv=nn.Conv1d(4, 4, 1, key=k[1]), bn=nn.BatchNorm1d(4))))  # fmt: skip
    assert [n for n, _ in state.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert not nn.is_stateful(nn.BatchNorm1d(4, track_running_stats=False))


# --- calling with a state --------------------------------------------------------------------------------


def test_stateful_call_matches_the_definition():
    model, state = _model()
    x = np.random.default_rng(0).normal(size=(5, 3))
    out, state = model(enp.asarray(x, dtype="float32"), state)
    ref, m1, m2 = _reference(model, x, np.zeros(2), np.zeros(2))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    out, state = model(enp.asarray(x, dtype="float32"), state)
    ref, m1, m2 = _reference(model, x, m1, m2)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state["3.1.mean"], m2, rtol=1e-5, atol=1e-6)
    assert state["1.count"].item() == 2


def test_state_errors():
    model, state = _model()
    x = enp.ones((4, 3))
    with pytest.raises(InvalidArgumentError, match=r"has running statistics .* out, state = model\(x, state\)"):
        model(x)
    layer = RunningMean(2)  # built without make_with_state: no state key
    with pytest.raises(InvalidArgumentError, match=r"RunningMean has running statistics but no place in an nn.State: "
                                                   r"build the model with nn.make_with_state"):
        layer(enp.ones((4, 2)), state)
    _, wrong = nn.init_state(nn.Sequential(RunningMean(2)))  # another model's state: its key is '0'
    with pytest.raises(InvalidArgumentError, match=r"RunningMean \(state key '1'\) has no entry in this nn.State "
                                                   r"\(it has \['0'\]\); pass the state that nn.make_with_state "
                                                   r"returned with this model"):
        model(x, wrong)


def test_state_of_another_layer_with_the_same_key():
    """A state whose entry belongs to a different layer (another width) is refused, not broadcast."""
    small, _ = nn.make_with_state(nn.Sequential)(nn.BatchNorm1d(1))
    _, wide_state = nn.make_with_state(nn.Sequential)(nn.BatchNorm1d(3))
    for model in (small, small.eval()):
        with pytest.raises(ShapeError, match=r"^model\.layers\[0\] \(BatchNorm1d\(1, .*running_mean must have shape "
                                             r"\(1,\).*got shape \(3,\)"):
            model(enp.ones((2, 1)), wide_state)


def test_jit_with_state_traces_once():
    model, state = _model()
    traces = []

    @ember.jit
    def step(m, s, x):
        traces.append(1)
        return m(x, s)

    x = enp.asarray(np.random.default_rng(1).normal(size=(4, 3)), dtype="float32")
    out1, s1 = step(model, state, x)
    out2, s2 = step(model, s1, x)
    ref1, ref_s1 = model(x, state)
    ref2, ref_s2 = model(x, ref_s1)
    np.testing.assert_allclose(out2, ref2, rtol=1e-6, atol=1e-6)
    for a, b in zip(tree.leaves(s2), tree.leaves(ref_s2)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert len(traces) == 1
    step(_model(seed=3)[0], s2, x)
    assert len(traces) == 1


def test_vmap_over_models_and_states_equals_a_loop():
    pairs = [_model(seed=i) for i in range(3)]
    models = nn.stack_modules([m for m, _ in pairs])
    states = nn.stack_modules([tree.map(lambda b, i=i: b + i, s) for i, (_, s) in enumerate(pairs)])
    x = enp.asarray(np.random.default_rng(2).normal(size=(4, 3)), dtype="float32")
    outs, new_states = ember.vmap(lambda m, s: m(x, s))(models, states)
    for i, (m, s) in enumerate(pairs):
        ref, ref_state = m(x, tree.map(lambda b, i=i: b + i, s))
        np.testing.assert_allclose(outs[i], ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(new_states["3.1.mean"][i], ref_state["3.1.mean"], rtol=1e-5, atol=1e-6)
        assert new_states["1.count"][i].item() == ref_state["1.count"].item()


def test_vmap_over_inputs_with_shared_state():
    """vmap over examples with one state: each example's statistics are its own (per-example state out)."""
    model, state = _model()
    xs = enp.asarray(np.random.default_rng(3).normal(size=(3, 4, 3)), dtype="float32")
    outs, states = ember.vmap(lambda x: model(x, state))(xs)
    for i in range(3):
        ref, ref_state = model(xs[i], state)
        np.testing.assert_allclose(outs[i], ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(states["1.mean"][i], ref_state["1.mean"], rtol=1e-5, atol=1e-6)
