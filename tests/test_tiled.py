"""A binary ufunc with its small operand tiled over the large one's memory (ember/backends/tiled.py)
against the plain ufunc: the same values bit for bit, in every layout of the large operand (C order,
transposed, gappy slices, reversed), with the small operand on either side; and jit's generated code,
which takes it for a bias added to a convolution's (transposed) result, against eager mode."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax
from ember.backends import tiled
from ember.backends.tiled import tiled_binary


def _layouts(rng, shape, dtype):
    """The same logical (N, C, H, W) array in several memory layouts."""
    n, c, h, w = shape
    base = (rng.standard_normal((n, h + 2, w + 3, c)) * 4).astype(dtype)
    yield "C", np.ascontiguousarray(base[:, :h, :w].transpose(0, 3, 1, 2))
    yield "NHWC", np.ascontiguousarray(base[:, :h, :w]).transpose(0, 3, 1, 2)
    yield "NHWC gappy", base[:, :h, :w].transpose(0, 3, 1, 2)
    yield "reversed", base[:, :h, ::-1][:, :, :w].transpose(0, 3, 1, 2)
    yield "CHWN", np.ascontiguousarray(base[:, :h, :w].transpose(3, 1, 2, 0)).transpose(3, 0, 1, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex64])
@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.maximum])
@pytest.mark.parametrize("shape", [(64, 8, 6, 6), (8, 16, 9, 7), (4, 3, 33, 40), (3, 2, 1, 5)])
def test_tiled_binary_is_the_ufunc(dtype, ufunc, shape):
    if dtype == np.complex64 and ufunc is np.maximum:
        pytest.skip("NumPy's maximum of complex numbers orders lexicographically: not a bias's ufunc")
    rng = np.random.default_rng(0)
    c = shape[1]
    smalls = {
        "per channel": rng.standard_normal((c, 1, 1)),
        "per column": rng.standard_normal((shape[3],)),
        "per channel and row": rng.standard_normal((c, shape[2], 1)),
        "per example": rng.standard_normal((shape[0], 1, 1, 1)),
    }
    tiled_somewhere = False
    for layout, x in _layouts(rng, shape, dtype):
        for kind, small in smalls.items():
            small = small.astype(dtype)
            tiled_somewhere |= tiled._plan(x.shape, x.strides, x.itemsize, small.shape) is not None
            for a, b in ((x, small), (small, x)):
                want = ufunc(a, b)
                got = tiled_binary(ufunc, a, b)
                assert got.shape == want.shape and got.dtype == want.dtype, (layout, kind)
                np.testing.assert_array_equal(got, want, err_msg=f"{layout}, {kind}")
    assert tiled_somewhere == (shape[0] * shape[2] * shape[3] >= 2048)  # (the loops of the small shapes are few)


def test_tiling_is_taken_where_loops_are_short():
    # a bias over NHWC memory viewed as NCHW (loops of 8 channels) is tiled; C-ordered NCHW (loops of
    # 36 pixels), a small array and a bias that varies outside the run are not
    mem = np.zeros((64, 6, 6, 8), np.float32)
    nhwc = mem.transpose(0, 3, 1, 2)
    assert tiled._plan(nhwc.shape, nhwc.strides, 4, (8, 1, 1)) is not None
    nchw = np.ascontiguousarray(nhwc)
    assert tiled._plan(nchw.shape, nchw.strides, 4, (8, 1, 1)) is None
    small = nhwc[:2]
    assert tiled._plan(small.shape, small.strides, 4, (8, 1, 1)) is None
    assert tiled._plan(nhwc.shape, nhwc.strides, 4, (64, 1, 1, 1)) is None


def test_jit_adds_a_convolutions_bias_with_eagers_bits():
    rng = np.random.default_rng(1)
    x = enp.asarray(rng.standard_normal((64, 1, 8, 8)).astype(np.float32))
    k = enp.asarray(rng.standard_normal((8, 1, 3, 3)).astype(np.float32))
    bias = enp.asarray(rng.standard_normal(8).astype(np.float32))

    def f(x, k, bias):
        out = lax.conv_general_dilated(x, k, (1, 1), "VALID") + bias[:, None, None]
        return enp.maximum(out, 0.0) * bias[:, None, None]

    jitted = ember.jit(f)
    assert "_tiled(" in jitted.lower(x, k, bias).source
    np.testing.assert_array_equal(np.asarray(jitted(x, k, bias)), np.asarray(f(x, k, bias)))
