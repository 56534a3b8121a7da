"""Indexing with nothing to index: empty index arrays, empty updates, empty operands and empty vmap
batches, for x[idx], the x.at[idx] updates, lax.gather / lax.scatter* and the dynamic slices, under
grad, jvp, vmap and jit (and their compositions).

The references are NumPy: the result of x.at[idx].op(u) for empty idx is x itself, so the gradient
of sum(w * out) is w for x and an empty array for u; updates that land in an empty operand are all
dropped (JAX's semantics, the clip mode included), so their gradient is zeros of u's shape. Every
result is also checked for its shape and dtype, which is most of what an empty array has.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.numpy as enp
from ember import lax

GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers
SCALAR_DN = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
METHODS = ["add", "set", "multiply", "min", "max"]
RNG = np.random.default_rng(11)


def _assert_array(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (actual, expected)
    np.testing.assert_array_equal(actual, expected)


def _transforms(f):
    """f eagerly and under jit."""
    return {"eager": f, "jit": ember.jit(f)}


def _update(method, x, idx, u, **kw):
    return getattr(enp.asarray(x).at[idx], method)(u, **kw)


# --- x.at[idx].op(u) with empty indices (and empty updates) ----------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shape, index_shape, update_shape", [
    ((4,), (0,), (0,)),  # the operand is untouched
    ((0,), (0,), (0,)),  # everything empty
    ((0, 3), (0,), (0, 3)),  # rows of an empty matrix
    ((4, 0), (0,), (0, 0)),
    ((3, 4), (0,), (0, 4)),
    ((3, 4), (2, 0), (2, 0, 4)),
])  # fmt: skip
def test_grad_of_update_with_no_index(method, shape, index_shape, update_shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    u = RNG.standard_normal(update_shape).astype(np.float32)
    w = RNG.standard_normal(shape).astype(np.float32)
    idx = np.zeros(index_shape, np.int32)

    def loss(x, u):
        return enp.sum(enp.asarray(w) * _update(method, x, idx, u))

    grad = ember.grad(loss, argnums=(0, 1))
    for g in (grad, ember.jit(grad), ember.grad(ember.jit(loss), argnums=(0, 1))):
        gx, gu = g(x, u)
        _assert_array(gx, w)  # out is x: d sum(w * x) / dx = w
        _assert_array(gu, np.zeros(update_shape, np.float32))
    for f in _transforms(lambda x, u: _update(method, x, idx, u)).values():
        _assert_array(f(x, u), x)
    # jvp: the tangent of out is x's tangent
    tx, tu = RNG.standard_normal(shape).astype(np.float32), RNG.standard_normal(update_shape).astype(np.float32)
    out, t_out = ember.jvp(lambda x, u: _update(method, x, idx, u), (x, u), (tx, tu))
    _assert_array(out, x)
    _assert_array(t_out, tx)


@pytest.mark.parametrize("prim", ["scatter_add", "scatter", "scatter_mul", "scatter_min", "scatter_max"])
@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_updates_into_an_empty_operand_are_dropped(prim, mode):
    # Two updates aimed at an array with no elements: every mode drops them (JAX: clip clamps to an
    # index that does not exist either), so the result is empty and the updates' gradient is 0.
    # (enp's x.at[idx] refuses a nonempty index into an empty axis before it gets here.)
    scatter = getattr(lax, prim)
    x, u, idx = np.zeros((0,), np.float32), np.array([1.5, -2.0], np.float32), np.array([[0], [3]], np.int32)
    for f in _transforms(lambda x, u: scatter(x, idx, u, SCALAR_DN, mode=mode)).values():
        _assert_array(f(x, u), x)
    grad = ember.grad(lambda x, u: enp.sum(scatter(x, idx, u, SCALAR_DN, mode=mode)), argnums=(0, 1))
    for g in (grad, ember.jit(grad)):
        gx, gu = g(x, u)
        _assert_array(gx, np.zeros((0,), np.float32))
        _assert_array(gu, np.zeros((2,), np.float32))


def test_the_reported_scatter_add_gradients():
    idx = enp.zeros((0,), dtype=int)
    g = ember.grad(lambda x: enp.zeros(4).at[idx].add(x).sum())
    _assert_array(g(enp.zeros((0,))), np.zeros((0,), np.float32))
    _assert_array(ember.jit(g)(enp.zeros((0,))), np.zeros((0,), np.float32))
    g = ember.grad(lambda x, u: x.at[idx].add(u).sum(), argnums=(0, 1))
    for gx, gu in (g(enp.zeros((0,)), enp.zeros((0,))), ember.jit(g)(enp.zeros((0,)), enp.zeros((0,)))):
        _assert_array(gx, np.zeros((0,), np.float32))
        _assert_array(gu, np.zeros((0,), np.float32))


# --- x[idx] with empty indices -------------------------------------------------------------------------


@pytest.mark.parametrize("shape, index", [
    ((0,), np.zeros((0,), np.int32)),
    ((4,), np.zeros((0,), np.int32)),
    ((0, 3), np.zeros((0,), np.int32)),
    ((3, 0), (slice(None), np.zeros((0,), np.int32))),
    ((3, 4), (np.zeros((2, 0), np.int32), slice(None))),
])  # fmt: skip
def test_grad_of_getitem_with_no_index(shape, index):
    x = RNG.standard_normal(shape).astype(np.float32)
    expected = x[index]
    w = RNG.standard_normal(expected.shape).astype(np.float32)
    for f in _transforms(lambda x: x[index]).values():
        _assert_array(f(x), expected)
    grad = ember.grad(lambda x: enp.sum(enp.asarray(w) * x[index]))
    for g in (grad, ember.jit(grad)):
        _assert_array(g(x), np.zeros(shape, np.float32))  # nothing is read


# --- lax.gather / lax.scatter* directly --------------------------------------------------------------------


@pytest.mark.parametrize("prim", ["scatter_add", "scatter", "scatter_mul", "scatter_min", "scatter_max"])
@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_lax_scatter_grad_with_an_empty_operand(prim, mode):
    scatter = getattr(lax, prim)
    x, w = np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    for n in (0, 2):  # no update, and two that land nowhere
        idx, u = np.zeros((n, 1), np.int32), RNG.standard_normal((n, 3)).astype(np.float32)

        def loss(x, u, idx=idx):
            return enp.sum(enp.asarray(w) * scatter(x, idx, u, dn, mode=mode))

        grad = ember.grad(loss, argnums=(0, 1))
        for g in (grad, ember.jit(grad)):
            gx, gu = g(x, u)
            _assert_array(gx, np.zeros((0, 3), np.float32))
            _assert_array(gu, np.zeros((n, 3), np.float32))


def test_lax_gather_with_no_index_vectors():
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    idx = np.zeros((0, 1), np.int32)
    for f in _transforms(lambda x: lax.gather(x, idx, dn, (1, 3))).values():
        _assert_array(f(x), np.zeros((0, 3), np.float32))
    grad = ember.grad(lambda x: enp.sum(lax.gather(x, idx, dn, (1, 3))))
    for g in (grad, ember.jit(grad)):
        _assert_array(g(x), np.zeros((4, 3), np.float32))


# --- vmap: empty batches and empty indices per example ---------------------------------------------------


def _per_example(method):
    return lambda x, i, u: _update(method, x, i, u)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("batch", [0, 3])
def test_vmap_of_updates_and_their_grads(method, batch):
    # batch 0: an empty batch of examples with two indices each; batch 3: examples with no index
    n = 2 if batch == 0 else 0
    x = RNG.standard_normal((batch, 5)).astype(np.float32)
    idx = np.tile(np.array([1, 3], np.int32)[:n], (batch, 1))
    u = RNG.standard_normal((batch, n)).astype(np.float32)
    f = ember.vmap(_per_example(method))
    for h in (f, ember.jit(f)):
        _assert_array(h(x, idx, u), x)  # no example, or no index in any example
    grad = ember.vmap(ember.grad(lambda x, i, u: enp.sum(_per_example(method)(x, i, u)), argnums=(0, 2)))
    for g in (grad, ember.jit(grad)):
        gx, gu = g(x, idx, u)
        _assert_array(gx, np.ones((batch, 5), np.float32))
        _assert_array(gu, np.zeros((batch, n), np.float32))


@pytest.mark.parametrize("batch, n", [(0, 2), (3, 0), (0, 0)])
def test_vmap_of_getitem_and_its_grad(batch, n):
    x = RNG.standard_normal((batch, 4)).astype(np.float32)
    idx = np.zeros((batch, n), np.int32)
    expected = np.take_along_axis(x, idx, axis=1)
    for f in (ember.vmap(lambda x, i: x[i]), ember.jit(ember.vmap(lambda x, i: x[i]))):
        _assert_array(f(x, idx), expected)
    grad = ember.vmap(ember.grad(lambda x, i: enp.sum(x[i])))
    for g in (grad, ember.jit(grad)):
        _assert_array(g(x, idx), np.zeros((batch, 4), np.float32))


def test_vmap_over_an_empty_batch_of_lax_gathers_with_batching_dims():
    # Operand and indices both batched: the batch becomes a batching dimension of size 0.
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    x, idx = np.zeros((0, 4, 3), np.float32), np.zeros((0, 2, 1), np.int32)
    f = ember.vmap(lambda x, i: lax.gather(x, i, dn, (1, 3)))
    for h in (f, ember.jit(f)):
        _assert_array(h(x, idx), np.zeros((0, 2, 3), np.float32))


def test_vmap_over_an_empty_batch_of_dynamic_slices():
    x, starts = np.zeros((0, 5), np.float32), np.zeros((0,), np.int32)
    f = ember.vmap(lambda x, s: lax.dynamic_slice(x, (s,), (2,)))
    for h in (f, ember.jit(f)):
        _assert_array(h(x, starts), np.zeros((0, 2), np.float32))
    grad = ember.vmap(ember.grad(lambda x, s: enp.sum(lax.dynamic_slice(x, (s,), (2,)))))
    for g in (grad, ember.jit(grad)):
        _assert_array(g(x, starts), np.zeros((0, 5), np.float32))
    f = ember.vmap(lambda x, s: lax.dynamic_update_slice(x, enp.ones(2), (s,)))
    for h in (f, ember.jit(f)):
        _assert_array(h(x, starts), x)
