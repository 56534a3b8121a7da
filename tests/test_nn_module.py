"""nn.Module core: dataclass fields, the static/leaf split, immutability, names as PyTorch's, repr,
partition/combine/trainable/tree_at, train/eval, functional_call, jit caching, path-named errors."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, tree
from ember.errors import InvalidArgumentError, ShapeError


def keys(n, seed=0):
    return list(ember.random.split(ember.random.key(seed), n))


class Affine(nn.Module):
    weight: ember.Array
    bias: ember.Array
    scale: float = 1.0

    def __call__(self, x, *, key=None):
        return self.scale * (x * self.weight + self.bias)


class Toggle(nn.Module):
    """A layer with a training flag: doubles its input in training mode."""

    training: bool = True

    def __call__(self, x, *, key=None):
        return 2 * x if self.training else x


# --- fields and the static / leaf split -------------------------------------------------------------------


def test_annotated_fields_make_a_dataclass_init():
    m = Affine(enp.ones(2), enp.zeros(2), scale=3.0)
    assert m.scale == 3.0 and m.weight.shape == (2,)
    np.testing.assert_allclose(m(enp.array([1.0, 2.0])), [3.0, 6.0])
    assert Affine(enp.ones(2), enp.zeros(2)).scale == 1.0


def test_own_init_must_set_every_field_without_default():
    class Bad(nn.Module):
        a: int
        b: int

        def __init__(self):
            self.a = 1

    with pytest.raises(InvalidArgumentError, match=r"Bad.__init__ did not set the field 'b'"):
        Bad()


def test_arrays_and_modules_are_leaves_everything_else_static():
    def relu(x):
        return x

    class Mixed(nn.Module):
        w: ember.Array
        sub: nn.Module
        blocks: list
        n: int
        shape: tuple
        name: str
        fn: object
        nothing: object = None

    m = Mixed(enp.ones(3), Affine(enp.ones(1), enp.zeros(1)), [enp.zeros(2), enp.zeros(4)], 3, (1, 2), "a", relu)
    assert [leaf.shape for leaf in tree.leaves(m)] == [(3,), (1,), (1,), (2,), (4,)]
    assert m._ember_dynamic == ("w", "sub", "blocks")
    # static values are part of the structure: a different int is a different tree
    other = Mixed(enp.ones(3), Affine(enp.ones(1), enp.zeros(1)), [enp.zeros(2), enp.zeros(4)], 4, (1, 2), "a", relu)
    assert tree.structure(m) != tree.structure(other)
    assert tree.structure(m) == tree.structure(tree.map(lambda x: x + 1, m))


def test_static_fields_stay_static_whatever_they_hold():
    class Holder(nn.Module):
        table: ember.Array = nn.field(static=True)
        mask: object = nn.static_field(default=None)
        w: ember.Array = None

    table = np.arange(3.0)
    m = Holder(table, mask=np.ones(2), w=enp.zeros(4))
    assert [leaf.shape for leaf in tree.leaves(m)] == [(4,)]
    assert m.table is table and m.mask.shape == (2,)
    assert nn.field(static=True).metadata["static"] and nn.static_field().metadata["static"]


def test_split_is_kept_through_partition_and_unflatten():
    m = Affine(enp.ones(2), enp.zeros(2))
    params, rest = nn.partition(m)
    assert rest.weight is None and rest.bias is None and rest.scale == 1.0
    assert tree.structure(params) == tree.structure(m)  # None-filled fields stay children
    back = nn.combine(params, rest)
    assert back.weight is m.weight and back.scale == 1.0


# --- immutability and construction ----------------------------------------------------------------------


def test_built_modules_are_frozen():
    m = Affine(enp.ones(2), enp.zeros(2))
    with pytest.raises(nn.FrozenModuleError, match=r"cannot set Affine.weight.*nn.tree_at\(lambda m: m.weight"):
        m.weight = enp.zeros(2)
    with pytest.raises(AttributeError):  # FrozenModuleError is an AttributeError, as dataclasses' FrozenInstanceError
        m.new_attribute = 1
    with pytest.raises(nn.FrozenModuleError, match="cannot delete"):
        del m.bias


def test_construction_with_key_is_deterministic_and_key_is_required():
    a, b = nn.Linear(3, 4, key=ember.random.key(0)), nn.Linear(3, 4, key=ember.random.key(0))
    c = nn.Linear(3, 4, key=ember.random.key(1))
    np.testing.assert_array_equal(a.weight, b.weight)
    assert not np.array_equal(np.asarray(a.weight), np.asarray(c.weight))
    with pytest.raises(TypeError, match="key"):
        nn.Linear(3, 4)


# --- names and repr, against torch's for the same architecture -------------------------------------------


def _pair():
    """The same architecture in torch and ember (no conversion: each built by its own constructor)."""
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    k = keys(8)
    t = tnn.Sequential(OrderedDict(
        features=tnn.Sequential(tnn.Conv2d(3, 16, 3), tnn.ReLU(),
                                tnn.Conv2d(16, 8, (3, 5), stride=2, padding=1, bias=False)),
        flat=tnn.Flatten(),
        heads=tnn.ModuleDict({"cls": tnn.Linear(8, 3), "box": tnn.Linear(8, 4, bias=False)}),
        blocks=tnn.ModuleList([tnn.Linear(4, 4), tnn.Identity(), tnn.LSTM(4, 5, num_layers=2, bidirectional=True)]),
    ))  # fmt: skip
    e = nn.Sequential(OrderedDict(
        features=nn.Sequential(nn.Conv2d(3, 16, 3, key=k[0]), nn.ReLU(),
                               nn.Conv2d(16, 8, (3, 5), stride=2, padding=1, bias=False, key=k[1])),
        flat=nn.Flatten(),
        heads=nn.ModuleDict({"cls": nn.Linear(8, 3, key=k[2]), "box": nn.Linear(8, 4, bias=False, key=k[3])}),
        blocks=nn.ModuleList([nn.Linear(4, 4, key=k[4]), nn.Identity(), nn.LSTM(4, 5, num_layers=2, bidirectional=True,
                                                                                 key=k[5])]),
    ))  # fmt: skip
    return t, e


def test_repr_matches_torch():
    t, e = _pair()
    assert repr(e) == repr(t)


def test_repr_folds_repeated_module_list_entries_as_torch():
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    t = tnn.ModuleList([tnn.Linear(2, 2) for _ in range(3)] + [tnn.ReLU(), tnn.Linear(2, 2), tnn.ModuleList()])
    e = nn.ModuleList([nn.Linear(2, 2, key=k) for k in keys(3)] + [nn.ReLU(), nn.Linear(2, 2, key=keys(1)[0]),
                                                                   nn.ModuleList()])  # fmt: skip
    assert repr(e) == repr(t)
    assert "(0-2): 3 x Linear(in_features=2" in repr(e)
    layer = nn.TransformerEncoderLayer(8, 2, 16, key=keys(1)[0])
    encoder = nn.TransformerEncoder(layer, 2)
    torch_encoder = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(8, 2, 16), 2, enable_nested_tensor=False)
    # torch's attention projection is a Linear subclass of another name; everything else prints alike
    assert repr(encoder) == repr(torch_encoder).replace("NonDynamicallyQuantizableLinear", "Linear")


def test_names_match_torch():
    t, e = _pair()
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [tuple(p.shape) for p in e.parameters()] == [tuple(p.shape) for p in t.parameters()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [type(m).__name__ for m in e.modules()] == [type(m).__name__ for m in t.modules()]
    assert [n for n, _ in e.named_parameters(prefix="model")] == [f"model.{n}" for n, _ in t.named_parameters()]


class Heads(nn.Module):
    heads: dict

    def __call__(self, x, *, key=None):
        return [head(x) for head in self.heads.values()]


def test_dict_fields_keep_insertion_order_through_transforms():
    # A plain dict's pytree sorts its keys; a module's dict child keeps the order it was built with, as
    # torch.nn.ModuleDict does, whatever rebuilt it (tree_map, jit, eval, functional_call).
    k = keys(2)
    m = Heads({"b": nn.Linear(2, 3, key=k[0]), "a": nn.Linear(2, 1, key=k[1]), "c": Toggle()})
    names = ["heads.b.weight", "heads.b.bias", "heads.a.weight", "heads.a.bias"]
    assert [n for n, _ in m.named_parameters()] == names
    rebuilt = [tree.map(lambda a: a * 1, m), ember.jit(lambda m: m)(m), m.eval().train(),
               nn.tree_at(lambda m: m.heads["a"].bias, m, enp.zeros(1))]
    for other in rebuilt:
        assert [n for n, _ in other.named_parameters()] == names and list(other.heads) == ["b", "a", "c"]
        assert tree.structure(other) == tree.structure(m)
    assert list(m.eval().heads) == ["b", "a", "c"]
    assert [o.shape for o in ember.jit(lambda m, x: m(x))(m, enp.ones(2))] == [(3,), (1,), (2,)]


def test_sequential_names_and_slicing():
    k = keys(2)
    seq = nn.Sequential(nn.Linear(2, 3, key=k[0]), nn.Tanh(), nn.Linear(3, 1, key=k[1]))
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(seq) == 3 and isinstance(seq[1], nn.Tanh) and len(seq[1:]) == 2
    named = nn.Sequential(OrderedDict(a=nn.Linear(2, 3, key=k[0]), act=nn.Tanh(), b=nn.Linear(3, 1, key=k[1])))
    assert [n for n, _ in named[1:].named_parameters()] == ["b.weight", "b.bias"]
    x = enp.ones((4, 2))
    np.testing.assert_allclose(named(x), seq(x))


# --- partition / combine / trainable ---------------------------------------------------------------------


def _mlp():
    k = keys(2)
    return nn.Sequential(nn.Linear(3, 4, key=k[0]), nn.Tanh(), nn.Linear(4, 2, key=k[1]))


def test_partition_combine_round_trip_and_filters():
    m = nn.tree_at(lambda m: m.layers[0].bias, _mlp(), enp.arange(4))  # an int leaf: not inexact
    params, rest = nn.partition(m)
    assert params.layers[0].bias is None and rest.layers[0].bias is not None
    assert rest.layers[0].weight is None
    back = nn.combine(params, rest)
    assert all(a is b for a, b in zip(tree.leaves(back), tree.leaves(m)))
    ints, _ = nn.partition(m, lambda x: nn.is_array(x) and not nn.is_inexact_array(x))
    assert [leaf.shape for leaf in tree.leaves(ints)] == [(4,)]
    with pytest.raises(InvalidArgumentError, match="tree of bools shaped like the model"):
        nn.partition(m, [True, False])
    with pytest.raises(InvalidArgumentError, match="differ in structure"):
        nn.combine(params, nn.partition(_mlp().layers[0])[1])


def test_trainable_frozen_and_grad_through_partition():
    m = _mlp()
    spec = nn.trainable(m, frozen=lambda m: (m.layers[0].weight, m.layers[2]))
    assert tree.leaves(spec) == [False, True, False, False]
    params, static = nn.partition(m, spec)
    x = enp.asarray(np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32))

    def loss(p):
        return (nn.combine(p, static)(x) ** 2).sum()

    g = ember.grad(loss)(params)
    assert g.layers[0].weight is None and g.layers[2].weight is None and g.layers[2].bias is None
    full = ember.grad(lambda mm: (mm(x) ** 2).sum())(m)  # the reference: the gradient of the whole model
    np.testing.assert_allclose(g.layers[0].bias, full.layers[0].bias, rtol=1e-6)


# --- tree_at ------------------------------------------------------------------------------------------------


def test_tree_at_leaf_submodule_tuple_and_replace_fn():
    m = _mlp()
    new = nn.tree_at(lambda m: m.layers[2].bias, m, enp.zeros(2))
    np.testing.assert_array_equal(new.layers[2].bias, [0.0, 0.0])
    assert new.layers[0].weight is m.layers[0].weight and float(enp.abs(m.layers[2].bias).sum()) > 0  # original kept
    new = nn.tree_at(lambda m: m.layers[1], m, nn.ReLU())
    assert isinstance(new.layers[1], nn.ReLU)
    new = nn.tree_at(lambda m: (m.layers[0].bias, m.layers[2].bias), m, (enp.ones(4), enp.ones(2)))
    assert float(new.layers[0].bias.sum()) == 4.0 and float(new.layers[2].bias.sum()) == 2.0
    new = nn.tree_at(lambda m: m.layers[0], m, replace_fn=lambda lin: nn.tree_at(lambda l: l.weight, lin,
                                                                                 lin.weight * 0))  # fmt: skip
    assert float(enp.abs(new.layers[0].weight).sum()) == 0.0


def test_tree_at_errors():
    m = _mlp()
    with pytest.raises(InvalidArgumentError, match="exactly one of replace= and replace_fn="):
        nn.tree_at(lambda m: m.layers[0].bias, m)
    with pytest.raises(InvalidArgumentError, match="exactly one of replace= and replace_fn="):
        nn.tree_at(lambda m: m.layers[0].bias, m, enp.ones(4), replace_fn=lambda x: x)
    with pytest.raises(InvalidArgumentError, match="static field"):
        nn.tree_at(lambda m: m.layers[0].in_features, m, 5)
    with pytest.raises(InvalidArgumentError, match="selected 2 parts but replace has 3"):
        nn.tree_at(lambda m: (m.layers[0].bias, m.layers[2].bias), m, (1, 2, 3))


# --- train / eval -----------------------------------------------------------------------------------------


def test_train_and_eval_return_new_modules():
    m = nn.Sequential(Toggle(), nn.Sequential(Toggle(), nn.Tanh()))
    ev = m.eval()
    assert m.layers[0].training and m.layers[1].layers[0].training  # unchanged
    assert not ev.layers[0].training and not ev.layers[1].layers[0].training
    assert tree.structure(ev) != tree.structure(m)  # the flag is static: jit traces each mode once
    back = ev.train()
    assert back.layers[0].training and back.layers[1].layers[0].training
    assert m.train() is m  # nothing to change: the same module (containers are not rebuilt)
    np.testing.assert_allclose(ev(enp.ones(2)), enp.tanh(enp.ones(2)))
    np.testing.assert_allclose(m(enp.ones(2)), enp.tanh(enp.full(2, 4.0)))


# --- functional_call ------------------------------------------------------------------------------------


def test_functional_call_dict_tuple_and_errors():
    m = _mlp()
    x = enp.ones((2, 3))
    params = {name: p * 0 for name, p in m.named_parameters()}
    np.testing.assert_array_equal(nn.functional_call(m, params, x), np.zeros((2, 2)))
    half = ({"0.weight": params["0.weight"]}, {"0.bias": params["0.bias"]})
    ref = m.layers[2](enp.tanh(enp.zeros((2, 4))))
    np.testing.assert_allclose(nn.functional_call(m, half, x), ref, rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match=r"no parameter '1.weight'; its parameters are \['0.weight'"):
        nn.functional_call(m, {"1.weight": enp.ones(2)}, x)
    with pytest.raises(ShapeError, match=r"'0.bias' has shape \(4,\) in the model but the replacement has shape \(3"):
        nn.functional_call(m, {"0.bias": enp.ones(3)}, x)


def test_functional_call_under_grad_and_vmap():
    m = nn.Linear(3, 2, key=ember.random.key(0))
    x = enp.asarray(np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32))
    params = dict(m.named_parameters())
    g = ember.grad(lambda p: nn.functional_call(m, p, x).sum())(params)
    np.testing.assert_allclose(g["weight"], np.tile(np.asarray(x).sum(0), (2, 1)), rtol=1e-6)
    np.testing.assert_allclose(g["bias"], [4.0, 4.0])
    stacked = {"weight": enp.stack([params["weight"], 2 * params["weight"]]), "bias": enp.stack([params["bias"]] * 2)}
    out = ember.vmap(lambda p: nn.functional_call(m, p, x))(stacked)
    weights = (params["weight"], 2 * params["weight"])
    loop = [np.asarray(x) @ np.asarray(w).T + np.asarray(params["bias"]) for w in weights]
    np.testing.assert_allclose(out, np.stack(loop), rtol=1e-5, atol=1e-6)


def test_functional_call_tied_weights_replace_every_use():
    # One layer twice: its arrays are reachable as "0.*" and "1.*", as torch's tie_weights=True sees them.
    layer = nn.Linear(3, 3, key=ember.random.key(0))
    model = nn.Sequential(layer, layer)
    rng = np.random.default_rng(2)
    w, b, x = (rng.normal(size=shape).astype(np.float32).astype(np.float64) for shape in ((3, 3), (3,), (4, 3)))
    ref = (x @ w.T + b) @ w.T + b
    for name in ("0", "1"):  # either name replaces both uses
        params = {f"{name}.weight": enp.asarray(w), f"{name}.bias": enp.asarray(b)}
        np.testing.assert_allclose(nn.functional_call(model, params, enp.asarray(x)), ref, rtol=1e-5, atol=1e-6)
    same = {"0.weight": enp.asarray(w), "1.bias": enp.asarray(b)}
    same["1.weight"] = same["0.weight"]  # the same array under both names is allowed
    np.testing.assert_allclose(nn.functional_call(model, same, enp.asarray(x)), ref, rtol=1e-5, atol=1e-6)
    # The gradient through one name sums both uses: d/dW sum(W(Wx + b) + b) = 1 (Wx + b)^T + (W^T 1) x^T.
    def loss(weight):
        return nn.functional_call(model, {"1.weight": weight, "0.bias": enp.asarray(b)}, enp.asarray(x)).sum()

    g = ember.grad(loss)(enp.asarray(w))
    y1 = x @ w.T + b
    expected = np.outer(np.ones(3), y1.sum(0)) + np.outer(w.T @ np.ones(3), x.sum(0))
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(InvalidArgumentError, match=r"'0.weight' and '1.weight' are tied .* different values"):
        nn.functional_call(model, {"0.weight": enp.asarray(w), "1.weight": enp.asarray(w)}, enp.asarray(x))


def test_functional_call_tied_fields_of_one_module():
    shared = enp.ones(2)
    m = Affine(shared, shared)  # weight and bias are one array
    out = nn.functional_call(m, {"bias": enp.array([2.0, 3.0])}, enp.array([1.0, 1.0]))
    np.testing.assert_array_equal(out, [4.0, 6.0])  # x * w + b with w = b = [2, 3]
    with pytest.raises(InvalidArgumentError, match=r"'weight' and 'bias' are tied"):
        nn.functional_call(m, {"weight": enp.ones(2), "bias": enp.zeros(2)}, enp.ones(2))
    untied = Affine(enp.ones(2), enp.ones(2))  # equal values in two arrays are not tied
    out = nn.functional_call(untied, {"weight": enp.zeros(2), "bias": enp.array([2.0, 3.0])}, enp.ones(2))
    np.testing.assert_array_equal(out, [2.0, 3.0])


# --- jit ---------------------------------------------------------------------------------------------------


def test_jit_traces_once_per_architecture():
    traces = []

    @ember.jit
    def forward(model, x):
        traces.append(1)
        return model(x)

    k = keys(2, seed=5)
    a, b = _mlp(), nn.Sequential(nn.Linear(3, 4, key=k[0]), nn.Tanh(), nn.Linear(4, 2, key=k[1]))
    x = enp.ones((2, 3))
    np.testing.assert_allclose(forward(a, x), a(x), rtol=1e-6)
    forward(a, x)
    assert len(traces) == 1  # no retrace on the second call
    np.testing.assert_allclose(forward(b, x), b(x), rtol=1e-6)
    assert len(traces) == 1  # two models built alike share one trace
    forward(a.layers[0], x)
    assert len(traces) == 2


# --- errors that name where -------------------------------------------------------------------------------


def test_shape_error_names_the_layer_by_path():
    model = nn.Sequential(nn.Identity(), nn.ReLU(), nn.Conv2d(3, 16, 3, key=ember.random.key(0)))
    with pytest.raises(ShapeError, match=r"^model\.layers\[2\] \(Conv2d\(3, 16, \.\.\.\)\): ") as info:
        model(enp.ones((1, 4, 8, 8)))
    assert "(1, 4, 8, 8)" in str(info.value)
    nested = nn.Sequential(nn.Sequential(nn.Linear(3, 2, key=ember.random.key(0))))
    with pytest.raises(ShapeError, match=r"^model\.layers\[0\]\.layers\[0\] \(Linear\(in_features=3, "
                                         r"out_features=2, \.\.\.\)\): .*in_features=3"):
        nested(enp.ones((2, 5)))
    with pytest.raises(ShapeError, match=r"^Linear: expected an input whose last dimension is in_features=3"):
        nested.layers[0].layers[0](enp.ones((2, 5)))


def test_state_passed_to_a_stateless_model():
    m = _mlp()
    state = nn.State({"0": {"running_mean": enp.zeros(3)}})
    with pytest.raises(InvalidArgumentError, match=r"has no state .* call it as model\(x\)"):
        m(enp.ones((2, 3)), state)
    with pytest.raises(InvalidArgumentError, match=r"Linear has no state .*call it as model\(x\)"):
        m.layers[0](enp.ones((2, 3)), state)
