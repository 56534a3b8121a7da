"""The flat-window convolution (ember/backends/kernels_conv_flat.py: one in feature per group) against the
naive loops of conv_reference.py, on the cases it takes: 1 to 3 spatial dimensions, feature or batch
groups, kernel dilation, explicit (also negative) padding, shuffled layouts, several dtypes."""

from __future__ import annotations

import numpy as np
import pytest
from conv_reference import conv_ref, dilate

from ember import lax
from ember.backends import kernels_conv

SPATIAL_LETTERS = "HWD"


@pytest.fixture
def flat_calls(monkeypatch):
    """How many convolutions the flat way computed (None results: it declined)."""
    calls = []
    real = kernels_conv._flat

    def counting(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(kernels_conv, "_flat", counting)
    return calls


def flat_case(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 4))
    feature_groups = batch_groups = 1
    if rng.random() < 0.5:
        if rng.random() < 0.5:
            feature_groups = int(rng.integers(2, 5))
        else:
            batch_groups = int(rng.integers(2, 4))
    out_features = feature_groups * batch_groups * int(rng.integers(1, 4))
    batch = batch_groups * int(rng.integers(1, 4))
    kernel = [int(v) for v in rng.integers(1, 4, size=n)]
    rhs_dilation = [int(v) for v in rng.integers(1, 3, size=n)]
    windows = [dilate(k, r) for k, r in zip(kernel, rhs_dilation)]
    # outputs at least as large as the window (the flat way's forward-convolution shape)
    sizes = [2 * w + 1 + int(rng.integers(0, 4 if n < 3 else 2)) for w in windows]
    padding = [tuple(int(v) for v in rng.integers(-1, 3, size=2)) for _ in range(n)]
    specs = tuple("".join(rng.permutation(list(prefix + SPATIAL_LETTERS[:n]))) for prefix in ("NC", "OI", "NC"))
    spatial = [c for c in specs[1] if c not in "OI"]
    lhs_shape = tuple({"N": batch, "C": feature_groups, **dict(zip(spatial, sizes))}[c] for c in specs[0])
    rhs_shape = tuple({"O": out_features, "I": 1, **dict(zip(spatial, kernel))}[c] for c in specs[1])
    kwargs = {"rhs_dilation": tuple(rhs_dilation), "dimension_numbers": specs, "feature_group_count": feature_groups,
              "batch_group_count": batch_groups}  # fmt: skip
    return lhs_shape, rhs_shape, (1,) * n, padding, kwargs


@pytest.mark.parametrize("seed", range(60))
def test_flat_conv_matches_the_loop_reference(seed, flat_calls):
    lhs_shape, rhs_shape, strides, padding, kwargs = flat_case(seed)
    rng = np.random.default_rng(4000 + seed)
    lhs = rng.integers(-4, 5, size=lhs_shape).astype(np.int32)
    rhs = rng.integers(-4, 5, size=rhs_shape).astype(np.int32)
    want = conv_ref(lhs, rhs, strides, padding, **kwargs)
    got = lax.conv_general_dilated(lhs, rhs, strides, padding, **kwargs)
    np.testing.assert_array_equal(
        np.asarray(got), want.astype(np.int32), err_msg=str((lhs_shape, rhs_shape, padding, kwargs))
    )
    x, w = rng.standard_normal(lhs_shape).astype(np.float32), rng.standard_normal(rhs_shape).astype(np.float32)
    got32 = lax.conv_general_dilated(x, w, strides, padding, **kwargs)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got32), conv_ref(x, w, strides, padding, **kwargs), rtol=1e-5, atol=1e-5)
    assert flat_calls and all(flat_calls), "the flat way declined a case it is meant to take"


@pytest.mark.parametrize("dtype", [np.float16, np.bool_, np.complex64])
def test_flat_conv_dtypes(dtype, flat_calls):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((3, 1, 7, 6)) > 0) if dtype == np.bool_ else rng.standard_normal((3, 1, 7, 6))
    w = (rng.standard_normal((4, 1, 3, 2)) > 0) if dtype == np.bool_ else rng.standard_normal((4, 1, 3, 2))
    x, w = x.astype(dtype), w.astype(dtype)
    got = lax.conv_general_dilated(x, w, (1, 1), "SAME")
    assert got.dtype == dtype
    want = conv_ref(x, w, (1, 1), "SAME")
    if dtype == np.bool_:
        np.testing.assert_array_equal(np.asarray(got), want != 0)
    else:
        np.testing.assert_allclose(
            np.asarray(got).astype(np.complex128), want, rtol=1e-2 if dtype == np.float16 else 1e-5, atol=1e-2
        )
    assert flat_calls == [True]


def test_flat_conv_reads_strided_operands(flat_calls):
    # an NCHW view of NHWC memory, and a kernel reversed in place (as the input gradient's)
    rng = np.random.default_rng(8)
    x = np.ascontiguousarray(rng.standard_normal((5, 9, 8, 1)).astype(np.float32)).transpose(0, 3, 1, 2)[:, :, 1:, ::2]
    w = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)[:, :, ::-1, ::-1]
    got = lax.conv_general_dilated(x, w, (1, 1), [(1, 0), (2, 1)])
    np.testing.assert_allclose(np.asarray(got), conv_ref(x, w, (1, 1), [(1, 0), (2, 1)]), rtol=1e-5, atol=1e-5)
    assert flat_calls == [True]


def test_flat_conv_declines_what_it_does_not_take(flat_calls):
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((2, 3, 8, 8)), rng.standard_normal((4, 3, 3, 3))
    lax.conv_general_dilated(x, w, (1, 1), "VALID")  # several in features
    lax.conv_general_dilated(x[:, :1], w[:, :1], (2, 2), "VALID")  # a stride
    # input dilation (a transposed strided convolution): not even asked
    lax.conv_general_dilated(x[:, :1], w[:, :1], (1, 1), [(0, 0), (0, 0)], lhs_dilation=(2, 2))
    assert not any(flat_calls)  # (the shapes alone rule it out: kernels_conv._numpy_way does not ask)


@pytest.mark.parametrize("shape", [(2, 3, 8, 8), (3, 2, 5, 6, 5)])
def test_flat_conv_feature_groups_of_an_nchw_batch(shape, flat_calls):
    # NCHW memory with several feature groups and images: each image's run starts a group's plane apart,
    # so the runs are laid out per image, and every spatial axis after the first is cropped
    rng = np.random.default_rng(10)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((2 * shape[1], 1, *(3,) * (len(shape) - 2))).astype(np.float32)
    kwargs = {"feature_group_count": shape[1]}
    got = lax.conv_general_dilated(x, w, (1,) * (len(shape) - 2), "VALID", **kwargs)
    want = conv_ref(x, w, (1,) * (len(shape) - 2), "VALID", **kwargs)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    assert flat_calls == [True]
