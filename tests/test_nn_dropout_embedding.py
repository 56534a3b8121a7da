"""Dropout (training-mode statistics, the values PyTorch gives kept and dropped elements, keys, transforms,
eval mode, errors) and Embedding (against PyTorch: lookups, padding_idx, max_norm, scale_grad_by_freq,
from_pretrained, init by distribution, repr, errors)."""

from __future__ import annotations

import numpy as np
import pytest
from nn_parity import assert_close, copy_weights

import ember
import ember.numpy as enp
from ember import nn
from ember.errors import DTypeError, EmberIndexError, InvalidArgumentError, ShapeError
from ember.nn import functional as F

torch = pytest.importorskip("torch")

KEY = ember.random.key(0)

# --- dropout: training-mode statistics ---------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics(p):
    x = enp.ones((200, 500))
    y = np.asarray(F.dropout(x, p, key=KEY))
    zero = (y == 0).mean()
    assert abs(zero - p) < 4 * np.sqrt(p * (1 - p) / y.size)
    assert abs(y.mean() - 1.0) < 4 * np.sqrt(p / (1 - p) / y.size)  # the mean is preserved
    np.testing.assert_allclose(y[y != 0], 1 / (1 - p), rtol=1e-6)
    # PyTorch's kept value is the same 1 / (1 - p)
    t = torch.nn.functional.dropout(torch.ones(1000), p).numpy()
    np.testing.assert_allclose(np.unique(t[t != 0]), np.unique(y[y != 0]), rtol=1e-6)


@pytest.mark.parametrize("fn, shape, channel_shape", [
    ("dropout1d", (40, 50, 6), (40, 50)), ("dropout1d", (400, 6), (400,)),
    ("dropout2d", (40, 50, 3, 2), (40, 50)), ("dropout2d", (400, 2, 3), (400,)),
    ("dropout3d", (40, 50, 2, 1, 2), (40, 50)), ("dropout3d", (400, 1, 2, 2), (400,)),
])  # fmt: skip
def test_channel_dropout_drops_whole_channels(fn, shape, channel_shape):
    p = 0.3
    y = np.asarray(getattr(F, fn)(enp.ones(shape), p, key=KEY))
    per_channel = y.reshape(channel_shape + (-1,))
    assert (per_channel == per_channel[..., :1]).all()
    dropped = (per_channel[..., 0] == 0).mean()
    assert abs(dropped - p) < 4 * np.sqrt(p * (1 - p) / per_channel[..., 0].size)
    np.testing.assert_allclose(np.unique(y[y != 0]), [1 / (1 - p)], rtol=1e-6)


@pytest.mark.parametrize("fn", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_values_and_moments_match_torch(fn):
    p = 0.3
    x = np.zeros((300, 40, 2), np.float32)
    y = np.asarray(getattr(F, fn)(enp.asarray(x), p, True, key=KEY))
    t = getattr(torch.nn.functional, fn)(torch.tensor(x), p, True).numpy()
    # On a zero input the output takes exactly two values: the dropped one and the kept one (PyTorch's affine map).
    np.testing.assert_allclose(np.unique(y), np.unique(t), rtol=1e-5)
    assert abs((y == y.min()).mean() - p) < 0.02
    if fn == "feature_alpha_dropout":
        assert (y == y[..., :1]).all()
    z = np.asarray(ember.random.normal(ember.random.key(3), (200000,)))
    out = np.asarray(getattr(F, fn)(enp.asarray(z.reshape(1000, 200)), p, True, key=KEY))
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02


def test_dropout_identity_cases_and_eval_mode():
    x = enp.arange(6.0).reshape(2, 3)
    assert F.dropout(x, 0.5, training=False) is x or np.array_equal(F.dropout(x, 0.5, training=False), x)
    np.testing.assert_array_equal(F.dropout(x, 0.0), x)  # no key needed when nothing is dropped
    np.testing.assert_array_equal(F.dropout(x, 1.0), np.zeros((2, 3)))
    np.testing.assert_array_equal(F.alpha_dropout(x, 0.5), x)  # PyTorch's default training=False
    for layer in (nn.Dropout(0.5), nn.Dropout1d(0.5), nn.AlphaDropout(0.5), nn.FeatureAlphaDropout(0.5)):
        np.testing.assert_array_equal(layer.eval()(x), x)
        assert layer.training and not layer.eval().training
    assert repr(nn.Dropout2d(0.25)) == repr(torch.nn.Dropout2d(0.25))
    assert repr(nn.AlphaDropout()) == repr(torch.nn.AlphaDropout())


def test_dropout_keys_decide_the_mask():
    x = enp.ones((64,))
    a, b = F.dropout(x, 0.5, key=KEY), F.dropout(x, 0.5, key=KEY)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, F.dropout(x, 0.5, key=ember.random.key(1)))


def test_dropout_under_transforms():
    x = enp.asarray(np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32))
    eager = F.dropout(x, 0.4, key=KEY)
    np.testing.assert_array_equal(ember.jit(lambda x, k: F.dropout(x, 0.4, key=k))(x, KEY), eager)
    # The derivative is the mask scaled by 1 / (1 - p)
    g = ember.grad(lambda x: F.dropout(x, 0.4, key=KEY).sum())(x)
    np.testing.assert_allclose(g, np.where(np.asarray(eager) != 0, 1 / 0.6, 0.0), rtol=1e-6)
    # vmap over keys equals a loop
    keys = ember.random.split(KEY, 5)
    batched = ember.vmap(lambda xi, k: F.dropout(xi, 0.4, key=k))(x, keys)
    for i in range(5):
        np.testing.assert_array_equal(batched[i], F.dropout(x[i], 0.4, key=keys[i]))


def test_sequential_passes_keys_to_dropout():
    model = nn.Sequential(nn.Linear(4, 16, key=KEY), nn.Dropout(0.5), nn.ReLU())
    x = enp.ones((3, 4))
    np.testing.assert_array_equal(model(x, key=ember.random.key(5)), model(x, key=ember.random.key(5)))
    np.testing.assert_array_equal(model.eval()(x), nn.Sequential(*model.layers[::2])(x))


def test_dropout_errors():
    x = enp.ones((2, 3))
    with pytest.raises(InvalidArgumentError, match=r"dropout: training-mode dropout with p > 0 needs a random key: "
                                                   r"pass key=ember.random.key\(seed\)"):
        F.dropout(x, 0.5)
    with pytest.raises(InvalidArgumentError, match=r"Dropout2d|dropout2d: training-mode dropout"):
        nn.Dropout2d(0.5)(enp.ones((1, 2, 2, 2)))
    with pytest.raises(DTypeError, match="dropout: the key=expected a key|dropout: .*expected a key"):
        F.dropout(x, 0.5, key=3)
    with pytest.raises(DTypeError, match="uint32 array of shape \\(2,\\)"):
        F.dropout(x, 0.5, key=enp.array([1, 2]))
    with pytest.raises(ShapeError, match="batch of keys"):
        F.dropout(x, 0.5, key=ember.random.split(KEY, 3))
    with pytest.raises(InvalidArgumentError, match="dropout probability has to be between 0 and 1, but got p=1.5"):
        F.dropout(x, 1.5, key=KEY)
    with pytest.raises(InvalidArgumentError, match="Dropout: dropout probability has to be between 0 and 1"):
        nn.Dropout(-0.1)
    with pytest.raises(ShapeError, match=r"dropout1d: expected a 2-D \(C, L\) or 3-D \(N, C, L\) input, "
                                         r"got shape \(2, 3, 4, 5\)"):
        F.dropout1d(enp.ones((2, 3, 4, 5)), key=KEY)
    with pytest.raises(DTypeError, match="dropout: expected a floating input"):
        F.dropout(enp.ones(3, dtype=int), key=KEY)


# --- embedding ------------------------------------------------------------------------------------------


def _torch_embedding(**kwargs):
    torch.manual_seed(0)
    return torch.nn.Embedding(7, 3, **kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                                    {"scale_grad_by_freq": True, "padding_idx": 0}, {"max_norm": 1.0},
                                    {"max_norm": 0.5, "norm_type": 1.0}, {"max_norm": 1.0, "padding_idx": 3}])
def test_embedding_matches_torch(kwargs):
    tm = _torch_embedding(**kwargs)
    with torch.no_grad():
        tm.weight.mul_(2)  # norms above max_norm
    layer = copy_weights(nn.Embedding(7, 3, **kwargs, key=KEY), tm)
    idx = np.array([[0, 2, 2, 5], [6, 3, 2, 0]], np.int64)
    g = np.random.default_rng(0).standard_normal((2, 4, 3)).astype(np.float32)
    out = layer(enp.asarray(idx, dtype=int))
    grad = ember.grad(lambda w: (nn.functional_call(layer, {"weight": w}, enp.asarray(idx, dtype=int)) * g).sum())(
        layer.weight)
    tout = tm(torch.tensor(idx))
    (tout * torch.tensor(g)).sum().backward()
    assert_close(out, tout, 1e-6, 1e-6, "output")
    assert_close(grad, tm.weight.grad, 1e-6, 1e-6, "grad weight")
    assert repr(layer) == repr(tm)


def test_embedding_max_norm_leaves_the_weight_alone():
    before = np.array([[3.0, 4.0], [0.3, 0.4]], np.float32)
    w = enp.asarray(before)
    out = F.embedding(enp.array([0, 1]), w, max_norm=1.0)
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)
    np.testing.assert_array_equal(w, before)


def test_embedding_init_by_distribution():
    layer = nn.Embedding(1000, 200, padding_idx=5, key=KEY)
    w = np.asarray(layer.weight)
    assert (w[5] == 0).all()
    rest = np.delete(w, 5, axis=0)
    assert abs(rest.mean()) < 0.01 and abs(rest.std() - 1.0) < 0.01  # PyTorch: normal(0, 1)
    assert [n for n, _ in layer.named_parameters()] == ["weight"]
    assert layer.weight.dtype == enp.float32


def test_from_pretrained_and_freeze():
    pre = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    tm = torch.nn.Embedding.from_pretrained(torch.tensor(pre), padding_idx=1)
    frozen = nn.Embedding.from_pretrained(enp.asarray(pre), padding_idx=1)
    idx = enp.array([1, 3, 0])
    assert_close(frozen(idx), tm(torch.tensor([1, 3, 0])))
    assert repr(frozen) == repr(tm)
    assert not tm.weight.requires_grad
    g = ember.grad(lambda m: m(idx).sum())(frozen)
    assert float(enp.abs(g.weight).sum()) == 0.0
    trainable = nn.Embedding.from_pretrained(enp.asarray(pre), freeze=False)
    g = ember.grad(lambda m: m(idx).sum())(trainable)
    assert g.weight[:, 0].tolist() == [1.0, 1.0, 0.0, 1.0]


def test_embedding_under_vmap_and_jit():
    layer = nn.Embedding(5, 2, padding_idx=0, key=KEY)
    idx = enp.array([[0, 1], [4, 4], [2, 3]])
    batched = ember.vmap(layer)(idx)
    np.testing.assert_array_equal(batched, np.asarray(layer.weight)[np.asarray(idx)])
    np.testing.assert_array_equal(ember.jit(layer)(idx), batched)


def test_embedding_errors():
    w = enp.ones((4, 2))
    with pytest.raises(EmberIndexError, match=r"embedding: index 4 is out of range for a weight with 4 rows"):
        F.embedding(enp.array([0, 4]), w)
    with pytest.raises(EmberIndexError, match="index -1 is out of range"):
        F.embedding(enp.array([-1]), w)
    with pytest.raises(DTypeError, match=r"embedding: the indices must be integers, got shape \(2,\) and dtype "
                                         r"float32"):
        F.embedding(enp.array([0.0, 1.0]), w)
    with pytest.raises(ShapeError, match="embedding: weight must be 2-D"):
        F.embedding(enp.array([0]), enp.ones(4))
    with pytest.raises(InvalidArgumentError, match="padding_idx=4 must be within num_embeddings=4"):
        nn.Embedding(4, 2, padding_idx=4, key=KEY)
    with pytest.raises(InvalidArgumentError, match="sparse=True"):
        nn.Embedding(4, 2, sparse=True, key=KEY)
    with pytest.raises(InvalidArgumentError, match="Embedding: its weight is random: pass key="):
        nn.Embedding(4, 2)
    with pytest.raises(ShapeError, match="from_pretrained: embeddings must be 2-D"):
        nn.Embedding.from_pretrained(enp.ones(3))
