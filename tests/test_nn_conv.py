"""PyTorch parity of ember.nn's convolutions, linear-family layers and padding: forward values and the
gradients with respect to the input and every parameter (same weights, copied by name), default
initialisation by distribution, reprs, and the error messages for bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.errors import InvalidArgumentError, ShapeError
from ember.nn import functional as F

torch = pytest.importorskip("torch")

from nn_parity import assert_close, copy_weights, to_numpy  # noqa: E402

TOL = dict(rtol=1e-4, atol=1e-5)


def _layer_parity(ours, theirs, x: np.ndarray, *call_args, **call_kwargs) -> None:
    """Forward and gradients (input and every parameter) of a weighted sum of the outputs, ember vs torch."""
    ours = copy_weights(ours, theirs)
    names = [name for name, _ in ours.named_parameters()]
    theirs.zero_grad(set_to_none=True)
    tx = torch.tensor(x, requires_grad=True)
    tout = theirs(tx, *call_args, **call_kwargs)
    w = np.random.default_rng(1).standard_normal(tuple(tout.shape)).astype(np.float32)
    (tout * torch.tensor(w)).sum().backward()

    def loss(params, x):
        out = nn.functional_call(ours, params, x, *call_args, **call_kwargs)
        return (out * w).sum(), out

    params = dict(ours.named_parameters())
    (_, out), (g_params, g_x) = ember.value_and_grad(loss, argnums=(0, 1), has_aux=True)(params, enp.asarray(x))
    assert out.shape == tuple(tout.shape)
    assert_close(out, tout, **TOL, what="forward")
    assert_close(g_x, tx.grad, **TOL, what="d/d input")
    tparams = dict(theirs.named_parameters())
    for name in names:
        assert_close(g_params[name], tparams[name].grad, **TOL, what=f"d/d {name}")


def _x(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# --- convolutions -----------------------------------------------------------------------------------

# (n, in, out, kernel, kwargs, input shape)
CONV_CASES = [
    (1, 3, 4, 3, {}, (2, 3, 9)),
    (1, 2, 4, 4, dict(padding="same"), (2, 2, 7)),
    (1, 4, 4, 3, dict(groups=4, dilation=2, padding=2, bias=False), (1, 4, 11)),
    (1, 3, 2, 2, dict(stride=3, padding="valid"), (3, 8)),
    (2, 3, 5, 3, {}, (2, 3, 7, 6)),
    (2, 3, 6, (3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2)), (2, 3, 9, 8)),
    (2, 4, 6, 3, dict(groups=2, padding=1), (1, 4, 5, 5)),
    (2, 4, 8, 3, dict(groups=4, padding=1), (2, 4, 6, 5)),  # depthwise, channel multiplier 2
    (2, 2, 3, (2, 4), dict(padding="same", dilation=(2, 1)), (1, 2, 7, 6)),  # even kernels: asymmetric
    (2, 3, 4, 3, dict(padding="same"), (3, 5, 6)),  # unbatched
    (3, 2, 3, 2, dict(stride=2, padding=1), (1, 2, 5, 4, 6)),
    (3, 2, 4, (3, 1, 2), dict(groups=2, dilation=(1, 1, 2), padding="same"), (2, 2, 4, 3, 5)),
    (2, 3, 4, 3, dict(padding=1), (0, 3, 5, 5)),  # empty batch
]


@pytest.mark.parametrize("n, cin, cout, k, kwargs, shape", CONV_CASES)
def test_conv_matches_torch(n, cin, cout, k, kwargs, shape):
    cls = getattr(nn, f"Conv{n}d")
    tcls = getattr(torch.nn, f"Conv{n}d")
    _layer_parity(cls(cin, cout, k, **kwargs, key=ember.random.key(0)), tcls(cin, cout, k, **kwargs), _x(shape))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "zeros"])
@pytest.mark.parametrize("n, padding", [(1, 2), (2, (1, 2)), (2, "same"), (3, 1)])
def test_conv_padding_modes_match_torch(mode, n, padding):
    shape = {1: (2, 3, 8), 2: (2, 3, 6, 7), 3: (1, 3, 4, 5, 4)}[n]
    k = 4 if padding == "same" else 3  # an even kernel with 'same': PyTorch pads one more at the end
    layer = getattr(nn, f"Conv{n}d")(3, 2, k, padding=padding, padding_mode=mode, key=ember.random.key(1))
    tlayer = getattr(torch.nn, f"Conv{n}d")(3, 2, k, padding=padding, padding_mode=mode)
    _layer_parity(layer, tlayer, _x(shape))
    _layer_parity(layer, tlayer, _x(shape[1:]))  # unbatched


# (n, in, out, kernel, kwargs, input shape)
TRANSPOSE_CASES = [
    (1, 3, 2, 3, {}, (2, 3, 5)),
    (1, 2, 4, 4, dict(stride=3, padding=1, output_padding=2), (2, 2, 4)),
    (1, 4, 6, 3, dict(groups=2, dilation=2, bias=False), (4, 5)),  # unbatched
    (2, 3, 2, 3, dict(stride=2, padding=1, output_padding=1), (2, 3, 4, 5)),
    (2, 4, 4, (2, 3), dict(stride=(1, 2), groups=4, dilation=(2, 1), output_padding=(1, 1)), (1, 4, 3, 4)),
    (2, 2, 3, 3, dict(padding=3), (1, 2, 5, 6)),  # padding beyond dilation * (k - 1): crops
    (3, 2, 3, 2, dict(stride=2, output_padding=1), (1, 2, 2, 3, 2)),
    (3, 4, 2, (2, 3, 1), dict(groups=2, padding=(0, 1, 0), dilation=(1, 2, 1)), (2, 4, 3, 3, 2)),
]


@pytest.mark.parametrize("n, cin, cout, k, kwargs, shape", TRANSPOSE_CASES)
def test_conv_transpose_matches_torch(n, cin, cout, k, kwargs, shape):
    cls = getattr(nn, f"ConvTranspose{n}d")
    tcls = getattr(torch.nn, f"ConvTranspose{n}d")
    _layer_parity(cls(cin, cout, k, **kwargs, key=ember.random.key(0)), tcls(cin, cout, k, **kwargs), _x(shape))


@pytest.mark.parametrize("output_size", [[9, 11], [10, 12], (1, 2, 10, 11)])
def test_conv_transpose_output_size_matches_torch(output_size):
    layer = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, key=ember.random.key(0))
    tlayer = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    _layer_parity(layer, tlayer, _x((1, 3, 5, 6)), output_size=output_size)


def test_conv_transpose_output_size_out_of_range():
    layer = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, key=ember.random.key(0))
    with pytest.raises(ShapeError, match="valid sizes .* range from 9 to 10"):
        layer(enp.ones((1, 3, 5, 6)), output_size=[12, 11])


@pytest.mark.parametrize("fn", ["conv1d", "conv2d", "conv3d"])
def test_functional_conv_matches_torch(fn):
    n = int(fn[4])
    x, w, b = _x((2, 4) + (6,) * n), _x((6, 2) + (3,) * n, 1), _x((6,), 2)
    kwargs = dict(stride=2, padding=1, dilation=1, groups=2)
    got = getattr(F, fn)(x, w, b, **kwargs)
    want = getattr(torch.nn.functional, fn)(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kwargs)
    assert_close(got, want, **TOL)


@pytest.mark.parametrize("fn", ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"])
def test_functional_conv_transpose_matches_torch(fn):
    n = int(fn[-2])
    x, w, b = _x((2, 4) + (3,) * n), _x((4, 3) + (2,) * n, 1), _x((6,), 2)
    kwargs = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=2)
    got = getattr(F, fn)(x, w, b, **kwargs)
    want = getattr(torch.nn.functional, fn)(torch.tensor(x), torch.tensor(w), torch.tensor(b), **kwargs)
    assert_close(got, want, **TOL)


# --- padding ----------------------------------------------------------------------------------------

PAD_CASES = [
    ("constant", (2, 3, 5), (1, 2)),
    ("constant", (2, 3, 5), (1, -2, -1, 2)),  # negative: crops
    ("constant", (2, 3, 4, 5), (0, 1, 2, 0, 1, 1, 1, 0)),  # every dimension, the batch too
    ("reflect", (2, 3, 5), (4, 2)),
    ("reflect", (3, 5, 4), (1, 3, 2, 0)),
    ("reflect", (1, 2, 3, 4, 5), (1, 2, 0, 3, 2, 1)),
    ("replicate", (2, 5), (3, 1)),
    ("replicate", (2, 2, 3, 4), (2, 1, 0, 3)),
    ("replicate", (2, 3, 4, 2), (1, 1, 2, 0, 1, 3)),
    ("circular", (2, 3, 5), (5, 2)),
    ("circular", (2, 3, 4, 5), (1, 3, 4, 0)),
    ("circular", (3, 2, 3, 4), (2, 1, 0, 3, 1, 2)),
    ("circular", (2, 3, 6), (-1, 2)),  # crops, then wraps the cropped input
    ("reflect", (2, 3, 4, 6), (-2, 3, 1, -1)),
    ("replicate", (2, 3, 6), (2, -3)),
    ("reflect", (2, 3, 5), (-1, 4)),  # pads, then crops: the reflection reaches the cropped element
]


@pytest.mark.parametrize("mode, shape, pad", PAD_CASES)
def test_pad_matches_torch(mode, shape, pad):
    x = _x(shape)
    w = _x(torch.nn.functional.pad(torch.tensor(x), pad, mode=mode).shape, 1)
    tx = torch.tensor(x, requires_grad=True)
    tout = torch.nn.functional.pad(tx, pad, mode=mode, value=2.5 if mode == "constant" else None)
    (tout * torch.tensor(w)).sum().backward()
    value = 2.5 if mode == "constant" else None
    assert_close(F.pad(x, pad, mode=mode, value=value), tout)
    grad = ember.grad(lambda x: (F.pad(x, pad, mode=mode, value=value) * w).sum())(x)
    assert_close(grad, tx.grad)


def test_pad_integer_input_keeps_its_dtype():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = F.pad(x, (1, 1), value=7)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, to_numpy(torch.nn.functional.pad(torch.tensor(x), (1, 1), value=7)))


@pytest.mark.parametrize("pad, mode, message", [
    ((1, 2, 3), "constant", "odd length"),
    ((1, 1) * 4, "constant", "pads 4 dimensions, but the input of shape \\(2, 3, 5\\)"),
    ((-4, -2), "constant", "negative size"),
    ((5, 0), "reflect", "below the dimension's size; dimension 2 .* has size 5"),
    ((6, 0), "circular", "at most the dimension's size"),
    ((1, 1) * 3, "reflect", "must have rank 4 or 5, got shape \\(2, 3, 5\\)"),
])
def test_pad_errors(pad, mode, message):
    with pytest.raises((ShapeError, InvalidArgumentError), match=message):
        F.pad(enp.ones((2, 3, 5)), pad, mode=mode)


def test_pad_unknown_mode():
    with pytest.raises(InvalidArgumentError, match="unknown mode 'edge'"):
        F.pad(enp.ones((2, 3)), (1, 1), mode="edge")


# --- linear family ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, bias", [((5, 3), True), ((2, 4, 3), False), ((3,), True), ((0, 3), True)])
def test_linear_matches_torch(shape, bias):
    _layer_parity(nn.Linear(3, 4, bias, key=ember.random.key(0)), torch.nn.Linear(3, 4, bias), _x(shape))


@pytest.mark.parametrize("lead, bias", [((5,), True), ((2, 3), False), ((), True)])
def test_bilinear_matches_torch(lead, bias):
    ours = copy_weights(nn.Bilinear(3, 4, 2, bias, key=ember.random.key(0)), theirs := torch.nn.Bilinear(3, 4, 2, bias))
    x1, x2 = _x((*lead, 3)), _x((*lead, 4), 1)
    t1, t2 = torch.tensor(x1, requires_grad=True), torch.tensor(x2, requires_grad=True)
    tout = theirs(t1, t2)
    w = _x(tuple(tout.shape), 2)
    (tout * torch.tensor(w)).sum().backward()
    params = dict(ours.named_parameters())
    out = nn.functional_call(ours, params, x1, x2)
    assert_close(out, tout, **TOL)
    grads = ember.grad(lambda p, a, b: (nn.functional_call(ours, p, a, b) * w).sum(), argnums=(0, 1, 2))(params, x1, x2)
    assert_close(grads[1], t1.grad, **TOL)
    assert_close(grads[2], t2.grad, **TOL)
    for name, p in theirs.named_parameters():
        assert_close(grads[0][name], p.grad, **TOL, what=name)


@pytest.mark.parametrize("start, end, shape", [(1, -1, (2, 3, 4, 5)), (0, 2, (2, 3, 4, 5)), (-2, -1, (3, 4)),
                                               (1, 1, (2, 3)), (0, -1, ())])
def test_flatten_matches_torch(start, end, shape):
    x = _x(shape)
    got = nn.Flatten(start, end)(x)
    assert_close(got, torch.nn.Flatten(start, end)(torch.tensor(x)))


@pytest.mark.parametrize("dim, sizes, shape", [(1, (2, 5), (3, 10)), (-1, (-1, 2), (3, 10)), (0, (2, 1, 3), (6, 2)),
                                               (-2, (4,), (4, 1))])
def test_unflatten_matches_torch(dim, sizes, shape):
    x = _x(shape)
    assert_close(nn.Unflatten(dim, sizes)(x), torch.nn.Unflatten(dim, sizes)(torch.tensor(x)))


def test_identity():
    x = _x((2, 3))
    assert nn.Identity(3, foo="bar")(x) is x
    assert repr(nn.Identity(1, 2)) == repr(torch.nn.Identity(1, 2)) == "Identity()"


# --- default initialisation -------------------------------------------------------------------------


def _check_uniform(ours: np.ndarray, bound: float, theirs: np.ndarray) -> None:
    """Both samples uniform on +-bound: inside the bounds, near them, mean 0 and std bound / sqrt(3)."""
    for sample in (ours, theirs):
        sample = np.asarray(sample, dtype=np.float64).ravel()
        n = sample.size
        assert np.all(np.abs(sample) <= bound)
        assert np.abs(sample).max() > bound * (1 - 20 / n)
        assert abs(sample.mean()) < 5 * bound / math.sqrt(3 * n)
        assert abs(sample.std() - bound / math.sqrt(3)) < 5 * bound / math.sqrt(n)


INIT_CASES = [
    ("Conv1d", (16, 32, 5), {}, 16 * 5),
    ("Conv2d", (12, 24, 3), dict(groups=3), 4 * 9),
    ("Conv3d", (4, 8, (2, 3, 2)), {}, 4 * 12),
    ("ConvTranspose1d", (16, 30, 5), {}, 30 * 5),  # PyTorch's fan_in: weight.shape[1] = out / groups
    ("ConvTranspose2d", (12, 24, 3), dict(groups=4), 6 * 9),
    ("ConvTranspose3d", (6, 4, 2), {}, 4 * 8),
    ("Linear", (200, 64), {}, 200),
    ("Bilinear", (20, 30, 16), {}, 20),
]


@pytest.mark.parametrize("name, args, kwargs, fan_in", INIT_CASES)
def test_default_init_matches_torch_distribution(name, args, kwargs, fan_in):
    ours = getattr(nn, name)(*args, **kwargs, key=ember.random.key(3))
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    bound = 1 / math.sqrt(fan_in)
    assert ours.weight.shape == tuple(theirs.weight.shape) and ours.weight.dtype == np.float32
    _check_uniform(ours.weight, bound, to_numpy(theirs.weight))
    b = np.asarray(ours.bias)
    assert b.shape == tuple(theirs.bias.shape)
    assert np.all(np.abs(b) <= bound) and np.all(np.abs(to_numpy(theirs.bias)) <= bound)
    assert np.abs(b).max() > bound / 4  # not all tiny: the same bound as the weight, not a smaller one


def test_init_dtype_and_keys():
    with ember.config.x64(True):
        assert nn.Conv2d(2, 3, 3, key=ember.random.key(0), dtype="float64").weight.dtype == np.float64
    a = nn.Conv2d(2, 3, 3, key=ember.random.key(0))
    b = nn.Conv2d(2, 3, 3, key=ember.random.key(1))
    assert not np.allclose(a.weight, b.weight)
    assert nn.Conv2d(2, 3, 3, bias=False, key=ember.random.key(0)).bias is None


# --- repr -------------------------------------------------------------------------------------------

REPR_CASES = [
    ("Conv2d", (3, 16, 3), dict(stride=2, padding=1, bias=False)),
    ("Conv1d", (2, 4, 3), dict(padding="same", padding_mode="circular")),
    ("Conv1d", (2, 4, 3), dict(padding="valid")),
    ("Conv3d", (4, 8, (1, 2, 3)), dict(dilation=2, groups=4, padding_mode="reflect")),
    ("ConvTranspose2d", (16, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("ConvTranspose1d", (4, 4, 2), dict(groups=2, dilation=3, bias=False)),
    ("ConvTranspose3d", (2, 2, 2), {}),
    ("Linear", (3, 4), dict(bias=False)),
    ("Bilinear", (3, 4, 5), {}),
    ("Flatten", (0, 2), {}),
    ("Unflatten", (1, (2, 5)), {}),
]


@pytest.mark.parametrize("name, args, kwargs", REPR_CASES)
def test_repr_matches_torch(name, args, kwargs):
    keyed = name not in ("Flatten", "Unflatten")
    ours = getattr(nn, name)(*args, **kwargs, **({"key": ember.random.key(0)} if keyed else {}))
    assert repr(ours) == repr(getattr(torch.nn, name)(*args, **kwargs))


# --- bad input --------------------------------------------------------------------------------------


def test_layer_shape_errors_name_the_layer_and_shapes():
    model = nn.Sequential(nn.Conv2d(3, 16, 3, key=ember.random.key(0)), nn.ReLU())
    with pytest.raises(ShapeError, match=r"model.layers\[0\] \(Conv2d\(3, 16, \.\.\.\)\): expected input of shape "
                                         r"\(N, 3, H, W\) or \(3, H, W\), got shape \(2, 4, 8, 8\) \(float32\)"):
        model(enp.ones((2, 4, 8, 8)))
    with pytest.raises(ShapeError, match=r"expected input of shape \(N, 3, L\) or \(3, L\), got shape \(3,\)"):
        nn.Conv1d(3, 2, 1, key=ember.random.key(0))(enp.ones(3))
    with pytest.raises(ShapeError, match=r"expected input of shape \(N, 2, D, H, W\)"):
        nn.ConvTranspose3d(2, 2, 1, key=ember.random.key(0))(enp.ones((1, 2, 3, 3)))
    with pytest.raises(ShapeError, match=r"expected input2 of shape \(\*, 4\), got shape \(2, 3\)"):
        nn.Bilinear(3, 4, 1, key=ember.random.key(0))(enp.ones((2, 3)), enp.ones((2, 3)))
    with pytest.raises(ShapeError, match=r"cannot split dimension 1 of an input of shape \(3, 9\)"):
        nn.Unflatten(1, (2, 5))(enp.ones((3, 9)))
    with pytest.raises(ShapeError, match="start_dim=2 comes after end_dim=1"):
        nn.Flatten(2, 1)(enp.ones((3, 4, 5)))


def test_functional_conv_errors():
    with pytest.raises(ShapeError, match=r"conv2d: groups=1 and a weight of shape \(4, 3, 3, 3\) \(float32\) expect an "
                                         r"input with 3 channels .* got input of shape \(1, 2, 5, 5\) \(float32\)"):
        F.conv2d(enp.ones((1, 2, 5, 5)), enp.ones((4, 3, 3, 3)))
    with pytest.raises(ShapeError, match=r"conv2d: groups=3 must be positive and divide the weight's dimension 0, "
                                         r"got a weight of shape \(4, 1, 3, 3\)"):
        F.conv2d(enp.ones((1, 3, 5, 5)), enp.ones((4, 1, 3, 3)), groups=3)
    with pytest.raises(ShapeError, match=r"conv1d: the kernel .* is larger than the padded input: input of shape "
                                         r"\(1, 2, 3\) \(float32\) padded to spatial size \(5,\)"):
        F.conv1d(enp.ones((1, 2, 3)), enp.ones((1, 2, 7)), padding=1)
    with pytest.raises(ShapeError,
                       match=r"conv3d: expected a 4-D \(C, D, H, W\) or 5-D \(N, C, D, H, W\) input, got shape"):
        F.conv3d(enp.ones((2, 3, 4)), enp.ones((1, 2, 1, 1, 1)))
    with pytest.raises(InvalidArgumentError, match="not supported for strided"):
        F.conv1d(enp.ones((1, 1, 5)), enp.ones((1, 1, 2)), stride=2, padding="same")
    with pytest.raises(ember.errors.DTypeError, match="input has dtype int32"):
        F.conv1d(np.ones((1, 1, 5), np.int32), enp.ones((1, 1, 2)))
    with pytest.raises(ShapeError, match=r"expected a bias of shape \(4,\)"):
        F.conv1d(enp.ones((1, 1, 5)), enp.ones((4, 1, 2)), enp.ones(3))
    with pytest.raises(InvalidArgumentError, match="output_padding=\\(2,\\) must be non-negative and smaller"):
        F.conv_transpose1d(enp.ones((1, 1, 5)), enp.ones((1, 1, 2)), stride=2, output_padding=2)
    with pytest.raises(ShapeError, match=r"conv_transpose1d: input of shape \(1, 1, 2\) \(float32\) with a weight of "
                                         r"shape \(1, 1, 2\), stride=\(1,\), padding=\(2,\), .* empty output "
                                         r"\(size -1\)"):
        F.conv_transpose1d(enp.ones((1, 1, 2)), enp.ones((1, 1, 2)), padding=2)
    with pytest.raises(ShapeError, match=r"conv_transpose2d: a weight of shape \(3, 2, 2, 2\) \(float32\) expects an "
                                         r"input with 3 channels"):
        F.conv_transpose2d(enp.ones((1, 2, 5, 5)), enp.ones((3, 2, 2, 2)))
    with pytest.raises(ShapeError, match=r"bilinear: input1 of shape \(2, 3\) .* and input2 of shape \(3, 4\)"):
        F.bilinear(enp.ones((2, 3)), enp.ones((3, 4)), enp.ones((1, 3, 4)))


def test_constructor_errors():
    with pytest.raises(InvalidArgumentError, match="in_channels=3 and out_channels=4 must both be divisible by "
                                                   "groups=2"):
        nn.Conv2d(3, 4, 3, groups=2, key=ember.random.key(0))
    with pytest.raises(InvalidArgumentError, match="padding='same' is not supported for strided"):
        nn.Conv1d(3, 4, 3, stride=2, padding="same", key=ember.random.key(0))
    with pytest.raises(InvalidArgumentError, match="padding_mode='edge'"):
        nn.Conv1d(3, 4, 3, padding_mode="edge", key=ember.random.key(0))
    with pytest.raises(InvalidArgumentError, match="padding_mode='reflect' must be 'zeros'"):
        nn.ConvTranspose1d(3, 4, 3, padding_mode="reflect", key=ember.random.key(0))
    with pytest.raises(InvalidArgumentError, match="kernel_size=\\(3, 3\\) must be an int or a tuple of 1 ints"):
        nn.Conv1d(3, 4, (3, 3), key=ember.random.key(0))


# --- transforms -------------------------------------------------------------------------------------


def test_per_example_gradients_of_a_conv_equal_a_loop():
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding="same", padding_mode="reflect", key=ember.random.key(0)),
                          nn.Flatten(0), nn.Linear(3 * 5 * 5, 1, key=ember.random.key(1)))  # fmt: skip
    xs = _x((4, 2, 5, 5))
    loss = lambda m, x: (m(x) ** 2).sum()  # noqa: E731
    per_example = ember.jit(ember.vmap(ember.grad(loss), in_axes=(None, 0)))(model, xs)
    for i in range(4):
        one = ember.grad(loss)(model, xs[i])
        np.testing.assert_allclose(per_example.layers[0].weight[i], one.layers[0].weight, rtol=1e-5, atol=1e-6)
