"""A small CNN and a small Transformer built from ember.nn train on the bundled digits under
``jit(value_and_grad)``: the loss goes down and the test accuracy ends far above chance. Training
properties, not values: nothing here is compared with numbers ember produced before."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.demo import load_digits
from ember.nn import functional as F


@pytest.fixture(scope="module")
def digits():
    images, labels = load_digits()
    order = np.random.default_rng(0).permutation(len(labels))
    images, labels = images[order], labels[order]
    n_test = 360
    return (images[n_test:], labels[n_test:]), (images[:n_test], labels[:n_test])


def _sgd_train(model, forward, data, steps=150, batch=64, lr=0.05, momentum=0.9):
    """Heavy-ball SGD under jit(value_and_grad); returns the model and the loss of every step."""
    (x, y), _ = data

    def loss_fn(model, xb, yb):
        return F.cross_entropy(forward(model, xb), yb)

    @ember.jit
    def step(model, velocity, xb, yb):
        loss, grads = ember.value_and_grad(loss_fn)(model, xb, yb)
        velocity = ember.tree.map(lambda v, g: momentum * v + g, velocity, grads)
        model = ember.tree.map(lambda p, v: p - lr * v, model, velocity)
        return model, velocity, loss

    velocity = ember.tree.map(enp.zeros_like, model)
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        idx = rng.integers(0, len(y), batch)
        model, velocity, loss = step(model, velocity, enp.asarray(x[idx]), enp.asarray(y[idx]))
        losses.append(float(loss))
    assert step.trace_count == 1  # one trace for every step
    return model, np.array(losses)


def _accuracy(forward, model, data):
    _, (x, y) = data
    return float(np.mean(np.asarray(enp.argmax(forward(model, enp.asarray(x)), axis=-1)) == y))


def test_cnn_trains_on_digits(digits):
    keys = ember.random.split(ember.random.key(0), 4)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, key=keys[0]), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1, key=keys[1]), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(64, 32, key=keys[2]), nn.ReLU(), nn.Linear(32, 10, key=keys[3]))  # fmt: skip

    def forward(model, x):
        return model(x.reshape(-1, 1, 8, 8))

    model, losses = _sgd_train(model, forward, digits)
    assert losses[-20:].mean() < 0.25 * losses[:5].mean()
    assert _accuracy(forward, model, digits) > 0.85


class RowTransformer(nn.Module):
    """Each 8x8 image as a sequence of its 8 rows: embed, one encoder layer, mean over rows, classify."""

    embed: nn.Linear
    encoder: nn.TransformerEncoderLayer
    head: nn.Linear

    def __init__(self, *, key):
        k1, k2, k3 = ember.random.split(key, 3)
        self.embed = nn.Linear(8, 32, key=k1)
        self.encoder = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True, key=k2)
        self.head = nn.Linear(32, 10, key=k3)

    def __call__(self, x, *, key=None):
        tokens = self.embed(x.reshape(*x.shape[:-1], 8, 8)) + enp.arange(8.0)[:, None] * 0.1
        return self.head(self.encoder(tokens).mean(axis=-2))


def test_transformer_trains_on_digits(digits):
    model = RowTransformer(key=ember.random.key(0))
    model, losses = _sgd_train(model, lambda m, x: m(x), digits, steps=250, lr=0.1)
    assert losses[-20:].mean() < 0.4 * losses[:5].mean()
    assert _accuracy(lambda m, x: m(x), model, digits) > 0.75
