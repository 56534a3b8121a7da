"""A convolution and its weight gradients sharing one im2col matrix in jit's generated code
(ember/backends/shared_patches.py): the gradients of networks where the forward convolution keeps its
matrix and the weight gradient multiplies it (per example under vmap, and over a batch) have eager
mode's bits, on several geometries, layouts and dtypes; convolutions that only look alike (another
padding, another kernel on the same input, a gradient its own way would compute otherwise) are left
to their own ways."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax

RNG = np.random.default_rng(0)

# (input (N, C, spatial...), kernel (O, C, window...), strides, padding, rhs dilation, dimension numbers,
# whether by_window takes the per-example weight gradient (the only per-example way that shares))
GEOMETRIES = [
    ((6, 8, 6, 6), (16, 8, 3, 3), (1, 1), "VALID", (1, 1), ("NCHW", "OIHW", "NCHW"), True),
    ((5, 4, 9, 7), (6, 4, 3, 2), (1, 1), "SAME", (1, 1), ("NCHW", "OIHW", "NCHW"), True),
    ((4, 3, 9, 9), (5, 3, 3, 3), (2, 2), "VALID", (1, 1), ("NCHW", "OIHW", "NCHW"), True),
    ((4, 3, 9, 10), (5, 3, 2, 3), (1, 1), ((1, 0), (2, 1)), (2, 1), ("NCHW", "OIHW", "NCHW"), False),
    ((3, 6, 6, 5), (4, 6, 3, 3), (1, 1), "VALID", (1, 1), ("NHWC", "HWIO", "NHWC"), True),
    ((4, 5, 12), (7, 5, 4), (1,), "VALID", (1,), ("NCH", "OIH", "NCH"), True),
]


def _conv_loss(strides, padding, rhs_dilation, dimension_numbers):
    def conv(x, k):
        return lax.conv_general_dilated(x, k, strides, padding, rhs_dilation=rhs_dilation,
                                        dimension_numbers=dimension_numbers)  # fmt: skip

    def loss(k, x, w):  # a nonlinearity and a weighted sum after the convolution: a cotangent of every value
        return enp.sum(enp.tanh(conv(x, k)) * w)

    return conv, loss


def _operands(shape, kernel_shape, dimension_numbers, conv, dtype):
    lhs_spec, rhs_spec, _ = dimension_numbers
    n = len(shape) - 2
    letters = "NC" + "HWD"[:n]
    x = RNG.standard_normal(shape).transpose([letters.index(c) for c in lhs_spec]).astype(dtype)
    k_letters = "OI" + "HWD"[:n]
    k = (RNG.standard_normal(kernel_shape) / 3).transpose([k_letters.index(c) for c in rhs_spec]).astype(dtype)
    w = RNG.standard_normal(np.asarray(conv(enp.asarray(x[:1]), enp.asarray(k))).shape[1:]).astype(dtype)
    return enp.asarray(k), enp.asarray(x), enp.asarray(w)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=range(len(GEOMETRIES)))
def test_per_example_weight_gradients_from_the_forward_matrix_have_eager_bits(geometry, dtype):
    shape, kernel_shape, strides, padding, rhs_dilation, dn, shared = geometry
    conv, loss = _conv_loss(strides, padding, rhs_dilation, dn)
    k, x, w = _operands(shape, kernel_shape, dn, conv, dtype)
    per_example = ember.vmap(ember.grad(lambda k, x, w: loss(k, x[None], w[None])), in_axes=(None, 0, None))
    jitted = ember.jit(per_example)
    source = jitted.lower(k, x, w).source
    _same_bits(jitted(k, x, w), per_example(k, x, w))
    assert ("conv_keeping_patches" in source) == ("conv_from_patches" in source) == shared


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=range(len(GEOMETRIES)))
def test_batch_weight_gradients_from_the_forward_matrix_have_eager_bits(geometry, dtype):
    shape, kernel_shape, strides, padding, rhs_dilation, dn, _ = geometry
    conv, loss = _conv_loss(strides, padding, rhs_dilation, dn)
    k, x, w = _operands(shape, kernel_shape, dn, conv, dtype)
    batch = ember.grad(loss)
    jitted = ember.jit(batch)
    source = jitted.lower(k, x, w).source
    _same_bits(jitted(k, x, w), batch(k, x, w))
    assert "conv_keeping_patches" in source and "conv_from_patches" in source  # features_first's product


def test_a_gradient_shared_with_a_forward_pass_matches_a_loop_of_grad():
    # per-example gradients of two convolution layers, each example's gradient alone (a reference that
    # takes neither shared matrices nor vmap's grouped convolutions)
    k1 = enp.asarray(RNG.standard_normal((8, 3, 3, 3)).astype(np.float32) / 3)
    k2 = enp.asarray(RNG.standard_normal((16, 8, 3, 3)).astype(np.float32) / 5)
    xs = enp.asarray(RNG.standard_normal((7, 3, 8, 8)).astype(np.float32))

    def loss(params, x):
        h = enp.maximum(lax.conv_general_dilated(x[None], params[0], (1, 1), "VALID"), 0.0)
        return enp.sum(enp.tanh(lax.conv_general_dilated(h, params[1], (1, 1), "VALID")))

    jitted = ember.jit(ember.vmap(ember.grad(loss), in_axes=(None, 0)))
    assert "conv_from_patches" in jitted.lower([k1, k2], xs).source
    got = jitted([k1, k2], xs)
    for i in range(xs.shape[0]):
        want = ember.grad(loss)([k1, k2], xs[i])
        for g, ww in zip(got, want):
            np.testing.assert_allclose(np.asarray(g)[i], np.asarray(ww), rtol=2e-5, atol=2e-6)


def test_convolutions_that_only_look_alike_keep_their_own_ways():
    x = enp.asarray(RNG.standard_normal((6, 8, 6, 6)).astype(np.float32))
    k1 = enp.asarray(RNG.standard_normal((16, 8, 3, 3)).astype(np.float32))
    k2 = enp.asarray(RNG.standard_normal((4, 8, 3, 3)).astype(np.float32))
    ct = enp.asarray(RNG.standard_normal((16, 6, 4, 4)).astype(np.float32))
    swapped = ("CNHW", "OIHW", "CNHW")  # a batch weight gradient's dimension numbers

    def two_forward(x, k1, k2):  # two kernels on one input: neither is the other's weight gradient
        return conv(x, k1, "VALID"), conv(x, k2, "VALID")

    def other_padding(x, k1, ct):  # a weight gradient's shape, but of the input padded otherwise
        return conv(x, k1, "VALID"), conv(x, ct, ((1, 0), (1, 0)), swapped)

    def weight_gradient(x, k1, ct):
        return conv(x, k1, "VALID"), conv(x, ct, "VALID", swapped)

    def conv(x, k, padding, dn=("NCHW", "OIHW", "NCHW")):
        return lax.conv_general_dilated(x, k, (1, 1), padding, dimension_numbers=dn)

    for fn, args, shared in ((two_forward, (x, k1, k2), False), (other_padding, (x, k1, ct), False),
                             (weight_gradient, (x, k1, ct), True)):  # fmt: skip
        jitted = ember.jit(fn)
        assert ("conv_from_patches" in jitted.lower(*args).source) == shared, fn.__name__
        for got, want in zip(jitted(*args), fn(*args)):
            _same_bits(got, want)
