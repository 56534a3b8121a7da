"""The gradient-shaped convolutions (ember/backends/kernels_conv_grads.py) against the naive loops of
conv_reference.py: `by_window` (one in feature per feature group, fewer output positions than window
elements: vmap's per-example weight gradients), `by_input` (col2im: full padding, input dilation) and
`features_first` (one group, fewer output positions than window elements: a batch's weight gradients),
on 1 to 3 spatial dimensions, strides and dilations, explicit (also negative) padding, shuffled
layouts and several dtypes; and per-example gradients of a small CNN, which take both, against a
Python loop of `grad`."""

from __future__ import annotations

import numpy as np
import pytest
from conv_reference import conv_ref, dilate

import ember
import ember.numpy as enp
from ember import lax
from ember.backends import kernels_conv

SPATIAL_LETTERS = "HWD"


@pytest.fixture
def taken(monkeypatch):
    """For each of the three ways, whether each convolution asked took it (False: it declined)."""
    calls = {"_by_window": [], "_by_input": [], "_features_first": []}
    for name, record in calls.items():
        real = getattr(kernels_conv, name)

        def counting(*args, _real=real, _record=record):
            out = _real(*args)
            _record.append(out is not None)
            return out

        monkeypatch.setattr(kernels_conv, name, counting)
    return calls


def _specs(rng, n):
    return tuple("".join(rng.permutation(list(prefix + SPATIAL_LETTERS[:n]))) for prefix in ("NC", "OI", "NC"))


def _shapes(specs, batch, in_features, out_features, in_per_group, sizes, kernel):
    spatial = [c for c in specs[1] if c not in "OI"]
    lhs = tuple({"N": batch, "C": in_features, **dict(zip(spatial, sizes))}[c] for c in specs[0])
    rhs = tuple({"O": out_features, "I": in_per_group, **dict(zip(spatial, kernel))}[c] for c in specs[1])
    return lhs, rhs


def _weight_gradient_geometry(rng, n: int):
    """A weight gradient's window (the output gradient's extent), strides, dilations, padding (also
    negative) and input sizes, with outputs smaller than the window."""
    kernel = [int(v) for v in rng.integers(2, 6 if n < 3 else 4, size=n)]
    out = [int(rng.integers(1, min(k, 3))) for k in kernel]  # each smaller than the window
    strides = tuple(int(v) for v in rng.integers(1, 3, size=n))
    rhs_dilation = [int(v) for v in rng.integers(1, 3, size=n)]
    padding = [tuple(int(v) for v in rng.integers(-1, 3, size=2)) for _ in range(n)]
    padded = [(o - 1) * s + dilate(k, r) for o, s, k, r in zip(out, strides, kernel, rhs_dilation)]
    sizes = [p - lo - hi for p, (lo, hi) in zip(padded, padding)]
    padding = [(lo, hi) if s >= 1 else (lo, hi + s - 1) for s, (lo, hi) in zip(sizes, padding)]
    sizes = [max(s, 1) for s in sizes]
    return kernel, strides, rhs_dilation, padding, sizes


def window_case(seed: int):
    """A per-example weight gradient's shape: G groups of one in feature, outputs smaller than the window."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4))
    groups = int(rng.integers(1, 5))
    kernel, strides, rhs_dilation, padding, sizes = _weight_gradient_geometry(rng, n)
    batch = kernel[-1] + 1 + int(rng.integers(0, 3))  # output rows times the batch: longer runs than a window row
    specs = _specs(rng, n)
    lhs_shape, rhs_shape = _shapes(specs, batch, groups, groups * int(rng.integers(1, 4)), 1, sizes, kernel)
    kwargs = {"rhs_dilation": tuple(rhs_dilation), "dimension_numbers": specs, "feature_group_count": groups}
    return lhs_shape, rhs_shape, strides, padding, kwargs


def input_case(seed: int):
    """An input gradient's shape: one group, stride 1, full padding or a dilated input, fewer out features."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4))
    kernel = [int(v) for v in rng.integers(1, 4, size=n)]
    rhs_dilation = [int(v) for v in rng.integers(1, 3, size=n)]
    lhs_dilation = [int(v) for v in rng.integers(1, 3, size=n)] if rng.random() < 0.5 else [1] * n
    windows = [dilate(k, r) for k, r in zip(kernel, rhs_dilation)]
    padding = [tuple(w - 1 + int(v) for v in rng.integers(0, 2, size=2)) for w in windows]  # full, or more
    sizes = [int(v) for v in rng.integers(1, 6 if n < 3 else 4, size=n)]
    in_features, out_features = int(rng.integers(4, 7)), int(rng.integers(1, 3))
    specs = _specs(rng, n)
    lhs_shape, rhs_shape = _shapes(
        specs, int(rng.integers(1, 4)), in_features, out_features, in_features, sizes, kernel
    )
    kwargs = {"lhs_dilation": tuple(lhs_dilation), "rhs_dilation": tuple(rhs_dilation), "dimension_numbers": specs}
    return lhs_shape, rhs_shape, (1,) * n, padding, kwargs


def features_case(seed: int):
    """A batch's weight gradient's shape: one group, several (batch) features, outputs smaller than the
    window, one lhs batch row (the first layer's one channel) or several."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4))
    kernel, strides, rhs_dilation, padding, sizes = _weight_gradient_geometry(rng, n)
    batch = 1 if seed % 3 == 0 else int(rng.integers(2, 5))
    features = int(rng.integers(2, 5))
    specs = _specs(rng, n)
    lhs_shape, rhs_shape = _shapes(specs, batch, features, features + int(rng.integers(0, 3)), features, sizes, kernel)
    kwargs = {"rhs_dilation": tuple(rhs_dilation), "dimension_numbers": specs}
    return lhs_shape, rhs_shape, strides, padding, kwargs


def _check(lhs_shape, rhs_shape, strides, padding, kwargs, seed):
    rng = np.random.default_rng(4000 + seed)
    lhs = rng.integers(-4, 5, size=lhs_shape).astype(np.int32)
    rhs = rng.integers(-4, 5, size=rhs_shape).astype(np.int32)
    want = conv_ref(lhs, rhs, strides, padding, **kwargs)
    got = lax.conv_general_dilated(lhs, rhs, strides, padding, **kwargs)
    what = str((lhs_shape, rhs_shape, strides, padding, kwargs))
    np.testing.assert_array_equal(np.asarray(got), want.astype(np.int32), err_msg=what)
    x, w = rng.standard_normal(lhs_shape).astype(np.float32), rng.standard_normal(rhs_shape).astype(np.float32)
    got32 = lax.conv_general_dilated(x, w, strides, padding, **kwargs)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got32), conv_ref(x, w, strides, padding, **kwargs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(60))
def test_by_window_matches_the_loop_reference(seed, taken):
    _check(*window_case(seed), seed)
    assert taken["_by_window"] == [True, True], "by_window declined a case it is meant to take"


@pytest.mark.parametrize("seed", range(60))
def test_by_input_matches_the_loop_reference(seed, taken):
    _check(*input_case(seed), seed)
    assert taken["_by_input"] == [True, True], "by_input declined a case it is meant to take"


@pytest.mark.parametrize("seed", range(60))
def test_features_first_matches_the_loop_reference(seed, taken):
    _check(*features_case(seed), seed)
    assert taken["_features_first"] == [True, True], "features_first declined a case it is meant to take"


def test_features_first_reads_a_backward_pass_operands_as_they_lie(taken):
    # a first and a second layer's weight gradients as a backward pass asks for them: the input and the
    # output gradient NCHW views of NHWC memory, the batch as the contracted features ("CNHW"/"IOHW")
    rng = np.random.default_rng(11)
    for channels, out_channels, hw in ((1, 6, 12), (5, 7, 9)):
        x = np.ascontiguousarray(rng.standard_normal((8, hw, hw, channels)).astype(np.float32)).transpose(0, 3, 1, 2)
        g = np.ascontiguousarray(rng.standard_normal((8, hw - 2, hw - 2, out_channels)).astype(np.float32))
        g = g.transpose(0, 3, 1, 2)
        kwargs = {"dimension_numbers": ("CNHW", "IOHW", "CNHW")}
        got = lax.conv_general_dilated(x, g, (1, 1), "VALID", **kwargs)
        want = conv_ref(x, g, (1, 1), "VALID", **kwargs)
        assert got.shape == (out_channels, channels, 3, 3)  # (the kernel's gradient: OIHW)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-4)
    assert taken["_features_first"] == [True, True]


def test_by_input_crops_negative_padding(taken):
    # a dilated input cropped on one side (-1) and padded on the other: the shifts start inside it
    for lhs_shape, rhs_shape, padding, kwargs in [
        ((2, 6, 5), (2, 6, 3), [(-1, 3)], {"lhs_dilation": (2,)}),
        ((1, 5, 4, 3), (1, 5, 2, 3), [(-1, 2), (2, -1)], {"lhs_dilation": (3, 2), "rhs_dilation": (1, 2)}),
    ]:
        _check(lhs_shape, rhs_shape, (1,) * len(padding), padding, kwargs, 0)
    assert taken["_by_input"] == [True] * 4


@pytest.mark.parametrize("dtype", [np.float16, np.bool_, np.complex64, np.int8])
def test_the_ways_keep_the_dtype(dtype, taken):
    rng = np.random.default_rng(7)

    def draw(shape):
        v = rng.standard_normal(shape)
        return (v > 0) if dtype == np.bool_ else (2 * v).astype(dtype)

    cases = [  # a per-example weight gradient (4 groups, batch 5), an input gradient (full padding), and a
        # batch's weight gradient (two batch rows, padded)
        (draw((5, 4, 5, 6)), draw((8, 1, 4, 4)), (1, 1), "VALID", {"feature_group_count": 4}),
        (draw((2, 6, 3, 4)), draw((2, 6, 3, 3)), (1, 1), [(2, 2), (2, 2)], {}),
        (draw((2, 3, 5, 6)), draw((4, 3, 5, 5)), (1, 1), [(1, 0), (0, 1)], {}),
    ]
    for x, w, strides, padding, kwargs in cases:
        got = lax.conv_general_dilated(x, w, strides, padding, **kwargs)
        assert got.dtype == dtype
        want = conv_ref(x, w, strides, padding, **kwargs)
        if dtype == np.bool_:
            np.testing.assert_array_equal(np.asarray(got), want != 0)
        elif dtype == np.int8:  # integers wrap, as in XLA
            np.testing.assert_array_equal(np.asarray(got), want.astype(np.int8))
        else:
            np.testing.assert_allclose(np.asarray(got).astype(np.complex128), want,
                                       rtol=1e-2 if dtype == np.float16 else 1e-5, atol=1e-2)  # fmt: skip
    assert taken == {"_by_window": [True], "_by_input": [True], "_features_first": [True]}


def test_by_window_reads_an_nhwc_operand_and_strided_kernels(taken):
    # the operand as a forward pass leaves it (NCHW view of NHWC memory, the batch axis innermost for
    # the gradient's dimension numbers) and an output gradient that is a reversed view
    rng = np.random.default_rng(8)
    x = np.ascontiguousarray(rng.standard_normal((6, 7, 7, 5)).astype(np.float32)).transpose(0, 3, 1, 2)
    g = rng.standard_normal((1, 12, 5, 5)).astype(np.float32)[:, :, ::-1, ::-1]
    specs = ("CNHW", "IOHW", "CNHW")
    kwargs = {"dimension_numbers": specs, "feature_group_count": 6}
    got = lax.conv_general_dilated(x, g, (1, 1), "VALID", **kwargs)
    np.testing.assert_allclose(np.asarray(got), conv_ref(x, g, (1, 1), "VALID", **kwargs), rtol=1e-5, atol=1e-5)
    assert taken["_by_window"] == [True]


def test_the_ways_decline_what_they_do_not_take(taken):
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((2, 3, 8, 8)), rng.standard_normal((3, 3, 3, 3))
    lax.conv_general_dilated(x, w, (1, 1), "SAME")  # a forward convolution: im2col holds no padding to skip
    lax.conv_general_dilated(x, w[:, :1], (1, 1), "VALID", feature_group_count=3)  # output larger than window
    lax.conv_general_dilated(x, w, (2, 2), [(2, 2), (2, 2)])  # a stride: by_input declines
    assert not any(taken["_by_window"]) and not any(taken["_by_input"]) and not any(taken["_features_first"])


def test_per_example_gradients_of_a_cnn_match_a_loop(taken):
    rng = np.random.default_rng(10)
    k1, k2 = rng.standard_normal((4, 1, 3, 3)).astype(np.float32), rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    w = rng.standard_normal((6 * 4 * 4, 3)).astype(np.float32)
    x = rng.standard_normal((5, 1, 8, 8)).astype(np.float32)

    def loss(params, x):
        k1, k2, w = params
        h = enp.maximum(lax.conv_general_dilated(x[None], k1, (1, 1), "VALID"), 0.0)
        h = enp.tanh(lax.conv_general_dilated(h, k2, (1, 1), "VALID"))
        return enp.sum(enp.sin(h.reshape(-1) @ w))

    params = (k1, k2, w)
    per_example = ember.vmap(ember.grad(loss), in_axes=(None, 0))
    for got in (per_example(params, x), ember.jit(per_example)(params, x)):
        for i in range(x.shape[0]):
            want = ember.grad(loss)(params, x[i])
            for g, wi in zip(got, want):
                # float32 sums of ~100 terms in another order: absolute error relative to the gradient's scale
                scale = float(np.abs(np.asarray(wi)).max())
                np.testing.assert_allclose(np.asarray(g[i]), np.asarray(wi), rtol=1e-4, atol=1e-4 * scale)
    assert any(taken["_by_window"]) and any(taken["_by_input"])
