"""The recurrent layers (RNN, LSTM, GRU and their cells) against PyTorch: forward outputs, final states and
gradients with respect to the input, the initial state and every parameter, for each option; dropout
between layers; jit, vmap and second derivatives; default initialisation; bad input."""

from __future__ import annotations

import numpy as np
import pytest
from nn_parity import assert_close, copy_weights

import ember
import ember.numpy as enp
from ember import nn
from ember.errors import DTypeError, InvalidArgumentError, ShapeError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")

IN, HID, L, N = 3, 4, 5, 2
GRAD_TOL = dict(rtol=1e-5, atol=1e-5)  # float32

LAYERS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {})]
LAYER_IDS = ["rnn_tanh", "rnn_relu", "lstm", "gru"]
OPTIONS = [{}, {"num_layers": 3}, {"num_layers": 2, "bidirectional": True}, {"bidirectional": True},
           {"batch_first": True}, {"bias": False}, {"num_layers": 2, "batch_first": True, "bias": False}]  # fmt: skip
OPTION_IDS = ["default", "3layers", "2layers_bidir", "bidir", "batch_first", "nobias", "2layers_bf_nobias"]


def _pair(name, kwargs, seed=0, input_size=IN, hidden_size=HID):
    torch.manual_seed(seed)
    theirs = getattr(torch.nn, name)(input_size, hidden_size, **kwargs)
    ours = copy_weights(getattr(nn, name)(input_size, hidden_size, key=ember.random.key(seed), **kwargs), theirs)
    return ours, theirs


def _flat(out) -> list:
    """The arrays of a layer's result, in order: output, h_n (, c_n)."""
    if isinstance(out, (tuple, list)):
        return [a for item in out for a in _flat(item)]
    return [out]


def _check_layer(name, kwargs, x_shape, with_state, seed=0):
    """Forward and every gradient of sum(result * random cotangent), ember against torch."""
    rng = np.random.default_rng(seed)
    ours, theirs = _pair(name, kwargs, seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    d = 2 if kwargs.get("bidirectional") else 1
    states = d * kwargs.get("num_layers", 1)
    batch = () if len(x_shape) == 2 else (x_shape[0] if kwargs.get("batch_first") else x_shape[1],)
    h_size = kwargs.get("proj_size") or HID
    hx = None
    if with_state:
        hx = [rng.standard_normal((states, *batch, h_size)).astype(np.float32)]
        if name == "LSTM":
            hx.append(rng.standard_normal((states, *batch, HID)).astype(np.float32))

    # torch
    xt = torch.tensor(x, requires_grad=True)
    hxt = None if hx is None else [torch.tensor(h, requires_grad=True) for h in hx]
    t_out = _flat(theirs(xt, None if hxt is None else tuple(hxt) if name == "LSTM" else hxt[0]))
    cots = [rng.standard_normal(tuple(o.shape)).astype(np.float32) for o in t_out]
    sum(((o * torch.tensor(c)).sum() for o, c in zip(t_out, cots))).backward()

    # ember
    params = dict(ours.named_parameters())

    def loss(x, hx, params):
        arg = None if hx is None else tuple(hx) if name == "LSTM" else hx[0]
        out = _flat(nn.functional_call(ours, params, x, arg))
        return sum((o * c).sum() for o, c in zip(out, cots)), out

    (g_x, g_hx, g_params), out = ember.grad(loss, argnums=(0, 1, 2), has_aux=True)(
        enp.asarray(x), None if hx is None else [enp.asarray(h) for h in hx], params)
    assert len(out) == len(t_out)
    for i, (o, t) in enumerate(zip(out, t_out)):
        assert o.shape == tuple(t.shape), f"result {i}: shape {o.shape}, torch {tuple(t.shape)}"
        assert_close(o, t, what=f"result {i}")
    assert_close(g_x, xt.grad, **GRAD_TOL, what="d/d input")
    if hx is not None:
        for i, (g, t) in enumerate(zip(g_hx, hxt)):
            assert_close(g, t.grad, **GRAD_TOL, what=f"d/d hx[{i}]")
    for pname, p in theirs.named_parameters():
        assert_close(g_params[pname], p.grad, **GRAD_TOL, what=f"d/d {pname}")


@pytest.mark.parametrize("with_state", [False, True], ids=["no_h0", "h0"])
@pytest.mark.parametrize("options", OPTIONS, ids=OPTION_IDS)
@pytest.mark.parametrize("layer", LAYERS, ids=LAYER_IDS)
def test_layer_matches_torch(layer, options, with_state):
    name, kwargs = layer
    kwargs = {**kwargs, **options}
    shape = (N, L, IN) if kwargs.get("batch_first") else (L, N, IN)
    _check_layer(name, kwargs, shape, with_state)


@pytest.mark.parametrize("with_state", [False, True], ids=["no_h0", "h0"])
@pytest.mark.parametrize("options", [{}, {"num_layers": 2, "bidirectional": True}], ids=["default", "2layers_bidir"])
@pytest.mark.parametrize("layer", LAYERS, ids=LAYER_IDS)
def test_unbatched_matches_torch(layer, options, with_state):
    name, kwargs = layer
    _check_layer(name, {**kwargs, **options}, (L, IN), with_state)


@pytest.mark.parametrize("with_state", [False, True], ids=["no_h0", "h0"])
@pytest.mark.parametrize("options", [{}, {"num_layers": 2, "bidirectional": True}, {"batch_first": True, "bias": False},
                                     {"num_layers": 3, "batch_first": True}],
                         ids=["default", "2layers_bidir", "bf_nobias", "3layers_bf"])  # fmt: skip
def test_lstm_proj_size_matches_torch(options, with_state):
    kwargs = {"proj_size": 2, **options}
    shape = (N, L, IN) if kwargs.get("batch_first") else (L, N, IN)
    _check_layer("LSTM", kwargs, shape, with_state)
    _check_layer("LSTM", kwargs, (L, IN), with_state)


def test_odd_sizes_and_one_step():
    _check_layer("GRU", {"num_layers": 2, "bidirectional": True}, (1, 1, IN), True)
    _check_layer("LSTM", {"bidirectional": True}, (7, 3, IN), True, seed=3)


def test_empty_batch_matches_torch():
    ours, theirs = _pair("LSTM", {"bidirectional": True})
    out, (h, c) = ours(enp.zeros((L, 0, IN)))
    t_out, (t_h, t_c) = theirs(torch.zeros(L, 0, IN))
    assert out.shape == tuple(t_out.shape) and h.shape == tuple(t_h.shape) and c.shape == tuple(t_c.shape)


# --- cells --------------------------------------------------------------------------------------------

CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {})]
CELL_IDS = ["rnn_tanh", "rnn_relu", "lstm", "gru"]


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_state", [False, True], ids=["no_h", "h"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("cell", CELLS, ids=CELL_IDS)
def test_cell_matches_torch(cell, bias, with_state, batched):
    name, kwargs = cell
    rng = np.random.default_rng(1)
    ours, theirs = _pair(name, {**kwargs, "bias": bias}, seed=1)
    batch = (N,) if batched else ()
    x = rng.standard_normal((*batch, IN)).astype(np.float32)
    hx = None
    if with_state:
        hx = [rng.standard_normal((*batch, HID)).astype(np.float32) for _ in range(2 if name == "LSTMCell" else 1)]

    xt = torch.tensor(x, requires_grad=True)
    hxt = None if hx is None else [torch.tensor(h, requires_grad=True) for h in hx]
    t_out = _flat(theirs(xt, None if hxt is None else tuple(hxt) if name == "LSTMCell" else hxt[0]))
    cots = [rng.standard_normal(tuple(o.shape)).astype(np.float32) for o in t_out]
    sum(((o * torch.tensor(c)).sum() for o, c in zip(t_out, cots))).backward()

    def loss(x, hx, params):
        arg = None if hx is None else tuple(hx) if name == "LSTMCell" else hx[0]
        out = _flat(nn.functional_call(ours, params, x, arg))
        return sum((o * c).sum() for o, c in zip(out, cots)), out

    (g_x, g_hx, g_params), out = ember.grad(loss, argnums=(0, 1, 2), has_aux=True)(
        enp.asarray(x), None if hx is None else [enp.asarray(h) for h in hx], dict(ours.named_parameters()))
    for o, t in zip(out, t_out, strict=True):
        assert o.shape == tuple(t.shape)
        assert_close(o, t)
    assert_close(g_x, xt.grad, **GRAD_TOL)
    if hx is not None:
        for g, t in zip(g_hx, hxt):
            assert_close(g, t.grad, **GRAD_TOL)
    for pname, p in theirs.named_parameters():
        assert_close(g_params[pname], p.grad, **GRAD_TOL, what=pname)


def test_cell_unrolled_equals_layer():
    """An LSTMCell stepped in a Python loop with the layer's weights gives the layer's outputs."""
    layer = nn.LSTM(IN, HID, key=ember.random.key(2))
    cell = copy_weights(nn.LSTMCell(IN, HID, key=ember.random.key(3)), _torch_cell_from(layer))
    x = enp.asarray(np.random.default_rng(0).standard_normal((L, N, IN)).astype(np.float32))
    h = c = enp.zeros((N, HID))
    outs = []
    for t in range(L):
        h, c = cell(x[t], (h, c))
        outs.append(h)
    out, (h_n, c_n) = layer(x)
    np.testing.assert_allclose(np.asarray(out), np.stack([np.asarray(o) for o in outs]), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(c_n[0]), np.asarray(c), rtol=1e-6, atol=1e-6)


def _torch_cell_from(layer):
    cell = torch.nn.LSTMCell(IN, HID)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(torch.tensor(np.asarray(getattr(layer, f"{name}_l0"))))
    return cell


# --- dropout between layers -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_dropout_eval_matches_torch(name):
    kwargs = {"num_layers": 3, "dropout": 0.5, "bidirectional": True}
    ours, theirs = _pair(name, kwargs)
    x = np.random.default_rng(0).standard_normal((L, N, IN)).astype(np.float32)
    got = _flat(ours.eval()(enp.asarray(x)))
    want = _flat(theirs.eval()(torch.tensor(x)))
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)
    assert ours.eval().training is False and ours.training is True


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_dropout_in_training(name):
    x = enp.asarray(np.random.default_rng(0).standard_normal((L, N, IN)).astype(np.float32))
    model = getattr(nn, name)(IN, HID, num_layers=2, dropout=0.5, key=ember.random.key(0))
    k1, k2 = ember.random.split(ember.random.key(1))
    a, b, a_again = (_flat(model(x, key=k)) for k in (k1, k2, k1))
    assert not np.allclose(np.asarray(a[0]), np.asarray(b[0])), "different keys gave the same dropout"
    for u, v in zip(a, a_again):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    # the first layer's final state is computed before any dropout
    evald = _flat(model.eval()(x))
    np.testing.assert_allclose(np.asarray(a[1][0]), np.asarray(evald[1][0]), rtol=1e-6, atol=1e-6)
    # dropout=0 in training is the eval-mode result, and needs no key
    plain = getattr(nn, name)(IN, HID, num_layers=2, key=ember.random.key(0))
    for u, v in zip(_flat(plain(x)), _flat(plain.eval()(x))):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
    for u, v in zip(_flat(plain(x)), evald):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_dropout_sits_between_layers_not_after_the_last():
    """With dropout=1 the second layer sees zeros: its output is a one-layer LSTM's on a zero input."""
    model = nn.LSTM(IN, HID, num_layers=2, dropout=1.0, key=ember.random.key(0))
    x = enp.asarray(np.random.default_rng(0).standard_normal((L, N, IN)).astype(np.float32))
    out, (h_n, c_n) = model(x, key=ember.random.key(5))
    torch.manual_seed(0)
    second = torch.nn.LSTM(HID, HID)
    with torch.no_grad():
        for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(second, f"{p}_l0").copy_(torch.tensor(np.asarray(getattr(model, f"{p}_l1"))))
    want, (want_h, want_c) = second(torch.zeros(L, N, HID))
    assert_close(out, want)
    assert_close(h_n[1], want_h[0])
    assert np.abs(np.asarray(out)).max() > 0


def test_dropout_without_key_is_a_clear_error():
    model = nn.GRU(IN, HID, num_layers=2, dropout=0.3, key=ember.random.key(0))
    with pytest.raises(InvalidArgumentError, match=r"GRU: dropout=0.3 between layers in training mode needs a random "
                                                   r"key.*key=ember.random.key.*model.eval\(\)"):  # fmt: skip
        model(enp.ones((L, N, IN)))
    with pytest.raises(InvalidArgumentError, match=r"key= must be a random key"):
        model(enp.ones((L, N, IN)), key=3)
    model.eval()(enp.ones((L, N, IN)))  # eval mode: no key needed


def test_dropout_with_one_layer_warns_like_torch():
    with pytest.warns(UserWarning, match="num_layers=1"):
        nn.LSTM(IN, HID, dropout=0.5, key=ember.random.key(0))


# --- transforms -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_jit_traces_once_and_matches_eager(name):
    model = getattr(nn, name)(IN, HID, num_layers=2, bidirectional=True, key=ember.random.key(0))
    traces = []

    @ember.jit
    def run(model, x):
        traces.append(1)
        return _flat(model(x))

    rng = np.random.default_rng(0)
    for _ in range(2):
        x = enp.asarray(rng.standard_normal((L, N, IN)).astype(np.float32))
        for g, w in zip(run(model, x), _flat(model(x)), strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)
    assert len(traces) == 1, f"{name} retraced on a second call with the same shapes"


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_vmap_over_sequences_equals_the_batched_call(name):
    model = getattr(nn, name)(IN, HID, num_layers=2, bidirectional=True, key=ember.random.key(0))
    rng = np.random.default_rng(0)
    xs = enp.asarray(rng.standard_normal((N, L, IN)).astype(np.float32))  # a batch of unbatched sequences
    h = enp.asarray(rng.standard_normal((N, 4, HID)).astype(np.float32))
    hx = (h, h * 0.5) if name == "LSTM" else h
    got = _flat(ember.vmap(lambda x, hx: model(x, hx))(xs, hx))
    batched_hx = tuple(enp.swapaxes(a, 0, 1) for a in hx) if name == "LSTM" else enp.swapaxes(hx, 0, 1)
    want = _flat(model(enp.swapaxes(xs, 0, 1), batched_hx))
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(enp.swapaxes(want[0], 0, 1)), rtol=1e-6, atol=1e-6)
    for g, w in zip(got[1:], want[1:], strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(enp.swapaxes(w, 0, 1)), rtol=1e-6, atol=1e-6)


def test_vmap_of_grad_and_stacked_models():
    """Per-sequence gradients with vmap(grad) equal a loop; an ensemble from stack_modules runs under vmap."""
    model = nn.GRU(IN, HID, batch_first=True, key=ember.random.key(0))
    xs = enp.asarray(np.random.default_rng(0).standard_normal((3, L, IN)).astype(np.float32))
    loss = lambda m, x: m(x)[0].sum()
    per = ember.vmap(ember.grad(loss), in_axes=(None, 0))(model, xs)
    for i in range(3):
        one = ember.grad(loss)(model, xs[i])
        np.testing.assert_allclose(np.asarray(per.weight_hh_l0[i]), np.asarray(one.weight_hh_l0), rtol=1e-5, atol=1e-6)
    models = [nn.GRU(IN, HID, key=k) for k in ember.random.split(ember.random.key(1), 2)]
    outs = ember.vmap(lambda m, x: m(x)[0], in_axes=(0, None))(nn.stack_modules(models), xs[0])
    for m, o in zip(models, outs):
        np.testing.assert_allclose(np.asarray(o), np.asarray(m(xs[0])[0]), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_grad_of_grad_matches_torch(name):
    """d/dx of |d loss / dx|^2: second derivatives through the scan, against torch's double backward."""
    ours, theirs = _pair(name, {"num_layers": 2})
    x = np.random.default_rng(0).standard_normal((3, N, IN)).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    (g,) = torch.autograd.grad(_flat(theirs(xt))[0].sin().sum(), xt, create_graph=True)
    (gg,) = torch.autograd.grad((g**2).sum(), xt)

    def inner(x):
        return enp.sin(ours(x)[0]).sum()

    got = ember.grad(lambda x: (ember.grad(inner)(x) ** 2).sum())(enp.asarray(x))
    assert_close(got, gg, **GRAD_TOL)


def test_jit_of_value_and_grad_with_dropout_key():
    model = nn.LSTM(IN, HID, num_layers=2, dropout=0.2, key=ember.random.key(0))
    x = enp.ones((L, N, IN))
    f = ember.jit(ember.value_and_grad(lambda m, x, k: m(x, key=k)[0].sum()))
    v1, g1 = f(model, x, ember.random.key(1))
    v2, _ = f(model, x, ember.random.key(2))
    assert np.isfinite(float(v1)) and float(v1) != float(v2)
    assert g1.weight_ih_l0.shape == (4 * HID, IN)


# --- initialisation, names, repr ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_default_init_distribution(name):
    hidden = 256
    model = getattr(nn, name)(64, hidden, key=ember.random.key(0))
    bound = 1 / np.sqrt(hidden)
    for pname, p in model.named_parameters():
        v = np.asarray(p, dtype=np.float64).ravel()
        assert p.dtype == np.float32
        assert v.min() >= -bound and v.max() <= bound, pname
        tol = 5 * bound / np.sqrt(3 * v.size)  # five standard errors of the mean of uniform(-b, b)
        assert abs(v.mean()) < tol, pname
        assert abs(v.std() - bound / np.sqrt(3)) < 0.05 * bound, pname
    assert model.named_parameters()[0][1] is not model.named_parameters()[1][1]


def test_dtype_argument():
    model = nn.GRU(IN, HID, dtype=np.float16, key=ember.random.key(0))
    assert {p.dtype for p in model.parameters()} == {np.dtype(np.float16)}
    assert model(enp.ones((L, IN), dtype=np.float16))[0].dtype == np.float16


@pytest.mark.parametrize("name, kwargs", [
    ("LSTM", {"num_layers": 2, "bias": False, "batch_first": True, "dropout": 0.5, "bidirectional": True,
              "proj_size": 2}),
    ("GRU", {}), ("RNN", {"num_layers": 3}), ("RNNCell", {"bias": False, "nonlinearity": "relu"}),
    ("LSTMCell", {}), ("GRUCell", {"bias": False})])  # fmt: skip
def test_names_and_repr_match_torch(name, kwargs):
    ours, theirs = _pair(name, kwargs)  # copy_weights checks the parameter names
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert repr(ours) == repr(theirs)


def test_rnn_relu_repr_names_the_nonlinearity():
    # PyTorch prints RNN(3, 4) for either nonlinearity; ember says which one
    assert repr(nn.RNN(3, 4, nonlinearity="relu", key=ember.random.key(0))) == "RNN(3, 4, nonlinearity=relu)"


def test_torch_style_attribute_access_and_tree_at():
    model = nn.LSTM(IN, HID, bidirectional=True, key=ember.random.key(0))
    assert model.weight_hh_l0_reverse.shape == (4 * HID, HID)
    new = nn.tree_at(lambda m: m.weight_hh_l0_reverse, model, enp.zeros((4 * HID, HID)))
    assert float(enp.abs(new.weight_hh_l0_reverse).sum()) == 0.0
    assert float(enp.abs(model.weight_hh_l0_reverse).sum()) > 0
    with pytest.raises(AttributeError, match="weight_hh_l1"):
        model.weight_hh_l1


def test_partition_and_combine():
    model = nn.GRU(IN, HID, num_layers=2, key=ember.random.key(0))
    params, static = nn.partition(model)
    assert [n for n, _ in params.named_parameters()] == [n for n, _ in model.named_parameters()]
    x = enp.ones((L, N, IN))
    np.testing.assert_array_equal(np.asarray(nn.combine(params, static)(x)[0]), np.asarray(model(x)[0]))


# --- bad input --------------------------------------------------------------------------------------


def test_wrong_input_shapes_name_expected_and_actual():
    lstm = nn.LSTM(IN, HID, num_layers=2, key=ember.random.key(0))
    expected = (r"LSTM: expected an input of shape \(L, N, input_size\) or \(L, input_size\) unbatched, with "
                r"input_size=3; got shape \(5, 2, 7\) \(float32\)")
    with pytest.raises(ShapeError, match=expected):
        lstm(enp.ones((5, 2, 7)))
    with pytest.raises(ShapeError, match=r"got shape \(1, 5, 2, 3\)"):
        lstm(enp.ones((1, 5, 2, 3)))
    with pytest.raises(ShapeError, match=r"\(N, L, input_size\)"):
        nn.GRU(IN, HID, batch_first=True, key=ember.random.key(0))(enp.ones((3,)))
    with pytest.raises(ShapeError, match=r"sequence length larger than 0"):
        lstm(enp.ones((0, 2, IN)))


def test_wrong_state_shapes_name_expected_and_actual():
    lstm = nn.LSTM(IN, HID, num_layers=2, bidirectional=True, proj_size=2, key=ember.random.key(0))
    x = enp.ones((L, N, IN))
    with pytest.raises(ShapeError, match=r"LSTM: expected h_0 of shape \(4, 2, 2\) \(num_layers \* num_directions, "
                                         r"batch, proj_size\), got shape \(2, 2, 2\) \(float32\)"):  # fmt: skip
        lstm(x, (enp.zeros((2, N, 2)), enp.zeros((4, N, HID))))
    with pytest.raises(ShapeError, match=r"expected c_0 of shape \(4, 2, 4\).*got shape \(4, 2, 2\)"):
        lstm(x, (enp.zeros((4, N, 2)), enp.zeros((4, N, 2))))
    with pytest.raises(InvalidArgumentError, match=r"hx must be a pair \(h_0, c_0\)"):
        lstm(x, enp.zeros((4, N, 2)))
    gru = nn.GRU(IN, HID, key=ember.random.key(0))
    with pytest.raises(ShapeError, match=r"GRU: expected h_0 of shape \(1, 4\) \(num_layers \* num_directions, "
                                         r"hidden_size\), got shape \(1, 1, 4\)"):  # fmt: skip
        gru(enp.ones((L, IN)), enp.zeros((1, 1, HID)))
    cell = nn.GRUCell(IN, HID, key=ember.random.key(0))
    with pytest.raises(ShapeError, match=r"GRUCell: expected hx of shape \(2, 4\).*got shape \(3, 4\)"):
        cell(enp.ones((2, IN)), enp.zeros((3, HID)))
    with pytest.raises(ShapeError, match=r"GRUCell: expected an input of shape \(N, input_size\).*got shape \(2, 5\)"):
        cell(enp.ones((2, 5)))


def test_shape_error_names_the_layer_path():
    model = nn.Sequential(nn.GRU(IN, HID, key=ember.random.key(0)))
    with pytest.raises(ShapeError, match=r"model.layers\[0\] \(GRU\(3, 4\)\): expected an input"):
        model(enp.ones((L, N, 5)))


def test_non_float_input_is_a_dtype_error():
    with pytest.raises(DTypeError, match=r"RNN: expected a floating-point input.*int32"):
        nn.RNN(IN, HID, key=ember.random.key(0))(enp.ones((L, IN), dtype=np.int32))


def test_bad_constructor_arguments():
    key = ember.random.key(0)
    with pytest.raises(InvalidArgumentError, match="unknown nonlinearity 'sigmoid'"):
        nn.RNN(IN, HID, nonlinearity="sigmoid", key=key)
    with pytest.raises(InvalidArgumentError, match="proj_size must be smaller than hidden_size"):
        nn.LSTM(IN, HID, proj_size=HID, key=key)
    with pytest.raises(InvalidArgumentError, match="dropout must be a number in"):
        nn.LSTM(IN, HID, dropout=1.5, key=key)
    with pytest.raises(InvalidArgumentError, match="num_layers must be a positive int"):
        nn.LSTM(IN, HID, num_layers=0, key=key)
    with pytest.raises(TypeError):
        nn.GRU(IN, HID, proj_size=2, key=key)
    with pytest.raises(TypeError):
        nn.LSTM(IN, HID)  # key is required
