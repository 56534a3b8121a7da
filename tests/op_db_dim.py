"""op_db entries for pure functions written with first-class dims (ember.dim), against NumPy/einsum.

Each function binds dims to its arguments' axes, computes with them, and orders them back, so the op database
runs ember.dim's indexing, implicit batching (nested vmap), reductions and ``order`` under every transform.
ember.dim has no array functions of its own to cover: these entries stand for the mechanism.
"""

from __future__ import annotations

import numpy as np
from op_db import BF16, FLOATING, OpInfo, Sample, make_array, register

import ember.numpy as enp
from ember.core import dtypes
from ember.dim import dims
from ember.errors import DTypeError

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
FLOAT_ONLY = "the functions here divide and exponentiate: floating inputs only"
_TOL = {F16: (1e-2, 1e-2), BF16: (5e-2, 5e-2), F32: (2e-5, 2e-5)}


def _floating(*xs):
    """The arguments as ember arrays (samples come as NumPy arrays); non-floating dtypes are refused."""
    xs = [enp.asarray(x) for x in xs]
    for x in xs:
        if not dtypes.is_floating(x.dtype):
            raise DTypeError(f"{FLOAT_ONLY}, got {x.dtype}")
    return xs


def dim_matmul(A, B):
    A, B = _floating(A, B)
    i, j, k = dims()
    return (A[i, k] * B[k, j]).sum(k).order(i, j)


def dim_softmax(x):
    """Softmax over the first axis of a matrix, batched over its columns by a dim."""
    (x,) = _floating(x)
    i, j = dims()
    return x[i, j].softmax(i).order(i, j)


def dim_attention(K, Q, V):
    K, Q, V = _floating(K, Q, V)
    batch, channel, key, query = dims()
    k, q, v = K[batch, channel, key], Q[batch, channel, query], V[batch, channel, key]
    a = ((k * q).sum(channel) * (channel.size**-0.5)).softmax(key)
    return (v * a).sum(key).order(batch, channel, query)


def np_softmax(x, axis):
    """Softmax along `axis` in NumPy (also test_dim.py's reference)."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_attention(K, Q, V):
    """functorch.dim's README attention in NumPy: K, V (batch, channel, key), Q (batch, channel, query)."""
    s = np.einsum("bck,bcq->bkq", K, Q) / np.sqrt(K.shape[1])
    return np.einsum("bck,bkq->bcq", V, np_softmax(s, 1))


def _matmul_samples(rng, dtype):
    return [Sample((make_array(rng, a, dtype), make_array(rng, b, dtype)))
            for a, b in [((3, 4), (4, 5)), ((1, 2), (2, 1)), ((0, 3), (3, 2))]]  # fmt: skip


def _softmax_samples(rng, dtype):
    return [Sample((make_array(rng, s, dtype),)) for s in [(4, 3), (1, 2), (5, 1)]]


def _attention_samples(rng, dtype):
    return [Sample(tuple(make_array(rng, s, dtype) for s in shapes))
            for shapes in [((2, 3, 4), (2, 3, 5), (2, 3, 4)), ((1, 2, 1), (1, 2, 3), (1, 2, 1))]]  # fmt: skip


def _entry(name, op, ref, samples) -> OpInfo:
    return OpInfo(name, op, ref, FLOATING, samples, FLOAT_ONLY, tol=_TOL)


register(
    _entry("dim.matmul", dim_matmul, lambda A, B: np.einsum("ik,kj->ij", A, B), _matmul_samples),
    _entry("dim.softmax", dim_softmax, lambda x: np_softmax(x, 0), _softmax_samples),
    _entry("dim.attention", dim_attention, np_attention, _attention_samples),
)
