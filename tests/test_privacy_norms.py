"""ember.privacy's per_example_norms and clipped_grad against materialised per-example gradients.

The reference is ``vmap(grad(loss))`` (and torch.func's per-sample gradients for the MLP), with the
norms and the clipped sum taken in NumPy, float64. Each model runs with the cost model's choice and
with the Gram and the direct side forced, so both formulas are checked on every kind of use.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn, random
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.nn import functional as F
from ember.privacy import _uses
from ember.privacy._ghost import clipped_grad, per_example_norms

RNG = np.random.default_rng(0)
KEYS = random.split(random.key(0), 8)


def per_example_grads(loss, params, batch):
    """Each example's gradient, flattened to a row of a float64 matrix (float leaves only)."""
    g = ember.vmap(ember.grad(loss), in_axes=(None, *[0] * len(batch)))(params, *batch)
    rows = [np.asarray(x, np.float64).reshape(len(batch[0]), -1) for x in ember.tree.leaves(g)]
    return np.concatenate(rows, axis=1), g


def reference_norms(loss, params, batch):
    return np.linalg.norm(per_example_grads(loss, params, batch)[0], axis=1)


def reference_clipped(loss, params, batch, max_norm):
    """The clipped sum leaf by leaf, from the materialised per-example gradients, and the sum of the
    terms' magnitudes."""
    flat, g = per_example_grads(loss, params, batch)
    norms = np.linalg.norm(flat, axis=1)
    w = np.where(norms > max_norm, max_norm / np.where(norms > 0, norms, 1), 1.0)
    leaves = [np.asarray(x, np.float64) for x in ember.tree.leaves(g)]
    return [(np.tensordot(w, x, axes=1), np.tensordot(w, np.abs(x), axes=1)) for x in leaves], norms


def assert_sums_close(got, want, rtol):
    """Each entry within `rtol` of itself plus the largest term anywhere in the gradient: entries that
    cancel to ~0 (attention's key bias has a zero gradient) carry the rounding of the backward pass's
    larger intermediates, in the reference as much as in ember."""
    largest = max(scale.max() for _, scale in want)
    for g, (w, _) in zip(ember.tree.leaves(got), want):
        np.testing.assert_array_less(np.abs(np.asarray(g, np.float64) - w), rtol * (np.abs(w) + largest) + 1e-300)


# --- models -------------------------------------------------------------------------------------


def f32(*shape):
    return enp.asarray(RNG.normal(size=shape).astype(np.float32))


def labels(n, *shape):
    return enp.asarray(RNG.integers(0, n, shape).astype(np.int32))


def cross_entropy(model, x, y):
    return F.cross_entropy(model(x)[None], y[None])


def image_cross_entropy(model, x, y):
    return F.cross_entropy(model(x[None]), y[None])


class EmbeddingLSTM(nn.Module):
    emb: nn.Embedding
    lstm: nn.LSTM
    head: nn.Linear

    def __init__(self, key):
        a, b, c = random.split(key, 3)
        self.emb, self.lstm, self.head = nn.Embedding(11, 4, key=a), nn.LSTM(4, 5, key=b), nn.Linear(5, 2, key=c)

    def __call__(self, tokens):
        out, _ = self.lstm(self.emb(tokens)[:, None])
        return self.head(out[-1, 0])


class Tied(nn.Module):
    """An embedding reused (transposed) as the output layer, and one Linear applied twice."""

    emb: nn.Embedding
    lin: nn.Linear

    def __init__(self, key):
        a, b = random.split(key)
        self.emb, self.lin = nn.Embedding(9, 4, key=a), nn.Linear(4, 4, key=b)

    def __call__(self, tokens):
        h = self.lin(enp.tanh(self.lin(self.emb(tokens))))
        return h @ self.emb.weight.T


TARGET = enp.asarray(RNG.normal(size=(5, 1, 8)).astype(np.float32))


def transformer_loss(model, x):
    # Not ||LayerNorm(.)||²: that is constant in the layer's input, so its gradient there is pure cancellation.
    return enp.sum(enp.tanh(model(x[:, None])) * TARGET)


def sequence_cross_entropy(model, tokens, y):
    return F.cross_entropy(model(tokens), y)


def elementwise_loss(p, x):
    return enp.sum(enp.sin(p["a"] * x)) + enp.sum((p["w"] @ x) ** 2)


def mlp():
    model = nn.Sequential(nn.Linear(6, 5, key=KEYS[0]), nn.ReLU(), nn.Linear(5, 3, key=KEYS[1]))
    return cross_entropy, model, (f32(4, 6), labels(3, 4))


def cnn():
    model = nn.Sequential(nn.Conv2d(2, 4, 3, key=KEYS[2]), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(36, 3, key=KEYS[3]))  # fmt: skip
    return image_cross_entropy, model, (f32(3, 2, 8, 8), labels(3, 3))


def strided_cnn():
    model = nn.Sequential(nn.Conv2d(2, 3, (3, 2), stride=2, padding=1, dilation=(1, 2), key=KEYS[2]), nn.Tanh(),
                          nn.AvgPool2d(2), nn.Flatten(), nn.Linear(12, 3, key=KEYS[3]))  # fmt: skip
    return image_cross_entropy, model, (f32(3, 2, 7, 9), labels(3, 3))


def transposed_cnn():
    # The kernel reaches the convolution through reshape, transpose and rev (flipped): still ghost.
    model = nn.Sequential(nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1, key=KEYS[2]), nn.Tanh(),
                          nn.AvgPool2d(4), nn.Flatten(), nn.Linear(12, 3, key=KEYS[3]))  # fmt: skip
    return image_cross_entropy, model, (f32(3, 2, 4, 4), labels(3, 3))


def embedding_lstm():
    return cross_entropy, EmbeddingLSTM(KEYS[4]), (labels(11, 3, 7), labels(2, 3))


def transformer():
    model = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, key=KEYS[5])
    return transformer_loss, model, (f32(3, 5, 8),)


def tied():
    return sequence_cross_entropy, Tied(KEYS[6]), (labels(9, 3, 5), labels(9, 3, 5))


def elementwise():
    return elementwise_loss, {"a": f32(3), "w": f32(2, 3)}, (f32(4, 3),)


MODELS = [mlp, cnn, strided_cnn, transposed_cnn, embedding_lstm, transformer, tied, elementwise]


@pytest.fixture(params=[None, "gram", "direct"])
def prefer(request, monkeypatch):
    monkeypatch.setattr(_uses, "PREFER", request.param)
    return request.param


@pytest.mark.parametrize("make", MODELS, ids=lambda m: m.__name__)
def test_norms_match_materialised(make, prefer):
    loss, params, batch = make()
    got = per_example_norms(loss)(params, batch)
    assert got.shape == (len(batch[0]),) and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), reference_norms(loss, params, batch), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("make", MODELS, ids=lambda m: m.__name__)
def test_clipped_grad_matches_materialised(make, prefer):
    loss, params, batch = make()
    max_norm = float(np.median(reference_norms(loss, params, batch)))
    want, norms = reference_clipped(loss, params, batch, max_norm)
    got, got_norms = clipped_grad(loss, max_norm, return_norms=True)(params, batch)
    assert ember.tree.structure(got) == ember.tree.structure(params)
    assert_sums_close(got, want, rtol=2e-5)
    np.testing.assert_allclose(np.asarray(got_norms), norms, rtol=2e-5)
    assert np.any(norms > max_norm) and np.any(norms < max_norm)  # the bound clips some, not all


def test_mlp_matches_torch_per_sample_gradients():
    torch = pytest.importorskip("torch")
    from torch.func import functional_call, grad, vmap

    loss, model, (x, y) = mlp()
    tm = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)).double()
    with torch.no_grad():
        for i in (0, 2):
            tm[i].weight.copy_(torch.from_numpy(np.asarray(model.layers[i].weight, np.float64)))
            tm[i].bias.copy_(torch.from_numpy(np.asarray(model.layers[i].bias, np.float64)))
    params = {k: v.detach() for k, v in tm.named_parameters()}

    def one(p, xi, yi):
        return torch.nn.functional.cross_entropy(functional_call(tm, p, (xi[None],)), yi[None])

    g = vmap(grad(one), in_dims=(None, 0, 0))(params, torch.from_numpy(np.asarray(x, np.float64)),
                                               torch.from_numpy(np.asarray(y, np.int64)))  # fmt: skip
    want = torch.sqrt(sum((v.reshape(len(x), -1) ** 2).sum(1) for v in g.values())).numpy()
    np.testing.assert_allclose(np.asarray(per_example_norms(loss)(model, (x, y))), want, rtol=2e-5)


def test_which_leaves_are_ghost():
    loss, model, batch = transformer()
    report = dict(line.split(": ", 1) for line in per_example_norms(loss).explain(model, batch).splitlines())
    packed = "ghost (dot_general T=5, dot_general T=5, dot_general T=5 on 3 disjoint slices;"
    assert report[".self_attn.in_proj_weight"].startswith(packed)
    assert report[".linear1.weight"].startswith("ghost (dot_general T=5;")
    assert report[".norm1.weight"] == "fallback, per-example gradient materialised (used by mul)"
    loss, model, batch = embedding_lstm()
    report = dict(line.split(": ", 1) for line in per_example_norms(loss).explain(model, batch).splitlines())
    assert report[".emb.weight"].startswith("ghost (gather T=7;")
    assert report[".lstm.flat_weights['weight_hh_l0']"].startswith("fallback")
    assert "scan" in report[".lstm.flat_weights['weight_hh_l0']"]
    loss, model, batch = tied()
    report = dict(line.split(": ", 1) for line in per_example_norms(loss).explain(model, batch).splitlines())
    assert report[".emb.weight"].startswith("ghost (gather T=5, dot_general T=5 transposed;")
    assert report[".lin.weight"].startswith("ghost (dot_general T=5, dot_general T=5;")
    loss, model, batch = transposed_cnn()
    flipped = per_example_norms(loss).explain(model, batch)
    assert flipped.startswith(".layers[0].weight: ghost (conv_general_dilated T=64;")
    grouped = nn.Conv1d(4, 4, 3, groups=2, key=KEYS[7])
    report = per_example_norms(lambda m, x: enp.sum(m(x[None]) ** 2)).explain(grouped, (f32(2, 4, 5),))
    assert report.splitlines()[0] == (".weight: fallback, per-example gradient materialised (used by "
                                      "conv_general_dilated with feature_group_count=2, batch_group_count=1)")
    loss, params, batch = elementwise()
    report = per_example_norms(loss).explain(params, batch).splitlines()
    assert report == ["['a']: fallback, per-example gradient materialised (used by mul)",
                      "['w']: ghost (dot_general T=1; Gram <X Xᵀ, D Dᵀ> = ||x||² ||d||²)"]  # fmt: skip


def test_cost_model_picks_per_layer():
    loss, model, batch = cnn()  # conv: T=36 positions, 18x4 kernel -> direct; head: T=1 -> Gram
    report = per_example_norms(loss).explain(model, batch).splitlines()
    conv = ".layers[0].weight: ghost (conv_general_dilated T=36; direct ||Σ Xᵀ D||², 4x2x3x3 per example)"
    assert report[0] == conv
    assert report[2] == ".layers[4].weight: ghost (dot_general T=1; Gram <X Xᵀ, D Dᵀ> = ||x||² ||d||²)"


def test_under_jit():
    loss, model, batch = cnn()
    norms = ember.jit(per_example_norms(loss))(model, batch)
    np.testing.assert_allclose(np.asarray(norms), reference_norms(loss, model, batch), rtol=2e-5)
    want, _ = reference_clipped(loss, model, batch, 0.5)
    step = ember.jit(lambda m, b: clipped_grad(loss, 0.5)(m, b))
    assert_sums_close(step(model, batch), want, rtol=2e-5)


def test_loss_closing_over_traced_values_under_jit():
    def loss(w, x, y):  # grad: s (w·x - y) x
        return 0.5 * (enp.dot(w, x) - y) ** 2

    w, x, y = enp.array([1.0, 2.0]), enp.array([[3.0, 0.0], [0.0, 1.0]]), enp.array([0.0, 0.0])
    def step(w, x, y, s):
        return clipped_grad(lambda p, a, b: s * loss(p, a, b), 3.0, return_norms=True)(w, (x, y))

    step = ember.jit(step)
    grads, norms = step(w, x, y, 2.0)
    assert norms.tolist() == [18.0, 4.0] and grads.tolist() == [3.0, 3.0]  # [18, 0] * 3/18 + [0, 4] * 3/4


def test_float64():
    with ember.config.x64(True):
        loss = cross_entropy
        model = nn.Sequential(nn.Linear(6, 5, key=KEYS[0], dtype="float64"), nn.Tanh(),
                              nn.Linear(5, 3, key=KEYS[1], dtype="float64"))  # fmt: skip
        batch = (enp.asarray(RNG.normal(size=(4, 6))), labels(3, 4))
        norms = per_example_norms(loss)(model, batch)
        assert norms.dtype == np.float64
        np.testing.assert_allclose(np.asarray(norms), reference_norms(loss, model, batch), rtol=1e-12)
        want, _ = reference_clipped(loss, model, batch, 0.3)
        got = clipped_grad(loss, 0.3)(model, batch)
        assert all(g.dtype == np.float64 for g in ember.tree.leaves(got))
        assert_sums_close(got, want, rtol=1e-12)


def test_batch_of_one_and_numpy_inputs():
    loss, model, (x, y) = mlp()
    batch = (np.asarray(x)[:1], np.asarray(y)[:1])
    np.testing.assert_allclose(np.asarray(per_example_norms(loss)(model, batch)),
                               reference_norms(loss, model, (x[:1], y[:1])), rtol=2e-5)  # fmt: skip


def test_no_clipping_and_zero_gradient():
    def loss(w, x):  # the second example's gradient is zero: weight 1, not 0/0
        return 0.5 * enp.dot(w, x) ** 2

    w, x = enp.array([1.0, 2.0]), enp.array([[3.0, 0.0], [0.0, 0.0]])
    assert per_example_norms(loss)(w, (x,)).tolist() == [9.0, 0.0]
    assert clipped_grad(loss, 1.0)(w, (x,)).tolist() == [1.0, 0.0]
    assert clipped_grad(loss, float("inf"))(w, (x,)).tolist() == [9.0, 0.0]


# --- bad input ----------------------------------------------------------------------------------


def test_errors():
    loss, model, (x, y) = mlp()
    with pytest.raises(ShapeError, match=r"per_example_norms: the batch is empty \(batch\[0\]: float32\[0, 6\]"):
        per_example_norms(loss)(model, (x[:0], y[:0]))
    sizes = r"different batch sizes \(axis 0\): batch\[0\]: float32\[4, 6\], batch\[1\]: int32\[3\]; each must"
    with pytest.raises(ShapeError, match=sizes):
        clipped_grad(loss, 1.0)(model, (x, y[:3]))
    with pytest.raises(InvalidArgumentError, match=r"tuple of arrays .* got Array of shape \(4, 6\); pass \(x,\)"):
        per_example_norms(loss)(model, x)
    with pytest.raises(ShapeError, match=r"leading batch axis, got batch\[0\]: float32\[4, 6\], batch\[1\]: int32\[\]"):
        per_example_norms(loss)(model, (x, y[0]))
    with pytest.raises(ShapeError, match=r"one real scalar per example, got f32\[3\]; reduce it"):
        per_example_norms(lambda m, x, y: m(x))(model, (x, y))
    with pytest.raises(DTypeError, match=r"real floating-point scalar, got i32\[\]; cast it"):
        per_example_norms(lambda m, x, y: y)(model, (x, y))
    with pytest.raises(DTypeError, match=r"clipped_grad: cannot differentiate with respect to params\['n'\] of shape "
                                         r"\(\) and dtype int32; parameters must be real floating point"):
        clipped_grad(lambda p, x: p["w"] @ x * p["n"], 1.0)({"w": enp.ones(6), "n": enp.array(2)}, (x,))
    with pytest.raises(InvalidArgumentError, match=r"clipped_grad: max_norm must be > 0, got 0.0"):
        clipped_grad(loss, 0.0)
    with pytest.raises(DTypeError, match=r"clipped_grad: max_norm must be a positive number, got 'a'"):
        clipped_grad(loss, "a")
