"""PyTorch interop: nn.from_torch (every supported layer, a mixed model with BatchNorm in train and eval
mode, names, training flags, unsupported modules), nn.to_torch_state_dict round trips, ensembles with
nn.stack_modules against torch.func, and per-sample gradients against a loop and torch.func."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import OrderedDict

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, tree
from ember.errors import InvalidArgumentError

torch = pytest.importorskip("torch")
T = torch.nn
F = nn.functional


def to_np(t):
    return t.detach().cpu().numpy()


def first(out):
    while isinstance(out, tuple):
        out = out[0]
    return out


def r(*shape):
    return torch.randn(*shape)


# --- every supported layer: forward parity, names, repr, state_dict round trip ---------------------------

LAYERS = [
    lambda: (T.Linear(3, 4), r(2, 3)),
    lambda: (T.Linear(3, 4, bias=False), r(0, 3)),
    lambda: (T.Bilinear(3, 2, 4), (r(5, 3), r(5, 2))),
    lambda: (T.Conv1d(2, 4, 3, padding="same", dilation=2), r(2, 2, 9)),
    lambda: (T.Conv2d(4, 6, 3, groups=2, padding=1, padding_mode="reflect"), r(2, 4, 7, 6)),
    lambda: (T.Conv3d(2, 3, 2, stride=(1, 2, 1), bias=False), r(1, 2, 4, 5, 4)),
    lambda: (T.ConvTranspose1d(2, 3, 3, stride=2, output_padding=1), r(2, 2, 5)),
    lambda: (T.ConvTranspose2d(2, 4, 3, stride=2, groups=2, bias=False, dilation=2), r(1, 2, 4, 4)),
    lambda: (T.ConvTranspose3d(2, 2, 2), r(1, 2, 3, 3, 3)),
    lambda: (T.MaxPool1d(2), r(1, 2, 7)),
    lambda: (T.MaxPool2d(3, 2, 1, ceil_mode=True), r(1, 2, 7, 7)),
    lambda: (T.AvgPool2d(2, padding=1, count_include_pad=False), r(1, 2, 5, 5)),
    lambda: (T.AvgPool3d(2), r(1, 1, 4, 4, 4)),
    lambda: (T.LPPool2d(2, 2), r(1, 2, 4, 4)),
    lambda: (T.AdaptiveAvgPool2d((2, 3)), r(1, 2, 7, 8)),
    lambda: (T.AdaptiveMaxPool1d(3), r(1, 2, 7)),
    lambda: (T.Embedding(10, 3, padding_idx=2), torch.tensor([[1, 2, 9]])),
    lambda: (T.LayerNorm((3, 4)), r(2, 3, 4)),
    lambda: (T.LayerNorm(4, elementwise_affine=False), r(2, 4)),
    lambda: (T.RMSNorm(4, eps=1e-5), r(2, 4)),
    lambda: (T.GroupNorm(2, 4), r(2, 4, 5)),
    lambda: (T.InstanceNorm2d(3, affine=True), r(2, 3, 4, 4)),
    lambda: (T.LocalResponseNorm(2), r(1, 4, 3, 3)),
    lambda: (T.BatchNorm1d(3, momentum=0.3).eval(), r(4, 3)),
    lambda: (T.BatchNorm2d(3, affine=False), r(4, 3, 2, 2)),
    lambda: (T.BatchNorm1d(3, momentum=None), r(4, 3, 5)),  # a cumulative average, in training mode
    lambda: (T.BatchNorm3d(2, track_running_stats=False), r(2, 2, 2, 2, 2)),
    lambda: (T.Dropout(0.3).eval(), r(3, 4)),
    lambda: (T.MultiheadAttention(8, 2, batch_first=True, kdim=5, vdim=6).eval(), (r(2, 3, 8), r(2, 4, 5), r(2, 4, 6))),
    lambda: (T.MultiheadAttention(8, 2, add_bias_kv=True, bias=False).eval(), (r(3, 2, 8), r(3, 2, 8), r(3, 2, 8))),
    lambda: (T.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True, activation="gelu").eval(),
             r(2, 5, 8)),
    lambda: (T.TransformerDecoderLayer(8, 2, 16).eval(), (r(5, 2, 8), r(4, 2, 8))),
    lambda: (T.TransformerEncoder(T.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2, norm=T.LayerNorm(8),
                                  enable_nested_tensor=False).eval(), r(2, 5, 8)),
    lambda: (T.TransformerDecoder(T.TransformerDecoderLayer(8, 2, 16), 2).eval(), (r(5, 2, 8), r(4, 2, 8))),
    lambda: (T.RNN(3, 4, 2, nonlinearity="relu"), r(5, 2, 3)),
    lambda: (T.LSTM(3, 4, bidirectional=True, proj_size=2, batch_first=True), r(2, 5, 3)),
    lambda: (T.GRU(3, 4, 2, bias=False), r(5, 2, 3)),
    lambda: (T.RNNCell(3, 4, nonlinearity="relu"), r(2, 3)),
    lambda: (T.LSTMCell(3, 4), r(2, 3)),
    lambda: (T.GRUCell(3, 4, bias=False), r(2, 3)),
    lambda: (T.Identity(), r(2)),
    lambda: (T.Flatten(0, 1), r(2, 3, 4)),
    lambda: (T.Unflatten(1, (2, 3)), r(4, 6)),
    lambda: (T.PReLU(3, init=0.1), r(2, 3, 4)),
    lambda: (T.LeakyReLU(0.2), r(5)),
    lambda: (T.ELU(0.5), r(5)),
    lambda: (T.GELU("tanh"), r(5)),
    lambda: (T.Softmax(dim=0), r(3, 2)),
    lambda: (T.LogSoftmax(1), r(2, 3)),
    lambda: (T.Hardtanh(-2, 3), 3 * r(5)),
    lambda: (T.ReLU6(), 5 * r(5)),
    lambda: (T.Threshold(0.1, 20), r(5)),
    lambda: (T.Softplus(2, 1), r(5)),
    lambda: (T.GLU(0), r(4, 3)),
    lambda: (T.CELU(0.7), r(5)),
    lambda: (T.Softshrink(0.3), r(5)),
    lambda: (T.CrossEntropyLoss(weight=torch.rand(3), label_smoothing=0.1, ignore_index=1),
             (r(4, 3), torch.tensor([0, 1, 2, 2]))),
    lambda: (T.BCEWithLogitsLoss(pos_weight=torch.rand(3)), (r(4, 3), torch.rand(4, 3))),
    lambda: (T.HuberLoss(delta=0.5, reduction="sum"), (r(4), r(4))),
    lambda: (T.KLDivLoss(reduction="batchmean", log_target=True), (r(3, 2), r(3, 2))),
    lambda: (T.SmoothL1Loss(beta=0.3), (r(5), r(5))),
    lambda: (T.NLLLoss(reduction="none"), (r(3, 4), torch.tensor([0, 3, 1]))),
    lambda: (T.CosineSimilarity(dim=0), (r(3, 2), r(3, 2))),
    lambda: (T.PairwiseDistance(p=1.5, keepdim=True), (r(3, 2), r(3, 2))),
    lambda: (T.PixelShuffle(2), r(1, 8, 2, 2)),
    lambda: (T.Upsample(scale_factor=2, mode="nearest"), r(1, 1, 2, 2)),
]


def _case_id(make):
    torch.manual_seed(0)
    return type(make()[0]).__name__


@pytest.mark.parametrize("make", LAYERS, ids=[_case_id(m) + f"-{i}" for i, m in enumerate(LAYERS)])
def test_from_torch_layer(make):
    torch.manual_seed(0)
    module, inputs = make()
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    converted = nn.from_torch(module)
    stateful = isinstance(converted, tuple)
    model, state = converted if stateful else (converted, None)
    assert type(model).__name__ == type(module).__name__
    names, torch_names = [n for n, _ in model.named_parameters()], [n for n, _ in module.named_parameters()]
    assert [n for n in names if n in torch_names] == torch_names
    assert set(names) - set(torch_names) <= set(dict(module.named_buffers()))  # a loss's weight: a buffer in torch
    ours = [enp.asarray(to_np(x)) for x in inputs]
    out = model(*ours, state) if stateful else model(*ours)
    with torch.no_grad():
        ref = module(*inputs)
    np.testing.assert_allclose(np.asarray(first(out)), to_np(first(ref)), rtol=2e-5, atol=2e-5)
    if stateful and module.training:  # torch updated its running statistics in place; ember returned them
        for name, buffer in module.named_buffers():
            np.testing.assert_allclose(np.asarray(out[1][name]), to_np(buffer), rtol=1e-5, atol=1e-6, err_msg=name)
    # back: torch's load_state_dict accepts ember's arrays, and nothing is missing or left over
    copy = make()[0]
    result = copy.load_state_dict(nn.to_torch_state_dict(model, state if stateful else None))
    assert not result.missing_keys and not result.unexpected_keys


def test_from_torch_copies_weights():
    layer = T.Linear(2, 2)
    ours = nn.from_torch(layer)
    before = np.asarray(ours.weight).copy()
    with torch.no_grad():
        layer.weight.add_(1.0)  # a later in-place update of the torch module leaves the ember one alone
    np.testing.assert_array_equal(ours.weight, before)


# --- a mixed model: conv + batch norm + pool + linear ---------------------------------------------------


def _mixed():
    torch.manual_seed(1)
    return T.Sequential(OrderedDict(
        features=T.Sequential(T.Conv2d(3, 8, 3, padding=1), T.BatchNorm2d(8), T.ReLU(), T.MaxPool2d(2),
                              T.Conv2d(8, 4, 3, bias=False), T.BatchNorm2d(4, momentum=0.2), T.ReLU()),
        pool=T.AdaptiveAvgPool2d(1), flat=T.Flatten(), drop=T.Dropout(0.0),
        head=T.Sequential(T.Linear(4, 6), T.Tanh(), T.Linear(6, 3)),
    ))  # fmt: skip


def _warm_statistics(module):
    """Running statistics that are not the initial zeros/ones: a few training batches."""
    with torch.no_grad():
        for _ in range(2):
            module(r(4, 3, 8, 8) * 2 + 1)


def test_mixed_model_eval_mode():
    module = _mixed()
    _warm_statistics(module)
    module.eval()
    model, state = nn.from_torch(module)
    assert not model.layers[0].layers[1].training and state.keys() == ["features.1", "features.5"]
    assert [n for n, _ in state.named_buffers()] == [n for n, _ in module.named_buffers()]
    x = r(5, 3, 8, 8)
    out, new_state = model(enp.asarray(to_np(x)), state)
    with torch.no_grad():
        ref = module(x)
    np.testing.assert_allclose(out, to_np(ref), rtol=1e-5, atol=1e-5)
    for name, buffer in module.named_buffers():  # eval mode leaves the statistics alone
        np.testing.assert_allclose(new_state[name], to_np(buffer), rtol=0, atol=0, err_msg=name)


def test_mixed_model_train_mode_outputs_statistics_and_gradients():
    module = _mixed()
    _warm_statistics(module)
    module.train()
    model, state = nn.from_torch(module)
    assert model.layers[0].layers[1].training
    x = r(5, 3, 8, 8)
    xe = enp.asarray(to_np(x))
    out, new_state = model(xe, state)
    ref = module(x)
    np.testing.assert_allclose(out, to_np(ref), rtol=1e-5, atol=1e-5)
    for name, buffer in module.named_buffers():  # torch updated its buffers in place during the forward
        np.testing.assert_allclose(new_state[name], to_np(buffer), rtol=1e-5, atol=1e-6, err_msg=name)
    (ref ** 2).sum().backward()
    grads = ember.grad(lambda m: (m(xe, state)[0] ** 2).sum())(model)
    torch_grads = {n: p.grad for n, p in module.named_parameters()}
    for name, g in grads.named_parameters():
        np.testing.assert_allclose(g, to_np(torch_grads[name]), rtol=1e-4, atol=1e-5, err_msg=name)


def test_round_trip_to_torch_state_dict():
    """ember -> state_dict -> torch -> same outputs; torch -> ember -> state_dict equals torch's own."""
    k = ember.random.split(ember.random.key(0), 3)
    model, state = nn.make_with_state(nn.Sequential)(
        nn.Conv2d(3, 4, 3, key=k[0]), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 2, key=k[1]))
    x = enp.asarray(np.random.default_rng(0).normal(size=(3, 3, 6, 6)), dtype="float32")
    _, state = model(x, state)  # non-trivial statistics
    module = T.Sequential(T.Conv2d(3, 4, 3), T.BatchNorm2d(4), T.ReLU(), T.Flatten(), T.Linear(64, 2))
    result = module.load_state_dict(nn.to_torch_state_dict(model, state))
    assert not result.missing_keys and not result.unexpected_keys
    for mode in ("eval", "train"):  # eval first: torch's training forward updates its statistics in place
        ours = model.train(mode == "train")
        getattr(module, mode)()
        out, _ = ours(x, state)
        with torch.no_grad():
            ref = module(torch.tensor(np.asarray(x)))
        np.testing.assert_allclose(out, to_np(ref), rtol=1e-5, atol=1e-5, err_msg=mode)
    # and back again: the state dict of the converted module is torch's, name for name and value for value
    converted, converted_state = nn.from_torch(module)
    back = nn.to_torch_state_dict(converted, converted_state)
    mine = module.state_dict()
    assert list(back) == list(mine)
    for name in mine:
        np.testing.assert_array_equal(to_np(back[name]), to_np(mine[name]), err_msg=name)


def test_to_torch_state_dict_needs_the_state_of_a_stateful_model():
    model, _ = nn.from_torch(T.Sequential(T.Linear(2, 2), T.BatchNorm1d(2)))
    with pytest.raises(InvalidArgumentError, match=r"has running statistics \(BatchNorm\); pass its state: "
                                                   r"nn.to_torch_state_dict\(model, state\)"):
        nn.to_torch_state_dict(model)


def test_to_torch_state_dict_dtypes():
    layer = nn.Linear(2, 3, dtype="bfloat16", key=ember.random.key(0))
    sd = nn.to_torch_state_dict(layer)
    assert sd["weight"].dtype == torch.bfloat16
    np.testing.assert_array_equal(to_np(sd["weight"].float()), np.asarray(layer.weight, np.float32))
    back = nn.from_torch(T.Linear(2, 3).to(torch.bfloat16))
    assert back.weight.dtype.name == "bfloat16"


def test_from_torch_keeps_torch_dtypes():
    module = T.Sequential(T.Linear(2, 2), T.BatchNorm1d(2))
    model, state = nn.from_torch(module)
    assert model.layers[1].weight.dtype == "float32" and state["1.running_mean"].dtype == "float32"
    assert state["1.num_batches_tracked"].dtype == "int32"  # ember's default integer while x64 is off
    with ember.config.x64(True):
        model, state = nn.from_torch(module)  # float32 stays float32 (the statistics too), not the x64 default
        assert model.layers[0].weight.dtype == "float32" and state["1.running_var"].dtype == "float32"
        assert state["1.num_batches_tracked"].dtype == "int64"
        model, state = nn.from_torch(module.double())
        assert model.layers[0].weight.dtype == "float64" and state["1.running_var"].dtype == "float64"
        x = torch.randn(4, 2, dtype=torch.float64)
        out, _ = model(enp.asarray(to_np(x)), state)
        np.testing.assert_allclose(out, to_np(module(x)), rtol=1e-12, atol=1e-12)


def test_a_module_with_loss_buffers_returns_no_state():
    weight = torch.tensor([1.0, 2.0, 0.5])
    converted = nn.from_torch(T.ModuleDict({"loss": T.CrossEntropyLoss(weight=weight), "act": T.ReLU()}))
    assert isinstance(converted, nn.ModuleDict) and list(converted) == ["loss", "act"]
    np.testing.assert_array_equal(converted["loss"].weight, to_np(weight))


# --- training flags, names, containers ------------------------------------------------------------------


def test_training_flags_follow_each_torch_module():
    module = T.Sequential(T.Dropout(0.5), T.Sequential(T.Dropout(0.2), T.Linear(2, 2)))
    module[1].eval()
    model = nn.from_torch(module)
    assert model.layers[0].training and not model.layers[1].layers[0].training
    assert not any(getattr(m, "training", False) for m in nn.from_torch(module.eval()).modules())


def test_named_sequentials_and_container_subclasses():
    class ConvBnAct(T.Sequential):  # as torchvision's Conv2dNormActivation: a Sequential without its own forward
        def __init__(self, cin, cout):
            super().__init__(T.Conv2d(cin, cout, 1), T.BatchNorm2d(cout), T.ReLU())

    module = T.Sequential(OrderedDict(stem=ConvBnAct(3, 4), blocks=T.ModuleList([T.Identity()]), out=T.Flatten()))
    model, state = nn.from_torch(module)
    assert [n for n, _ in model.named_modules()] == [n for n, _ in module.named_modules()]
    assert state.keys() == ["stem.1"]
    assert list(nn.to_torch_state_dict(model, state)) == list(module.state_dict())


# --- unsupported modules ----------------------------------------------------------------------------------


class MyBlock(T.Module):
    def __init__(self):
        super().__init__()
        self.conv = T.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        return x + self.conv(x)


def test_unsupported_module_names_its_path_and_what_to_do():
    module = T.Sequential(OrderedDict(features=T.Sequential(T.Conv2d(3, 4, 1), T.ReLU(), T.Identity(), MyBlock()),
                                      head=T.Linear(4, 2)))  # fmt: skip
    with pytest.raises(InvalidArgumentError) as info:
        nn.from_torch(module)
    message = str(info.value)
    assert message.startswith("nn.from_torch: cannot convert features.3 (MyBlock): ")
    assert f"{MyBlock.__module__}.MyBlock is not a torch.nn layer" in message
    assert "Rebuild it as an ember.nn.Module subclass" in message and "convert its supported children" in message
    # as the message says: its children convert
    conv = nn.from_torch(module.features[3].conv)
    assert isinstance(conv, nn.Conv2d) and conv.padding == (1, 1)


def test_unsupported_root_subclass_and_non_module():
    class MyLinear(T.Linear):  # a torch layer's subclass may change forward: not converted as the layer
        def forward(self, x):
            return super().forward(x) * 2

    with pytest.raises(InvalidArgumentError, match=r"cannot convert <root> \(MyLinear\): .*MyLinear is not a torch.nn "
                                                   r"layer"):
        nn.from_torch(MyLinear(2, 2))
    with pytest.raises(InvalidArgumentError, match=r"cannot convert blocks.0 \(MyBlock\)"):
        nn.from_torch(T.ModuleDict({"blocks": T.ModuleList([MyBlock()])}))
    with pytest.raises(InvalidArgumentError, match="expected a torch.nn.Module, got dict"):
        nn.from_torch({"weight": torch.ones(2)})


def test_ember_nn_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import ember, ember.numpy as enp\nfrom ember import nn\n"
            "m = nn.Linear(2, 2, key=ember.random.key(0)); m(enp.ones(2))\n"
            "try:\n    nn.from_torch(object())\nexcept ember.errors.InvalidArgumentError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "nn.from_torch needs PyTorch: pip install torch" in out.stdout


# --- ensembles --------------------------------------------------------------------------------------------


def _small_mlp():
    return T.Sequential(T.Linear(5, 8), T.Tanh(), T.Linear(8, 3))


def test_stack_modules_ensemble_equals_loop_and_torch_func():
    torch.manual_seed(2)
    modules = [_small_mlp() for _ in range(4)]
    models = [nn.from_torch(m) for m in modules]
    ensemble = nn.stack_modules(models)
    assert ensemble.layers[0].weight.shape == (4, 8, 5)
    x = r(6, 5)
    xe = enp.asarray(to_np(x))
    out = ember.vmap(lambda m, x: m(x), in_axes=(0, None))(ensemble, xe)
    loop = np.stack([np.asarray(m(xe)) for m in models])
    np.testing.assert_allclose(out, loop, rtol=1e-6, atol=1e-6)
    params, buffers = torch.func.stack_module_state(modules)
    base = _small_mlp().to("meta")
    ref = torch.vmap(lambda p, b, x: torch.func.functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))(
        params, buffers, x)
    np.testing.assert_allclose(out, to_np(ref), rtol=1e-5, atol=1e-6)
    # each model its own batch
    xs = r(4, 6, 5)
    out = ember.vmap(lambda m, x: m(x))(ensemble, enp.asarray(to_np(xs)))
    ref = torch.vmap(lambda p, b, x: torch.func.functional_call(base, (p, b), (x,)))(params, buffers, xs)
    np.testing.assert_allclose(out, to_np(ref), rtol=1e-5, atol=1e-6)
    with pytest.raises(InvalidArgumentError, match="differs from model 0"):
        nn.stack_modules([models[0], nn.from_torch(T.Sequential(T.Linear(5, 8), T.ReLU(), T.Linear(8, 3)))])


# --- per-sample gradients ---------------------------------------------------------------------------------


def test_per_sample_gradients_of_a_cnn():
    torch.manual_seed(3)
    module = T.Sequential(T.Conv2d(1, 4, 3), T.ReLU(), T.MaxPool2d(2), T.Flatten(), T.Linear(4 * 3 * 3, 10))
    model = nn.from_torch(module)
    x, y = r(6, 1, 8, 8), torch.randint(0, 10, (6,))
    xe, ye = enp.asarray(to_np(x)), enp.asarray(to_np(y))

    def loss(m, xi, yi):
        return F.cross_entropy(m(xi[None]), yi[None])

    per_example = ember.vmap(ember.grad(loss), in_axes=(None, 0, 0))(model, xe, ye)
    loop = [ember.grad(loss)(model, xe[i], ye[i]) for i in range(6)]
    params = {k: v.detach() for k, v in module.named_parameters()}

    def torch_loss(p, xi, yi):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(module, p, (xi[None],)), yi[None])

    ref = torch.func.vmap(torch.func.grad(torch_loss), in_dims=(None, 0, 0))(params, x, y)
    assert [n for n, _ in per_example.named_parameters()] == list(ref)
    for name, g in per_example.named_parameters():
        assert g.shape == (6, *params[name].shape)
        by_loop = np.stack([np.asarray(dict(gi.named_parameters())[name]) for gi in loop])
        np.testing.assert_allclose(g, by_loop, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(g, to_np(ref[name]), rtol=1e-4, atol=1e-5, err_msg=name)


# --- speed --------------------------------------------------------------------------------------------------


def _resnet18_sized():
    """ResNet-18's Conv2d/BatchNorm2d/ReLU/MaxPool2d/AdaptiveAvgPool2d/Linear layers and sizes in one Sequential."""
    layers = [T.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), T.BatchNorm2d(64), T.ReLU(), T.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for block in range(2):
            s = stride if block == 0 else 1
            layers += [T.Conv2d(cin, cout, 3, stride=s, padding=1, bias=False), T.BatchNorm2d(cout), T.ReLU(),
                       T.Conv2d(cout, cout, 3, padding=1, bias=False), T.BatchNorm2d(cout)]
            if s != 1 or cin != cout:
                layers += [T.Conv2d(cin, cout, 1, stride=s, bias=False), T.BatchNorm2d(cout)]
            layers.append(T.ReLU())
            cin = cout
    return T.Sequential(*layers, T.AdaptiveAvgPool2d(1), T.Flatten(), T.Linear(512, 1000))


def test_from_torch_of_a_resnet18_sized_tree_is_fast():
    module = _resnet18_sized()
    assert 11_600_000 < sum(p.numel() for p in module.parameters()) < 11_800_000
    times = []
    for _ in range(2):
        start = time.perf_counter()
        model, state = nn.from_torch(module)
        times.append(time.perf_counter() - start)
    assert min(times) < 1.0, times  # about 0.1 s: no random initial weights are drawn
    assert len(tree.leaves(model)) == len(list(module.parameters())) and len(state) == 20


def test_a_module_used_twice_converts_to_one_module_used_twice():
    # torch's named_children() lists a repeated child once; the conversion must keep both applications, tied.
    torch.manual_seed(0)
    shared = torch.nn.Linear(3, 3)
    t = torch.nn.Sequential(shared, torch.nn.Tanh(), shared)
    model = nn.from_torch(t)
    assert model.layers[0] is model.layers[2] and len(model) == 3
    x = to_np(r(4, 3))
    np.testing.assert_allclose(model(enp.asarray(x)), to_np(t(torch.tensor(x))), rtol=1e-5, atol=1e-6)
    assert list(nn.to_torch_state_dict(model)) == list(t.state_dict())
    # tied in functional_call too: one name replaces both uses
    w = np.zeros((3, 3), np.float32)
    np.testing.assert_allclose(nn.functional_call(model, {"2.weight": enp.asarray(w)}, enp.asarray(x)),
                               np.broadcast_to(to_np(shared.bias), (4, 3)), rtol=1e-6)
    listed = nn.from_torch(torch.nn.ModuleList([shared, shared]))
    assert len(listed) == 2 and listed[0] is listed[1]
