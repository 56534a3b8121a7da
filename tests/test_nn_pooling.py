"""Pooling and resampling against PyTorch: forward values, indices and input gradients for every option
combination; the layers' reprs; bad input. (The op database checks them against NumPy loops and under
every transform.)"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import nn
from ember.errors import DTypeError, InvalidArgumentError, ShapeError
from ember.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _distinct(rng, shape):
    """Distinct values: the gradient of a max goes to one element whatever the tie rule."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n // 2) * 0.1 + rng.uniform(0, 0.05, n)).reshape(shape).astype(np.float32)


def _check(name, x, *args, tol=1e-5, **kwargs):
    """ember's F.<name> against torch's: outputs (indices exactly) and the gradient of a random projection."""
    rng = np.random.default_rng(0)
    t = torch.tensor(x, requires_grad=True)
    want = getattr(TF, name)(t, *args, **kwargs)
    got = getattr(F, name)(enp.asarray(x), *args, **kwargs)
    if isinstance(want, tuple):
        np.testing.assert_array_equal(np.asarray(got[1]), want[1].numpy(), err_msg=f"{name} indices {args} {kwargs}")
        assert got[1].dtype == enp.asarray(0).dtype
        want, got = want[0], got[0]
    assert got.shape == tuple(want.shape), (name, args, kwargs)
    np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=tol, atol=tol, err_msg=f"{name} {args} {kwargs}")
    ct = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    want.backward(torch.tensor(ct))

    def loss(v):
        out = getattr(F, name)(v, *args, **kwargs)
        return enp.sum((out[0] if isinstance(out, tuple) else out) * ct)

    grad = ember.grad(loss)(enp.asarray(x))
    np.testing.assert_allclose(np.asarray(grad), t.grad.numpy(), rtol=tol, atol=tol, err_msg=f"grad {name} {args} {kwargs}")


SHAPES = {1: [(2, 3, 9), (3, 8)], 2: [(2, 3, 7, 6), (2, 5, 5)], 3: [(1, 2, 5, 6, 5), (2, 5, 6, 5)]}


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("return_indices", [False, True])
def test_max_pool_matches_torch(n, ceil_mode, return_indices):
    rng = np.random.default_rng(n)
    for shape in SHAPES[n]:
        x = _distinct(rng, shape)
        for k, s, p, d in itertools.product([2, 3], [None, 1, 2], [0, 1], [1, 2]):
            _check(f"max_pool{n}d", x, k, s, p, d, ceil_mode=ceil_mode, return_indices=return_indices)
        # Per-dimension tuples and a stride larger than the kernel.
        k, s, p, d = (3, 2, 2)[:n], (1, 3, 2)[:n], (1, 0, 1)[:n], (1, 2, 1)[:n]
        _check(f"max_pool{n}d", x, k, s, p, d, ceil_mode=ceil_mode, return_indices=return_indices)


def test_max_pool_ties_go_to_the_first_maximum_as_torch():
    x = np.array([[[1.0, 3.0, 3.0, 2.0, 3.0, 3.0, 0.0]]], dtype=np.float32)
    _check("max_pool1d", x, 3, 1, 1, return_indices=True)
    x2 = np.random.default_rng(0).integers(0, 3, (2, 3, 6, 7)).astype(np.float32)
    for args in [(2,), (3, 2, 1), (3, 1, 1, 2)]:
        _check("max_pool2d", x2, *args, return_indices=True, ceil_mode=True)
        _check("adaptive_max_pool2d", x2, (4, 5), return_indices=True)


def test_max_pool_nan_and_infinite_windows_as_torch():
    x = np.array([[[1, np.nan, 2, np.nan, 3, -np.inf, -np.inf, -np.inf, 5]]], np.float32)
    for args in [(3,), (3, 1, 1), (2, 2, 1, 2)]:
        want = TF.max_pool1d(torch.tensor(x), *args, return_indices=True)
        got = F.max_pool1d(enp.asarray(x), *args, return_indices=True)
        np.testing.assert_array_equal(np.asarray(got[0]), want[0].numpy())
        np.testing.assert_array_equal(np.asarray(got[1]), want[1].numpy())


UNPOOL = {1: [((2, 3, 9), 2, None, 0, None), ((3, 9), 3, 3, 1, [9]), ((2, 2, 10), 3, 2, 1, [10])],
          2: [((2, 3, 7, 6), 2, None, 0, (7, 6)), ((3, 8, 6), (3, 2), (3, 2), (1, 0), (8, 6))],
          3: [((1, 2, 5, 6, 4), 2, None, 0, (1, 2, 5, 6, 4)), ((2, 4, 4, 3), (2, 2, 1), None, 0, None)]}  # fmt: skip


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_matches_torch(n):
    rng = np.random.default_rng(n)
    for shape, k, s, p, size in UNPOOL[n]:
        pooled, indices = getattr(TF, f"max_pool{n}d")(torch.tensor(_distinct(rng, shape)), k, s, p, return_indices=True)
        _check_unpool(n, pooled.numpy(), indices, k, s, p, size)
        layer, theirs = getattr(nn, f"MaxUnpool{n}d")(k, s, p), getattr(torch.nn, f"MaxUnpool{n}d")(k, s, p)
        assert repr(layer) == repr(theirs)
        np.testing.assert_array_equal(np.asarray(layer(enp.asarray(pooled.numpy()), enp.asarray(indices.numpy()), size)),
                                      theirs(pooled, indices, size).numpy())  # fmt: skip


def _check_unpool(n, pooled, indices, k, s, p, size):
    t = torch.tensor(pooled, requires_grad=True)
    want = getattr(TF, f"max_unpool{n}d")(t, indices, k, s, p, size)
    index = enp.asarray(indices.numpy())
    got = getattr(F, f"max_unpool{n}d")(enp.asarray(pooled), index, k, s, p, size)
    np.testing.assert_array_equal(np.asarray(got), want.detach().numpy())
    ct = np.random.default_rng(0).standard_normal(tuple(want.shape)).astype(np.float32)
    want.backward(torch.tensor(ct))
    grad = ember.grad(lambda v: enp.sum(getattr(F, f"max_unpool{n}d")(v, index, k, s, p, size) * ct))(enp.asarray(pooled))
    np.testing.assert_allclose(np.asarray(grad), t.grad.numpy())


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [False, True])
def test_avg_pool_matches_torch(n, ceil_mode, count_include_pad):
    rng = np.random.default_rng(n)
    overrides = [None] if n == 1 else [None, 5]
    for shape in SHAPES[n]:
        x = rng.standard_normal(shape).astype(np.float32)
        for k, s, p, divisor in itertools.product([2, 3], [None, 1, 2], [0, 1], overrides):
            extra = {} if n == 1 else {"divisor_override": divisor}
            _check(f"avg_pool{n}d", x, k, s, p, ceil_mode, count_include_pad, **extra)
        k, s, p = (3, 4, 2)[:n], (2, 3, 1)[:n], (1, 2, 0)[:n]
        _check(f"avg_pool{n}d", x, k, s, p, ceil_mode, count_include_pad)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("norm_type", [1, 2, 3, 1.5, float("inf")])
def test_lp_pool_matches_torch(n, norm_type):
    rng = np.random.default_rng(n)
    for shape in SHAPES[n]:
        x = np.abs(rng.standard_normal(shape)).astype(np.float32) + 0.1
        for k, s, ceil_mode in itertools.product([2, 3], [None, 1, 2], [False, True]):
            _check(f"lp_pool{n}d", x, norm_type, k, s, ceil_mode, tol=1e-4)


def test_lp_pool_of_signed_input_and_zero_sum_as_torch():
    x = np.array([[[1.0, -2.0, 0.0, 0.0, -1.0, 3.0]]], dtype=np.float32)
    _check("lp_pool1d", x, 2, 2)
    out = F.lp_pool1d(enp.asarray(x), 3, 2)
    np.testing.assert_allclose(np.asarray(out), TF.lp_pool1d(torch.tensor(x), 3, 2).numpy(), equal_nan=True)


ADAPTIVE_SIZES = {1: [1, 2, 3, 4, 5, 9, 11], 2: [1, 3, (2, 5), (None, 4), (4, None), (7, 1)],
                  3: [1, 2, (3, None, 2), (4, 1, 6)]}  # fmt: skip


@pytest.mark.parametrize("n", [1, 2, 3])
def test_adaptive_pools_match_torch(n):
    rng = np.random.default_rng(n)
    for shape in SHAPES[n]:
        x = _distinct(rng, shape)
        for size in ADAPTIVE_SIZES[n]:
            _check(f"adaptive_avg_pool{n}d", x, size)
            _check(f"adaptive_max_pool{n}d", x, size)
            _check(f"adaptive_max_pool{n}d", x, size, return_indices=True)


INTERPOLATE = {
    1: (["nearest", "nearest-exact", "linear"], [(2, 3, 7)], [11, 3, 1, 14]),
    2: (["nearest", "nearest-exact", "bilinear"], [(2, 3, 5, 6)], [(4, 9), (11, 2), 12]),
    3: (["nearest", "nearest-exact", "trilinear"], [(1, 2, 3, 4, 5)], [(4, 9, 2), 3]),
}
SCALES = [2, 3, 1.7, 0.6, 0.5, 2.5, 1.0]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_interpolate_matches_torch(n):
    modes, shapes, sizes = INTERPOLATE[n]
    rng = np.random.default_rng(n)
    for shape, mode in itertools.product(shapes, modes):
        x = rng.standard_normal(shape).astype(np.float32)
        for align in ([None] if mode.startswith("nearest") else [False, True]):
            for size in sizes:
                _check("interpolate", x, size=size, mode=mode, align_corners=align)
            for scale, recompute in itertools.product(SCALES, [None, True]):
                _check("interpolate", x, scale_factor=scale, mode=mode, align_corners=align,
                       recompute_scale_factor=recompute)  # fmt: skip
            scales = (1.5, 0.75, 2.0)[:n]
            _check("interpolate", x, scale_factor=scales, mode=mode, align_corners=align)


def test_interpolate_nearest_keeps_integer_dtypes_as_torch():
    x = np.arange(30, dtype=np.uint8).reshape(1, 2, 3, 5)
    got = F.interpolate(enp.asarray(x), scale_factor=1.7)
    want = TF.interpolate(torch.tensor(x), scale_factor=1.7)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_pixel_shuffle_matches_torch():
    rng = np.random.default_rng(0)
    _check("pixel_shuffle", rng.standard_normal((2, 18, 3, 4)).astype(np.float32), 3)
    _check("pixel_shuffle", rng.standard_normal((2, 3, 8, 3, 4)).astype(np.float32), 2)
    _check("pixel_unshuffle", rng.standard_normal((2, 3, 6, 4)).astype(np.float32), 2)
    _check("pixel_unshuffle", rng.standard_normal((3, 9, 6)).astype(np.float32), 3)


# --- layers ---------------------------------------------------------------------------------------------

LAYERS = [
    ("MaxPool1d", (3,), {}), ("MaxPool1d", (3, 2, 1), {"dilation": 2, "ceil_mode": True}),
    ("MaxPool2d", (2,), {}), ("MaxPool2d", ((3, 2),), {"stride": (2, 1), "padding": 1, "return_indices": True}),
    ("MaxPool3d", (2,), {"stride": 1, "ceil_mode": True}),
    ("AvgPool1d", (3,), {}), ("AvgPool1d", (3, 2, 1), {"ceil_mode": True, "count_include_pad": False}),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1}), ("AvgPool2d", ((3, 2),), {"divisor_override": 4}),
    ("AvgPool3d", (2,), {"ceil_mode": True, "count_include_pad": False}),
    ("LPPool1d", (2, 3), {}), ("LPPool2d", (1.5, (2, 3)), {"stride": 1, "ceil_mode": True}), ("LPPool3d", (2, 2), {}),
    ("AdaptiveAvgPool1d", (4,), {}), ("AdaptiveAvgPool2d", ((None, 3),), {}), ("AdaptiveAvgPool3d", (2,), {}),
    ("AdaptiveMaxPool1d", (4,), {"return_indices": True}), ("AdaptiveMaxPool2d", ((3, None),), {}),
    ("AdaptiveMaxPool3d", ((1, 2, 3),), {}),
    ("Upsample", (), {"scale_factor": 2}), ("Upsample", (), {"size": (5, 7), "mode": "bilinear", "align_corners": True}),
    ("Upsample", (), {"scale_factor": (2, 1.5), "mode": "nearest-exact"}),
    ("UpsamplingNearest2d", (), {"scale_factor": 3}), ("UpsamplingBilinear2d", (), {"size": 9}),
    ("PixelShuffle", (2,), {}), ("PixelUnshuffle", (2,), {}),
]  # fmt: skip
LAYER_INPUTS = {"1d": (2, 4, 12), "2d": (2, 4, 8, 6), "3d": (1, 4, 6, 5, 4)}


def _layer_input(name):
    if name in ("Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle"):
        return LAYER_INPUTS["2d"]
    return LAYER_INPUTS[name[-2:]]


@pytest.mark.parametrize("name,args,kwargs", LAYERS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(LAYERS)])
def test_layer_matches_torch(name, args, kwargs):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert ours.parameters() == []
    x = _distinct(np.random.default_rng(0), _layer_input(name))
    if name.startswith("LPPool"):
        x = np.abs(x) + 0.1
    t = torch.tensor(x, requires_grad=True)
    want = theirs(t)
    got = ours(enp.asarray(x), key=ember.random.key(0))
    if isinstance(want, tuple):
        np.testing.assert_array_equal(np.asarray(got[1]), want[1].numpy())
        want, got = want[0], got[0]
    np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=1e-5, atol=1e-5)
    want.sum().backward()

    def loss(v):
        out = ours(v)
        return enp.sum(out[0] if isinstance(out, tuple) else out)

    np.testing.assert_allclose(np.asarray(ember.grad(loss)(enp.asarray(x))), t.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_layer_repr_of_list_arguments_is_a_tuple_and_layers_are_static():
    layer = nn.MaxPool2d([3, 2])
    assert repr(layer) == "MaxPool2d(kernel_size=(3, 2), stride=(3, 2), padding=0, dilation=1, ceil_mode=False)"
    assert ember.tree.leaves(layer) == []
    assert repr(nn.Sequential(nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1))) == repr(
        torch.nn.Sequential(torch.nn.AvgPool2d(2), torch.nn.AdaptiveAvgPool2d(1)))


def test_pools_under_jit_and_vmap():
    x = enp.asarray(_distinct(np.random.default_rng(0), (3, 2, 4, 7, 6)))
    f = lambda v: F.max_pool2d(v, 3, 2, 1, ceil_mode=True, return_indices=True)  # noqa: E731
    jv, ji = ember.jit(f)(x[0])
    vv, vi = ember.vmap(f)(x)
    loop = [f(x[i]) for i in range(3)]
    np.testing.assert_array_equal(np.asarray(jv), np.asarray(loop[0][0]))
    np.testing.assert_array_equal(np.asarray(ji), np.asarray(loop[0][1]))
    np.testing.assert_array_equal(np.asarray(vv), np.stack([np.asarray(o[0]) for o in loop]))
    np.testing.assert_array_equal(np.asarray(vi), np.stack([np.asarray(o[1]) for o in loop]))


def test_empty_batch_as_torch():
    x = np.zeros((0, 2, 5, 5), np.float32)
    for name, args in [("max_pool2d", (2,)), ("avg_pool2d", (3, 2, 1)), ("adaptive_avg_pool2d", (3,)),
                       ("adaptive_max_pool2d", (3,)), ("lp_pool2d", (2, 2))]:  # fmt: skip
        assert getattr(F, name)(enp.asarray(x), *args).shape == tuple(getattr(TF, name)(torch.tensor(x), *args).shape)


# --- bad input ----------------------------------------------------------------------------------------


def test_wrong_rank_names_the_op_and_the_shape():
    with pytest.raises(ShapeError, match=r"max_pool2d: expected a 3-D \(C, H, W\) or 4-D \(N, C, H, W\) input, got shape \(7,\)"):
        F.max_pool2d(enp.ones(7), 2)
    with pytest.raises(ShapeError, match=r"model\.layers\[1\] \(AvgPool1d\(kernel_size=\(2,\), stride=\(2,\), \.\.\.\)\).*"
                                         r"avg_pool1d: expected a 2-D \(C, L\) or 3-D \(N, C, L\) input, got shape "
                                         r"\(1, 2, 3, 4\) \(float32\)"):
        nn.Sequential(nn.Identity(), nn.AvgPool1d(2))(enp.ones((1, 2, 3, 4)))


def test_kernel_larger_than_the_padded_input():
    with pytest.raises(ShapeError, match=r"max_pool1d: the window \(kernel_size=8, dilation=1\) is larger than the padded "
                                         r"input \(size 7 \+ 2 \* padding 0\)"):
        F.max_pool1d(enp.ones((1, 1, 7)), 8)
    with pytest.raises(ShapeError, match="avg_pool2d: the window"):
        F.avg_pool2d(enp.ones((1, 3, 3)), (2, 4))


def test_padding_above_half_the_kernel():
    with pytest.raises(ShapeError, match="max_pool2d: padding should be at most half of kernel size, got padding=2 "
                                         "and kernel_size=3"):
        F.max_pool2d(enp.ones((1, 5, 5)), 3, padding=2)
    with pytest.raises(ShapeError, match="avg_pool1d: padding should be at most half"):
        F.avg_pool1d(enp.ones((1, 5)), 2, padding=2)


def test_bad_arguments():
    with pytest.raises(InvalidArgumentError, match="stride must be positive|stride and dilation must be positive"):
        F.max_pool1d(enp.ones((1, 5)), 2, stride=0)
    with pytest.raises(InvalidArgumentError, match=r"kernel_size=\(2, 2, 2\) must be an int or a tuple of 2 ints"):
        F.max_pool2d(enp.ones((1, 5, 5)), (2, 2, 2))
    with pytest.raises(DTypeError, match="max_pool2d: expected a floating input, got int32"):
        F.max_pool2d(enp.ones((1, 5, 5), dtype=int), 2)
    with pytest.raises(ShapeError, match=r"adaptive_avg_pool2d: expected non-zero sizes except for the batch dimension, "
                                         r"got shape \(1, 0, 3\)"):
        F.adaptive_avg_pool2d(enp.ones((1, 0, 3)), 2)
    with pytest.raises(InvalidArgumentError, match="interpolate: give exactly one of size and scale_factor"):
        F.interpolate(enp.ones((1, 1, 4)), size=3, scale_factor=2)
    with pytest.raises(ShapeError, match=r"interpolate: mode='bilinear' expects a 4-D \(N, C, \*spatial\) input, got shape \(1, 1, 4\)"):
        F.interpolate(enp.ones((1, 1, 4)), size=3, mode="bilinear")
    with pytest.raises(InvalidArgumentError, match="align_corners is only for the linear modes"):
        F.interpolate(enp.ones((1, 1, 4)), size=3, align_corners=True)
    with pytest.raises(DTypeError, match="mode='linear' interpolates floating inputs, got int32"):
        F.interpolate(enp.ones((1, 1, 4), dtype=int), size=3, mode="linear")
    with pytest.raises(ShapeError, match=r"pixel_shuffle: expected an input of shape \(\*, C \* 2\*\*2, H, W\)"):
        F.pixel_shuffle(enp.ones((1, 3, 2, 2)), 2)
    with pytest.raises(ShapeError, match=r"max_unpool2d: invalid output_size \(9, 4\) \(dimension 0 must be between 2 and 6"):
        F.max_unpool2d(enp.ones((1, 2, 2)), enp.zeros((1, 2, 2), dtype=int), 2, output_size=(9, 4))
    with pytest.raises(ShapeError, match="max_unpool1d: expected .* and indices of its shape"):
        F.max_unpool1d(enp.ones((1, 2, 2)), enp.zeros((1, 2), dtype=int), 2)
    with pytest.raises(DTypeError, match="max_unpool1d: indices must be integers"):
        F.max_unpool1d(enp.ones((1, 2)), enp.zeros((1, 2)), 2)
    with pytest.raises(ShapeError, match=r"pixel_unshuffle: expected an input of shape \(\*, C, H \* 2, W \* 2\)"):
        F.pixel_unshuffle(enp.ones((1, 3, 3, 2)), 2)
