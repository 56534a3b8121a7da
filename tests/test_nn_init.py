"""ember.nn.init against PyTorch's formulas: gains and fans equal to torch's, each random initialiser's
bounds and moments over a large tensor, the deterministic ones equal to torch's, orthogonality, and errors."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.stats

import ember
import ember.numpy as enp
from ember import random
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.nn import init

torch = pytest.importorskip("torch")

KEY = random.key(0)
BIG = (1024, 512)  # 524288 draws: a sample mean or std is within ~0.7% (5 standard errors) of the truth


def _moments_close(w, mean, std, what=""):
    """The sample mean and std of ``w`` agree with ``mean`` and ``std`` to five standard errors."""
    w = np.asarray(w, dtype=np.float64).ravel()
    n = w.size
    assert abs(w.mean() - mean) <= 5 * std / math.sqrt(n), f"{what}: mean {w.mean()} vs {mean}"
    # the std of a sample std is about std * sqrt(kurtosis-ish / 2n); 2% is > 10 standard errors here
    assert abs(w.std() - std) <= 0.02 * std, f"{what}: std {w.std()} vs {std}"


# --- gains and fans -----------------------------------------------------------------------------------------

NONLINEARITIES = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                  "sigmoid", "tanh", "relu", "leaky_relu", "selu"]  # fmt: skip


@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
def test_calculate_gain_equals_torchs(nonlinearity):
    assert init.calculate_gain(nonlinearity) == torch.nn.init.calculate_gain(nonlinearity)


@pytest.mark.parametrize("param", [None, 0, 0.2, 1, 3, -0.5])
def test_leaky_relu_gain_equals_torchs(param):
    assert init.calculate_gain("leaky_relu", param) == torch.nn.init.calculate_gain("leaky_relu", param)


def test_calculate_gain_errors():
    with pytest.raises(InvalidArgumentError, match="unsupported nonlinearity 'swish'; use one of linear, conv1d"):
        init.calculate_gain("swish")
    with pytest.raises(InvalidArgumentError, match="negative_slope True is not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(InvalidArgumentError, match="negative_slope '0.1' is not a valid number"):
        init.calculate_gain("leaky_relu", "0.1")


@pytest.mark.parametrize("shape", [(2, 3), (16, 3, 5, 5), (4, 2, 3), (0, 3), (8, 4, 2, 2, 2), (3, 0, 2)])
def test_fans_equal_torchs(shape):
    want = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert init.calculate_fan_in_and_fan_out(shape) == want
    assert init.calculate_fan_in_and_fan_out(enp.zeros(shape)) == want


@pytest.mark.parametrize("shape", [(), (5,)])
def test_fan_of_a_low_rank_tensor_raises(shape):
    with pytest.raises(ShapeError, match=rf"fan in and fan out cannot be computed for a weight of shape {re.escape(str(shape))}"):
        init.calculate_fan_in_and_fan_out(shape)
    with pytest.raises(ShapeError, match="fewer than 2 dimensions"):
        init.xavier_uniform(shape, key=KEY)
    with pytest.raises(ShapeError, match="fewer than 2 dimensions"):
        init.kaiming_normal(shape, key=KEY)


# --- plain distributions ----------------------------------------------------------------------------------------


def test_uniform():
    w = init.uniform(BIG, -2.0, 3.0, key=KEY)
    assert w.shape == BIG and w.dtype == enp.float32
    assert float(w.min()) >= -2.0 and float(w.max()) < 3.0
    _moments_close(w, 0.5, 5 / math.sqrt(12), "uniform")
    _moments_close(init.uniform(BIG, key=KEY), 0.5, 1 / math.sqrt(12), "uniform default")


def test_normal():
    _moments_close(init.normal(BIG, 2.0, 0.5, key=KEY), 2.0, 0.5, "normal")
    _moments_close(init.normal(BIG, key=KEY), 0.0, 1.0, "normal default")


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04), (1.0, 2.0, 0.0, 5.0),
                                          (0.0, 1.0, 1.0, 3.0)])  # fmt: skip
def test_trunc_normal(mean, std, a, b):
    w = np.asarray(init.trunc_normal(BIG, mean, std, a, b, key=KEY))
    assert w.min() >= a and w.max() <= b
    dist = scipy.stats.truncnorm((a - mean) / std, (b - mean) / std, loc=mean, scale=std)
    _moments_close(w, dist.mean(), dist.std(), "trunc_normal")
    t = torch.nn.init.trunc_normal_(torch.empty(256, 256), mean, std, a, b).numpy()  # torch's own draw, same law
    _moments_close(t, dist.mean(), dist.std(), "torch trunc_normal")


def test_constants_eye_dirac_equal_torchs():
    np.testing.assert_array_equal(np.asarray(init.constant((2, 3), 0.5)), torch.nn.init.constant_(torch.empty(2, 3), 0.5))
    np.testing.assert_array_equal(np.asarray(init.zeros((4,))), np.zeros(4))
    np.testing.assert_array_equal(np.asarray(init.ones((2, 2))), np.ones((2, 2)))
    for shape in [(3, 5), (5, 3), (4, 4)]:
        np.testing.assert_array_equal(np.asarray(init.eye(shape)), torch.nn.init.eye_(torch.empty(shape)).numpy())
    for shape, groups in [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((4, 6, 2, 3, 5), 1), ((6, 2, 5, 4), 3), ((2, 5, 3), 1)]:
        want = torch.nn.init.dirac_(torch.empty(shape), groups).numpy()
        np.testing.assert_array_equal(np.asarray(init.dirac(shape, groups)), want, err_msg=f"{shape} groups={groups}")


# --- scaled by fan --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [BIG, (256, 64, 3, 3)])
@pytest.mark.parametrize("gain", [1.0, 5 / 3])
def test_xavier(shape, gain):
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))  # PyTorch's formula
    bound = math.sqrt(3.0) * std
    w = init.xavier_uniform(shape, gain, key=KEY)
    assert float(abs(w).max()) <= bound and float(abs(w).max()) > 0.999 * bound
    _moments_close(w, 0.0, std, "xavier_uniform")
    _moments_close(init.xavier_normal(shape, gain, key=KEY), 0.0, std, "xavier_normal")
    _moments_close(torch.nn.init.xavier_uniform_(torch.empty(shape), gain).numpy(), 0.0, std, "torch xavier_uniform")


@pytest.mark.parametrize("a,mode,nonlinearity", [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
                                                 (0, "fan_out", "relu"), (0.2, "fan_out", "leaky_relu"),
                                                 (0, "fan_in", "tanh"), (0, "FAN_IN", "selu"), (0, "fan_in", "linear")])  # fmt: skip
def test_kaiming(a, mode, nonlinearity):
    shape = (512, 128, 3, 3)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    fan = fan_in if mode.lower() == "fan_in" else fan_out
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)  # PyTorch's formula
    bound = math.sqrt(3.0) * std
    w = init.kaiming_uniform(shape, a, mode, nonlinearity, key=KEY)
    assert float(abs(w).max()) <= bound * (1 + 1e-6) and float(abs(w).max()) > 0.999 * bound
    _moments_close(w, 0.0, std, "kaiming_uniform")
    _moments_close(init.kaiming_normal(shape, a, mode, nonlinearity, key=KEY), 0.0, std, "kaiming_normal")
    t = torch.nn.init.kaiming_uniform_(torch.empty(shape), a, mode, nonlinearity).numpy()
    _moments_close(t, 0.0, std, "torch kaiming_uniform")


def test_kaiming_of_a_zero_element_tensor_is_empty():
    assert init.kaiming_uniform((0, 3), key=KEY).shape == (0, 3)
    assert init.kaiming_normal((4, 0), key=KEY).shape == (4, 0)


def test_bad_mode_raises():
    with pytest.raises(InvalidArgumentError, match="kaiming_uniform: mode 'fan_avg' is not supported; use 'fan_in' or 'fan_out'"):
        init.kaiming_uniform((3, 4), mode="fan_avg", key=KEY)
    with pytest.raises(InvalidArgumentError, match="kaiming_normal: mode 'in' is not supported"):
        init.kaiming_normal((3, 4), mode="in", key=KEY)
    with pytest.raises(InvalidArgumentError, match="unsupported nonlinearity 'gelu'"):
        init.kaiming_normal((3, 4), nonlinearity="gelu", key=KEY)


# --- structured -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (6, 6), (4, 2, 3, 3), (1, 7), (7, 1)])
@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_orthogonal(shape, gain):
    w = init.orthogonal(shape, gain, key=KEY)
    assert w.shape == shape and w.dtype == enp.float32
    m = np.asarray(w, dtype=np.float64).reshape(shape[0], -1) / gain
    rows, cols = m.shape
    gram = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-5)
    # PyTorch's algorithm on the same normal draw, by NumPy's QR: Q with its columns signed by R's diagonal
    flat = np.asarray(random.normal(KEY, (rows, cols) if rows >= cols else (cols, rows)), dtype=np.float64)
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    want = (q if rows >= cols else q.T) * gain
    np.testing.assert_allclose(np.asarray(w).reshape(rows, cols), want, atol=2e-5)


def test_orthogonal_is_haar_distributed():
    # with the sign correction Q is uniform on O(n): each entry of a 4x4 has mean 0 and variance 1/4
    # (without it the diagonal of Q would lean positive)
    keys = random.split(KEY, 2000)
    qs = np.asarray(ember.vmap(lambda k: init.orthogonal((4, 4), key=k))(keys))
    diag = qs[:, np.arange(4), np.arange(4)].ravel()
    assert abs(diag.mean()) < 5 * 0.5 / math.sqrt(diag.size)
    assert abs(qs.var() - 0.25) < 0.01


def test_sparse():
    rows, cols, sparsity, std = 200, 300, 0.3, 0.05
    w = np.asarray(init.sparse((rows, cols), sparsity, std, key=KEY))
    zeros = (w == 0).sum(axis=0)
    assert (zeros == math.ceil(sparsity * rows)).all()
    patterns = {tuple(np.flatnonzero(w[:, c] == 0)) for c in range(cols)}
    assert len(patterns) == cols  # a different random set of rows in each column
    _moments_close(w[w != 0], 0.0, std, "sparse nonzeros")


# --- dtypes, arrays in, nothing in place, jit --------------------------------------------------------------


def test_array_or_shape_and_dtype():
    w = enp.ones((3, 4), dtype=enp.float16)
    out = init.xavier_uniform_(w, key=KEY)
    assert out.shape == (3, 4) and out.dtype == enp.float16
    assert w.tolist() == [[1.0] * 4] * 3  # unchanged: the trailing-underscore alias returns a new array
    assert init.normal((2,), dtype=enp.bfloat16, key=KEY).dtype == enp.bfloat16
    assert init.zeros(enp.ones((2,), dtype=enp.int32)).dtype == enp.int32
    assert init.ones((2,), dtype=enp.int32).tolist() == [1, 1]
    assert init.orthogonal(w, key=KEY, dtype=enp.float32).dtype == enp.float32
    for name in ("uniform", "normal", "trunc_normal", "constant", "zeros", "ones", "eye", "dirac", "xavier_uniform",
                 "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"):  # fmt: skip
        assert getattr(init, name + "_") is getattr(init, name)


def test_random_initialisers_need_a_floating_dtype():
    with pytest.raises(DTypeError, match=r"nn.init.kaiming_uniform: draws random floats, but the target dtype is int32 \(shape \(3, 4\)\)"):
        init.kaiming_uniform(enp.zeros((3, 4), dtype=enp.int32), key=KEY)
    with pytest.raises(DTypeError, match="nn.init.normal: draws random floats"):
        init.normal((2,), dtype=enp.int32, key=KEY)


def test_shape_errors():
    with pytest.raises(ShapeError, match=r"orthogonal: only weights with 2 or more dimensions are supported, got shape \(3,\)"):
        init.orthogonal((3,), key=KEY)
    with pytest.raises(ShapeError, match=r"eye: only 2-d weights are supported, got shape \(2, 2, 2\)"):
        init.eye((2, 2, 2))
    with pytest.raises(ShapeError, match=r"dirac: only 3-, 4- or 5-d convolution weights are supported, got shape \(2, 2\)"):
        init.dirac((2, 2))
    with pytest.raises(ShapeError, match=r"dirac: dimension 0 of shape \(5, 2, 3\) .* must be divisible by groups=2"):
        init.dirac((5, 2, 3), groups=2)
    with pytest.raises(ShapeError, match="sparse: only 2-d weights are supported"):
        init.sparse((2, 2, 2), 0.1, key=KEY)
    with pytest.raises(InvalidArgumentError, match="expected an array or a shape tuple, got str"):
        init.zeros("3")


def test_initialisers_run_under_jit_and_vmap():
    def build(key):
        k1, k2 = random.split(key)
        return init.kaiming_uniform((8, 4), key=k1), init.orthogonal((4, 4), key=k2)

    eager = build(KEY)
    jitted = ember.jit(build)(KEY)
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), atol=1e-6)
    stacked = ember.vmap(lambda k: init.xavier_normal((3, 5), key=k))(random.split(KEY, 4))
    assert stacked.shape == (4, 3, 5)
