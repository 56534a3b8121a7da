"""Randomized gradients of convolutions and max/min pooling.

Convolution cases (1 to 3 spatial dimensions, feature or batch groups, strides, input and
kernel dilation, SAME/VALID/explicit padding, shuffled layouts) come from test_conv's
`conv_case`; pooling cases from its `window_case`. Gradients are checked in float64 against
hand-written NumPy loops (the backward pass of conv_reference's loops, and "the ct of a window
goes to its first extreme"), and jvps and Hessian-vector products against central finite
differences. Pooled values are drawn distinct, so that no window holds a tie (where the
derivative is undefined) and no finite-difference step changes a window's choice.
"""

from __future__ import annotations

import numpy as np
import pytest
from conv_reference import _padding, _permutations, _window_elements, _window_setup, dilate
from op_db_conv import select_and_gather_add_ref
from test_conv import conv_case, window_case

import ember
import ember.numpy as enp
from ember import lax
from ember.core.primitives import conv as cv
from ember.lax._conv import _select_and_gather_add, _select_and_scatter_add

STEP = 1e-4


@pytest.fixture(autouse=True)
def _x64():
    with ember.config.x64(True):
        yield


def _central_difference(fn, primals, tangents):
    """d/dh fn(primals + h tangents) at h = 0 (4-point central difference, float64)."""

    def at(h):
        return np.asarray(fn(*[p + h * t for p, t in zip(primals, tangents)]), dtype=np.float64)

    return (-at(2 * STEP) + 8 * at(STEP) - 8 * at(-STEP) + at(-2 * STEP)) / (12 * STEP)


# --- convolution -------------------------------------------------------------------------------


def conv_vjp_ref(lhs, rhs, ct, window_strides, padding, lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                 feature_group_count=1, batch_group_count=1):  # fmt: skip
    """The backward pass of conv_reference.conv_ref's loops: every product lhs[..] * rhs[..] that
    lands in out[..] sends ct[out] * rhs[..] to lhs and ct[out] * lhs[..] to rhs."""
    lhs_perm, rhs_perm, out_perm = _permutations(dimension_numbers, lhs.ndim)
    x, w, g = np.transpose(lhs, lhs_perm), np.transpose(rhs, rhs_perm), np.transpose(ct, out_perm)
    n = x.ndim - 2
    ld, rd = lhs_dilation or (1,) * n, rhs_dilation or (1,) * n
    sizes, window = x.shape[2:], w.shape[2:]
    pads = _padding(padding, sizes, [dilate(k, r) for k, r in zip(window, rd)], window_strides)
    out_batch, out_features, in_features = g.shape[0], w.shape[0], w.shape[1]
    gx, gw = np.zeros_like(x), np.zeros_like(w)
    for nb in range(out_batch):
        for o in range(out_features):
            group = o // (out_features // feature_group_count)
            b = (o // (out_features // batch_group_count)) * out_batch + nb
            channels = slice(group * in_features, (group + 1) * in_features)
            for pos in np.ndindex(*g.shape[2:]):
                c = g[(nb, o, *pos)]
                for k in np.ndindex(*window):
                    index = []
                    for i in range(n):
                        p = pos[i] * window_strides[i] + k[i] * rd[i] - pads[i][0]
                        if p < 0 or p % ld[i] or p // ld[i] >= sizes[i]:
                            break
                        index.append(p // ld[i])
                    else:
                        gx[(b, channels, *index)] += c * w[(o, slice(None), *k)]
                        gw[(o, slice(None), *k)] += c * x[(b, channels, *index)]
    return np.transpose(gx, np.argsort(lhs_perm)), np.transpose(gw, np.argsort(rhs_perm))


def _conv_operands(seed):
    lhs_shape, rhs_shape, strides, padding, kwargs = conv_case(seed)
    rng = np.random.default_rng(5000 + seed)
    lhs, rhs = rng.standard_normal(lhs_shape), rng.standard_normal(rhs_shape)

    def conv(l, r):
        return lax.conv_general_dilated(l, r, strides, padding, **kwargs)

    return rng, lhs, rhs, conv, (strides, padding, kwargs)


@pytest.mark.parametrize("seed", range(80))
def test_conv_vjp_matches_the_loop_backward_pass(seed):
    rng, lhs, rhs, conv, (strides, padding, kwargs) = _conv_operands(seed)
    out, f_vjp = ember.vjp(conv, lhs, rhs)
    ct = rng.standard_normal(out.shape)
    got_lhs, got_rhs = f_vjp(ct)
    want_lhs, want_rhs = conv_vjp_ref(lhs, rhs, ct, strides, padding, **kwargs)
    what = str(conv_case(seed))
    assert got_lhs.shape == lhs.shape and got_rhs.shape == rhs.shape, what
    np.testing.assert_allclose(np.asarray(got_lhs), want_lhs, rtol=1e-12, atol=1e-12, err_msg=what)
    np.testing.assert_allclose(np.asarray(got_rhs), want_rhs, rtol=1e-12, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("seed", range(80))
def test_conv_jvp_matches_finite_differences(seed):
    rng, lhs, rhs, conv, _ = _conv_operands(seed)
    tangents = (rng.standard_normal(lhs.shape), rng.standard_normal(rhs.shape))
    out, tangent = ember.jvp(conv, (lhs, rhs), tangents)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(conv(lhs, rhs)))
    want = _central_difference(conv, (lhs, rhs), tangents)
    np.testing.assert_allclose(np.asarray(tangent), want, rtol=1e-8, atol=1e-8, err_msg=str(conv_case(seed)))


@pytest.mark.parametrize("seed", range(0, 80, 4))
def test_conv_hessian_vector_product_matches_finite_differences(seed):
    # A loss quadratic in each operand: its gradient's jvp needs the transposes' own jvps.
    rng, lhs, rhs, conv, _ = _conv_operands(seed)
    weights = rng.standard_normal(np.shape(conv(lhs, rhs)))

    def loss(l, r):
        return enp.sum(weights * conv(l, r) ** 2)

    gradient = ember.grad(loss, argnums=(0, 1))
    tangents = (rng.standard_normal(lhs.shape), rng.standard_normal(rhs.shape))
    _, hvp = ember.jvp(gradient, (lhs, rhs), tangents)
    for k in range(2):
        want = _central_difference(lambda l, r, k=k: gradient(l, r)[k], (lhs, rhs), tangents)
        np.testing.assert_allclose(np.asarray(hvp[k]), want, rtol=1e-7, atol=1e-7, err_msg=f"argument {k}: {conv_case(seed)}")


def test_random_conv_cases_cover_every_feature():
    cases = [conv_case(seed) for seed in range(80)]
    assert {len(c[0]) - 2 for c in cases} == {1, 2, 3}
    assert any(c[4]["feature_group_count"] > 1 for c in cases)
    assert any(c[4]["batch_group_count"] > 1 for c in cases)
    assert any(max(c[4]["lhs_dilation"]) > 1 for c in cases)
    assert any(max(c[4]["rhs_dilation"]) > 1 for c in cases)
    assert any(max(c[2]) > 1 for c in cases)
    assert any(not isinstance(c[3], str) and min(min(p) for p in c[3]) < 0 for c in cases)
    assert {c[3] for c in cases if isinstance(c[3], str)} == {"VALID", "SAME", "SAME_LOWER"}


def test_conv_gradient_with_a_wider_preferred_element_type():
    # float32 operands accumulating in float64: the cotangent comes back in the operands' dtype.
    rng = np.random.default_rng(0)
    lhs, rhs = rng.standard_normal((2, 3, 5, 4)).astype(np.float32), rng.standard_normal((4, 3, 2, 2)).astype(np.float32)

    def f(l, r):
        return lax.conv_general_dilated(l, r, (1, 1), "SAME", preferred_element_type=np.float64)

    out, f_vjp = ember.vjp(f, lhs, rhs)
    assert out.dtype == np.float64
    ct = rng.standard_normal(out.shape)
    got_lhs, got_rhs = f_vjp(ct)
    assert got_lhs.dtype == np.float32 and got_rhs.dtype == np.float32
    want_lhs, want_rhs = conv_vjp_ref(lhs.astype(np.float64), rhs.astype(np.float64), ct, (1, 1), "SAME")
    np.testing.assert_allclose(np.asarray(got_lhs), want_lhs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got_rhs), want_rhs, rtol=1e-5, atol=1e-5)


def test_conv_gradient_of_an_empty_batch_is_zero():
    lhs, rhs = np.zeros((0, 2, 4, 4)), np.ones((3, 2, 3, 3))
    grads = ember.grad(lambda l, r: enp.sum(lax.conv(l, r, (1, 1), "VALID")), argnums=(0, 1))(lhs, rhs)
    assert grads[0].shape == lhs.shape and grads[1].shape == rhs.shape
    assert not np.asarray(grads[1]).any()


# --- max / min pooling --------------------------------------------------------------------------


def _distinct(rng, shape):
    """Distinct values 1/2 apart and never 0 (the non-identity init value used below)."""
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n // 2) * 0.5 + 0.25).reshape(shape)


def pool_vjp_ref(x, ct, init, kind, window, strides, padding, base, wdil):
    """Each window's ct goes to the window's extreme element; nowhere when the extreme is the init
    value (padding, base-dilation holes, and the init value that joins every window)."""
    pads, base, wdil, out_shape = _window_setup(x, window, strides, padding, base, wdil)
    pick = np.argmax if kind == "max" else np.argmin
    grad = np.zeros_like(x)
    for pos in np.ndindex(*out_shape):
        indices = [i for i in _window_elements(x.shape, pos, window, strides, pads, base, wdil) if i is not None]
        values = [x[i] for i in indices] + [init]
        best = int(pick(values))
        if best < len(indices):
            grad[indices[best]] += ct[pos]
    return grad


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("init", ["identity", 0.0])
def test_pooling_vjp_matches_the_loop_reference(seed, kind, init):
    shape, window, strides, padding, base, wdil = window_case(seed)
    rng = np.random.default_rng(6000 + seed)
    x = _distinct(rng, shape)
    init_value = (-np.inf if kind == "max" else np.inf) if init == "identity" else init
    computation = lax.max if kind == "max" else lax.min

    def pool(v):
        return lax.reduce_window(v, init_value, computation, window, strides, padding, base, wdil)

    out, f_vjp = ember.vjp(pool, x)
    ct = rng.standard_normal(out.shape)
    (got,) = f_vjp(ct)
    want = pool_vjp_ref(x, ct, init_value, kind, window, strides, padding, base, wdil)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13, atol=1e-13, err_msg=str(window_case(seed)))
    tangent = rng.standard_normal(shape)
    _, jvp_out = ember.jvp(pool, (x,), (tangent,))
    # A window of padding only reduces to the (infinite) identity: its tangent is 0, which a
    # finite difference of infinities cannot show.
    finite = np.isfinite(np.asarray(out))
    assert not np.asarray(jvp_out)[~finite].any()
    want = _central_difference(pool, (x,), (tangent,))
    np.testing.assert_allclose(np.asarray(jvp_out)[finite], want[finite], rtol=1e-9, atol=1e-9)


def test_max_pool_vjp_scatters_with_select_and_scatter_add(monkeypatch):
    calls = []
    kernel = cv.select_and_scatter_add_p.kernel()
    monkeypatch.setattr(cv.select_and_scatter_add_p, "_kernel", lambda *a, **p: calls.append(p) or kernel(*a, **p))
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    g = ember.grad(lambda v: enp.sum(lax.reduce_window(v, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")))(x)
    assert len(calls) == 1 and calls[0]["select_prim"] == "ge"
    np.testing.assert_array_equal(np.asarray(g)[0, 0], [[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]])


@pytest.mark.parametrize("seed", range(10))
def test_conv_then_max_pool_gradients_match_finite_differences(seed):
    # A small CNN layer: NHWC conv, 2x2 max-pool, squared loss; gradient and Hessian-vector product.
    rng = np.random.default_rng(7000 + seed)
    x, w = rng.standard_normal((2, 6, 5, 2)), rng.standard_normal((3, 3, 2, 3))
    weights = rng.standard_normal((2, 3, 3, 3))

    def loss(x, w):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        pooled = lax.reduce_window(y, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")
        return enp.sum(weights * pooled**2)

    gradient = ember.grad(loss, argnums=(0, 1))
    tangents = (rng.standard_normal(x.shape), rng.standard_normal(w.shape))
    grads = gradient(x, w)
    directional = sum(np.sum(np.asarray(g) * t) for g, t in zip(grads, tangents))
    np.testing.assert_allclose(directional, _central_difference(loss, (x, w), tangents), rtol=1e-7, atol=1e-7)
    _, hvp = ember.jvp(gradient, (x, w), tangents)
    for k in range(2):
        want = _central_difference(lambda a, b, k=k: gradient(a, b)[k], (x, w), tangents)
        np.testing.assert_allclose(np.asarray(hvp[k]), want, rtol=1e-6, atol=1e-6, err_msg=f"argument {k}")


# --- select_and_gather_add: the transpose of select_and_scatter_add ------------------------------------


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("select_prim", ["ge", "le"])
def test_select_and_gather_add_is_the_transpose_of_select_and_scatter_add(seed, select_prim):
    shape, window, strides, padding, base, wdil = window_case(seed)
    rng = np.random.default_rng(8000 + seed)
    x = rng.integers(0, 3, size=shape).astype(np.float64)  # few distinct values: ties pick the first
    out_shape = _window_setup(x, window, strides, padding, base, wdil)[3]
    t, s = rng.standard_normal(shape), rng.standard_normal(out_shape)
    gathered = _select_and_gather_add(t, x, select_prim, window, strides, padding, base, wdil)
    want = select_and_gather_add_ref(t, x, select_prim, window, strides, padding, base, wdil)
    np.testing.assert_allclose(np.asarray(gathered), want, rtol=1e-15, atol=0, err_msg=str(window_case(seed)))
    scattered = _select_and_scatter_add(s, x, select_prim, window, strides, padding, base, wdil)
    np.testing.assert_allclose(np.sum(np.asarray(gathered) * s), np.sum(t * np.asarray(scattered)), rtol=1e-12)


def test_select_and_gather_add_with_nan_operands_and_infinite_tangents():
    x = np.array([1.0, np.nan, 3.0, -np.inf, 2.0, 2.0])
    t = np.array([np.inf, 10.0, -np.inf, 30.0, np.nan, 50.0])
    for select_prim in ("ge", "le"):
        got = _select_and_gather_add(t, x, select_prim, (2,), (1,), [(1, 1)])
        want = select_and_gather_add_ref(t, x, select_prim, (2,), (1,), [(1, 1)])
        np.testing.assert_array_equal(np.asarray(got), want)
