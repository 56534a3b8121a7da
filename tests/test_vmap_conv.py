"""vmap through convolutions and pooling, each against a Python loop over the examples.

Convolutions are test_conv's randomized cases (1 to 3 spatial dimensions, feature or batch
groups, strides, dilations, explicit/SAME/VALID padding, shuffled layouts), run with the inputs
batched only, the kernels batched only (per-example kernels, as in ensembles) and both, the batch
axis at a random position of each. Pooling (reduce_window max/min/sum) and the selections its
gradient uses run the same way, and vmap(grad(conv, then max-pool, then a loss)) gives per-example
gradients of a small CNN. No primitive here may fall back to vmap's Python loop: the loop rule
raises in this file.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_conv import conv_case, window_case
from vmap_check import no_loop_fallback, vmap_matches_loop  # noqa: F401 - an autouse fixture

import ember
import ember.numpy as enp
from ember import lax
from ember.core.primitives import conv as cv
from ember.lax._conv import _select_and_gather_add, _select_and_scatter_add

B = 3
CONV_PRIMITIVES = (cv.conv_general_dilated_p, cv.reduce_window_sum_p, cv.reduce_window_max_p, cv.reduce_window_min_p,
                   cv.select_and_scatter_add_p, cv.select_and_gather_add_p)  # fmt: skip


@pytest.fixture(autouse=True)
def _x64():
    with ember.config.x64(True):
        yield


def test_every_conv_primitive_has_a_batching_rule():
    assert all(p.batch is not None for p in CONV_PRIMITIVES)


# --- convolution ---------------------------------------------------------------------------------------

MAPPED = {"lhs": (True, False), "rhs": (False, True), "both": (True, True)}


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("mapped", list(MAPPED))
def test_random_conv_under_vmap_matches_a_loop(seed, mapped):
    lhs_shape, rhs_shape, strides, padding, kwargs = conv_case(seed)
    rng = np.random.default_rng([4000 + seed, len(mapped)])
    # the batch axis anywhere in each mapped operand
    in_axes = [int(rng.integers(0, len(shape) + 1)) if m else None for m, shape in zip(MAPPED[mapped], (lhs_shape, rhs_shape))]

    def conv(lhs, rhs):
        return lax.conv_general_dilated(lhs, rhs, strides, padding, **kwargs)

    ints = [(rng.integers(-4, 5, size=lhs_shape).astype(np.int32), rng.integers(-4, 5, size=rhs_shape).astype(np.int32))
            for _ in range(B)]  # fmt: skip
    vmap_matches_loop(conv, ints, in_axes, exact=True)
    floats = [(rng.standard_normal(lhs_shape), rng.standard_normal(rhs_shape)) for _ in range(B)]
    vmap_matches_loop(conv, floats, in_axes)


def test_conv_cases_under_vmap_cover_the_groups():
    cases = [conv_case(seed)[4] for seed in range(60)]
    assert any(c["feature_group_count"] > 1 for c in cases) and any(c["batch_group_count"] > 1 for c in cases)


@pytest.mark.parametrize("mapped", list(MAPPED))
def test_per_example_kernels_of_an_ensemble(mapped):
    # An ensemble of B NHWC conv layers with grouped (depthwise-style) kernels, the batch axis last.
    rng = np.random.default_rng(17)
    x = [rng.standard_normal((2, 6, 5, 4)) for _ in range(B)]
    w = [rng.standard_normal((3, 3, 2, 6)) for _ in range(B)]

    def layer(x, w):
        return lax.conv_general_dilated(x, w, (2, 1), "SAME", rhs_dilation=(1, 2), feature_group_count=2,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))  # fmt: skip

    in_axes = [-1 if m else None for m in MAPPED[mapped]]
    vmap_matches_loop(layer, list(zip(x, w)), [a % 4 if a is not None else None for a in in_axes])


def test_conv_with_a_wider_preferred_element_type_under_vmap():
    rng = np.random.default_rng(5)
    examples = [(rng.integers(-3, 4, (2, 3, 5)).astype(np.int8), rng.integers(-3, 4, (4, 3, 2)).astype(np.int8))
                for _ in range(B)]  # fmt: skip

    def conv(lhs, rhs):
        return lax.conv_general_dilated(lhs, rhs, (1,), "VALID", preferred_element_type=np.int32)

    for in_axes in ((0, None), (None, 1), (2, 0)):
        vmap_matches_loop(conv, examples, in_axes, exact=True)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
@pytest.mark.parametrize("groups", [{}, {"feature_group_count": 2}, {"batch_group_count": 2}])
def test_conv_over_no_examples(in_axes, groups):
    lhs, rhs = np.ones((2, 4, 5)), np.ones((4, 4 // groups.get("feature_group_count", 1), 3))

    def conv(lhs, rhs):
        return lax.conv_general_dilated(lhs, rhs, (1,), "VALID", **groups)

    empty = [np.ones((0, *x.shape)) if ax is not None else x for x, ax in zip((lhs, rhs), in_axes)]
    out = ember.vmap(conv, in_axes=in_axes)(*empty)
    per_example = conv(lhs, rhs)
    assert out.shape == (0, *per_example.shape) and out.dtype == per_example.dtype


# --- pooling and the selections its gradient uses ------------------------------------------------------


def _distinct(rng, shape):
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n // 2) * 0.5 + 0.25).reshape(shape)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("computation", ["add", "max", "min"])
def test_random_reduce_window_under_vmap_matches_a_loop(seed, computation):
    shape, window, strides, padding, base, wdil = window_case(seed)
    rng = np.random.default_rng(5000 + seed)
    axis = int(rng.integers(0, len(shape) + 1))
    init = {"add": 0.0, "max": -np.inf, "min": np.inf}[computation]

    def pool(x):
        return lax.reduce_window(x, init, computation, window, strides, padding, base, wdil)

    vmap_matches_loop(pool, [(rng.integers(-50, 50, size=shape).astype(np.float64),) for _ in range(B)], [axis], exact=True)


def test_max_pool_of_nchw_images_under_vmap():
    rng = np.random.default_rng(3)
    images = [(rng.standard_normal((2, 3, 6, 6)),) for _ in range(B)]

    def max_pool(x):
        return lax.reduce_window(x, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    for axis in (0, 2, 4):
        vmap_matches_loop(max_pool, images, [axis], exact=True)
    got = ember.vmap(max_pool)(np.stack([i[0] for i in images]))
    want = np.stack([i[0] for i in images]).reshape(B, 2, 3, 3, 2, 3, 2).max(axis=(4, 6))
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("select_prim", ["ge", "le"])
@pytest.mark.parametrize("mapped", list(MAPPED))
def test_random_selections_under_vmap_match_a_loop(seed, select_prim, mapped):
    shape, window, strides, padding, base, wdil = window_case(seed, base_dilation=False)
    n = len(shape)
    params = (select_prim, window, strides, padding, base, wdil)
    rng = np.random.default_rng([6000 + seed, len(mapped)])
    out_shape = lax.reduce_window(np.zeros(shape), 0.0, lax.add, window, strides, padding, base, wdil).shape
    # the first operand is the source (scatter) or the tangents (gather); the choice is made on `operand`
    operand_mapped, first_mapped = MAPPED[mapped]
    in_axes = [int(rng.integers(0, n + 1)) if m else None for m in (first_mapped, operand_mapped)]
    for op, first_shape in ((_select_and_scatter_add, out_shape), (_select_and_gather_add, shape)):
        examples = [(rng.standard_normal(first_shape), rng.integers(0, 3, size=shape).astype(np.float64)) for _ in range(B)]
        vmap_matches_loop(lambda first, operand, op=op: op(first, operand, *params), examples, in_axes)


# --- per-example gradients of a small CNN --------------------------------------------------------------


def _cnn_loss(params, x, y):
    # conv (NHWC, SAME), ReLU, 2x2 max-pool, conv with feature groups, mean-pool, linear read-out
    w1, w2, head = params
    h = lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = lax.reduce_window(enp.maximum(h, 0.0), -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")
    h = lax.conv_general_dilated(h, w2, (1, 1), "VALID", feature_group_count=2, dimension_numbers=("NHWC", "HWIO", "NHWC"))
    h = lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "VALID") / 4.0
    logits = enp.sum(h, axis=(1, 2)) @ head
    return enp.sum((logits - y) ** 2)


@pytest.mark.parametrize("seed", range(4))
def test_per_example_gradients_of_a_small_cnn(seed):
    rng = np.random.default_rng(9000 + seed)
    params = (rng.standard_normal((3, 3, 2, 4)), rng.standard_normal((2, 2, 2, 6)), rng.standard_normal((6, 3)))
    xs = _distinct(rng, (B, 1, 7, 6, 2))  # one image per example: a batch of 1 inside the loss
    ys = rng.standard_normal((B, 1, 3))
    per_example = ember.vmap(ember.grad(_cnn_loss), in_axes=(None, 0, 0))(params, xs, ys)
    for b in range(B):
        want = ember.grad(_cnn_loss)(params, xs[b], ys[b])
        for g, w in zip(per_example, want):
            np.testing.assert_allclose(np.asarray(g)[b], np.asarray(w), rtol=1e-10, atol=1e-10)
    # the per-example gradients add up to the gradient of the summed loss over the whole batch
    total = ember.grad(lambda p: sum(_cnn_loss(p, xs[b], ys[b]) for b in range(B)))(params)
    for g, t in zip(per_example, total):
        np.testing.assert_allclose(np.asarray(g).sum(axis=0), np.asarray(t), rtol=1e-10, atol=1e-10)


def test_ensemble_gradients_with_per_example_kernels():
    # vmap over the parameters and the data together: B models, each with its own kernels and image
    rng = np.random.default_rng(21)
    params = [(rng.standard_normal((3, 3, 2, 4)), rng.standard_normal((2, 2, 2, 6)), rng.standard_normal((6, 3)))
              for _ in range(B)]  # fmt: skip
    xs, ys = _distinct(rng, (B, 2, 6, 6, 2)), rng.standard_normal((B, 2, 3))
    stacked = tuple(np.stack([p[k] for p in params]) for k in range(3))
    got = ember.vmap(ember.value_and_grad(_cnn_loss))(stacked, xs, ys)
    for b in range(B):
        value, grads = ember.value_and_grad(_cnn_loss)(params[b], xs[b], ys[b])
        np.testing.assert_allclose(np.asarray(got[0])[b], np.asarray(value), rtol=1e-10, atol=1e-10)
        for g, w in zip(got[1], grads):
            np.testing.assert_allclose(np.asarray(g)[b], np.asarray(w), rtol=1e-10, atol=1e-10)


def test_grad_of_vmapped_conv_and_pool():
    # grad of a vmapped function: the batched primitives' jvps and transposes
    rng = np.random.default_rng(31)
    x, w = _distinct(rng, (B, 1, 2, 6, 5)), rng.standard_normal((B, 3, 2, 3, 2))

    def per_example(x, w):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME")
        return enp.sum(lax.reduce_window(y, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "SAME") ** 2)

    got = ember.grad(lambda x, w: enp.sum(ember.vmap(per_example)(x, w)), argnums=(0, 1))(x, w)
    for b in range(B):
        want = ember.grad(per_example, argnums=(0, 1))(x[b], w[b])
        for g, wa in zip(got, want):
            np.testing.assert_allclose(np.asarray(g)[b], np.asarray(wa), rtol=1e-10, atol=1e-10)
