"""Batched outer products split over helper threads (ember/backends/kernels_outer.py), against NumPy's
einsum over the whole batch and its broadcast product: the same bits however the batch is split, into a
buffer or not, in a forked child too."""

from __future__ import annotations

import multiprocessing
import sys

import numpy as np
import pytest

from ember.backends import kernels_outer
from ember.backends.kernels import dot_general
from ember.backends.kernels_outer import outer_products

RNG = np.random.default_rng(0)


def _operands(batch, m, n, dtype):
    a = RNG.standard_normal((batch, m)) * 3
    c = RNG.standard_normal((batch, n)) * 3
    if np.dtype(dtype).kind == "c":
        a, c = a + 1j * RNG.standard_normal(a.shape), c - 2j * RNG.standard_normal(c.shape)
    return a.astype(dtype), c.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int32])
@pytest.mark.parametrize("batch, m, n", [(1, 5, 7), (2, 3, 4), (7, 6, 5), (64, 33, 10)])
@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("into", [False, True])
def test_outer_products_have_the_bits_of_a_broadcast_product(monkeypatch, dtype, batch, m, n, split, into):
    monkeypatch.setattr(kernels_outer, "SPLIT_MIN", 1 if split else 1 << 62)
    a, c = _operands(batch, m, n, dtype)
    out = np.full((batch, m, n), 99, dtype) if into else None
    got = outer_products(a, c, out)
    assert got.dtype == np.dtype(dtype) and got.shape == (batch, m, n)
    assert out is None or got is out
    # one einsum over the whole batch, bit for bit; NumPy's complex multiply rounds its own way
    np.testing.assert_array_equal(got, np.einsum("bi,bj->bij", a, c))
    np.testing.assert_allclose(got, a[:, :, None] * c[:, None, :], rtol=1e-6 if got.dtype.kind == "c" else 0)


@pytest.mark.parametrize("split", [False, True])
def test_dot_general_without_contraction_writes_its_buffer(monkeypatch, split):
    # vmap's per-example weight gradients: batch axis 0 of both, nothing contracted
    monkeypatch.setattr(kernels_outer, "SPLIT_MIN", 1 if split else 1 << 62)
    h, g = _operands(9, 6, 4, np.float32)
    out = np.empty((9, 6, 4), np.float32)
    got = dot_general(np, h, g, dimension_numbers=(((), ()), ((0,), (0,))), out=out)
    assert got.base is out or got is out
    np.testing.assert_array_equal(out, np.einsum("bi,bj->bij", h, g))
    # the batch axis last in one operand: moved to the front first
    got = dot_general(np, h.T.copy(), g, dimension_numbers=(((), ()), ((1,), (0,))))
    np.testing.assert_array_equal(got, np.einsum("ib,bj->bij", h.T, g))


def _in_child(queue):
    a, c = _operands(5, 4, 3, np.float32)
    queue.put(np.array_equal(outer_products(a, c), a[:, :, None] * c[:, None, :]))


@pytest.mark.skipif(sys.platform != "linux", reason="fork is Linux's default start method here")
def test_a_forked_child_makes_its_own_helpers(monkeypatch):
    monkeypatch.setattr(kernels_outer, "SPLIT_MIN", 1)
    outer_products(*_operands(4, 3, 2, np.float32))  # the parent's helpers exist before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0 and queue.get(timeout=5)
